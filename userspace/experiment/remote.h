// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/remote.h - running commands on another host over SSH,
// for the experiment runner (experiment_remote.h): OpenSSH's own client in
// batch mode (keys, agent, ~/.ssh/config and the inventory's options all
// apply), argv quoted once for the remote shell, long-running commands
// wrapped in `lumen host run` so that they end with the connection, file
// copies over the same channel, and a clock offset estimate.
#pragma once

#include "experiment/experiment_proc.h"

#include <cstdint>
#include <string>
#include <sys/types.h>
#include <vector>

namespace lumen
{

struct SshTarget {
	std::string name; // for messages: "s1"
	std::string destination; // [user@]host
	std::vector<std::string> options; // ssh options, before the runner's own
	std::string lumen; // lumen on that host
};

// One word for a POSIX shell: 'it'\''s'. Never empty ('').
std::string shell_quote(const std::string &word);
// The words quoted and joined by spaces: what ssh sends as the command.
std::string shell_command(const std::vector<std::string> &argv);
// The local argv that runs `remote_argv` on the target: ssh, the target's
// options (first, so they win over the runner's defaults), batch mode and
// keepalives, the destination, the quoted command.
std::vector<std::string> ssh_argv(const SshTarget &target, const std::vector<std::string> &remote_argv);

// Runs `remote_argv` on the target and waits (stdin from /dev/null).
ProcessResult ssh_run(const SshTarget &target, const std::vector<std::string> &remote_argv);
// As ssh_run, Error "<what> on <name>: <output>" unless it exits 0;
// returns the output.
std::string ssh_run_checked(const SshTarget &target, const std::vector<std::string> &remote_argv,
			    const std::string &what);
// The remote file's content, written to `local_path`. Error if it cannot be
// read there.
void ssh_fetch(const SshTarget &target, const std::string &remote_path, const std::string &local_path);

// The target's CLOCK_MONOTONIC minus ours, from the round trip with the
// smallest delay among `rounds` over one connection (`lumen host clock`):
// its error is at most half that round trip.
struct ClockOffset {
	std::int64_t offset_ns = 0;
	std::uint64_t rtt_ns = 0;
};
ClockOffset ssh_clock_offset(const SshTarget &target, int rounds = 16);

// Long-running remote commands. spawn() starts `lumen host run [--cgroup
// CG] -- argv` on the target with its output in local files, and keeps
// the write end of ssh's standard input: when it is closed (close_inputs(),
// the destructor, or this process dying) the remote command gets SIGTERM.
// The caller waits for and stops the local ssh processes (ChildSet).
class SshSessions
{
      public:
	SshSessions() = default;
	SshSessions(const SshSessions &) = delete;
	SshSessions &operator=(const SshSessions &) = delete;
	~SshSessions() = default; // closing the inputs ends the remote commands

	// forward_input: what write_input() sends reaches the command's
	// standard input (`lumen host run --input`).
	pid_t spawn(const SshTarget &target, const std::string &cgroup, const std::vector<std::string> &argv,
		    const std::string &stdout_path, const std::string &stderr_path, bool forward_input = false);
	void write_input(pid_t pid, const std::string &text)
	{
		inputs_.write(pid, text);
	}
	void close_inputs()
	{
		inputs_.close_all();
	}

      private:
	ChildInputs inputs_;
};

} // namespace lumen
