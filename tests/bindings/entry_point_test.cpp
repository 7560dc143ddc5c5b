// The generic entry-point binding (bindings/entry_point.h, lua_class.h), tested once on fixture entry
// points of every parameter and result kind: argument checks with positions, options tables
// (unknown keys with the closest name, types, ranges, choices, defaults, nested tables, lists of
// strings, tensors, required options), results round-tripped through Lua (tables, nested lists of
// tables, several values, pairs, nil, declared structs read back), variants, integers checked against
// their C++ type, a class with fields, methods and `self` returned, and the generated doc strings.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "bindings/entry_point.h"
#include "bindings/lua_module.h"
#include "repl/lua_state_handle.h"
#include "runtime/tensor/dtype_option.h"

namespace lmkit::entry_fixture {

struct SampleOptions {
  std::int64_t count = 3;
  double scale = 1.5;
  bool center = false;
  std::string mode = "mean";
  torch::ScalarType dtype = torch::kFloat32;
  std::uint64_t seed = 0;
};

const config::BoundOptions<SampleOptions>& declared_options(config::Tag<SampleOptions>) {
  using config::Range;
  static const config::BoundOptions<SampleOptions> options(
      "sample", {{"count", &SampleOptions::count, Range::at_least(1), "how many"},
                 {"scale", &SampleOptions::scale, Range::positive(), "a factor"},
                 {"center", &SampleOptions::center, "subtract the mean"},
                 {"mode", &SampleOptions::mode, config::OneOf{{"mean", "max"}}, "what to take"},
                 float_dtype_option("dtype", &SampleOptions::dtype, "the values' dtype"),
                 {"seed", &SampleOptions::seed, Range::non_negative(), "a seed"}});
  return options;
}

// A request with a nested table, a list of strings, a required tensor and a nil-able string.
struct Window {
  std::int64_t size = 3;
  double weight = 0.5;
};
const config::BoundOptions<Window>& declared_options(config::Tag<Window>) {
  static const config::BoundOptions<Window> options(
      "window", {{"size", &Window::size, config::Range::at_least(1), "rows"},
                 {"weight", &Window::weight, config::Range{0.0, 1.0}, "its weight"}});
  return options;
}
struct Request {
  std::optional<Window> window;
  std::vector<std::string> names;
  torch::Tensor data;
  std::optional<std::string> label;
};
const config::BoundOptions<Request>& declared_options(config::Tag<Request>) {
  static const config::BoundOptions<Request> options("request", [] {
    std::vector<config::BoundOption<Request>> list = {
        {"window", &Request::window, "a window (nil: none)"}, {"names", &Request::names, "names"}};
    list.push_back(config::BoundOption<Request>("data", &Request::data, "the rows").required());
    list.push_back({"label", &Request::label, "a label"});
    return list;
  }());
  return options;
}
struct Echo {
  std::optional<std::int64_t> window_size;
  std::optional<double> window_weight;
  std::vector<std::string> names;
  std::int64_t rows = 0;
  std::optional<std::string> label;
};
inline auto declared_result(config::Tag<Echo>) {
  return config::result_table(config::result_field("window_size", &Echo::window_size, "the window's size"),
                              config::result_field("window_weight", &Echo::window_weight, "its weight"),
                              config::result_field("names", &Echo::names, "the names"),
                              config::result_field("rows", &Echo::rows, "data's rows"),
                              config::result_field("label", &Echo::label, "the label"));
}
Echo echo(const Request& r) {
  Echo e{std::nullopt, std::nullopt, r.names, r.data.size(0), r.label};
  if (r.window) e.window_size = r.window->size, e.window_weight = r.window->weight;
  return e;
}

// A counter class: a field from its declared result, a method returning its object, __len, __tostring.
struct Counter {
  std::int64_t value = 0;
  Counter& add(std::int64_t n) {
    value += n;
    return *this;
  }
  std::int64_t doubled() const { return 2 * value; }
};
inline auto declared_result(config::Tag<Counter>) {
  return config::result_table(config::result_field("value", &Counter::value, "the count"));
}
std::shared_ptr<Counter> make_counter(std::int64_t start) { return std::make_shared<Counter>(Counter{start}); }

std::string kind_of(const std::variant<torch::Tensor, std::vector<double>>& x) {
  return std::holds_alternative<torch::Tensor>(x) ? "tensor" : "list of " + std::to_string(std::get<1>(x).size());
}
int halved(int n) { return n / 2; }

struct Part {
  std::string name;
  double value = 0;
};
inline auto declared_result(config::Tag<Part>) {
  return config::result_table(config::result_field("name", &Part::name, "the part's name"),
                              config::result_field("value", &Part::value, "its value"));
}

struct Summary {
  torch::Tensor values;
  std::int64_t count = 0;
  std::vector<Part> parts;
  std::optional<double> best;
  std::string mode;
  std::uint64_t seed = 0;
};
inline auto declared_result(config::Tag<Summary>) {
  return config::result_table(config::result_field("values", &Summary::values, "x·scale in dtype"),
                              config::result_field("count", &Summary::count, "n + count"),
                              config::result_field("parts", &Summary::parts, "one per element of x"),
                              config::result_field("best", &Summary::best, "the largest value when center"),
                              config::result_field("mode", &Summary::mode, "the mode given"),
                              config::result_field("seed", &Summary::seed, "the seed given"));
}

Summary summarize(const torch::Tensor& x, std::int64_t n, const SampleOptions& o) {
  Summary s;
  s.values = (x * o.scale).to(o.dtype);
  s.count = n + o.count;
  for (std::int64_t i = 0; i < x.numel(); ++i) s.parts.push_back({"p" + std::to_string(i + 1), x[i].item<double>()});
  if (o.center) s.best = x.max().item<double>();
  s.mode = o.mode;
  s.seed = o.seed;
  return s;
}

struct Test2 {
  double statistic = 0, pvalue = 0;
};
inline auto declared_result(config::Tag<Test2>) {
  return config::result_values(config::result_field("statistic", &Test2::statistic, "the mean"),
                               config::result_field("pvalue", &Test2::pvalue, "the count"));
}
Test2 two_values(const std::vector<double>& xs) {
  double sum = 0;
  for (double x : xs) sum += x;
  return {sum / static_cast<double>(xs.size()), static_cast<double>(xs.size())};
}

std::pair<std::string, bool> pair_of(const std::optional<torch::Tensor>& t, std::string label) {
  return {label + (t ? "+tensor" : "+nil"), t.has_value()};
}

// Parts read back from Lua as they were pushed (a declared result round-tripped).
std::vector<Part> parts_back(const std::vector<Part>& parts) { return parts; }

}  // namespace lmkit::entry_fixture

namespace lmkit::lua {

template <>
struct ClassTraits<entry_fixture::Counter> {
  using Object = entry_fixture::Counter;
  static constexpr const char* name = "Counter";
  static constexpr const char* self = "c";
  static constexpr const char* closed = "already closed or collected";
  static std::string describe(const entry_fixture::Counter& c) { return "Counter(" + integer_text(c.value) + ")"; }
  static std::int64_t length(const entry_fixture::Counter& c) { return c.value; }
};

namespace {

const Function kFixture[] = {
    entry<&entry_fixture::summarize>("fixture", "summarize", "x, n", "Scales x."),
    entry<&entry_fixture::two_values>("fixture", "two_values", "xs", "Mean and count."),
    entry<&entry_fixture::pair_of>("fixture", "pair_of", "t, label", "A label and whether t was given."),
    entry<&entry_fixture::echo>("fixture", "echo", "", "The request, echoed."),
    entry<&entry_fixture::make_counter>("fixture", "counter", "start", "A counter."),
    entry<&entry_fixture::kind_of>("fixture", "kind_of", "x", "What x is."),
    entry<&entry_fixture::halved>("fixture", "halved", "n", "n / 2."),
    entry<&entry_fixture::parts_back>("fixture", "parts_back", "parts", "The parts, read and pushed back."),
};

const std::vector<Function>& counter_methods() {
  static const std::vector<Function> methods = {
      method<&entry_fixture::Counter::add>("add", "n", "Adds n."),
      method<&entry_fixture::Counter::doubled>("doubled", "", "Twice the count."),
  };
  return methods;
}

class EntryPointTest : public ::testing::Test {
 protected:
  EntryPointTest() : state_(new_lmkit_state()) {
    lua_State* L = state_.get();
    lua_newtable(L);
    set_functions(L, -1, "fixture", kFixture);
    lua_setglobal(L, "fixture");
    register_class<entry_fixture::Counter>(L, counter_methods(), "Counter — a fixture class.");
  }

  // The values `code` returns joined by "|" (tostring of each), or the error message.
  std::string run(const std::string& code) {
    lua_State* L = state_.get();
    lua_settop(L, 0);
    if (luaL_loadbuffer(L, code.data(), code.size(), "=test") != LUA_OK) return lua_tostring(L, -1);
    if (lua_pcall(L, 0, LUA_MULTRET, 0) != LUA_OK) return std::string("error: ") + lua_tostring(L, -1);
    std::string text;
    for (int i = 1; i <= lua_gettop(L); ++i) {
      text += (i > 1 ? "|" : "") + std::string(luaL_tolstring(L, i, nullptr));
      lua_pop(L, 1);
    }
    return text;
  }

  repl::LuaStateHandle state_;
};

TEST_F(EntryPointTest, DefaultsComeFromTheDeclaration) {
  EXPECT_EQ(run("local r = fixture.summarize(lmkit.tensor{1, 2}, 4)\n"
                "return r.count, r.mode, r.seed, r.values:dtype(), r.values[2]:item(), r.best, #r.parts"),
            "7|mean|0|float32|3.0|nil|2");
}

TEST_F(EntryPointTest, GivenOptionsAndNestedResultsRoundTrip) {
  EXPECT_EQ(run("local r = fixture.summarize(lmkit.tensor{1, 5, 2}, 1, {count = 2.0, scale = 2, center = true,\n"
                "                                                        mode = 'max', dtype = 'float64', seed = math.maxinteger})\n"
                "return r.count, r.mode, r.seed == math.maxinteger, r.values:dtype(), r.values[2]:item(), r.best, r.parts[2].name, r.parts[2].value"),
            "3|max|true|float64|10.0|5.0|p2|5.0");
}

TEST_F(EntryPointTest, ArgumentsAreCheckedWithTheirPositions) {
  EXPECT_EQ(run("return fixture.summarize(lmkit.tensor{1}, 'x')"),
            "error: test:1: bad argument #2 to 'fixture.summarize' (integer expected, got string)");
  EXPECT_EQ(run("return fixture.summarize(3, 1)"),
            "error: test:1: bad argument #1 to 'fixture.summarize' (Tensor expected, got number)");
  EXPECT_EQ(run("return fixture.summarize(lmkit.tensor{1}, 1.5)"),
            "error: test:1: bad argument #2 to 'fixture.summarize' (number has no integer representation)");
}

TEST_F(EntryPointTest, OptionsAreCheckedByTheDeclaration) {
  const std::string prefix = "error: test:1: bad argument #3 to 'fixture.summarize' (";
  const auto call = [this](const std::string& options) {
    return run("return fixture.summarize(lmkit.tensor{1}, 1, " + options + ")");
  };
  EXPECT_EQ(call("{cuont = 2}"), prefix + "sample option 'cuont' is unknown (did you mean 'count'?; accepted: count, "
                                          "scale, center, mode, dtype, seed))");
  EXPECT_EQ(call("{count = 0}"), prefix + "sample option 'count' must be ≥ 1, got 0)");
  EXPECT_EQ(call("{count = 2.5}"), prefix + "sample option 'count' must be an integer, got 2.5)");
  EXPECT_EQ(call("{scale = 0/0}"), prefix + "sample option 'scale' must be positive, got NaN)");
  EXPECT_EQ(call("{center = 1}"), prefix + "sample option 'center' must be a boolean, got 1)");
  EXPECT_EQ(call("{mode = 'min'}"), prefix + "sample option 'mode' must be one of \"mean\", \"max\", got \"min\" (did you mean \"mean\"?))");
  EXPECT_EQ(call("{dtype = 'int8'}"),
            prefix + "sample option 'dtype' must be one of \"float16\", \"bfloat16\", \"float32\", \"float64\", got \"int8\")");
  EXPECT_EQ(call("{seed = -1}"), prefix + "sample option 'seed' must be ≥ 0, got -1)");
  EXPECT_EQ(call("{count = {2}}"), prefix + "sample option 'count' must be an integer, got [2])");
  EXPECT_EQ(call("{1, 2}"), prefix + "expected a table of named options ({key = value, ...}), got a list)");
  EXPECT_EQ(call("'fast'"), prefix + "table of options expected, got string)");
  EXPECT_EQ(run("return fixture.summarize(lmkit.tensor{1}, 1, {}).count"), "4");
  EXPECT_EQ(run("return fixture.summarize(lmkit.tensor{1}, 1, nil).count"), "4");
}

TEST_F(EntryPointTest, SeveralValuesPairsAndNil) {
  EXPECT_EQ(run("return fixture.two_values{1, 2, 6}"), "3.0|3.0");
  EXPECT_EQ(run("return fixture.two_values(lmkit.tensor{2, 4})"), "3.0|2.0");
  EXPECT_EQ(run("return fixture.two_values({1, 'x'})"),
            "error: test:1: bad argument #1 to 'fixture.two_values' (entry 2 is not a number)");
  EXPECT_EQ(run("return fixture.pair_of(nil, 'a')"), "a+nil|false");
  EXPECT_EQ(run("return fixture.pair_of(lmkit.ones(1), 'b')"), "b+tensor|true");
}

TEST_F(EntryPointTest, TheDocIsGeneratedFromTheDeclarations) {
  EXPECT_EQ(std::string(kFixture[0].doc),
            "fixture.summarize(x, n[, {count=3, scale=1.5, center=false, mode=\"mean\", dtype=\"float32\", seed=0}]) -> "
            "{values=, count=, parts=, best=, mode=, seed=}\n"
            "Scales x.\n"
            "Options:\n"
            "  count (integer ≥ 1, default 3): how many\n"
            "  scale (number > 0, default 1.5): a factor\n"
            "  center (boolean, default false): subtract the mean\n"
            "  mode (string, default \"mean\"): what to take\n"
            "  dtype (string, default \"float32\"): the values' dtype\n"
            "  seed (integer ≥ 0, default 0): a seed\n"
            "Result:\n"
            "  values: x·scale in dtype\n"
            "  count: n + count\n"
            "  parts: one per element of x\n"
            "  best: the largest value when center\n"
            "  mode: the mode given\n"
            "  seed: the seed given");
  EXPECT_EQ(std::string(kFixture[1].doc),
            "fixture.two_values(xs) -> statistic, pvalue\nMean and count.\nResult:\n  statistic: the mean\n  pvalue: the count");
  EXPECT_EQ(std::string(kFixture[2].doc), "fixture.pair_of(t|nil, label) -> string, boolean\nA label and whether t was given.");
}

TEST_F(EntryPointTest, NestedTablesListsTensorsAndRequiredOptions) {
  EXPECT_EQ(run("local r = fixture.echo{data = lmkit.zeros(4, 2), names = {'a', 'b'}, window = {size = 7}}\n"
                "return r.rows, #r.names, r.names[2], r.window_size, r.window_weight, r.label"),
            "4|2|b|7|0.5|nil");
  EXPECT_EQ(run("local r = fixture.echo{data = lmkit.zeros(1), names = 'solo', label = 'x'}\n"
                "return #r.names, r.names[1], r.window_size, r.label"),
            "1|solo|nil|x");
  const std::string prefix = "error: test:1: bad argument #1 to 'fixture.echo' (";
  EXPECT_EQ(run("return fixture.echo{names = {}}"), prefix + "request option 'data' is required (the rows))");
  EXPECT_EQ(run("return fixture.echo{data = 3}"), prefix + "request option 'data' must be a Tensor (the rows), got number)");
  EXPECT_EQ(run("return fixture.echo{data = lmkit.zeros(1), window = {size = 0}}"),
            prefix + "request option 'window.size' must be ≥ 1, got 0)");
  EXPECT_EQ(run("return fixture.echo{data = lmkit.zeros(1), window = {sise = 2}}"),
            prefix + "request option 'window.sise' is unknown (did you mean 'size'?; accepted: size, weight))");
  EXPECT_EQ(run("return fixture.echo{data = lmkit.zeros(1), window = 5}"),
            prefix + "request option 'window' must be a table of named options, got 5)");
  EXPECT_EQ(run("return fixture.echo{data = lmkit.zeros(1), names = {'a', 2}}"),
            prefix + "request option 'names': entry 2 is not a string but 2)");
}

TEST_F(EntryPointTest, DeclaredResultsReadBackAndVariants) {
  EXPECT_EQ(run("local s = fixture.summarize(lmkit.tensor{4, 5}, 0)\n"
                "local back = fixture.parts_back(s.parts)\n"
                "return #back, back[1].name, back[2].value"),
            "2|p1|5.0");
  EXPECT_EQ(run("return fixture.parts_back{{name = 'x', valeu = 1}}"),
            "error: test:1: bad argument #1 to 'fixture.parts_back' (entry 1: unknown field 'valeu' (did you mean "
            "'value'?; accepted: name, value))");
  EXPECT_EQ(run("return fixture.parts_back{{name = 'x', value = 'one'}}"),
            "error: test:1: bad argument #1 to 'fixture.parts_back' (entry 1, field 'value': number expected, got string)");
  EXPECT_EQ(run("return fixture.kind_of(lmkit.ones(2)), fixture.kind_of{1, 2, 3}"), "tensor|list of 3");
  EXPECT_EQ(run("return fixture.kind_of('x')"),
            "error: test:1: bad argument #1 to 'fixture.kind_of' (Tensor or {number, ...} expected, got string)");
  EXPECT_EQ(run("return fixture.halved(10)"), "5");
  EXPECT_EQ(run("return fixture.halved(1 << 40)"),
            "error: test:1: bad argument #1 to 'fixture.halved' (must be in -2147483648..2147483647, got 1099511627776)");
}

TEST_F(EntryPointTest, ClassesHaveFieldsMethodsAndReturnThemselves) {
  EXPECT_EQ(run("local c = fixture.counter(2)\nlocal same = c:add(3)\n"
                "return rawequal(c, same), c.value, c:doubled(), #c, tostring(c)"),
            "true|5|10|5|Counter(5)");
  EXPECT_EQ(run("local c = fixture.counter(1)\nreturn c.valeu"),
            "error: test:2: Counter indexing: Counter has no method or field 'valeu'");
  EXPECT_EQ(run("local c = fixture.counter(1)\nreturn c:add('x')"),
            "error: test:2: bad argument #1 to 'Counter:add' (integer expected, got string)");
  EXPECT_EQ(run("local c = fixture.counter(1)\ngetmetatable(c).__close(c)\nreturn c:doubled()"),
            "error: test:3: calling 'Counter:doubled' on bad self (Counter was already closed or collected)");
  EXPECT_EQ(run("return fixture.counter(1).add(3, 1)"),
            "error: test:1: calling 'Counter:add' on bad self (Counter expected, got number)");
  EXPECT_EQ(std::string(counter_methods()[0].doc), "c:add(n) -> Counter\nAdds n.");
}

}  // namespace
}  // namespace lmkit::lua
