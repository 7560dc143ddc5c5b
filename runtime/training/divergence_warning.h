// A training loss that is finite but no longer a model's: the run goes on (it may recover, and a
// non-finite loss already stops it), but the epoch's line says so while it happens.
#pragma once
#include <cstdint>
#include <string>

#include "runtime/training/train_options.h"

namespace lmkit::training {

// How far above the uniform model's loss (log N nats) an epoch's mean training loss may go before
// it is called diverging: log(100), i.e. a perplexity 100 times the vocabulary's size.
constexpr double kDivergenceMarginNats = 4.605170185988092;

// The warning for an epoch (`epoch_name`, e.g. "epoch 3" or "finetune epoch 1") whose mean training
// loss is infinite or more than kDivergenceMarginNats above log(vocab_size) (NaN, an epoch without
// steps, is none), naming the perplexity,
// the uniform model's and the ways out with the run's own values (a lower lr, clipping, the head's
// own rate); empty when the loss is within that range.
std::string divergence_warning(double train_loss, std::int64_t vocab_size, const std::string& epoch_name,
                               const TrainOptions& options, bool head_has_own_rate);

}  // namespace lmkit::training
