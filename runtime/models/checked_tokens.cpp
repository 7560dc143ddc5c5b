#include "runtime/models/checked_tokens.h"

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit {

void check_token_ids(const torch::Tensor& ids, std::int64_t vocab_size, const std::string& what) {
  if (ids.numel() == 0) return;
  const auto outside = (ids < 0).logical_or_(ids >= vocab_size);
  if (!outside.any().item<bool>()) return;
  const auto flat = outside.reshape({-1}).nonzero()[0][0].item<int64_t>();
  const auto id = ids.reshape({-1})[flat].item<int64_t>();
  std::string position;
  for (int64_t d = ids.dim() - 1, rest = flat; d >= 0; --d) {  // flat index → 1-based coordinates
    position = integer_text(rest % ids.size(d) + 1) + (position.empty() ? "" : ", ") + position;
    rest /= ids.size(d);
  }
  throw UsageError("token id " + integer_text(id) + " at [" + position + "] of " + what +
                   " is outside the model's vocabulary of " + integer_text(vocab_size) + " words (ids 0.." +
                   integer_text(vocab_size - 1) + ")");
}

namespace {
thread_local int checked_token_streams = 0;
}  // namespace

CheckedTokenStream::CheckedTokenStream() { ++checked_token_streams; }
CheckedTokenStream::~CheckedTokenStream() { --checked_token_streams; }
bool CheckedTokenStream::active() { return checked_token_streams > 0; }

}  // namespace lmkit
