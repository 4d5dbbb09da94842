// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/bpfctl/int_sockops.cpp - see int_sockops.h.
#include "bpfctl/int_sockops.h"

#include "base/cgroup.h"
#include "base/error.h"
#include "base/fd.h"
#include "base/interrupt.h"
#include "base/rollback.h"
#include "base/system.h"
#include "bpfctl/bpf_util.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <dirent.h>
#include <memory>

#include "int_sockops.skel.h"

namespace lumen
{

#define LUMEN_COUNTER_NAME(id, name, help) {name, help},
const CounterName kIntCounters[LUMEN_INT_CNT_MAX] = {LUMEN_INT_COUNTERS(LUMEN_COUNTER_NAME)};
#undef LUMEN_COUNTER_NAME

namespace
{

struct SkelDeleter {
	void operator()(int_sockops *s) const
	{
		int_sockops__destroy(s);
	}
};

struct LinkDeleter {
	void operator()(bpf_link *l) const
	{
		bpf_link__destroy(l); // a pinned link stays attached
	}
};

// Anything of the PowerTCP struct_ops part pinned: its struct_ops maps
// ("cc_*") or its maps ("lumen_cc_*"). It shares lumen_int_sk.
bool cc_part_loaded()
{
	DIR *d = ::opendir(LUMEN_PIN_ROOT);
	if (!d)
		return false;
	bool found = false;
	while (struct dirent *e = ::readdir(d)) {
		std::string n = e->d_name;
		if (starts_with(n, "cc_") || starts_with(n, "lumen_cc_"))
			found = true;
	}
	::closedir(d);
	return found;
}

void zero_counters(int fd)
{
	int ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		throw Error("cannot count possible CPUs");
	std::vector<std::uint64_t> zeros(static_cast<std::size_t>(ncpu), 0);
	for (std::uint32_t k = 0; k < LUMEN_INT_CNT_MAX; k++)
		if (bpf_map_update_elem(fd, &k, zeros.data(), BPF_ANY) != 0)
			throw Error("cannot reset counter " + std::to_string(k) + ": " + errno_text(errno));
}

} // namespace

lumen_int_config int_config(const IntEnableRequest &req)
{
	lumen_int_config cfg{};
	cfg.enabled = 1;
	cfg.version = req.wide ? LUMEN_INT_VERSION_WIDE : LUMEN_INT_VERSION;
	const unsigned max = lumen_int_max_slots(cfg.version);
	const unsigned slots = req.slots ? req.slots : req.wide ? kIntDefaultSlotsWide : kIntDefaultSlots;
	if (slots < 1 || slots > max) {
		std::string msg = "--slots: ";
		msg.append(std::to_string(slots)).append(" is outside 1..").append(std::to_string(max));
		if (req.wide)
			msg.append(" (version 2 records are 9 bytes: 3 fit in 40)");
		throw UsageError(msg);
	}
	cfg.slots = slots;
	if (req.families & ~std::uint32_t{LUMEN_INT_FAMILY_IPV4 | LUMEN_INT_FAMILY_IPV6})
		throw UsageError("unknown address family bits " + std::to_string(req.families));
	cfg.families = req.families == (LUMEN_INT_FAMILY_IPV4 | LUMEN_INT_FAMILY_IPV6) ? 0 : req.families;
	std::vector<std::uint16_t> ports;
	for (std::uint16_t p : req.ports) {
		if (p == 0)
			throw UsageError("--port: 0 is not a port");
		if (std::find(ports.begin(), ports.end(), p) == ports.end())
			ports.push_back(p);
	}
	if (ports.size() > LUMEN_INT_MAX_PORTS)
		throw UsageError("too many ports: " + std::to_string(ports.size()) + " given, at most " +
				 std::to_string(LUMEN_INT_MAX_PORTS));
	cfg.nports = static_cast<std::uint32_t>(ports.size());
	for (std::size_t i = 0; i < ports.size(); i++)
		cfg.ports[i] = ports[i];
	return cfg;
}

void enable_int(const IntEnableRequest &req)
{
	const lumen_int_config cfg = int_config(req);
	if (req.cgroup.empty())
		throw UsageError("enable needs --cgroup PATH (a cgroup v2 directory)");
	require_root();
	require_btf();
	Fd cg = open_cgroup_dir(req.cgroup);
	ensure_pin_root();
	// one change of the pins at a time: lumen_int_sk is shared with `lumen cc`
	PinRootLock lock;
	if (pinned(LUMEN_PIN_INT_LINK) || pinned(LUMEN_PIN_INT_PROG))
		throw Error("INT sockops is already enabled (see 'lumen int status'; 'lumen int disable' first)");

	capture_libbpf_log();
	clear_libbpf_log();
	// Ctrl-C sets a flag instead of killing us half-way: checked before
	// the commit, so either all of the setup stays or none of it
	install_interrupt_handlers();

	bpf_object_open_opts oo = pin_root_open_opts();
	std::unique_ptr<int_sockops, SkelDeleter> skel(int_sockops__open_opts(&oo));
	if (!skel)
		throw Error("cannot open the int_sockops BPF object: " + errno_text(errno) + libbpf_log_tail());

	Rollback rb("lumen int enable"); // after skel: runs while the skeleton's fds are open
	// only what this attempt pins: lumen_int_sk may be the struct_ops part's
	for (const char *m : {LUMEN_PIN_INT_SK, LUMEN_PIN_INT_CFG, LUMEN_PIN_INT_STATS})
		if (!pinned(m))
			rb.add(std::string("unpin ") + m, [m]() { remove_pin(m); });
	if (int err = int_sockops__load(skel.get()))
		throw Error("cannot load the int_sockops BPF object: " + errno_text(err) +
			    " (a map pinned under " LUMEN_PIN_ROOT " with another layout?)" + libbpf_log_tail());

	const std::uint32_t zero = 0;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.lumen_int_cfg), &zero, &cfg, BPF_ANY) != 0)
		throw Error("cannot write the INT configuration: " + errno_text(errno));
	zero_counters(bpf_map__fd(skel->maps.lumen_int_stats));

	// the link's only reference until it is pinned: destroying it detaches
	std::unique_ptr<bpf_link, LinkDeleter> link(
		bpf_program__attach_cgroup(skel->progs.lumen_int_sockops, cg.get()));
	if (!link)
		throw Error("cannot attach to cgroup " + req.cgroup + ": " + errno_text(errno) + libbpf_log_tail());
	if (int err = bpf_link__pin(link.get(), pin_path(LUMEN_PIN_INT_LINK).c_str()))
		throw Error("cannot pin the cgroup link at " + pin_path(LUMEN_PIN_INT_LINK) + ": " + errno_text(err));
	rb.add("unpin the cgroup link", []() { remove_pin(LUMEN_PIN_INT_LINK); });
	if (int err = bpf_program__pin(skel->progs.lumen_int_sockops, pin_path(LUMEN_PIN_INT_PROG).c_str()))
		throw Error("cannot pin the program at " + pin_path(LUMEN_PIN_INT_PROG) + ": " + errno_text(err));
	rb.add("unpin the program", []() { remove_pin(LUMEN_PIN_INT_PROG); });
	throw_if_interrupted(); // Ctrl-C during setup: the rollback undoes it
	rb.commit();
}

IntDisableResult disable_int()
{
	require_root();
	PinRootLock lock;
	IntDisableResult out;
	if (pinned(LUMEN_PIN_INT_LINK)) {
		// Detach explicitly, so a process still holding the link cannot
		// keep the program attached after the pin is gone.
		Fd fd(bpf_obj_get(pin_path(LUMEN_PIN_INT_LINK).c_str()));
		if (fd.valid() && bpf_link_detach(fd.get()) != 0 && errno != EINVAL && errno != ENOLINK)
			throw Error("cannot detach " + pin_path(LUMEN_PIN_INT_LINK) + ": " + errno_text(errno));
		out.removed |= remove_pin(LUMEN_PIN_INT_LINK);
	}
	out.removed |= remove_pin(LUMEN_PIN_INT_PROG);
	out.removed |= remove_pin(LUMEN_PIN_INT_CFG);
	out.removed |= remove_pin(LUMEN_PIN_INT_STATS);
	if (cc_part_loaded())
		out.sk_kept = pinned(LUMEN_PIN_INT_SK);
	else
		out.removed |= remove_pin(LUMEN_PIN_INT_SK);
	return out;
}

IntStatus int_status()
{
	require_root();
	IntStatus s;
	s.enabled = pinned(LUMEN_PIN_INT_LINK);
	if (s.enabled) {
		Fd fd = open_pin(LUMEN_PIN_INT_LINK);
		bpf_link_info info{};
		std::uint32_t len = sizeof(info);
		if (bpf_obj_get_info_by_fd(fd.get(), &info, &len) != 0)
			throw Error("cannot query " + pin_path(LUMEN_PIN_INT_LINK) + ": " + errno_text(errno));
		s.link_id = info.id;
		s.prog_id = info.prog_id;
		if (info.type == BPF_LINK_TYPE_CGROUP) {
			s.cgroup_id = info.cgroup.cgroup_id;
			// a link whose cgroup was removed reports id 0 (defunct)
			s.attached = s.cgroup_id != 0;
			s.cgroup = cgroup_path_from_id(s.cgroup_id);
		}
	}
	if (pinned(LUMEN_PIN_INT_CFG)) {
		Fd fd = open_pin(LUMEN_PIN_INT_CFG);
		lumen_int_config cfg{};
		const std::uint32_t zero = 0;
		if (bpf_map_lookup_elem(fd.get(), &zero, &cfg) != 0)
			throw Error("cannot read " + pin_path(LUMEN_PIN_INT_CFG) + ": " + errno_text(errno));
		s.config = cfg;
	}
	if (pinned(LUMEN_PIN_INT_STATS))
		s.counters = sum_percpu_counters(open_pin(LUMEN_PIN_INT_STATS).get(), LUMEN_INT_CNT_MAX);
	s.sk_pinned = pinned(LUMEN_PIN_INT_SK);
	return s;
}

std::string int_families_text(std::uint32_t families)
{
	switch (families) {
	case LUMEN_INT_FAMILY_IPV4:
		return "ipv4";
	case LUMEN_INT_FAMILY_IPV6:
		return "ipv6";
	default:
		return "ipv4,ipv6";
	}
}

std::string int_ports_text(const lumen_int_config &cfg)
{
	if (cfg.nports == 0)
		return "all";
	std::string s;
	for (std::uint32_t i = 0; i < cfg.nports && i < LUMEN_INT_MAX_PORTS; i++) {
		if (i)
			s += ',';
		s += std::to_string(cfg.ports[i]);
	}
	return s;
}

} // namespace lumen
