#include "repl/completion.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bindings/lua_module.h"
#include "repl/lua_state_handle.h"

namespace lmkit::repl {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Not;

class CompletionTest : public ::testing::Test {
 protected:
  CompletionTest() : state_(lua::new_lmkit_state()) {
    luaL_dostring(state_.get(), "t = lmkit.ones(2); config = {alpha = 1, beta = {gamma = 2}}");
  }
  LuaStateHandle state_;
};

TEST_F(CompletionTest, ModuleFunctions) {
  EXPECT_THAT(complete(state_.get(), "lmkit.ze"), ElementsAre("lmkit.zeros"));
  EXPECT_THAT(complete(state_.get(), "lmkit.ra"), ElementsAre("lmkit.rand", "lmkit.randn"));
}

TEST_F(CompletionTest, TensorMethodsAfterColon) {
  const auto matches = complete(state_.get(), "t:su");
  EXPECT_THAT(matches, Contains("t:sum"));
  EXPECT_THAT(matches, Contains("t:sub"));
  EXPECT_THAT(matches, Contains("t:sub_"));
  EXPECT_THAT(matches, Not(Contains("t:size")));
}

TEST_F(CompletionTest, GlobalsKeywordsAndNestedTables) {
  EXPECT_THAT(complete(state_.get(), "pri"), ElementsAre("print"));
  EXPECT_THAT(complete(state_.get(), "fun"), ElementsAre("function"));
  EXPECT_THAT(complete(state_.get(), "config.beta.g"), ElementsAre("config.beta.gamma"));
  // ':' offers only functions: a table's plain fields are not methods.
  EXPECT_THAT(complete(state_.get(), "config:"), ElementsAre());
}

TEST_F(CompletionTest, UnknownPathsGiveNothingAndRunNoCode) {
  luaL_dostring(state_.get(), "trap = setmetatable({}, {__index = function() error('ran user code') end})");
  EXPECT_THAT(complete(state_.get(), "nosuch.x"), ElementsAre());
  EXPECT_THAT(complete(state_.get(), "trap.x"), ElementsAre());
  EXPECT_EQ(lua_gettop(state_.get()), 0);
}

}  // namespace
}  // namespace lmkit::repl
