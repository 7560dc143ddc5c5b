// The models check every call's token ids against the vocabulary (a clear error instead of Torch's
// "index out of range"); on a GPU that check reads a flag back from the device: a synchronisation
// per forward. Loops that checked their whole token stream once beforehand (training, evaluation)
// hold a CheckedTokenStream while they run, and the per-call checks on their thread are skipped.
#pragma once
#include <cstdint>
#include <string>

#include "runtime/core/torch.h"

namespace lmkit {

// Token ids must lie in [0, vocab_size): an id outside is a UsageError naming `what`, the id, its
// 1-based position and the vocabulary size (Torch's own message is "index out of range in self").
void check_token_ids(const torch::Tensor& ids, std::int64_t vocab_size, const std::string& what);

class CheckedTokenStream {
 public:
  CheckedTokenStream();
  ~CheckedTokenStream();
  CheckedTokenStream(const CheckedTokenStream&) = delete;
  CheckedTokenStream& operator=(const CheckedTokenStream&) = delete;

  // Whether a CheckedTokenStream is alive on this thread.
  static bool active();
};

}  // namespace lmkit
