// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_vm.cpp - running an experiment inside a VM
// (see experiment_vm.h).
#include "experiment/experiment_vm.h"

#include "base/error.h"
#include "base/interrupt.h"
#include "base/system.h"
#include "base/units.h"
#include "experiment/experiment_kmod.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sys/wait.h>
#include <unistd.h>

namespace lumen
{

namespace
{

// vm-run's own failure (usage, boot, mounts) and its timeout
constexpr int kVmRunInfra = 125, kVmRunTimeout = 124;
// Debian's PATH in the guest, not the caller's: shims (pyenv, ...) in a
// user's PATH are slow under emulation
constexpr const char *kGuestPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

std::string absolute_path(const std::string &path, const std::string &what)
{
	char buf[PATH_MAX];
	if (!::realpath(path.c_str(), buf))
		throw Error(what + " " + path + ": " + std::strerror(errno));
	return buf;
}

std::string join(const std::vector<std::string> &v)
{
	std::string out;
	for (const auto &s : v)
		out += (out.empty() ? "" : ",") + s;
	return out;
}

std::string vm_run_path()
{
	std::string path = std::string(LUMEN_SOURCE_DIR) + "/tools/vm-run";
	if (::access(path.c_str(), X_OK) != 0)
		throw Error("the VM runner " + path + " is missing or not executable (this lumen was built from " +
			    LUMEN_SOURCE_DIR ")");
	return path;
}

// Runs argv with our stdout and stderr (the guest's output streams
// through) in `cwd`; returns its exit status. Ctrl-C reaches it too (same
// process group): vm-run stops the VM and exits.
int run_foreground(const std::vector<std::string> &argv, const std::string &cwd)
{
	std::vector<char *> args;
	for (const auto &a : argv)
		args.push_back(const_cast<char *>(a.c_str()));
	args.push_back(nullptr);
	std::fflush(stdout);
	std::fflush(stderr);
	pid_t pid = ::fork();
	if (pid < 0)
		throw Error(std::string("fork: ") + std::strerror(errno));
	if (pid == 0) {
		if (::chdir(cwd.c_str()) != 0)
			_exit(kVmRunInfra);
		::execv(args[0], args.data());
		std::fprintf(stderr, "lumen experiment: cannot run %s: %s\n", args[0], std::strerror(errno));
		_exit(kVmRunInfra);
	}
	int status = 0;
	while (::waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			throw Error(std::string("waitpid: ") + std::strerror(errno));
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

} // namespace

std::string parse_vm_kernel(const std::string &text)
{
	if (text == "6.1" || text == "6.12")
		return text;
	throw UsageError("--vm: '" + text + "' is not a kernel the module is built for (6.1 or 6.12)");
}

std::vector<std::string> vm_default_algorithms()
{
	return {"powertcp", "theta_powertcp", "hpcc", "cubic", "bbr"};
}

bool below_guest_tmpfs(const std::string &abs_path)
{
	for (const char *dir : {"/tmp", "/var/tmp", "/run", "/dev/shm"}) {
		std::string d = dir;
		if (abs_path == d || abs_path.rfind(d + "/", 0) == 0)
			return true;
	}
	return false;
}

std::vector<std::string> vm_run_argv(const VmLaunch &l)
{
	std::vector<std::string> argv = {l.vm_run, "--kernel", l.kernel, "--module", l.kmod, "--share", l.out_dir,
					 "--timeout", std::to_string(l.timeout_s),
					 // recorded in config.json by the runner in the guest
					 "--env", "LUMEN_EXPERIMENT_VM=" + l.kernel, "--env",
					 "LUMEN_EXPERIMENT_KMOD=" + l.kmod, "--", "env", kGuestPath, l.lumen,
					 "experiment", "run", l.experiment_file, "--out", l.out_dir, "--algos",
					 join(l.algorithms)};
	// a binary or description below the guest's empty /tmp, /run ... (a
	// clone under /tmp): vm-run shares its directory; the module's and its
	// current directory (the source tree) it shares by itself
	std::vector<std::string> visible;
	for (const auto &file : {l.lumen, l.experiment_file}) {
		std::string dir = std::filesystem::path(file).parent_path().string();
		if (below_guest_tmpfs(dir) && std::find(visible.begin(), visible.end(), dir) == visible.end())
			visible.push_back(dir);
	}
	auto cmd = std::find(argv.begin(), argv.end(), "--");
	for (const auto &dir : visible)
		cmd = argv.insert(cmd, {"--visible", dir}) + 2;
	if (l.smoke)
		argv.push_back("--smoke");
	if (l.duration_ns) {
		argv.push_back("--duration");
		argv.push_back(std::to_string(*l.duration_ns / 1'000'000) + "ms");
	}
	if (l.rate_mbps) {
		argv.push_back("--rate");
		argv.push_back(std::to_string(*l.rate_mbps)); // Mbit/s
	}
	if (l.delay_ns) {
		argv.push_back("--delay");
		argv.push_back(std::to_string(*l.delay_ns) + "ns");
	}
	return argv;
}

std::uint64_t vm_timeout_s(const ExperimentSpec &resolved)
{
	std::uint64_t runs = experiment_cases(resolved).size() * resolved.algorithms.size();
	std::uint64_t run_s = 2 * (resolved.duration_ns + kSec - 1) / kSec + 60;
	return 300 + runs * run_s;
}

std::string find_kmod(const std::string &kernel, const std::string &kmod)
{
	std::string path =
		kmod.empty() ? std::string(LUMEN_SOURCE_DIR) + "/build/kmod-" + kernel + "/tcp_powertcp.ko" : kmod;
	if (::access(path.c_str(), R_OK) != 0) {
		if (!kmod.empty())
			throw UsageError("--kmod " + kmod + ": " + std::strerror(errno));
		throw Error("no kernel module for " + kernel + " at " + path + "; build it with 'tools/kmod-build " +
			    "--kernel " + kernel + " --out " + LUMEN_SOURCE_DIR + "/build/kmod-" + kernel +
			    "' (or give --kmod PATH)");
	}
	return absolute_path(path, "--kmod");
}

std::string run_experiment_in_vm(const std::string &experiment_file, const RunOptions &opts)
{
	require_root();
	install_interrupt_handlers(); // the child's exit status tells what happened
	ExperimentSpec spec = resolve_experiment(load_experiment(experiment_file), opts);

	VmLaunch l;
	l.vm_run = vm_run_path();
	l.kernel = opts.vm_kernel;
	l.kmod = find_kmod(opts.vm_kernel, opts.kmod);
	l.lumen = absolute_path("/proc/self/exe", "the lumen binary");
	l.experiment_file = absolute_path(find_experiment_file(experiment_file), "experiment");
	l.algorithms = spec.algorithms;
	l.smoke = opts.smoke;
	l.duration_ns = opts.duration_ns;
	l.rate_mbps = opts.rate_mbps;
	l.delay_ns = opts.delay_ns;
	l.timeout_s = vm_timeout_s(spec);
	std::string dir = opts.out_dir.empty() ? default_out_dir(spec) : opts.out_dir;
	prepare_out_dir(dir);
	l.out_dir = absolute_path(dir, "--out");

	std::fprintf(stderr, "[%s] in a VM with kernel %s and %s: %s; results in %s (at most %llu s)\n",
		     spec.name.c_str(), l.kernel.c_str(), l.kmod.c_str(), join(l.algorithms).c_str(), l.out_dir.c_str(),
		     static_cast<unsigned long long>(l.timeout_s));
	int rc = run_foreground(vm_run_argv(l), LUMEN_SOURCE_DIR);
	if (rc == kVmRunTimeout)
		throw Error("the VM did not finish within " + std::to_string(l.timeout_s) + " s (partial results in " +
			    l.out_dir + ")");
	if (rc == kVmRunInfra)
		throw Error("tools/vm-run could not run the VM (its message is above)");
	if (rc != 0)
		throw Error("the experiment in the VM failed (exit status " + std::to_string(rc) +
			    "; its messages are above, partial results in " + l.out_dir + ")");
	if (!path_exists(l.out_dir + "/summary.json"))
		throw Error("the VM run exited 0 but left no " + l.out_dir + "/summary.json");
	return l.out_dir;
}

} // namespace lumen
