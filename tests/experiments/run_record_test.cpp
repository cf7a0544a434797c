// Ablation run records (JSON, digests, matching the plan), shards and the CPU model's parsing.
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "experiments/host_facts.h"
#include "experiments/run_plan.h"
#include "experiments/run_record.h"
#include "framework/base/error.h"
#include "recipes/ablation.h"
#include "recipes/loader.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace rota::experiments {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using rota::testing::TempDir;

std::vector<PlannedRun> tiny_plan(const fs::path& out) {
  return plan_runs(recipes::load_ablation(fs::path(rota::testing::source_tree()) /
                                          "recipes/tests/tiny_ablation.txtpb"),
                   out);
}

/// A finished result as run_unit returns one (values chosen to survive the JSON round trip).
RunResult finished_result(const PlannedRun& run) {
  RunResult result;
  result.variant = run.variant;
  result.seed = run.seed;
  result.status = RunResult::Status::kOk;
  result.eval_batches = 4;
  StageResult stage;
  stage.kind = "causal_lm";
  stage.primary = "ppl";
  stage.run_dir = run.dir;
  stage.parameters = 12345;
  stage.steps = 6;
  stage.train_time_s = 1.5;
  stage.tokens_per_s = 1000.25;
  stage.best_valid_step = 3;
  stage.best_valid = {{"loss", 4.25}, {"ppl", 70.10541234668786}};
  stage.curve = {{3, 70.10541234668786}, {6, 71.5}};
  stage.test_split = "test";
  stage.evaluated_checkpoint = run.dir / "checkpoints" / "best";
  stage.test = {{"loss", 4.5}, {"ppl", 90.01713130052181}};
  ContextResult at_one;
  at_one.multiplier = 1;
  at_one.length = 32;
  at_one.value = 90.01713130052181;
  at_one.positions = {{1, 1, 4, 5.5}, {2, 3, 8, 4.75}};
  ContextResult at_two;
  at_two.multiplier = 2;
  at_two.length = 64;
  at_two.note = "n/a: planted";
  stage.contexts = {at_one, at_two};
  result.stages = {stage};
  return result;
}

TEST(RunRecord, RoundTripsEveryResultAndItsProvenance) {
  TempDir tmp;
  const auto runs = tiny_plan(tmp / "out");
  const RunRecord record = make_record(runs[1], finished_result(runs[1]), {1, 2}, "rota 0.1.0",
                                       "Planted CPU @ 2.0GHz", "2026-12-07 12:00 UTC");
  const std::string text = record_to_json(record);
  EXPECT_TRUE(looks_like_record(text));
  const RunRecord back = record_from_json(text, tmp / "r.json");
  EXPECT_EQ(back.cpu, "Planted CPU @ 2.0GHz");
  EXPECT_EQ(back.result.cpu, "Planted CPU @ 2.0GHz");
  EXPECT_EQ(back.rota_version, "rota 0.1.0");
  EXPECT_EQ(back.finished_at, "2026-12-07 12:00 UTC");
  EXPECT_EQ(back.context_multipliers, (std::vector<int>{1, 2}));
  EXPECT_EQ(back.file, tmp / "r.json");
  // The whole result survives: writing it again gives the same text.
  EXPECT_EQ(record_to_json(back), text);
  ASSERT_EQ(back.result.stages.size(), 1u);
  const StageResult& stage = back.result.stages[0];
  EXPECT_EQ(stage.curve,
            (std::vector<std::pair<int64_t, double>>{{3, 70.10541234668786}, {6, 71.5}}));
  ASSERT_EQ(stage.contexts.size(), 2u);
  ASSERT_EQ(stage.contexts[0].positions.size(), 2u);
  EXPECT_EQ(stage.contexts[0].positions[1].loss, 4.75);
  EXPECT_EQ(stage.contexts[1].note, "n/a: planted");
  // The recipe is kept in the record, and its digest is the recipe text's.
  ASSERT_EQ(back.stage_recipes.size(), 1u);
  EXPECT_EQ(back.stage_recipes[0], comparable_recipe_text(runs[1].stages[0]));
  EXPECT_EQ(back.recipe_sha256[0], text_sha256(back.stage_recipes[0]));
  EXPECT_EQ(text_sha256("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");  // FIPS 180-2
}

TEST(RunRecord, AnswersOnlyTheSameRunRecipeAndEvaluation) {
  TempDir tmp;
  const auto runs = tiny_plan(tmp / "out");
  const RunRecord record = make_record(runs[0], finished_result(runs[0]), {1, 2}, "", "", "");
  EXPECT_TRUE(record_answers(record, runs[0], 4, {1, 2}));
  EXPECT_FALSE(record_answers(record, runs[1], 4, {1, 2}));  // another seed
  EXPECT_FALSE(record_answers(record, runs[0], 0, {1, 2}));  // whole-split evaluation asked
  EXPECT_FALSE(record_answers(record, runs[0], 4, {1}));     // other lengths
  // The same run planned in another output directory (another machine) is answered.
  const auto elsewhere = tiny_plan(tmp / "elsewhere" / "out");
  EXPECT_TRUE(record_answers(record, elsewhere[0], 4, {1, 2}));
  // A changed recipe is not.
  const auto changed = plan_runs(recipes::load_ablation(fs::path(rota::testing::source_tree()) /
                                                            "recipes/tests/tiny_ablation.txtpb",
                                                        {"train.steps=7"}),
                                 tmp / "out");
  EXPECT_FALSE(record_answers(record, changed[0], 4, {1, 2}));
  EXPECT_EQ(
      recipe_differences(record.stage_recipes[0], comparable_recipe_text(changed[0].stages[0])),
      (std::vector<std::string>{"train.steps: 6 -> 7"}));
}

TEST(RunRecord, DamagedOrForeignRecordsAreRefusedNamingTheFile) {
  TempDir tmp;
  const auto runs = tiny_plan(tmp / "out");
  const std::string text =
      record_to_json(make_record(runs[0], finished_result(runs[0]), {1, 2}, "rota", "CPU", "now"));
  const fs::path file = tmp / "seed1.json";
  const auto refusal = [&](const std::string& body) {
    try {
      record_from_json(body, file);
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refusal(text.substr(0, text.size() / 2)).find(file.string() + ": not a valid"),
            std::string::npos);
  std::string edited = text;
  edited.replace(edited.find("steps: 6"), 8, "steps: 9");
  EXPECT_NE(refusal(edited).find("does not match its recipe_sha256"), std::string::npos)
      << refusal(edited);
  std::string future = text;
  future.replace(future.find("\"format_version\": 1"), 19, "\"format_version\": 7");
  EXPECT_NE(refusal(future).find("format version 7; this Rota reads version 1"), std::string::npos)
      << refusal(future);
  EXPECT_NE(refusal("{\"format\": \"other\"}").find("not an ablation run record"),
            std::string::npos);
  EXPECT_FALSE(looks_like_record("{\"trained\": [true]}"));

  // A directory of records: other JSON is skipped, a record is read, a missing source refused.
  const fs::path dir = tmp / "records";
  fs::create_directories(dir / "nope");
  std::ofstream(dir / "nope" / "seed1.json") << text;
  std::ofstream(dir / "progress.json") << "{\"trained\": [true]}";
  std::ofstream(dir / "notes.txt") << "not json";
  const auto records = read_records({dir});
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].file, dir / "nope" / "seed1.json");
  EXPECT_THROW(read_records({tmp / "missing"}), Error);
  EXPECT_THROW(read_records({dir / "progress.json"}), Error);  // named, and not a record
}

TEST(Shard, ParsesKOfNAndRefusesAnythingElse) {
  const Shard shard = parse_shard("2/5");
  EXPECT_EQ(shard.index, 2);
  EXPECT_EQ(shard.count, 5);
  for (const char* bad : {"", "2", "0/3", "4/3", "1/0", "-1/3", "1/3x", "a/b", "/3", "1/",
                          "1/10001", "99999999999/3"}) {
    EXPECT_THROW(parse_shard(bad), Error) << bad;
  }
}

TEST(Shard, EveryRunBelongsToExactlyOneShard) {
  for (int count = 1; count <= 5; ++count) {
    for (size_t run = 0; run < 23; ++run) {
      int holders = 0;
      for (int k = 1; k <= count; ++k) holders += Shard{k, count}.holds(run);
      EXPECT_EQ(holders, 1) << run << " of " << count;
      EXPECT_TRUE((Shard{Shard{1, count}.of(run), count}.holds(run)));
    }
  }
}

TEST(HostFacts, ReadsTheCpuModelOfEachArchitecture) {
  EXPECT_EQ(cpu_model_from_cpuinfo("processor\t: 0\nvendor_id\t: AuthenticAMD\n"
                                   "model name\t: AMD EPYC   7B13 64-Core Processor\n"
                                   "processor\t: 1\nmodel name\t: other\n"),
            "AMD EPYC 7B13 64-Core Processor");
  EXPECT_EQ(cpu_model_from_cpuinfo("processor : 0\nBogoMIPS : 50.00\nHardware : Planted SoC\n"),
            "Planted SoC");
  EXPECT_EQ(cpu_model_from_cpuinfo("processor : 0\nmodel name :\n"), "");
  EXPECT_EQ(cpu_model_from_cpuinfo(""), "");
  EXPECT_FALSE(cpu_model_name().empty());
}

TEST(HostFacts, CpuDescriptionNamesFamilyModelAndWidestVectorUnit) {
  const std::string epyc =
      "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n"
      "model name\t: AMD EPYC\nflags\t\t: fpu sse2 avx avx2 avx512f avx512_bf16\n"
      "processor\t: 1\ncpu family\t: 99\nmodel\t\t: 1\nmodel name\t: other\n";
  EXPECT_EQ(cpu_description_from_cpuinfo(epyc), "AMD EPYC (family 25 model 17, AVX-512)");
  const std::string xeon =
      "cpu family : 6\nmodel : 143\nmodel name : Intel(R) Xeon(R) Platinum 8481C CPU\n"
      "flags : avx2 avx512f amx_bf16 amx_tile\n";
  EXPECT_EQ(cpu_description_from_cpuinfo(xeon),
            "Intel(R) Xeon(R) Platinum 8481C CPU (family 6 model 143, AMX)");
  EXPECT_EQ(cpu_description_from_cpuinfo("model name : Old\nflags : sse2 avx2x\n"), "Old");
  EXPECT_EQ(cpu_description_from_cpuinfo("cpu family : 23\nmodel : 49\nflags : avx2\n"),
            "unknown CPU (family 23 model 49, AVX2)");
  EXPECT_EQ(cpu_description_from_cpuinfo("processor : 0\nHardware : Planted SoC\n"), "Planted SoC");
  EXPECT_EQ(cpu_description_from_cpuinfo(""), "");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::experiments
