#include "runtime/data/batching.h"

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/tensor/tensor_format.h"

namespace lmkit::data {

void check_eval_stream(const torch::Tensor& tokens, std::int64_t batch_size, std::int64_t bptt, const std::string& what) {
  if (!tokens.defined() || tokens.dim() != 1 || tokens.scalar_type() != torch::kInt64) {
    throw UsageError(what + ": tokens must be a 1-D int64 tensor (e.g. corpus.test)");
  }
  if (batch_size < 1) throw UsageError(what + ": batch_size must be ≥ 1, got " + integer_text(batch_size));
  if (bptt < 1) throw UsageError(what + ": bptt must be ≥ 1, got " + integer_text(bptt));
  if (tokens.numel() / batch_size < 2) {
    throw UsageError(what + ": " + integer_text(tokens.numel()) + " tokens are too few for batch_size " +
                     integer_text(batch_size) + " (each column needs at least 2)");
  }
}

torch::Tensor batchify(const torch::Tensor& tokens, std::int64_t bsz) {
  if (tokens.dim() != 1) throw UsageError("batchify expects a 1-D token tensor, got size " + format_shape(tokens.sizes()));
  if (bsz <= 0) throw UsageError("batch size must be positive, got " + integer_text(bsz));
  const std::int64_t nbatch = tokens.size(0) / bsz;
  if (nbatch == 0) {
    throw UsageError("batchify: " + integer_text(tokens.size(0)) + " tokens do not fill one row of " +
                     integer_text(bsz) + " columns");
  }
  return tokens.narrow(0, 0, nbatch * bsz).view({bsz, nbatch}).t().contiguous();
}

Batch get_batch(const torch::Tensor& source, std::int64_t i, std::int64_t seq_len) {
  if (source.dim() != 2) throw UsageError("batches come from a batchified [nbatch, bsz] tensor, got size " + format_shape(source.sizes()));
  const std::int64_t rows = source.size(0);
  if (i < 0 || i >= rows - 1) {
    throw UsageError("batch position " + integer_text(i) + " is outside [0, " + integer_text(rows - 1) + ")");
  }
  if (seq_len <= 0) throw UsageError("sequence length must be positive, got " + integer_text(seq_len));
  const std::int64_t len = std::min(seq_len, rows - 1 - i);
  Batch b;
  b.input = source.narrow(0, i, len);
  b.target = source.narrow(0, i + 1, len);
  b.position = i;
  b.seq_len = len;
  return b;
}

EvalBatches::EvalBatches(torch::Tensor source, std::int64_t bptt) : source_(std::move(source)), bptt_(bptt) {
  if (source_.dim() != 2 || source_.size(0) < 2) {
    throw UsageError("evaluation batches need a batchified [nbatch, bsz] tensor with nbatch ≥ 2, got size " +
                     format_shape(source_.sizes()));
  }
  if (bptt_ <= 0) throw UsageError("bptt must be positive, got " + integer_text(bptt_));
}

bool EvalBatches::next(Batch& batch) {
  if (position_ >= source_.size(0) - 1) return false;
  batch = get_batch(source_, position_, bptt_);
  position_ += bptt_;
  return true;
}

std::int64_t EvalBatches::size() const {
  // ⌈(nbatch − 1) / bptt⌉ without adding bptt, which overflows for a bptt near 2^63.
  const std::int64_t rows = source_.size(0) - 1;
  return rows / bptt_ + (rows % bptt_ != 0 ? 1 : 0);
}

std::optional<Batch> EvalBatches::next_batch() {
  Batch batch;
  if (!next(batch)) return std::nullopt;
  return batch;
}

}  // namespace lmkit::data
