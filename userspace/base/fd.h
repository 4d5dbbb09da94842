// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/fd.h - a file descriptor that closes itself: one owner,
// movable, never copied.
#pragma once

#include <unistd.h>

namespace lumen
{

class Fd
{
      public:
	Fd() = default;
	explicit Fd(int fd) : fd_(fd)
	{
	}
	Fd(const Fd &) = delete;
	Fd &operator=(const Fd &) = delete;
	Fd(Fd &&o) noexcept : fd_(o.release())
	{
	}
	Fd &operator=(Fd &&o) noexcept
	{
		if (this != &o)
			reset(o.release());
		return *this;
	}
	~Fd()
	{
		reset();
	}

	int get() const
	{
		return fd_;
	}
	bool valid() const
	{
		return fd_ >= 0;
	}
	// Gives the descriptor up without closing it.
	int release()
	{
		int fd = fd_;
		fd_ = -1;
		return fd;
	}
	// Closes the descriptor held (if any) and holds `fd` instead.
	void reset(int fd = -1)
	{
		if (fd_ >= 0)
			::close(fd_);
		fd_ = fd;
	}

      private:
	int fd_ = -1;
};

} // namespace lumen
