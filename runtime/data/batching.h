// Batching of a token stream as in AWD-LSTM (data.batchify, utils.get_batch, evaluate()).
//
// batchify(tokens [n], bsz) → [nbatch, bsz] with nbatch = ⌊n / bsz⌋: column j is the contiguous run
// tokens[j·nbatch, (j+1)·nbatch); the last n mod bsz tokens are dropped. Time runs down the rows, so
// a recurrent model carries its state from one batch to the next within each column.
#pragma once
#include <optional>
#include <string>
#include <cstdint>

#include "runtime/config/declared_result.h"
#include "runtime/core/torch.h"

namespace lmkit::data {

torch::Tensor batchify(const torch::Tensor& tokens, std::int64_t bsz);

// Checks a stream before it is read in evaluation windows: 1-D int64 tokens, batch_size and bptt
// ≥ 1, and at least 2 rows per column. UsageError prefixed with `what` (the caller's name).
void check_eval_stream(const torch::Tensor& tokens, std::int64_t batch_size, std::int64_t bptt, const std::string& what);

// input = source[i, i+len), target = source[i+1, i+1+len) (the next token of each input), both
// [len, bsz], len = min(seq_len, nbatch − 1 − i). `lr_scale` is seq_len / bptt for the training
// sampler (the drawn length, as the reference scales the learning rate) and 1 for evaluation.
struct Batch {
  torch::Tensor input;
  torch::Tensor target;
  std::int64_t position = 0;  // i: the row of `source` where the batch starts (0-based)
  std::int64_t seq_len = 0;   // rows in input/target
  double lr_scale = 1.0;
};
inline auto declared_result(config::Tag<Batch>) {
  return config::result_values(config::result_field("input", &Batch::input, "[len, bsz] token ids"),
                               config::result_field("target", &Batch::target, "the next token of each input"),
                               config::result_field("lr_scale", &Batch::lr_scale, "the learning-rate factor seq_len/bptt"),
                               config::result_field("seq_len", &Batch::seq_len, "len"));
}

// Throws UsageError when source is not 2-D or i is outside [0, nbatch − 1).
Batch get_batch(const torch::Tensor& source, std::int64_t i, std::int64_t seq_len);

// The evaluation order: batches of bptt rows starting at 0, bptt, 2·bptt, …; the last is shorter.
class EvalBatches {
 public:
  EvalBatches(torch::Tensor source, std::int64_t bptt);
  // Fills `batch` with the next batch; false after the last one.
  bool next(Batch& batch);
  EvalBatches& reset() {
    position_ = 0;
    return *this;
  }
  // ⌈(nbatch − 1) / bptt⌉.
  std::int64_t size() const;
  // The next batch; nullopt after the last one.
  std::optional<Batch> next_batch();

 private:
  torch::Tensor source_;
  std::int64_t bptt_;
  std::int64_t position_ = 0;
};

}  // namespace lmkit::data
