/*
 * engine_limits.h - the ranges of the engine's numeric parameters, once.
 *
 * EngineConfig::validate() checks a configuration against these ranges and
 * lumen-dp's options parse into them, so a value the command line takes is
 * one the engine takes, and the two say the same thing when it is not.
 * (They used to differ: --entropies stopped at 16384 while validate()
 * allowed 65536.) A range is in the unit the user types (the option's);
 * `scale` turns it into the configuration's unit (1000 for an option in
 * microseconds whose field is in nanoseconds).
 *
 * Constraints between fields (a power-of-two window, Go-Back-N with a
 * single-path policy, the source ports' base plus the entropies within
 * 65535, the RTO's minimum below its maximum) stay in validate(): they
 * depend on more than one value.
 */
#ifndef LUMEN_DP_ENGINE_LIMITS_H
#define LUMEN_DP_ENGINE_LIMITS_H

#include <cstdint>
#include <string>

#include "lumen/hpcc.h"
#include "lumen/int_option.h"
#include "lumen/path_policy.h"
#include "lumen/powertcp.h"
#include "lumen/retcp.h"
#include "lumen/timely.h"

namespace lumen::dp
{

struct ParamRange {
	const char *name; /* the option's name */
	uint64_t lo, hi; /* inclusive, in the option's unit */
	uint64_t scale; /* configuration units per option unit */

	/* v in the configuration's unit */
	constexpr bool holds(uint64_t v) const
	{
		return v >= lo * scale && v <= hi * scale;
	}
	/* "mtu must be 576..9000" */
	std::string refusal() const
	{
		return std::string(name) + " must be " + std::to_string(lo) + ".." + std::to_string(hi);
	}
};

namespace limits
{
inline constexpr ParamRange kMtu{"mtu", 576, 9000, 1};
inline constexpr ParamRange kIntSlots{"int-slots", 0, LUMEN_INT_MAX_HOPS, 1};
/* rx and tx windows; also a power of two */
inline constexpr ParamRange kWindow{"window", 64, 65536, 1};
inline constexpr ParamRange kAckEvery{"ack-every", 1, 64, 1};
inline constexpr ParamRange kEntropies{"entropies", 1, LUMEN_PATH_ENTROPIES_MAX, 1};
inline constexpr ParamRange kExplore{"explore", 0, 0xFFFF, 1};
inline constexpr ParamRange kFreezeUs{"freeze-us", 1, LUMEN_PATH_FREEZE_NS_MAX / 1000, 1000};
inline constexpr ParamRange kCeNackThreshold{"ce-nack-threshold", 0, 99, 1};
inline constexpr ParamRange kCeWindowUs{"ce-window-us", 1, 1'000'000, 1000};
inline constexpr ParamRange kStartJitterUs{"start-jitter-us", 0, 1'000'000, 1000};
/* the RTO's bounds (rto.h: at most 2^40 ns) */
inline constexpr ParamRange kRtoMinUs{"rto-min-us", 1, (1ull << 40) / 1000, 1000};
inline constexpr ParamRange kRtoMaxUs{"rto-max-us", 1, (1ull << 40) / 1000, 1000};
inline constexpr ParamRange kMaxConns{"max-conns", 1, 1u << 22, 1};
inline constexpr ParamRange kInitCwnd{"init-cwnd", 1, 65536, 1};
/*
 * Congestion control (CcParams, checked by the cores' own validation, whose
 * words EngineConfig::validate() repeats; these are the same bounds, for the
 * options). Fractions are typed as decimals ("0.95") and kept in Q16: their
 * ranges are in Q16 (LUMEN_HPCC_ONE = LUMEN_TIMELY_ONE = 1.0), and
 * fraction_text() says them as the user types them.
 */
/* HostBw in Mbit/s (kept in bit/s): PowerTCP's bounds, [1 Mbit/s, 1.6 Tbit/s] */
inline constexpr ParamRange kHostBwMbps{"host-bw-mbps", LUMEN_PTCP_HOST_BW_MIN_MBPS, LUMEN_PTCP_HOST_BW_MAX_MBPS,
					1'000'000};
/* tau: 0 = the smallest RTT seen, else [1 us, 1 s] */
inline constexpr ParamRange kBaseRttUs{"base-rtt-us", 0, LUMEN_PTCP_BASE_RTT_MAX_NS / 1000, 1000};
inline constexpr ParamRange kHpccEta{"hpcc-eta", LUMEN_HPCC_ETA_MIN, LUMEN_HPCC_ETA_MAX, 1};
inline constexpr ParamRange kHpccMaxStage{"hpcc-max-stage", 0, LUMEN_HPCC_MAX_STAGE_MAX, 1};
/* W_AI in bytes, 0 = host BDP * (1 - eta) / N */
inline constexpr ParamRange kHpccWai{"hpcc-wai", 0, LUMEN_HPCC_WAI_MAX_BYTES, 1};
/* T_low below T_high, both within [1 us, 1 s] */
inline constexpr ParamRange kTimelyTLowUs{"timely-t-low-us", LUMEN_TIMELY_RTT_MIN_NS / 1000,
					  LUMEN_TIMELY_RTT_MAX_NS / 1000 - 1, 1000};
inline constexpr ParamRange kTimelyTHighUs{"timely-t-high-us", LUMEN_TIMELY_RTT_MIN_NS / 1000 + 1,
					   LUMEN_TIMELY_RTT_MAX_NS / 1000, 1000};
/* 0 = the smallest RTT seen (the option takes 0 or 1..1e6) */
inline constexpr ParamRange kTimelyMinRttUs{"timely-min-rtt-us", 0, LUMEN_TIMELY_RTT_MAX_NS / 1000, 1000};
/* 0 = host bandwidth / 1000; also at most the host bandwidth */
inline constexpr ParamRange kTimelyDeltaMbps{"timely-delta-mbps", 0, LUMEN_TIMELY_HOST_BW_MAX_MBPS, 1};
inline constexpr ParamRange kTimelyAlpha{"timely-alpha", 1, LUMEN_TIMELY_ONE, 1};
inline constexpr ParamRange kTimelyBeta{"timely-beta", 1, LUMEN_TIMELY_ONE, 1};
inline constexpr ParamRange kTimelyHai{"timely-hai", 1, LUMEN_TIMELY_HAI_MAX, 1};
inline constexpr ParamRange kTimelySegment{"timely-segment", LUMEN_TIMELY_SEG_MIN_BYTES, LUMEN_TIMELY_SEG_MAX_BYTES, 1};
/* reTCP: the circuit's rate over the packet network's; prebuffering in us */
inline constexpr ParamRange kRetcpJump{"retcp-jump", 1, LUMEN_RETCP_JUMP_MAX, 1};
inline constexpr ParamRange kRetcpPrebufferUs{"retcp-prebuffer-us", 0, LUMEN_RETCP_PREBUFFER_MAX_NS / 1000, 1000};

/* A Q16 fraction's range as typed: "0.5..1", or "(0, 1]" from the smallest
 * positive Q16 value */
inline std::string fraction_text(const ParamRange &r)
{
	auto dec = [](uint64_t q16) {
		std::string s = std::to_string((double)q16 / 65536.0);
		s.erase(s.find_last_not_of('0') + 1);
		if (s.back() == '.')
			s.pop_back();
		return s;
	};
	if (r.lo == 1)
		return "(0, " + dec(r.hi) + "]";
	return dec(r.lo) + ".." + dec(r.hi);
}
} // namespace limits

} // namespace lumen::dp

#endif
