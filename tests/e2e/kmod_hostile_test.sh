#!/usr/bin/env bash
# tests/e2e/kmod_hostile_test.sh - hostile segments against the module's INT
# hook (kernel/powertcp_int.c, "Trust model"), in a VM that can load it
# (tests/e2e/kmod_vm.sh). Two namespaces joined by a veth carry an idle
# powertcp connection over IPv4 and IPv6; kmod_hostile.py sends crafted
# segments (scapy) as the peer: options of length 0 and 1, options running
# past doff, INT in the last bytes of the header, doff 15 full of NOPs, a bad
# checksum, acks out of window, bad sequence and PAWS, SYN, RST and ACK-less
# segments with echoes, IPv6 extension headers, IPv4 and IPv6 fragments. Each
# case moves exactly its counter, leaves the socket established with its
# window (base_rtt_us is large so that window sits far above its floor),
# and no injected echo is ever applied.
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_require_kmod
ko="$E2E_KO"
e2e_require_tools python3 ethtool insmod rmmod
python3 -c 'import scapy' 2>/dev/null || {
	e2e_log "FAIL: python3-scapy missing (tools/install-deps installs it)"
	exit 1
}

e2e_on_exit "rmmod tcp_powertcp"
insmod "$ko" host_bw_mbps=1000 base_rtt_us=20000
e2e_ns_pair c NC hc0 s NS hs0
ip -n "$NC" addr add 10.77.0.1/24 dev hc0
ip -n "$NS" addr add 10.77.0.2/24 dev hs0
ip -n "$NC" addr add fd77::1/64 dev hc0 nodad
ip -n "$NS" addr add fd77::2/64 dev hs0 nodad
# e2e_link turns rx checksumming off: veth would otherwise mark what it
# forwards as verified, and TCP would take the bad-checksum case

rc=0
python3 "$(dirname "$0")/kmod_hostile.py" "$NC" "$NS" hs0 10.77.0.2 fd77::2 || rc=$?
e2e_check "every hostile-segment case behaved as the trust model says" test "$rc" -eq 0
e2e_check "no per-socket state left after the connections closed" \
	bash -c 'for i in $(seq 50); do ip netns exec "$0" grep -q "^states 0$" /proc/net/powertcp && exit 0; sleep 0.2; done; exit 1' "$NC"
e2e_finish
