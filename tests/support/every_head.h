// One configuration of every registered head kind (two for AdvSoft): the every-head tests iterate
// over it, and HeadTest.EveryRegisteredKindIsInTheEveryHeadTests fails until a new kind is added.
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

namespace lmkit::testing {

inline std::vector<nlohmann::json> all_heads() {
  return {{{"kind", "softmax"}},
          {{"kind", "sigsoftmax"}},
          {{"kind", "gss"}, {"c", -0.5}, {"k", 2.5}},
          {{"kind", "plif"}, {"K", 50}, {"T", 5.0}, {"sigma", 0.3}},
          {{"kind", "relu"}},
          {{"kind", "sigmoid"}},
          {{"kind", "mos"}, {"K", 3}},
          {{"kind", "moss"}, {"K", 3}},
          {{"kind", "moc"}, {"K", 3}},
          {{"kind", "mixtape"}, {"K", 4}, {"S", 7}, {"gate_dim", 5}},
          {{"kind", "advsoft"}, {"eps", 0.1}},
          {{"kind", "advsoft"}, {"eps", 0.05}, {"relative", true}, {"aligned_only", true}},
          {{"kind", "test_scaled_softmax"}, {"a", 1.7}}};  // registered_head_test.cpp
}

}  // namespace lmkit::testing
