// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/testbed/testbed_internal.h - what the files of the testbed
// library share, not for other libraries: testbed.cpp (the Testbed API,
// starting processes in hosts, status), testbed_build.cpp (creation, step
// by step, journalled) and testbed_journal.cpp (helpers, the state file,
// and teardown: the journal replayed newest first, then a sweep by name).
#pragma once

#include "base/cgroup.h"
#include "base/error.h"
#include "base/fd.h"
#include "base/process.h"
#include "base/system.h"
#include "bpfctl/switch_port.h"
#include "testbed/testbed.h"
#include "testbed/testbed_plan.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdint>
#include <fcntl.h>
#include <functional>
#include <optional>
#include <string>
#include <sys/file.h>
#include <sys/types.h>
#include <unistd.h>
#include <vector>

namespace lumen
{

struct Testbed::State {
	TopologySpec spec;
	TestbedPlan plan;
	std::vector<TestbedHost> hosts;
	std::vector<TestbedPort> ports;
	std::string cgroup;
	std::uint64_t base_rtt_ns = 0;
	std::string instance;
	bool released = false;
	bool destroyed = false;
};

namespace testbed_detail
{

using nlohmann::json;

inline constexpr char kStateDir[] = "/run/lumen/testbeds";
inline constexpr char kFailAtEnv[] = "LUMEN_TESTBED_FAIL_AT";

// Serialises creation and teardown of testbeds between processes.
class StateDirLock
{
      public:
	StateDirLock()
	{
		make_dirs(kStateDir);
		const std::string path = std::string(kStateDir) + "/.lock";
		fd_.reset(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
		if (fd_.get() < 0)
			throw Error("cannot open " + path + ": " + errno_text(errno));
		while (::flock(fd_.get(), LOCK_EX) != 0)
			if (errno != EINTR)
				throw Error("cannot lock " + path + ": " + errno_text(errno));
	}

      private:
	Fd fd_;
};

void sleep_ms(int ms);
std::vector<char *> exec_argv(const std::vector<std::string> &argv);
json process_identity(pid_t pid);
bool identity_alive(const json &id);
ProcessResult run_helper(const std::vector<std::string> &argv, const std::string &input = "",
			 const std::function<void(pid_t)> &started = nullptr);
std::string run_or_throw(const std::vector<std::string> &argv, const std::string &input = "",
			 const std::function<void(pid_t)> &started = nullptr);
void require_tools();
std::string testbed_cgroup(const std::string &name);
std::vector<std::string> netns_with_prefix(const std::string &prefix);
bool port_is_dead(const SwitchPort &p);
std::string detach_port(const SwitchPort &p);
std::string state_path(const std::string &name);
std::string delay_dir(const std::string &testbed);
void save_state(const json &doc);
bool create_state_exclusively(const json &doc);
std::optional<json> load_state(const std::string &name);
std::string random_instance();
std::vector<std::string> journal_names(const json &doc, const std::string &kind, const std::string &key);
std::vector<std::string> teardown(const json &doc);
std::vector<std::string> teardown_and_forget(json doc);
void print_failures(const std::string &name, const std::vector<std::string> &failures);
json host_json(const TestbedHost &h);
json port_json(const TestbedPort &p);
TestbedHost host_from_json(const json &j);
TestbedPort port_from_json(const json &j);

// testbed_build.cpp: refuses to start when anything of that name is around
// already or the switch has too few free ports (call with StateDirLock).
void check_nothing_exists(const TopologySpec &spec);
// Builds st's testbed step by step, journalling into `doc` (and the state
// file); on failure tears down what was built and rethrows.
void build_testbed(Testbed::State &st, json doc, std::uint64_t t0);

} // namespace testbed_detail
} // namespace lumen
