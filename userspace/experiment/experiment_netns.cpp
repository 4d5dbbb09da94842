// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/experiment_netns.cpp - see experiment_netns.h.
#include "experiment/experiment_netns.h"

#include "base/error.h"
#include "base/process.h"
#include "base/rollback.h"
#include "base/system.h"
#include "bpfctl/bpf_util.h"
#include "bpfctl/cc.h"
#include "bpfctl/int_sockops.h"
#include "bpfctl/switch_port.h"
#include "experiment/experiment_kmod.h"
#include "experiment/experiment_proc.h"
#include "testbed/testbed.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace lumen
{

namespace
{

using nlohmann::json;

bool algorithm_available(const std::string &algo)
{
	auto avail = split_words(read_sysctl("net.ipv4.tcp_available_congestion_control"));
	return std::find(avail.begin(), avail.end(), algo) != avail.end();
}

// Kernel algorithms may be modules (tcp_bbr): load them before the run
// rather than let every flow fail.
void require_kernel_algorithm(const std::string &algo)
{
	if (algorithm_available(algo))
		return;
	run_process({"modprobe", "tcp_" + algo});
	if (!algorithm_available(algo))
		throw Error("congestion control '" + algo + "' is not available (not in " +
			    "net.ipv4.tcp_available_congestion_control, and 'modprobe tcp_" + algo +
			    "' did not add it)");
}

// The module's algorithms are not modprobed: it is not installed in the
// kernel's tree; `--vm` boots a kernel with it loaded.
void require_kmod_algorithm(const std::string &algo)
{
	if (!kmod_loaded())
		throw Error("'" + algo + "' is the kernel module tcp_powertcp's, which is not loaded (no " +
			    kmod_sysfs_dir() + "/parameters); run with --vm 6.1|6.12 to load it in a VM, or insmod it");
	if (!algorithm_available(algo))
		throw Error("tcp_powertcp is loaded but '" + algo +
			    "' is not in net.ipv4.tcp_available_congestion_control (another algorithm took the name?)");
}

} // namespace

void preflight_common()
{
	if (run_process({"gnuplot", "--version"}).status != 0)
		throw Error("gnuplot is needed for the plots (apt-get install gnuplot-nox, or tools/install-deps)");
}

void preflight_testbed(const ExperimentSpec &spec)
{
	require_root();
	preflight_common();
	bool bpf = false;
	for (const auto &a : spec.algorithms) {
		if (is_bpf_algorithm(a))
			bpf = true;
		else if (is_kmod_algorithm(a))
			require_kmod_algorithm(a);
		else if (a.rfind("bpf_", 0) == 0)
			throw UsageError("unknown eBPF algorithm '" + a + "' (" + bpf_algorithm_list() + ")");
		else
			require_kernel_algorithm(a);
	}
	if (bpf)
		require_btf();
}

namespace
{

// ---------------------------------------------------------------------
// Global state the run changes, undone by destructors

// A step that stays until the fabric goes: undone then, a failure reported
// (destructors do not throw).
void undo_at_end(std::optional<Rollback> &slot, std::string what, std::function<void()> undo)
{
	slot.emplace("lumen experiment");
	slot->add(std::move(what), std::move(undo));
}

// ---------------------------------------------------------------------
// Switch statistics

class PortSampler : public QueueSource
{
      public:
	explicit PortSampler(const std::vector<TestbedPort> &ports)
	{
		for (const auto &p : ports) {
			ids_.push_back(p.port_id);
			ports_.push_back({p.name, p.rate_mbps, p.bottleneck});
		}
	}
	const std::vector<PortInfo> &ports() const override
	{
		return ports_;
	}
	void poll(std::vector<QueueTick> &out) override
	{
		out.push_back(sample());
	}

      private:
	QueueTick sample() const
	{
		QueueTick t;
		t.t_ns = monotonic_ns();
		for (__u32 id : ids_) {
			const lumen_switch_port_stats st = counters_.read(id);
			PortCounters c;
			c.enq_bytes = st.enq_bytes;
			c.deq_bytes = st.deq_bytes;
			c.qlen_bytes = st.enq_bytes > st.deq_bytes ? st.enq_bytes - st.deq_bytes : 0;
			c.drops = st.drops;
			c.ecn_marks = st.ecn_marks;
			t.ports.push_back(c);
		}
		return t;
	}

	SwitchCounters counters_;
	std::vector<__u32> ids_;
	std::vector<PortInfo> ports_;
};

// A namespace testbed on this machine. Members are declared in teardown
// order reversed: the INT program goes first, then the testbed (its
// processes and sockets), then the congestion control.
class NetnsFabric : public Fabric
{
      public:
	NetnsFabric(const TopologySpec &topo, const std::string &exe, std::uint32_t path_rate_mbps)
	    : exe_(exe), path_rate_mbps_(path_rate_mbps)
	{
		testbed_.emplace(Testbed::create(topo));
		for (const auto &h : testbed_->hosts())
			hosts_.push_back({h.name, h.role, h.addr});
		sampler_.emplace(testbed_->ports());
	}

	const std::vector<FabricHost> &hosts() const override
	{
		return hosts_;
	}
	std::uint32_t path_rate_mbps() const override
	{
		return path_rate_mbps_;
	}
	std::uint64_t base_rtt_ns() const override
	{
		return testbed_->base_rtt_ns();
	}
	QueueSource &queue() override
	{
		return *sampler_;
	}
	void load_algorithms(const AlgorithmSetup &setup) override
	{
		// the algorithms were checked before the testbed was built
		if (!setup.bpf_params.empty()) {
			CcLoadRequest req;
			req.change = parse_cc_params(setup.bpf_params);
			req.allow = true;
			load_cc(req);
			undo_at_end(cc_loaded_, "the eBPF congestion control load (PowerTCP, HPCC, TIMELY)",
				    []() { unload_cc(); });
		}
		if (setup.kmod_params)
			kmod_params_.emplace(*setup.kmod_params);
		if (setup.int_sockops) {
			IntEnableRequest req;
			req.cgroup = testbed_->cgroup();
			req.wide = setup.int_wide;
			enable_int(req);
			undo_at_end(int_enabled_, "enabling INT sockops", []() { disable_int(); });
		}
	}
	std::string host_dir(const std::string &, const std::string &raw) override
	{
		return raw; // the hosts share this machine's files
	}
	pid_t spawn_lumen(const std::string &host, const std::vector<std::string> &args, const std::string &stdout_path,
			  const std::string &stderr_path, bool with_input) override
	{
		std::vector<std::string> argv = {exe_};
		argv.insert(argv.end(), args.begin(), args.end());
		for (const auto &h : testbed_->hosts()) {
			if (h.name != host)
				continue;
			if (!with_input)
				return testbed_->spawn(h, argv, stdout_path, stderr_path);
			int in[2];
			if (::pipe2(in, O_CLOEXEC) != 0)
				throw Error(std::string("pipe: ") + std::strerror(errno));
			pid_t pid = -1;
			try {
				pid = testbed_->spawn(h, argv, stdout_path, stderr_path, in[0]);
			} catch (...) {
				::close(in[0]);
				::close(in[1]);
				throw;
			}
			::close(in[0]);
			inputs_.add(pid, in[1]);
			return pid;
		}
		throw Error("testbed has no host " + host);
	}
	void send_input(pid_t pid, const std::string &text) override
	{
		inputs_.write(pid, text);
	}
	bool fetch(const std::string &, const std::string &path, const std::string &local_path) override
	{
		return path == local_path && path_exists(path);
	}
	std::int64_t clock_offset_ns(const std::string &) const override
	{
		return 0; // one kernel, one clock
	}
	void end_run() override
	{
		inputs_.close_all();
	}
	std::uint64_t heal_idle_queues() override
	{
		std::uint64_t healed = 0;
		for (const TestbedPort &p : testbed_->ports()) {
			SwitchPortSelector sel;
			sel.id = p.port_id;
			for (const SwitchPortHealed &h : heal_switch_ports(sel))
				healed += h.bytes;
		}
		return healed;
	}
	// Counters are per namespace: the hosts' namespaces, where the flows run.
	KmodCounters kmod_stats() override
	{
		KmodCounters sum;
		for (const auto &h : testbed_->hosts())
			kmod_counters_add(sum, read_kmod_stats(open_netns(h.netns)));
		return sum;
	}
	std::string describe_json() const override
	{
		const Testbed &tb = *testbed_;
		json t;
		t["description"] = json::parse(topology_to_json(tb.spec()));
		t["base_rtt_ns"] = tb.base_rtt_ns();
		t["path_rate_mbps"] = path_rate_mbps_;
		t["hosts"] = json::array();
		for (const auto &h : tb.hosts())
			t["hosts"].push_back(
				{{"name", h.name}, {"netns", h.netns}, {"addr", h.addr}, {"role", h.role}});
		t["ports"] = json::array();
		for (const auto &p : tb.ports())
			t["ports"].push_back({{"name", p.name},
					      {"port_id", p.port_id},
					      {"rate_mbps", p.rate_mbps},
					      {"bottleneck", p.bottleneck}});
		return json{{"testbed", t}}.dump();
	}

      private:
	std::string exe_;
	std::uint32_t path_rate_mbps_;
	std::vector<FabricHost> hosts_;
	std::optional<Rollback> cc_loaded_; // torn down after the testbed, as set up before it
	std::optional<KmodParamsSet> kmod_params_;
	std::optional<Testbed> testbed_;
	std::optional<PortSampler> sampler_;
	std::optional<Rollback> int_enabled_; // first to go
	ChildInputs inputs_; // generators waiting for their start time
};

} // namespace

std::unique_ptr<Fabric> make_netns_fabric(const TopologySpec &topo, const std::string &exe,
					  std::uint32_t path_rate_mbps)
{
	return std::make_unique<NetnsFabric>(topo, exe, path_rate_mbps);
}

std::unique_ptr<QueueSource> make_port_sampler(const std::vector<TestbedPort> &ports)
{
	return std::make_unique<PortSampler>(ports);
}

} // namespace lumen
