// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/bpfctl/osched_state.h - lumend's slot state in pinned BPF maps
// (struct lumen_osched_state and the per-destination windows,
// include/lumen/bpf_shared.h), for the kernel's gate and congestion
// control: the writer lumend holds, and the reader `lumen gate` uses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

extern "C" {
#include "lumen/bpf_shared.h"
}

#include "base/fd.h"

namespace lumen
{

// LUMEN_PIN_OSCHED_DIR "/" name: UsageError for a name that is not one
// path component of letters, digits, '-', '_' and '.'.
std::string osched_dir(const std::string &name);

// The maps of one lumend, pinned while it lives.
class OschedPin
{
      public:
	// Creates and pins state and windows (for `nodes` destinations) under
	// osched_dir(name), for node self, quiet at first. Error when a live
	// lumend has them (a pin is there), the pin root cannot be made, or
	// bpf() fails.
	OschedPin(const std::string &name, std::uint32_t self, std::uint32_t nodes);
	// Says STOPPED and unpins: maps a gate still holds keep the last word.
	~OschedPin();
	OschedPin(const OschedPin &) = delete;
	OschedPin &operator=(const OschedPin &) = delete;

	// Error when bpf() fails (never from the engine's hot path: it logs).
	void set_quiet(std::uint32_t quiet);
	void publish(const lumen_osched_state &st, const std::vector<lumen_osched_window> &windows);
	const std::string &dir() const
	{
		return dir_;
	}

      private:
	std::string dir_;
	Fd state_, windows_;
	std::uint32_t nodes_;
	lumen_osched_state last_{};
	std::vector<std::uint32_t> keys_;
};

// A lumend's published state (Error when no lumend pinned `name`).
lumen_osched_state read_osched(const std::string &name);

} // namespace lumen
