// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_proc.cpp - see experiment_proc.h.
#include "experiment/experiment_proc.h"

#include "base/error.h"
#include "base/system.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

namespace lumen
{

namespace
{

int decode_status(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return -1;
}

// In the child: stdin from /dev/null, stdout and stderr into the pipe.
[[noreturn]] void exec_child(const std::vector<std::string> &argv, const std::string &cwd, int out_fd)
{
	int null_fd = ::open("/dev/null", O_RDONLY);
	if (null_fd >= 0)
		::dup2(null_fd, STDIN_FILENO);
	::dup2(out_fd, STDOUT_FILENO);
	::dup2(out_fd, STDERR_FILENO);
	if (!cwd.empty() && ::chdir(cwd.c_str()) != 0)
		::_exit(127);
	std::vector<char *> args;
	for (const auto &a : argv)
		args.push_back(const_cast<char *>(a.c_str()));
	args.push_back(nullptr);
	::execvp(args[0], args.data());
	const char msg[] = "cannot execute the command\n";
	(void)!::write(STDERR_FILENO, msg, sizeof(msg) - 1);
	::_exit(127);
}

} // namespace

ProcessResult run_process(const std::vector<std::string> &argv, const std::string &cwd)
{
	if (argv.empty())
		throw Error("run_process: empty command");
	int pipe_fds[2];
	if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
		throw Error(std::string("pipe: ") + std::strerror(errno));
	pid_t pid = ::fork();
	if (pid < 0) {
		::close(pipe_fds[0]);
		::close(pipe_fds[1]);
		throw Error(std::string("fork: ") + std::strerror(errno));
	}
	if (pid == 0)
		exec_child(argv, cwd, pipe_fds[1]);
	::close(pipe_fds[1]);
	ProcessResult r;
	char buf[4096];
	for (;;) {
		ssize_t n = ::read(pipe_fds[0], buf, sizeof(buf));
		if (n > 0)
			r.output.append(buf, static_cast<std::size_t>(n));
		else if (n == 0 || errno != EINTR)
			break;
	}
	::close(pipe_fds[0]);
	int wstatus = 0;
	while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
	}
	r.status = decode_status(wstatus);
	if (r.status == 127 && r.output.find("cannot execute") != std::string::npos)
		throw Error("cannot run '" + argv[0] + "' (not installed?)");
	return r;
}

std::string run_checked(const std::vector<std::string> &argv, const std::string &what)
{
	ProcessResult r = run_process(argv);
	if (r.status != 0) {
		while (!r.output.empty() && r.output.back() == '\n')
			r.output.pop_back();
		throw Error(what + " failed (exit " + std::to_string(r.status) + "): " + r.output);
	}
	return r.output;
}

ChildSet::~ChildSet()
{
	stop_all();
}

void ChildSet::add(pid_t pid, const std::string &name)
{
	children_.push_back({pid, name});
}

std::size_t ChildSet::poll()
{
	for (auto &c : children_) {
		if (c.done)
			continue;
		int wstatus = 0;
		pid_t r = ::waitpid(c.pid, &wstatus, WNOHANG);
		if (r == c.pid || (r < 0 && errno == ECHILD)) {
			c.done = true;
			c.status = r == c.pid ? decode_status(wstatus) : -1;
		}
	}
	return running();
}

std::size_t ChildSet::running() const
{
	std::size_t n = 0;
	for (const auto &c : children_)
		n += !c.done;
	return n;
}

void ChildSet::stop_all(std::uint64_t grace_ns)
{
	if (poll() == 0)
		return;
	for (const auto &c : children_)
		if (!c.done)
			::kill(c.pid, SIGTERM);
	std::uint64_t deadline = monotonic_ns() + grace_ns;
	while (poll() > 0 && monotonic_ns() < deadline) {
		struct timespec ts = {0, 20'000'000};
		nanosleep(&ts, nullptr); // no interruption check: this is the cleanup
	}
	for (auto &c : children_) {
		if (c.done)
			continue;
		::kill(c.pid, SIGKILL);
		int wstatus = 0;
		while (::waitpid(c.pid, &wstatus, 0) < 0 && errno == EINTR) {
		}
		c.done = true;
		c.status = 128 + SIGKILL;
	}
}

std::vector<std::string> ChildSet::failures() const
{
	std::vector<std::string> out;
	for (const auto &c : children_)
		if (c.done && c.status != 0)
			out.push_back(c.name + " (exit " + std::to_string(c.status) + ")");
	return out;
}

ChildInputs::~ChildInputs()
{
	close_all();
}

void ChildInputs::add(pid_t pid, int write_fd)
{
	fds_.emplace_back(pid, write_fd);
}

void ChildInputs::write(pid_t pid, const std::string &text)
{
	auto it = std::find_if(fds_.begin(), fds_.end(), [pid](const auto &p) { return p.first == pid; });
	if (it == fds_.end())
		throw Error("no input kept for process " + std::to_string(pid));
	// a reader that is gone gives EPIPE, and a SIGPIPE that would end this
	// process: block it for the write and take back one raised by it
	sigset_t pipe_set, old;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	std::size_t done = 0;
	int err = 0;
	while (done < text.size()) {
		ssize_t n = ::write(it->second, text.data() + done, text.size() - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			break;
		}
		done += static_cast<std::size_t>(n);
	}
	if (err == EPIPE) {
		struct timespec zero = {0, 0};
		sigtimedwait(&pipe_set, nullptr, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, nullptr);
	if (err)
		throw Error("writing to the input of process " + std::to_string(pid) + ": " + std::strerror(err));
}

void ChildInputs::close_all()
{
	for (const auto &p : fds_)
		::close(p.second);
	fds_.clear();
}

} // namespace lumen
