// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/testbed/testbed_spec.cpp - testbed descriptions: the JSON format
// (docs/testbeds.md), the `lumen testbed up` flags, and their validation.
// Every refusal names the key (as a JSON path, "$.bottleneck.rate") or the
// flag, and the accepted values.
#include "base/args.h"
#include "base/error.h"
#include "base/units.h"
#include "testbed/testbed.h"
#include "testbed/testbed_plan.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>
#include <set>

extern "C" {
#include "lumen/bpf_shared.h"
}

namespace lumen
{
namespace
{

using nlohmann::json;

constexpr std::uint32_t kMaxRateMbps = 100000; // 100 Gbit/s
constexpr std::uint64_t kMinBuffer = 1514; // one full frame at MTU 1500
constexpr std::uint64_t kMaxBuffer = 1ull << 30; // what the switch accepts
constexpr std::uint64_t kMaxDelayNs = 1000000000; // extra link delay: 0, or 1 us .. 1 s (a delay line)
constexpr std::uint64_t kMinDelayNs = 1000;

struct CountRange {
	std::uint32_t min, max;
};
constexpr CountRange kSenders{1, 64}, kReceivers{1, 64}, kLeaves{2, 8}, kSpines{1, 4}, kHostsPerLeaf{1, 16},
	kRotorNodes{2, 64};
constexpr std::uint64_t kMinSlotNs = 1000, kMaxSlotNs = 10'000'000'000ull; // rotor slots: 1us .. 10s

const std::vector<std::string> kLinkKeys = {"rate", "buffer", "ecn_threshold", "int", "delay"};

std::string join(const std::vector<std::string> &words, const std::string &sep = ", ")
{
	std::string out;
	for (const auto &w : words)
		out += (out.empty() ? "" : sep) + w;
	return out;
}

// Keys a topology kind accepts besides name/topology/description.
std::vector<std::string> kind_keys(TopologyKind kind)
{
	switch (kind) {
	case TopologyKind::Dumbbell:
		return {"senders", "receivers", "host_link", "bottleneck"};
	case TopologyKind::Incast:
		return {"senders", "host_link", "bottleneck"};
	case TopologyKind::LeafSpine:
		return {"leaves", "spines", "hosts_per_leaf", "host_link", "fabric_link"};
	case TopologyKind::Rotor:
		return {"nodes", "slot", "guard", "schedule"};
	}
	return {};
}

// "kernel" or "dpdk" -> TopologySpec::dpdk_hosts
bool parse_host_stack(const std::string &text, const std::string &what)
{
	if (text != "kernel" && text != "dpdk")
		throw UsageError(what + ": unknown host stack '" + text + "' (kernel, dpdk)");
	return text == "dpdk";
}

TopologyKind parse_kind(const std::string &text, const std::string &what)
{
	if (text == "dumbbell")
		return TopologyKind::Dumbbell;
	if (text == "incast")
		return TopologyKind::Incast;
	if (text == "leafspine")
		return TopologyKind::LeafSpine;
	if (text == "rotor")
		return TopologyKind::Rotor;
	throw UsageError(what + ": unknown topology '" + text + "' (dumbbell, incast, leafspine, rotor)");
}

void check_name(const std::string &name, const std::string &what)
{
	const bool ok = !name.empty() && name.size() <= 8 && std::all_of(name.begin(), name.end(), [](char c) {
		return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
	});
	if (!ok)
		throw UsageError(what + ": '" + name + "' is not a testbed name (1 to 8 of a-z, 0-9)");
}

void check_count(std::uint32_t v, const std::string &what, CountRange r)
{
	if (v < r.min || v > r.max)
		throw UsageError(what + ": " + std::to_string(v) + " is outside [" + std::to_string(r.min) + ", " +
				 std::to_string(r.max) + "]");
}

void check_rate(std::uint32_t mbps, const std::string &what)
{
	if (mbps < 1 || mbps > kMaxRateMbps)
		throw UsageError(what + ": " + std::to_string(mbps) + " Mbit/s is outside [1 Mbit/s, 100 Gbit/s]");
}

void check_link(const LinkSpec &l, const std::string &what)
{
	check_rate(l.rate_mbps, what + "rate");
	if (l.buffer_bytes < kMinBuffer || l.buffer_bytes > kMaxBuffer)
		throw UsageError(what + "buffer: " + std::to_string(l.buffer_bytes) + " bytes is outside [" +
				 std::to_string(kMinBuffer) + " (one full frame), 1g]");
	if (l.ecn_threshold_bytes != 0 && l.ecn_threshold_bytes >= l.buffer_bytes)
		throw UsageError(what + "ecn_threshold: " + std::to_string(l.ecn_threshold_bytes) +
				 " must be below the buffer (" + std::to_string(l.buffer_bytes) +
				 "), or 0 for no marking");
	if (l.delay_ns != 0 && (l.delay_ns < kMinDelayNs || l.delay_ns > kMaxDelayNs))
		throw UsageError(what + "delay: " + std::to_string(l.delay_ns) +
				 " ns is outside [1us, 1s] (or 0 for no extra delay)");
}

// The cross-field rules; `key` spells a key for the messages ("$." for
// JSON paths, "" for API callers).
void validate_with_prefix(const TopologySpec &s, const std::string &key)
{
	check_name(s.name, key + "name");
	check_link(s.host_link, key + "host_link.");
	// a delay node per host link would need a namespace per host
	if (s.dpdk_hosts && s.host_link.delay_ns)
		throw UsageError(key + "host_link.delay: DPDK hosts (host_stack dpdk) cannot have delayed links; "
				       "delay the fabric or bottleneck link instead");
	if (s.kind == TopologyKind::Rotor) {
		check_count(s.nodes, key + "nodes", kRotorNodes);
		if (s.slot_ns < kMinSlotNs || s.slot_ns > kMaxSlotNs)
			throw UsageError(key + "slot: " + std::to_string(s.slot_ns) + " ns is outside [1us, 10s]");
		if (s.guard_ns >= s.slot_ns)
			throw UsageError(key + "guard: " + std::to_string(s.guard_ns) +
					 " ns must be shorter than the slot (" + std::to_string(s.slot_ns) + " ns)");
		if (s.dpdk_hosts)
			throw UsageError(key + "host_stack: a rotor testbed has kernel hosts");
	} else if (s.kind == TopologyKind::LeafSpine) {
		check_count(s.leaves, key + "leaves", kLeaves);
		check_count(s.spines, key + "spines", kSpines);
		check_count(s.hosts_per_leaf, key + "hosts_per_leaf", kHostsPerLeaf);
		check_link(s.fabric_link, key + "fabric_link.");
	} else {
		check_count(s.senders, key + "senders", kSenders);
		if (s.kind == TopologyKind::Incast && s.receivers != 1)
			throw UsageError(key + "receivers: an incast has exactly one receiver");
		check_count(s.receivers, key + "receivers", kReceivers);
		check_link(s.bottleneck, key + "bottleneck.");
		// host egress is not shaped (a host NIC at least as fast as its switch
		// port), so a slower host link would move the bottleneck elsewhere
		if (s.host_link.rate_mbps < s.bottleneck.rate_mbps)
			throw UsageError(key + "host_link.rate: " + std::to_string(s.host_link.rate_mbps) +
					 " Mbit/s is below the bottleneck's " + std::to_string(s.bottleneck.rate_mbps) +
					 " Mbit/s; host links must be at least as fast");
	}
	const std::uint32_t ports = topology_port_count(s);
	if (ports > LUMEN_SWITCH_MAX_PORTS)
		throw UsageError("the " + std::string(topology_kind_name(s.kind)) + " needs " + std::to_string(ports) +
				 " INT switch ports; the switch has " + std::to_string(LUMEN_SWITCH_MAX_PORTS));
}

// ---------------------------------------------------------------------
// JSON

std::string path_of(const std::string &parent, const std::string &key)
{
	return parent + "." + key;
}

void refuse_unknown_keys(const json &obj, const std::string &path, const std::vector<std::string> &allowed,
			 const std::string &context)
{
	for (const auto &[key, value] : obj.items()) {
		if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
			throw UsageError(path_of(path, key) + ": unknown key" + context +
					 " (accepted: " + join(allowed) + ")");
	}
}

const json &require_object(const json &v, const std::string &path)
{
	if (!v.is_object())
		throw UsageError(path + ": must be an object");
	return v;
}

// Integers are accepted for rates (Mbit/s), sizes (bytes) and durations
// (ns); strings take the units of the command-line parsers.
std::string scalar_text(const json &v, const std::string &path, const std::string &example)
{
	if (v.is_string())
		return v.get<std::string>();
	if (v.is_number_unsigned())
		return std::to_string(v.get<std::uint64_t>());
	throw UsageError(path + ": must be a string like \"" + example + "\" or a non-negative integer");
}

std::uint32_t json_count(const json &v, const std::string &path, CountRange r)
{
	if (!v.is_number_unsigned())
		throw UsageError(path + ": must be an integer in [" + std::to_string(r.min) + ", " +
				 std::to_string(r.max) + "]");
	return static_cast<std::uint32_t>(parse_uint(std::to_string(v.get<std::uint64_t>()), path, r.min, r.max));
}

std::uint32_t json_rate(const json &v, const std::string &path)
{
	std::uint32_t mbps = parse_rate_mbps(scalar_text(v, path, "1gbit"), path);
	check_rate(mbps, path);
	return mbps;
}

std::uint64_t json_bytes(const json &v, const std::string &path)
{
	return parse_bytes(scalar_text(v, path, "256k"), path, kMaxBuffer);
}

std::uint64_t json_duration_upto(const json &v, const std::string &path, std::uint64_t max);

std::uint64_t json_duration(const json &v, const std::string &path)
{
	return json_duration_upto(v, path, kMaxDelayNs);
}

// Reads a link object; returns whether it set the rate.
bool json_link(const json &v, const std::string &path, LinkSpec *link)
{
	require_object(v, path);
	refuse_unknown_keys(v, path, kLinkKeys, " in a link");
	bool has_rate = false;
	if (v.contains("rate")) {
		link->rate_mbps = json_rate(v["rate"], path_of(path, "rate"));
		has_rate = true;
	}
	if (v.contains("buffer"))
		link->buffer_bytes = json_bytes(v["buffer"], path_of(path, "buffer"));
	if (v.contains("ecn_threshold"))
		link->ecn_threshold_bytes = json_bytes(v["ecn_threshold"], path_of(path, "ecn_threshold"));
	if (v.contains("int")) {
		if (!v["int"].is_boolean())
			throw UsageError(path_of(path, "int") + ": must be true or false");
		link->int_enabled = v["int"].get<bool>();
	}
	if (v.contains("delay"))
		link->delay_ns = json_duration(v["delay"], path_of(path, "delay"));
	check_link(*link, path + ".");
	return has_rate;
}

// A duration that may be 0, up to max: ns, or a string with units.
std::uint64_t json_duration_upto(const json &v, const std::string &path, std::uint64_t max)
{
	if (v.is_number_unsigned() && v.get<std::uint64_t>() == 0)
		return 0;
	if (v.is_string() && v.get<std::string>() == "0")
		return 0;
	return parse_duration_ns(scalar_text(v, path, "100us"), path, max);
}

// "0" or whole nanoseconds ("1000000ns"): parse_topology() reads it back
std::string delay_text(std::uint64_t ns)
{
	return ns == 0 ? "0" : std::to_string(ns) + "ns";
}

json link_json(const LinkSpec &l)
{
	return json{{"rate", rate_arg_text(l.rate_mbps)},
		    {"buffer", l.buffer_bytes},
		    {"ecn_threshold", l.ecn_threshold_bytes},
		    {"int", l.int_enabled},
		    {"delay", delay_text(l.delay_ns)}};
}

// ---------------------------------------------------------------------
// flags

std::optional<std::uint32_t> flag_count(const Args &a, const std::string &flag, CountRange r)
{
	if (!a.has(flag))
		return std::nullopt;
	return static_cast<std::uint32_t>(parse_uint(*a.get(flag), flag, r.min, r.max));
}

std::optional<std::uint32_t> flag_rate(const Args &a, const std::string &flag)
{
	if (!a.has(flag))
		return std::nullopt;
	std::uint32_t mbps = parse_rate_mbps(*a.get(flag), flag);
	check_rate(mbps, flag);
	return mbps;
}

void refuse_flags(const Args &a, const std::vector<std::string> &flags, TopologyKind kind)
{
	for (const auto &f : flags)
		if (a.has(f))
			throw UsageError(f + " does not apply to a " + topology_kind_name(kind) + " testbed");
}

// --buffer, --ecn-threshold, --no-int and --delay apply to every link.
void apply_common_link_flags(const Args &a, LinkSpec *link)
{
	if (a.has("--buffer"))
		link->buffer_bytes = parse_bytes(*a.get("--buffer"), "--buffer", kMaxBuffer);
	if (a.has("--ecn-threshold"))
		link->ecn_threshold_bytes = parse_bytes(*a.get("--ecn-threshold"), "--ecn-threshold", kMaxBuffer);
	if (a.has("--no-int"))
		link->int_enabled = false;
	if (a.has("--delay"))
		link->delay_ns = parse_duration_ns(*a.get("--delay"), "--delay", kMaxDelayNs);
}

} // namespace

const char *topology_kind_name(TopologyKind kind)
{
	switch (kind) {
	case TopologyKind::Dumbbell:
		return "dumbbell";
	case TopologyKind::Incast:
		return "incast";
	case TopologyKind::LeafSpine:
		return "leafspine";
	case TopologyKind::Rotor:
		return "rotor";
	}
	return "?";
}

void validate_topology(const TopologySpec &spec)
{
	validate_with_prefix(spec, "");
}

TopologySpec parse_topology(const std::string &json_text)
{
	json doc;
	try {
		doc = json::parse(json_text);
	} catch (const json::exception &e) { // parse_error, or out_of_range for 1e309
		throw UsageError(std::string("testbed description is not valid JSON: ") + e.what());
	}
	require_object(doc, "$");
	if (!doc.contains("topology"))
		throw UsageError("$.topology: missing (dumbbell, incast, leafspine, rotor)");
	if (!doc["topology"].is_string())
		throw UsageError("$.topology: must be a string (dumbbell, incast, leafspine, rotor)");

	TopologySpec spec;
	spec.kind = parse_kind(doc["topology"].get<std::string>(), "$.topology");
	std::vector<std::string> allowed = {"name", "topology", "description", "host_stack"};
	for (const auto &k : kind_keys(spec.kind))
		allowed.push_back(k);
	refuse_unknown_keys(doc, "$", allowed, std::string(" for a ") + topology_kind_name(spec.kind) + " topology");

	if (doc.contains("name")) {
		if (!doc["name"].is_string())
			throw UsageError("$.name: must be a string (1 to 8 of a-z, 0-9)");
		spec.name = doc["name"].get<std::string>();
		check_name(spec.name, "$.name");
	}
	if (doc.contains("description") && !doc["description"].is_string())
		throw UsageError("$.description: must be a string");
	if (doc.contains("host_stack")) {
		if (!doc["host_stack"].is_string())
			throw UsageError("$.host_stack: must be a string (kernel, dpdk)");
		spec.dpdk_hosts = parse_host_stack(doc["host_stack"].get<std::string>(), "$.host_stack");
	}
	if (doc.contains("senders"))
		spec.senders = json_count(doc["senders"], "$.senders", kSenders);
	if (doc.contains("receivers"))
		spec.receivers = json_count(doc["receivers"], "$.receivers", kReceivers);
	if (doc.contains("leaves"))
		spec.leaves = json_count(doc["leaves"], "$.leaves", kLeaves);
	if (doc.contains("spines"))
		spec.spines = json_count(doc["spines"], "$.spines", kSpines);
	if (doc.contains("hosts_per_leaf"))
		spec.hosts_per_leaf = json_count(doc["hosts_per_leaf"], "$.hosts_per_leaf", kHostsPerLeaf);

	if (spec.kind == TopologyKind::Rotor) {
		if (doc.contains("nodes"))
			spec.nodes = json_count(doc["nodes"], "$.nodes", kRotorNodes);
		if (doc.contains("slot"))
			spec.slot_ns =
				parse_duration_ns(scalar_text(doc["slot"], "$.slot", "1ms"), "$.slot", kMaxSlotNs);
		if (doc.contains("guard"))
			spec.guard_ns = json_duration_upto(doc["guard"], "$.guard", kMaxSlotNs);
		if (doc.contains("schedule")) {
			if (!doc["schedule"].is_string() || doc["schedule"].get<std::string>().empty())
				throw UsageError(
					"$.schedule: must be the path of a schedule file (lumen sched generate)");
			spec.schedule_file = doc["schedule"].get<std::string>();
		}
		validate_with_prefix(spec, "$.");
		return spec;
	}
	// a host link without a rate is as fast as the bottleneck (fabric) link
	const char *core_key = spec.kind == TopologyKind::LeafSpine ? "fabric_link" : "bottleneck";
	LinkSpec *core = spec.kind == TopologyKind::LeafSpine ? &spec.fabric_link : &spec.bottleneck;
	if (doc.contains(core_key))
		json_link(doc[core_key], std::string("$.") + core_key, core);
	spec.host_link.rate_mbps = core->rate_mbps;
	if (doc.contains("host_link"))
		json_link(doc["host_link"], "$.host_link", &spec.host_link);

	validate_with_prefix(spec, "$.");
	return spec;
}

std::string topology_to_json(const TopologySpec &spec)
{
	json doc = {{"name", spec.name}, {"topology", topology_kind_name(spec.kind)}};
	if (spec.kind == TopologyKind::Rotor) {
		doc["nodes"] = spec.nodes;
		doc["slot"] = std::to_string(spec.slot_ns) + "ns";
		doc["guard"] = delay_text(spec.guard_ns);
		if (!spec.schedule_file.empty())
			doc["schedule"] = spec.schedule_file;
		return doc.dump(2);
	}
	if (spec.kind == TopologyKind::LeafSpine) {
		doc["leaves"] = spec.leaves;
		doc["spines"] = spec.spines;
		doc["hosts_per_leaf"] = spec.hosts_per_leaf;
		doc["fabric_link"] = link_json(spec.fabric_link);
	} else {
		doc["senders"] = spec.senders;
		if (spec.kind == TopologyKind::Dumbbell)
			doc["receivers"] = spec.receivers;
		doc["bottleneck"] = link_json(spec.bottleneck);
	}
	doc["host_link"] = link_json(spec.host_link);
	if (spec.dpdk_hosts)
		doc["host_stack"] = "dpdk";
	return doc.dump(2);
}

TopologySpec topology_from_args(const Args &a)
{
	if (!a.has("--topology"))
		throw UsageError("up needs FILE.json or --topology dumbbell|incast|leafspine|rotor");
	TopologySpec spec;
	spec.kind = parse_kind(*a.get("--topology"), "--topology");
	if (a.has("--name")) {
		spec.name = *a.get("--name");
		check_name(spec.name, "--name");
	}
	if (spec.kind == TopologyKind::Rotor) {
		refuse_flags(a,
			     {"--senders", "--receivers", "--leaves", "--spines", "--hosts-per-leaf", "--rate",
			      "--host-rate", "--fabric-rate", "--buffer", "--ecn-threshold", "--no-int", "--delay",
			      "--host-stack"},
			     spec.kind);
		spec.nodes = flag_count(a, "--nodes", kRotorNodes).value_or(spec.nodes);
		if (a.has("--slot"))
			spec.slot_ns = parse_duration_ns(*a.get("--slot"), "--slot", kMaxSlotNs);
		if (a.has("--guard"))
			spec.guard_ns = parse_duration_ns(*a.get("--guard"), "--guard", kMaxSlotNs);
		if (a.has("--schedule")) {
			spec.schedule_file = *a.get("--schedule");
			if (spec.schedule_file.empty())
				throw UsageError("--schedule needs a file");
		}
		validate_with_prefix(spec, "");
		return spec;
	}
	refuse_flags(a, {"--nodes", "--slot", "--guard", "--schedule"}, spec.kind);
	const std::optional<std::uint32_t> rate = flag_rate(a, "--rate");
	const std::optional<std::uint32_t> host_rate = flag_rate(a, "--host-rate");
	if (spec.kind == TopologyKind::LeafSpine) {
		refuse_flags(a, {"--senders", "--receivers"}, spec.kind);
		spec.leaves = flag_count(a, "--leaves", kLeaves).value_or(spec.leaves);
		spec.spines = flag_count(a, "--spines", kSpines).value_or(spec.spines);
		spec.hosts_per_leaf = flag_count(a, "--hosts-per-leaf", kHostsPerLeaf).value_or(spec.hosts_per_leaf);
		// --rate sets every link; --fabric-rate and --host-rate override it
		spec.fabric_link.rate_mbps =
			flag_rate(a, "--fabric-rate").value_or(rate.value_or(spec.fabric_link.rate_mbps));
		spec.host_link.rate_mbps = host_rate.value_or(rate.value_or(spec.host_link.rate_mbps));
		apply_common_link_flags(a, &spec.fabric_link);
	} else {
		refuse_flags(a, {"--leaves", "--spines", "--hosts-per-leaf", "--fabric-rate"}, spec.kind);
		if (spec.kind == TopologyKind::Incast)
			refuse_flags(a, {"--receivers"}, spec.kind);
		spec.senders = flag_count(a, "--senders", kSenders).value_or(spec.senders);
		spec.receivers = flag_count(a, "--receivers", kReceivers).value_or(spec.receivers);
		// --rate is the bottleneck; host links are as fast unless --host-rate
		spec.bottleneck.rate_mbps = rate.value_or(spec.bottleneck.rate_mbps);
		spec.host_link.rate_mbps = host_rate.value_or(spec.bottleneck.rate_mbps);
		apply_common_link_flags(a, &spec.bottleneck);
	}
	apply_common_link_flags(a, &spec.host_link);
	if (a.has("--host-stack"))
		spec.dpdk_hosts = parse_host_stack(*a.get("--host-stack"), "--host-stack");
	validate_with_prefix(spec, "");
	return spec;
}

} // namespace lumen
