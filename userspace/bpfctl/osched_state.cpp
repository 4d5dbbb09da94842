// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/bpfctl/osched_state.cpp - lumend's pinned slot state
// (osched_state.h).
#include "bpfctl/osched_state.h"

#include <bpf/bpf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/error.h"
#include "bpfctl/bpf_util.h"

namespace lumen
{

std::string osched_dir(const std::string &name)
{
	if (name.empty() || name == "." || name == ".." ||
	    name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") !=
		    std::string::npos)
		throw UsageError("'" + name + "' is no pin name (letters, digits, '-', '_', '.')");
	return std::string(LUMEN_PIN_OSCHED_DIR) + "/" + name;
}

OschedPin::OschedPin(const std::string &name, std::uint32_t self, std::uint32_t nodes)
    : dir_(osched_dir(name)), nodes_(nodes)
{
	if (!nodes)
		throw UsageError("lumend's slot state: no nodes");
	ensure_pin_root();
	PinRootLock lock;
	if (pinned(dir_ + "/state"))
		throw Error(
			"lumend's slot state " + pin_path(dir_) +
			" is pinned already: another lumend has it (or a killed one left it: remove the directory)");
	state_.reset(bpf_map_create(BPF_MAP_TYPE_ARRAY, "lumen_osched", sizeof(std::uint32_t),
				    sizeof(lumen_osched_state), 1, nullptr));
	windows_.reset(bpf_map_create(BPF_MAP_TYPE_ARRAY, "lumen_oswindows", sizeof(std::uint32_t),
				      sizeof(lumen_osched_window), nodes, nullptr));
	if (!state_.valid() || !windows_.valid())
		throw Error(std::string("cannot create lumend's slot state maps: ") + std::strerror(errno));
	last_.quiet = LUMEN_QUIET_NO_SCHEDULE;
	last_.self = self;
	set_quiet(LUMEN_QUIET_CLOCK);
	for (const std::string &d : {std::string(LUMEN_PIN_OSCHED_DIR), dir_}) {
		std::string path = pin_path(d);
		if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
			throw Error("cannot create " + path + ": " + std::strerror(errno));
	}
	for (auto [file, fd] : {std::pair<const char *, int>{"/state", state_.get()}, {"/windows", windows_.get()}}) {
		std::string path = pin_path(dir_ + file);
		if (bpf_obj_pin(fd, path.c_str()) != 0) {
			int e = errno;
			remove_pin(dir_ + "/state");
			::rmdir(pin_path(dir_).c_str());
			throw Error("cannot pin " + path + ": " + std::strerror(e));
		}
	}
	keys_.resize(nodes);
	for (std::uint32_t k = 0; k < nodes; k++)
		keys_[k] = k;
}

OschedPin::~OschedPin()
{
	try {
		set_quiet(last_.quiet | LUMEN_QUIET_STOPPED);
		PinRootLock lock;
		remove_pin(dir_ + "/state");
		remove_pin(dir_ + "/windows");
		::rmdir(pin_path(dir_).c_str());
		/* and the lumends' directory when it was the last (ENOTEMPTY otherwise) */
		::rmdir(pin_path(LUMEN_PIN_OSCHED_DIR).c_str());
	} catch (const std::exception &) {
		/* a destructor: what is left is a stale pin the next lumend names */
	}
}

void OschedPin::set_quiet(std::uint32_t quiet)
{
	if (quiet == last_.quiet)
		return;
	last_.quiet = quiet;
	std::uint32_t zero = 0;
	if (bpf_map_update_elem(state_.get(), &zero, &last_, BPF_ANY) != 0)
		throw Error(std::string("cannot write lumend's slot state: ") + std::strerror(errno));
}

void OschedPin::publish(const lumen_osched_state &st, const std::vector<lumen_osched_window> &windows)
{
	if (windows.size() == nodes_) {
		__u32 count = nodes_;
		if (bpf_map_update_batch(windows_.get(), keys_.data(), windows.data(), &count, nullptr) != 0)
			throw Error(std::string("cannot write lumend's windows: ") + std::strerror(errno));
	}
	last_ = st;
	std::uint32_t zero = 0;
	if (bpf_map_update_elem(state_.get(), &zero, &last_, BPF_ANY) != 0)
		throw Error(std::string("cannot write lumend's slot state: ") + std::strerror(errno));
}

lumen_osched_state read_osched(const std::string &name)
{
	std::string dir = osched_dir(name);
	if (!pinned(dir + "/state"))
		throw Error("no lumend publishes " + pin_path(dir) + " (lumend --pin " + name + ")");
	Fd fd = open_pin(dir + "/state");
	lumen_osched_state st{};
	std::uint32_t zero = 0;
	if (bpf_map_lookup_elem(fd.get(), &zero, &st) != 0)
		throw Error("cannot read " + pin_path(dir) + ": " + std::strerror(errno));
	return st;
}

} // namespace lumen
