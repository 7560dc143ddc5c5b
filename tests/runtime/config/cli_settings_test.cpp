#include "runtime/config/cli_settings.h"

#include <gtest/gtest.h>

#include "runtime/core/error.h"

namespace lmkit::config {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SettingsTest, ParsesKeyValue) {
  const auto s = parse_setting("model.nhid=960");
  EXPECT_EQ(s.key, "model.nhid");
  EXPECT_EQ(s.text, "960");
  EXPECT_EQ(parse_setting("name=a=b").text, "a=b");  // only the first '=' splits
}

TEST(SettingsTest, RejectsMalformedArguments) {
  EXPECT_NE(error_of([] { parse_setting("lr"); }).find("expected key=value"), std::string::npos);
  EXPECT_NE(error_of([] { parse_setting("=3"); }).find("malformed key"), std::string::npos);
  EXPECT_NE(error_of([] { parse_setting("a..b=3"); }).find("malformed key"), std::string::npos);
  EXPECT_NE(error_of([] { parse_setting("1x=3"); }).find("malformed key"), std::string::npos);
}

TEST(SettingsTest, InfersTypes) {
  EXPECT_EQ(infer_value("3"), Json(3));
  EXPECT_TRUE(infer_value("3").is_number_integer());
  EXPECT_EQ(infer_value("0.25"), Json(0.25));
  EXPECT_EQ(infer_value("1e-3"), Json(1e-3));
  EXPECT_EQ(infer_value("true"), Json(true));
  EXPECT_EQ(infer_value("off"), Json(false));
  EXPECT_EQ(infer_value("softmax"), Json("softmax"));
  EXPECT_EQ(infer_value("1,2.5,x"), Json::parse(R"([1, 2.5, "x"])"));
  EXPECT_EQ(infer_value("[3]"), Json::parse("[3]"));
  EXPECT_EQ(infer_value("[]"), Json::array());
  EXPECT_EQ(infer_value("\"a,b\""), Json("a,b"));
  EXPECT_EQ(infer_value("\"12\""), Json("12"));
}

TEST(SettingsTest, TreeNestsDottedKeys) {
  const auto tree = settings_tree({{"model.nhid", "960"}, {"model.head", "mos"}, {"lr", "20"}});
  EXPECT_EQ(tree, Json::parse(R"({"model": {"nhid": 960, "head": "mos"}, "lr": 20})"));
  EXPECT_NE(error_of([] { settings_tree({{"a", "1"}, {"a.b", "2"}}); }).find("cannot also hold fields"),
            std::string::npos);
}

TEST(SettingsTest, AppliesWithTheDefaultsTypes) {
  const auto defaults = Json::parse(R"({"lr": 20, "name": "run", "fast": false, "seeds": [1, 2],
                                        "model": {"nhid": 1150, "dropout": 0.4}, "anything": null})");
  const auto result = apply_settings(defaults, {{"lr", "0.5"},
                                                {"name", "123"},
                                                {"fast", "yes"},
                                                {"seeds", "3,4,5"},
                                                {"model.dropout", "0"},
                                                {"anything", "1,x"}});
  EXPECT_EQ(result["lr"], Json(0.5));  // an integer default still takes a fraction (Lua's `lr = 20`)
  EXPECT_EQ(result["name"], Json("123"));  // a string default keeps digits as text
  EXPECT_EQ(result["fast"], Json(true));
  EXPECT_EQ(result["seeds"], Json::parse("[3, 4, 5]"));
  EXPECT_EQ(result["model"]["dropout"], Json(0.0));
  EXPECT_EQ(result["model"]["nhid"], Json(1150));  // untouched
  EXPECT_EQ(result["anything"], Json::parse(R"([1, "x"])"));
  EXPECT_EQ(apply_settings(defaults, {{"seeds", "7"}})["seeds"], Json::parse("[7]"));
}

TEST(SettingsTest, UnknownKeyNamesItTheNearestAndTheKnown) {
  const auto defaults = Json::parse(R"({"lr": 20, "epochs": 3, "model": {"nhid": 1}})");
  const auto message = error_of([&] { apply_settings(defaults, {{"lrr", "3"}}); });
  EXPECT_NE(message.find("--set lrr=3: unknown setting 'lrr' (did you mean 'lr'?)"), std::string::npos) << message;
  EXPECT_NE(message.find("known here: epochs, lr, model"), std::string::npos) << message;
  const auto nested = error_of([&] { apply_settings(defaults, {{"model.nhd", "3"}}); });
  EXPECT_NE(nested.find("unknown setting 'model.nhd' (did you mean 'model.nhid'?)"), std::string::npos) << nested;
}

TEST(SettingsTest, WrongTypeNamesTheExpectation) {
  const auto defaults = Json::parse(R"({"lr": 20.0, "fast": true, "model": {"nhid": 1}})");
  EXPECT_NE(error_of([&] { apply_settings(defaults, {{"lr", "fast"}}); }).find("'lr' expects a number, got 'fast'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { apply_settings(defaults, {{"fast", "2"}}); }).find("expects a boolean"), std::string::npos);
  EXPECT_NE(error_of([&] { apply_settings(defaults, {{"model", "3"}}); }).find("--set model.FIELD=VALUE"),
            std::string::npos);
  EXPECT_NE(error_of([&] { apply_settings(defaults, {{"lr.x", "3"}}); }).find("not a table"), std::string::npos);
}

}  // namespace
}  // namespace lmkit::config
