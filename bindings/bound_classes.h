// Every runtime class Lua holds objects of, declared once (lua_class.h): its Lua name, the name its
// methods' docs give `self`, and how an object describes itself and counts its length.
#pragma once
#include <cstdint>
#include <string>

#include "bindings/lua_class.h"
#include "runtime/core/number_text.h"
#include "runtime/data/batching.h"
#include "runtime/data/bptt_sampler.h"
#include "runtime/data/corpus.h"
#include "runtime/data/synthetic_language.h"
#include "runtime/data/vocabulary.h"
#include "runtime/models/language_model.h"
#include "runtime/runs/run_view.h"
#include "runtime/training/trainer.h"

namespace lmkit::lua {

template <>
struct ClassTraits<LanguageModelImpl> {
  using Object = LanguageModelImpl;
  static constexpr const char* name = "Model";
  static constexpr const char* self = "m";
  static constexpr const char* closed = "already closed or collected";
  static std::string describe(const LanguageModelImpl& model);
};

template <>
struct ClassTraits<data::Vocabulary> {
  using Object = const data::Vocabulary;
  static constexpr const char* name = "Vocab";
  static constexpr const char* self = "vocab";
  static constexpr const char* closed = "already closed or collected";
  static std::string describe(const data::Vocabulary& vocab) { return "Vocab(" + integer_text(vocab.size()) + " words)"; }
  static std::int64_t length(const data::Vocabulary& vocab) { return vocab.size(); }
};

template <>
struct ClassTraits<data::Corpus> {
  using Object = const data::Corpus;
  static constexpr const char* name = "Corpus";
  static constexpr const char* self = "corpus";
  static constexpr const char* closed = "already closed or collected";
  static std::string describe(const data::Corpus& corpus) { return data::corpus_summary(corpus); }
};

template <>
struct ClassTraits<data::SyntheticLanguage> {
  using Object = data::SyntheticLanguage;
  static constexpr const char* name = "SyntheticLanguage";
  static constexpr const char* self = "lang";
  static constexpr const char* closed = "already closed or collected";
  static std::string describe(const data::SyntheticLanguage& language) { return language.describe(); }
};

template <>
struct ClassTraits<data::EvalBatches> {
  using Object = data::EvalBatches;
  static constexpr const char* name = "EvalBatches";
  static constexpr const char* self = "batches";
  static constexpr const char* closed = "already closed or collected";
  static std::int64_t length(const data::EvalBatches& batches) { return batches.size(); }
};

LMKIT_LUA_CLASS(data::BpttSampler, data::BpttSampler, "BpttSampler", "sampler");

template <>
struct ClassTraits<training::RunView> {
  using Object = const training::RunView;
  static constexpr const char* name = "Run";
  static constexpr const char* self = "run";
  static constexpr const char* closed = "already closed or collected";
  static std::string describe(const training::RunView& run) { return run.describe(); }
};

// Lives as long as its training run: the box is emptied when lmkit.train returns.
template <>
struct ClassTraits<training::Trainer> {
  using Object = training::Trainer;
  static constexpr const char* name = "TrainControl";
  static constexpr const char* self = "run";
  static constexpr const char* closed = "made for a training run that has ended";
};

}  // namespace lmkit::lua
