// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/cli/cmd_host.cpp - `lumen host`: what the experiment runner
// needs from a host it drives over SSH (experiment_remote.h), as one
// command on that host, so the runner never depends on a remote shell's
// quirks:
//   info            kernel, boot id, lumen version, BTF, algorithms: the
//                   runner checks the hosts and groups those that share a
//                   kernel (network namespaces of one machine share it, and
//                   with it the loaded eBPF algorithms and pinned maps);
//   clock           answers each line with CLOCK_MONOTONIC: the runner
//                   estimates each host's clock offset from the fastest of
//                   a few round trips (the midpoint method of NTP);
//   cgroup-create,  a cgroup v2 group that holds every process of a run,
//   cgroup-remove   so INT sockops attach to exactly those sockets and the
//                   teardown can kill whatever is left (cgroup.kill);
//   kmod-stats      tcp_powertcp's counters: /proc/net/powertcp of this
//                   namespace, or summed over every named one too;
//   run             runs a command in that cgroup and stops it when its
//                   standard input reaches end of file: the runner keeps
//                   the SSH session's input open, so a dropped connection, a
//                   killed runner or a stopped ssh all end the command.
#include "base/args.h"
#include "base/cgroup.h"
#include "base/error.h"
#include "base/json.h"
#include "base/system.h"
#include "base/units.h"
#include "cli/commands.h"
#include "experiment/experiment_kmod.h"

#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <poll.h>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace lumen
{
namespace
{

const char kUsage[] =
	R"(usage: lumen host info [--json]
       lumen host clock
       lumen host cgroup-create NAME
       lumen host cgroup-remove NAME
       lumen host kmod-stats [--all-netns]
       lumen host run [--cgroup NAME] [--grace D] [--input] -- COMMAND [ARG...]

What 'lumen experiment run --hosts' runs on each host over SSH; usable by
hand as well.

info           hostname, kernel release, boot id, lumen version, cgroup v2
               mount, BTF, available congestion control, tcp_powertcp
               loaded, whether this is the initial network namespace
               (--json: one object)
clock          prints "lumen-clock 1", then answers every line read from
               standard input with this host's CLOCK_MONOTONIC in ns, until
               end of input
cgroup-create  creates the cgroup v2 group NAME (1 to 64 of A-Z a-z 0-9 _ . -)
               under the hierarchy's root, marks it as lumen's (extended
               attribute user.lumen) and prints its path; refused if it
               exists (it is not ours)
cgroup-remove  kills every process left in NAME (cgroup.kill), waits for
               them and removes the group; nothing to do if it is gone; a
               group without lumen's mark is refused and left alone
kmod-stats     the counters of the kernel module tcp_powertcp, one "name
               value" per line: /proc/net/powertcp of this network namespace
               (counters are per namespace); --all-netns: summed with every
               named namespace's (ip netns), "hooks" (host-wide) not summed
run            runs COMMAND in the cgroup NAME (default: where it is), with
               standard input from /dev/null, and waits for it; exits with
               its status (128 + signal if killed). When this command's own
               standard input reaches end of file (the SSH connection is
               gone) COMMAND gets SIGTERM, and SIGKILL after --grace
               (default 2s). SIGTERM, SIGINT and SIGHUP are passed on.
               --input: what arrives on standard input is passed on to
               COMMAND's (a pipe; end of file still ends COMMAND)
)";

std::string first_line(const std::string &path)
{
	std::ifstream f(path);
	std::string line;
	std::getline(f, line);
	return line;
}

std::string cgroup_path(const std::string &name)
{
	if (name.empty() || name.size() > 64 || name[0] == '.')
		throw UsageError("cgroup name '" + name + "': 1 to 64 of A-Z a-z 0-9 _ . -, not starting with '.'");
	for (char c : name)
		if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-')
			throw UsageError("cgroup name '" + name + "': 1 to 64 of A-Z a-z 0-9 _ . -");
	return cgroup2_root() + "/" + name;
}

int cmd_info(const Args &a)
{
	a.allow_only({"--json"});
	if (a.positional.size() != 1)
		throw UsageError("info takes no arguments");
	struct utsname u;
	std::string release = ::uname(&u) == 0 ? u.release : "unknown";
	char host[256] = {};
	if (::gethostname(host, sizeof(host) - 1) != 0)
		std::strcpy(host, "unknown");
	std::string cgroup;
	try {
		cgroup = cgroup2_root();
	} catch (const Error &) {
		cgroup = ""; // reported as missing; the runner refuses such a host
	}
	std::string avail = read_sysctl("net.ipv4.tcp_available_congestion_control");
	bool btf = path_exists("/sys/kernel/btf/vmlinux");
	std::string boot_id = first_line("/proc/sys/kernel/random/boot_id");
	// kernel-wide settings such as net.ipv4.tcp_allowed_congestion_control
	// are writable only from the initial network namespace (other
	// namespaces see them read-only), which is how it is told apart:
	// /proc/1/ns may be hidden
	struct stat allowed;
	bool init_netns = ::stat("/proc/sys/net/ipv4/tcp_allowed_congestion_control", &allowed) == 0 &&
			  (allowed.st_mode & S_IWUSR);
	if (a.has("--json")) {
		std::string cc = "[";
		for (const auto &w : split_words(avail))
			cc += (cc.size() > 1 ? ", " : "") + json_escape(w);
		cc += "]";
		Json j;
		j.str("hostname", host)
			.str("kernel_release", release)
			.str("boot_id", boot_id)
			.str("lumen_version", lumen_version())
			.str("cgroup2_root", cgroup)
			.raw("btf", btf ? "true" : "false")
			.raw("available_cc", cc)
			.raw("kmod_loaded", kmod_loaded() ? "true" : "false")
			.raw("init_netns", init_netns ? "true" : "false")
			.num("monotonic_ns", monotonic_ns());
		std::printf("%s\n", j.dump().c_str());
		return 0;
	}
	std::printf("hostname        %s\nkernel          %s\nboot id         %s\nlumen           %s\n"
		    "cgroup v2       %s\nBTF             %s\ncongestion ctl  %s\ntcp_powertcp    %s\n"
		    "network ns      %s\n",
		    host, release.c_str(), boot_id.c_str(), lumen_version(),
		    cgroup.empty() ? "not mounted" : cgroup.c_str(), btf ? "yes" : "no", avail.c_str(),
		    kmod_loaded() ? "loaded" : "not loaded", init_netns ? "initial" : "a child namespace");
	return 0;
}

int cmd_clock(const Args &a)
{
	a.allow_only({});
	if (a.positional.size() != 1)
		throw UsageError("clock takes no arguments");
	std::setvbuf(stdout, nullptr, _IOLBF, 0);
	std::printf("lumen-clock 1\n");
	char line[256];
	while (std::fgets(line, sizeof(line), stdin))
		std::printf("%llu\n", static_cast<unsigned long long>(monotonic_ns()));
	return 0;
}

// Extended attribute that marks a cgroup as created by cgroup-create.
constexpr const char *kCgroupMark = "user.lumen";

int cmd_cgroup_create(const Args &a)
{
	a.allow_only({});
	if (a.positional.size() != 2)
		throw UsageError("cgroup-create takes one NAME");
	require_root();
	std::string path = cgroup_path(a.positional[1]);
	if (::mkdir(path.c_str(), 0755) != 0)
		throw Error("cannot create cgroup " + path + ": " + std::strerror(errno));
	// the mark that lets cgroup-remove tell lumen's groups from anyone else's
	if (::setxattr(path.c_str(), kCgroupMark, "1", 1, XATTR_CREATE) != 0) {
		int err = errno;
		::rmdir(path.c_str());
		throw Error("cannot mark cgroup " + path + " as lumen's (" + kCgroupMark + "): " + std::strerror(err));
	}
	std::printf("%s\n", path.c_str());
	return 0;
}

// Whether the group at path carries cgroup-create's mark.
bool cgroup_is_lumens(const std::string &path)
{
	char v[8];
	return ::getxattr(path.c_str(), kCgroupMark, v, sizeof(v)) == 1 && v[0] == '1';
}

std::vector<pid_t> cgroup_pids(const std::string &path)
{
	std::vector<pid_t> pids;
	std::ifstream f(path + "/cgroup.procs");
	long pid;
	while (f >> pid)
		pids.push_back(static_cast<pid_t>(pid));
	return pids;
}

int cmd_cgroup_remove(const Args &a)
{
	a.allow_only({});
	if (a.positional.size() != 2)
		throw UsageError("cgroup-remove takes one NAME");
	require_root();
	std::string path = cgroup_path(a.positional[1]);
	if (!path_exists(path)) {
		std::printf("no cgroup %s\n", path.c_str());
		return 0;
	}
	if (!cgroup_is_lumens(path))
		throw Error("cgroup " + path + " was not created by lumen host cgroup-create (no " + kCgroupMark +
			    " mark): not touching it");
	// cgroup.kill (5.14+) kills everything at once, also processes forking
	// meanwhile; older kernels get SIGKILL per process, repeated until empty
	bool has_kill = path_exists(path + "/cgroup.kill");
	std::uint64_t deadline = monotonic_ns() + 5 * kSec;
	for (;;) {
		auto pids = cgroup_pids(path);
		if (pids.empty())
			break;
		if (monotonic_ns() > deadline)
			throw Error("processes still in " + path + " after 5 s (first: " + std::to_string(pids[0]) +
				    ")");
		if (has_kill) {
			std::ofstream k(path + "/cgroup.kill");
			k << "1";
		} else {
			for (pid_t p : pids)
				::kill(p, SIGKILL);
		}
		struct timespec ts = {0, 20'000'000};
		nanosleep(&ts, nullptr);
	}
	// the group empties in the kernel slightly after the last exit
	for (int i = 0; ::rmdir(path.c_str()) != 0; i++) {
		if (errno != EBUSY || i >= 250)
			throw Error("cannot remove cgroup " + path + ": " + std::strerror(errno));
		struct timespec ts = {0, 20'000'000};
		nanosleep(&ts, nullptr);
	}
	std::printf("removed %s\n", path.c_str());
	return 0;
}

volatile sig_atomic_t g_forward_signal = 0;

void on_signal(int sig)
{
	g_forward_signal = sig;
}

int decode_status(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return 1;
}

// stdin_fd: COMMAND's standard input (-1: /dev/null).
[[noreturn]] void exec_in_cgroup(const std::vector<std::string> &cmd, const std::string &procs_file, int stdin_fd)
{
	if (!procs_file.empty()) {
		int fd = ::open(procs_file.c_str(), O_WRONLY | O_CLOEXEC);
		if (fd < 0 || ::write(fd, "0", 1) != 1) {
			std::fprintf(stderr, "lumen host run: cannot join %s: %s\n", procs_file.c_str(),
				     std::strerror(errno));
			::_exit(126);
		}
		::close(fd);
	}
	int in_fd = stdin_fd >= 0 ? stdin_fd : ::open("/dev/null", O_RDONLY);
	if (in_fd < 0 || ::dup2(in_fd, STDIN_FILENO) < 0)
		::_exit(126);
	std::vector<char *> argv;
	for (const auto &s : cmd)
		argv.push_back(const_cast<char *>(s.c_str()));
	argv.push_back(nullptr);
	::execvp(argv[0], argv.data());
	std::fprintf(stderr, "lumen host run: cannot execute %s: %s\n", cmd[0].c_str(), std::strerror(errno));
	::_exit(127);
}

// Passes `len` bytes on to the child's input (non-blocking); closes it
// (-1) when the child no longer reads or has 64 KiB unread.
void forward_input(int *child_in, const char *buf, std::size_t len)
{
	while (*child_in >= 0 && len > 0) {
		ssize_t n = ::write(*child_in, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			std::fprintf(stderr, "lumen host run: command's input %s, no longer passed on\n",
				     n < 0 && errno == EAGAIN ? "full" : "closed");
			::close(*child_in);
			*child_in = -1;
			return;
		}
		buf += n;
		len -= static_cast<std::size_t>(n);
	}
}

// Waits for the child, watching our standard input for end of file (and
// passing what arrives on to `child_in`, -1: nothing) and for signals;
// returns the child's status.
int supervise(pid_t child, std::uint64_t grace_ns, int child_in)
{
	bool stdin_open = true, terminating = false;
	std::uint64_t kill_at = 0;
	for (;;) {
		int wstatus = 0;
		pid_t r = ::waitpid(child, &wstatus, WNOHANG);
		if (r == child)
			return decode_status(wstatus);
		if (r < 0 && errno != EINTR)
			return 1;
		if (g_forward_signal) {
			::kill(child, g_forward_signal);
			g_forward_signal = 0;
			if (!terminating) {
				terminating = true;
				kill_at = monotonic_ns() + grace_ns;
			}
		}
		if (terminating && monotonic_ns() >= kill_at)
			::kill(child, SIGKILL);
		struct pollfd p = {STDIN_FILENO, POLLIN, 0};
		int n = ::poll(&p, stdin_open ? 1 : 0, 50);
		if (n > 0 && stdin_open) {
			char buf[256];
			ssize_t got = ::read(STDIN_FILENO, buf, sizeof(buf));
			if (got > 0)
				forward_input(&child_in, buf, static_cast<std::size_t>(got));
			if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
				stdin_open = false;
				if (child_in >= 0) {
					::close(child_in);
					child_in = -1;
				}
				if (!terminating) {
					::kill(child, SIGTERM);
					terminating = true;
					kill_at = monotonic_ns() + grace_ns;
				}
			}
		}
	}
}

int cmd_run(const std::vector<std::string> &args)
{
	std::size_t sep = 0;
	while (sep < args.size() && args[sep] != "--")
		sep++;
	if (sep + 1 >= args.size())
		throw UsageError("run needs '-- COMMAND [ARG...]'");
	Args a =
		Args::parse(std::vector<std::string>(args.begin(), args.begin() + static_cast<long>(sep)), {"--input"});
	a.allow_only({"--cgroup", "--grace", "--input"});
	if (!a.positional.empty())
		throw UsageError("run takes its command after '--'");
	std::string procs;
	if (a.has("--cgroup")) {
		procs = cgroup_path(*a.get("--cgroup")) + "/cgroup.procs";
		if (!path_exists(procs))
			throw Error("no cgroup " + *a.get("--cgroup") + " (" + procs + " missing)");
	}
	std::uint64_t grace = 2 * kSec;
	if (a.has("--grace"))
		grace = parse_duration_ns(*a.get("--grace"), "--grace", 600 * kSec);
	std::vector<std::string> cmd(args.begin() + static_cast<long>(sep) + 1, args.end());

	struct sigaction sa = {};
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (int sig : {SIGTERM, SIGINT, SIGHUP})
		sigaction(sig, &sa, nullptr);
	int in[2] = {-1, -1};
	if (a.has("--input")) {
		if (::pipe2(in, O_CLOEXEC) != 0 || ::fcntl(in[1], F_SETFL, O_NONBLOCK) != 0)
			throw Error(std::string("pipe: ") + std::strerror(errno));
		::signal(SIGPIPE, SIG_IGN); // a child that closed its input: EPIPE
	}
	std::fflush(nullptr);
	pid_t child = ::fork();
	if (child < 0)
		throw Error(std::string("fork: ") + std::strerror(errno));
	if (child == 0) {
		struct sigaction dfl = {};
		dfl.sa_handler = SIG_DFL;
		for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE})
			sigaction(sig, &dfl, nullptr);
		exec_in_cgroup(cmd, procs, in[0]);
	}
	if (in[0] >= 0)
		::close(in[0]);
	return supervise(child, grace, in[1]);
}

int cmd_kmod_stats(const Args &a)
{
	a.allow_only({"--all-netns"});
	if (a.positional.size() != 1)
		throw UsageError("kmod-stats takes no arguments");
	KmodCounters sum = read_kmod_stats();
	if (a.has("--all-netns")) {
		struct stat self;
		if (::stat("/proc/thread-self/ns/net", &self) != 0)
			throw Error(std::string("cannot stat /proc/thread-self/ns/net: ") + std::strerror(errno));
		std::error_code ec;
		for (const auto &e : std::filesystem::directory_iterator("/run/netns", ec)) {
			Netns ns = open_netns(e.path().filename().string());
			if (ns.ino != self.st_ino) // a name for this namespace: counted once
				kmod_counters_add(sum, read_kmod_stats(ns));
		}
	}
	for (const auto &[name, v] : sum)
		std::printf("%s %llu\n", name.c_str(), static_cast<unsigned long long>(v));
	return 0;
}

int run(const std::vector<std::string> &args)
{
	// `run` passes the words after it on untouched (a command line for the
	// host); the others take options of their own
	using Words = std::vector<std::string>;
	auto parsed = [](int (*fn)(const Args &)) {
		return [fn](const Words &w) { return fn(Args::parse(w, {"--json", "--all-netns"})); };
	};
	return run_subcommand<Words>(args.empty() ? nullptr : &args[0],
				     {{"info", parsed(cmd_info)},
				      {"clock", parsed(cmd_clock)},
				      {"cgroup-create", parsed(cmd_cgroup_create)},
				      {"cgroup-remove", parsed(cmd_cgroup_remove)},
				      {"kmod-stats", parsed(cmd_kmod_stats)},
				      {"run", [](const Words &w) { return cmd_run(Words(w.begin() + 1, w.end())); }}},
				     args);
}

} // namespace

const Command kHostCommand = {
	"host", "what the experiment runner runs on hosts it drives over SSH (info, clock, cgroups, run)", kUsage, run};

} // namespace lumen
