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
	std::vector<Frame> frames;

      private:
	uint32_t room_;
	Frame buf_;
};

} // namespace lumen::dp::test
