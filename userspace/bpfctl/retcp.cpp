// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/bpfctl/retcp.cpp - see retcp.h.
#include "bpfctl/retcp.h"

#include <arpa/inet.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>
#include <set>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/error.h"
#include "base/fd.h"
#include "base/rollback.h"
#include "base/system.h"
#include "bpfctl/bpf_util.h"
#include "bpfctl/cc.h"
#include "bpfctl/osched_state.h"

extern "C" {
#include "lumen/optical_wire.h" /* lumen_osched_default_stale_ns */
}

#include "retcp.skel.h"

namespace lumen
{

#define LUMEN_COUNTER_NAME(id, name, help) {name, help},
const CounterName kRetcpCounters[LUMEN_RETCP_CNT_MAX] = {LUMEN_RETCP_COUNTERS(LUMEN_COUNTER_NAME)};
#undef LUMEN_COUNTER_NAME

namespace
{

const std::string kDir = LUMEN_PIN_RETCP_DIR;
const char *const kAvailable = "net.ipv4.tcp_available_congestion_control";
const char *const kDefault = "net.ipv4.tcp_congestion_control";

struct SkelDeleter {
	void operator()(retcp *s) const
	{
		retcp__destroy(s);
	}
};

bool registered()
{
	for (const std::string &w : split_words(read_sysctl(kAvailable)))
		if (w == LUMEN_CC_NAME_RETCP)
			return true;
	return false;
}

// The number of entries of lumend's windows map: its node count.
std::uint32_t map_entries(int fd)
{
	bpf_map_info info{};
	__u32 len = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0)
		throw Error(std::string("cannot read lumend's windows map: ") + std::strerror(errno));
	return info.max_entries;
}

} // namespace

void check_retcp_request(const RetcpRequest &req)
{
	const sched::Schedule &s = req.schedule;
	if (int err = lumen_retcp_params_validate(&req.params))
		throw UsageError(std::string("retcp: ") + lumen_retcp_param_strerror(err));
	if (req.lumend.empty())
		throw UsageError("retcp: the lumend to follow is needed (its --pin name)");
	if (req.host_addrs.size() != s.nodes)
		throw UsageError("retcp: " + std::to_string(req.host_addrs.size()) + " addresses for " +
				 std::to_string(s.nodes) + " nodes");
	if (std::set<std::uint32_t>(req.host_addrs.begin(), req.host_addrs.end()).size() != s.nodes)
		throw UsageError("retcp: two nodes have the same address");
}

void load_retcp(const RetcpRequest &req)
{
	check_retcp_request(req);
	require_root();
	require_btf();
	ensure_pin_root();
	PinRootLock lock;
	if (pinned(kDir + "/ops") || registered())
		throw Error(LUMEN_CC_NAME_RETCP " is loaded already ('lumen retcp unload' first)");
	const lumen_osched_state ls = read_osched(req.lumend);
	Fd state = open_pin(osched_dir(req.lumend) + "/state");
	Fd windows = open_pin(osched_dir(req.lumend) + "/windows");
	if (map_entries(windows.get()) != req.schedule.nodes)
		throw UsageError("retcp: lumend '" + req.lumend + "' publishes " +
				 std::to_string(map_entries(windows.get())) + " nodes, the schedule has " +
				 std::to_string(req.schedule.nodes));

	capture_libbpf_log();
	std::unique_ptr<retcp, SkelDeleter> skel(retcp__open());
	if (!skel)
		throw Error("retcp: cannot open the BPF object: " + libbpf_log_tail());
	if (bpf_map__reuse_fd(skel->maps.retcp_osched, state.get()) != 0 ||
	    bpf_map__reuse_fd(skel->maps.retcp_windows, windows.get()) != 0)
		throw Error("retcp: cannot use lumend's slot state " + pin_path(osched_dir(req.lumend)) + ": " +
			    std::strerror(errno));
	if (bpf_map__set_max_entries(skel->maps.retcp_hosts, req.schedule.nodes) != 0)
		throw Error("retcp: cannot size its maps");
	if (int err = retcp__load(skel.get()))
		throw Error("retcp: cannot load the BPF programs (verifier or kernel refused them): " +
			    errno_text(err) + libbpf_log_tail(30));

	lumen_retcp_cfg cfg{};
	cfg.params = req.params;
	cfg.stale_ns = req.stale_ns ? req.stale_ns : lumen_osched_default_stale_ns(req.schedule.slot_ns);
	cfg.nodes = req.schedule.nodes;
	cfg.self = ls.self;
	std::uint32_t zero = 0;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.retcp_cfg), &zero, &cfg, BPF_ANY) != 0)
		throw Error(std::string("retcp: cannot write its configuration: ") + std::strerror(errno));
	for (std::uint32_t i = 0; i < req.schedule.nodes; i++) {
		std::uint32_t addr = htonl(req.host_addrs[i]);
		if (bpf_map_update_elem(bpf_map__fd(skel->maps.retcp_hosts), &addr, &i, BPF_ANY) != 0)
			throw Error(std::string("retcp: cannot write the addresses: ") + std::strerror(errno));
	}

	Rollback undo("retcp load");
	const std::string dir = pin_path(kDir);
	if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
		throw Error("cannot create " + dir + ": " + std::strerror(errno));
	undo.add("remove " + dir, [dir]() { ::rmdir(dir.c_str()); });
	struct Pin {
		const char *name;
		bpf_map *map;
	} pins[] = {{"/ops", skel->maps.retcp_ops},	  {"/cfg", skel->maps.retcp_cfg},
		    {"/hosts", skel->maps.retcp_hosts},	  {"/stats", skel->maps.retcp_stats},
		    {"/osched", skel->maps.retcp_osched}, {"/windows", skel->maps.retcp_windows}};
	for (const Pin &p : pins) {
		std::string path = dir + p.name;
		if (bpf_obj_pin(bpf_map__fd(p.map), path.c_str()) != 0)
			throw Error("cannot pin " + path + ": " + std::strerror(errno));
		undo.add("unpin " + path, [path]() { ::unlink(path.c_str()); });
	}
	bpf_link *link = bpf_map__attach_struct_ops(skel->maps.retcp_ops);
	if (!link) {
		int e = errno;
		throw Error(std::string("cannot register " LUMEN_CC_NAME_RETCP ": ") +
			    (e == EEXIST ? "an algorithm of that name is already registered" : errno_text(e)) +
			    libbpf_log_tail());
	}
	// the registration outlives this process: the pinned ops map holds it
	bpf_link__disconnect(link);
	bpf_link__destroy(link);
	const int ops = bpf_map__fd(skel->maps.retcp_ops);
	undo.add("unregister " LUMEN_CC_NAME_RETCP, [ops]() {
		__u32 z = 0;
		if (bpf_map_delete_elem(ops, &z) != 0 && errno != ENOENT)
			throw Error(errno_text(errno));
	});
	if (req.allow && allow_congestion_control(LUMEN_CC_NAME_RETCP, true))
		undo.add("disallow " LUMEN_CC_NAME_RETCP,
			 []() { allow_congestion_control(LUMEN_CC_NAME_RETCP, false); });
	undo.commit();
}

bool unload_retcp()
{
	require_root();
	PinRootLock lock;
	if (!pinned(kDir + "/ops"))
		return false;
	if (read_sysctl(kDefault) == LUMEN_CC_NAME_RETCP)
		throw Error(std::string(kDefault) +
			    " is " LUMEN_CC_NAME_RETCP " in this network namespace; choose another default first "
			    "(e.g. sysctl -w " +
			    kDefault + "=cubic)");
	allow_congestion_control(LUMEN_CC_NAME_RETCP, false);
	{
		Fd ops = open_pin(kDir + "/ops");
		__u32 zero = 0;
		// ENOENT: never registered; EINPROGRESS: already being torn down
		if (bpf_map_delete_elem(ops.get(), &zero) != 0 && errno != ENOENT && errno != EINPROGRESS)
			throw Error(std::string("cannot unregister " LUMEN_CC_NAME_RETCP ": ") + errno_text(errno));
	}
	for (const char *p : {"/ops", "/cfg", "/hosts", "/stats", "/osched", "/windows"})
		remove_pin(kDir + p);
	::rmdir(pin_path(kDir).c_str());
	return true;
}

RetcpStatus retcp_status()
{
	RetcpStatus st;
	st.registered = registered();
	if (!pinned(kDir + "/cfg"))
		return st;
	st.loaded = true;
	std::uint32_t zero = 0;
	Fd cfg = open_pin(kDir + "/cfg");
	if (bpf_map_lookup_elem(cfg.get(), &zero, &st.cfg) != 0)
		throw Error(std::string("cannot read bpf_retcp's configuration: ") + std::strerror(errno));
	Fd osched = open_pin(kDir + "/osched");
	if (bpf_map_lookup_elem(osched.get(), &zero, &st.lumend) != 0)
		throw Error(std::string("cannot read the slot state bpf_retcp follows: ") + std::strerror(errno));
	timespec now{};
	clock_gettime(CLOCK_TAI, &now);
	const std::uint64_t tai = (std::uint64_t)now.tv_sec * 1'000'000'000ull + (std::uint64_t)now.tv_nsec;
	st.lumend_age_ns = tai > st.lumend.boundary_ns ? tai - st.lumend.boundary_ns : 0;
	st.lumend_stale = lumen_osched_stale(tai, st.lumend.boundary_ns, st.cfg.stale_ns);
	Fd stats = open_pin(kDir + "/stats");
	std::vector<std::uint64_t> c = sum_percpu_counters(stats.get(), LUMEN_RETCP_CNT_MAX);
	for (std::size_t i = 0; i < st.counters.size() && i < c.size(); i++)
		st.counters[i] = c[i];
	return st;
}

} // namespace lumen
