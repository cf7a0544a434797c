// Every reader and output writer fails in Rota's words: a JSON parser's or the file system's
// own message never is the error. Each case gives a reader (or writer) input it must refuse and
// checks that the message names the file and the fix, and carries no library tag.
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "app/run/error_text.h"
#include "data/tokenizer/tokenizer.h"
#include "framework/base/error.h"
#include "framework/base/file_io.h"
#include "framework/io/safetensors.h"
#include "tests/hostile/hostile_support.h"
#include "tests/support/temp_dir.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using hostile::kTinyRecipe;
using hostile::rota;

// A failed run whose output holds every needle and none of the libraries' own wording.
void expect_in_rotas_words(const testing::CommandResult& r,
                           const std::vector<std::string>& needles) {
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_TRUE(r.code == 1 || r.code == 2) << "not a clean failure (crash?): " << r.code << "\n"
                                          << r.output;
  for (const std::string& needle : needles) {
    EXPECT_NE(r.output.find(needle), std::string::npos) << "no '" << needle << "' in\n" << r.output;
  }
  for (const char* library : {"[json.exception", "filesystem error:", "terminate called"}) {
    EXPECT_EQ(r.output.find(library), std::string::npos) << library << " in\n" << r.output;
  }
}

std::string train(const fs::path& out, const std::vector<std::string>& sets) {
  std::string command = "train " + kTinyRecipe + " --out " + out.string() +
                        " --set train.steps=1 --set train.eval_every=1 --set train.eval_batches=1";
  for (const std::string& set : sets) command += " --set '" + set + "'";
  return command;
}

void write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string lines_of_text(int n) {
  std::string text;
  for (int i = 0; i < n; ++i) text += "line " + std::to_string(i) + " of some words to read\n";
  return text;
}

TEST(LibraryErrors, JsonLinesRecordsNameTheFileAndLine) {
  rota::testing::TempDir dir;
  std::string records;
  for (int i = 0; i < 300; ++i) records += "{\"text\": \"record " + std::to_string(i) + "\"}\n";
  write(dir.path() / "bad.jsonl", records + "{\"text\": \"cut off\n");
  expect_in_rotas_words(
      rota(
          train(dir.path() / "run", {"data.files={train: \"" + (dir.path() / "bad.jsonl").string() +
                                     "\" valid_fraction: 0.1}"})),
      {(dir.path() / "bad.jsonl").string() + ":301", "not valid JSON", "one JSON object per line"});
}

TEST(LibraryErrors, AManifestThatIsNotJsonIsNamedWithTheFix) {
  rota::testing::TempDir dir;
  const fs::path prepared = dir.path() / "prepared";
  ASSERT_EQ(rota("data prepare " + kTinyRecipe + " --out " + prepared.string()).code, 0);
  std::string manifest = read_file(prepared / "manifest.json");
  write(prepared / "manifest.json", manifest.substr(0, manifest.size() / 2));
  expect_in_rotas_words(
      rota(train(dir.path() / "run", {"data.prepared=" + prepared.string()})),
      {(prepared / "manifest.json").string(), "not valid JSON", "prepare the corpus again"});
  write(prepared / "manifest.json", nlohmann::json::parse(manifest).dump());
  nlohmann::json edited = nlohmann::json::parse(manifest);
  edited["tokenizer"]["vocab_size"] = "many";
  write(prepared / "manifest.json", edited.dump());
  expect_in_rotas_words(rota(train(dir.path() / "run2", {"data.prepared=" + prepared.string()})),
                        {(prepared / "manifest.json").string(), "vocab_size", "wrong type"});
}

// Message of the rota::Error that f throws (a failure when it throws nothing else).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a rota::Error: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "nothing thrown";
  return "";
}

void expect_named(const std::string& message, const std::vector<std::string>& needles) {
  for (const std::string& needle : needles) {
    EXPECT_NE(message.find(needle), std::string::npos) << "no '" << needle << "' in " << message;
  }
  EXPECT_EQ(message.find("[json.exception"), std::string::npos) << message;
}

TEST(LibraryErrors, DamagedTokenizerFilesAreNamed) {
  rota::testing::TempDir dir;
  // A Hugging Face tokenizer.json that is not JSON, named by a recipe.
  write(dir.path() / "hf" / "tokenizer.json", "{\"model\": {\"type\": \"BPE\", ");
  expect_in_rotas_words(
      rota(train(dir.path() / "run",
                 {"data.tokenizer.path=" + (dir.path() / "hf" / "tokenizer.json").string()})),
      {(dir.path() / "hf" / "tokenizer.json").string(), "not valid JSON"});
  // Rota's own tokenizer.json: not JSON, and a field of the wrong type.
  write(dir.path() / "own" / "tokenizer.json", "{\"kind\": ");
  expect_named(error_of([&] { data::load_tokenizer(dir.path() / "own"); }),
               {(dir.path() / "own" / "tokenizer.json").string(), "not valid JSON"});
  write(dir.path() / "own" / "tokenizer.json", "{\"kind\": 7}");
  expect_named(error_of([&] { data::load_tokenizer(dir.path() / "own"); }),
               {(dir.path() / "own" / "tokenizer.json").string(), "is not a Rota tokenizer"});
  // In a checkpoint the integrity record finds the damage first, naming the file.
  const fs::path run = dir.path() / "good";
  ASSERT_EQ(rota(train(run, {})).code, 0);
  for (const auto& entry : fs::recursive_directory_iterator(run)) {
    if (entry.path().filename() == "tokenizer.json") write(entry.path(), "{\"kind\": ");
  }
  expect_in_rotas_words(rota("eval " + run.string() + " --batches 1"),
                        {"tokenizer.json has 9 bytes but state.binpb recorded"});
}

TEST(LibraryErrors, ASafetensorsFileWithADamagedHeaderIsRefusedNamingIt) {
  std::string bytes(8, '\0');
  const std::string header = "{\"w\": {\"dtype\": \"F32\", ";
  bytes[0] = static_cast<char>(header.size());
  bytes += header;
  expect_named(error_of([&] { io::parse_safetensors(bytes, "weights.safetensors"); }),
               {"weights.safetensors", "malformed JSON header"});
}

TEST(LibraryErrors, SymbolicLinkLoopsInADataDirectoryAreNamed) {
  rota::testing::TempDir dir;
  const fs::path data = dir.path() / "data";
  write(data / "a.txt", lines_of_text(400));
  fs::create_symlink("loop-b.txt", data / "loop-a.txt");
  fs::create_symlink("loop-a.txt", data / "loop-b.txt");
  const std::vector<std::string> needles = {"loop-", "a symbolic link that leads back to itself"};
  expect_in_rotas_words(
      rota(train(dir.path() / "run1", {"data.files={train: \"" + data.string() + "\"}"})), needles);
  expect_in_rotas_words(
      rota(train(dir.path() / "run2", {"data.files={train: \"" + data.string() + "/*.txt\"}"})),
      needles);
  expect_in_rotas_words(
      rota(train(dir.path() / "run3", {"data.text_dir=\"" + data.string() + "\""})), needles);
}

TEST(LibraryErrors, DataPrepareIntoAPlaceItCannotWriteSaysSo) {
  // /proc refuses new directories even to root.
  expect_in_rotas_words(
      rota("data prepare " + kTinyRecipe + " --out /proc/rota-prepared"),
      {"data prepare: cannot write the output directory /proc/rota-prepared", "choose an --out"});
}

TEST(LibraryErrors, AWordVocabularyThatIsNotUtf8TrainsAndExportsWithoutItsJsonForm) {
  rota::testing::TempDir dir;
  std::string text = lines_of_text(300) + "caf\xe9 au lait\n";  // Latin-1
  write(dir.path() / "latin1" / "train.txt", text);
  write(dir.path() / "latin1" / "valid.txt", text);
  write(dir.path() / "latin1" / "test.txt", text);
  const fs::path run = dir.path() / "run";
  const testing::CommandResult trained =
      rota(train(run, {"data.text_dir=\"" + (dir.path() / "latin1").string() + "\"",
                       "data.tokenizer.kind=WORD"}));
  ASSERT_EQ(trained.code, 0) << trained.output;
  const testing::CommandResult exported =
      rota("export hf " + run.string() + " " + (dir.path() / "hf").string());
  EXPECT_EQ(exported.code, 0) << exported.output;
  EXPECT_NE(exported.output.find("words that are not valid UTF-8"), std::string::npos)
      << exported.output;
  EXPECT_FALSE(fs::exists(dir.path() / "hf" / "tokenizer.json"));
}

TEST(LibraryErrors, WhatReachesTheTopIsPutInRotasWords) {
  const std::filesystem::filesystem_error loop(
      "status", "/data/a.txt", std::make_error_code(std::errc::too_many_symbolic_link_levels));
  const std::string loop_text = app::error_text(loop);
  EXPECT_EQ(loop_text.find("filesystem error"), std::string::npos) << loop_text;
  EXPECT_NE(loop_text.find("could not look up /data/a.txt"), std::string::npos) << loop_text;
  EXPECT_NE(loop_text.find("leads back to itself"), std::string::npos) << loop_text;
  const std::filesystem::filesystem_error rename(
      "cannot rename", "/a", "/b", std::make_error_code(std::errc::directory_not_empty));
  const std::string rename_text = app::error_text(rename);
  EXPECT_NE(rename_text.find("could not rename /a and /b"), std::string::npos) << rename_text;
  EXPECT_NE(rename_text.find("another process"), std::string::npos) << rename_text;
  try {
    const nlohmann::json parsed = nlohmann::json::parse("{");
    ADD_FAILURE() << parsed.dump();
  } catch (const nlohmann::json::exception& e) {
    const std::string text = app::error_text(e);
    EXPECT_EQ(text.rfind("a JSON document could not be read or written: parse error", 0), 0u)
        << text;
    EXPECT_EQ(library_detail(e).find("[json.exception"), std::string::npos);
  }
  const Error own("data: x.txt:3: something");
  EXPECT_EQ(app::error_text(own), "data: x.txt:3: something");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
