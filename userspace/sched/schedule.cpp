// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/sched/schedule.cpp - the schedule file: validation, JSON in and
// out. A schedule decides where light goes; one that is wrong sends
// packets into closed circuits, so nothing is accepted half-checked.
#include "sched/schedule.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

#include <unistd.h>

#include "base/error.h"
#include "base/json_fields.h"
#include "base/system.h"

namespace lumen::sched
{

namespace jf = lumen::json_fields;
using nlohmann::json;

Schedule Schedule::idle(uint32_t nodes, uint32_t uplinks, uint32_t period)
{
	Schedule s;
	s.nodes = nodes;
	s.uplinks = uplinks;
	s.period = period;
	s.dst.resize((size_t)uplinks * period * nodes);
	for (uint32_t p = 0; p < uplinks; p++)
		for (uint32_t t = 0; t < period; t++)
			for (uint32_t i = 0; i < nodes; i++)
				s.to(p, t, i) = i;
	return s;
}

Schedule idle_schedule(uint32_t nodes, uint32_t uplinks, uint32_t period, const Timing &timing)
{
	Schedule s = Schedule::idle(nodes, uplinks, period);
	s.version = timing.version;
	s.slot_ns = timing.slot_ns;
	s.guard_ns = timing.guard_ns;
	s.guard_at = timing.guard_at;
	s.t0_ns = timing.t0_ns;
	s.link_gbps = timing.link_gbps;
	return s;
}

namespace
{

[[noreturn]] void refuse(const std::string &source, const std::string &what)
{
	throw UsageError(source + ": " + what);
}

std::string where(uint32_t uplink, uint32_t slot)
{
	return "uplink " + std::to_string(uplink) + ", slot " + std::to_string(slot);
}

void check_shape(const Schedule &s, const std::string &source)
{
	if (s.nodes < 2 || s.nodes > kMaxNodes)
		refuse(source, "nodes " + std::to_string(s.nodes) + " is not in 2.." + std::to_string(kMaxNodes));
	if (s.uplinks < 1 || s.uplinks > kMaxUplinks)
		refuse(source, "uplinks " + std::to_string(s.uplinks) + " is not in 1.." + std::to_string(kMaxUplinks));
	if (s.period < 1)
		refuse(source, "period must be at least 1 slot");
	if ((uint64_t)s.uplinks * s.period * s.nodes > kMaxEntries)
		refuse(source, "uplinks x period x nodes is over " + std::to_string(kMaxEntries));
	if (s.dst.size() != (size_t)s.uplinks * s.period * s.nodes)
		refuse(source, "the matchings hold " + std::to_string(s.dst.size()) +
				       " entries, not uplinks x period x nodes = " +
				       std::to_string((uint64_t)s.uplinks * s.period * s.nodes));
	if (s.slot_ns == 0)
		refuse(source, "slot_ns must be > 0");
	if (s.guard_ns >= s.slot_ns)
		refuse(source, "guard_ns " + std::to_string(s.guard_ns) + " leaves nothing of slot_ns " +
				       std::to_string(s.slot_ns) + " (guard_ns < slot_ns)");
	if (!(s.link_gbps >= 0) || !std::isfinite(s.link_gbps))
		refuse(source, "link_gbps must be a finite number >= 0");
}

// Every (uplink, slot) a permutation: a circuit switch port connects to one
// port, and each output port hears one input.
void check_matchings(const Schedule &s, const std::string &source)
{
	std::vector<uint32_t> seen(s.nodes);
	uint32_t stamp = 0;

	for (uint32_t p = 0; p < s.uplinks; p++)
		for (uint32_t t = 0; t < s.period; t++, stamp++) {
			for (uint32_t i = 0; i < s.nodes; i++) {
				uint32_t j = s.to(p, t, i);
				if (j >= s.nodes)
					refuse(source, where(p, t) + ": node " + std::to_string(i) + " leads to " +
							       std::to_string(j) + ", not a node (0.." +
							       std::to_string(s.nodes - 1) + ")");
				if (seen[j] == stamp + 1)
					refuse(source, where(p, t) + ": node " + std::to_string(j) +
							       " is reached twice: not a matching");
				seen[j] = stamp + 1;
			}
		}
}

// In a slot a node's uplinks lead to distinct nodes (idle ones aside).
void check_distinct(const Schedule &s, const std::string &source)
{
	if (s.parallel || s.uplinks == 1)
		return;
	std::vector<uint64_t> seen(s.nodes, UINT64_MAX);
	for (uint32_t t = 0; t < s.period; t++)
		for (uint32_t i = 0; i < s.nodes; i++) {
			uint64_t stamp = (uint64_t)t * s.nodes + i;
			for (uint32_t p = 0; p < s.uplinks; p++) {
				uint32_t j = s.to(p, t, i);
				if (j == i)
					continue;
				if (seen[j] == stamp)
					refuse(source,
					       "slot " + std::to_string(t) + ": node " + std::to_string(i) +
						       " reaches node " + std::to_string(j) +
						       " on two uplinks (allowed only with \"parallel\": true)");
				seen[j] = stamp;
			}
		}
}

const char *guard_name(GuardAt g)
{
	return g == GuardAt::kStart ? "start" : "end";
}

uint64_t get_u64(const json &v, const jf::Where &w)
{
	if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
		w.fail("expected a whole number >= 0, got " + jf::kind_of(v) + (v.is_number() ? " " + v.dump() : ""));
	return v.get<uint64_t>();
}

uint32_t get_u32(const json &v, const jf::Where &w)
{
	uint64_t x = get_u64(v, w);
	if (x > UINT32_MAX)
		w.fail(std::to_string(x) + " is too large");
	return (uint32_t)x;
}

const json &array_of(const json &v, const jf::Where &w, size_t n, const char *what)
{
	if (!v.is_array())
		w.fail("expected an array (" + std::string(what) + "), got " + jf::kind_of(v));
	if (v.size() != n)
		w.fail("expected " + std::to_string(n) + " " + what + ", got " + std::to_string(v.size()));
	return v;
}

} // namespace

void validate(const Schedule &s, const std::string &source)
{
	check_shape(s, source);
	check_matchings(s, source);
	check_distinct(s, source);
}

json to_json(const Schedule &s)
{
	json m = json::array();
	for (uint32_t p = 0; p < s.uplinks; p++) {
		json slots = json::array();
		for (uint32_t t = 0; t < s.period; t++) {
			json row = json::array();
			for (uint32_t i = 0; i < s.nodes; i++)
				row.push_back(s.to(p, t, i));
			slots.push_back(std::move(row));
		}
		m.push_back(std::move(slots));
	}
	json j = {{"format", "lumen-schedule"}, {"format_version", kFormatVersion},
		  {"version", s.version},	{"generator", s.generator},
		  {"nodes", s.nodes},		{"uplinks", s.uplinks},
		  {"period", s.period},		{"slot_ns", s.slot_ns},
		  {"guard_ns", s.guard_ns},	{"guard_at", guard_name(s.guard_at)},
		  {"t0_ns", s.t0_ns},		{"link_gbps", s.link_gbps},
		  {"parallel", s.parallel},	{"matchings", std::move(m)}};
	return j;
}

Schedule from_json(const json &j, const std::string &source)
{
	jf::Where w{source, ""};
	jf::allow_keys(j, w,
		       {"format", "format_version", "version", "generator", "nodes", "uplinks", "period", "slot_ns",
			"guard_ns", "guard_at", "t0_ns", "link_gbps", "parallel", "matchings"});
	if (jf::get_string(jf::require(j, w, "format"), w.at("format")) != "lumen-schedule")
		w.at("format").fail("expected \"lumen-schedule\"");
	uint32_t fv = get_u32(jf::require(j, w, "format_version"), w.at("format_version"));
	if (fv != kFormatVersion)
		w.at("format_version")
			.fail("version " + std::to_string(fv) + " is not known (this lumen reads " +
			      std::to_string(kFormatVersion) + ")");

	Schedule s;
	s.version = get_u64(jf::require(j, w, "version"), w.at("version"));
	if (j.contains("generator"))
		s.generator = jf::get_string(j.at("generator"), w.at("generator"));
	s.nodes = get_u32(jf::require(j, w, "nodes"), w.at("nodes"));
	s.uplinks = get_u32(jf::require(j, w, "uplinks"), w.at("uplinks"));
	s.period = get_u32(jf::require(j, w, "period"), w.at("period"));
	s.slot_ns = get_u64(jf::require(j, w, "slot_ns"), w.at("slot_ns"));
	s.guard_ns = get_u64(jf::require(j, w, "guard_ns"), w.at("guard_ns"));
	if (j.contains("guard_at")) {
		std::string g = jf::get_string(j.at("guard_at"), w.at("guard_at"));
		if (g != "end" && g != "start")
			w.at("guard_at").fail("'" + g + "' is neither \"end\" nor \"start\"");
		s.guard_at = g == "start" ? GuardAt::kStart : GuardAt::kEnd;
	}
	s.t0_ns = get_u64(jf::require(j, w, "t0_ns"), w.at("t0_ns"));
	if (j.contains("link_gbps")) {
		const json &v = j.at("link_gbps");
		if (!v.is_number() || !(v.get<double>() >= 0))
			w.at("link_gbps").fail("expected a number >= 0, got " + v.dump());
		s.link_gbps = v.get<double>();
	}
	if (j.contains("parallel")) {
		if (!j.at("parallel").is_boolean())
			w.at("parallel").fail("expected true or false, got " + jf::kind_of(j.at("parallel")));
		s.parallel = j.at("parallel").get<bool>();
	}
	// the shape first, so that the matchings are read against sane sizes
	if (s.nodes < 2 || s.nodes > kMaxNodes || s.uplinks < 1 || s.uplinks > kMaxUplinks || s.period < 1 ||
	    (uint64_t)s.uplinks * s.period * s.nodes > kMaxEntries)
		check_shape(s, source);
	jf::Where wm = w.at("matchings");
	const json &m = array_of(jf::require(j, w, "matchings"), wm, s.uplinks, "uplinks");
	s.dst.resize((size_t)s.uplinks * s.period * s.nodes);
	for (uint32_t p = 0; p < s.uplinks; p++) {
		const json &slots = array_of(m[p], wm.at(p), s.period, "slots (period)");
		for (uint32_t t = 0; t < s.period; t++) {
			const json &row = array_of(slots[t], wm.at(p).at(t), s.nodes, "destinations (nodes)");
			for (uint32_t i = 0; i < s.nodes; i++)
				s.to(p, t, i) = get_u32(row[i], wm.at(p).at(t).at(i));
		}
	}
	validate(s, source);
	return s;
}

Schedule load(const std::string &path)
{
	std::string text;
	try {
		text = read_file(path);
	} catch (const Error &e) {
		throw UsageError(e.what());
	}
	return from_json(jf::parse_document(text, path), path);
}

std::string to_text(const Schedule &s)
{
	/* one key per line and one slot's matching per line: a file people
	 * can read and diff, still plain JSON */
	json j = to_json(s);
	json m = std::move(j["matchings"]);
	j.erase("matchings");
	std::ostringstream out;
	out << "{\n";
	for (const auto &item : j.items())
		out << "  " << json(item.key()).dump() << ": " << item.value().dump() << ",\n";
	out << "  \"matchings\": [\n";
	for (size_t p = 0; p < m.size(); p++) {
		out << "    [\n";
		for (size_t t = 0; t < m[p].size(); t++)
			out << "      " << m[p][t].dump() << (t + 1 < m[p].size() ? ",\n" : "\n");
		out << "    ]" << (p + 1 < m.size() ? ",\n" : "\n");
	}
	out << "  ]\n}\n";
	return out.str();
}

void save(const Schedule &s, const std::string &path)
{
	validate(s, path);
	std::string tmp = path + ".tmp." + std::to_string(getpid());
	write_file(tmp, to_text(s));
	if (std::rename(tmp.c_str(), path.c_str()) != 0) {
		int err = errno;
		unlink(tmp.c_str());
		throw Error("cannot write " + path + ": " + std::strerror(err));
	}
}

} // namespace lumen::sched
