#include "repl/repl_evaluator.h"

#include <gtest/gtest.h>

#include "bindings/lua_module.h"
#include "repl/lua_state_handle.h"

namespace lmkit::repl {
namespace {

class ReplEvaluatorTest : public ::testing::Test {
 protected:
  ReplEvaluatorTest() : state_(lua::new_lmkit_state()), repl_(state_.get()) {}
  LuaStateHandle state_;
  ReplEvaluator repl_;
};

TEST_F(ReplEvaluatorTest, ExpressionsEchoTheirValues) {
  auto out = repl_.feed("1 + 2, 'x', {1, 2, a = true}");
  EXPECT_EQ(out.status, ReplEvaluator::Status::Complete);
  EXPECT_FALSE(out.failed);
  EXPECT_EQ(out.output, "3\t\"x\"\t{1, 2, a = true}");
  EXPECT_EQ(repl_.feed("lmkit.ones(2)").output, "tensor({1., 1.}, float32, size 2)");
}

TEST_F(ReplEvaluatorTest, StatementsPrintNothing) {
  auto out = repl_.feed("x = 41");
  EXPECT_FALSE(out.failed);
  EXPECT_EQ(out.output, "");
  EXPECT_EQ(repl_.feed("x + 1").output, "42");
}

TEST_F(ReplEvaluatorTest, IncompleteInputContinues) {
  EXPECT_EQ(repl_.feed("function sq(v)").status, ReplEvaluator::Status::NeedsMore);
  EXPECT_TRUE(repl_.pending());
  EXPECT_EQ(repl_.feed("  return v * v").status, ReplEvaluator::Status::NeedsMore);
  auto out = repl_.feed("end");
  EXPECT_EQ(out.status, ReplEvaluator::Status::Complete);
  EXPECT_EQ(out.chunk, "function sq(v)\n  return v * v\nend");
  EXPECT_EQ(repl_.feed("sq(9)").output, "81");
  // A multi-line expression echoes too.
  EXPECT_EQ(repl_.feed("lmkit.zeros(").status, ReplEvaluator::Status::NeedsMore);
  EXPECT_EQ(repl_.feed("3):sum()").output, "tensor(0., float32)");
}

TEST_F(ReplEvaluatorTest, ErrorsDoNotEndTheSession) {
  auto out = repl_.feed("error('bad thing')");
  EXPECT_TRUE(out.failed);
  EXPECT_EQ(out.output.rfind("repl:1: bad thing", 0), 0u) << out.output;
  out = repl_.feed("1 +* 2");
  EXPECT_TRUE(out.failed);
  EXPECT_FALSE(repl_.pending());
  EXPECT_EQ(repl_.feed("2 * 21").output, "42");
}

TEST_F(ReplEvaluatorTest, ResetAbandonsAPartialChunk) {
  repl_.feed("for i = 1, 3 do");
  ASSERT_TRUE(repl_.pending());
  repl_.reset();
  EXPECT_FALSE(repl_.pending());
  EXPECT_EQ(repl_.feed("'fresh'").output, "\"fresh\"");
}

TEST_F(ReplEvaluatorTest, UnderscoreHoldsTheLastValue) {
  repl_.feed("6 * 7");
  EXPECT_EQ(repl_.feed("_").output, "42");
}

}  // namespace
}  // namespace lmkit::repl
