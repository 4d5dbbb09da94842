// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/process.cpp - see process.h. fork + exec rather than
// posix_spawn because a child may have to enter a network namespace first;
// the child reports a failed setns/chdir/exec through a close-on-exec pipe,
// so "cannot run tc" is an Error and never an exit status that tc could
// also have returned.
#include "base/process.h"

#include "base/error.h"
#include "base/fd.h"
#include "base/system.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

namespace lumen
{

namespace
{

enum class Stage : int {
	netns = 1,
	cwd,
	exec
};

struct ChildFailure {
	Stage stage;
	int err;
};

[[noreturn]] void child_fail(int report_fd, Stage stage)
{
	ChildFailure f{stage, errno};
	(void)!::write(report_fd, &f, sizeof(f));
	::_exit(127);
}

// In the child: only async-signal-safe calls until exec.
[[noreturn]] void exec_child(char *const argv[], const ProcessOptions &opts, int in_fd, int out_fd, int report_fd)
{
	auto fail = [report_fd](Stage stage) { child_fail(report_fd, stage); };
	struct sigaction dfl;
	std::memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE})
		::sigaction(sig, &dfl, nullptr);
	sigset_t none;
	sigemptyset(&none);
	::sigprocmask(SIG_SETMASK, &none, nullptr);
	if (opts.own_process_group)
		::setpgid(0, 0);
	if (opts.netns_fd >= 0 && ::setns(opts.netns_fd, CLONE_NEWNET) != 0)
		fail(Stage::netns);
	if (!opts.cwd.empty() && ::chdir(opts.cwd.c_str()) != 0)
		fail(Stage::cwd);
	if (::dup2(in_fd, STDIN_FILENO) < 0 || ::dup2(out_fd, STDOUT_FILENO) < 0 || ::dup2(out_fd, STDERR_FILENO) < 0)
		fail(Stage::exec);
	::execvp(argv[0], argv);
	child_fail(report_fd, Stage::exec);
}

std::string read_until_eof(int fd)
{
	std::string out;
	char buf[4096];
	for (;;) {
		ssize_t n = ::read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		out.append(buf, static_cast<std::size_t>(n));
	}
	return out;
}

std::string failure_text(const std::vector<std::string> &argv, const ChildFailure &f)
{
	switch (f.stage) {
	case Stage::netns:
		return "cannot enter the network namespace to run '" + argv[0] + "': " + errno_text(f.err);
	case Stage::cwd:
		return "cannot change directory to run '" + argv[0] + "': " + errno_text(f.err);
	case Stage::exec:
		break;
	}
	if (f.err == ENOENT)
		return "cannot run '" + argv[0] + "': not found (is it installed?)";
	return "cannot run '" + argv[0] + "': " + errno_text(f.err);
}

} // namespace

int wait_child(pid_t pid)
{
	int wstatus = 0;
	while (::waitpid(pid, &wstatus, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return -1;
}

ProcessResult run_process(const std::vector<std::string> &argv, const ProcessOptions &opts)
{
	if (argv.empty())
		throw Error("run_process: empty command");
	Fd in(::memfd_create("lumen-input", MFD_CLOEXEC));
	if (!in.valid())
		throw Error("memfd_create: " + errno_text(errno));
	write_all(in.get(), opts.input, "a command's input");
	if (::lseek(in.get(), 0, SEEK_SET) != 0)
		throw Error("cannot rewind a command's input: " + errno_text(errno));
	int fds[2];
	if (::pipe2(fds, O_CLOEXEC) != 0)
		throw Error("pipe: " + errno_text(errno));
	Fd out_read(fds[0]), out_write(fds[1]);
	if (::pipe2(fds, O_CLOEXEC) != 0)
		throw Error("pipe: " + errno_text(errno));
	Fd report_read(fds[0]), report_write(fds[1]);
	std::vector<char *> cargv;
	for (const auto &a : argv)
		cargv.push_back(const_cast<char *>(a.c_str()));
	cargv.push_back(nullptr);

	pid_t pid = ::fork();
	if (pid < 0)
		throw Error("cannot run '" + argv[0] + "': fork: " + errno_text(errno));
	if (pid == 0)
		exec_child(cargv.data(), opts, in.get(), out_write.get(), report_write.get());
	if (opts.own_process_group)
		::setpgid(pid, pid); // also here: no signal may reach it between fork and its own setpgid
	out_write.reset();
	report_write.reset();

	ChildFailure f{};
	ssize_t n;
	while ((n = ::read(report_read.get(), &f, sizeof(f))) < 0 && errno == EINTR) {
	}
	if (n == static_cast<ssize_t>(sizeof(f))) {
		wait_child(pid);
		throw Error(failure_text(argv, f));
	}
	if (opts.started)
		opts.started(pid);
	ProcessResult r;
	r.output = read_until_eof(out_read.get());
	r.status = wait_child(pid);
	return r;
}

std::string run_checked(const std::vector<std::string> &argv, const ProcessOptions &opts)
{
	ProcessResult r = run_process(argv, opts);
	if (r.status != 0)
		throw Error("'" + command_text(argv) + "' failed (exit " + std::to_string(r.status) +
			    "): " + trim(r.output));
	return r.output;
}

bool in_path(const std::string &tool)
{
	const char *path = std::getenv("PATH");
	std::stringstream ss(path ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
	std::string dir;
	while (std::getline(ss, dir, ':'))
		if (!dir.empty() && ::access((dir + "/" + tool).c_str(), X_OK) == 0)
			return true;
	return false;
}

std::string command_text(const std::vector<std::string> &argv)
{
	std::string out;
	for (const auto &a : argv)
		out.append(out.empty() ? "" : " ").append(a);
	return out;
}

} // namespace lumen
