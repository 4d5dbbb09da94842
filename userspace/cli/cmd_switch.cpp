// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/cli/cmd_switch.cpp - `lumen switch`: turn a veth link into a
// software INT switch egress port (bpf/int_switch.bpf.c), detach it, and
// report its queue, drop, ECN and INT statistics. The control plane is
// bpfctl/switch_port.h; this file parses arguments and prints.
#include "base/args.h"
#include "base/error.h"
#include "base/interrupt.h"
#include "base/json.h"
#include "base/netns.h"
#include "base/system.h"
#include "base/units.h"
#include "bpfctl/switch_port.h"
#include "cli/commands.h"

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

namespace lumen
{
namespace
{

const char kUsage[] =
	R"(usage: lumen switch attach DEV [--netns NS] --peer PEER [--peer-netns NS] --rate RATE
                         [--buffer BYTES] [--ecn-threshold BYTES] [--no-int] [--port-id N]
       lumen switch detach (DEV [--netns NS] | --port-id N | --all)
       lumen switch heal (DEV [--netns NS] | --port-id N | --all)
       lumen switch stats [--json] [--port-id N]
       lumen switch sample [--interval D] [--count N]

Software INT switch: the veth link DEV -> PEER becomes a switch egress port with
a real queue. DEV (in network namespace --netns, default: the current one)
gets a tbf root qdisc at RATE: the bottleneck. A tc program on DEV's egress
hook (before tbf) counts enqueued bytes, tail-drops above the buffer and
CE-marks ECT packets above the ECN threshold; a tc program on PEER's ingress
hook (PEER = DEV's veth peer, in --peer-netns) counts dequeued bytes, so the
queue is exactly enqueued - dequeued bytes (packets in PEER's receive backlog
count as queued). At dequeue it fills the lumen INT TCP option (kind 253,
ExID 0x4C55) of data segments: dequeue time, dequeued bytes, queue length
and link rate go into the next free hop slot. Ports in series on one path
fill successive slots (multi-hop INT).

attach
  DEV                  veth device, egress side of the port
  --netns NS           network namespace of DEV (ip netns name)
  --peer PEER          the veth peer of DEV (required)
  --peer-netns NS      network namespace of PEER (default: the current one)
  --rate RATE          port rate: 100mbit, 1gbit, 2.5gbit, 25G, or Mbit/s
                       (required; whole Mbit/s, 1 Mbit/s .. 1.6 Tbit/s).
                       Bytes are counted at L2 (Ethernet header included),
                       as tbf does. A warning is printed when the INT rate
                       code cannot carry RATE exactly.
  --buffer BYTES       switch buffer, tail drop above it (default 1m;
                       k/m/g = 1024 multiples; at least one full frame,
                       at most 1g)
  --ecn-threshold BYTES
                       DCTCP-style marking threshold K: ECT packets arriving
                       while the queue exceeds K are marked CE (default 0 =
                       off; must be below the buffer)
  --no-int             do not fill INT options (queue, drops, ECN only)
  --port-id N          port id 0..63 (default: the lowest free one)
  Creates clsact qdiscs where missing, replaces DEV's root qdisc with
  "tbf rate RATE burst B limit BUFFER+96k" (B = max(2 frames, 500 us at
  RATE); the limit is above the buffer so tbf never drops before the port
  does), attaches both programs, and records the port. On any failure
  everything done so far is undone. TCP hands GSO packets (up to 64 KiB)
  to the device even with offloads off: they are admitted, dropped and
  marked whole; 'ip link set DEV gso_max_segs 1' gives per-segment
  behaviour at a CPU cost. Run lumen from the host's mount namespace (not
  under 'ip netns exec', which hides /sys/fs/bpf); use --netns instead.

detach
  Removes the programs, the tbf root qdisc (DEV falls back to the kernel's
  default qdisc; a root qdisc replaced at attach is not restored), clsact
  qdiscs the attach created once no other filter uses them, and the port's
  configuration and counters. With --all every port goes. When no port is
  left the pinned switch maps are removed.

heal
  The queue count of an idle port made right again: a packet counted in and
  never seen leaving (DEV or PEER set down with packets queued: the kernel
  dropped them) stays counted as queued, and then the port marks (above the
  ECN threshold) or drops (above the buffer) every packet. heal counts what
  is queued now (enqueued - dequeued bytes) as having left, applied by the
  next packet through the port; so run it when nothing is queued, e.g. once
  a link set down is up again and before traffic resumes. Prints the bytes
  healed per port (healed_bytes in stats --json sums them).

stats
  Per port: rate, buffer, ECN threshold, queue now, maximum queue, median and
  99th percentile of the queue sampled at every dequeue (estimated from log2
  buckets, linear inside a bucket), enqueued / dequeued bytes and packets,
  drops, ECN marks, INT hops filled, requests found full, malformed options.
  --json prints one JSON object {"ports": [...]} including the histogram
  (bucket b counts samples in [2^(b-1), 2^b) bytes, bucket 0 empty queues).

sample
  Streams the counters of every attached port, for an experiment runner on
  another machine (lumen experiment run --hosts): first one JSON line
  {"ports": [{"port_id", "dev", "dev_netns", "rate_mbps"}, ...]}, then every
  --interval (default 10ms, 1ms..10s) one line {"t_ns": CLOCK_MONOTONIC,
  "c": [[enq_bytes, deq_bytes, drops, ecn_marks], ...]} in the ports' order
  (queue = enq - deq), until SIGTERM/SIGINT or --count lines.
)";

std::string fmt_bytes(std::uint64_t b)
{
	char buf[64];
	if (b >= 10ull * 1024 * 1024)
		std::snprintf(buf, sizeof(buf), "%llu B (%.1f MiB)", static_cast<unsigned long long>(b),
			      double(b) / (1024.0 * 1024.0));
	else if (b >= 10ull * 1024)
		std::snprintf(buf, sizeof(buf), "%llu B (%.1f KiB)", static_cast<unsigned long long>(b),
			      double(b) / 1024.0);
	else
		std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(b));
	return buf;
}

std::string where(const std::string &dev, const std::string &netns)
{
	return dev + (netns.empty() ? "" : " (netns " + netns + ")");
}

int cmd_attach(const Args &a)
{
	a.allow_only({"--netns", "--peer", "--peer-netns", "--rate", "--buffer", "--ecn-threshold", "--no-int",
		      "--port-id"});
	if (a.positional.size() != 2)
		throw UsageError("attach takes exactly one device (the egress side of the port)");
	SwitchPortRequest req;
	req.dev = a.positional[1];
	if (!a.has("--peer"))
		throw UsageError("attach needs --peer PEER (the veth peer of " + req.dev + ")");
	req.peer = *a.get("--peer");
	req.dev_netns = a.get("--netns").value_or("");
	req.peer_netns = a.get("--peer-netns").value_or("");
	if (a.has("--netns"))
		check_netns_name(req.dev_netns, "--netns");
	if (a.has("--peer-netns"))
		check_netns_name(req.peer_netns, "--peer-netns");
	if (!a.has("--rate"))
		throw UsageError("attach needs --rate RATE (e.g. 100mbit, 10gbit)");
	req.rate_mbps = parse_rate_mbps(*a.get("--rate"), "--rate");
	if (a.has("--buffer"))
		req.buffer_bytes = parse_bytes(*a.get("--buffer"), "--buffer", kSwitchMaxBuffer);
	if (a.has("--ecn-threshold"))
		req.ecn_threshold_bytes = parse_bytes(*a.get("--ecn-threshold"), "--ecn-threshold", kSwitchMaxBuffer);
	if (a.has("--port-id"))
		req.port_id = static_cast<std::uint32_t>(
			parse_uint(*a.get("--port-id"), "--port-id", 0, LUMEN_SWITCH_MAX_PORTS - 1));
	req.int_enabled = !a.has("--no-int");
	check_switch_port_request(req);

	install_interrupt_handlers(); // Ctrl-C: the attach undoes itself
	const SwitchPortAttached port = attach_switch_port(req);
	if (req.int_enabled && lumen_int_rate_mbps(port.rate_code) != req.rate_mbps)
		std::fprintf(stderr,
			     "lumen switch: warning: the INT rate code cannot carry %u Mbit/s exactly; hop records "
			     "say %u Mbit/s (code %u)\n",
			     req.rate_mbps, lumen_int_rate_mbps(port.rate_code), port.rate_code);
	std::printf("switch port %u: %s -> %s, rate %s, buffer %s, ECN threshold %s, INT %s\n", port.id,
		    where(req.dev, req.dev_netns).c_str(), where(req.peer, req.peer_netns).c_str(),
		    format_rate_mbps(req.rate_mbps).c_str(), fmt_bytes(req.buffer_bytes).c_str(),
		    req.ecn_threshold_bytes ? fmt_bytes(req.ecn_threshold_bytes).c_str() : "off",
		    req.int_enabled ? "on" : "off");
	std::printf("  tbf rate %umbit burst %llu limit %llu on %s; programs %u (egress), %u (ingress)\n",
		    req.rate_mbps, static_cast<unsigned long long>(port.burst_bytes),
		    static_cast<unsigned long long>(port.limit_bytes), req.dev.c_str(), port.egress_prog_id,
		    port.ingress_prog_id);
	return 0;
}

/* detach's and heal's DEV [--netns NS] | --port-id N | --all */
SwitchPortSelector selector_of(const Args &a, const char *verb)
{
	a.allow_only({"--netns", "--all", "--port-id"});
	SwitchPortSelector sel;
	sel.all = a.has("--all");
	const int ways = (a.positional.size() == 2) + sel.all + a.has("--port-id");
	if (a.positional.size() > 2 || ways != 1)
		throw UsageError(std::string(verb) + " takes one of: DEV [--netns NS], --port-id N, --all");
	if (a.has("--netns") && a.positional.size() != 2)
		throw UsageError("--netns goes with DEV");
	if (a.positional.size() == 2) {
		sel.dev = a.positional[1];
		sel.dev_netns = a.get("--netns").value_or("");
		if (a.has("--netns"))
			check_netns_name(sel.dev_netns, "--netns");
	}
	if (a.has("--port-id"))
		sel.id = static_cast<std::uint32_t>(
			parse_uint(*a.get("--port-id"), "--port-id", 0, LUMEN_SWITCH_MAX_PORTS - 1));
	require_root();
	return sel;
}

int cmd_heal(const Args &a)
{
	for (const SwitchPortHealed &h : heal_switch_ports(selector_of(a, "heal")))
		std::printf("switch port %u (%s -> %s): %llu bytes healed\n", h.port.id,
			    where(h.port.dev, h.port.dev_netns).c_str(), where(h.port.peer, h.port.peer_netns).c_str(),
			    static_cast<unsigned long long>(h.bytes));
	return 0;
}

int cmd_detach(const Args &a)
{
	const SwitchPortSelector sel = selector_of(a, "detach");
	int rc = 0;
	for (const SwitchPortDetached &d : detach_switch_ports(sel)) {
		for (const auto &w : d.warnings) {
			std::fprintf(stderr, "lumen switch: warning: port %u: %s\n", d.port.id, w.c_str());
			rc = 1;
		}
		if (d.port.recorded)
			std::printf("switch port %u (%s -> %s) detached\n", d.port.id,
				    where(d.port.dev, d.port.dev_netns).c_str(),
				    where(d.port.peer, d.port.peer_netns).c_str());
		else
			std::printf("switch port %u (no record) detached\n", d.port.id);
	}
	return rc;
}

int cmd_stats(const Args &a)
{
	a.allow_only({"--json", "--port-id"});
	if (a.positional.size() != 1)
		throw UsageError("stats takes no positional argument");
	std::optional<std::uint32_t> want_id;
	if (a.has("--port-id"))
		want_id = static_cast<std::uint32_t>(
			parse_uint(*a.get("--port-id"), "--port-id", 0, LUMEN_SWITCH_MAX_PORTS - 1));
	const bool json = a.has("--json");
	require_root();

	std::vector<std::string> json_ports;
	int shown = 0;
	for (const SwitchPort &p : list_switch_ports()) {
		if (want_id && *want_id != p.id)
			continue;
		const lumen_switch_port_cfg &cfg = p.cfg;
		const lumen_switch_port_stats &st = p.stats;
		std::uint64_t qnow = st.enq_bytes > st.deq_bytes ? st.enq_bytes - st.deq_bytes : 0;
		std::uint64_t p50 = switch_queue_quantile(st, 0.5), p99 = switch_queue_quantile(st, 0.99);
		shown++;
		if (json) {
			std::string hist = "[";
			for (int b = 0; b < LUMEN_SWITCH_QHIST_BUCKETS; b++)
				hist.append(b ? ", " : "").append(std::to_string(st.qlen_hist[b]));
			hist += "]";
			Json j;
			j.num("port_id", std::uint64_t(p.id))
				.str("dev", p.dev)
				.str("dev_netns", p.dev_netns)
				.str("peer", p.peer)
				.str("peer_netns", p.peer_netns)
				.str("state", p.state)
				.num("rate_mbps", std::uint64_t(cfg.rate_mbps))
				.num("rate_code", std::uint64_t(cfg.rate_code))
				.num("buffer_bytes", std::uint64_t(cfg.buffer_bytes))
				.num("ecn_threshold_bytes", std::uint64_t(cfg.ecn_threshold_bytes))
				.num("int_enabled", std::uint64_t(cfg.int_enabled))
				.num("qlen_bytes", qnow)
				.num("qlen_max_bytes", std::uint64_t(st.qlen_max))
				.num("qlen_p50_bytes", p50)
				.num("qlen_p99_bytes", p99)
				.num("qlen_samples", std::uint64_t(st.qlen_samples))
				.num("enq_bytes", std::uint64_t(st.enq_bytes))
				.num("enq_packets", std::uint64_t(st.enq_packets))
				.num("deq_bytes", std::uint64_t(st.deq_bytes))
				.num("deq_packets", std::uint64_t(st.deq_packets))
				.num("drops", std::uint64_t(st.drops))
				.num("drop_bytes", std::uint64_t(st.drop_bytes))
				.num("ecn_marks", std::uint64_t(st.ecn_marks))
				.num("int_filled", std::uint64_t(st.int_filled))
				.num("int_full", std::uint64_t(st.int_full))
				.num("int_malformed", std::uint64_t(st.int_malformed))
				.num("healed_bytes", std::uint64_t(st.healed_bytes))
				.raw("qlen_hist", hist);
			json_ports.push_back(j.dump());
			continue;
		}
		std::printf("port %u: %s -> %s [%s]\n", p.id, where(p.dev, p.dev_netns).c_str(),
			    where(p.peer, p.peer_netns).c_str(), p.state.c_str());
		if (!cfg.in_use)
			continue; // not configured yet: nothing more to show
		std::printf("  rate %s (INT code %u = %u Mbit/s), buffer %s, ECN threshold %s, INT %s\n",
			    format_rate_mbps(cfg.rate_mbps).c_str(), cfg.rate_code, lumen_int_rate_mbps(cfg.rate_code),
			    fmt_bytes(cfg.buffer_bytes).c_str(),
			    cfg.ecn_threshold_bytes ? fmt_bytes(cfg.ecn_threshold_bytes).c_str() : "off",
			    cfg.int_enabled ? "on" : "off");
		std::printf("  queue now %s, max %s, median ~%s, p99 ~%s (%llu samples)\n", fmt_bytes(qnow).c_str(),
			    fmt_bytes(st.qlen_max).c_str(), fmt_bytes(p50).c_str(), fmt_bytes(p99).c_str(),
			    static_cast<unsigned long long>(st.qlen_samples));
		std::printf(
			"  enqueued %llu B / %llu pkts, dequeued %llu B / %llu pkts\n",
			static_cast<unsigned long long>(st.enq_bytes), static_cast<unsigned long long>(st.enq_packets),
			static_cast<unsigned long long>(st.deq_bytes), static_cast<unsigned long long>(st.deq_packets));
		std::printf("  dropped %llu pkts / %llu B, ECN marked %llu\n",
			    static_cast<unsigned long long>(st.drops), static_cast<unsigned long long>(st.drop_bytes),
			    static_cast<unsigned long long>(st.ecn_marks));
		std::printf("  INT hops filled %llu, requests full %llu, malformed %llu\n",
			    static_cast<unsigned long long>(st.int_filled),
			    static_cast<unsigned long long>(st.int_full),
			    static_cast<unsigned long long>(st.int_malformed));
	}
	if (json) {
		std::string out = "{\"ports\": [";
		for (std::size_t i = 0; i < json_ports.size(); i++)
			out += (i ? ", " : "") + json_ports[i];
		std::printf("%s]}\n", out.c_str());
		return 0;
	}
	if (want_id && !shown)
		throw Error("switch port " + std::to_string(*want_id) + " is not attached");
	if (!shown)
		std::printf("no switch port attached\n");
	return 0;
}

int cmd_sample(const Args &a)
{
	a.allow_only({"--interval", "--count"});
	if (a.positional.size() != 1)
		throw UsageError("sample takes no positional argument");
	constexpr std::uint64_t kMsNs = 1'000'000;
	std::uint64_t interval = 10 * kMsNs;
	if (a.has("--interval")) {
		interval = parse_duration_ns(*a.get("--interval"), "--interval", 10'000 * kMsNs);
		if (interval < kMsNs)
			throw UsageError("--interval: at least 1ms");
	}
	std::uint64_t count = 0; // 0 = until stopped
	if (a.has("--count"))
		count = parse_uint(*a.get("--count"), "--count", 1, 100'000'000);
	require_root();
	const SwitchCounters counters;

	std::vector<std::uint32_t> ids;
	std::string head = "{\"ports\": [";
	for (const SwitchPort &p : list_switch_ports(false)) {
		if (!p.cfg.in_use)
			continue; // an attach under way (or dead): no counters yet
		Json j;
		j.num("port_id", std::uint64_t(p.id))
			.str("dev", p.dev)
			.str("dev_netns", p.dev_netns)
			.num("rate_mbps", std::uint64_t(p.cfg.rate_mbps));
		head += (ids.empty() ? "" : ", ") + j.dump();
		ids.push_back(p.id);
	}
	if (ids.empty())
		throw Error("no switch port attached");
	std::setvbuf(stdout, nullptr, _IOLBF, 0);
	std::printf("%s]}\n", head.c_str());

	install_interrupt_handlers();
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (std::uint64_t n = 0; (count == 0 || n < count) && !interrupted(); n++) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		std::string line =
			"{\"t_ns\": " +
			std::to_string(std::uint64_t(now.tv_sec) * 1'000'000'000ull + std::uint64_t(now.tv_nsec)) +
			", \"c\": [";
		for (std::size_t i = 0; i < ids.size(); i++) {
			auto st = counters.read(ids[i]);
			line += (i ? ", [" : "[") + std::to_string(st.enq_bytes) + ", " + std::to_string(st.deq_bytes) +
				", " + std::to_string(st.drops) + ", " + std::to_string(st.ecn_marks) + "]";
		}
		std::printf("%s]}\n", line.c_str());
		std::uint64_t t = std::uint64_t(next.tv_nsec) + interval;
		next.tv_sec += static_cast<time_t>(t / 1'000'000'000ull);
		next.tv_nsec = static_cast<long>(t % 1'000'000'000ull);
		while (!interrupted() && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr) == EINTR) {
		}
	}
	return 0;
}

int run_switch(const std::vector<std::string> &args)
{
	Args a = Args::parse(args, {"--no-int", "--all", "--json"});
	return run_subcommand<Args>(a.positional.empty() ? nullptr : &a.positional[0],
				    {{"attach", cmd_attach},
				     {"detach", cmd_detach},
				     {"stats", cmd_stats},
				     {"sample", cmd_sample},
				     {"heal", cmd_heal}},
				    a);
}

} // namespace

const Command kSwitchCommand = {"switch", "software INT switch port on a veth link (tbf queue, drops, ECN, INT)",
				kUsage, run_switch};

} // namespace lumen
