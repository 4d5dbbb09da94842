// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include "base/interrupt.h"

#include <cerrno>
#include <csignal>
#include <time.h>

namespace lumen
{

namespace
{
volatile std::sig_atomic_t interrupt_flag = 0;

void on_interrupt(int)
{
	interrupt_flag = 1;
}
} // namespace

void install_interrupt_handlers()
{
	struct sigaction sa = {};
	sa.sa_handler = on_interrupt;
	sigemptyset(&sa.sa_mask);
	// no SA_RESTART: a blocking wait returns EINTR and its loop re-checks
	for (int sig : {SIGINT, SIGTERM, SIGHUP})
		sigaction(sig, &sa, nullptr);
}

bool interrupted()
{
	return interrupt_flag != 0;
}

void throw_if_interrupted()
{
	if (interrupted())
		throw Interrupted();
}

void sleep_interruptible_ns(std::uint64_t ns)
{
	struct timespec left = {static_cast<time_t>(ns / 1000000000ull), static_cast<long>(ns % 1000000000ull)};
	while (!interrupted() && nanosleep(&left, &left) != 0 && errno == EINTR) {
	}
	throw_if_interrupted();
}

} // namespace lumen
