// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include "bpfctl/tc.h"

#include "base/error.h"
#include "base/system.h"
#include "bpfctl/bpf_util.h"

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace lumen
{

namespace
{

// tc from PATH, else where Debian installs it (root's PATH without sbin)
std::string tc_program()
{
	if (in_path("tc"))
		return "tc";
	for (const char *p : {"/usr/sbin/tc", "/sbin/tc"})
		if (::access(p, X_OK) == 0)
			return p;
	throw Error("cannot run tc (iproute2): not found — is it installed?");
}

bpf_tc_hook make_hook(unsigned ifindex, bpf_tc_attach_point point)
{
	bpf_tc_hook hook;
	std::memset(&hook, 0, sizeof(hook));
	hook.sz = sizeof(hook);
	hook.ifindex = static_cast<int>(ifindex);
	hook.attach_point = point;
	return hook;
}

bpf_tc_opts make_opts()
{
	bpf_tc_opts opts;
	std::memset(&opts, 0, sizeof(opts));
	opts.sz = sizeof(opts);
	return opts;
}

} // namespace

ProcessResult run_tc(const Netns &ns, const std::vector<std::string> &args)
{
	std::vector<std::string> argv = {tc_program()};
	argv.insert(argv.end(), args.begin(), args.end());
	ProcessOptions opts;
	opts.netns_fd = ns.fd.get();
	opts.own_process_group = true; // a half-applied qdisc change is worse than a late Ctrl-C
	ProcessResult r = run_process(argv, opts);
	r.output = trim(r.output);
	return r;
}

void tc_or_throw(const Netns &ns, const std::vector<std::string> &args)
{
	ProcessResult r = run_tc(ns, args);
	if (r.status != 0)
		throw Error("'tc " + command_text(args) + "' in " + ns.label() + " failed: " + r.output);
}

bool has_clsact(const Netns &ns, const std::string &dev)
{
	ProcessResult r = run_tc(ns, {"qdisc", "show", "dev", dev});
	return r.status == 0 &&
	       (r.output.rfind("qdisc clsact ", 0) == 0 || r.output.find("\nqdisc clsact ") != std::string::npos);
}

bool clsact_unused(const Netns &ns, const std::string &dev)
{
	for (const char *dir : {"ingress", "egress"}) {
		ProcessResult r = run_tc(ns, {"filter", "show", "dev", dev, dir});
		if (r.status != 0 || !r.output.empty())
			return false;
	}
	return true;
}

bool create_clsact(unsigned ifindex, const std::string &dev)
{
	bpf_tc_hook hook = make_hook(ifindex, BPF_TC_INGRESS);
	int err = bpf_tc_hook_create(&hook);
	if (err == -EEXIST)
		return false;
	if (err)
		throw Error("cannot create a clsact qdisc on " + dev + ": " + errno_text(err) + libbpf_log_tail(5));
	return true;
}

void destroy_clsact(unsigned ifindex)
{
	bpf_tc_hook hook = make_hook(ifindex, static_cast<bpf_tc_attach_point>(BPF_TC_INGRESS | BPF_TC_EGRESS));
	bpf_tc_hook_destroy(&hook);
}

TcFilter attach_filter(unsigned ifindex, bpf_tc_attach_point point, int prog_fd, const std::string &dev)
{
	bpf_tc_hook hook = make_hook(ifindex, point);
	bpf_tc_opts opts = make_opts();
	opts.prog_fd = prog_fd;
	int err = bpf_tc_attach(&hook, &opts);
	if (err)
		throw Error("cannot attach the " + std::string(point == BPF_TC_EGRESS ? "egress" : "ingress") +
			    " program to " + dev + ": " + errno_text(err) + libbpf_log_tail(5));
	TcFilter f;
	f.handle = opts.handle;
	f.priority = opts.priority;
	f.prog_id = opts.prog_id;
	return f;
}

__u32 query_filter(unsigned ifindex, bpf_tc_attach_point point, __u32 handle, __u32 priority)
{
	bpf_tc_hook hook = make_hook(ifindex, point);
	bpf_tc_opts opts = make_opts();
	opts.handle = handle;
	opts.priority = priority;
	if (bpf_tc_query(&hook, &opts) != 0)
		return 0;
	return opts.prog_id;
}

std::string detach_filter(unsigned ifindex, bpf_tc_attach_point point, const TcFilter &f, const std::string &dev)
{
	const char *dir = point == BPF_TC_EGRESS ? "egress" : "ingress";
	__u32 now = query_filter(ifindex, point, f.handle, f.priority);
	if (now == 0)
		return "";
	if (now != f.prog_id)
		return std::string("the ") + dir + " filter on " + dev + " runs program " + std::to_string(now) +
		       ", not the recorded " + std::to_string(f.prog_id) + ": left in place";
	bpf_tc_hook hook = make_hook(ifindex, point);
	bpf_tc_opts opts = make_opts();
	opts.handle = f.handle;
	opts.priority = f.priority;
	int err = bpf_tc_detach(&hook, &opts);
	if (err)
		return std::string("cannot detach the ") + dir + " filter from " + dev + ": " + errno_text(err);
	return "";
}

} // namespace lumen
