// A small AWD-LSTM with every dropout on and the synthetic corpus it trains on: for tests that
// train a few hundred steps through the real trainer (host reads counted, reruns compared).
#pragma once
#include <nlohmann/json.hpp>

#include "runtime/core/device.h"
#include "runtime/data/synthetic_language.h"
#include "runtime/models/awd_lstm.h"
#include "runtime/models/language_model.h"

namespace lmkit::testing {

inline data::Corpus small_corpus() {
  data::SyntheticOptions o;
  o.vocab = 30;
  o.states = 12;
  o.dim = 4;
  o.seed = 7;
  return data::SyntheticLanguage(o).corpus(4000, 800, 800);
}

// The weights come from seed 3, drawn on the CPU. built: a head a test defines (`head` is then
// only the options' entry); nullptr builds `head`.
inline LanguageModel small_model(const nlohmann::json& head, Head built = nullptr) {
  seed_torch(3);
  LanguageModelOptions o;
  o.encoder(AwdLstmOptions().vocab_size(30).emb(8).nhid(16).nhidlast(8).nlayers(2)
                .dropout(0.1).dropouth(0.1).dropouti(0.1).dropoute(0.05).wdrop(0.2));
  o.head(head);
  return LanguageModel(o, built);
}

}  // namespace lmkit::testing
