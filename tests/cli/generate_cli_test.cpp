// `rota generate` through the built program: top-p, repetition penalty, stop strings, several
// samples, a prompts file as one batch (each record equals the prompt alone), usage errors.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "models/generation.h"
#include "tests/support/program.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

const std::string kTiny = std::string(ROTA_SOURCE_DIR) + "/recipes/tests/tiny_causal_lm.txtpb";

testing::CommandResult rota(const std::string& arguments) {
  return testing::run_command("OMP_NUM_THREADS=1 " + testing::built_rota() + " " + arguments);
}

// stdout only (the log goes to stderr). The braces keep run_command's own 2>&1 from sending
// stderr back into the pipe.
testing::CommandResult rota_stdout(const std::string& arguments) {
  return testing::run_command("{ OMP_NUM_THREADS=1 " + testing::built_rota() + " " + arguments +
                              " 2>/dev/null; }");
}

std::vector<nlohmann::json> records(const std::string& output) {
  std::vector<nlohmann::json> out;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// The text as a JSON record holds it: bytes that are not UTF-8 become U+FFFD.
std::string as_json_text(const std::string& text) {
  return nlohmann::json::parse(
             nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
      .get<std::string>();
}

class GenerateCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    run_ = (*dir_ / "run").string();
    const testing::CommandResult r =
        rota("train " + kTiny + " --out " + run_ + " --set train.steps=30");
    ASSERT_EQ(r.code, 0) << r.output;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string file(const std::string& name, const std::string& text) {
    const std::string path = (*dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  static testing::TempDir* dir_;
  static std::string run_;
};

testing::TempDir* GenerateCli::dir_ = nullptr;
std::string GenerateCli::run_;

TEST_F(GenerateCli, OnePromptOneSampleIsThePlainStreamAndItsJsonRecord) {
  const std::string args = " --prompt 'ROMEO:' --tokens 30 --temperature 0.9 --seed 3";
  const testing::CommandResult plain = rota_stdout("generate " + run_ + args);
  ASSERT_EQ(plain.code, 0) << plain.output;
  ASSERT_EQ(plain.output.rfind("ROMEO:", 0), 0u) << plain.output;
  ASSERT_EQ(plain.output.back(), '\n');
  // Options at their "off" values change nothing.
  EXPECT_EQ(rota_stdout("generate " + run_ + args +
                        " --top-p 1 --repetition-penalty 1 --samples 1 --format text")
                .output,
            plain.output);
  const testing::CommandResult jsonl = rota_stdout("generate " + run_ + args + " --format jsonl");
  ASSERT_EQ(jsonl.code, 0) << jsonl.output;
  const auto found = records(jsonl.output);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0]["prompt"], 1);
  EXPECT_EQ(found[0]["sample"], 0);
  EXPECT_EQ(found[0]["tokens"], 30);
  EXPECT_EQ(found[0]["stopped_by"], "length");
  EXPECT_EQ("ROMEO:" + found[0]["text"].get<std::string>() + "\n", as_json_text(plain.output));
  // Top-p and the repetition penalty change the text.
  EXPECT_NE(rota_stdout("generate " + run_ + args + " --top-p 0.5").output, plain.output);
  EXPECT_NE(rota_stdout("generate " + run_ + args + " --repetition-penalty 5").output,
            plain.output);
}

TEST_F(GenerateCli, APromptsFileWithSamplesGivesEveryPromptAloneInOrder) {
  // Three prompts of different lengths (one with a trailing \r, not part of it).
  const std::string prompts = file("prompts.txt", "ROMEO:\nJULIET: O Romeo\r\nTo be\n");
  const std::string options =
      " --tokens 20 --temperature 1.1 --top-k 50 --top-p 0.95 "
      "--repetition-penalty 1.2 --seed 7";
  const testing::CommandResult batch = rota_stdout("generate " + run_ + " --prompts " + prompts +
                                                   " --samples 3 --format jsonl" + options);
  ASSERT_EQ(batch.code, 0) << batch.output;
  const auto found = records(batch.output);
  ASSERT_EQ(found.size(), 9u) << batch.output;
  const std::vector<std::string> texts = {"ROMEO:", "JULIET: O Romeo", "To be"};
  for (size_t i = 0; i < found.size(); ++i) {
    const int64_t prompt = int64_t(i / 3) + 1, sample = int64_t(i % 3);
    EXPECT_EQ(found[i]["prompt"], prompt);
    EXPECT_EQ(found[i]["sample"], sample);
    // The same prompt alone with the sample's seed prints the same continuation.
    const std::string seed = std::to_string(models::sample_seed(7, sample));
    std::string alone_options = options;
    alone_options.replace(alone_options.find("--seed 7"), 8, "--seed " + seed);
    const testing::CommandResult alone =
        rota_stdout("generate " + run_ + " --prompt '" + texts[prompt - 1] + "'" + alone_options);
    ASSERT_EQ(alone.code, 0) << alone.output;
    EXPECT_EQ(texts[prompt - 1] + found[i]["text"].get<std::string>() + "\n",
              as_json_text(alone.output))
        << "prompt " << prompt << " sample " << sample;
  }
  EXPECT_NE(found[0]["text"], found[1]["text"]);  // the samples differ
  // Prompts of different lengths decode together, and the log says so.
  const testing::CommandResult logged =
      rota("generate " + run_ + " --prompts " + prompts + " --samples 3" + options);
  ASSERT_EQ(logged.code, 0) << logged.output;
  EXPECT_NE(logged.output.find("generate: 9 continuations decoded in 1 batch of up to 9 rows"),
            std::string::npos)
      << logged.output;
  // The text format: a headed block per prompt and sample.
  const testing::CommandResult text =
      rota_stdout("generate " + run_ + " --prompts " + prompts + " --samples 2" + options);
  ASSERT_EQ(text.code, 0) << text.output;
  EXPECT_EQ(text.output.rfind("==> prompt 1, sample 0 <==\nROMEO:", 0), 0u) << text.output;
  EXPECT_NE(text.output.find("\n\n==> prompt 3, sample 1 <==\nTo be"), std::string::npos)
      << text.output;
}

TEST_F(GenerateCli, AStopStringCutsTheTextBeforeIt) {
  const std::string args = " --prompt 'ROMEO:' --tokens 60 --temperature 0.8 --seed 11";
  const std::string free = rota_stdout("generate " + run_ + args).output;
  const std::string continuation = free.substr(6, free.size() - 7);
  // Two ASCII characters from the middle of the continuation: a stop string of two tokens.
  size_t at = continuation.size() / 2;
  while (at + 1 < continuation.size() &&
         (static_cast<unsigned char>(continuation[at]) >= 0x80 ||
          static_cast<unsigned char>(continuation[at + 1]) >= 0x80 || continuation[at] == '\'' ||
          continuation[at + 1] == '\'')) {
    ++at;
  }
  ASSERT_LT(at + 1, continuation.size()) << free;
  const std::string stop = continuation.substr(at, 2);
  const size_t first = continuation.find(stop);
  const testing::CommandResult cut =
      rota_stdout("generate " + run_ + args + " --stop '" + stop + "' --stop 'never here'");
  ASSERT_EQ(cut.code, 0) << cut.output;
  EXPECT_EQ(cut.output, "ROMEO:" + continuation.substr(0, first) + "\n") << "stop '" << stop << "'";
  const auto found = records(
      rota_stdout("generate " + run_ + args + " --stop '" + stop + "' --format jsonl").output);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0]["stopped_by"], "stop");
  EXPECT_EQ(found[0]["stop"], stop);
  EXPECT_EQ(found[0]["text"], as_json_text(continuation.substr(0, first)));
  EXPECT_LT(found[0]["tokens"].get<int64_t>(), 60);
}

TEST_F(GenerateCli, BadValuesAreUsageErrors) {
  const std::string g = "generate " + run_ + " ";
  const std::string empty_line = file("empty_line.txt", "ROMEO:\n\nJULIET:\n");
  const std::string not_utf8 = file("not_utf8.txt", "ROMEO:\nab\xFF\n");
  const std::string prompts = file("two.txt", "a\nb\n");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--prompt a --top-p 0", "--top-p: must be in (0, 1], got 0"},
      {"--prompt a --top-p 1.5", "--top-p: must be in (0, 1], got 1.5"},
      {"--prompt a --repetition-penalty 0", "--repetition-penalty: must be a finite number > 0"},
      {"--prompt a --repetition-penalty nan", "--repetition-penalty: must be a finite number > 0"},
      {"--prompt a --samples 0", "--samples: must be > 0, got 0"},
      {"--prompt a --format xml", "--format: xml not in {text,jsonl}"},
      {"--prompt a --stop ''", "--stop: an empty stop string"},
      {"--prompt a --stop-at-eos", "byte tokenizer has no <eos> token"},
      {"--prompt a --prompts " + prompts, "--prompt excludes --prompts"},
      {"--tokens 3", "give a prompt: --prompt TEXT or --prompts FILE"},
      {"--prompts " + empty_line, "--prompts " + empty_line + ":2: an empty line"},
      {"--prompts " + not_utf8, "--prompts " + not_utf8 + ":2: the line is not valid UTF-8"},
      {"--prompts " + (*dir_ / "missing.txt").string(), "missing.txt: cannot open the file"},
  };
  for (const auto& [arguments, message] : cases) {
    const testing::CommandResult r = rota(g + arguments);
    EXPECT_EQ(r.code, 2) << arguments << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << arguments << "\n" << r.output;
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
