// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/sched/report.cpp - summaries, tables and pictures of a
// schedule (report.h).
#include "sched/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "base/error.h"

namespace lumen::sched
{

nlohmann::json summary(const Schedule &s, const std::vector<double> *demand)
{
	uint32_t n = s.nodes;
	std::vector<uint32_t> c = circuits(s), g = max_gaps(s);
	uint32_t cmin = UINT32_MAX, cmax = 0, gmax = 0;
	uint64_t unconnected = 0;
	for (uint32_t u = 0; u < n; u++)
		for (uint32_t v = 0; v < n; v++) {
			if (u == v)
				continue;
			size_t e = (size_t)u * n + v;
			cmin = std::min(cmin, c[e]);
			cmax = std::max(cmax, c[e]);
			unconnected += c[e] == 0;
			gmax = std::max(gmax, c[e] ? g[e] : 0);
		}
	nlohmann::json j = {{"version", s.version},
			    {"generator", s.generator},
			    {"nodes", n},
			    {"uplinks", s.uplinks},
			    {"period", s.period},
			    {"slot_ns", s.slot_ns},
			    {"guard_ns", s.guard_ns},
			    {"guard_at", s.guard_at == GuardAt::kStart ? "start" : "end"},
			    {"period_ns", (uint64_t)s.period * s.slot_ns},
			    {"duty", s.duty()},
			    {"t0_ns", s.t0_ns},
			    {"parallel", s.parallel},
			    {"circuits_min", cmin},
			    {"circuits_max", cmax},
			    {"unconnected_pairs", unconnected},
			    {"max_gap_slots", gmax},
			    {"max_wait_ns", (uint64_t)gmax * s.slot_ns}};
	if (demand) {
		j["single_hop_throughput"] = single_hop_throughput(s, *demand);
		j["vlb_throughput"] = vlb_throughput(s, *demand);
	}
	return j;
}

std::string summary_text(const Schedule &s, const std::vector<double> *demand)
{
	nlohmann::json j = summary(s, demand);
	char buf[512];
	std::string out;

	std::snprintf(buf, sizeof(buf),
		      "%u nodes, %u uplink%s, period %u slots of %.3f us (guard %.3f us at the %s: duty %.4f), %.3f us "
		      "per period\n",
		      s.nodes, s.uplinks, s.uplinks == 1 ? "" : "s", s.period, (double)s.slot_ns / 1e3,
		      (double)s.guard_ns / 1e3, s.guard_at == GuardAt::kStart ? "start" : "end", s.duty(),
		      (double)s.period * (double)s.slot_ns / 1e3);
	out += buf;
	std::snprintf(buf, sizeof(buf), "version %llu, t0 %llu ns (TAI)%s%s%s\n", (unsigned long long)s.version,
		      (unsigned long long)s.t0_ns, s.generator.empty() ? "" : ", made by ", s.generator.c_str(),
		      s.parallel ? ", parallel circuits allowed" : "");
	out += buf;
	std::snprintf(buf, sizeof(buf),
		      "circuits per pair and period: %u..%u; %llu pair%s never connected; longest wait for a circuit "
		      "%u slots (%.3f us)\n",
		      j["circuits_min"].get<uint32_t>(), j["circuits_max"].get<uint32_t>(),
		      (unsigned long long)j["unconnected_pairs"].get<uint64_t>(),
		      j["unconnected_pairs"].get<uint64_t>() == 1 ? "" : "s", j["max_gap_slots"].get<uint32_t>(),
		      (double)j["max_wait_ns"].get<uint64_t>() / 1e3);
	out += buf;
	if (demand) {
		std::snprintf(buf, sizeof(buf), "demand: single-hop throughput %.4f, two-hop (Valiant) %.4f\n",
			      j["single_hop_throughput"].get<double>(), j["vlb_throughput"].get<double>());
		out += buf;
	}
	return out;
}

namespace
{

// appends text to out, right-aligned in width columns
void right(std::string &out, const std::string &text, size_t width)
{
	if (text.size() < width)
		out.append(width - text.size(), ' ');
	out.append(text);
}

} // namespace

std::string slot_table(const Schedule &s, uint32_t max_slots)
{
	uint32_t slots = std::min(s.period, max_slots);
	size_t w = std::to_string(s.nodes - 1).size() + 1;
	std::string out;

	for (uint32_t p = 0; p < s.uplinks; p++) {
		out += "uplink " + std::to_string(p);
		if (slots < s.period)
			out += " (the first " + std::to_string(slots) + " of " + std::to_string(s.period) + " slots)";
		out += "\n";
		right(out, "node", w + 4);
		out += " |";
		for (uint32_t t = 0; t < slots; t++)
			right(out, std::to_string(t), w);
		out += "\n";
		for (uint32_t i = 0; i < s.nodes; i++) {
			right(out, std::to_string(i), w + 4);
			out += " |";
			for (uint32_t t = 0; t < slots; t++) {
				uint32_t j = s.to(p, t, i);
				right(out, j == i ? "." : std::to_string(j), w);
			}
			out += "\n";
		}
	}
	return out;
}

std::string plot_script(const Schedule &s, const std::string &png_name)
{
	/* one panel per uplink; a cell per (slot, node), idle cells blank */
	int width = std::clamp<int>((int)s.period * 12 + 160, 480, 2400);
	int height = std::clamp<int>((int)(s.nodes * 12 * s.uplinks) + 120, 320, 2400);
	std::ostringstream gp;

	gp << "set terminal pngcairo size " << width << "," << height << " font ',10' noenhanced\n";
	gp << "set output '" << png_name << "'\n";
	for (uint32_t p = 0; p < s.uplinks; p++) {
		gp << "$uplink" << p << " << EOD\n";
		for (uint32_t i = 0; i < s.nodes; i++) {
			for (uint32_t t = 0; t < s.period; t++) {
				uint32_t j = s.to(p, t, i);
				gp << t << " " << i << " ";
				if (j == i)
					gp << "NaN\n";
				else
					gp << j << "\n";
			}
			gp << "\n";
		}
		gp << "EOD\n";
	}
	gp << "set multiplot layout " << s.uplinks << ",1 title 'circuit schedule: " << s.nodes << " nodes, period "
	   << s.period << " slots of " << (double)s.slot_ns / 1e3 << " us"
	   << (s.generator.empty() ? "" : " (" + s.generator + ")") << "'\n";
	gp << "set palette rgbformulae 33,13,10\nset cbrange [0:" << s.nodes - 1 << "]\nset cblabel 'destination'\n";
	gp << "set xrange [-0.5:" << s.period - 0.5 << "]\nset yrange [" << s.nodes - 0.5 << ":-0.5]\n";
	gp << "set xlabel 'slot'\nset ylabel 'source node'\n";
	for (uint32_t p = 0; p < s.uplinks; p++)
		gp << "set title 'uplink " << p << "'\nplot $uplink" << p << " using 1:2:3 with image notitle\n";
	gp << "unset multiplot\n";
	return gp.str();
}

} // namespace lumen::sched
