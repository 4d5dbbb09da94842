// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/base/error.h - the two failures every lumen command reports:
// Error (exit status 1) and UsageError (a command-line or input-file
// mistake, exit status 2), and the Interrupted error that Ctrl-C raises.
#pragma once

#include <stdexcept>
#include <string>

namespace lumen
{

// A failure to report as "lumen: <what>" with exit status 1.
struct Error : std::runtime_error {
	using std::runtime_error::runtime_error;
};

// A command-line mistake: reported with a usage hint, exit status 2.
struct UsageError : std::runtime_error {
	using std::runtime_error::runtime_error;
};

// Ctrl-C (base/interrupt.h): thrown from the loop that noticed it, so that
// destructors undo what was set up before the process exits.
struct Interrupted : Error {
	Interrupted() : Error("interrupted")
	{
	}
};

// strerror of an errno value, or of a negative one as libbpf returns them
std::string errno_text(int err);

} // namespace lumen
