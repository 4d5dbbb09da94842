// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/cli/cmd_delayline.cpp - `lumen delayline`: the userspace delay
// line (delayline.h) a testbed starts for every link with a delay.
#include "base/args.h"
#include "base/error.h"
#include "base/units.h"
#include "cli/commands.h"
#include "testbed/delayline.h"

namespace lumen
{
namespace
{

const char kUsage[] =
	R"(usage: lumen delayline DEV_A DEV_B --delay D [--queue BYTES] [--stats-file PATH]

A delay line between two devices of the current network namespace: every
IPv4 and ARP frame that arrives on DEV_A leaves on DEV_B D later, and every
one that arrives on DEV_B leaves on DEV_A D later, in arrival order (so a
round trip through it grows by 2 x D). `lumen testbed` starts one in a
namespace in the middle of each link with a "delay"; see docs/testbeds.md.

Frames are read after the tc ingress hook of their device (so the INT
switch's dequeue program has seen them) and sent straight to the other
device, bypassing its qdisc. The devices must be up and must not carry
addresses (the namespace must not forward by itself).

  --delay D           one-way delay of each direction (1us .. 1s)
  --queue BYTES       bound of each direction's queue (default 64m; at least
                      64k): frames that do not fit are dropped and counted
  --stats-file PATH   JSON counters (frames, drops, queue, CPU), rewritten
                      every 0.5 s and at exit; its first version says ready

Runs until SIGINT/SIGTERM/SIGHUP or until a device goes down or away; both
exit 0. Needs CAP_NET_RAW.
)";

constexpr std::uint64_t kMaxDelayNs = 1000000000;
constexpr std::uint64_t kMinDelayNs = 1000;

int run_delayline(const std::vector<std::string> &args)
{
	Args a = Args::parse(args);
	a.allow_only({"--delay", "--queue", "--stats-file"});
	if (a.positional.size() != 2)
		throw UsageError("delayline takes two devices, DEV_A and DEV_B");
	if (!a.has("--delay"))
		throw UsageError("delayline needs --delay D");
	DelayLineOptions o;
	o.dev_a = a.positional[0];
	o.dev_b = a.positional[1];
	o.delay_ns = parse_duration_ns(*a.get("--delay"), "--delay", kMaxDelayNs);
	if (o.delay_ns < kMinDelayNs)
		throw UsageError("--delay: at least 1us");
	if (a.has("--queue"))
		o.queue_bytes = parse_bytes(*a.get("--queue"), "--queue", 1ull << 30);
	if (o.queue_bytes < (64u << 10))
		throw UsageError("--queue: at least 64k");
	o.stats_path = a.get("--stats-file").value_or("");
	return run_delay_line(o);
}

} // namespace

const Command kDelaylineCommand = {"delayline", "userspace delay line between two devices (testbed link delay)", kUsage,
				   run_delayline};

} // namespace lumen
