// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/testbed/delayline.cpp - the delay queue and the forwarding loop of
// `lumen delayline` (delayline.h).
//
// One thread, ppoll on four non-blocking AF_PACKET sockets (IPv4 and ARP on
// each device). A frame's arrival time is the CLOCK_MONOTONIC reading right
// after the recvmmsg that returned it; it leaves at arrival + delay through
// the other device's socket (sendmmsg, PACKET_QDISC_BYPASS: straight into
// the veth, whose peer receives it). The sleep until the next release is a
// ppoll timeout with the timer slack set to 1 ns (the default 50 us slack
// would add up to 50 us to every release).
#include "testbed/delayline.h"

#include "base/error.h"
#include "base/interrupt.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

namespace lumen
{

// ---------------------------------------------------------------------
// DelayQueue

struct DelayQueue::Record {
	std::uint64_t release_ns;
	std::uint32_t len;
	std::uint32_t size; // header + padded frame: how far the next record is
};

namespace
{

std::size_t round_up8(std::size_t n)
{
	return (n + 7) & ~std::size_t(7);
}

} // namespace

DelayQueue::DelayQueue(std::size_t capacity_bytes) : capacity_(capacity_bytes & ~std::size_t(7))
{
	static_assert(sizeof(Record) == kRecordHeader);
	if (capacity_ < 4096)
		throw Error("delay queue: " + std::to_string(capacity_bytes) + " bytes is below the minimum of 4096");
	// default-initialised: pages are committed only when the ring reaches them
	ring_.reset(new std::uint8_t[capacity_]);
}

DelayQueue::Record *DelayQueue::record_at(std::size_t offset) const
{
	return reinterpret_cast<Record *>(ring_.get() + offset);
}

// Finds `need` contiguous bytes at the write end, wrapping to offset 0 when
// the end of the ring is too short (that end is wasted until the reader
// passes it).
bool DelayQueue::reserve(std::size_t need, std::size_t *offset)
{
	if (queued_ == 0) {
		head_ = tail_ = 0;
		wrapped_ = false;
		used_ = 0;
	}
	if (!wrapped_) {
		if (capacity_ - tail_ >= need) {
			*offset = tail_;
			return true;
		}
		if (head_ < need)
			return false;
		used_ += capacity_ - tail_; // the wasted end
		wrap_at_ = tail_;
		wrapped_ = true;
		tail_ = 0;
		*offset = 0;
		return true;
	}
	if (head_ - tail_ < need)
		return false;
	*offset = tail_;
	return true;
}

bool DelayQueue::push(std::uint64_t release_ns, std::span<const std::uint8_t> frame)
{
	const std::size_t need = kRecordHeader + round_up8(frame.size());
	std::size_t offset = 0;
	if (release_ns < last_release_)
		throw Error("delay queue: release times must not decrease");
	if (need > capacity_ || !reserve(need, &offset)) {
		dropped_++;
		dropped_bytes_ += frame.size();
		return false;
	}
	Record *r = record_at(offset);
	r->release_ns = release_ns;
	r->len = static_cast<std::uint32_t>(frame.size());
	r->size = static_cast<std::uint32_t>(need);
	std::memcpy(ring_.get() + offset + kRecordHeader, frame.data(), frame.size());
	tail_ = offset + need;
	used_ += need;
	max_used_ = std::max(max_used_, used_);
	last_release_ = release_ns;
	queued_++;
	pushed_++;
	return true;
}

bool DelayQueue::empty() const
{
	return queued_ == 0;
}

std::uint64_t DelayQueue::front_release_ns() const
{
	return record_at(head_)->release_ns;
}

std::span<const std::uint8_t> DelayQueue::front() const
{
	return {ring_.get() + head_ + kRecordHeader, record_at(head_)->len};
}

void DelayQueue::pop()
{
	if (queued_ == 0)
		throw Error("delay queue: pop() of an empty queue");
	const std::size_t size = record_at(head_)->size;
	head_ += size;
	used_ -= size;
	queued_--;
	if (wrapped_ && head_ == wrap_at_) {
		used_ -= capacity_ - wrap_at_;
		head_ = 0;
		wrapped_ = false;
	}
}

std::size_t DelayQueue::capacity() const
{
	return capacity_;
}

std::size_t DelayQueue::used_bytes() const
{
	return queued_ == 0 ? 0 : used_;
}

std::uint64_t DelayQueue::queued_frames() const
{
	return queued_;
}

std::uint64_t DelayQueue::pushed() const
{
	return pushed_;
}

std::uint64_t DelayQueue::dropped() const
{
	return dropped_;
}

std::uint64_t DelayQueue::dropped_bytes() const
{
	return dropped_bytes_;
}

std::size_t DelayQueue::max_used_bytes() const
{
	return max_used_;
}

// ---------------------------------------------------------------------
// the forwarding loop

namespace
{

using nlohmann::json;

constexpr std::size_t kBatch = 64; // frames per recvmmsg / sendmmsg
constexpr std::size_t kFrameBuffer = 9216; // larger frames are dropped (offloads are off: at most MTU + 14)
constexpr int kSocketBuffer = 32 << 20; // absorbs bursts while the loop sends
constexpr std::uint64_t kStatsPeriodNs = 500000000;

std::uint64_t mono_ns()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return std::uint64_t(ts.tv_sec) * 1000000000ull + std::uint64_t(ts.tv_nsec);
}

class Socket
{
      public:
	Socket() = default;
	Socket(const Socket &) = delete;
	Socket &operator=(const Socket &) = delete;
	~Socket()
	{
		if (fd_ >= 0)
			::close(fd_);
	}

	// A raw packet socket that receives `protocol` frames arriving on dev
	// (protocol handlers: after tc ingress) and sends straight to dev.
	void open(const std::string &dev, std::uint16_t protocol)
	{
		const unsigned ifindex = ::if_nametoindex(dev.c_str());
		if (ifindex == 0)
			throw Error("no device " + dev + " in this network namespace");
		if (!(device_flags(dev) & IFF_UP))
			throw Error("device " + dev + " is down ('ip link set " + dev + " up' first)");
		// protocol 0 until bound: receive nothing from other devices meanwhile
		fd_ = ::socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd_ < 0)
			throw Error("AF_PACKET socket: " + errno_text(errno) + " (needs CAP_NET_RAW)");
		int bypass = 1, size = kSocketBuffer;
		if (::setsockopt(fd_, SOL_PACKET, PACKET_QDISC_BYPASS, &bypass, sizeof(bypass)) != 0 ||
		    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) != 0 ||
		    ::setsockopt(fd_, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)) != 0)
			throw Error("socket options on " + dev + ": " + errno_text(errno));
		struct sockaddr_ll addr = {};
		addr.sll_family = AF_PACKET;
		addr.sll_protocol = htons(protocol);
		addr.sll_ifindex = static_cast<int>(ifindex);
		if (::bind(fd_, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0)
			throw Error("bind to " + dev + ": " + errno_text(errno));
	}

	int fd() const
	{
		return fd_;
	}

      private:
	// SIOCGIFFLAGS, not /sys: sysfs shows the namespace it was mounted in
	static unsigned device_flags(const std::string &dev)
	{
		struct ifreq req = {};
		std::snprintf(req.ifr_name, sizeof(req.ifr_name), "%s", dev.c_str());
		int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			throw Error("socket: " + errno_text(errno));
		const int rc = ::ioctl(fd, SIOCGIFFLAGS, &req);
		::close(fd);
		if (rc != 0)
			throw Error("flags of " + dev + ": " + errno_text(errno));
		return static_cast<unsigned short>(req.ifr_flags);
	}

	int fd_ = -1;
};

// What one direction counted; `dropped_full` is the queue's.
struct DirectionCounters {
	std::uint64_t frames_out = 0, bytes_out = 0;
	std::uint64_t dropped_oversize = 0, send_errors = 0;
};

// One direction: frames from `from` (its IPv4 and ARP sockets) wait in the
// queue, then leave through the other device's IPv4 socket.
struct Direction {
	std::string from, to;
	Socket rx_ip, rx_arp;
	const Socket *tx = nullptr;
	DelayQueue queue;
	DirectionCounters counters;

	explicit Direction(std::size_t queue_bytes) : queue(queue_bytes)
	{
	}
};

// Raised when a socket reports its device down or gone.
struct DeviceGone {
	std::string dev;
};

class Receiver
{
      public:
	Receiver() : buffers_(kBatch * kFrameBuffer)
	{
		for (std::size_t i = 0; i < kBatch; i++) {
			iov_[i] = {buffers_.data() + i * kFrameBuffer, kFrameBuffer};
			msgs_[i] = {};
			msgs_[i].msg_hdr.msg_iov = &iov_[i];
			msgs_[i].msg_hdr.msg_iovlen = 1;
		}
	}

	// Reads what is waiting (at most a few batches, so releases are not
	// held up) into the direction's queue.
	void drain(int fd, Direction &d, std::uint64_t delay_ns)
	{
		for (int round = 0; round < 4; round++) {
			int n = ::recvmmsg(fd, msgs_, kBatch, MSG_DONTWAIT, nullptr);
			if (n < 0) {
				if (errno == EAGAIN || errno == EINTR)
					return;
				if (errno == ENETDOWN || errno == ENODEV || errno == ENXIO)
					throw DeviceGone{d.from};
				throw Error("receive on " + d.from + ": " + errno_text(errno));
			}
			const std::uint64_t release = mono_ns() + delay_ns;
			for (int i = 0; i < n; i++)
				enqueue(msgs_[i], buffers_.data() + std::size_t(i) * kFrameBuffer, release, d);
			if (std::size_t(n) < kBatch)
				return;
		}
	}

      private:
	static void enqueue(mmsghdr &m, const std::uint8_t *data, std::uint64_t release, Direction &d)
	{
		const bool truncated = (m.msg_hdr.msg_flags & MSG_TRUNC) != 0;
		m.msg_hdr.msg_flags = 0;
		if (truncated) {
			d.counters.dropped_oversize++;
			return;
		}
		d.queue.push(release, {data, m.msg_len});
	}

	std::vector<std::uint8_t> buffers_;
	iovec iov_[kBatch];
	mmsghdr msgs_[kBatch];
};

// Sends every frame whose release time has come; returns whether any was.
bool release_due(Direction &d, std::uint64_t now)
{
	bool any = false;
	while (!d.queue.empty() && d.queue.front_release_ns() <= now) {
		iovec iov[kBatch];
		mmsghdr msgs[kBatch] = {};
		std::size_t n = 0;
		// popped frames stay readable until the next push (none happens here)
		while (n < kBatch && !d.queue.empty() && d.queue.front_release_ns() <= now) {
			std::span<const std::uint8_t> f = d.queue.front();
			iov[n] = {const_cast<std::uint8_t *>(f.data()), f.size()};
			msgs[n].msg_hdr.msg_iov = &iov[n];
			msgs[n].msg_hdr.msg_iovlen = 1;
			d.queue.pop();
			n++;
		}
		std::size_t done = 0;
		while (done < n) {
			int sent = ::sendmmsg(d.tx->fd(), msgs + done, static_cast<unsigned>(n - done), 0);
			if (sent < 0 && errno == EINTR)
				continue;
			if (sent < 0 && (errno == ENETDOWN || errno == ENODEV || errno == ENXIO))
				throw DeviceGone{d.to};
			if (sent < 0) { // ENOBUFS, EAGAIN: the peer's backlog is full; this frame is lost
				d.counters.send_errors++;
				done++;
				continue;
			}
			for (std::size_t i = done; i < done + std::size_t(sent); i++)
				d.counters.bytes_out += iov[i].iov_len;
			d.counters.frames_out += std::uint64_t(sent);
			done += std::size_t(sent);
		}
		any = true;
	}
	return any;
}

json direction_json(const Direction &d)
{
	return json{{"from", d.from},
		    {"to", d.to},
		    {"frames_in", d.queue.pushed()},
		    {"frames_out", d.counters.frames_out},
		    {"bytes_out", d.counters.bytes_out},
		    {"queued_frames", d.queue.queued_frames()},
		    {"queue_bytes", d.queue.used_bytes()},
		    {"queue_max_bytes", d.queue.max_used_bytes()},
		    {"queue_capacity", d.queue.capacity()},
		    {"dropped_full", d.queue.dropped()},
		    {"dropped_oversize", d.counters.dropped_oversize},
		    {"send_errors", d.counters.send_errors}};
}

double seconds(const timeval &tv)
{
	return double(tv.tv_sec) + double(tv.tv_usec) / 1e6;
}

void write_stats(const DelayLineOptions &o, const Direction &ab, const Direction &ba, const std::string &state)
{
	if (o.stats_path.empty())
		return;
	struct rusage ru = {};
	::getrusage(RUSAGE_SELF, &ru);
	json doc = {{"pid", ::getpid()},
		    {"state", state},
		    {"dev_a", o.dev_a},
		    {"dev_b", o.dev_b},
		    {"delay_ns", o.delay_ns},
		    {"updated_ns", mono_ns()},
		    {"cpu_user_s", seconds(ru.ru_utime)},
		    {"cpu_sys_s", seconds(ru.ru_stime)},
		    {"directions", json::array({direction_json(ab), direction_json(ba)})}};
	const std::string tmp = o.stats_path + ".tmp";
	FILE *f = std::fopen(tmp.c_str(), "w");
	if (!f)
		return; // counters are a report, not the job: keep forwarding
	const std::string text = doc.dump(1, '\t') + "\n";
	const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
	if (std::fclose(f) == 0 && ok)
		::rename(tmp.c_str(), o.stats_path.c_str());
}

struct timespec timeout_until(std::uint64_t deadline, std::uint64_t now)
{
	const std::uint64_t left = deadline > now ? deadline - now : 0;
	return {static_cast<time_t>(left / 1000000000ull), static_cast<long>(left % 1000000000ull)};
}

std::uint64_t next_deadline(const Direction &ab, const Direction &ba, std::uint64_t stats_due)
{
	std::uint64_t deadline = stats_due;
	for (const Direction *d : {&ab, &ba})
		if (!d->queue.empty())
			deadline = std::min(deadline, d->queue.front_release_ns());
	return deadline;
}

// The signals that stop the loop are blocked except inside ppoll, so one
// that arrives between two checks is never slept through.
sigset_t block_stop_signals()
{
	install_interrupt_handlers();
	sigset_t stop, old;
	sigemptyset(&stop);
	for (int sig : {SIGINT, SIGTERM, SIGHUP})
		sigaddset(&stop, sig);
	sigprocmask(SIG_BLOCK, &stop, &old);
	for (int sig : {SIGINT, SIGTERM, SIGHUP})
		sigdelset(&old, sig);
	return old;
}

void forward(const DelayLineOptions &o, Direction &ab, Direction &ba)
{
	const sigset_t wait_mask = block_stop_signals();
	Receiver receiver;
	struct pollfd fds[4] = {{ab.rx_ip.fd(), POLLIN, 0},
				{ab.rx_arp.fd(), POLLIN, 0},
				{ba.rx_ip.fd(), POLLIN, 0},
				{ba.rx_arp.fd(), POLLIN, 0}};
	Direction *owner[4] = {&ab, &ab, &ba, &ba};
	std::uint64_t stats_due = mono_ns() + kStatsPeriodNs;
	while (!interrupted()) {
		std::uint64_t now = mono_ns();
		release_due(ab, now);
		release_due(ba, now);
		if (now >= stats_due) {
			write_stats(o, ab, ba, "running");
			stats_due = now + kStatsPeriodNs;
		}
		const struct timespec timeout = timeout_until(next_deadline(ab, ba, stats_due), mono_ns());
		int ready = ::ppoll(fds, 4, &timeout, &wait_mask);
		if (ready < 0 && errno != EINTR)
			throw Error(std::string("ppoll: ") + errno_text(errno));
		for (int i = 0; i < 4 && ready > 0; i++) {
			if (fds[i].revents & (POLLERR | POLLHUP | POLLNVAL))
				throw DeviceGone{owner[i]->from};
			if (fds[i].revents & POLLIN)
				receiver.drain(fds[i].fd, *owner[i], o.delay_ns);
		}
	}
}

void open_direction(Direction &d, const std::string &from, const std::string &to, const Socket &tx)
{
	d.from = from;
	d.to = to;
	d.rx_ip.open(from, ETH_P_IP);
	d.rx_arp.open(from, ETH_P_ARP);
	d.tx = &tx;
}

} // namespace

int run_delay_line(const DelayLineOptions &o)
{
	if (o.dev_a == o.dev_b)
		throw UsageError("the two devices must differ (" + o.dev_a + ")");
	// without this every ppoll sleep may end up to 50 us late
	if (::prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0) != 0)
		throw Error(std::string("prctl(PR_SET_TIMERSLACK): ") + errno_text(errno));
	Direction ab(o.queue_bytes), ba(o.queue_bytes);
	// each device's IPv4 socket also sends what the other direction releases
	open_direction(ab, o.dev_a, o.dev_b, ba.rx_ip);
	open_direction(ba, o.dev_b, o.dev_a, ab.rx_ip);
	write_stats(o, ab, ba, "running"); // also says: ready
	std::fprintf(stderr, "lumen delayline: %s <-> %s, %.1f us each way, queue %zu bytes each way\n",
		     o.dev_a.c_str(), o.dev_b.c_str(), double(o.delay_ns) / 1e3, o.queue_bytes);
	try {
		forward(o, ab, ba);
	} catch (const DeviceGone &gone) {
		write_stats(o, ab, ba, "stopped: " + gone.dev + " went down or away");
		std::fprintf(stderr, "lumen delayline: %s went down or away: stopping\n", gone.dev.c_str());
		return 0;
	}
	write_stats(o, ab, ba, "stopped by a signal");
	std::fprintf(stderr, "lumen delayline: stopped by a signal\n");
	return 0;
}

} // namespace lumen
