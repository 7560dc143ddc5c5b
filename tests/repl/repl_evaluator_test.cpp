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

// A value whose metamethods raise (or return nonsense) is described, never a PANIC that aborts
// the REPL: echo, error objects, nested values, keys, a hidden metatable.
TEST_F(ReplEvaluatorTest, NoValueAbortsTheSession) {
  ASSERT_FALSE(repl_.feed("raising = function() error('boom') end").failed);
  struct Case {
    const char* input;
    bool failed;
    const char* output;
  };
  for (const auto& c : {
           Case{"setmetatable({}, {__tostring = raising})", false, "(a table whose __tostring failed: repl:1: boom)"},
           Case{"setmetatable({}, {__tostring = function() return {} end})", false,
                "(a table whose __tostring failed: '__tostring' must return a string)"},
           Case{"setmetatable({1, 2}, {__index = raising, __len = raising, __pairs = raising})", false, "{1, 2}"},
           Case{"{a = setmetatable({}, {__tostring = raising})}", false,
                "{a = (a table whose __tostring failed: repl:1: boom)}"},
           Case{"setmetatable({}, {__metatable = 5})", false, "{}"},
           Case{"setmetatable({}, {__name = {}})", false, "{}"},
           Case{"error(setmetatable({}, {__tostring = raising}))", true, "(a table whose __tostring failed: repl:1: boom)"},
           Case{"error(setmetatable({}, {__tostring = function() return 'told' end}))", true, "told"},
       }) {
    const auto out = repl_.feed(c.input);
    EXPECT_EQ(out.failed, c.failed) << c.input;
    EXPECT_EQ(out.output, c.output) << c.input;
  }
  const auto table_error = repl_.feed("error({1, 2})");
  EXPECT_TRUE(table_error.failed);
  EXPECT_EQ(table_error.output.rfind("(error object is a table value)", 0), 0u) << table_error.output;
  EXPECT_EQ(repl_.feed("6 * 7").output, "42");
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
