// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/remote.cpp - see remote.h.
#include "experiment/remote.h"

#include "base/error.h"
#include "base/system.h"
#include "base/units.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fstream>
#include <limits>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace lumen
{

namespace
{

constexpr int kClockTimeoutMs = 10'000;

[[noreturn]] void exec_argv(const std::vector<std::string> &argv)
{
	std::vector<char *> args;
	for (const auto &a : argv)
		args.push_back(const_cast<char *>(a.c_str()));
	args.push_back(nullptr);
	::execvp(args[0], args.data());
	std::fprintf(stderr, "cannot execute %s: %s\n", argv[0].c_str(), std::strerror(errno));
	::_exit(127);
}

int open_output(const std::string &path)
{
	int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		throw Error("cannot create " + path + ": " + std::strerror(errno));
	return fd;
}

// Reads one line from fd within the deadline (the byte-by-byte read keeps
// the next answer in the pipe for the next call).
bool read_line(int fd, std::string &line, std::uint64_t deadline_ns)
{
	line.clear();
	for (;;) {
		std::uint64_t now = monotonic_ns();
		if (now >= deadline_ns)
			return false;
		struct pollfd p = {fd, POLLIN, 0};
		int n = ::poll(&p, 1, static_cast<int>((deadline_ns - now) / 1'000'000 + 1));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		char c;
		ssize_t got = ::read(fd, &c, 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return false;
		if (c == '\n')
			return true;
		line += c;
	}
}

} // namespace

std::string shell_quote(const std::string &word)
{
	std::string out = "'";
	for (char c : word) {
		if (c == '\'')
			out += "'\\''";
		else
			out += c;
	}
	return out + "'";
}

std::string shell_command(const std::vector<std::string> &argv)
{
	std::string out;
	for (const auto &w : argv) {
		if (!out.empty())
			out += ' ';
		out += shell_quote(w);
	}
	return out;
}

std::vector<std::string> ssh_argv(const SshTarget &target, const std::vector<std::string> &remote_argv)
{
	if (target.destination.empty() || target.destination[0] == '-')
		throw Error("bad SSH destination '" + target.destination + "' for " + target.name);
	std::vector<std::string> argv = {"ssh"};
	argv.insert(argv.end(), target.options.begin(), target.options.end());
	// no prompts (a runner cannot answer them), no pseudo-terminal, and a
	// dead host noticed within ~15 s rather than at TCP's timeout
	for (const char *opt : {"BatchMode=yes", "ConnectTimeout=10", "ServerAliveInterval=5", "ServerAliveCountMax=3",
				"LogLevel=ERROR"}) {
		argv.push_back("-o");
		argv.push_back(opt);
	}
	argv.push_back("-T");
	argv.push_back(target.destination);
	argv.push_back(shell_command(remote_argv));
	return argv;
}

ProcessResult ssh_run(const SshTarget &target, const std::vector<std::string> &remote_argv)
{
	return run_process(ssh_argv(target, remote_argv));
}

std::string ssh_run_checked(const SshTarget &target, const std::vector<std::string> &remote_argv,
			    const std::string &what)
{
	ProcessResult r = ssh_run(target, remote_argv);
	if (r.status == 255)
		throw Error("cannot reach " + target.name + " (ssh " + target.destination + "): " + trim(r.output));
	if (r.status != 0)
		throw Error(what + " on " + target.name + " failed (exit " + std::to_string(r.status) +
			    "): " + trim(r.output));
	return r.output;
}

void ssh_fetch(const SshTarget &target, const std::string &remote_path, const std::string &local_path)
{
	std::string tmp = local_path + ".part";
	int out = open_output(tmp);
	int err_pipe[2];
	if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
		::close(out);
		throw Error(std::string("pipe: ") + std::strerror(errno));
	}
	auto argv = ssh_argv(target, {"cat", "--", remote_path});
	pid_t pid = ::fork();
	if (pid == 0) {
		int null_fd = ::open("/dev/null", O_RDONLY);
		if (null_fd < 0 || ::dup2(null_fd, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err_pipe[1], 2) < 0)
			::_exit(127);
		exec_argv(argv);
	}
	::close(out);
	::close(err_pipe[1]);
	if (pid < 0) {
		::close(err_pipe[0]);
		throw Error(std::string("fork: ") + std::strerror(errno));
	}
	std::string err;
	char buf[1024];
	ssize_t n;
	while ((n = ::read(err_pipe[0], buf, sizeof(buf))) != 0)
		if (n > 0 && err.size() < 4096)
			err.append(buf, static_cast<std::size_t>(n));
		else if (n < 0 && errno != EINTR)
			break;
	::close(err_pipe[0]);
	int wstatus = 0;
	while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
	}
	if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
		::unlink(tmp.c_str());
		throw Error("cannot copy " + remote_path + " from " + target.name + ": " + trim(err));
	}
	if (::rename(tmp.c_str(), local_path.c_str()) != 0)
		throw Error("cannot create " + local_path + ": " + std::strerror(errno));
}

ClockOffset ssh_clock_offset(const SshTarget &target, int rounds)
{
	int to_child[2], from_child[2];
	if (::pipe2(to_child, O_CLOEXEC) != 0)
		throw Error(std::string("pipe: ") + std::strerror(errno));
	if (::pipe2(from_child, O_CLOEXEC) != 0) {
		::close(to_child[0]);
		::close(to_child[1]);
		throw Error(std::string("pipe: ") + std::strerror(errno));
	}
	auto argv = ssh_argv(target, {target.lumen, "host", "clock"});
	pid_t pid = ::fork();
	if (pid == 0) {
		if (::dup2(to_child[0], 0) < 0 || ::dup2(from_child[1], 1) < 0)
			::_exit(127);
		int null_fd = ::open("/dev/null", O_WRONLY);
		if (null_fd >= 0)
			::dup2(null_fd, 2);
		exec_argv(argv);
	}
	::close(to_child[0]);
	::close(from_child[1]);
	auto finish = [&]() {
		::close(to_child[1]);
		::close(from_child[0]);
		if (pid > 0) {
			int wstatus;
			std::uint64_t deadline = monotonic_ns() + 5 * kSec;
			while (::waitpid(pid, &wstatus, WNOHANG) == 0) {
				if (monotonic_ns() > deadline) {
					::kill(pid, SIGKILL);
					::waitpid(pid, &wstatus, 0);
					break;
				}
				struct timespec ts = {0, 5'000'000};
				nanosleep(&ts, nullptr);
			}
		}
	};
	if (pid < 0) {
		finish();
		throw Error(std::string("fork: ") + std::strerror(errno));
	}
	std::string line;
	if (!read_line(from_child[0], line, monotonic_ns() + std::uint64_t(kClockTimeoutMs) * 1'000'000) ||
	    line != "lumen-clock 1") {
		finish();
		throw Error("no clock from " + target.name + " ('" + target.lumen + " host clock' over ssh " +
			    target.destination + " did not answer" + (line.empty() ? "" : ": " + line) + ")");
	}
	ClockOffset best;
	best.rtt_ns = std::numeric_limits<std::uint64_t>::max();
	for (int i = 0; i < rounds; i++) {
		std::uint64_t t1 = monotonic_ns();
		if (::write(to_child[1], "\n", 1) != 1 ||
		    !read_line(from_child[0], line, monotonic_ns() + std::uint64_t(kClockTimeoutMs) * 1'000'000)) {
			finish();
			throw Error("the clock of " + target.name + " stopped answering");
		}
		std::uint64_t t2 = monotonic_ns();
		char *end = nullptr;
		errno = 0;
		unsigned long long remote = std::strtoull(line.c_str(), &end, 10);
		if (errno != 0 || end == line.c_str() || *end != '\0') {
			finish();
			throw Error("the clock of " + target.name + " answered '" + line + "'");
		}
		if (t2 - t1 < best.rtt_ns) {
			best.rtt_ns = t2 - t1;
			best.offset_ns =
				static_cast<std::int64_t>(remote) - static_cast<std::int64_t>(t1 + (t2 - t1) / 2);
		}
	}
	finish();
	return best;
}

pid_t SshSessions::spawn(const SshTarget &target, const std::string &cgroup, const std::vector<std::string> &argv,
			 const std::string &stdout_path, const std::string &stderr_path, bool forward_input)
{
	std::vector<std::string> remote = {target.lumen, "host", "run"};
	if (!cgroup.empty()) {
		remote.push_back("--cgroup");
		remote.push_back(cgroup);
	}
	if (forward_input)
		remote.push_back("--input");
	remote.push_back("--");
	remote.insert(remote.end(), argv.begin(), argv.end());
	auto local = ssh_argv(target, remote);

	int out = open_output(stdout_path);
	int err = stderr_path == stdout_path ? ::dup(out) : open_output(stderr_path);
	int in[2];
	if (err < 0 || ::pipe2(in, O_CLOEXEC) != 0) {
		::close(out);
		if (err >= 0)
			::close(err);
		throw Error(std::string("pipe: ") + std::strerror(errno));
	}
	pid_t pid = ::fork();
	if (pid == 0) {
		if (::dup2(in[0], 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0)
			::_exit(127);
		exec_argv(local);
	}
	::close(in[0]);
	::close(out);
	::close(err);
	if (pid < 0) {
		::close(in[1]);
		throw Error(std::string("fork: ") + std::strerror(errno));
	}
	inputs_.add(pid, in[1]);
	return pid;
}

} // namespace lumen
