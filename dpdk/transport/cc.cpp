// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/cc.cpp - CcParams (validation, the PowerTCP and TIMELY
// cores' parameter sets) and make_cc. The algorithms are cc_dctcp.cpp,
// cc_powertcp.cpp (PowerTCP, theta-PowerTCP, HPCC) and cc_timely.cpp.
#include "transport/cc.h"
#include "transport/engine_limits.h"

#include <stdexcept>

namespace lumen::dp
{

namespace
{

constexpr uint64_t kMbit = 1000000;
constexpr uint32_t kQ16One = 65536;

std::string dctcp_errors(const CcParams &p)
{
	if (p.dctcp_g_shift > 16)
		return "dctcp_g_shift must be within [0, 16] (g = 2^-shift)";
	if (p.dctcp_alpha_init > kQ16One)
		return "dctcp_alpha_init must be within [0, 1] (Q16: [0, 65536])";
	if (p.dctcp_min_cwnd_pkts < 1)
		return "dctcp_min_cwnd_pkts must be at least 1";
	if (p.dctcp_max_cwnd_bytes > LUMEN_PTCP_MAX_CWND_BYTES)
		return "dctcp_max_cwnd_bytes must be at most 1 GiB";
	// both products < 2^16 * 2^17 = 2^33: no overflow in 64 bits
	uint64_t min_cwnd = uint64_t(p.dctcp_min_cwnd_pkts) * p.mss;
	if (p.dctcp_min_cwnd_pkts > 65536 || min_cwnd > p.dctcp_max_cwnd_bytes)
		return "dctcp_min_cwnd_pkts * mss must not exceed dctcp_max_cwnd_bytes";
	uint64_t init_cwnd = uint64_t(p.init_cwnd_pkts) * p.mss;
	if (!limits::kInitCwnd.holds(p.init_cwnd_pkts)) /* the field's name: callers set fields */
		return "init_cwnd_pkts must be within [" + std::to_string(limits::kInitCwnd.lo) + ", " +
		       std::to_string(limits::kInitCwnd.hi) + "]";
	if (init_cwnd < min_cwnd || init_cwnd > p.dctcp_max_cwnd_bytes)
		return "init_cwnd_pkts * mss must be within [dctcp_min_cwnd_pkts * mss, dctcp_max_cwnd_bytes]";
	if (p.dctcp_wtd_weight < 1 || p.dctcp_wtd_weight > kQ16One)
		return "dctcp_wtd_weight must be within (0, 1] (Q16: [1, 65536])";
	if (p.dctcp_wtd_threshold > kQ16One)
		return "dctcp_wtd_threshold must be within [0, 1] (Q16: [0, 65536])";
	return {};
}

// The core's message, after the algorithm's name unless it names it already
// ("hpcc eta must be ...", "timely T_low must be ...").
std::string core_error(const char *algorithm, const char *text)
{
	std::string t = text, a = algorithm;
	if (t.compare(0, a.size() + 1, a + " ") == 0)
		return t;
	return a + ": " + t;
}

// host_bw_bps in whole Mbit/s; a rate beyond 32 bits of Mbit/s is refused by
// validate(): saturate so that a core's own check reports it
uint32_t host_bw_mbps(uint64_t host_bw_bps)
{
	uint64_t mbps = host_bw_bps / kMbit;
	return mbps > UINT32_MAX ? UINT32_MAX : uint32_t(mbps);
}

} // namespace

const char *cc_algorithm_name(CcAlgorithm a)
{
	switch (a) {
	case CcAlgorithm::kDctcp:
		return "dctcp";
	case CcAlgorithm::kPowerTcp:
		return "powertcp";
	case CcAlgorithm::kThetaPowerTcp:
		return "theta_powertcp";
	case CcAlgorithm::kHpcc:
		return "hpcc";
	case CcAlgorithm::kTimely:
		return "timely";
	case CcAlgorithm::kRetcp:
		return "retcp";
	}
	return "unknown";
}

lumen_ptcp_params CcParams::ptcp_params() const
{
	lumen_ptcp_params p;

	lumen_ptcp_params_default(&p);
	p.gamma = ptcp_gamma;
	p.expected_flows = ptcp_expected_flows;
	p.beta_bytes = ptcp_beta_bytes;
	p.host_bw_mbps = host_bw_mbps(host_bw_bps);
	p.base_rtt_ns = base_rtt_ns;
	if (algorithm == CcAlgorithm::kHpcc) {
		p.hpcc.eta = hpcc_eta;
		p.hpcc.max_stage = hpcc_max_stage;
		p.hpcc.wai_bytes = hpcc_wai_bytes;
	}
	return p;
}

lumen_timely_params CcParams::timely_params() const
{
	lumen_timely_params p;

	lumen_timely_params_default(&p);
	p.t_low_ns = timely_t_low_ns;
	p.t_high_ns = timely_t_high_ns;
	p.min_rtt_ns = timely_min_rtt_ns;
	p.host_bw_mbps = host_bw_mbps(host_bw_bps);
	p.delta_mbps = timely_delta_mbps;
	p.alpha = timely_alpha;
	p.beta = timely_beta;
	p.hai_events = timely_hai_events;
	p.seg_bytes = timely_seg_bytes;
	return p;
}

lumen_retcp_params CcParams::retcp_params() const
{
	lumen_retcp_params p;

	lumen_retcp_params_default(&p);
	p.jump = retcp_jump;
	p.prebuffer_ns = retcp_prebuffer_ns;
	return p;
}

std::string CcParams::validate() const
{
	if (algorithm != CcAlgorithm::kDctcp && algorithm != CcAlgorithm::kPowerTcp &&
	    algorithm != CcAlgorithm::kThetaPowerTcp && algorithm != CcAlgorithm::kHpcc &&
	    algorithm != CcAlgorithm::kTimely && algorithm != CcAlgorithm::kRetcp)
		return "algorithm must be dctcp, powertcp, theta_powertcp, hpcc, timely or retcp";
	if (mss < 64 || mss > 65535)
		return "mss must be within [64, 65535] bytes";
	if (host_bw_bps < LUMEN_PTCP_HOST_BW_MIN_MBPS * kMbit || host_bw_bps > LUMEN_PTCP_HOST_BW_MAX_MBPS * kMbit)
		return "host_bw_bps must be within [1 Mbit/s, 1.6 Tbit/s]";
	if (base_rtt_ns && (base_rtt_ns < LUMEN_PTCP_BASE_RTT_MIN_NS || base_rtt_ns > LUMEN_PTCP_BASE_RTT_MAX_NS))
		return "base_rtt_ns must be 0 (auto) or within [1 us, 1 s]";
	if (algorithm == CcAlgorithm::kDctcp)
		return dctcp_errors(*this);
	if (algorithm == CcAlgorithm::kRetcp) {
		lumen_retcp_params r = retcp_params();
		int err = lumen_retcp_params_validate(&r);
		if (err)
			return core_error("retcp", lumen_retcp_param_strerror(err));
		return dctcp_errors(*this);
	}
	if (algorithm == CcAlgorithm::kTimely) {
		lumen_timely_params t = timely_params();
		int err = lumen_timely_params_validate(&t);
		if (err)
			return core_error("timely", lumen_timely_param_strerror(err));
		return {};
	}
	lumen_ptcp_params p = ptcp_params();
	int err = lumen_ptcp_params_validate(&p);
	if (err)
		return core_error(algorithm == CcAlgorithm::kHpcc ? "hpcc" : "powertcp",
				  lumen_ptcp_param_strerror(err));
	return {};
}

std::unique_ptr<CongestionControl> make_cc(const CcParams &params)
{
	std::string err = params.validate();
	if (!err.empty())
		throw std::invalid_argument(err);
	if (params.algorithm == CcAlgorithm::kDctcp || params.algorithm == CcAlgorithm::kRetcp)
		return std::make_unique<Dctcp>(params);
	if (params.algorithm == CcAlgorithm::kTimely)
		return std::make_unique<Timely>(params);
	return std::make_unique<PowerTcp>(params);
}

} // namespace lumen::dp
