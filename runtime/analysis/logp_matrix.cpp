#include "runtime/analysis/logp_matrix.h"

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/analysis/matrix_rank.h"
#include "runtime/core/error.h"
#include "runtime/core/interruption.h"
#include "runtime/data/batching.h"

namespace lmkit::analysis {
namespace {

// Calls consume(rows) for each window's [rows, vocab] block, in evaluation order, until
// max_contexts rows were produced.
template <typename Consume>
std::int64_t for_each_window(LanguageModel& model, const torch::Tensor& tokens, const LogpMatrixOptions& o,
                             const MatrixProgress& progress, Consume&& consume) {
  data::check_eval_stream(tokens, o.batch_size, o.bptt, "logp_matrix");
  check_token_ids(tokens, model->options.encoder().vocab_size(), "the tokens");
  if (o.f_logits) {
    auto probe = model->head->f_logits(torch::zeros({1, model->decoder().weight.size(1)}, model->decoder().weight.options()),
                                       model->decoder());
    if (!probe.defined()) {
      throw UsageError("logp_matrix: the " + model->head->kind() + " head has no f-logits (only heads of the form "
                       "log_softmax(f(l)) do: softmax, sigsoftmax, gss, plif, relu, sigmoid, advsoft)");
    }
  }
  model->eval();
  torch::NoGradGuard no_grad;
  const auto device = model->encoder->embedding.device();
  const auto source = data::batchify(tokens, o.batch_size).to(device);
  const std::int64_t available = (source.size(0) - 1) * o.batch_size;
  const std::int64_t wanted = o.max_contexts < 0 ? available : std::min(o.max_contexts, available);
  data::EvalBatches batches(source, o.bptt);
  auto hidden = model->init_hidden(o.batch_size);
  data::Batch batch;
  std::int64_t done = 0;
  InterruptibleScope interruptible;
  while (done < wanted && batches.next(batch)) {
    interruptible.poll("logp_matrix");
    auto encoded = model->encode(batch.input, hidden);
    hidden = detach_state(encoded.hidden);
    torch::Tensor rows = o.f_logits ? model->head->f_logits(encoded.output, model->decoder())
                                    : model->head->log_probs(encoded.output, model->decoder());
    if (rows.size(0) > wanted - done) rows = rows.narrow(0, 0, wanted - done);
    consume(rows);
    done += rows.size(0);
    if (progress) progress(done, wanted);
  }
  return done;
}

}  // namespace

torch::Tensor logp_matrix(LanguageModel& model, const torch::Tensor& tokens, const LogpMatrixOptions& options,
                          const MatrixProgress& progress) {
  std::vector<torch::Tensor> blocks;
  for_each_window(model, tokens, options, progress,
                  [&](const torch::Tensor& rows) { blocks.push_back(rows.to(options.dtype)); });
  return torch::cat(blocks, 0);
}

StreamingSvd::StreamingSvd(std::int64_t cols, torch::ScalarType dtype, torch::Device device)
    : cols_(cols), dtype_(dtype), device_(device) {
  if (cols < 1) throw UsageError("StreamingSvd: the matrix needs at least one column");
  if (dtype != torch::kFloat32 && dtype != torch::kFloat64) throw UsageError("StreamingSvd: dtype must be float32 or float64");
  r_ = torch::zeros({0, cols}, torch::TensorOptions().dtype(dtype).device(device));
}

void StreamingSvd::add_rows(const torch::Tensor& block) {
  if (block.dim() != 2 || block.size(1) != cols_) {
    throw UsageError("StreamingSvd: a block must be [rows, " + std::to_string(cols_) + "]");
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

StreamedSpectrum logp_singular_values(LanguageModel& model, const torch::Tensor& tokens,
                                      const LogpMatrixOptions& options, std::int64_t block_rows,
                                      const MatrixProgress& progress) {
  const auto vocab = model->options.encoder().vocab_size();
  if (block_rows <= 0) block_rows = 2 * vocab;
  StreamingSvd svd(vocab, options.dtype, model->encoder->embedding.device());
  std::vector<torch::Tensor> pending;
  std::int64_t pending_rows = 0;
  auto flush = [&] {
    if (pending.empty()) return;
    svd.add_rows(torch::cat(pending, 0));
    pending.clear();
    pending_rows = 0;
  };
  for_each_window(model, tokens, options, progress, [&](const torch::Tensor& rows) {
    pending.push_back(rows.to(options.dtype));
    pending_rows += rows.size(0);
    if (pending_rows >= block_rows) flush();
  });
  flush();
  return {svd.singular_values(), svd.rows(), svd.cols()};
}

}  // namespace lmkit::analysis
