// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/cli/cmd_int.cpp - `lumen int`: enable, disable and inspect the
// INT sockops program through bpfctl/int_sockops.h, and print what it
// reports.
#include "base/args.h"
#include "base/error.h"
#include "base/json.h"
#include "base/list.h"
#include "base/system.h"
#include "base/units.h"
#include "bpfctl/int_sockops.h"
#include "cli/commands.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace lumen
{
namespace
{

const char kUsage[] = "usage: lumen int enable --cgroup PATH [--wide] [--slots N] [--port P]... [--ipv4 | --ipv6]\n"
		      "       lumen int disable\n"
		      "       lumen int status [--json]\n"
		      "\n"
		      "In-band network telemetry (INT) for TCP flows, as one cgroup sockops program.\n"
		      "For every connection established in the cgroup (and its descendants) that\n"
		      "passes the filters, data segments carry an INT request (TCP option kind 253,\n"
		      "ExID 0x4C55) with N empty hop slots that INT switches fill; the receiver\n"
		      "echoes the latest request on every pure ACK, and the sender stores the echo\n"
		      "for the PowerTCP congestion control (lumen cc). Connections established\n"
		      "before `enable` are not affected.\n"
		      "\n"
		      "enable   load, configure and attach; stays attached after lumen exits.\n"
		      "  --cgroup PATH  a cgroup v2 directory, e.g. /sys/fs/cgroup/mygroup\n"
		      "  --wide         version 2 of the option: 24-bit timestamps and byte\n"
		      "                 counters, so echoes up to 126 ms apart still give INT\n"
		      "                 samples (version 1: 1.97 ms; delayed ACKs, slow or\n"
		      "                 application-limited flows), and in loss recovery, when\n"
		      "                 SACK blocks leave no room for the whole echo, the\n"
		      "                 bottleneck hop alone (echo_partial). Records are 9 bytes\n"
		      "                 instead of 7: 2 slots fit next to TCP timestamps, 3\n"
		      "                 without. INT switches and both ends of a flow must\n"
		      "                 speak it (every lumen part does).\n"
		      "  --slots N      hop slots per request, 1..5 (default 3; --wide: 1..3,\n"
		      "                 default 2). With TCP timestamps on, only 3 (--wide: 2)\n"
		      "                 fit next to them; more slots need\n"
		      "                 net.ipv4.tcp_timestamps=0, otherwise every request is\n"
		      "                 skipped and counted as no_room.\n"
		      "  --port P       only flows whose local or remote port is P; repeat the\n"
		      "                 option or give a comma list, at most 8 ports (default: all)\n"
		      "  --ipv4         only IPv4 flows (IPv4-mapped IPv6 sockets count as IPv4)\n"
		      "  --ipv6         only IPv6 flows (default: both families)\n"
		      "disable  detach the program and remove its pinned state. The per-socket map\n"
		      "         lumen_int_sk stays pinned while the PowerTCP struct_ops (lumen cc)\n"
		      "         is loaded, since it shares it.\n"
		      "status   whether the program is attached, where, its configuration and its\n"
		      "         counters; --json for a machine-readable object.\n"
		      "\n"
		      "Counters: 'lumen int status' lists each with what it counts.\n"
		      "\n"
		      "State is pinned under " LUMEN_PIN_ROOT ": int_sockops_link, int_sockops_prog,\n"
		      "lumen_int_cfg, lumen_int_stats, lumen_int_sk.\n";

// ---------------------------------------------------------------------
// enable

IntEnableRequest parse_enable(const std::vector<std::string> &args)
{
	// --port may repeat; Args keeps one value per option, so collect it here.
	std::vector<std::string> rest, port_words;
	for (std::size_t i = 0; i < args.size(); i++) {
		const std::string &w = args[i];
		if (w == "--port") {
			if (i + 1 >= args.size())
				throw UsageError("option --port needs a value");
			port_words.push_back(args[++i]);
		} else if (w.rfind("--port=", 0) == 0) {
			port_words.push_back(w.substr(7));
		} else {
			rest.push_back(w);
		}
	}
	Args a = Args::parse(rest, {"--ipv4", "--ipv6", "--wide"});
	a.allow_only({"--cgroup", "--slots", "--wide", "--ipv4", "--ipv6"});
	if (!a.positional.empty())
		throw UsageError("unexpected argument '" + a.positional[0] + "'");

	IntEnableRequest o;
	auto cg = a.get("--cgroup");
	if (!cg || cg->empty())
		throw UsageError("enable needs --cgroup PATH (a cgroup v2 directory)");
	o.cgroup = *cg;

	o.wide = a.has("--wide");
	if (auto s = a.get("--slots"))
		o.slots = static_cast<unsigned>(parse_uint(*s, "--slots", 1, lumen_int_max_slots(o.wide ? 2 : 1)));

	if (a.has("--ipv4") && a.has("--ipv6"))
		throw UsageError("--ipv4 and --ipv6 exclude each other (give neither for both families)");
	o.families = a.has("--ipv4") ? LUMEN_INT_FAMILY_IPV4 : a.has("--ipv6") ? LUMEN_INT_FAMILY_IPV6 : 0;

	// --port A,B and --port A --port B alike; a port named twice is a
	// mistake in one list or across several
	for (const auto &w : port_words) {
		for (std::uint64_t v : parse_uint_list(w, "--port", "port", 1, 65535)) {
			auto p = static_cast<std::uint16_t>(v);
			if (std::find(o.ports.begin(), o.ports.end(), p) != o.ports.end())
				throw UsageError("--port: port " + std::to_string(p) + " is listed twice");
			o.ports.push_back(p);
		}
	}
	int_config(o); // the range checks, before anything is touched
	return o;
}

int cmd_enable(const std::vector<std::string> &args)
{
	IntEnableRequest req = parse_enable(args);
	enable_int(req);
	const lumen_int_config cfg = int_config(req);
	std::printf("INT sockops enabled on cgroup %s: option version %u, %u hop slot%s, families %s, ports %s\n",
		    req.cgroup.c_str(), cfg.version, cfg.slots, cfg.slots == 1 ? "" : "s",
		    int_families_text(cfg.families).c_str(), int_ports_text(cfg).c_str());
	if (cfg.slots > (req.wide ? kIntSlotsWithTimestampsWide : kIntSlotsWithTimestamps)) {
		std::string ts;
		try {
			ts = read_sysctl("net.ipv4.tcp_timestamps");
		} catch (const Error &) {
		}
		if (ts != "0")
			std::fprintf(stderr,
				     "lumen int: note: %u slots (%u bytes) do not fit next to TCP timestamps; "
				     "requests will be skipped (no_room) unless net.ipv4.tcp_timestamps=0\n",
				     cfg.slots, lumen_int_opt_len(cfg.version, cfg.slots));
	}
	return 0;
}

// ---------------------------------------------------------------------
// disable

int cmd_disable(const std::vector<std::string> &args)
{
	Args a = Args::parse(args);
	a.allow_only({});
	if (!a.positional.empty())
		throw UsageError("unexpected argument '" + a.positional[0] + "'");
	IntDisableResult r = disable_int();
	if (!r.removed) {
		std::printf("INT sockops is not enabled: nothing to do\n");
		return 0;
	}
	std::printf("INT sockops disabled\n");
	if (r.sk_kept)
		std::printf("kept %s/%s: the PowerTCP struct_ops (lumen cc) still uses it\n", LUMEN_PIN_ROOT,
			    LUMEN_PIN_INT_SK);
	return 0;
}

// ---------------------------------------------------------------------
// status

std::string json_bool(bool b)
{
	return b ? "true" : "false";
}

void print_status_json(const IntStatus &s)
{
	Json j;
	j.raw("enabled", json_bool(s.enabled)).raw("attached", json_bool(s.attached));
	j.str("cgroup", s.cgroup).num("cgroup_id", s.cgroup_id);
	j.num("link_id", std::uint64_t{s.link_id}).num("prog_id", std::uint64_t{s.prog_id});
	if (s.config) {
		const lumen_int_config &cfg = *s.config;
		std::string ports = "[";
		for (std::uint32_t i = 0; i < cfg.nports && i < LUMEN_INT_MAX_PORTS; i++)
			ports += (i ? ", " : "") + std::to_string(cfg.ports[i]);
		ports += "]";
		Json c;
		const std::uint32_t ver = cfg.version ? cfg.version : LUMEN_INT_VERSION;
		c.raw("active", json_bool(cfg.enabled != 0)).num("version", std::uint64_t{ver});
		c.num("slots", std::uint64_t{cfg.slots})
			.num("option_bytes", std::uint64_t{lumen_int_opt_len(ver, cfg.slots)});
		c.str("families", int_families_text(cfg.families)).raw("ports", ports);
		j.raw("config", c.dump());
	} else {
		j.raw("config", "null");
	}
	if (s.counters) {
		Json c;
		for (std::size_t i = 0; i < s.counters->size(); i++)
			c.num(kIntCounters[i].name, (*s.counters)[i]);
		j.raw("counters", c.dump());
	} else {
		j.raw("counters", "null");
	}
	j.raw("sk_storage_pinned", json_bool(s.sk_pinned));
	std::printf("%s\n", j.dump().c_str());
}

int cmd_status(const std::vector<std::string> &args)
{
	Args a = Args::parse(args, {"--json"});
	a.allow_only({"--json"});
	if (!a.positional.empty())
		throw UsageError("unexpected argument '" + a.positional[0] + "'");
	IntStatus s = int_status();
	if (a.has("--json")) {
		print_status_json(s);
		return 0;
	}
	if (!s.enabled) {
		std::printf("INT sockops: not enabled\n");
	} else {
		std::printf("INT sockops: %s\n", s.attached ? "attached" : "pinned but detached (cgroup removed?)");
		std::printf("  cgroup       %s (id %llu)\n", s.cgroup.empty() ? "?" : s.cgroup.c_str(),
			    static_cast<unsigned long long>(s.cgroup_id));
		std::printf("  link id      %u, program id %u\n", s.link_id, s.prog_id);
	}
	if (s.config) {
		const lumen_int_config &cfg = *s.config;
		const std::uint32_t ver = cfg.version ? cfg.version : LUMEN_INT_VERSION;
		std::printf("  config       %s, option version %u, %u hop slot%s (%u option bytes), families %s, ports "
			    "%s\n",
			    cfg.enabled ? "active" : "inactive", ver, cfg.slots, cfg.slots == 1 ? "" : "s",
			    lumen_int_opt_len(ver, cfg.slots), int_families_text(cfg.families).c_str(),
			    int_ports_text(cfg).c_str());
	}
	std::printf("  lumen_int_sk %s\n", s.sk_pinned ? "pinned" : "not pinned");
	if (s.counters) {
		std::printf("  counters\n");
		for (std::size_t i = 0; i < s.counters->size(); i++)
			std::printf("    %-13s %12llu  %s\n", kIntCounters[i].name,
				    static_cast<unsigned long long>((*s.counters)[i]), kIntCounters[i].help);
	}
	return 0;
}

int run_int(const std::vector<std::string> &args)
{
	using Words = std::vector<std::string>;
	const Words rest(args.empty() ? args.end() : args.begin() + 1, args.end());
	return run_subcommand<Words>(args.empty() ? nullptr : &args[0],
				     {{"enable", cmd_enable}, {"disable", cmd_disable}, {"status", cmd_status}}, rest);
}

} // namespace

const Command kIntCommand = {"int", "INT TCP option plumbing (cgroup sockops): enable, disable, status", kUsage,
			     run_int};

} // namespace lumen
