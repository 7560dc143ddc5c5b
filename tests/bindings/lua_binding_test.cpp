// The binding layer's contracts: error messages in Lua's conventions, no C++ backtraces, every
// method registered once and documented, tensors safe after close/collection.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "bindings/lua_data.h"
#include "bindings/entry_point.h"
#include "bindings/lua_module.h"
#include "bindings/lua_tensor.h"
#include "repl/lua_state_handle.h"

namespace lmkit::lua {
namespace {

struct Result {
  bool ok;
  std::string text;  // the error message, or tostring of the first result
};

class LuaBindingTest : public ::testing::Test {
 protected:
  LuaBindingTest() : state_(new_lmkit_state()) {}

  Result run(const std::string& code) {
    lua_State* L = state_.get();
    lua_settop(L, 0);
    if (luaL_loadbuffer(L, code.data(), code.size(), "=test") != LUA_OK) return {false, lua_tostring(L, -1)};
    const bool ok = lua_pcall(L, 0, 1, 0) == LUA_OK;
    std::string text = lua_isnil(L, -1) ? "nil" : luaL_tolstring(L, -1, nullptr);
    return {ok, text};
  }

  repl::LuaStateHandle state_;
};

TEST_F(LuaBindingTest, ArgumentErrorsNameFunctionPositionExpectedAndGiven) {
  auto r = run("return lmkit.zeros(2, 'x')");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.text, "test:1: bad argument #2 to 'lmkit.zeros' (table of options expected, got string)");
}

TEST_F(LuaBindingTest, MethodArgumentsAreCountedWithoutSelf) {
  auto r = run("local t = lmkit.ones(2, 2); return t:sum('x')");
  EXPECT_EQ(r.text, "test:1: bad argument #1 to 'Tensor:sum' (integer or {integer, ...} expected, got string)");
  r = run("return lmkit.Tensor.methods.sum(3)");
  EXPECT_EQ(r.text, "test:1: calling 'Tensor:sum' on bad self (Tensor expected, got number)");
}

TEST_F(LuaBindingTest, TorchErrorsCarryNoCxxBacktrace) {
  auto r = run("return lmkit.ones(2, 3):matmul(lmkit.ones(2, 3))");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.text.rfind("test:1: Tensor:matmul: ", 0), 0u) << r.text;
  EXPECT_EQ(r.text.find("Exception raised from"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("frame #"), std::string::npos) << r.text;
}

TEST_F(LuaBindingTest, TheRuntimesOwnFunctionNameIsNotRepeated) {
  // evaluate() says "evaluate: ..." for C++ callers; Lua sees the qualified name once.
  auto r = run("local m = lmkit.model{vocab_size = 5, emb = 4, nhid = 4, nhidlast = 4, nlayers = 1}\n"
               "return lmkit.evaluate(m, lmkit.tensor({1, 2}, {dtype = 'int64'}))");
  EXPECT_EQ(r.text, "test:2: lmkit.evaluate: 2 tokens are too few for batch_size 10 (each column needs at least 2)");
  r = run("local m = lmkit.model{vocab_size = 5, emb = 4, nhid = 4, nhidlast = 4, nlayers = 1}\n"
          "local t = lmkit.tensor({1, 2}, {dtype = 'int64'}) return lmkit.dynamic_evaluate(m, t, t)");
  EXPECT_EQ(r.text, "test:2: lmkit.dynamic_evaluate (training stream): 2 tokens are too few for batch_size 100 "
                    "(each column needs at least 2)");
}

TEST_F(LuaBindingTest, UnknownOptionsAreListed) {
  auto r = run("return lmkit.zeros(2, {dtyp = 'float64'})");
  EXPECT_NE(r.text.find("tensor option 'dtyp' is unknown (did you mean 'dtype'?; accepted: dtype, device, requires_grad)"), std::string::npos) << r.text;
  r = run("return lmkit.zeros(2, {dtype = 64})");
  EXPECT_NE(r.text.find("option 'dtype' must be a string, got 64"), std::string::npos) << r.text;
}

TEST_F(LuaBindingTest, ClosedTensorsFailCleanly) {
  auto r = run("local t <close> = lmkit.ones(3); keep = t; return 1");
  ASSERT_TRUE(r.ok) << r.text;
  r = run("return keep:sum()");
  EXPECT_NE(r.text.find("tensor was already closed or collected"), std::string::npos) << r.text;
  // Finalizing an already closed tensor again is harmless.
  r = run("keep = nil; collectgarbage(); collectgarbage(); return 'alive'");
  EXPECT_EQ(r.text, "alive");
}

TEST_F(LuaBindingTest, ErrorsInsideNoGradKeepTheirMessage) {
  auto r = run("return lmkit.no_grad(function() error('inner failure') end)");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.text, "test:1: inner failure");
  r = run("local w = lmkit.ones(2, {requires_grad = true}); "
          "return lmkit.no_grad(function() return (w * 2).requires_grad end)");
  EXPECT_EQ(r.text, "false");
}

TEST_F(LuaBindingTest, EveryMethodRegisteredOnceAndDocumented) {
  const auto names = tensor_method_names();
  std::set<std::string> unique(names.begin(), names.end());
  EXPECT_EQ(unique.size(), names.size()) << "a Tensor method is registered twice";
  for (const auto& name : names) {
    auto r = run("local name, doc = lmkit.doc(lmkit.Tensor.methods." + name + "); return doc");
    ASSERT_TRUE(r.ok) << name << ": " << r.text;
    EXPECT_EQ(r.text.rfind("t:" + name + "(", 0), 0u) << "doc of Tensor:" << name << " must open with its signature: " << r.text;
  }
  auto count = run("local n = 0; for _ in pairs(lmkit.Tensor.methods) do n = n + 1 end; return n");
  EXPECT_EQ(count.text, std::to_string(names.size()));
}

TEST_F(LuaBindingTest, EveryModuleFunctionIsDocumented) {
  auto r = run(R"(
    local missing = {}
    for name, value in pairs(lmkit) do
      if type(value) == "function" and not lmkit.doc(value) then missing[#missing + 1] = name end
    end
    table.sort(missing)
    return table.concat(missing, ",")
  )");
  EXPECT_EQ(r.text, "");
}

TEST_F(LuaBindingTest, UnknownTensorFieldIsAnError) {
  auto r = run("return lmkit.ones(2):szie()");
  EXPECT_NE(r.text.find("Tensor has no method or field 'szie'"), std::string::npos) << r.text;
}

// lmkit.train took the corpus by reference into its userdata, then allocated (its TrainControl): a
// finalizer run by that allocation could close the corpus and free it under the reference (the
// binding fuzzer's ASan run, heap-use-after-free in Corpus's copy constructor).
TEST_F(LuaBindingTest, CorpusValuesOutliveTheirUserdata) {
  lua_State* L = state_.get();
  ASSERT_TRUE(run("corpus = lmkit.data.synthetic{vocab = 6, states = 3, dim = 2}:corpus{train = 30, valid = 10, test = 10}").ok);
  lua_settop(L, 0);
  lua_getglobal(L, "corpus");
  const auto corpus = check_object<data::Corpus>(L, 1);
  ASSERT_TRUE(run("getmetatable(corpus).__close(corpus); corpus = nil; collectgarbage(); collectgarbage()").ok);
  EXPECT_EQ(corpus->name, "synthetic");
  EXPECT_EQ(corpus->vocab->size(), 6);
  EXPECT_EQ(corpus->train.numel(), 30);
}

}  // namespace
}  // namespace lmkit::lua
