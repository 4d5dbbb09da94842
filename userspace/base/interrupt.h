// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/interrupt.h - Ctrl-C. Long-running commands install the
// handlers, poll interrupted() in their loops and throw Interrupted, so
// destructors undo what was set up (testbeds, loaded programs) before the
// process exits.
#pragma once

#include "base/error.h"

#include <cstdint>

namespace lumen
{

void install_interrupt_handlers(); // SIGINT, SIGTERM, SIGHUP set the flag
bool interrupted();
void throw_if_interrupted();
// Sleeps up to `ns`, waking early (and throwing Interrupted) on a signal.
void sleep_interruptible_ns(std::uint64_t ns);

} // namespace lumen
