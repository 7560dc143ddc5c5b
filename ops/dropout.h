// The AWD-LSTM's dropouts (Merity et al. 2018, §4): functions, because none of them owns state
// beyond a fresh random mask per call. All are the identity when !training or p == 0, and
// rescale kept units by 1/(1 − p) so expectations match evaluation.
#pragma once
#include "runtime/core/torch.h"

namespace lmkit {

// Locked (variational) dropout: x [T, B, d] with one mask [1, B, d] shared by all time steps.
// A 2-D x [M, d] gets an ordinary per-element mask (there is no time axis to share over).
torch::Tensor locked_dropout(const torch::Tensor& x, double p, bool training);

// Embedding dropout: drops whole rows (words) of the embedding matrix weight [N, d] and looks up
// ids [T, B] → [T, B, d]. The same word is dropped at every position of the batch. Only the looked
// up rows are masked (equivalent to masking the matrix, without an N×d temporary). Unlike the
// reference code there is no padding index: every word's row can be dropped and learns.
torch::Tensor embedding_dropout(const torch::Tensor& weight, const torch::Tensor& ids, double p, bool training);

}  // namespace lmkit
