// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_proc.h - child processes for `lumen
// experiment`: running a helper command to completion (lumen cc / int,
// gnuplot), and a guard that stops every process of a run it owns.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <sys/types.h>
#include <vector>

namespace lumen
{

struct ProcessResult {
	int status = -1; // exit status; 128 + signal when killed
	std::string output; // stdout and stderr, interleaved
};

// Runs argv (argv[0] looked up in PATH) in `cwd` ("" = ours), stdin from
// /dev/null, and waits for it. Error when it cannot be started.
ProcessResult run_process(const std::vector<std::string> &argv, const std::string &cwd = "");
// As run_process, and Error "<what>: <its output>" unless it exits 0.
std::string run_checked(const std::vector<std::string> &argv, const std::string &what);

// The processes of one run. stop_all() (and the destructor) sends SIGTERM,
// waits up to `grace_ns`, then SIGKILLs and reaps whatever is left.
class ChildSet
{
      public:
	ChildSet() = default;
	ChildSet(const ChildSet &) = delete;
	ChildSet &operator=(const ChildSet &) = delete;
	~ChildSet();

	void add(pid_t pid, const std::string &name);
	// Reaps children that have exited (non-blocking); returns how many are
	// still running. Records the exit status of each.
	std::size_t poll();
	void stop_all(std::uint64_t grace_ns = 2'000'000'000);
	// Names of the children that exited other than with status 0 (or were
	// killed), "name (exit N)".
	std::vector<std::string> failures() const;
	std::size_t size() const
	{
		return children_.size();
	}
	std::size_t running() const;

      private:
	struct Child {
		pid_t pid;
		std::string name;
		bool done = false;
		int status = 0;
	};
	std::vector<Child> children_;
};

// The write ends of children's standard input (pipes), by child pid. Closing
// one is how a child learns that its parent is gone or done with it.
class ChildInputs
{
      public:
	ChildInputs() = default;
	ChildInputs(const ChildInputs &) = delete;
	ChildInputs &operator=(const ChildInputs &) = delete;
	~ChildInputs();

	// Takes ownership of `write_fd`, the input of child `pid`.
	void add(pid_t pid, int write_fd);
	// Writes all of `text` to the child's input; Error if the child has
	// none here or no longer reads it (never SIGPIPE).
	void write(pid_t pid, const std::string &text);
	void close_all();

      private:
	std::vector<std::pair<pid_t, int>> fds_;
};

} // namespace lumen
