// The log-probability matrix Q of a model on a token stream (SPEC §3; thesis §4.4): row i is
// log P(· | context i) for every context of the stream, in evaluation order (the stream batchified
// into batch_size columns, read in windows of bptt rows with the state carried; row t·B + b of a
// window is position t of column b — with batch_size 1, plain token order). Built in evaluation
// mode on the model's device, in the model's precision, then converted to `dtype`.
//
// PTB's test split gives 82,430 × 10,000 (3.3 GB in float32). For matrices that do not fit,
// logp_singular_values never holds Q: it feeds blocks of rows into a streaming QR (StreamingSvd)
// and returns the singular values of the whole matrix (WikiText-2 test: 245,569 × 33,278).
#pragma once
#include <cstdint>
#include <functional>

#include "runtime/models/language_model.h"

namespace lmkit::analysis {

struct LogpMatrixOptions {
  std::int64_t batch_size = 1;
  std::int64_t bptt = 70;
  std::int64_t max_contexts = -1;              // −1: every context of the stream
  torch::ScalarType dtype = torch::kFloat32;   // of the result
  bool f_logits = false;                       // the head's f(l) instead of log P (heads that have one)
};

// Called with (contexts done, contexts in all).
using MatrixProgress = std::function<void(std::int64_t, std::int64_t)>;

// [contexts, vocab]. UsageError for f_logits on a head without them, or a stream too short.
torch::Tensor logp_matrix(LanguageModel& model, const torch::Tensor& tokens, const LogpMatrixOptions& options,
                          const MatrixProgress& progress = nullptr);

// Singular values of a tall matrix given in blocks of rows, without holding it:
//   R ← R-factor of qr([R; block])   (Householder QR: backward stable, no Gram matrix),
// so that at the end σ(R) = σ([block₁; block₂; …]). Memory: one n×n R plus one block.
class StreamingSvd {
 public:
  StreamingSvd(std::int64_t cols, torch::ScalarType dtype, torch::Device device);
  void add_rows(const torch::Tensor& block);
  torch::Tensor singular_values() const;  // descending, in dtype
  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }

 private:
  std::int64_t cols_;
  torch::ScalarType dtype_;
  torch::Device device_;
  torch::Tensor r_;
  std::int64_t rows_ = 0;
};

struct StreamedSpectrum {
  torch::Tensor singular_values;
  std::int64_t rows = 0, cols = 0;
};

// The singular values of logp_matrix(model, tokens, options), streamed in blocks of block_rows
// rows (0: 2·vocab, which keeps the QR work near that of one SVD of Q).
StreamedSpectrum logp_singular_values(LanguageModel& model, const torch::Tensor& tokens,
                                      const LogpMatrixOptions& options, std::int64_t block_rows = 0,
                                      const MatrixProgress& progress = nullptr);

}  // namespace lmkit::analysis
