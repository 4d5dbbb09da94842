// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/dp_test_frames.h - what the lumen-dp engine tests send frames into:
// a FrameSink that keeps every frame an engine builds, in order.
#pragma once

#include <cstdint>
#include <vector>

#include "transport/engine.h"

namespace lumen::dp::test
{

using Frame = std::vector<uint8_t>;

class VecSink : public FrameSink
{
      public:
	explicit VecSink(uint32_t room = 2048) : room_(room)
	{
	}
	uint8_t *next(uint32_t *room) override
	{
		buf_.assign(room_, 0);
		*room = room_;
		return buf_.data();
	}
	void done(uint32_t len) override
	{
		buf_.resize(len);
		frames.push_back(buf_);
	}
	// A NIC that gathers: frames of region gather_region are the headers
	// and the payload read where it lies (0: no zero copy).
	bool attach(uint32_t hdr_len, const uint8_t *payload, uint32_t len, uint32_t region) override
	{
		if (!gather_region || region != gather_region)
			return false;
		buf_.resize(hdr_len);
		buf_.insert(buf_.end(), payload, payload + len);
		frames.push_back(buf_);
		gathered++;
		return true;
	}
	std::vector<Frame> frames;
	uint32_t gather_region = 0;
	uint64_t gathered = 0;

      private:
	uint32_t room_;
	Frame buf_;
};

} // namespace lumen::dp::test
