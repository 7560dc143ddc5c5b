// The log-probability matrix Q of a model on a token stream (SPEC §3; thesis §4.4): row i is
// log P(· | context i) for every context of the stream, in evaluation order (the stream batchified
// into batch_size columns, read in windows of bptt rows with the state carried; row t·B + b of a
// window is position t of column b — with batch_size 1, plain token order). Built in evaluation
// mode on the model's device, in the model's precision, then converted to `dtype`.
//
// PTB's test split gives 82,430 × 10,000 (3.3 GB in float32). logp_singular_values decomposes Q
// as the thesis did, by one thin SVD of the whole matrix (values only, LAPACK ?gesdd in place:
// lapack_svd.h), when Q fits in memory; otherwise it never holds Q: it feeds blocks of rows into a
// streaming QR (StreamingSvd) and returns the singular values of the whole matrix (WikiText-2's
// whole test split: 245,569 × 33,278). On a GPU it never copies Q to the host: the Gram matrix
// G = QᵀQ is accumulated in float64 on the device from the blocks (StreamingGram) and its
// eigenvalues λ give σ = √max(λ, 0). Squaring loses the σ below √ε·σ_max of G's precision, which in
// float64 is ~1e-8·σ_max — far below the Press tolerance (~2e-5·σ_max at PTB's shape, computed with
// float32's ε); the accumulation's error, ~m·ε64·σ_max² ≈ 1e-11·σ_max² at PTB's m, against τ² ≈
// 3.3e-10·σ_max², moves a σ by at most ~1.5% near the threshold (docs/analysis.md; tested: ranks
// equal the SVD's with singular values within 2% of it, where a float32 Gram fails). The methods
// agree to rounding (tested); which one ran is reported, since the thesis notes that a change of
// SVD algorithm moved a rank (SS: 4,640 vs 4,979).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "runtime/config/bound_options.h"
#include "runtime/models/language_model.h"

namespace lmkit::analysis {

struct LogpMatrixOptions {
  std::int64_t batch_size = 1;
  std::int64_t bptt = 70;
  std::int64_t max_contexts = -1;              // −1: every context of the stream
  torch::ScalarType dtype = torch::kFloat32;   // of the result
  bool f_logits = false;                       // the head's f(l) instead of log P (heads that have one)
};
const config::BoundOptions<LogpMatrixOptions>& declared_options(config::Tag<LogpMatrixOptions>);

// Called with (contexts done, contexts in all).
using MatrixProgress = std::function<void(std::int64_t, std::int64_t)>;

// [contexts, vocab]. UsageError for f_logits on a head without them, or a stream too short.
torch::Tensor logp_matrix(LanguageModel& model, const torch::Tensor& tokens, const LogpMatrixOptions& options,
                          const MatrixProgress& progress = nullptr);

// Q's rows without holding Q: consume(block, offset) for each window's [rows, vocab] block, in
// evaluation order (offset: the block's first row). Returns the number of rows.
using LogpBlockConsumer = std::function<void(const torch::Tensor&, std::int64_t)>;
std::int64_t for_each_logp_block(LanguageModel& model, const torch::Tensor& tokens, const LogpMatrixOptions& options,
                                 const MatrixProgress& progress, const LogpBlockConsumer& consume);

// Singular values of a tall matrix given in blocks of rows, without holding it:
//   R ← R-factor of qr([R; block])   (Householder QR: backward stable, no Gram matrix),
// so that at the end σ(R) = σ([block₁; block₂; …]). Memory: one n×n R plus one block.
class StreamingSvd {
 public:
  StreamingSvd(std::int64_t cols, torch::ScalarType dtype, torch::Device device);
  void add_rows(const torch::Tensor& block);
  torch::Tensor singular_values() const;  // descending, in dtype
  const torch::Tensor& r() const { return r_; }  // the R factor so far [min(rows, cols), cols]
  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }

 private:
  std::int64_t cols_;
  torch::ScalarType dtype_;
  torch::Device device_;
  torch::Tensor r_;
  std::int64_t rows_ = 0;
};

// Singular values of a tall matrix given in blocks of rows through its Gram matrix: G += blockᵀ·block
// accumulated in `accumulate` precision (float64: see the header's error bound) on `device`; at
// the end σ = √max(λ(G), 0) from a symmetric eigensolver in that precision. Memory: one n×n G.
// (A float32 accumulation is allowed only to show, in tests, why it must not be used.)
class StreamingGram {
 public:
  StreamingGram(std::int64_t cols, torch::Device device, torch::ScalarType accumulate = torch::kFloat64);
  void add_rows(const torch::Tensor& block);
  torch::Tensor singular_values() const;  // descending, float64 (in `accumulate`)
  std::int64_t rows() const { return rows_; }

 private:
  std::int64_t cols_;
  torch::Tensor gram_;
  std::int64_t rows_ = 0;
};

// The number of rows (contexts) logp_matrix gives for `tokens` under `options`.
std::int64_t logp_matrix_rows(const torch::Tensor& tokens, const LogpMatrixOptions& options);

enum class SpectrumMethod {
  kAuto,         // on a GPU kGram; else kSvd when Q fits in memory_limit_bytes, else kStreamingQr
  kSvd,          // Q whole in host memory, one values-only SVD (the thesis's method)
  kStreamingQr,  // blocks of rows folded into R, then the SVD of R (n × n)
  kGram,         // G = QᵀQ in float64 on the model's device, its eigenvalues (f-logits: of RᵀR)
};
// "auto", "svd", "streaming_qr", "gram"; parse_spectrum_method names the accepted ones on a bad name.
std::string spectrum_method_name(SpectrumMethod method);
SpectrumMethod parse_spectrum_method(const std::string& name);

struct LogpSpectrumOptions {
  SpectrumMethod method = SpectrumMethod::kAuto;
  // kAuto's budget for Q (bytes); 0: 60% of the host memory available when the call starts.
  std::int64_t memory_limit_bytes = 0;
  // kStreamingQr's rows per QR step; 0: 2·vocab, which keeps the QR work near that of one SVD of Q.
  std::int64_t block_rows = 0;
};

struct LogpSpectrum {
  torch::Tensor singular_values;
  std::int64_t rows = 0, cols = 0;
  SpectrumMethod method = SpectrumMethod::kSvd;  // the one that ran (never kAuto)
  std::string description;  // for reports: "thin SVD of Q (LAPACK sgesdd, values only)", ...
};
inline auto declared_result(config::Tag<LogpSpectrum>) {
  return config::result_values(
      config::result_field("sv", &LogpSpectrum::singular_values, "the singular values, descending"),
      config::result_field("rows", &LogpSpectrum::rows, "Q's rows (contexts)"),
      config::result_field("cols", &LogpSpectrum::cols, "Q's columns (words)"),
      config::result_field("method", &LogpSpectrum::description, "the method that ran, for reports"));
}

// The singular values of logp_matrix(model, tokens, options), descending, in options.dtype.
// With kSvd, Q is built in host memory (also for a model on a GPU).
LogpSpectrum logp_singular_values(LanguageModel& model, const torch::Tensor& tokens,
                                  const LogpMatrixOptions& options, const LogpSpectrumOptions& spectrum = {},
                                  const MatrixProgress& progress = nullptr);

// logp_singular_values as one request (lmkit.analysis.logp_svdvals): the matrix's options and the
// spectrum's, with the memory budget in GiB and the method by name.
struct LogpSvdvalsOptions {
  LogpMatrixOptions matrix;
  std::string method = "auto";
  std::optional<double> memory_gb;  // kAuto's budget; nil: 60% of the memory available now
  std::int64_t block_rows = 0;      // 0: 2·vocab
};
const config::BoundOptions<LogpSvdvalsOptions>& declared_options(config::Tag<LogpSvdvalsOptions>);
LogpSpectrum logp_svdvals(LanguageModel& model, const torch::Tensor& tokens, const LogpSvdvalsOptions& options,
                          const MatrixProgress& progress);

}  // namespace lmkit::analysis
