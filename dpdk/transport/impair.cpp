/* impair.cpp - the misbehaving network of pair mode and the tests (impair.h). */
#include "transport/impair.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

extern "C" {
#include <lumen/dp_wire.h>
}

namespace lumen::dp
{

namespace
{

/* "1.5%" or "0.015" -> parts per million; false when malformed or > 100 %. */
bool parse_ppm(const std::string &v, uint32_t *ppm)
{
	char *end = nullptr;
	double x = std::strtod(v.c_str(), &end);

	if (end == v.c_str())
		return false;
	if (*end == '%') {
		x /= 100;
		end++;
	}
	if (*end || !(x >= 0 && x <= 1))
		return false;
	*ppm = (uint32_t)(x * 1e6 + 0.5);
	return true;
}

/* "20us", "1ms", "500ns", "0" -> ns */
bool parse_time(const std::string &v, uint64_t *ns)
{
	char *end = nullptr;
	double x = std::strtod(v.c_str(), &end);
	std::string unit = end ? end : "";
	double scale = unit == "ns" || (unit.empty() && x == 0) ? 1
		       : unit == "us"				? 1e3
		       : unit == "ms"				? 1e6
		       : unit == "s"				? 1e9
								: -1;

	if (end == v.c_str() || scale < 0 || !(x >= 0) || x * scale > 10e9)
		return false;
	*ns = (uint64_t)(x * scale + 0.5);
	return true;
}

/* "49152:49153" appended to *ports; false when a port is malformed or none is given */
bool parse_ports(const std::string &v, std::vector<uint16_t> *ports)
{
	std::stringstream ps(v);
	std::string port;
	bool ok = true;

	while (ok && std::getline(ps, port, ':')) {
		char *end = nullptr;
		unsigned long n = std::strtoul(port.c_str(), &end, 10);
		ok = !port.empty() && !*end && n >= 1 && n <= 65535;
		if (ok)
			ports->push_back((uint16_t)n);
	}
	return ok && !ports->empty();
}

} // namespace

std::string ImpairParams::parse(const std::string &spec)
{
	ImpairParams p = *this;
	std::stringstream ss(spec);
	std::string item;

	while (std::getline(ss, item, ',')) {
		if (item.empty())
			continue;
		auto eq = item.find('=');
		std::string k = item.substr(0, eq), v = eq == std::string::npos ? "" : item.substr(eq + 1);
		bool ok = true;
		if (k == "drop")
			ok = parse_ppm(v, &p.drop_ppm);
		else if (k == "dup")
			ok = parse_ppm(v, &p.dup_ppm);
		else if (k == "ce")
			ok = parse_ppm(v, &p.ce_ppm);
		else if (k == "reorder")
			ok = parse_ppm(v, &p.reorder_ppm);
		else if (k == "delay")
			ok = parse_time(v, &p.delay_ns);
		else if (k == "reorder-delay")
			ok = parse_time(v, &p.reorder_ns);
		else if (k == "acks" && v.empty())
			p.data_only = false;
		else if (k == "seed")
			ok = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos &&
			     (p.seed = std::strtoull(v.c_str(), nullptr, 10), true);
		else if (k == "blackhole")
			ok = parse_ports(v, &p.blackhole);
		else if (k == "ports")
			ok = parse_ports(v, &p.ports);
		else
			return "impair: unknown key '" + k +
			       "' (drop, dup, ce, reorder, delay, reorder-delay, blackhole, ports, acks, seed)";
		if (!ok)
			return "impair: bad value for " + k + ": '" + v + "'";
	}
	*this = p;
	return "";
}

bool ImpairParams::active() const
{
	return drop_ppm || dup_ppm || ce_ppm || reorder_ppm || delay_ns || !blackhole.empty();
}

Impairment::Impairment(const ImpairParams &p, uint16_t udp_port) : p_(p), udp_port_(udp_port)
{
	lumen_rng_seed(&rng_, p.seed);
}

bool Impairment::chance(uint32_t ppm)
{
	return ppm && lumen_rng_below(&rng_, 1000000) < ppm;
}

Verdict Impairment::judge(const uint8_t *frame, uint32_t len)
{
	lumen_dp_pkt p;
	Verdict v;

	stats_.frames++;
	v.delay_ns = p_.delay_ns;
	if (lumen_dp_parse(frame, len, udp_port_, &p) != 0)
		return v; /* not ours: passes */
	if (p_.data_only && p.type != LUMEN_DP_DATA)
		return v;
	if (std::find(p_.blackhole.begin(), p_.blackhole.end(), p.sport) != p_.blackhole.end()) {
		stats_.blackholed++;
		v.drop = true;
		return v;
	}
	if (!p_.ports.empty() && std::find(p_.ports.begin(), p_.ports.end(), p.sport) == p_.ports.end())
		return v;
	if (chance(p_.drop_ppm)) {
		stats_.dropped++;
		v.drop = true;
		return v;
	}
	if (chance(p_.dup_ppm)) {
		stats_.duplicated++;
		v.dup = true;
	}
	if (chance(p_.ce_ppm) && p.ecn != LUMEN_DP_ECN_NOT_ECT) {
		stats_.marked++;
		v.ce = true;
	}
	if (chance(p_.reorder_ppm)) {
		stats_.reordered++;
		v.delay_ns += p_.reorder_ns;
	}
	return v;
}

void Impairment::mark_ce(uint8_t *frame, uint32_t len)
{
	lumen_dp_mark_ce(frame, len);
}

} // namespace lumen::dp
