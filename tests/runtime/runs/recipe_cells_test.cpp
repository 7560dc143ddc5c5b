// A recipe folder's cells without a recipe: their ids as Lua wrote them, result.json's NaN and
// infinities, the rule that refuses a finished cell of other settings, and results.csv.
// (The whole, through `lmkit run`: tests/lua/recipe_test.lua and tests/cli/folder_status.sh.)
#include "runtime/runs/recipe_cells.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "runtime/core/error.h"
#include "tests/support/failure_text.h"
#include "tests/support/temporary_folder.h"

namespace lmkit::training {
namespace {

using lmkit::testing::contains;
using lmkit::testing::failure;
using nlohmann::json;

class RecipeCellsTest : public lmkit::testing::TemporaryFolderTest {
 protected:
  RecipeCellsTest() : TemporaryFolderTest("lmkit_recipe_cells_", true) {}

  std::string out() const { return dir("out"); }

  static std::string read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
};

TEST(CellIdTest, FieldsInKeyOrderWithValuesAsLuaWritesThem) {
  EXPECT_EQ(cell_id(json{{"seed", 3}, {"head", "gss"}, {"c", 0.5}}), "c=0.5,head=gss,seed=3");
  EXPECT_EQ(cell_id(json{{"x", 1.0}, {"y", 2}, {"z", -3}}), "x=1.0,y=2,z=-3");
  EXPECT_EQ(cell_id(json{{"a", 0.1}, {"b", 1e20}, {"c", 1.0 / 3}, {"d", true}}), "a=0.1,b=1e_20,c=0.33333333333333,d=true");
  // A file's positive integers read back as unsigned: the same id.
  EXPECT_EQ(cell_id(json::parse(R"({"seed": 3})")), "seed=3");
  EXPECT_EQ(cell_id(json{{"name", "a b/c"}, {"w", "\xC3\xA9"}}), "name=a_b_c,w=__");
  EXPECT_EQ(cell_id(json{{"paper", {1, 2}}}), "cell");
  EXPECT_EQ(cell_id(json::array()), "cell");  // an empty Lua table
  EXPECT_TRUE(contains(failure([] { cell_id(json{1, 2}); }), "a table of named values, not a list"));
}

TEST(CellIdTest, AGridHasCellsOfDistinctIdsAndSettingsTakeTheirDeclaredValues) {
  EXPECT_NO_THROW(check_recipe_cells("demo", {"x=1", "x=2"}));
  EXPECT_TRUE(contains(failure([] { check_recipe_cells("demo", {}); }), "recipe demo: grid() returned no cells"));
  EXPECT_TRUE(contains(failure([] { check_recipe_cells("demo", {"x=1", "x=2", "x=1"}); }),
                       "recipe demo: cells 1 and 3 are the same (x=1)"));
  const json choices = {{"scale", {"tiny", "small", "paper"}}, {"depth", {1, 2}}};
  EXPECT_NO_THROW(check_setting_choices("demo", {{"scale", "tiny"}, {"depth", 2.0}, {"other", 7}}, choices));
  EXPECT_TRUE(contains(failure([&] { check_setting_choices("demo", {{"scale", "tinyy"}, {"depth", 1}}, choices); }),
                       "recipe demo: --set scale=tinyy is not one of its values: tiny, small, paper"));
  EXPECT_TRUE(contains(failure([&] { check_setting_choices("demo", {{"scale", "tiny"}, {"depth", 3}}, choices); }),
                       "--set depth=3 is not one of its values: 1, 2"));
}

TEST(CellResultTest, NonFiniteNumbersAreTextsListedByPathAndComeBack) {
  const json result = {{"ppl", std::nan("")}, {"ratio", HUGE_VAL}, {"rank", {{"press", -HUGE_VAL}, {"ok", 4}}},
                       {"ranks", {1.5, std::nan("")}}, {"word", "NaN"}};
  const auto stored = json::parse(encode_cell_result(result));
  EXPECT_EQ(stored.at("ppl"), "NaN");
  EXPECT_EQ(stored.at("ratio"), "Infinity");
  EXPECT_EQ(stored.at("rank").at("press"), "-Infinity");
  EXPECT_EQ(stored.at("$non_finite"), json::parse(R"([["ppl"], ["rank", "press"], ["ranks", 2], ["ratio"]])"));
  const auto back = decode_cell_result(stored);
  EXPECT_TRUE(std::isnan(back.at("ppl").get<double>()));
  EXPECT_EQ(back.at("ratio").get<double>(), HUGE_VAL);
  EXPECT_EQ(back.at("rank").at("press").get<double>(), -HUGE_VAL);
  EXPECT_TRUE(std::isnan(back.at("ranks").at(1).get<double>()));
  EXPECT_EQ(back.at("word"), "NaN");  // a string that reads "NaN" stays a string
  EXPECT_FALSE(back.contains("$non_finite"));
  // A damaged list is skipped, not obeyed.
  auto odd = stored;
  odd["$non_finite"] = json::parse(R"([["nowhere", 7], [], 3, ["ranks", 99]])");
  EXPECT_EQ(decode_cell_result(odd).at("ppl"), "NaN");
  EXPECT_TRUE(contains(failure([] { encode_cell_result(json{{"$non_finite", 1}}); }), "must not use the key '$non_finite'"));
}

TEST_F(RecipeCellsTest, AFinishedCellHasItsSettingsRecordedBeforeItsResult) {
  record_cell_failure(out(), "x=1", std::string("boom"), "traceback here");
  EXPECT_TRUE(contains(read(out() + "/cells/x=1/failed.json"), "boom"));
  EXPECT_FALSE(read_cell_result(out(), "x=1"));
  write_cell_result(out(), "demo", {"x=1", {{"x", 1}}}, {{"epochs", 2}}, {{"test_ppl", 60.5}});
  const auto settings = json::parse(read(out() + "/cells/x=1/settings.json"));
  EXPECT_EQ(settings, (json{{"recipe", "demo"}, {"cell", "x=1"}, {"fields", {{"x", 1}}}, {"settings", {{"epochs", 2}}}}));
  EXPECT_EQ(read_cell_result(out(), "x=1")->at("test_ppl"), 60.5);
  EXPECT_FALSE(std::filesystem::exists(out() + "/cells/x=1/failed.json"));  // a success removes it
  EXPECT_TRUE(contains(failure([&] { write_cell_result(out(), "demo", {"x=2", {}}, {}, json{1, 2}); }),
                       "run() must return a table of named results for cell x=2"));
  // A result.json that is not an object (cut, or a list) is no result.
  std::ofstream(out() + "/cells/x=1/result.json") << "[12]";
  EXPECT_FALSE(read_cell_result(out(), "x=1"));
}

TEST_F(RecipeCellsTest, AFinishedCellOfOtherSettingsIsRefusedButSettingsThatChooseCellsAreNot) {
  write_cell_result(out(), "demo", {"head=mos", {{"head", "mos"}}}, {{"epochs", 2}, {"heads", "mos"}, {"lr", 20}}, {{"ppl", 1}});
  // heads chooses the grid's cells (another value, another grid); epochs and lr do not.
  int asked = 0;
  const GridWithSetting grid_with = [&](const std::string& key, const json& value) -> std::optional<std::vector<std::string>> {
    ++asked;
    if (key == "heads") return std::vector<std::string>{"head=" + value.get<std::string>()};
    return std::vector<std::string>{"head=mos"};
  };
  const json defaults = {{"epochs", 1}, {"heads", "softmax"}, {"lr", 20}, {"init_from", ""}};
  const json same = {{"epochs", 2}, {"heads", "mos"}, {"lr", 20.0}};  // 20 and 20.0 are one value
  // A setting declared since the cell was made: it was made at the default; another value differs.
  EXPECT_FALSE(cell_settings_difference(out(), "head=mos", {{"epochs", 2}, {"heads", "mos"}, {"lr", 20}, {"init_from", ""}},
                                        defaults, grid_with));
  const auto newer = cell_settings_difference(out(), "head=mos", {{"epochs", 2}, {"heads", "mos"}, {"lr", 20}, {"init_from", "runs/a"}},
                                              defaults, grid_with);
  ASSERT_TRUE(newer);
  EXPECT_EQ(newer->texts, (std::vector<std::string>{"init_from = \"\" there, \"runs/a\" now"}));
  EXPECT_FALSE(cell_settings_difference(out(), "head=mos", same, defaults, grid_with));
  EXPECT_FALSE(cell_settings_difference(out(), "head=mos", {{"epochs", 2}, {"heads", "mos,gss"}, {"lr", 20}}, defaults, grid_with));
  const auto found = cell_settings_difference(out(), "head=mos", {{"epochs", 1}, {"heads", "mos"}, {"lr", 30}}, defaults, grid_with);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->texts, (std::vector<std::string>{"epochs = 2 there, 1 now", "lr = 20 there, 30 now"}));
  EXPECT_EQ(found->sets, (std::vector<std::string>{"--set epochs=2", "--set lr=20"}));
  EXPECT_EQ(found->suffixes, (std::vector<std::string>{"epochs1", "lr30"}));
  const auto text = failure([&] {
    check_cells_settings("demo", out(), {"head=mos", "head=gss"}, {{"epochs", 1}, {"heads", "mos,gss"}, {"lr", 20}}, defaults, grid_with, false);
  });
  EXPECT_TRUE(contains(text, "recipe demo: cell head=mos in " + out() + " holds results made with other settings "
                             "(epochs = 2 there, 1 now); they would be reported as this run's. Use another output folder "
                             "(--set out=" + out() + "-epochs1), the folder's settings (--set epochs=2), or remove " + out() +
                             "/cells to run every cell again.")) << text;
  const auto report = failure([&] {
    check_cells_settings("demo", out(), {"head=mos"}, {{"epochs", 1}, {"heads", "mos"}, {"lr", 20}}, defaults, grid_with, true);
  });
  EXPECT_TRUE(contains(report, "Report it with the folder's settings (--set epochs=2)")) << report;
  // Each setting's grid is asked once per value, however many cells.
  asked = 0;
  EXPECT_NO_THROW(check_cells_settings("demo", out(), {"head=mos", "head=mos", "head=mos"},
                                       {{"epochs", 2}, {"heads", "mos,gss"}, {"lr", 20}}, defaults, grid_with, false));
  EXPECT_EQ(asked, 2);
  // A damaged record proves nothing; a cell from before settings were recorded is taken as it is.
  std::ofstream(out() + "/cells/head=mos/settings.json") << "{\"settings\": ";
  const auto damaged = cell_settings_difference(out(), "head=mos", same, defaults, grid_with);
  ASSERT_TRUE(damaged);
  EXPECT_EQ(damaged->texts, (std::vector<std::string>{"its settings.json is damaged, so its settings are unknown"}));
  std::filesystem::remove(out() + "/cells/head=mos/settings.json");
  EXPECT_FALSE(cell_settings_difference(out(), "head=mos", {{"epochs", 9}}, defaults, grid_with));
}

TEST_F(RecipeCellsTest, ResultsCsvHasOneRowPerCellAndNumberAtFullPrecision) {
  std::vector<CellResult> results = {
      {{"c=0.5,seed=1", {{"c", 0.5}, {"seed", 1}}},
       json{{"test_ppl", 60.37}, {"rank", {{"press", 3}}}, {"ppl", std::nan("")}, {"name", "a,\"b\""},
            {"spectrum", json::array()}}},
      {{"c=1,seed=2", {{"c", 1}, {"seed", 2}, {"tag", "x"}}}, std::nullopt}};
  for (int i = 0; i < 40; ++i) results[0].result->at("spectrum").push_back(i);  // longer than 32: not in the table
  results[0].result->at("rank")["list"] = {0.1, true};
  std::filesystem::create_directories(out());
  write_tidy_results(out(), results);
  EXPECT_EQ(read(out() + "/results.csv"),
            "cell,c,seed,tag,metric,value\n"
            "\"c=0.5,seed=1\",0.5,1,,name,\"a,\"\"b\"\"\"\n"
            "\"c=0.5,seed=1\",0.5,1,,ppl,nan\n"
            "\"c=0.5,seed=1\",0.5,1,,rank.list.1,0.1\n"
            "\"c=0.5,seed=1\",0.5,1,,rank.list.2,true\n"
            "\"c=0.5,seed=1\",0.5,1,,rank.press,3\n"
            "\"c=0.5,seed=1\",0.5,1,,test_ppl,60.37\n");
}

}  // namespace
}  // namespace lmkit::training
