// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/json_fields.h - reading user-written JSON files
// (experiment descriptions, host inventories) field by field, each mistake
// reported as "<file>: <json path>: <what is wrong>", unknown keys refused.
#pragma once

#include "base/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace lumen::json_fields
{

using nlohmann::json;

// Where in the file a value is, for messages: "phases[1].kind".
struct Where {
	const std::string &source;
	std::string path;

	Where at(const std::string &key) const
	{
		return {source, path.empty() ? key : path + "." + key};
	}
	Where at(std::size_t index) const
	{
		return {source, path + "[" + std::to_string(index) + "]"};
	}
	[[noreturn]] void fail(const std::string &what) const
	{
		throw UsageError(source + ": " + (path.empty() ? "" : path + ": ") + what);
	}
};

inline std::string kind_of(const json &v)
{
	return v.type_name();
}

inline void allow_keys(const json &obj, const Where &w, const std::vector<std::string> &known)
{
	if (!obj.is_object())
		w.fail("expected an object, got " + kind_of(obj));
	for (const auto &item : obj.items()) {
		if (std::find(known.begin(), known.end(), item.key()) == known.end()) {
			std::string list;
			for (const auto &k : known)
				list += (list.empty() ? "" : ", ") + k;
			w.at(item.key()).fail("unknown key (known: " + list + ")");
		}
	}
}

inline const json &require(const json &obj, const Where &w, const std::string &key)
{
	if (!obj.contains(key))
		w.fail("missing key \"" + key + "\"");
	return obj.at(key);
}

inline std::string get_string(const json &v, const Where &w)
{
	if (!v.is_string())
		w.fail("expected a string, got " + kind_of(v));
	return v.get<std::string>();
}

// [a-z0-9_-], 1..max characters
inline std::string get_name(const json &v, const Where &w, std::size_t max)
{
	std::string s = get_string(v, w);
	bool ok = !s.empty() && s.size() <= max && std::all_of(s.begin(), s.end(), [](char c) {
		return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
	});
	if (!ok)
		w.fail("'" + s + "' is not a name (1.." + std::to_string(max) + " of a-z, 0-9, _ and -)");
	return s;
}

// A file's text parsed, or "<source>: not valid JSON: ...". Any exception
// of the parser counts: a number out of range ("duration": 1e309) is an
// out_of_range error, not a parse_error.
inline json parse_document(const std::string &text, const std::string &source)
{
	try {
		return json::parse(text);
	} catch (const json::exception &e) {
		throw UsageError(source + ": not valid JSON: " + e.what());
	}
}

} // namespace lumen::json_fields
