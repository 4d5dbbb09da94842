// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/process.h - running a helper command (ip, tc, ping,
// gnuplot, another lumen) to completion and collecting what it printed.
// The one way lumen starts a short-lived child: the testbed, the switch
// control plane and the experiment runner all use it.
#pragma once

#include <functional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace lumen
{

struct ProcessResult {
	int status = -1; // exit status; 128 + signal when killed
	std::string output; // stdout and stderr, interleaved
};

struct ProcessOptions {
	std::string input; // the child's stdin (empty: it reads end of file at once)
	std::string cwd; // "" = ours
	int netns_fd = -1; // >= 0: the child enters this network namespace first
	// The child gets its own process group, so a Ctrl-C at the terminal
	// does not reach it: a command that changes the system always finishes
	// and lumen decides what to undo.
	bool own_process_group = false;
	std::function<void(pid_t)> started; // sees the pid before the wait (to journal it)
};

// Runs argv (argv[0] looked up in PATH) with default signal dispositions
// and waits for it. Error when it cannot be started (not installed, the
// namespace cannot be entered); its own failure is in `status`.
ProcessResult run_process(const std::vector<std::string> &argv, const ProcessOptions &opts = {});
// As run_process; Error "'<argv>' failed (exit N): <output>" unless it exits 0.
std::string run_checked(const std::vector<std::string> &argv, const ProcessOptions &opts = {});
// Waits for child `pid` (retrying EINTR): its exit status, 128 + signal
// when killed, -1 when it cannot be waited for.
int wait_child(pid_t pid);
// Whether `tool` is an executable in one of $PATH's directories.
bool in_path(const std::string &tool);
// The words of argv joined by spaces, for messages.
std::string command_text(const std::vector<std::string> &argv);

} // namespace lumen
