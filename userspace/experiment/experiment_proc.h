// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_proc.h - the child processes of one
// `lumen experiment` run: a guard that stops every process it owns, and
// their inputs. Helper commands run to completion through base/process.h.
#pragma once

#include "base/process.h"

#include <cstdint>
#include <string>
#include <utility>
#include <sys/types.h>
#include <vector>

namespace lumen
{

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
