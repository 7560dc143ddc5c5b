// make_corpus and corpus_name: the one place that decides between the synthetic corpus and a real
// one, names a corpus after its folder, and refuses options of the other kind.
#include "runtime/data/corpus_request.h"

#include <gtest/gtest.h>

#include "runtime/core/error.h"
#include "tests/runtime/data/data_test_util.h"

namespace lmkit::data {
namespace {

using testing::TempDir;

TEST(CorpusRequestTest, ACorpusIsNamedByItsNameElseItsFolderElseSynthetic) {
  EXPECT_EQ(corpus_name(std::nullopt, std::nullopt), "synthetic");
  EXPECT_EQ(corpus_name(std::string(""), std::nullopt), "synthetic");
  EXPECT_EQ(corpus_name(std::string("ptb"), std::string("/data/other")), "ptb");
  EXPECT_EQ(corpus_name(std::nullopt, std::string("/data/penn")), "penn");
  EXPECT_EQ(corpus_name(std::nullopt, std::string("/data/penn/")), "penn");
  EXPECT_EQ(corpus_name(std::nullopt, std::string("/data/penn/./")), "penn");
  TempDir dir;
  const auto inner = dir.path() / "wikitext-2";
  std::filesystem::create_directories(inner);
  // "." and ".." are named after the folder they mean.
  EXPECT_EQ(corpus_name(std::nullopt, (inner / ".").string()), "wikitext-2");
  EXPECT_EQ(corpus_name(std::nullopt, (inner / "sub" / "..").string()), "wikitext-2");
}

TEST(CorpusRequestTest, TheSyntheticCorpusTakesItsSizesAndLanguage) {
  CorpusRequest request;
  request.synthetic.vocab = 17;
  request.train = 300, request.valid = 40, request.test = 50;
  EXPECT_FALSE(reads_files(request));
  const auto corpus = make_corpus(request);
  EXPECT_EQ(corpus.name, "synthetic");
  EXPECT_EQ(corpus.vocab->size(), 17);
  EXPECT_EQ(corpus.train.numel(), 300);
  EXPECT_EQ(corpus.valid.numel(), 40);
  EXPECT_EQ(corpus.test.numel(), 50);
}

TEST(CorpusRequestTest, ARealCorpusIsReadFromItsFolder) {
  TempDir dir;
  dir.write("tiny/train.txt", "a b c\nb c a\n");
  dir.write("tiny/valid.txt", "a c\n");
  dir.write("tiny/test.txt", "b a\n");
  CorpusRequest request;
  request.path = (dir.path() / "tiny").string();
  request.cache = false;
  request.given = {"path", "cache"};
  EXPECT_TRUE(reads_files(request));
  LoadReport report;
  const auto corpus = make_corpus(request, &report);
  EXPECT_EQ(corpus.name, "tiny");
  EXPECT_EQ(corpus.vocab->size(), 4);  // a b c <eos>
  EXPECT_EQ(corpus.train.numel(), 8);
}

TEST(CorpusRequestTest, OptionsOfTheOtherKindAreRefusedByName) {
  CorpusRequest synthetic;
  synthetic.given = {"cache_dir"};
  try {
    make_corpus(synthetic);
    FAIL() << "cache_dir accepted for the synthetic corpus";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "option 'cache_dir' is for real corpora, not name=\"synthetic\"");
  }
  CorpusRequest real;
  real.name = "ptb";
  real.given = {"name", "states"};
  try {
    make_corpus(real);
    FAIL() << "states accepted for a real corpus";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "option 'states' is for name=\"synthetic\" only");
  }
}

}  // namespace
}  // namespace lmkit::data
