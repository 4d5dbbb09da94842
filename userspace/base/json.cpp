// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include "base/json.h"

#include <cmath>
#include <cstdio>

namespace lumen
{

std::string json_escape(const std::string &s)
{
	std::string out = "\"";
	for (char c : s) {
		switch (c) {
		case '"':
			out += "\\\"";
			break;
		case '\\':
			out += "\\\\";
			break;
		case '\n':
			out += "\\n";
			break;
		default:
			if (static_cast<unsigned char>(c) < 0x20) {
				char buf[8];
				std::snprintf(buf, sizeof(buf), "\\u%04x", c);
				out += buf;
			} else {
				out += c;
			}
		}
	}
	return out + "\"";
}

Json &Json::num(const std::string &key, std::uint64_t v)
{
	fields_.emplace_back(key, std::to_string(v));
	return *this;
}

Json &Json::num(const std::string &key, double v)
{
	char buf[64];
	std::snprintf(buf, sizeof(buf), "%.6g", std::isfinite(v) ? v : 0.0);
	fields_.emplace_back(key, buf);
	return *this;
}

Json &Json::str(const std::string &key, const std::string &v)
{
	fields_.emplace_back(key, json_escape(v));
	return *this;
}

Json &Json::raw(const std::string &key, const std::string &json)
{
	fields_.emplace_back(key, json);
	return *this;
}

std::string Json::dump() const
{
	std::string out = "{";
	for (std::size_t i = 0; i < fields_.size(); i++)
		out += (i ? ", " : "") + json_escape(fields_[i].first) + ": " + fields_[i].second;
	return out + "}";
}

} // namespace lumen
