// The reader follows AWD-LSTM's data.py (ids by first appearance, "<eos>" per line) and turns every
// kind of bad input into correct data or an error naming the file and line.
#include "runtime/data/corpus_reader.h"

#include <gtest/gtest.h>

#include "runtime/core/error.h"
#include "runtime/data/content_hash.h"
#include "tests/runtime/data/data_test_util.h"

namespace lmkit::data {
namespace {

using testing::TempDir;

std::vector<std::int64_t> ids_of(const std::string& text, Vocabulary& vocab) {
  return tokenize_text(text, vocab, "t.txt").ids;
}

std::string error_of(const std::filesystem::path& file) {
  Vocabulary vocab;
  try {
    tokenize_file(file, vocab);
  } catch (const EnvironmentError& e) {
    return e.what();
  }
  return "";
}

TEST(VocabularyTest, IdsInOrderOfFirstAppearance) {
  Vocabulary v;
  EXPECT_EQ(v.add("the"), 0);
  EXPECT_EQ(v.add("cat"), 1);
  EXPECT_EQ(v.add("the"), 0);
  EXPECT_EQ(v.size(), 2);
  EXPECT_EQ(v.word(1), "cat");
  EXPECT_EQ(v.find("dog"), std::nullopt);
  EXPECT_THROW(v.word(2), UsageError);
  EXPECT_THROW(v.word(-1), UsageError);
  Vocabulary copy = v;  // the copy's lookup table must view its own words
  v = Vocabulary();
  EXPECT_EQ(copy.find("cat"), 1);
}

TEST(VocabularyTest, EncodeAndDecode) {
  Vocabulary v;
  tokenize_text("a b <unk>\n", v);
  EXPECT_EQ(v.encode("b  a"), (std::vector<std::int64_t>{1, 0}));
  EXPECT_EQ(v.encode("a", true), (std::vector<std::int64_t>{0, 3}));
  EXPECT_EQ(v.encode("a zebra", false, std::string("<unk>")), (std::vector<std::int64_t>{0, 2}));
  EXPECT_EQ(v.decode({1, 0, 3}), "b a <eos>");
  try {
    v.encode("a zebra");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'zebra'"), std::string::npos);
  }
}

TEST(CorpusReaderTest, FollowsTheReferenceReader) {
  Vocabulary v;
  // data.py: line.split() + ['<eos>'], "<eos>" taking its id after the first line's words.
  EXPECT_EQ(ids_of("b a\n\n a  c \n", v), (std::vector<std::int64_t>{0, 1, 2, 2, 1, 3, 2}));
  EXPECT_EQ(v.word(2), "<eos>");
  // A second file continues the same vocabulary.
  EXPECT_EQ(ids_of("c d", v), (std::vector<std::int64_t>{3, 4, 2}));
}

TEST(CorpusReaderTest, LineEndsAreRecorded) {
  Vocabulary v;
  auto f = tokenize_text("a b\nc\n\nd e f\n", v);
  EXPECT_EQ(f.line_ends, (std::vector<std::size_t>{3, 5, 6, 10}));
}

TEST(CorpusReaderTest, CrLfAndLoneCrEndLinesLikeUniversalNewlines) {
  Vocabulary a, b;
  EXPECT_EQ(ids_of("x y\r\nz\r\n", a), ids_of("x y\nz\n", b));
  Vocabulary c, d;
  EXPECT_EQ(ids_of("x y\rz\r", c), ids_of("x y\nz\n", d));
  Vocabulary e;
  EXPECT_EQ(tokenize_text("x\r\n\r\ny", e).line_ends.size(), 3u);
}

TEST(CorpusReaderTest, CrLfSplitAcrossReadChunksIsOneLineEnd) {
  TempDir dir;
  // The 4 MiB read chunk ends between '\r' and '\n'.
  std::string text(4 * 1024 * 1024 - 1, 'a');
  text += "\r\nb\n";
  Vocabulary v;
  auto f = tokenize_file(dir.write("c.txt", text), v);
  EXPECT_EQ(f.line_ends.size(), 2u);
  EXPECT_EQ(f.ids.size(), 4u);
}

TEST(CorpusReaderTest, ByteOrderMarkIsSkipped) {
  Vocabulary a, b;
  EXPECT_EQ(ids_of("\xEF\xBB\xBFhello world\n", a), ids_of("hello world\n", b));
  EXPECT_EQ(a.word(0), "hello");
}

TEST(CorpusReaderTest, UnicodeWhitespaceSplitsLikePythonStrSplit) {
  Vocabulary v;
  // U+00A0 (no-break space), U+3000 (ideographic space), \x1f (unit separator), \f, \v.
  EXPECT_EQ(ids_of("a\xC2\xA0" "b\xE3\x80\x80" "c\x1f" "d\fe\vf\n", v).size(), 7u);
  EXPECT_EQ(v.word(5), "f");
  // Non-space multi-byte characters stay inside words.
  Vocabulary w;
  ids_of("caf\xC3\xA9 \xE2\x82\xAC\n", w);
  EXPECT_EQ(w.word(0), "caf\xC3\xA9");
}

TEST(CorpusReaderTest, InvalidUtf8NamesFileLineAndColumn) {
  TempDir dir;
  const auto file = dir.write("bad.txt", "fine line\nstill fine\nhere \xFF is bad\n");
  const auto message = error_of(file);
  EXPECT_NE(message.find(file.string() + ":3: invalid UTF-8 (byte 0xFF at byte column 6)"), std::string::npos) << message;
  // A lead byte whose continuation is missing is the broken character: its column, not the next byte's.
  const auto broken = error_of(dir.write("b1.txt", "ab\xE9" "cd\n"));
  EXPECT_NE(broken.find(":1: invalid UTF-8 (byte 0xE9 at byte column 3: it starts a 3-byte character but the next "
                        "byte 0x63 does not continue it)"),
            std::string::npos)
      << broken;
  const auto second = error_of(dir.write("b5.txt", "\xE2\x82x\n"));
  EXPECT_NE(second.find("(byte 0xE2 at byte column 1: it starts a 3-byte character but the next byte 0x78"),
            std::string::npos)
      << second;
  // Truncated sequence at the end of a line, overlong form, surrogate.
  EXPECT_NE(error_of(dir.write("b2.txt", "ok\nab\xC3\n")).find(":2: invalid UTF-8 (byte 0xC3 at byte column 3: it "
                                                                 "starts a 2-byte character but the line ends first)"),
            std::string::npos);
  EXPECT_NE(error_of(dir.write("b3.txt", "\xC0\xAF\n")).find(":1: invalid UTF-8"), std::string::npos);
  EXPECT_NE(error_of(dir.write("b4.txt", "\xED\xA0\x80\n")).find(":1: invalid UTF-8"), std::string::npos);
}

TEST(CorpusReaderTest, EmptyMissingAndFolderPathsAreNamed) {
  TempDir dir;
  const auto empty = dir.write("empty.txt", "");
  EXPECT_NE(error_of(empty).find(empty.string() + ": the file is empty"), std::string::npos);
  const auto missing = dir.path() / "missing.txt";
  EXPECT_NE(error_of(missing).find("cannot open corpus file '" + missing.string() + "': No such file or directory"),
            std::string::npos)
      << error_of(missing);
  // A folder where the file should be is said to be one (a stream reported it as missing or "underflow").
  const auto folder = dir.path() / "train.txt";
  std::filesystem::create_directory(folder);
  EXPECT_NE(error_of(folder).find("cannot open corpus file '" + folder.string() + "': it is a folder, not a file"),
            std::string::npos)
      << error_of(folder);
}

TEST(CorpusReaderTest, TenMegabyteLineIsReadWhole) {
  TempDir dir;
  std::string text;
  text.reserve(11 << 20);
  std::size_t words = 0;
  while (text.size() < (10u << 20)) text += "w" + std::to_string(words++ % 1000) + "   ";
  text += "\nlast\n";
  Vocabulary v;
  auto f = tokenize_file(dir.write("long.txt", text), v);
  EXPECT_EQ(f.ids.size(), words + 1 + 2);
  EXPECT_EQ(f.line_ends.size(), 2u);
  EXPECT_EQ(v.size(), 1000 + 2);
  EXPECT_EQ(f.content_hash, hash_bytes(text.data(), text.size()));
}

TEST(CorpusReaderTest, LastLineWithoutNewlineCounts) {
  Vocabulary v;
  EXPECT_EQ(ids_of("a\nb", v), (std::vector<std::int64_t>{0, 1, 2, 1}));
}

TEST(ContentHashTest, IndependentOfChunkingAndSensitiveToChange) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += static_cast<char>(i * 7);
  const auto whole = hash_bytes(text.data(), text.size());
  for (std::size_t step : {1, 3, 31, 32, 33, 500}) {
    ContentHash h;
    for (std::size_t i = 0; i < text.size(); i += step) h.update(text.data() + i, std::min(step, text.size() - i));
    EXPECT_EQ(h.digest(), whole) << step;
  }
  std::string changed = text;
  changed[500] ^= 1;
  EXPECT_NE(hash_bytes(changed.data(), changed.size()), whole);
  EXPECT_NE(hash_bytes(text.data(), text.size() - 1), whole);
}

}  // namespace
}  // namespace lmkit::data
