// When training switches from SGD to averaged SGD (SPEC §2; thesis §4.3).
//
//   "nt" (non-monotonically triggered, AWD-LSTM): after epoch e's validation loss v_e, switch when
//        more than n losses came before it and v_e > min(v_1 .. v_{e−n−1}), i.e. v_e is worse than
//        the best of all but the last n earlier values (n = nonmono = 5). The history holds only
//        the losses seen before averaging started, as in the reference.
//   "et" (epoch-triggered): switch after the validation of epoch `switch_epoch` (so averaging runs
//        from epoch switch_epoch + 1 on).
//   "none": never.
// The same non-monotone criterion ends the finetune stage (AWD-LSTM's finetune.py).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lmkit::training {

// True when `loss` is worse than the best of `history` without its last `nonmono` entries
// (and history has more than nonmono entries).
bool non_monotone_trigger(const std::vector<double>& history, double loss, std::int64_t nonmono);

class SwitchPolicy {
 public:
  // kind: "nt", "et" or "none"; UsageError otherwise or for nonmono < 0 / switch_epoch < 1.
  SwitchPolicy(std::string kind, std::int64_t nonmono, std::int64_t switch_epoch);

  // Called once per epoch with its (non-averaged) validation loss; true when averaging should
  // start after this epoch. Records the loss in the history.
  bool observe(std::int64_t epoch, double valid_loss);

  const std::string& kind() const { return kind_; }
  const std::vector<double>& history() const { return history_; }
  void set_history(std::vector<double> history) { history_ = std::move(history); }

 private:
  std::string kind_;
  std::int64_t nonmono_;
  std::int64_t switch_epoch_;
  std::vector<double> history_;
};

}  // namespace lmkit::training
