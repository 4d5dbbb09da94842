// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/test_refusal.h - what the userspace suites check of a refusal: the
// message of the UsageError a call throws.
#pragma once

#include <string>

#include "base/error.h"

namespace lumen::test
{

// The message of the UsageError that f throws ("" when it throws none).
template <class F> std::string refusal(F &&f)
{
	try {
		f();
	} catch (const UsageError &e) {
		return e.what();
	}
	return "";
}

} // namespace lumen::test
