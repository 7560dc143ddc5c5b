// A checkpoint whose checksum matches but whose inside is damaged — written so by another program,
// or edited — is refused in lmkit's words naming the file and the part: never Torch's zip reader
// or unpickler speaking ("PytorchStreamReader failed …", "INTERNAL ASSERT FAILED … report a bug to
// PyTorch", "vector::_M_range_check"), and never a crash (LibTorch 1.13's unpickler dies with
// SIGSEGV on a pickle with its third byte changed: lmkit reads its checkpoints with its own zip and
// pickle readers). Each part of the weights archive is damaged in turn: its zip structure, each
// record's bytes, each record missing, and the pickled object table with its CRC-32 made right.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runtime/models/awd_lstm.h"
#include "runtime/core/byte_span.h"
#include "runtime/core/error.h"
#include "runtime/models/checkpoint.h"
#include "runtime/tensor_files/zip_archive.h"
#include "tests/support/temporary_folder.h"

namespace lmkit {
namespace {

class CheckpointDamageTest : public testing::TemporaryFolderTest {
 protected:
  CheckpointDamageTest() : TemporaryFolderTest("lmkit_checkpoint_damage_test_", /*create=*/true) {}

  void SetUp() override {
    TemporaryFolderTest::SetUp();
    path_ = dir("model.ckpt");
    LanguageModelOptions options;
    options.encoder(AwdLstmOptions().vocab_size(20).emb(6).nhid(8).nhidlast(6).nlayers(2));
    save_checkpoint(LanguageModel(options), path_);
    std::ifstream in(path_, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    container_ = decode_container(bytes, path_);
  }

  // Writes the checkpoint with `archive` inside (its checksum right) and loads it: "" when it
  // loads, else the error's text; any error that is not lmkit's EnvironmentError fails the test.
  std::string load_with(const std::string& archive, const std::string& what) {
    {
      std::ofstream out(path_, std::ios::binary | std::ios::trunc);
      out << encode_container(container_.header, archive);
    }
    try {
      load_checkpoint(path_);
      return "";
    } catch (const EnvironmentError& e) {
      const std::string text = e.what();
      EXPECT_NE(text.find(path_), std::string::npos) << what << ": " << text;
      for (const char* foreign : {"PytorchStreamReader", "INTERNAL ASSERT", "_M_range_check", "report a bug",
                                  "json.exception", "Exception raised from", "c10::"}) {
        EXPECT_EQ(text.find(foreign), std::string::npos) << what << ": " << text;
      }
      return text;
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": not lmkit's error: " << e.what();
      return "?";
    }
  }

  // The archive's records, in order.
  std::vector<std::pair<std::string, std::string>> records() const {
    const ByteSpan bytes("the archive", container_.archive, "an archive");
    std::vector<std::pair<std::string, std::string>> out;
    std::string buffer;
    for (const auto& member : tensor_files::zip_members(bytes)) {
      out.emplace_back(member.name, std::string(tensor_files::member_bytes(member, buffer, member.name)));
    }
    return out;
  }

  std::string path_;
  Container container_;
};

TEST_F(CheckpointDamageTest, TheArchiveRewrittenWithTheSameRecordsLoads) {
  // What the other cases build on: a zip of lmkit's own writing with Torch's records reads back.
  EXPECT_EQ(load_with(tensor_files::stored_zip(records()), "the records re-zipped"), "");
}

TEST_F(CheckpointDamageTest, EachByteOfTheZipStructureOrARecordDamagedIsRefusedNamingThePart) {
  const std::string& archive = container_.archive;
  std::map<std::string, int> refusals;
  // Every byte of the archive's first and last 512 (local headers, the directory, its end record)
  // and every 7th in between (each record's bytes).
  for (std::size_t at = 0; at < archive.size(); at += (at < 512 || at + 512 >= archive.size()) ? 1 : 7) {
    auto damaged = archive;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x24);
    const auto text = load_with(damaged, "byte " + std::to_string(at) + " changed");
    if (text.find("CRC-32") != std::string::npos) ++refusals["a record's CRC-32"];
    else if (!text.empty()) ++refusals["the zip structure"];
  }
  for (std::size_t length : {std::size_t{0}, std::size_t{10}, archive.size() / 2, archive.size() - 1}) {
    const auto text = load_with(archive.substr(0, length), "cut to " + std::to_string(length) + " bytes");
    EXPECT_NE(text, "") << "an archive cut to " << length << " bytes loaded";
  }
  EXPECT_GT(refusals["a record's CRC-32"], 0);
  EXPECT_GT(refusals["the zip structure"], 0);
}

TEST_F(CheckpointDamageTest, EachRecordMissingIsRefusedNamingIt) {
  const auto all = records();
  int named = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    auto fewer = all;
    fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(i));
    const auto text = load_with(tensor_files::stored_zip(fewer), "without '" + all[i].first + "'");
    // TorchScript's code and constants are not read (lmkit reads only the pickle and the tensors'
    // storages): they may go. The pickle or a storage missing is named.
    if (!text.empty()) {
      ++named;
      const auto base = all[i].first.substr(all[i].first.find('/') + 1);
      EXPECT_NE(text.find(base), std::string::npos) << text;
      EXPECT_TRUE(base == "data.pkl" || base.rfind("data/", 0) == 0) << base << ": " << text;
    }
  }
  EXPECT_GT(named, 0) << "no record's absence was named";
}

TEST_F(CheckpointDamageTest, ADamagedObjectTableWithARightCrcIsRefusedInLmkitsWords) {
  const auto all = records();
  std::size_t table = all.size();
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].first.size() >= 8 && all[i].first.compare(all[i].first.size() - 8, 8, "data.pkl") == 0) table = i;
  }
  ASSERT_LT(table, all.size()) << "no data.pkl among the records";
  const std::string pickle = all[table].second;
  int refused = 0;
  // Every byte of the pickle changed (two ways), and the pickle cut short at each tenth.
  for (std::size_t at = 0; at < pickle.size(); ++at) {
    for (const unsigned char mask : {0x01, 0x80}) {
      auto damaged = all;
      damaged[table].second[at] = static_cast<char>(damaged[table].second[at] ^ mask);
      if (!load_with(tensor_files::stored_zip(damaged), "pickle byte " + std::to_string(at) + " changed").empty()) {
        ++refused;
      }
    }
  }
  for (int tenth = 0; tenth < 10; ++tenth) {
    auto damaged = all;
    damaged[table].second.resize(pickle.size() * static_cast<std::size_t>(tenth) / 10);
    const auto text = load_with(tensor_files::stored_zip(damaged), "pickle cut at " + std::to_string(tenth) + "/10");
    EXPECT_NE(text.find("its pickle (data.pkl) is damaged"), std::string::npos) << text;
  }
  EXPECT_GT(refused, 0);
}

TEST_F(CheckpointDamageTest, AResumeStateIsNamedAsOneWithTheWayToIt) {
  // A run's state.ckpt: a checkpoint's container with the run's state beside the config.
  auto header = container_.header;
  header["state"] = nlohmann::json::object();
  const auto state = dir("state.ckpt");
  {
    std::ofstream out(state, std::ios::binary);
    out << encode_container(header, container_.archive);
  }
  for (int way = 0; way < 2; ++way) {
    try {
      if (way == 0) {
        load_checkpoint(state);
      } else {
        auto model = load_checkpoint(path_).model;
        load_weights(model, state);
      }
      ADD_FAILURE() << "a resume state was loaded as a model";
    } catch (const EnvironmentError& e) {
      const std::string text = e.what();
      EXPECT_NE(text.find("'" + state + "' is a run's resume state (state.ckpt), not a model checkpoint: lmkit.resume(\"" +
                          root_.string() + "\")"),
                std::string::npos)
          << text;
    }
  }
}

TEST(DamagedContainerTest, AHeaderWithoutAnEntryOrOfTheWrongTypeIsNamedAsSuch) {
  try {
    reading_container("resume state 'run/state.ckpt'", [] { return nlohmann::json::object().at("state"); });
    ADD_FAILURE() << "no error";
  } catch (const EnvironmentError& e) {
    EXPECT_STREQ(e.what(),
                 "resume state 'run/state.ckpt' is damaged inside: its header has no entry 'state'. Its checksum "
                 "matches, so it was written this way (by another program, or edited), not damaged on disk; use "
                 "another checkpoint of the run (best.ckpt, state.ckpt) or train again");
  }
  try {
    reading_container("checkpoint 'm.ckpt'", [] { return nlohmann::json("text").get<int>(); });
    ADD_FAILURE() << "no error";
  } catch (const EnvironmentError& e) {
    EXPECT_NE(std::string(e.what()).find("an entry of its header has the wrong type"), std::string::npos) << e.what();
  }
  // lmkit's own errors pass through as they are.
  EXPECT_THROW(reading_container("x", []() -> int { throw ConfigError("bad"); }), ConfigError);
}

}  // namespace
}  // namespace lmkit
