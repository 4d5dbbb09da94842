// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/cc.cpp - CcParams (validation, the PowerTCP core's parameter
// set) and make_cc. The algorithms are cc_dctcp.cpp and cc_powertcp.cpp.
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
	// a rate beyond 32 bits of Mbit/s is refused by validate(); saturate so
	// that the core's own check reports it
	uint64_t mbps = host_bw_bps / kMbit;
	p.host_bw_mbps = mbps > UINT32_MAX ? UINT32_MAX : uint32_t(mbps);
	p.base_rtt_ns = base_rtt_ns;
	return p;
}

std::string CcParams::validate() const
{
	if (algorithm != CcAlgorithm::kDctcp && algorithm != CcAlgorithm::kPowerTcp &&
	    algorithm != CcAlgorithm::kThetaPowerTcp)
		return "algorithm must be dctcp, powertcp or theta_powertcp";
	if (mss < 64 || mss > 65535)
		return "mss must be within [64, 65535] bytes";
	if (host_bw_bps < LUMEN_PTCP_HOST_BW_MIN_MBPS * kMbit || host_bw_bps > LUMEN_PTCP_HOST_BW_MAX_MBPS * kMbit)
		return "host_bw_bps must be within [1 Mbit/s, 1.6 Tbit/s]";
	if (base_rtt_ns && (base_rtt_ns < LUMEN_PTCP_BASE_RTT_MIN_NS || base_rtt_ns > LUMEN_PTCP_BASE_RTT_MAX_NS))
		return "base_rtt_ns must be 0 (auto) or within [1 us, 1 s]";
	if (algorithm == CcAlgorithm::kDctcp)
		return dctcp_errors(*this);
	lumen_ptcp_params p = ptcp_params();
	int err = lumen_ptcp_params_validate(&p);
	if (err)
		return std::string("powertcp: ") + lumen_ptcp_param_strerror(err);
	return {};
}

std::unique_ptr<CongestionControl> make_cc(const CcParams &params)
{
	std::string err = params.validate();
	if (!err.empty())
		throw std::invalid_argument(err);
	if (params.algorithm == CcAlgorithm::kDctcp)
		return std::make_unique<Dctcp>(params);
	return std::make_unique<PowerTcp>(params);
}

} // namespace lumen::dp
