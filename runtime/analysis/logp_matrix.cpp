#include "runtime/analysis/logp_matrix.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/analysis/lapack_svd.h"
#include "runtime/analysis/matrix_rank.h"
#include "runtime/core/host_memory.h"
#include "runtime/core/error.h"
#include "runtime/core/interruption.h"
#include "runtime/core/number_text.h"
#include "runtime/data/batching.h"
#include "runtime/heads/head_registry.h"
#include "runtime/tensor/dtype_option.h"
#include "runtime/tensor/tensor_format.h"

namespace lmkit::analysis {
namespace {

// Calls consume(rows, offset) for each window's [rows, vocab] block, in evaluation order, until
// logp_matrix_rows(tokens, o) rows were produced; offset is the block's first row in Q.
template <typename Consume>
std::int64_t for_each_window(LanguageModel& model, const torch::Tensor& tokens, const LogpMatrixOptions& o,
                             const MatrixProgress& progress, Consume&& consume) {
  const std::int64_t wanted = logp_matrix_rows(tokens, o);
  check_token_ids(tokens, model->vocab_size(), "the tokens");
  if (o.f_logits) {
    auto probe = model->head->f_logits(torch::zeros({1, model->decoder().weight.size(1)}, model->decoder().weight.options()),
                                       model->decoder());
    if (!probe.defined()) {
      throw UsageError("logp_matrix: the " + model->head->kind() + " head has no f-logits (only heads of the form "
                       "log_softmax(f(l)) do: " + head_kinds_with(&HeadCapabilities::pointwise) + ")");
    }
  }
  model->eval();
  torch::NoGradGuard no_grad;
  const auto device = model->embedding().device();
  const auto source = data::batchify(tokens, o.batch_size).to(device);
  data::EvalBatches batches(source, o.bptt);
  auto hidden = model->init_hidden(o.batch_size);
  data::Batch batch;
  std::int64_t done = 0;
  InterruptibleScope interruptible;
  while (done < wanted && batches.next(batch)) {
    interruptible.poll("logp_matrix");
    auto encoded = model->encode(batch.input, hidden);
    hidden = detach_state(encoded.state);
    torch::Tensor rows = o.f_logits ? model->head->f_logits(encoded.output, model->decoder())
                                    : model->head->log_probs(encoded.output, model->decoder());
    if (rows.size(0) > wanted - done) rows = rows.narrow(0, 0, wanted - done);
    consume(rows, done);
    done += rows.size(0);
    if (progress) progress(done, wanted);
  }
  if (done != wanted) {
    throw std::logic_error("logp_matrix: the stream gave " + integer_text(done) + " contexts, not " +
                           integer_text(wanted));
  }
  return done;
}

// Q whole, [rows, vocab] in o.dtype, allocated once and filled window by window (no second copy).
torch::Tensor filled_matrix(LanguageModel& model, const torch::Tensor& tokens, const LogpMatrixOptions& o,
                            torch::Device device, const MatrixProgress& progress) {
  const auto rows = logp_matrix_rows(tokens, o);
  auto q = torch::empty({rows, model->vocab_size()}, torch::TensorOptions().dtype(o.dtype).device(device));
  for_each_window(model, tokens, o, progress,
                  [&](const torch::Tensor& block, std::int64_t offset) { q.narrow(0, offset, block.size(0)).copy_(block); });
  return q;
}

std::int64_t element_size(torch::ScalarType dtype) { return static_cast<std::int64_t>(c10::elementSize(dtype)); }

}  // namespace

std::int64_t logp_matrix_rows(const torch::Tensor& tokens, const LogpMatrixOptions& o) {
  data::check_eval_stream(tokens, o.batch_size, o.bptt, "logp_matrix");
  if (o.max_contexts == 0 || o.max_contexts < -1) {
    throw UsageError("logp_matrix: max_contexts must be ≥ 1, or −1 for every context; got " +
                     integer_text(o.max_contexts));
  }
  if (o.dtype != torch::kFloat32 && o.dtype != torch::kFloat64) {
    throw UsageError("logp_matrix: dtype must be float32 or float64, got " + dtype_name(o.dtype));
  }
  const std::int64_t available = (tokens.numel() / o.batch_size - 1) * o.batch_size;
  return o.max_contexts < 0 ? available : std::min(o.max_contexts, available);
}

std::int64_t for_each_logp_block(LanguageModel& model, const torch::Tensor& tokens, const LogpMatrixOptions& options,
                                 const MatrixProgress& progress, const LogpBlockConsumer& consume) {
  return for_each_window(model, tokens, options, progress, consume);
}

torch::Tensor logp_matrix(LanguageModel& model, const torch::Tensor& tokens, const LogpMatrixOptions& options,
                          const MatrixProgress& progress) {
  return filled_matrix(model, tokens, options, model->embedding().device(), progress);
}

std::string spectrum_method_name(SpectrumMethod method) {
  switch (method) {
    case SpectrumMethod::kAuto: return "auto";
    case SpectrumMethod::kSvd: return "svd";
    case SpectrumMethod::kStreamingQr: return "streaming_qr";
    case SpectrumMethod::kGram: return "gram";
  }
  return "?";
}

SpectrumMethod parse_spectrum_method(const std::string& name) {
  for (auto method : {SpectrumMethod::kAuto, SpectrumMethod::kSvd, SpectrumMethod::kStreamingQr, SpectrumMethod::kGram}) {
    if (spectrum_method_name(method) == name) return method;
  }
  throw UsageError("unknown spectrum method '" + name + "' (known: auto, svd, streaming_qr, gram)");
}

StreamingGram::StreamingGram(std::int64_t cols, torch::Device device, torch::ScalarType accumulate) : cols_(cols) {
  if (cols < 1) throw UsageError("StreamingGram: the matrix needs at least one column");
  if (accumulate != torch::kFloat32 && accumulate != torch::kFloat64) {
    throw UsageError("StreamingGram: the accumulation must be float64 (or float32, for comparison)");
  }
  gram_ = torch::zeros({cols, cols}, torch::TensorOptions().dtype(accumulate).device(device));
}

void StreamingGram::add_rows(const torch::Tensor& block) {
  if (block.dim() != 2 || block.size(1) != cols_) {
    throw UsageError("StreamingGram: a block must be [rows, " + integer_text(cols_) + "]");
  }
  if (block.size(0) == 0) return;
  const auto rows = block.to(gram_.device(), gram_.scalar_type());
  gram_.addmm_(rows.t(), rows);
  rows_ += block.size(0);
}

torch::Tensor StreamingGram::singular_values() const {
  if (rows_ == 0) throw UsageError("StreamingGram: no rows were added");
  // G is symmetric up to the rounding of two GEMM orders; eigvalsh reads its lower triangle.
  const auto eigenvalues = torch::linalg_eigvalsh(gram_, "L");  // ascending
  return eigenvalues.clamp_min(0).sqrt().flip({0});
}

StreamingSvd::StreamingSvd(std::int64_t cols, torch::ScalarType dtype, torch::Device device)
    : cols_(cols), dtype_(dtype), device_(device) {
  if (cols < 1) throw UsageError("StreamingSvd: the matrix needs at least one column");
  if (dtype != torch::kFloat32 && dtype != torch::kFloat64) throw UsageError("StreamingSvd: dtype must be float32 or float64");
  r_ = torch::zeros({0, cols}, torch::TensorOptions().dtype(dtype).device(device));
}

void StreamingSvd::add_rows(const torch::Tensor& block) {
  if (block.dim() != 2 || block.size(1) != cols_) {
    throw UsageError("StreamingSvd: a block must be [rows, " + integer_text(cols_) + "]");
  }
  if (block.size(0) == 0) return;
  auto stacked = torch::cat({r_, block.to(device_, dtype_)}, 0);
  r_ = std::get<1>(torch::linalg_qr(stacked, "r"));
  rows_ += block.size(0);
}

torch::Tensor StreamingSvd::singular_values() const {
  if (rows_ == 0) throw UsageError("StreamingSvd: no rows were added");
  return svdvals(r_);
}

LogpSpectrum logp_singular_values(LanguageModel& model, const torch::Tensor& tokens, const LogpMatrixOptions& options,
                                  const LogpSpectrumOptions& spectrum, const MatrixProgress& progress) {
  const auto vocab = model->vocab_size();
  const auto rows = logp_matrix_rows(tokens, options);
  if (spectrum.memory_limit_bytes < 0 || spectrum.block_rows < 0) {
    throw UsageError("logp spectrum: memory_limit_bytes and block_rows must be ≥ 0 (0: the default)");
  }
  auto method = spectrum.method;
  const auto device = model->embedding().device();
  if (method == SpectrumMethod::kAuto && device.is_cuda()) method = SpectrumMethod::kGram;
  if (method == SpectrumMethod::kAuto) {
    const double budget = spectrum.memory_limit_bytes > 0 ? static_cast<double>(spectrum.memory_limit_bytes)
                                                          : 0.6 * static_cast<double>(available_memory_bytes());
    // As doubles: rows · vocab · 8 can pass 2^63 for absurd streams.
    const double needed = static_cast<double>(rows) * static_cast<double>(vocab) * static_cast<double>(element_size(options.dtype));
    method = needed <= budget ? SpectrumMethod::kSvd : SpectrumMethod::kStreamingQr;
  }
  LogpSpectrum result;
  result.rows = rows;
  result.cols = vocab;
  result.method = method;
  if (method == SpectrumMethod::kSvd) {
    result.singular_values = svdvals_destroying(filled_matrix(model, tokens, options, torch::kCPU, progress));
    result.description = "thin SVD of Q (" + destroying_svd_routine(options.dtype) + ", values only)";
    return result;
  }
  if (method == SpectrumMethod::kGram && !options.f_logits) {
    // Q's blocks stay on the device; the GEMMs run on blocks of at least a few thousand rows.
    const auto block_rows = spectrum.block_rows > 0 ? spectrum.block_rows : std::max<std::int64_t>(4096, vocab / 4);
    StreamingGram gram(vocab, device);
    std::vector<torch::Tensor> pending;
    std::int64_t pending_rows = 0;
    auto flush = [&] {
      if (pending.empty()) return;
      gram.add_rows(pending.size() == 1 ? pending[0] : torch::cat(pending, 0));
      pending.clear();
      pending_rows = 0;
    };
    for_each_window(model, tokens, options, progress, [&](const torch::Tensor& block, std::int64_t) {
      pending.push_back(block.to(options.dtype));
      pending_rows += block.size(0);
      if (pending_rows >= block_rows) flush();
    });
    flush();
    result.singular_values = gram.singular_values().to(options.dtype);
    result.description = "eigenvalues of the Gram matrix QᵀQ accumulated in float64 on " + device.str() +
                         " (blocks of " + integer_text(block_rows) + " rows), σ = √λ";
    return result;
  }
  const auto block_rows = spectrum.block_rows > 0 ? spectrum.block_rows : 2 * vocab;
  StreamingSvd svd(vocab, options.dtype, device);
  std::vector<torch::Tensor> pending;
  std::int64_t pending_rows = 0;
  auto flush = [&] {
    if (pending.empty()) return;
    svd.add_rows(torch::cat(pending, 0));
    pending.clear();
    pending_rows = 0;
  };
  for_each_window(model, tokens, options, progress, [&](const torch::Tensor& block, std::int64_t) {
    pending.push_back(block.to(options.dtype));
    pending_rows += block.size(0);
    if (pending_rows >= block_rows) flush();
  });
  flush();
  if (method == SpectrumMethod::kGram) {
    // f-logits have both signs and no common offset: their Gram matrix is formed from R (n × n,
    // backward stable), whose Gram equals Q's, in float64.
    StreamingGram gram(vocab, device);
    gram.add_rows(svd.r());
    result.singular_values = gram.singular_values().to(options.dtype);
    result.description = "streaming QR of Q in blocks of " + integer_text(block_rows) +
                         " rows, then the eigenvalues of RᵀR in float64 on " + device.str() + ", σ = √λ";
    return result;
  }
  result.singular_values = svd.singular_values();
  result.description = "streaming QR of Q in blocks of " + integer_text(block_rows) + " rows, then the SVD of R";
  return result;
}

}  // namespace lmkit::analysis

namespace lmkit::analysis {

const config::BoundOptions<LogpMatrixOptions>& declared_options(config::Tag<LogpMatrixOptions>) {
  using O = LogpMatrixOptions;
  using config::Range;
  static const config::BoundOptions<O> options(
      "logp_matrix",
      {{"batch_size", &O::batch_size, Range::at_least(1), "columns the stream is batchified into (1: plain token order)"},
       {"bptt", &O::bptt, Range::at_least(1), "rows per evaluation window"},
       {"max_contexts", &O::max_contexts, Range::at_least(-1), "the first contexts only (−1: all)"},
       float_dtype_option("dtype", &O::dtype, "the matrix's dtype"),
       {"f_logits", &O::f_logits, "the head's transformed logits f(l) instead of log P (heads of the form log_softmax(f(l)))"}});
  return options;
}

const config::BoundOptions<LogpSvdvalsOptions>& declared_options(config::Tag<LogpSvdvalsOptions>) {
  using O = LogpSvdvalsOptions;
  using config::Range;
  static const config::BoundOptions<O> options("logp_svdvals", [] {
    auto list = config::lifted(&O::matrix);
    list.push_back({"method", &O::method, config::OneOf{{"auto", "svd", "streaming_qr", "gram"}},
                    "svd: Q whole in host memory, one values-only SVD (the thesis's method); streaming_qr: blocks of "
                    "rows folded into a QR's R, then the SVD of R; gram: QᵀQ in float64 on the model's device, "
                    "σ = √λ (f-logits: RᵀR of the streaming QR), Q never on the host; auto: gram on a GPU, else "
                    "svd when Q fits in memory_gb, else streaming_qr"});
    list.push_back({"memory_gb", &O::memory_gb, Range::from_up_to(0, 1e9), "auto's budget for Q in GiB (nil: 60% of the memory available now)"});
    list.back().spec.range.low_open = true;
    list.push_back({"block_rows", &O::block_rows, Range::non_negative(),
                    "streaming_qr's rows per QR step (0: 2·vocab); gram's rows per product (0: max(4096, vocab/4))"});
    return list;
  }());
  return options;
}

LogpSpectrum logp_svdvals(LanguageModel& model, const torch::Tensor& tokens, const LogpSvdvalsOptions& options,
                          const MatrixProgress& progress) {
  LogpSpectrumOptions spectrum;
  spectrum.method = parse_spectrum_method(options.method);
  if (options.memory_gb) spectrum.memory_limit_bytes = static_cast<std::int64_t>(*options.memory_gb * 1024.0 * 1024.0 * 1024.0);
  spectrum.block_rows = options.block_rows;
  return logp_singular_values(model, tokens, options.matrix, spectrum, progress);
}

}  // namespace lmkit::analysis
