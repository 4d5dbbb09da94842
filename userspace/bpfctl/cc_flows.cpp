// userspace/bpfctl/cc_flows.cpp - see cc_flows.h. The iterator object gets
// the pinned map's fd before loading (bpf_map__reuse_fd), so reading flows
// never creates or pins a map, and the program is gone when we return.
#include "bpfctl/cc_flows.h"

#include "base/error.h"
#include "base/fd.h"
#include "base/system.h"
#include "bpfctl/bpf_util.h"
#include "bpfctl/cc.h"

#include "cc_flows.skel.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cerrno>
#include <cstring>
#include <memory>
#include <sys/socket.h>
#include <unistd.h>

namespace lumen
{
namespace
{

struct SkelDeleter {
	void operator()(::cc_flows *s) const
	{
		cc_flows__destroy(s);
	}
};

std::string endpoint(unsigned family, const std::uint8_t *addr, unsigned port)
{
	char text[INET6_ADDRSTRLEN] = "?";
	bool v6 = family == AF_INET6;
	::inet_ntop(v6 ? AF_INET6 : AF_INET, addr, text, sizeof(text));
	std::string out;
	if (v6)
		out.push_back('[');
	out.append(text);
	if (v6)
		out.push_back(']');
	out.push_back(':');
	out.append(std::to_string(port));
	return out;
}

} // namespace

CcFlow cc_flow_from(const lumen_cc_flow &raw)
{
	CcFlow f;
	f.raw = raw;
	f.local = endpoint(raw.family, raw.saddr, raw.sport);
	f.remote = endpoint(raw.family, raw.daddr, raw.dport);
	f.algo = raw.mode < kCcPtcpAlgoCount ? kCcAlgos[raw.mode].name : "mode " + std::to_string(raw.mode);
	f.netns_ino = raw.netns_ino;
	return f;
}

CcFlow cc_flow_from(const lumen_timely_flow &raw)
{
	CcFlow f;
	f.timely = true;
	f.traw = raw;
	f.local = endpoint(raw.family, raw.saddr, raw.sport);
	f.remote = endpoint(raw.family, raw.daddr, raw.dport);
	f.algo = LUMEN_CC_NAME_TIMELY;
	f.netns_ino = raw.netns_ino;
	return f;
}

namespace
{

// Runs one iterator program over the sk_storage map `map`; returns what it wrote.
std::string run_iter(bpf_program *prog, int map)
{
	union bpf_iter_link_info info = {};
	info.map.map_fd = static_cast<__u32>(map);
	DECLARE_LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = &info, .link_info_len = sizeof(info));
	bpf_link *link = bpf_program__attach_iter(prog, &opts);
	if (!link)
		throw Error(std::string("cannot attach the flows iterator: ") + std::strerror(errno));
	std::unique_ptr<bpf_link, int (*)(bpf_link *)> link_guard(link, bpf_link__destroy);
	Fd it(bpf_iter_create(bpf_link__fd(link)));
	if (!it.valid())
		throw Error(std::string("cannot start the flows iterator: ") + std::strerror(errno));
	std::string buf;
	char chunk[4096];
	for (;;) {
		ssize_t n = ::read(it.get(), chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			throw Error(std::string("reading the flows iterator: ") + std::strerror(errno));
		if (n == 0)
			break;
		buf.append(chunk, static_cast<std::size_t>(n));
	}
	return buf;
}

template <typename Raw> void append_records(const std::string &buf, std::vector<CcFlow> *out)
{
	if (buf.size() % sizeof(Raw) != 0)
		throw Error("the flows iterator wrote " + std::to_string(buf.size()) + " bytes, not whole records");
	for (std::size_t off = 0; off + sizeof(Raw) <= buf.size(); off += sizeof(Raw)) {
		Raw raw;
		std::memcpy(&raw, buf.data() + off, sizeof(raw));
		out->push_back(cc_flow_from(raw));
	}
}

} // namespace

std::vector<CcFlow> cc_flows()
{
	require_root();
	if (!pinned(LUMEN_PIN_CC_SK))
		throw Error("not loaded (no " + pin_path(LUMEN_PIN_CC_SK) + "): run 'lumen cc load' first");
	if (!pinned(LUMEN_PIN_TIMELY_SK))
		throw Error("not loaded (no " + pin_path(LUMEN_PIN_TIMELY_SK) + "): run 'lumen cc load' first");
	Fd map = open_pin(LUMEN_PIN_CC_SK);
	Fd tmap = open_pin(LUMEN_PIN_TIMELY_SK);
	capture_libbpf_log(); // into the error text, not onto stderr
	clear_libbpf_log();
	std::unique_ptr<::cc_flows, SkelDeleter> skel(cc_flows__open());
	if (!skel)
		throw Error(std::string("cannot open the flows iterator: ") + std::strerror(errno));
	int err = bpf_map__reuse_fd(skel->maps.lumen_cc_sk, map.get());
	if (!err)
		err = bpf_map__reuse_fd(skel->maps.lumen_timely_sk, tmap.get());
	if (!err)
		err = cc_flows__load(skel.get());
	if (err == -EPERM)
		throw Error("cannot load the flows iterator: this kernel refuses BPF tracing programs (lockdown or a "
			    "security policy; the algorithms themselves are struct_ops and unaffected)");
	if (err)
		throw Error("cannot load the flows iterator (" + std::string(std::strerror(-err)) +
			    "): a kernel with BPF iterators over sk_storage maps (Linux >= 5.9)?" + libbpf_log_tail(5));
	std::vector<CcFlow> out;
	append_records<lumen_cc_flow>(run_iter(skel->progs.lumen_cc_flows, map.get()), &out);
	append_records<lumen_timely_flow>(run_iter(skel->progs.lumen_timely_flows, tmap.get()), &out);
	return out;
}

} // namespace lumen
