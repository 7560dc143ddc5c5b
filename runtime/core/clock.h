// The clocks: the time now as a file or a record writes it, and a steady clock for timing.
#pragma once
#include <string>

namespace lmkit {

// "2026-11-27T16:05:00Z" (UTC, ISO 8601).
std::string utc_timestamp();

// Seconds from a steady clock (differences only: it never jumps with the wall clock).
double steady_seconds();

}  // namespace lmkit
