// The time now as a file or a record writes it: "2026-11-27T16:05:00Z" (UTC, ISO 8601).
#pragma once
#include <string>

namespace lmkit {

std::string utc_timestamp();

}  // namespace lmkit
