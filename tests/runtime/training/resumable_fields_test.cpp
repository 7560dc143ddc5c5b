// ResumableFields: each field declared once gives both its saved value and its loading; non-finite
// doubles round-trip through null; states of earlier versions load with the declared default; a
// missing or mistyped field names the file and the key.
#include "runtime/training/resumable_fields.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/core/error.h"
#include "runtime/training/run_progress.h"

namespace lmkit::training {
namespace {

struct Example {
  std::int64_t count = 0;
  bool flag = false;
  std::string name;
  std::vector<double> history;
  std::optional<std::int64_t> maybe;
  double best = std::numeric_limits<double>::infinity();
  double loss = std::numeric_limits<double>::quiet_NaN();
  double added_later = 7;

  ResumableFields fields() {
    ResumableFields f;
    f.add("count", count).add("flag", flag).add("name", name).add("history", history).add("maybe", maybe);
    f.add("best", best, std::numeric_limits<double>::infinity());
    f.add("loss", loss, std::numeric_limits<double>::quiet_NaN());
    f.add("added_later", added_later, 0).optional(7.0);
    return f;
  }
};

TEST(ResumableFieldsTest, EveryKindOfFieldRoundTripsThroughJsonText) {
  Example a;
  a.count = (std::int64_t{1} << 62) + 3;
  a.flag = true;
  a.name = "finetune";
  a.history = {1.5, -0.25, 1e-300};
  a.maybe = 4;
  a.best = 0.125;
  a.loss = 3.0;
  a.added_later = -2.5;
  const auto text = a.fields().save().dump();  // as state.ckpt's header holds it
  Example b;
  b.fields().load(nlohmann::json::parse(text), "state.ckpt");
  EXPECT_EQ(b.count, a.count);
  EXPECT_EQ(b.flag, true);
  EXPECT_EQ(b.name, "finetune");
  EXPECT_EQ(b.history, a.history);
  EXPECT_EQ(b.maybe, std::optional<std::int64_t>(4));
  EXPECT_EQ(b.best, 0.125);
  EXPECT_EQ(b.loss, 3.0);
  EXPECT_EQ(b.added_later, -2.5);
}

TEST(ResumableFieldsTest, NonFiniteDoublesAndEmptyOptionalsAreNullAndComeBack) {
  Example a;  // best = inf, loss = NaN, maybe empty
  const auto saved = a.fields().save();
  EXPECT_TRUE(saved.at("best").is_null());
  EXPECT_TRUE(saved.at("loss").is_null());
  EXPECT_TRUE(saved.at("maybe").is_null());
  Example b;
  b.best = 1, b.loss = 1, b.maybe = 9;
  b.fields().load(nlohmann::json::parse(saved.dump()), "state.ckpt");
  EXPECT_TRUE(std::isinf(b.best) && b.best > 0);
  EXPECT_TRUE(std::isnan(b.loss));
  EXPECT_FALSE(b.maybe.has_value());
}

TEST(ResumableFieldsTest, AnOptionalFieldMayBeAbsentARequiredOneIsNamed) {
  Example a;
  auto saved = a.fields().save();
  saved.erase("added_later");  // a state written before the field existed
  Example b;
  b.added_later = 0;
  b.fields().load(saved, "runs/x/state.ckpt");
  EXPECT_EQ(b.added_later, 7);
  saved.erase("count");
  try {
    b.fields().load(saved, "runs/x/state.ckpt");
    FAIL() << "a state without 'count' loaded";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("runs/x/state.ckpt: the resume state lacks 'count'"), std::string::npos) << e.what();
  }
  auto mistyped = a.fields().save();
  mistyped["flag"] = "yes";
  try {
    b.fields().load(mistyped, "runs/x/state.ckpt");
    FAIL() << "a string loaded into a bool";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("the resume state's 'flag' is \"yes\", which cannot be read"), std::string::npos)
        << e.what();
  }
}

// The trainer's parts declare disjoint keys: a key declared twice would be saved once and loaded
// into two places.
TEST(ResumableFieldsTest, TheRunsPartsDeclareEachKeyOnce) {
  RunPosition position;
  LossTotals losses;
  BestModel best;
  AveragingState averaging;
  FinetuneProgress finetune;
  RunClocks clocks;
  ResumableFields f;
  position.declare(f);
  losses.declare(f);
  best.declare(f);
  averaging.declare(f);
  finetune.declare(f);
  clocks.declare(f);
  auto keys = f.keys();
  const auto count = keys.size();
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  EXPECT_EQ(keys.size(), count);
  EXPECT_EQ(count, 21u);
}

}  // namespace
}  // namespace lmkit::training
