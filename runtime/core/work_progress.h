// Progress of long work on a terminal (an analysis over every context, the linear programs of a
// large vocabulary): one line redrawn in place on stderr, at most ~5 times a second, with the
// percentage, the count, the rate and the ETA; nothing when stderr is not a terminal or
// LMKIT_PROGRESS=off. The training loop draws its own bar (training/progress.h).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

namespace lmkit {

// A callback (done, total) for `what` (e.g. "lmkit.analysis.argmaxable") counting `unit`s, or
// nullptr when nothing is to be shown.
std::function<void(std::int64_t, std::int64_t)> work_progress(const std::string& what, const std::string& unit);

// "1:02:03", "4:05" or "12s"; "?" for a negative, NaN or absurd (> 115 days) duration.
std::string format_duration(double seconds);

}  // namespace lmkit
