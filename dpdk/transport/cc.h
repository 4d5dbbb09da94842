// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/cc.h - congestion control for lumen-dp: one interface,
// CongestionControl, fed per ACK by the connection engine, and three
// families behind it: DCTCP (what Ethereal runs), PowerTCP / theta-PowerTCP
// / HPCC (include/lumen/powertcp.h and hpcc.h, the core the kernel module and
// the eBPF struct_ops run too) and TIMELY (include/lumen/timely.h, shared
// with the eBPF struct_ops). No DPDK, no allocation and no exceptions after
// construction, integer arithmetic only on the per-ACK path.
//
// Units
// -----
// time in ns (the host clock the engine stamps packets with); windows in
// bytes of payload (the unit the engine's byte sequence numbers count);
// pacing in bit/s; fractions in fixed point: Q16 (65536 = 1.0) for
// parameters, as everywhere in lumen (docs/architecture.md, "Units").
//
// What the engine does
// --------------------
//   per ACK       on_ack(CcAck): what the ACK newly acknowledged (bytes,
//                 cumulative + SACK), the receiver's count of data packets
//                 and CE-marked ones since its previous ACK (the lumen-dp ACK's
//                 pkts and ce_pkts, DCTCP's fraction), the RTT sample from the
//                 echoed timestamp, the byte sequence numbers snd_una and
//                 snd_nxt after the ACK (32 bits, they wrap), the INT echo.
//   loss          on_loss(now, false) once per loss event it detects (dupthresh,
//                 RACK or a NACK), right after on_ack of the ACK that revealed
//                 it and before sending more: DCTCP takes that ACK's snd_nxt
//                 as the end of the window the reduction answers for.
//                 on_loss(now, true) when the RTO fires.
//   idle          on_idle_restart(now) when it sends again after having had
//                 nothing in flight for longer than an RTO (Linux's
//                 slow-start-after-idle rule, CA_EVENT_CWND_RESTART).
//   sending       at most cwnd_bytes() in flight; when pacing_bps() != 0, no
//                 faster than that.
//
// DCTCP (M. Alizadeh et al., SIGCOMM 2010; RFC 8257)
// ----------------------------------------------------
// The switch marks CE when its queue exceeds K; the receiver reports how many
// packets it got and how many carried CE. Once per window of data (a window
// ends when snd_una reaches the snd_nxt recorded when it began), the sender
// updates its estimate of the marked fraction F,
//     alpha = (1 - g) * alpha + g * F,     g = 2^-dctcp_g_shift (1/16),
// and at most once per window in which CE was seen it cuts
//     cwnd = cwnd * (1 - alpha / 2),
// so a window with few marks costs a little and one with all marks halves,
// as Reno would. "At most once per window" is Linux's CWR state: after a cut
// (or a loss halving), no further reduction and no growth until snd_una
// passes the snd_nxt of the moment of the cut: the marks and losses of data
// sent before the cut describe the queue the cut already answered.
// Otherwise: slow start (cwnd += acked) until the first cut or loss sets
// ssthresh, then additive increase of one MSS per window (acked * mss / cwnd
// per ACK, with a remainder so that small ACKs on a large window add up); an
// ACK grows the window by the share of its bytes its unmarked packets carry
// (acked * (pkts - ce) / pkts: an ACK per packet grows only when unmarked,
// and one that covers many, delayed or folded while it waited for a circuit
// (ack_coalescer.h), grows as their separate ACKs would). A fast loss halves the window
// (once per window, shared with the ECN cut); an RTO sets ssthresh = cwnd / 2
// (unless the window was already reduced for the data in flight) and cwnd
// to the minimum, back to slow start. cwnd stays within [dctcp_min_cwnd_pkts
// * mss, dctcp_max_cwnd_bytes]. alpha starts at dctcp_alpha_init (1.0, as
// Linux: the first cut halves).
//
// REPS "wait to decrease" (dctcp_wtd): SMaRTT, the CC REPS is tuned for,
// ignores isolated marks so that REPS can steer away from a collided path
// before the window pays for it. An EWMA of each ACK's CE fraction (weight
// dctcp_wtd_weight, 1/8) must reach dctcp_wtd_threshold (0.25) before a mark
// may cut. A mark it holds back changes nothing (no cut, no growth, slow
// start continues); alpha is estimated all the same.
//
// Pacing: off by default (pacing_bps() == 0: the NIC's rate and the window
// limit the sender, as DCTCP assumes). With dctcp_pacing, Linux's rule:
// cwnd / srtt times 2 in slow start and 1.2 afterwards, at most host_bw_bps;
// srtt is an EWMA (1/8) of the RTT samples, base_rtt_ns before the first.
//
// PowerTCP and theta-PowerTCP
// ---------------------------
// The third shell of include/lumen/powertcp.h, next to kernel/tcp_powertcp.c
// and bpf/powertcp.bpf.c: it calls the same lumen_ptcp_init,
// lumen_ptcp_ack_process and lumen_ptcp_tx_event (include/lumen/
// powertcp_ack.h), so the per-ACK policy exists once. PowerTCP (INT mode)
// takes the power from the ACK's INT echo, theta-PowerTCP from the RTT
// samples; the window (clamped by the core to [2 MSS, host BDP + beta]) and
// the pacing rate (cwnd / tau) are the core's. Loss and timeouts do not
// change the window, as in the kernel shells (powertcp_ack.h, "Loss and
// recovery"): the queue that caused them shows as power > 1. A new flow
// starts with one host BDP (init_cwnd_pkts is DCTCP's).
//
// HPCC (Y. Li et al., SIGCOMM 2019)
// ----------------------------------
// The same class and core in LUMEN_PTCP_MODE_HPCC (lumen/hpcc.h): it reads
// the ACK's INT echo as PowerTCP does, takes each hop's inflight bytes over
// its BDP, U, and sets the window from a reference window Wc that moves once
// per RTT: Wc / (U / eta) + W_AI when U >= eta (or after max_stage additive
// rounds), Wc + W_AI otherwise. Everything around the law is PowerTCP's: the
// INT history, the RTT fallback when no usable INT arrives for a round, the
// clamps [2 MSS, host BDP + beta], pacing at cwnd / tau, and loss and
// timeouts leave the window alone, as for PowerTCP above. Its own
// parameters are hpcc_eta, hpcc_max_stage and hpcc_wai_bytes; the shared
// ones (ptcp_expected_flows, N of W_AI's default, and ptcp_beta_bytes, the
// ceiling's) are PowerTCP's fields.
//
// TIMELY (R. Mittal et al., SIGCOMM 2015)
// ----------------------------------------
// A rate, not a window, from the RTT's gradient (lumen/timely.h): once per
// completion event (timely_seg_bytes cumulatively acknowledged, or one
// round trip of data, with that ACK's RTT sample) the rate grows by delta
// when the RTT is below T_low or the smoothed gradient is <= 0 (5 delta
// after timely_hai_events such events in a row), and shrinks by beta times
// the gradient when it is positive, or by beta * (1 - T_high / RTT) above
// T_high; it stays within [delta, HostBw], starting at HostBw. pacing_bps() is the rate; the window is the
// core's TCP window, twice the rate times the latest RTT (at least 4 MSS):
// pacing sets the pace while ACKs flow, the window bounds what one rate puts
// in flight when they stop. TIMELY assumes a lossless fabric; lumen-dp's is
// not, so a loss halves the rate once per loss episode. An episode begins
// with on_loss (fast or RTO) while none is open, and ends, as DCTCP's
// reduction, when snd_una passes the snd_nxt of the moment it began: the
// losses of data sent before the cut describe the queue it answered. The
// rate keeps following the RTT within an episode. undo_timeout restores the
// rate an RTO's cut took (not a fast loss's: that one was real) and closes
// the episode; on_idle_restart forgets the RTT history (lumen_timely_restart)
// and keeps the rate.
//
// reTCP (M. K. Mukerjee et al., NSDI 2020)
// ----------------------------------------
// DCTCP as above, plus the circuit-aware jumps of lumen/retcp.h: when the
// circuit to the peer comes up (retcp_prebuffer_ns before it opens), cwnd
// and ssthresh are multiplied by retcp_jump (the circuit's rate over the
// packet network's), and divided by it when it goes; between the jumps
// DCTCP runs unchanged. The signal is on_circuit (the engine's, from the
// gate's schedule: OpticalGate::circuit_window), asked per ACK and at the
// time it returns; no circuit to tell of is the packet network. The paper
// runs the jumps on Reno; DCTCP is lumen-dp's loss- and ECN-based control
// and reacts to neither the circuit nor its end by itself.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "lumen/powertcp_ack.h"
#include "lumen/retcp.h"
#include "lumen/timely.h"

namespace lumen::dp
{

enum class CcAlgorithm : uint8_t {
	kDctcp,
	kPowerTcp, // INT-fed PowerTCP
	kThetaPowerTcp, // RTT-fed theta-PowerTCP
	kHpcc, // INT-fed HPCC, the PowerTCP core's third mode
	kTimely, // RTT-gradient TIMELY
	kRetcp, // DCTCP with reTCP's circuit jumps
};

// "dctcp", "powertcp", "theta_powertcp" (the kernel module's names), "hpcc",
// "timely", "retcp".
const char *cc_algorithm_name(CcAlgorithm a);

struct CcParams {
	CcAlgorithm algorithm = CcAlgorithm::kDctcp;
	// payload bytes per full packet, [64, 65535]; 1440 = a 1500-byte IP
	// packet less IPv4 (20), UDP (8) and the lumen DATA header (32)
	uint32_t mss = 1440;
	uint32_t init_cwnd_pkts = 10; // DCTCP's initial window, [1, 65536]
	// the host's link rate, [1 Mbit/s, 1.6 Tbit/s]: PowerTCP's HostBw (used
	// in whole Mbit/s), DCTCP's pacing cap
	uint64_t host_bw_bps = 25000000000ull;
	// tau: base RTT, 0 or [1 us, 1 s]. PowerTCP: 0 = the minimum RTT
	// observed. DCTCP: only the pacing rate before the first RTT sample.
	uint64_t base_rtt_ns = 20000;

	// DCTCP
	uint32_t dctcp_g_shift = 4; // g = 2^-shift, [0, 16]
	uint32_t dctcp_alpha_init = 65536; // Q16, [0, 1]
	uint32_t dctcp_min_cwnd_pkts = 1; // >= 1
	uint64_t dctcp_max_cwnd_bytes = 1ull << 30; // <= 1 GiB
	bool dctcp_pacing = false;
	bool dctcp_wtd = false; // REPS / SMaRTT wait to decrease
	uint32_t dctcp_wtd_weight = 8192; // Q16, (0, 1]: 1/8
	uint32_t dctcp_wtd_threshold = 16384; // Q16, [0, 1]: 0.25

	// PowerTCP (lumen_ptcp_params; HostBw and tau are the fields above)
	uint32_t ptcp_gamma = LUMEN_PTCP_DEFAULT_GAMMA; // Q16, [0.01, 1]
	uint32_t ptcp_expected_flows = LUMEN_PTCP_DEFAULT_EXPECTED_FLOWS; // N
	uint32_t ptcp_beta_bytes = 0; // 0: HostBw * tau / N

	// HPCC (lumen_hpcc_params; also PowerTCP's fields above but gamma)
	uint32_t hpcc_eta = LUMEN_HPCC_DEFAULT_ETA; // target utilisation, Q16, [0.5, 1]
	uint32_t hpcc_max_stage = LUMEN_HPCC_DEFAULT_MAX_STAGE; // [0, 100]
	uint32_t hpcc_wai_bytes = 0; // W_AI, <= 1 GiB; 0: HostBw * tau * (1 - eta) / N

	// TIMELY (lumen_timely_params; HostBw is host_bw_bps)
	uint64_t timely_t_low_ns = LUMEN_TIMELY_DEFAULT_T_LOW_NS; // [1 us, 1 s]
	uint64_t timely_t_high_ns = LUMEN_TIMELY_DEFAULT_T_HIGH_NS; // (T_low, 1 s]
	uint64_t timely_min_rtt_ns = 0; // 0: the smallest RTT seen, else [1 us, 1 s]
	uint32_t timely_delta_mbps = 0; // additive step; 0: HostBw / 1000
	uint32_t timely_alpha = LUMEN_TIMELY_DEFAULT_ALPHA; // Q16, (0, 1]
	uint32_t timely_beta = LUMEN_TIMELY_DEFAULT_BETA; // Q16, (0, 1]
	uint32_t timely_hai_events = LUMEN_TIMELY_DEFAULT_HAI_EVENTS; // [1, 1000]
	uint32_t timely_seg_bytes = LUMEN_TIMELY_DEFAULT_SEG_BYTES; // per completion event, [1 KiB, 16 MiB]

	// reTCP (lumen_retcp_params; and DCTCP's fields above)
	uint32_t retcp_jump = LUMEN_RETCP_DEFAULT_JUMP; // circuit rate / packet rate, [1, 64]
	uint64_t retcp_prebuffer_ns = 0; // jump up this long before the circuit, [0, 100 ms]

	// An error message naming the first bad field, or "" when the set is
	// usable. Only the fields of the chosen algorithm are checked.
	std::string validate() const;
	// The core's parameter set for PowerTCP, theta-PowerTCP and HPCC
	// (host_bw_bps in Mbit/s, rounded down); the hpcc_* fields only with
	// algorithm = hpcc, the core's defaults otherwise.
	lumen_ptcp_params ptcp_params() const;
	// TIMELY's (host_bw_bps in Mbit/s, rounded down).
	lumen_timely_params timely_params() const;
	// reTCP's.
	lumen_retcp_params retcp_params() const;
};

struct CcAck {
	uint64_t now_ns = 0; // ACK arrival, host clock
	uint32_t acked_pkts = 0; // data packets the receiver got since its last ACK
	uint64_t acked_bytes = 0; // payload bytes newly acknowledged (cum + SACK)
	uint32_t ce_pkts = 0; // of acked_pkts, CE-marked (clamped to acked_pkts)
	uint64_t rtt_ns = 0; // from the echoed timestamp; 0 = no sample
	uint32_t snd_una_bytes = 0; // byte sequence after this ACK (wraps)
	uint32_t snd_nxt_bytes = 0;
	const lumen_int_opt *int_echo = nullptr; // this ACK's INT echo, or none
};

// Observability, per connection. Fields an algorithm has no use for stay 0.
struct CcCounters {
	uint64_t acks = 0; // on_ack calls
	// DCTCP: alpha updates (windows); PowerTCP, HPCC: window updates;
	// TIMELY: completion events (rate updates)
	uint64_t updates = 0;
	uint64_t ecn_cuts = 0; // DCTCP: cwnd * (1 - alpha/2)
	uint64_t wtd_held = 0; // DCTCP: CE ACKs that WTD kept from cutting
	uint64_t losses = 0; // on_loss(now, false)
	uint64_t loss_cuts = 0; // DCTCP, TIMELY: halvings taken for them (TIMELY: RTOs' too)
	uint64_t timeouts = 0; // on_loss(now, true)
	uint64_t undone_timeouts = 0; // undo_timeout: episodes of RTOs found spurious
	uint64_t idle_restarts = 0; // on_idle_restart
	uint64_t circuit_up = 0, circuit_down = 0; // reTCP: jumps up and down
};

class CongestionControl
{
      public:
	virtual ~CongestionControl() = default;
	CongestionControl(const CongestionControl &) = delete;
	CongestionControl &operator=(const CongestionControl &) = delete;

	virtual void on_ack(const CcAck &ack) = 0;
	// fast loss (timeout = false) or RTO (timeout = true)
	virtual void on_loss(uint64_t now_ns, bool timeout) = 0;
	virtual void on_idle_restart(uint64_t now_ns)
	{
		(void)now_ns;
	}
	// The RTOs since snd_una last moved were spurious (an ACK showed that a
	// packet sent before the first of them arrived, Eifel, RFC 3522):
	// restore what they took. Called before that ACK's on_ack. A control
	// whose timeouts take nothing (PowerTCP) has nothing to restore.
	virtual void undo_timeout()
	{
	}
	// The circuit to the peer (reTCP's signal): known, its window [open,
	// close) (the first not yet closed) and the time, all CLOCK_TAI ns (the
	// schedule's); not known: no circuit to tell of. Returns when (TAI) the
	// answer next changes, 0: not before another signal. The engine asks on
	// every ACK and at that time, so a window can change while no ACK
	// comes (on a network of circuits only, the ACKs wait for theirs). A
	// control that follows no circuit ignores it.
	virtual uint64_t on_circuit(bool known, uint64_t tai_ns, uint64_t open_ns, uint64_t close_ns)
	{
		(void)known;
		(void)tai_ns;
		(void)open_ns;
		(void)close_ns;
		return 0;
	}

	uint64_t cwnd_bytes() const
	{
		return cwnd_bytes_;
	}
	// 0 = unpaced
	uint64_t pacing_bps() const
	{
		return pacing_bps_;
	}
	const char *name() const
	{
		return name_;
	}
	const CcCounters &counters() const
	{
		return counters_;
	}

      protected:
	explicit CongestionControl(const char *name) : name_(name)
	{
	}

	uint64_t cwnd_bytes_ = 0;
	uint64_t pacing_bps_ = 0;
	const char *name_;
	CcCounters counters_;
};

// Throws std::invalid_argument(params.validate()) for an unusable set.
std::unique_ptr<CongestionControl> make_cc(const CcParams &params);

class Dctcp final : public CongestionControl
{
      public:
	static constexpr uint32_t kAlphaShift = 20;
	static constexpr uint32_t kAlphaOne = 1u << kAlphaShift; // alpha_q20() of 1.0

	// Throws std::invalid_argument when params.validate() fails.
	// algorithm dctcp, or retcp (DCTCP with reTCP's jumps).
	explicit Dctcp(const CcParams &params);

	void on_ack(const CcAck &ack) override;
	void on_loss(uint64_t now_ns, bool timeout) override;
	void on_idle_restart(uint64_t now_ns) override;
	void undo_timeout() override;
	uint64_t on_circuit(bool known, uint64_t tai_ns, uint64_t open_ns, uint64_t close_ns) override;

	uint32_t alpha_q20() const
	{
		return alpha_;
	}
	uint64_t ssthresh_bytes() const
	{
		return ssthresh_;
	}
	bool in_slow_start() const
	{
		return cwnd_bytes_ < ssthresh_;
	}
	// an ECN cut or loss halving is in force (no cut, no growth)
	bool reducing() const
	{
		return guard_ && hold_growth_;
	}
	uint32_t wtd_avg_q16() const
	{
		return wtd_avg_;
	}
	uint64_t srtt_ns() const
	{
		return srtt_ns_;
	}
	// reTCP: the phase the window is in (lumen_retcp_phase)
	uint32_t circuit_phase() const
	{
		return retcp_.phase;
	}

      private:
	void end_guard(const CcAck &ack);
	void window_account(const CcAck &ack, uint32_t ce);
	bool wtd_allows_cut(const CcAck &ack, uint32_t ce);
	void reduce(uint64_t new_cwnd, bool hold_growth);
	void grow(uint64_t acked);
	void update_pacing();
	uint64_t clamp(uint64_t cwnd) const;

	// parameters, in the units used per ACK
	uint32_t mss_;
	uint32_t g_shift_;
	uint64_t init_cwnd_, min_cwnd_, max_cwnd_;
	uint64_t host_bw_bps_;
	uint64_t base_rtt_ns_;
	bool pacing_, wtd_;
	uint32_t wtd_weight_, wtd_threshold_;

	uint64_t ssthresh_;
	uint32_t alpha_; // Q20
	uint64_t ai_acc_ = 0; // additive increase remainder, bytes * mss
	uint64_t srtt_ns_ = 0;
	uint32_t wtd_avg_ = 0; // Q16
	// the alpha window
	bool have_seq_ = false;
	uint32_t snd_nxt_ = 0; // latest seen
	uint32_t win_end_ = 0;
	uint64_t win_pkts_ = 0, win_ce_ = 0;
	// one reduction per window: no cut until snd_una passes guard_end_
	bool guard_ = false;
	bool guard_end_pending_ = false; // set before any ACK: first snd_nxt
	bool hold_growth_ = false; // CWR / recovery: no growth either (not after RTO)
	uint32_t guard_end_ = 0;
	// undo_timeout: the window and ssthresh before the first RTO since
	// snd_una last moved (Linux's prior_cwnd / prior_ssthresh)
	bool rto_episode_ = false;
	uint64_t prior_cwnd_ = 0, prior_ssthresh_ = 0;
	// reTCP
	bool retcp_on_ = false;
	lumen_retcp_params retcp_params_{};
	lumen_retcp retcp_{};
};

class PowerTcp final : public CongestionControl
{
      public:
	// params.algorithm picks the mode (kPowerTcp: INT, kThetaPowerTcp:
	// RTT, kHpcc: HPCC on INT). Throws std::invalid_argument when
	// params.validate() fails.
	explicit PowerTcp(const CcParams &params);

	void on_ack(const CcAck &ack) override;
	void on_loss(uint64_t now_ns, bool timeout) override;
	void on_idle_restart(uint64_t now_ns) override;

	const lumen_ptcp &state() const
	{
		return st_;
	}
	const lumen_ptcp_params &core_params() const
	{
		return p_;
	}
	// what the last ACK did: LUMEN_PTCP_HELD / _UPDATED_INT / _UPDATED_RTT
	lumen_ptcp_result last_result() const
	{
		return last_result_;
	}
	// how often lumen_ptcp_ack_process / lumen_ptcp_tx_event reported an
	// event (the host-wide counters of the kernel shells, per connection)
	uint64_t event_count(lumen_ptcp_event_bit bit) const
	{
		return bit < LUMEN_PTCP_EVBIT_COUNT ? events_[bit] : 0;
	}

      private:
	void count_events(uint32_t mask);
	void publish();

	lumen_ptcp_params p_;
	lumen_ptcp_mode mode_;
	uint32_t mss_;
	lumen_ptcp st_{};
	bool started_ = false; // sequence space known (first ACK seen)
	uint32_t snd_nxt_ = 0;
	lumen_ptcp_result last_result_ = LUMEN_PTCP_HELD;
	uint64_t events_[LUMEN_PTCP_EVBIT_COUNT] = {};
};

class Timely final : public CongestionControl
{
      public:
	// Throws std::invalid_argument when params.validate() fails or
	// params.algorithm is not kTimely.
	explicit Timely(const CcParams &params);

	void on_ack(const CcAck &ack) override;
	void on_loss(uint64_t now_ns, bool timeout) override;
	void on_idle_restart(uint64_t now_ns) override;
	void undo_timeout() override;

	const lumen_timely &state() const
	{
		return st_;
	}
	const lumen_timely_params &core_params() const
	{
		return p_;
	}
	// the rate in bytes/s (pacing_bps() / 8)
	uint64_t rate_bytes_per_s() const
	{
		return st_.rate;
	}
	// a loss episode is open: no further loss cuts until snd_una passes
	// the snd_nxt of its beginning
	bool in_loss_episode() const
	{
		return st_.in_loss != 0;
	}

      private:
	void publish();

	lumen_timely_params p_;
	uint32_t mss_;
	lumen_timely st_{};
	bool started_ = false; // sequence space known (first ACK seen)
	uint32_t snd_nxt_ = 0; // latest seen
	uint32_t snd_una_ = 0;
	uint32_t episode_end_ = 0; // the loss episode ends when snd_una passes it
	bool episode_end_pending_ = false; // begun before any ACK: the first one's snd_nxt
	bool rto_cut_ = false; // the open episode's cut was an RTO's: undo_timeout may restore it
};

} // namespace lumen::dp
