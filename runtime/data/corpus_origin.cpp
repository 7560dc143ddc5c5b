#include "runtime/data/corpus_origin.h"

#include "runtime/core/error.h"
#include "runtime/data/content_hash.h"
#include "runtime/data/synthetic_language.h"

namespace lmkit::data {

Corpus corpus_from_origin(const nlohmann::json& origin) {
  if (!origin.is_object() || !origin.contains("kind")) {
    throw UsageError("this corpus does not record how it was made (no origin); pass the corpus explicitly");
  }
  try {
    const auto kind = origin.at("kind").get<std::string>();
    if (kind == "files") {
      CorpusOptions options;
      options.name = origin.at("name").get<std::string>();
      options.path = origin.at("path").get<std::string>();
      options.protocol = origin.at("protocol").get<std::string>();
      return load_corpus(options);
    }
    if (kind == "synthetic") {
      const auto& o = origin.at("options");
      SyntheticOptions options;
      options.vocab = o.at("vocab").get<std::int64_t>();
      options.states = o.at("states").get<std::int64_t>();
      options.dim = o.at("dim").get<std::int64_t>();
      options.bias = o.at("bias").get<bool>();
      options.kind = o.at("kind").get<std::string>();
      options.scale = o.at("scale").get<double>();
      options.transition_scale = o.at("transition_scale").get<double>();
      options.seed = o.at("seed").get<std::uint64_t>();
      SyntheticLanguage language(options);
      if (!origin.at("stream_seed").is_null()) language.generate(0, origin.at("stream_seed").get<std::uint64_t>());
      for (const auto& n : origin.at("stream_calls")) language.generate(n.get<std::int64_t>());
      return language.corpus(origin.at("train").get<std::int64_t>(), origin.at("valid").get<std::int64_t>(),
                             origin.at("test").get<std::int64_t>());
    }
    throw UsageError("unknown corpus origin kind '" + kind + "'");
  } catch (const nlohmann::json::exception& e) {
    throw UsageError("corpus origin is malformed: " + std::string(e.what()) + ": " + origin.dump());
  }
}

std::uint64_t tokens_hash(const torch::Tensor& tokens) {
  const auto t = tokens.to(torch::kCPU, torch::kInt64).contiguous();
  return hash_bytes(t.data_ptr<std::int64_t>(), static_cast<std::size_t>(t.numel()) * sizeof(std::int64_t));
}

}  // namespace lmkit::data
