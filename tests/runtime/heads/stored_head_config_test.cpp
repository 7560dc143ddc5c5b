// A head config written before an option existed reads as that option's default (the run ran so).
#include "runtime/heads/stored_head_config.h"

#include <gtest/gtest.h>

namespace lmkit {
namespace {

TEST(StoredHeadConfigTest, AnOptionAddedSinceTheFileWasWrittenReadsAsItsDefault) {
  // A MoS config as lmkit wrote it before the floor option.
  const nlohmann::json before_floor{{"kind", "mos"}, {"K", 3}, {"dropoutl", 0.29}};
  const auto completed = completed_head_config(before_floor);
  EXPECT_EQ(completed.at("floor"), 0.0);
  EXPECT_EQ(completed.at("K"), 3);
  EXPECT_EQ(completed, (nlohmann::json{{"kind", "mos"}, {"K", 3}, {"dropoutl", 0.29}, {"floor", 0.0}}));
  // A kind not registered here (a Lua head) and a config that does not read: as written.
  const nlohmann::json lua_head{{"kind", "custom"}, {"width", 4}};
  EXPECT_EQ(completed_head_config(lua_head), lua_head);
  const nlohmann::json bad{{"kind", "mos"}, {"K", "three"}};
  EXPECT_EQ(completed_head_config(bad), bad);
}

}  // namespace
}  // namespace lmkit
