// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/messages.cpp - names of the application interface's codes (messages.h).
#include "transport/messages.h"

namespace lumen::dp
{

const char *msg_status_name(MsgStatus s)
{
	switch (s) {
	case MsgStatus::kOk:
		return "ok";
	case MsgStatus::kTruncated:
		return "truncated";
	case MsgStatus::kTimedOut:
		return "timed out";
	case MsgStatus::kAborted:
		return "aborted";
	case MsgStatus::kReset:
		return "reset";
	}
	return "?";
}

const char *post_error_name(PostError e)
{
	switch (e) {
	case PostError::kOk:
		return "ok";
	case PostError::kBadLength:
		return "length out of range (1..2^31)";
	case PostError::kNoBuffer:
		return "no buffer";
	case PostError::kFailed:
		return "the connection has failed";
	}
	return "?";
}

} // namespace lumen::dp
