// One head per fused kernel of ops/ (and Softmax, on ATen alone): the GPU tests that train run each
// as a case of its own, named by the head's kind, so that a failure or a crash names its kernel.
#pragma once
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace lmkit::testing {

inline auto every_fused_kernel_head() {
  return ::testing::Values(nlohmann::json{{"kind", "softmax"}}, nlohmann::json{{"kind", "gss"}, {"c", 1.0}, {"k", 1.5}},
                           nlohmann::json{{"kind", "plif"}, {"K", 2000}}, nlohmann::json{{"kind", "mos"}, {"K", 3}});
}

inline std::string head_kind_name(const ::testing::TestParamInfo<nlohmann::json>& info) {
  return info.param.at("kind").get<std::string>();
}

}  // namespace lmkit::testing
