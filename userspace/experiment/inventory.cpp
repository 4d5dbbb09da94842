// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/inventory.cpp - host inventories (inventory.h).
#include "experiment/inventory.h"

#include "base/error.h"
#include "base/json_fields.h"
#include "base/units.h"

#include <arpa/inet.h>

#include <fstream>
#include <set>
#include <sstream>

namespace lumen
{

namespace
{

using namespace json_fields;

constexpr std::uint64_t kMaxBaseRttNs = 1'000'000'000;
constexpr std::size_t kMaxHosts = 256;
constexpr std::size_t kIfNameMax = 15;

bool has_space_or_control(const std::string &s)
{
	for (unsigned char c : s)
		if (c <= ' ' || c == 0x7f)
			return true;
	return false;
}

// An SSH destination; never an option (ssh would take "-oProxyCommand=..."
// from the file as one).
std::string get_ssh_destination(const json &v, const Where &w)
{
	std::string s = get_string(v, w);
	if (s.empty() || s.size() > 255 || s[0] == '-' || has_space_or_control(s))
		w.fail("'" + s + "' is not an SSH destination ([user@]host, no spaces, not starting with '-')");
	return s;
}

std::vector<std::string> get_string_list(const json &v, const Where &w, bool allow_empty_items)
{
	if (!v.is_array())
		w.fail("expected a list of strings, got " + kind_of(v));
	std::vector<std::string> out;
	for (std::size_t i = 0; i < v.size(); i++) {
		std::string s = get_string(v[i], w.at(i));
		if (s.empty() && !allow_empty_items)
			w.at(i).fail("empty string");
		out.push_back(s);
	}
	return out;
}

std::string get_program(const json &v, const Where &w)
{
	std::string s = get_string(v, w);
	if (s.empty() || s[0] == '-' || has_space_or_control(s))
		w.fail("'" + s + "' is not a program path (no spaces, not starting with '-')");
	return s;
}

std::string get_ipv4(const json &v, const Where &w)
{
	std::string s = get_string(v, w);
	struct in_addr a;
	if (inet_pton(AF_INET, s.c_str(), &a) != 1)
		w.fail("'" + s + "' is not an IPv4 address");
	return s;
}

std::string get_role(const json &v, const Where &w)
{
	std::string s = get_string(v, w);
	if (s != "sender" && s != "receiver" && s != "host")
		w.fail("unknown role '" + s + "' (sender, receiver or host)");
	return s;
}

std::vector<std::string> get_devices(const json &v, const Where &w)
{
	auto devs = get_string_list(v, w, false);
	for (std::size_t i = 0; i < devs.size(); i++)
		if (devs[i].size() > kIfNameMax || devs[i].find('/') != std::string::npos ||
		    has_space_or_control(devs[i]))
			w.at(i).fail("'" + devs[i] + "' is not a network device name");
	return devs;
}

void parse_host(const json &h, const Where &w, const std::vector<std::string> &common_opts,
		const std::string &common_lumen, InventoryHost &host)
{
	allow_keys(h, w, {"name", "role", "ssh", "addr", "ssh_options", "lumen"});
	host.name = get_name(require(h, w, "name"), w.at("name"), 24);
	host.role = h.contains("role") ? get_role(h["role"], w.at("role")) : "host";
	host.ssh = get_ssh_destination(require(h, w, "ssh"), w.at("ssh"));
	host.addr = get_ipv4(require(h, w, "addr"), w.at("addr"));
	host.ssh_options = common_opts;
	if (h.contains("ssh_options")) {
		auto own = get_string_list(h["ssh_options"], w.at("ssh_options"), true);
		host.ssh_options.insert(host.ssh_options.end(), own.begin(), own.end());
	}
	host.lumen = h.contains("lumen") ? get_program(h["lumen"], w.at("lumen")) : common_lumen;
}

void parse_switch(const json &s, const Where &w, const std::vector<std::string> &common_opts,
		  const std::string &common_lumen, InventorySwitch &sw)
{
	allow_keys(s, w, {"name", "ssh", "ports", "bottleneck", "ssh_options", "lumen"});
	sw.name = get_name(require(s, w, "name"), w.at("name"), 24);
	sw.ssh = get_ssh_destination(require(s, w, "ssh"), w.at("ssh"));
	sw.ssh_options = common_opts;
	if (s.contains("ssh_options")) {
		auto own = get_string_list(s["ssh_options"], w.at("ssh_options"), true);
		sw.ssh_options.insert(sw.ssh_options.end(), own.begin(), own.end());
	}
	sw.lumen = s.contains("lumen") ? get_program(s["lumen"], w.at("lumen")) : common_lumen;
	if (s.contains("ports"))
		sw.ports = get_devices(s["ports"], w.at("ports"));
	if (s.contains("bottleneck")) {
		sw.bottleneck = get_devices(s["bottleneck"], w.at("bottleneck"));
		for (std::size_t i = 0; i < sw.bottleneck.size(); i++)
			if (!sw.ports.empty() &&
			    std::find(sw.ports.begin(), sw.ports.end(), sw.bottleneck[i]) == sw.ports.end())
				w.at("bottleneck").at(i).fail("'" + sw.bottleneck[i] + "' is not one of \"ports\"");
	}
}

} // namespace

const InventoryHost &Inventory::host(const std::string &name) const
{
	for (const auto &h : hosts)
		if (h.name == name)
			return h;
	throw Error(source + ": no host " + name);
}

Inventory parse_inventory(const std::string &json_text, const std::string &source)
{
	json doc = parse_document(json_text, source);
	Where w{source, ""};
	allow_keys(doc, w, {"name", "path_rate", "base_rtt", "ssh_options", "lumen", "workdir", "hosts", "switches"});
	Inventory inv;
	inv.source = source;
	inv.name = doc.contains("name") ? get_name(doc["name"], w.at("name"), 32) : "hosts";
	std::string rate = get_string(require(doc, w, "path_rate"), w.at("path_rate"));
	try {
		inv.path_rate_mbps = parse_rate_mbps(rate, "path_rate");
	} catch (const UsageError &e) {
		w.at("path_rate").fail(e.what());
	}
	if (doc.contains("base_rtt")) {
		try {
			inv.base_rtt_ns = parse_duration_ns(get_string(doc["base_rtt"], w.at("base_rtt")), "base_rtt",
							    kMaxBaseRttNs);
		} catch (const UsageError &e) {
			w.at("base_rtt").fail(e.what());
		}
		if (inv.base_rtt_ns == 0)
			w.at("base_rtt").fail("must be above 0 (leave it out to measure it)");
	}
	std::vector<std::string> opts;
	if (doc.contains("ssh_options"))
		opts = get_string_list(doc["ssh_options"], w.at("ssh_options"), true);
	std::string lumen = doc.contains("lumen") ? get_program(doc["lumen"], w.at("lumen")) : "lumen";
	if (doc.contains("workdir")) {
		inv.workdir = get_string(doc["workdir"], w.at("workdir"));
		if (inv.workdir.size() < 2 || inv.workdir[0] != '/' || has_space_or_control(inv.workdir))
			w.at("workdir").fail("'" + inv.workdir + "' is not an absolute directory (no spaces, not /)");
	}

	const json &hosts = require(doc, w, "hosts");
	if (!hosts.is_array() || hosts.empty() || hosts.size() > kMaxHosts)
		w.at("hosts").fail("expected a list of 1.." + std::to_string(kMaxHosts) + " hosts");
	std::set<std::string> names, addrs;
	for (std::size_t i = 0; i < hosts.size(); i++) {
		InventoryHost h;
		parse_host(hosts[i], w.at("hosts").at(i), opts, lumen, h);
		if (!names.insert(h.name).second)
			w.at("hosts").at(i).at("name").fail("host name '" + h.name + "' is used twice");
		if (!addrs.insert(h.addr).second)
			w.at("hosts").at(i).at("addr").fail("address " + h.addr + " is used twice");
		inv.hosts.push_back(h);
	}
	if (doc.contains("switches")) {
		const json &sws = doc["switches"];
		if (!sws.is_array())
			w.at("switches").fail("expected a list of switches, got " + kind_of(sws));
		for (std::size_t i = 0; i < sws.size(); i++) {
			InventorySwitch s;
			parse_switch(sws[i], w.at("switches").at(i), opts, lumen, s);
			if (!names.insert(s.name).second)
				w.at("switches").at(i).at("name").fail("name '" + s.name + "' is used twice");
			inv.switches.push_back(s);
		}
	}
	return inv;
}

Inventory load_inventory(const std::string &path)
{
	std::ifstream f(path);
	if (!f)
		throw UsageError("cannot read the host inventory " + path);
	std::stringstream ss;
	ss << f.rdbuf();
	return parse_inventory(ss.str(), path);
}

std::string inventory_to_json(const Inventory &inv)
{
	json j;
	j["name"] = inv.name;
	j["source"] = inv.source;
	j["path_rate_mbps"] = inv.path_rate_mbps;
	j["base_rtt_ns"] = inv.base_rtt_ns ? json(inv.base_rtt_ns) : json(nullptr);
	j["workdir"] = inv.workdir;
	j["hosts"] = json::array();
	for (const auto &h : inv.hosts)
		j["hosts"].push_back({{"name", h.name},
				      {"role", h.role},
				      {"ssh", h.ssh},
				      {"addr", h.addr},
				      {"ssh_options", h.ssh_options},
				      {"lumen", h.lumen}});
	j["switches"] = json::array();
	for (const auto &s : inv.switches)
		j["switches"].push_back({{"name", s.name},
					 {"ssh", s.ssh},
					 {"ssh_options", s.ssh_options},
					 {"lumen", s.lumen},
					 {"ports", s.ports},
					 {"bottleneck", s.bottleneck}});
	return j.dump();
}

} // namespace lumen
