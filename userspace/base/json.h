// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/json.h - the --json output of lumen's commands: a small
// writer of flat objects (numbers, strings, nested raw values).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lumen
{

// Minimal JSON object writer for --json output (numbers and strings).
class Json
{
      public:
	Json &num(const std::string &key, std::uint64_t v);
	Json &num(const std::string &key, double v);
	Json &str(const std::string &key, const std::string &v);
	Json &raw(const std::string &key, const std::string &json); // nested value
	std::string dump() const;

      private:
	std::vector<std::pair<std::string, std::string>> fields_;
};
std::string json_escape(const std::string &s);

} // namespace lumen
