// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_vm.h - `lumen experiment run NAME --vm K`: the
// same experiment inside a QEMU VM booting Debian's kernel K (tools/vm-run)
// with the kernel module tcp_powertcp built for it loaded, so the module's
// algorithms (powertcp, theta_powertcp, hpcc) run beside the eBPF and built-in
// ones. The result directory is made here and shared read-write with the
// guest (vm-run --share), where the runner writes it as on the host.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "experiment/experiment.h"
#include "experiment/experiment_run.h"

namespace lumen
{

// --vm values: "6.1" or "6.12" (the kernels tools/kmod-build builds for);
// UsageError otherwise.
std::string parse_vm_kernel(const std::string &text);

// The algorithms of a --vm run without --algos: the module's three beside
// cubic and bbr.
std::vector<std::string> vm_default_algorithms();

// Paths the guest replaces with an empty tmpfs (/tmp, /var/tmp, /run,
// /dev/shm and below): files there are visible in the VM only when vm-run
// shares them (--visible, --share, --module, its current directory).
bool below_guest_tmpfs(const std::string &abs_path);

// Everything the host side hands to tools/vm-run.
struct VmLaunch {
	std::string vm_run; // tools/vm-run
	std::string kernel; // 6.1 | 6.12
	std::string kmod; // absolute path of tcp_powertcp.ko
	std::string lumen; // absolute path of this binary
	std::string experiment_file; // absolute path of the description
	std::string out_dir; // absolute, exists, empty
	std::vector<std::string> algorithms;
	bool smoke = false;
	std::optional<std::uint64_t> duration_ns;
	std::optional<std::uint32_t> rate_mbps;
	std::optional<std::uint64_t> delay_ns;
	std::uint64_t timeout_s = 0;
};

// tools/vm-run --kernel K --module KO --share OUT --timeout S --env ...
// [--visible DIR ...] -- env PATH=<Debian's> LUMEN experiment run FILE
// --out OUT --algos ... (--visible: the directories of LUMEN and FILE when
// below_guest_tmpfs)
std::vector<std::string> vm_run_argv(const VmLaunch &l);

// How long the VM may take for the (resolved) experiment: boot, testbed,
// every run at twice its length under emulation, plots.
std::uint64_t vm_timeout_s(const ExperimentSpec &resolved);

// tcp_powertcp.ko for kernel K: `kmod` if given, else
// <source dir>/build/kmod-K/tcp_powertcp.ko; Error telling how to build it
// when missing.
std::string find_kmod(const std::string &kernel, const std::string &kmod);

// Runs the experiment (`experiment_file`, opts as given on the command
// line) in the VM; returns the result directory. Error when the VM or the
// run in it failed.
std::string run_experiment_in_vm(const std::string &experiment_file, const RunOptions &opts);

} // namespace lumen
