// OptionSchema: the one reader of declared options (heads today): defaults, types, ranges, unknown
// keys with the nearest name, and the doc and signature derived from the same declaration.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "runtime/config/option_schema.h"
#include "runtime/core/error.h"

namespace lmkit::config {
namespace {

OptionSchema schema() {
  return OptionSchema("head 'x'", {{"K", OptionType::Integer, 15, Range::at_least(1), "components"},
                                   {"rate", OptionType::Number, 0.25, Range::from_up_to(0, 1), "dropout"},
                                   {"scale", OptionType::Number, 2.0, Range::positive(), "slope"},
                                   {"freeze", OptionType::Boolean, false, Range::any(), "hold still"}});
}

std::string error_of(const nlohmann::json& given) {
  try {
    schema().read(given, {"kind"});
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(OptionSchemaTest, ReadFillsDefaultsAndKeepsIgnoredKeys) {
  const auto read = schema().read({{"kind", "x"}, {"K", 3.0}, {"freeze", true}}, {"kind"});
  EXPECT_EQ(read, (nlohmann::json{{"kind", "x"}, {"K", 3}, {"rate", 0.25}, {"scale", 2.0}, {"freeze", true}}));
  EXPECT_TRUE(read["K"].is_number_integer());  // Lua's 3.0 is the integer 3
}

TEST(OptionSchemaTest, WrongTypesAndValuesOutOfRangeAreNamed) {
  EXPECT_EQ(error_of({{"K", 1.5}}), "head 'x' option 'K' must be an integer, got 1.5");
  EXPECT_EQ(error_of({{"K", 0}}), "head 'x' option 'K' must be ≥ 1, got 0");
  EXPECT_EQ(error_of({{"rate", 1.0}}), "head 'x' option 'rate' must be in [0, 1), got 1");
  EXPECT_EQ(error_of({{"rate", -0.0001}}), "head 'x' option 'rate' must be in [0, 1), got -0.0001");
  EXPECT_EQ(error_of({{"scale", 0}}), "head 'x' option 'scale' must be positive, got 0");
  EXPECT_EQ(error_of({{"freeze", 1}}), "head 'x' option 'freeze' must be a boolean, got 1");
  EXPECT_EQ(error_of({{"scale", "2"}}), "head 'x' option 'scale' must be a number, got \"2\"");
  EXPECT_EQ(error_of(nlohmann::json::array()), "head 'x' options must be an object, got []");
  // JSON holds no NaN or infinity, but a caller's double can: check() sees them.
  EXPECT_THROW(schema().check("scale", std::numeric_limits<double>::infinity()), ConfigError);
  EXPECT_THROW(schema().check("rate", std::nan("")), ConfigError);
}

TEST(OptionSchemaTest, UnknownKeysSuggestTheNearestName) {
  EXPECT_EQ(error_of({{"sacle", 1}}),
            "head 'x' option 'sacle' is unknown (did you mean 'scale'?; accepted: K, rate, scale, freeze)");
  EXPECT_EQ(error_of({{"temperature", 1}}),
            "head 'x' option 'temperature' is unknown (accepted: K, rate, scale, freeze)");
  EXPECT_EQ(closest_name("kk", {"k", "c"}), "k");
  EXPECT_EQ(closest_name("lambda", {"k", "c"}), "");
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);  // the textbook pair
  EXPECT_EQ(edit_distance("", "abc"), 3u);
}

TEST(OptionSchemaTest, SignatureAndDocComeFromTheDeclaration) {
  EXPECT_EQ(schema().signature(), "{K=15, rate=0.25, scale=2, freeze=false}");
  EXPECT_EQ(OptionSchema("head 'y'", {}).signature(), "()");
  EXPECT_EQ(schema().describe(),
            "  K (integer ≥ 1, default 15): components\n"
            "  rate (number in [0, 1), default 0.25): dropout\n"
            "  scale (number > 0, default 2): slope\n"
            "  freeze (boolean, default false): hold still\n");
}

TEST(OptionSchemaTest, StringChoicesNullableOptionsAndUnsignedIntegers) {
  const OptionSchema training("training", {OptionSpec("optimizer", OptionType::String, "sgd", Range::any(), "").one_of({"sgd", "adam"}),
                                           OptionSpec("flood", OptionType::Number, nullptr, Range::non_negative(), "").or_null(),
                                           OptionSpec("seed", OptionType::Integer, 141, Range::non_negative(), ""),
                                           OptionSpec("bptt", OptionType::Integer, 70, Range::at_least(1), "")});
  auto read = training.read({{"flood", nullptr}, {"bptt", nullptr}});
  EXPECT_TRUE(read["flood"].is_null());
  EXPECT_EQ(read["bptt"], 70) << "null is 'not given' for an option that cannot be null";
  EXPECT_EQ(training.read({{"seed", 18446744073709551615ULL}})["seed"], 18446744073709551615ULL);
  const auto error = [&](const nlohmann::json& given) {
    try {
      training.read(given);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error({{"optimizer", "sdg"}}), "training option 'optimizer' must be one of \"sgd\", \"adam\", got \"sdg\" (did you mean \"sgd\"?)");
  EXPECT_EQ(error({{"optimizer", 1}}), "training option 'optimizer' must be a string, got 1");
  EXPECT_EQ(error({{"flood", -1}}), "training option 'flood' must be ≥ 0, got -1");
  EXPECT_EQ(error({{"seed", -3}}), "training option 'seed' must be ≥ 0, got -3");
  EXPECT_EQ(error({{"bptt", -3}}), "training option 'bptt' must be ≥ 1, got -3");
  EXPECT_EQ(training.signature(), "{optimizer=\"sgd\", flood=nil, seed=141, bptt=70}");
}

TEST(OptionSchemaTest, ADefaultOutsideItsRangeIsADeclarationError) {
  EXPECT_THROW(OptionSchema("head 'z'", {{"k", OptionType::Number, -1.0, Range::positive(), ""}}), std::logic_error);
  EXPECT_THROW(OptionSchema("head 'z'", {OptionSpec("o", OptionType::String, "x", Range::any(), "").one_of({"a"})}),
               std::logic_error);
  EXPECT_THROW(OptionSchema("head 'z'", {{"f", OptionType::Boolean, 1, Range::any(), ""}}), std::logic_error);
}

}  // namespace
}  // namespace lmkit::config
