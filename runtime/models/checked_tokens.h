// The models check every call's token ids against the vocabulary (a clear error instead of Torch's
// "index out of range"); on a GPU that check reads a flag back from the device: a synchronisation
// per forward. Loops that checked their whole token stream once beforehand (training, evaluation)
// hold a CheckedTokenStream while they run, and the per-call checks on their thread are skipped.
#pragma once

namespace lmkit {

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
