// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/rollback.h - all or nothing for a setup of many steps
// (loading programs, pinning, attaching, building a testbed): each step that
// changed the system adds how to undo it; unless the setup commits, the
// undo steps run newest first when the Rollback goes out of scope, an
// exception or Ctrl-C included. A failing undo step is reported and the
// others still run.
#pragma once

#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace lumen
{

class Rollback
{
      public:
	// `who` prefixes the report of a failed undo step: "lumen cc".
	explicit Rollback(std::string who) : who_(std::move(who))
	{
	}
	Rollback(const Rollback &) = delete;
	Rollback &operator=(const Rollback &) = delete;
	~Rollback()
	{
		run();
	}

	void add(std::string what, std::function<void()> undo)
	{
		steps_.emplace_back(std::move(what), std::move(undo));
	}
	// The setup is complete: nothing is undone.
	void commit()
	{
		steps_.clear();
	}
	// Undoes now, newest step first.
	void run() noexcept
	{
		for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) {
			try {
				it->second();
			} catch (const std::exception &e) {
				std::fprintf(stderr, "%s: undoing %s failed: %s\n", who_.c_str(), it->first.c_str(),
					     e.what());
			}
		}
		steps_.clear();
	}

      private:
	std::string who_;
	std::vector<std::pair<std::string, std::function<void()>>> steps_;
};

} // namespace lumen
