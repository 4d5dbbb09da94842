/* ack_coalescer.cpp - folding ACKs that wait for the same circuit (ack_coalescer.h). */
#include "transport/ack_coalescer.h"

#include <lumen/dp_ack_coalesce.h>

namespace lumen::dp
{

namespace
{

/* A lumen-dp ACK or NACK's key (destination address, connection id) and
 * type, from the bytes where a well-formed one has them; false for frames
 * too short or not IPv4/UDP. lumen_dp_ack_fold checks the rest. */
bool key_of(const uint8_t *f, uint32_t len, uint64_t *key, uint8_t *type)
{
	if (len < LUMEN_DP_HDR_OFF + LUMEN_DP_COMMON_HLEN || lumen_dp_ip_check(f, len) ||
	    f[LUMEN_DP_IP_PROTO_AT] != LUMEN_DP_IP_PROTO_UDP)
		return false;
	*type = f[LUMEN_DP_TYPE_AT];
	*key = (uint64_t)lumen_dp_get32(f + LUMEN_DP_IP_DST_AT) << 32 | lumen_dp_get32(f + LUMEN_DP_CONN_AT);
	return true;
}

} // namespace

bool AckCoalescer::fold(const uint8_t *f, uint32_t len)
{
	uint64_t key;
	uint8_t type;
	if (!key_of(f, len, &key, &type) || type != LUMEN_DP_ACK)
		return false;
	auto it = q_.find(key);
	if (it == q_.end())
		return false;
	uint16_t dport = lumen_dp_get16(it->second.frame + LUMEN_DP_UDP_DPORT_AT);
	return lumen_dp_ack_fold(it->second.frame, it->second.len, f, len, dport) == LUMEN_DP_FOLDED;
}

void AckCoalescer::queued(uint8_t *f, uint32_t len)
{
	uint64_t key;
	uint8_t type;
	if (!key_of(f, len, &key, &type))
		return;
	if (type == LUMEN_DP_ACK)
		q_[key] = Queued{f, len};
	else if (type == LUMEN_DP_NACK)
		q_.erase(key);
}

void AckCoalescer::left(const uint8_t *f, uint32_t len)
{
	uint64_t key;
	uint8_t type;
	if (!key_of(f, len, &key, &type))
		return;
	auto it = q_.find(key);
	if (it != q_.end() && it->second.frame == f)
		q_.erase(it);
}

} // namespace lumen::dp
