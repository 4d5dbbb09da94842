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

} // namespace

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
