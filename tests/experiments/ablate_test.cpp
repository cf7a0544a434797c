// `rota ablate` end to end on tiny recipes (reports, resume, failures, two stages) and its helpers.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "app/run/eval_run.h"
#include "app/run/exit_codes.h"
#include "app/run/train_run.h"
#include "app/setup/context_length.h"
#include "experiments/ablate_run.h"
#include "experiments/ablation_runner.h"
#include "experiments/host_facts.h"
#include "experiments/report/summary_stats.h"
#include "experiments/report/svg_chart.h"
#include "experiments/report/text_table.h"
#include "experiments/run_plan.h"
#include "experiments/run_record.h"
#include "experiments/run_result.h"
#include "experiments/subprocess.h"
#include "framework/base/error.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
#include "recipes/ablation.h"
#include "recipes/recipe_error.h"
#include "tests/framework/io/io_test_util.h"
#include "tests/support/program.h"
#include "tests/support/run_metrics.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace rota::experiments {
namespace ROTA_TEST_FILE_NS {

using app::context_problem;
using app::kExitFailure;
using app::kExitOk;
using app::recipe_at_context;

namespace fs = std::filesystem;
using io::testing::read_bytes;
using rota::testing::metrics_lines;
using rota::testing::TempDir;

std::string source_path(const std::string& relative) {
  return std::string(ROTA_SOURCE_DIR) + "/" + relative;
}

/// The built `rota` (the ablation runs it as a child): $ROTA_BINARY, else next to tests/.
std::string rota_binary() {
  if (const char* path = std::getenv("ROTA_BINARY")) return path;
  return (fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "rota").string();
}

/// Runs `rota ablate` in-process (its children are the built rota); returns the exit code.
/// `more` sets further options of the request (--shard, --records, ...).
int ablate(const fs::path& ablation, const fs::path& out, int jobs = 1, int64_t eval_batches = 4,
           const std::function<void(AblateRequest&)>& more = {}) {
  EXPECT_TRUE(fs::exists(rota_binary()))
      << rota_binary() << " is missing: build the `rota` target (or set ROTA_BINARY)";
  AblateRequest args;
  args.ablation = ablation.string();
  args.out = out.string();
  args.jobs = jobs;
  args.eval_batches = eval_batches;
  args.rota_binary = rota_binary();
  if (more) more(args);
  ::testing::internal::CaptureStdout();
  try {
    const int code = run_ablate(args);
    ::testing::internal::GetCapturedStdout();
    return code;
  } catch (...) {
    ::testing::internal::GetCapturedStdout();  // one capture at a time: release it first
    throw;
  }
}

/// RFC 4180 CSV: rows of fields (quoted fields may hold commas, quotes and line breaks).
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field);
      field.clear();
    } else if (c == '\n') {
      rows.back().push_back(field);
      field.clear();
      rows.emplace_back();
    } else {
      field += c;
    }
  }
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

/// The CSV as maps column -> value, checking every row has the header's width.
std::vector<std::map<std::string, std::string>> read_csv_rows(const fs::path& file) {
  const auto rows = parse_csv(read_bytes(file));
  EXPECT_FALSE(rows.empty());
  std::vector<std::map<std::string, std::string>> records;
  for (size_t r = 1; r < rows.size(); ++r) {
    EXPECT_EQ(rows[r].size(), rows[0].size()) << "row " << r;
    std::map<std::string, std::string> record;
    for (size_t c = 0; c < rows[r].size() && c < rows[0].size(); ++c)
      record[rows[0][c]] = rows[r][c];
    records.push_back(record);
  }
  return records;
}

double number(const std::map<std::string, std::string>& row, const std::string& column) {
  const auto it = row.find(column);
  EXPECT_NE(it, row.end()) << "no column " << column;
  if (it == row.end()) return NAN;
  size_t used = 0;
  double value = NAN;
  try {
    value = std::stod(it->second, &used);
  } catch (const std::exception&) {
  }
  EXPECT_EQ(used, it->second.size()) << column << " = '" << it->second << "' is not a number";
  return value;
}

/// Tags balance (every opened element is closed in order) and the document is one <svg>.
void expect_well_formed_svg(const std::string& svg, const std::string& name) {
  ASSERT_EQ(svg.rfind("<svg ", 0), 0u) << name;
  std::vector<std::string> open;
  size_t pos = 0;
  while ((pos = svg.find('<', pos)) != std::string::npos) {
    const size_t end = svg.find('>', pos);
    ASSERT_NE(end, std::string::npos) << name << ": unterminated tag at " << pos;
    const std::string tag = svg.substr(pos + 1, end - pos - 1);
    ASSERT_EQ(tag.find('<'), std::string::npos) << name << ": '<' inside a tag at " << pos;
    size_t quotes = std::count(tag.begin(), tag.end(), '"');
    EXPECT_EQ(quotes % 2, 0u) << name << ": unbalanced quotes in <" << tag << ">";
    if (tag.front() == '/') {
      ASSERT_FALSE(open.empty()) << name << ": </" << tag << "> closes nothing";
      EXPECT_EQ(open.back(), tag.substr(1)) << name;
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find_first_of(" \n")));
    }
    pos = end + 1;
  }
  EXPECT_TRUE(open.empty()) << name << ": unclosed <" << (open.empty() ? "" : open.back()) << ">";
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n") << name;
}

/// Lines of `text` that start with `prefix` and contain `what`.
size_t count_lines(const std::string& text, const std::string& prefix, const std::string& what) {
  std::istringstream lines(text);
  size_t n = 0;
  for (std::string line; std::getline(lines, line);) {
    n += line.rfind(prefix, 0) == 0 && line.find(what) != std::string::npos;
  }
  return n;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

/// Identity and modification time of every file under a directory (to prove nothing was
/// rewritten).
std::map<std::string, std::pair<ino_t, int64_t>> file_stamps(const fs::path& dir) {
  std::map<std::string, std::pair<ino_t, int64_t>> stamps;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    struct stat info {};
    ::stat(entry.path().c_str(), &info);
    stamps[fs::relative(entry.path(), dir).string()] = {
        info.st_ino, static_cast<int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec};
  }
  return stamps;
}

/// Writes <dir>/ablation.txtpb: version 1, `name`, the source tree's recipe `base` trained for
/// `steps` steps without evaluations, then `body` (variants, seeds, ...).
fs::path write_ablation(const fs::path& dir, const std::string& name, const std::string& base,
                        int64_t steps, const std::string& body) {
  const fs::path file = dir / "ablation.txtpb";
  std::ofstream(file) << "version: 1\nname: \"" << name << "\"\nbase: \"" << source_path(base)
                      << "\"\noverrides: \"train.steps=" << steps
                      << "\"\noverrides: \"train.eval_every=0\"\n"
                      << body;
  return file;
}

const char* const kTinyAblation = "recipes/tests/tiny_ablation.txtpb";

TEST(Ablate, TinyAblationWritesTheCsvTheMarkdownAndThePlots) {
  TempDir tmp;
  const fs::path out = tmp / "out";
  ASSERT_EQ(ablate(source_path(kTinyAblation), out, /*jobs=*/2), kExitOk);

  // results.csv: one row per variant × seed, every number parses, and the numbers are the
  // runs' own (checked against their metrics.jsonl and an in-process rota eval).
  const auto rows = read_csv_rows(out / "results.csv");
  ASSERT_EQ(rows.size(), 4u);
  std::set<std::pair<std::string, std::string>> seen;
  std::map<std::string, std::vector<double>> test_ppl;
  for (const auto& row : rows) {
    seen.insert({row.at("variant"), row.at("seed")});
    EXPECT_EQ(row.at("status"), "ok");
    EXPECT_EQ(row.at("overrides"), row.at("variant") == "nope" ? "model.position={none {}}" : "");
    EXPECT_GT(number(row, "parameters"), 1000);
    EXPECT_GT(number(row, "train_time_s"), 0);
    EXPECT_GT(number(row, "tokens_per_s"), 0);
    EXPECT_EQ(number(row, "steps"), 6);
    EXPECT_EQ(row.at("test_split"), "test");
    EXPECT_EQ(row.at("error"), "");
    const fs::path run = out / "runs" / row.at("variant") / ("seed" + row.at("seed"));
    double best = INFINITY;
    int64_t best_step = 0;
    for (const auto& line : metrics_lines(run, "valid")) {
      if (line["loss"].get<double>() < best) {
        best = line["loss"].get<double>();
        best_step = line["step"].get<int64_t>();
      }
    }
    EXPECT_NEAR(number(row, "best_valid_loss"), best, 1e-6 * best);
    EXPECT_EQ(number(row, "best_valid_step"), best_step);
    EXPECT_NEAR(number(row, "best_valid_ppl"), std::exp(number(row, "best_valid_loss")),
                1e-6 * number(row, "best_valid_ppl"));
    const double ppl = number(row, "test_ppl");
    EXPECT_NEAR(ppl, std::exp(number(row, "test_loss")), 1e-4 * ppl);
    EXPECT_EQ(number(row, "test_ppl_x1"), ppl);
    // Twice the length, evaluated here in-process on the same checkpoint and batches, position
    // by position too.
    app::EvalRequest eval;
    eval.checkpoint = io::find_best(run)->string();
    eval.split = "test";
    eval.context = 64;
    eval.batches = 4;
    eval.by_position = true;
    ::testing::internal::CaptureStdout();
    ASSERT_EQ(app::run_evaluation(eval), kExitOk);
    const std::string printed = ::testing::internal::GetCapturedStdout();
    const double x2 = number(row, "test_ppl_x2");
    EXPECT_NE(printed.find(fmt::format("ppl={:.6g}", x2)), std::string::npos)
        << printed << " vs " << x2;
    // result.json keeps the loss of every position bucket at 1× and 2×: 7 buckets at 64
    // tokens (1, 2-3, ..., 32-63, 64), each the line rota eval --by-position prints.
    const std::optional<RunResult> stored = result_from_json(read_bytes(run / "result.json"));
    ASSERT_TRUE(stored.has_value());
    const std::vector<ContextResult>& contexts = stored->stages.front().contexts;
    ASSERT_EQ(contexts.size(), 2u);
    EXPECT_EQ(contexts[0].positions.size(), 6u);  // 32 tokens: 1, 2-3, ..., 16-31, 32
    ASSERT_EQ(contexts[1].positions.size(), 7u);
    for (const PositionLoss& p : contexts[1].positions) {
      EXPECT_NE(printed.find(fmt::format("positions={}-{} tokens={} loss={:.6g}", p.first, p.last,
                                         p.tokens, p.loss)),
                std::string::npos)
          << printed;
    }
    test_ppl[row.at("variant")].push_back(ppl);
  }
  EXPECT_EQ(seen.size(), 4u);

  // results.md: title, the exact command, the base recipe, every variant, best first.
  const std::string md = read_bytes(out / "results.md");
  EXPECT_NE(md.find("# Ablation: tiny-ablation"), std::string::npos);
  EXPECT_NE(md.find("NoPE against LRPE Type 2"), std::string::npos);
  EXPECT_NE(md.find("rota ablate " + source_path(kTinyAblation) + " --out " + out.string() +
                    " --jobs 2 --eval-batches 4"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("tiny_causal_lm.txtpb"), std::string::npos);
  EXPECT_NE(md.find("`train.steps=6`"), std::string::npos);
  const size_t results = md.find("## Results");
  const size_t extrapolation = md.find("## Length extrapolation");
  ASSERT_NE(results, std::string::npos);
  ASSERT_NE(extrapolation, std::string::npos);
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s / static_cast<double>(v.size());
  };
  const std::string better = mean(test_ppl["nope"]) < mean(test_ppl["lrpe"]) ? "nope" : "lrpe";
  const std::string worse = better == "nope" ? "lrpe" : "nope";
  const std::string table = md.substr(results, extrapolation - results);
  ASSERT_NE(table.find("| " + better + " | 2/2 |"), std::string::npos) << table;
  EXPECT_LT(table.find("| " + better + " |"), table.find("| " + worse + " |")) << table;
  EXPECT_NE(table.find(" ± "), std::string::npos);
  EXPECT_NE(md.find("2× (64 tokens)"), std::string::npos);
  EXPECT_NE(md.find("](validation_curves.svg)"), std::string::npos);
  EXPECT_NE(md.find("](extrapolation.svg)"), std::string::npos);
  EXPECT_NE(md.find("](positions.svg)"), std::string::npos);
  EXPECT_NE(md.find("PNG"), std::string::npos);  // made, or why not
  // baseline: "lrpe": NoPE's paired differences with a 95% interval and a verdict.
  const size_t against = md.find("## Against the baseline");
  ASSERT_NE(against, std::string::npos) << md;
  EXPECT_NE(md.find("| nope | lrpe | ", against), std::string::npos) << md.substr(against);
  EXPECT_NE(md.find("difference per seed (1, 2)", against), std::string::npos);
  // PNGs are always made (librsvg2-bin is part of the set-up): real PNG files.
  for (const char* png : {"validation_curves.png", "extrapolation.png", "positions.png"}) {
    const std::string bytes = read_bytes(out / png);
    ASSERT_GT(bytes.size(), 8u) << png;
    EXPECT_EQ(bytes.substr(1, 3), "PNG") << png;
    EXPECT_NE(md.find(std::string("PNG: [") + png), std::string::npos) << png;
  }
  // ablate.log: each run's start, and its end with the ablation's ETA.
  const std::string log = read_bytes(out / "ablate.log");
  EXPECT_NE(log.find("start nope seed 1 (run 1 of 4)"), std::string::npos) << log;
  EXPECT_NE(log.find("start lrpe seed 2 (run 4 of 4)"), std::string::npos) << log;
  EXPECT_EQ(count(log, "runs done"), 4u) << log;
  EXPECT_NE(log.find("4 of 4 runs done, 0 running; ETA 0 s"), std::string::npos) << log;

  // The plots: well-formed SVG with one line per variant.
  for (const char* name : {"validation_curves.svg", "extrapolation.svg", "positions.svg"}) {
    const std::string svg = read_bytes(out / name);
    expect_well_formed_svg(svg, name);
    for (const char* variant : {"nope", "lrpe"}) {
      EXPECT_EQ(count(svg, std::string("class=\"line\" data-series=\"") + variant + "\""), 1u)
          << name << " " << variant;
      EXPECT_EQ(count(svg, std::string("class=\"band\" data-series=\"") + variant + "\""), 1u)
          << name << " " << variant;
    }
  }
}

TEST(Ablate, ProgressLinesNameEachRunningRunsStepAndTheEta) {
  TempDir tmp;
  AblationRunOptions options;
  options.ablation_file = source_path(kTinyAblation);
  options.out = tmp / "out";
  options.program = rota_binary();
  options.eval_batches = 2;
  options.progress_seconds = 0.01;  // many progress lines during these short runs
  const AblationOutcome outcome = run_ablation(options);
  EXPECT_EQ(outcome.finished, 4);
  const std::string log = read_bytes(tmp / "out" / "ablate.log");
  // "progress: nope seed 1: stage 1/1 step 3/6 (50%), running for 0 s" and
  // "progress: 1 of 4 runs done, 1 running; ETA ...".
  const std::regex running(
      "progress: (nope|lrpe) seed [12]: (starting|stage 1/1 step [0-6]/6 "
      "\\([0-9]+%\\)), running for [0-9]+ s");
  EXPECT_TRUE(std::regex_search(log, running)) << log;
  const std::regex eta("progress: [0-4] of 4 runs done, [01] running; ETA");
  EXPECT_TRUE(std::regex_search(log, eta)) << log;
}

TEST(Ablate, FromCsvRebuildsTheCommittedEncodingsReport) {
  // docs/ablations/encodings-causal/ is what `rota ablate ... --from-csv` writes from its
  // results.csv (the command docs/ablations.md shows); rebuilt here into another directory, the
  // report differs only by the output directory and the time.
  TempDir tmp;
  const std::string committed = source_path("docs/ablations/encodings-causal");
  const auto result =
      rota::testing::run_command("cd " + std::string(ROTA_SOURCE_DIR) + " && " + rota_binary() +
                                 " ablate recipes/ablations/encodings_causal.txtpb --from-csv "
                                 "docs/ablations/encodings-causal/results.csv --out " +
                                 (tmp / "out").string());
  ASSERT_EQ(result.code, 0) << result.output;
  EXPECT_NE(result.output.find("ablation: 24 of 24 runs finished"), std::string::npos)
      << result.output;
  auto normalised = [](std::string md, const std::string& out) {
    md = std::regex_replace(md, std::regex("Generated [0-9-]+ [0-9:]+ UTC"), "Generated TIME");
    const std::string option = "--out " + out;
    const size_t at = md.find(option);
    if (at != std::string::npos) md.replace(at, option.size(), "--out OUT");
    return md;
  };
  EXPECT_EQ(normalised(read_bytes(tmp / "out" / "results.md"), (tmp / "out").string()),
            normalised(read_bytes(fs::path(committed) / "results.md"),
                       "docs/ablations/encodings-causal"));
  EXPECT_EQ(read_bytes(tmp / "out" / "results.csv"),
            read_bytes(fs::path(committed) / "results.csv"));
  EXPECT_EQ(read_bytes(tmp / "out" / "extrapolation.svg"),
            read_bytes(fs::path(committed) / "extrapolation.svg"));
  EXPECT_FALSE(fs::exists(tmp / "out" / "validation_curves.svg"));  // no curves in the CSV
}

TEST(Ablate, ARerunKeepsFinishedRunsAndCompletesTheRest) {
  TempDir tmp;
  const fs::path out = tmp / "out";
  const fs::path ablation = source_path(kTinyAblation);
  ASSERT_EQ(ablate(ablation, out), kExitOk);
  const fs::path runs = out / "runs";
  const fs::path kept_a = runs / "nope" / "seed1", kept_b = runs / "lrpe" / "seed2";
  const fs::path unmarked = runs / "nope" / "seed2";  // trained and evaluated, records lost
  const fs::path half = runs / "lrpe" / "seed1";      // redone up to step 3 of 6
  const auto kept_a_before = file_stamps(kept_a), kept_b_before = file_stamps(kept_b);
  const auto unmarked_checkpoints = file_stamps(unmarked / "checkpoints");
  const std::string final_weights = read_bytes(*io::find_latest(half) / io::kModelFile);

  // Their records go too (a record alone would answer the run: see RecordsAlone… below).
  fs::remove(unmarked / "result.json");
  fs::remove(unmarked / "progress.json");
  fs::remove(record_path(out, "nope", 2));
  // A half-finished run: what rota ablate's child does, stopped after step 3.
  fs::remove_all(half);
  fs::remove(record_path(out, "lrpe", 1));
  const recipes::AblationPlan plan = recipes::load_ablation(ablation);
  const auto planned = plan_runs(plan, out);
  const auto it = std::find_if(planned.begin(), planned.end(), [](const PlannedRun& r) {
    return r.variant == "lrpe" && r.seed == 1;
  });
  ASSERT_NE(it, planned.end());
  ASSERT_EQ(it->dir, fs::weakly_canonical(half));
  app::TrainRequest train;
  train.recipe = it->stages[0].recipe_file.string();
  train.overrides = it->stages[0].overrides;
  train.out = half.string();
  train.stop_after = 3;
  ::testing::internal::CaptureStdout();
  ASSERT_EQ(app::run_training(train), kExitOk);
  ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(io::find_latest(half)->filename(), "step_000003");
  const auto half_step3 = file_stamps(half / "checkpoints" / "step_000003");

  ASSERT_EQ(ablate(ablation, out), kExitOk);

  // Finished runs were not touched at all (results, checkpoints, logs).
  EXPECT_EQ(file_stamps(kept_a), kept_a_before);
  EXPECT_EQ(file_stamps(kept_b), kept_b_before);
  // The run whose records were lost kept its checkpoints and got its results back.
  EXPECT_EQ(file_stamps(unmarked / "checkpoints"), unmarked_checkpoints);
  EXPECT_TRUE(fs::exists(unmarked / "result.json"));
  // The half-finished run resumed from step 3 (kept) and reached the same weights as the
  // uninterrupted run had (resume is bit-exact).
  EXPECT_EQ(io::find_latest(half)->filename(), "step_000006");
  EXPECT_EQ(file_stamps(half / "checkpoints" / "step_000003"), half_step3);
  EXPECT_TRUE(read_bytes(*io::find_latest(half) / io::kModelFile) == final_weights);
  const std::string console = read_bytes(half / "console.log");
  // One train child (with --resume) for the half-finished run; none for the others.
  EXPECT_EQ(count_lines(console, "==== ", " train "), 1u) << console;
  EXPECT_EQ(count_lines(console, "==== ", " --resume"), 1u) << console;
  EXPECT_EQ(read_csv_rows(out / "results.csv").size(), 4u);
  for (const auto& row : read_csv_rows(out / "results.csv")) EXPECT_EQ(row.at("status"), "ok");
}

TEST(Ablate, AFailedRunIsReportedAndUnsupportedLengthsAreNotApplicable) {
  TempDir tmp;
  const fs::path out = tmp / "out";
  const fs::path ablation =
      write_ablation(tmp.path(), "failures", "recipes/tests/tiny_causal_lm.txtpb", 2,
                     "variant { name: \"learned\" overrides: \"model.position={learned_absolute "
                     "{max_positions: 32}}\" }\n"
                     "variant { name: \"broken\" overrides: "
                     "\"finetune.init_from=/nonexistent/rota-run\" }\n"
                     "seeds: [3]\ncontext_multipliers: [1, 2]\n");
  EXPECT_EQ(ablate(ablation, out), kExitFailure);  // one run failed; the other finished

  const auto rows = read_csv_rows(out / "results.csv");
  ASSERT_EQ(rows.size(), 2u);
  const auto& learned = rows[0].at("variant") == "learned" ? rows[0] : rows[1];
  const auto& broken = rows[0].at("variant") == "broken" ? rows[0] : rows[1];
  EXPECT_EQ(learned.at("status"), "ok");
  EXPECT_GT(number(learned, "test_ppl_x1"), 1);
  EXPECT_EQ(learned.at("test_ppl_x2"), "n/a");
  EXPECT_EQ(broken.at("status"), "failed");
  EXPECT_NE(broken.at("error").find("rota train failed (exit code 1)"), std::string::npos)
      << broken.at("error");
  EXPECT_NE(broken.at("error").find("console.log"), std::string::npos);
  EXPECT_EQ(broken.at("test_ppl"), "");

  const std::string md = read_bytes(out / "results.md");
  EXPECT_NE(md.find("| learned | 1/1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| broken | 0/1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("n/a"), std::string::npos);
  EXPECT_NE(md.find("max_positions"), std::string::npos);
  EXPECT_NE(md.find("broken seed 3: failed"), std::string::npos) << md;
  expect_well_formed_svg(read_bytes(out / "extrapolation.svg"), "extrapolation.svg");
}

TEST(Ablate, TwoStagesFineTuneFromEachPretrainedRun) {
  TempDir tmp;
  const fs::path out = tmp / "out";
  const fs::path ablation =
      write_ablation(tmp.path(), "two-stage", "recipes/tests/tiny_masked_lm.txtpb", 2,
                     "variant { name: \"lrpe\" }\n"
                     "variant { name: \"rope\" overrides: \"model.position={rope {}}\" }\n"
                     "seeds: [5]\n"
                     "follow_up { recipe: \"" +
                         source_path("recipes/tests/tiny_classifier.txtpb") +
                         "\" overrides: \"train.steps=2\" overrides: \"train.eval_every=0\" }\n");
  ASSERT_EQ(ablate(ablation, out), kExitOk);
  const auto rows = read_csv_rows(out / "results.csv");
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) {
    const fs::path first = fs::weakly_canonical(out / "runs" / row.at("variant") / "seed5");
    const fs::path second = first / "follow_up";
    // The second stage started from the first stage's run, with the variant's encoding.
    const std::string recipe = read_bytes(second / "recipe.txtpb");
    EXPECT_NE(recipe.find("init_from: \"" + first.string() + "\""), std::string::npos) << recipe;
    EXPECT_EQ(recipe.find("rope {") != std::string::npos, row.at("variant") == "rope");
    EXPECT_NE(recipe.find("kind: CLASSIFIER"), std::string::npos);
    EXPECT_TRUE(io::find_latest(second).has_value());
    EXPECT_GT(number(row, "best_valid_ppl"), 1);       // the masked LM
    EXPECT_EQ(row.at("finetune_test_split"), "test");  // SST-2's test split has labels
    const double accuracy = number(row, "finetune_test_accuracy");
    EXPECT_GE(accuracy, 0);
    EXPECT_LE(accuracy, 1);
    EXPECT_GE(number(row, "finetune_best_valid_accuracy"), 0);
    EXPECT_GT(number(row, "finetune_parameters"), 0);
  }
  const std::string md = read_bytes(out / "results.md");
  EXPECT_NE(md.find("fine-tune test accuracy"), std::string::npos) << md;
  EXPECT_NE(md.find("pretrain best valid PPL"), std::string::npos) << md;
  expect_well_formed_svg(read_bytes(out / "finetune_validation_curves.svg"),
                         "finetune_validation_curves.svg");
}

TEST(Ablate, CtrlCStopsTheRunningChildWithACheckpointAndStartsNoOtherRun) {
  TempDir tmp;
  const fs::path out = tmp / "out";
  const fs::path ablation =
      write_ablation(tmp.path(), "stopped", "recipes/tests/tiny_causal_lm.txtpb", 1000000,
                     "overrides: \"train.checkpoint_every=0\"\n"
                     "variant { name: \"a\" }\nseeds: [1, 2]\n");
  const fs::path first = out / "runs" / "a" / "seed1";
  // Like a Ctrl-C on the terminal (which reaches only rota ablate: the children have their own
  // process group), once the first run is training. If the stop never reaches the child, a
  // second SIGINT after two minutes ends this test process (a loud failure, not a hang).
  std::atomic<bool> done{false};
  std::thread interrupter([&] {
    for (int i = 0; i < 6000 && !fs::exists(first / "metrics.jsonl"); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::kill(::getpid(), SIGINT);
    for (int i = 0; i < 12000 && !done; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!done) ::kill(::getpid(), SIGINT);
  });
  const int code = ablate(ablation, out);
  done = true;
  interrupter.join();
  EXPECT_EQ(code, kExitFailure);
  // The child finished its step, wrote a checkpoint there and stopped; run 2 never started.
  const std::optional<fs::path> latest = io::find_latest(first);
  ASSERT_TRUE(latest.has_value());
  EXPECT_NE(latest->filename(), "step_1000000");
  EXPECT_NE(read_bytes(first / "console.log").find("SIGINT received"), std::string::npos);
  EXPECT_FALSE(fs::exists(out / "runs" / "a" / "seed2"));
  const auto rows = read_csv_rows(out / "results.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("status"), "interrupted");
  EXPECT_EQ(rows[1].at("status"), "not run");
  EXPECT_NE(read_bytes(out / "results.md").find("a seed 1: interrupted"), std::string::npos);
}

/// The columns of results.csv that are a run's results (not its timings or provenance).
std::vector<std::string> result_columns(const std::map<std::string, std::string>& row) {
  std::vector<std::string> columns;
  for (const auto& [column, value] : row) {
    if (column != "train_time_s" && column != "tokens_per_s" && column != "status") {
      columns.push_back(column);
    }
  }
  return columns;
}

/// results.csv rows keyed by "variant seed".
std::map<std::string, std::map<std::string, std::string>> rows_by_run(const fs::path& csv) {
  std::map<std::string, std::map<std::string, std::string>> rows;
  for (const auto& row : read_csv_rows(csv)) rows[row.at("variant") + " " + row.at("seed")] = row;
  return rows;
}

TEST(Ablate, ShardsOnTwoMachinesMergeIntoTheReportOfOneRun) {
  TempDir tmp;
  const fs::path ablation = source_path(kTinyAblation);
  const fs::path whole = tmp / "whole", first = tmp / "machine-a", second = tmp / "machine-b";
  ASSERT_EQ(ablate(ablation, whole), kExitOk);
  // Each shard runs its own share (2 of the 4 runs), and exits 0: its share finished.
  ASSERT_EQ(ablate(ablation, first, 1, 4, [](AblateRequest& r) { r.shard = "1/2"; }), kExitOk);
  ASSERT_EQ(ablate(ablation, second, 1, 4, [](AblateRequest& r) { r.shard = "2/2"; }), kExitOk);
  const recipes::AblationPlan plan = recipes::load_ablation(ablation);
  const auto planned = plan_runs(plan, first);
  for (size_t i = 0; i < planned.size(); ++i) {
    const fs::path mine = (i % 2 == 0 ? first : second) / "runs" / planned[i].variant /
                          ("seed" + std::to_string(planned[i].seed));
    const fs::path theirs = (i % 2 == 0 ? second : first) / "runs" / planned[i].variant /
                            ("seed" + std::to_string(planned[i].seed));
    EXPECT_TRUE(io::find_latest(mine).has_value()) << mine;
    EXPECT_FALSE(fs::exists(theirs)) << theirs;
  }
  const auto shard_rows = rows_by_run(first / "results.csv");
  size_t elsewhere = 0;
  for (const auto& [run, row] : shard_rows) elsewhere += row.at("status") == "other shard";
  EXPECT_EQ(elsewhere, 2u);
  const std::string shard_report = read_bytes(first / "results.md");
  EXPECT_NE(shard_report.find("shard 1 of 2"), std::string::npos) << shard_report;
  EXPECT_NE(shard_report.find("## Runs of other shards"), std::string::npos) << shard_report;

  // The merge, on a third machine: the two shards' records, nothing trained.
  const fs::path merged = tmp / "merged";
  ASSERT_EQ(ablate(ablation, merged, 1, 4,
                   [&](AblateRequest& r) {
                     r.records = {(first / "records").string(), (second / "records").string()};
                   }),
            kExitOk);
  EXPECT_FALSE(fs::exists(merged / "runs")) << "the merge trained something";
  const auto whole_rows = rows_by_run(whole / "results.csv");
  const auto merged_rows = rows_by_run(merged / "results.csv");
  ASSERT_EQ(merged_rows.size(), 4u);
  for (const auto& [run, row] : whole_rows) {
    ASSERT_TRUE(merged_rows.contains(run)) << run;
    EXPECT_EQ(merged_rows.at(run).at("status"), "ok") << run;
    EXPECT_EQ(row.at("cpu"), cpu_model_name());
    // Training is deterministic on one machine: the shards' numbers are the whole run's.
    for (const std::string& column : result_columns(row)) {
      EXPECT_EQ(merged_rows.at(run).at(column), row.at(column)) << run << " " << column;
    }
  }
  // The merged directory keeps a copy of every record its report was made from, and its report
  // has the same statistics and extrapolation tables as the whole run's (the results table also
  // holds training times, which differ between any two runs).
  for (const PlannedRun& run : planned) {
    EXPECT_TRUE(fs::exists(record_path(merged, run.variant, run.seed))) << run.variant;
  }
  const auto section = [](const std::string& md, const std::string& heading) {
    const size_t start = md.find(heading);
    return start == std::string::npos ? std::string()
                                      : md.substr(start, md.find("\n## ", start + 1) - start);
  };
  const std::string whole_md = read_bytes(whole / "results.md");
  const std::string merged_md = read_bytes(merged / "results.md");
  for (const char* heading : {"## Against the baseline", "## Length extrapolation"}) {
    EXPECT_FALSE(section(whole_md, heading).empty()) << heading;
    EXPECT_EQ(section(merged_md, heading), section(whole_md, heading)) << heading;
  }
  EXPECT_NE(merged_md.find("4 of them were read from run records"), std::string::npos) << merged_md;
  EXPECT_NE(merged_md.find("All 4 finished runs ran on `" + cpu_model_name() + "`"),
            std::string::npos)
      << merged_md;
}

TEST(Ablate, ARerunWithAnotherRecipeIsRefusedBeforeAnythingIsWritten) {
  TempDir tmp;
  const fs::path ablation = source_path(kTinyAblation);
  const fs::path out = tmp / "out";
  ASSERT_EQ(ablate(ablation, out), kExitOk);
  // The lock file is rewritten by every rota ablate that takes it; nothing else may change.
  const auto stamps_without_lock = [&out] {
    auto stamps = file_stamps(out);
    stamps.erase(".lock");
    return stamps;
  };
  const auto before = stamps_without_lock();
  const auto changed = [](AblateRequest& r) { r.overrides = {"train.steps=7"}; };
  try {
    ablate(ablation, out, 1, 4, changed);
    ADD_FAILURE() << "a rerun with another train.steps was not refused";
  } catch (const recipes::RecipeError& error) {
    EXPECT_EQ(app::exit_code_of(error), app::kExitUsage);  // exit 2: the user must choose
    const std::string message = error.what();
    EXPECT_NE(message.find("4 run(s) made with a different recipe"), std::string::npos) << message;
    EXPECT_NE(message.find("nope seed 1 (runs/nope/seed1): stage 1 train.steps: 6 -> 7"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("--start-over"), std::string::npos) << message;
  }
  // Not one file of the earlier study was touched: report, records, runs.
  EXPECT_EQ(stamps_without_lock(), before);

  // --start-over discards them and trains the new plan.
  ASSERT_EQ(ablate(ablation, out, 1, 4,
                   [&](AblateRequest& r) {
                     changed(r);
                     r.start_over = true;
                   }),
            kExitOk);
  for (const auto& row : read_csv_rows(out / "results.csv")) {
    EXPECT_EQ(row.at("status"), "ok");
    EXPECT_EQ(number(row, "steps"), 7);
  }
}

TEST(Ablate, RecordsAloneRebuildTheStudyWithoutItsRunDirectories) {
  TempDir tmp;
  const fs::path ablation = source_path(kTinyAblation);
  const fs::path out = tmp / "out";
  ASSERT_EQ(ablate(ablation, out), kExitOk);
  const auto first = rows_by_run(out / "results.csv");
  // What is committed: the records only (a few KB each, no checkpoints).
  fs::remove_all(out / "runs");
  for (const auto& entry : fs::recursive_directory_iterator(out / "records")) {
    if (entry.is_regular_file()) {
      EXPECT_LT(fs::file_size(entry.path()), 64u * 1024) << entry;
    }
  }
  ASSERT_EQ(ablate(ablation, out), kExitOk);
  EXPECT_FALSE(fs::exists(out / "runs"));
  const auto again = rows_by_run(out / "results.csv");
  ASSERT_EQ(again.size(), first.size());
  for (const auto& [run, row] : first) {
    for (const std::string& column : result_columns(row)) {
      EXPECT_EQ(again.at(run).at(column), row.at(column)) << run << " " << column;
    }
  }
  // A damaged record stops the study with its file named, before anything is written.
  const fs::path damaged = record_path(out, "nope", 1);
  const std::string text = read_bytes(damaged);
  std::ofstream(damaged) << text.substr(0, text.size() / 2);
  try {
    ablate(ablation, out);
    ADD_FAILURE() << "a damaged record was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(damaged.string()), std::string::npos) << error.what();
  }
}

TEST(Ablate, ShippedAblationsPlanEveryRunAndEveryExtrapolationLength) {
  TempDir tmp;
  for (const char* name :
       {"encodings_causal", "p_matrix", "bidirectional_glue", "softmax_vs_linear",
        "init_schemes_width256", "init_schemes_width128", "init_schemes_300_steps",
        "linearize_wikitext2", "linearize_scratch_wikitext2"}) {
    const recipes::AblationPlan plan =
        recipes::load_ablation(source_path("recipes/ablations/" + std::string(name) + ".txtpb"));
    const auto runs = plan_runs(plan, tmp / name);
    EXPECT_GE(plan.ablation.seeds_size(), 3) << name;
    ASSERT_EQ(runs.size(),
              static_cast<size_t>(plan.ablation.variant_size() * plan.ablation.seeds_size()));
    std::set<fs::path> dirs;
    for (const PlannedRun& run : runs) {
      EXPECT_TRUE(dirs.insert(run.dir).second) << run.dir;
      ASSERT_EQ(run.stages.size(), plan.ablation.has_follow_up() ? 2u : 1u) << name;
      const recipes::Recipe& first = run.stages[0].recipe;
      EXPECT_EQ(first.train().seed(), run.seed);
      if (run.stages.size() == 2) {
        EXPECT_EQ(run.stages[1].recipe.finetune().init_from(), run.dir.string());
        EXPECT_EQ(run.stages[1].run_dir, run.dir / "follow_up");
        // The encoder of the second stage is the first stage's.
        EXPECT_EQ(run.stages[1].recipe.model().position().DebugString(),
                  first.model().position().DebugString());
      }
      // No shipped encoding is refused at any of the ablation's lengths.
      for (const int m : plan.ablation.context_multipliers()) {
        EXPECT_EQ(context_problem(first, m * first.data().sequence_length()), "")
            << name << " " << run.variant << " " << m;
      }
    }
  }
}

TEST(AblationReport, CsvQuotesFieldsThatNeedIt) {
  TextTable table;
  table.header = {"a", "b"};
  table.rows = {{"model.position={lrpe {type: 1}}", "x,y"}, {"say \"hi\"", "two\nlines"}};
  const std::string csv = to_csv(table);
  EXPECT_EQ(csv,
            "a,b\nmodel.position={lrpe {type: 1}},\"x,y\"\n\"say \"\"hi\"\"\",\"two\nlines\"\n");
  const auto rows = parse_csv(csv);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1][1], "x,y");
  EXPECT_EQ(rows[2][0], "say \"hi\"");
  EXPECT_EQ(rows[2][1], "two\nlines");
  EXPECT_EQ(to_markdown(table),
            "| a | b |\n|---|---:|\n| model.position={lrpe {type: 1}} | x,y |\n"
            "| say \"hi\" | two lines |\n");
}

TEST(AblationReport, MeanAndSampleStandardDeviation) {
  const Summary s = summarize({2.0, 4.0, 4.0, 5.0, NAN});
  EXPECT_EQ(s.n, 4);
  EXPECT_DOUBLE_EQ(s.mean, 15.0 / 4);
  // Σ(x − 3.75)² = 3.0625 + 0.0625 + 0.0625 + 1.5625 = 4.75, over n − 1 = 3.
  EXPECT_DOUBLE_EQ(s.std, std::sqrt(4.75 / 3));
  EXPECT_EQ(format_mean_std(summarize({123.44, 125.1, 121.9})), "123.5 ± 1.6");
  EXPECT_EQ(format_mean_std(summarize({0.8234})), "0.8234");
  EXPECT_EQ(format_mean_std(summarize({})), "—");
  EXPECT_EQ(format_number(12345.6), "12346");
}

TEST(AblationReport, SvgChartHasOneLinePerSeriesAndEscapesText) {
  ChartOptions options;
  options.title = "a <title> & more";
  options.log_y = true;
  options.log_x = true;
  options.x_ticks = {{1, "1×"}, {2, "2×"}, {4, "4×"}};
  ChartSeries a{"a&b", {1, 2, 4}, {100, 120, NAN}, {90, 110, NAN}, {110, 130, NAN}};
  ChartSeries b{"c", {1, 2, 4}, {80, 85, 90}, {}, {}};
  const std::string svg = render_line_chart(options, {a, b});
  expect_well_formed_svg(svg, "chart");
  EXPECT_EQ(count(svg, "class=\"line\""), 2u);
  EXPECT_EQ(count(svg, "class=\"band\""), 1u);
  EXPECT_NE(svg.find("a &lt;title&gt; &amp; more"), std::string::npos);
  EXPECT_NE(svg.find("data-series=\"a&amp;b\""), std::string::npos);
  EXPECT_EQ(count(svg, "<circle"), 5u);  // the NaN point is left out
  EXPECT_NE(svg.find(">2×</text>"), std::string::npos);
  EXPECT_EQ(nice_ticks(0, 10), (std::vector<double>{0, 2, 4, 6, 8, 10}));
}

// Twelve series (the P ablation) on a shorter palette: every line's (colour, dash) pair
// differs, a colour's first series is solid and its repeats dashed, and the legend draws each
// series the way its line is drawn.
TEST(AblationReport, SvgChartKeepsSeriesDistinctPastThePalette) {
  ChartOptions options;
  std::vector<ChartSeries> series;
  for (int i = 0; i < 12; ++i) {
    std::string name("s");  // built in steps: GCC 12 warns (-Wrestrict) on "s" + to_string(i)
    name += std::to_string(i);
    series.push_back(ChartSeries{name, {1, 2}, {1.0 + i, 2.0 + i}, {}, {}});
  }
  const std::string svg = render_line_chart(options, series);
  expect_well_formed_svg(svg, "chart");
  // An element's value of attribute `name` ("" when absent).
  auto attribute = [](const std::string& element, const std::string& name) {
    std::string key(" ");
    key += name;
    key += "=\"";
    const size_t at = element.find(key);
    if (at == std::string::npos) return std::string();
    const size_t begin = at + key.size();
    return element.substr(begin, element.find('"', begin) - begin);
  };
  auto elements = [&](const std::string& opening, size_t from) {
    std::vector<std::string> found;
    for (size_t pos = from; (pos = svg.find(opening, pos)) != std::string::npos; ++pos) {
      found.push_back(svg.substr(pos, svg.find('>', pos) - pos + 1));
    }
    return found;
  };
  const std::vector<std::string> lines = elements("<path class=\"line\"", 0);
  const std::vector<std::string> legend = elements("<line ", svg.find("<g class=\"legend\">"));
  ASSERT_EQ(lines.size(), 12u);
  ASSERT_EQ(legend.size(), 12u);
  std::set<std::pair<std::string, std::string>> styles;
  std::set<std::string> colours_seen;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string colour = attribute(lines[i], "stroke");
    const std::string dash = attribute(lines[i], "stroke-dasharray");
    EXPECT_EQ(dash.empty(), !colours_seen.contains(colour)) << i;
    colours_seen.insert(colour);
    styles.insert({colour, dash});
    EXPECT_EQ(attribute(legend[i], "stroke"), colour) << i;
    EXPECT_EQ(attribute(legend[i], "stroke-dasharray"), dash) << i;
  }
  EXPECT_EQ(styles.size(), 12u);
  EXPECT_LT(colours_seen.size(), 12u);  // the palette did run out, so dashes were needed
}

TEST(AblationSubprocess, QuotesArgumentsForTheShell) {
  EXPECT_EQ(shell_quote("model.layers=6"), "model.layers=6");
  EXPECT_EQ(shell_quote("model.position={none {}}"), "'model.position={none {}}'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(command_line({"rota", "train", "a b"}), "rota train 'a b'");
}

TEST(AblationSubprocess, ReportsExitCodesSignalsAndMissingPrograms) {
  TempDir tmp;
  ChildCommand command;
  command.program = "/bin/sh";
  command.argv = {"sh", "-c", "echo out; echo err >&2; exit 3"};
  command.env = {{"ROTA_TEST_VALUE", "42"}};
  command.stdout_path = tmp / "out.txt";
  command.stderr_path = tmp / "err.txt";
  ChildExit exit = run_child(command);
  EXPECT_EQ(exit.exit_code, 3);
  EXPECT_EQ(read_bytes(tmp / "out.txt"), "out\n");
  EXPECT_EQ(read_bytes(tmp / "err.txt"), "err\n");
  command.argv = {"sh", "-c", "echo $ROTA_TEST_VALUE"};
  EXPECT_TRUE(run_child(command).ok());
  EXPECT_EQ(read_bytes(tmp / "out.txt"), "out\n42\n");  // appended
  command.argv = {"sh", "-c", "kill -KILL $$"};
  exit = run_child(command);
  EXPECT_EQ(exit.signal, SIGKILL);
  EXPECT_EQ(exit.describe(), "killed by SIGKILL");
  command.program = (tmp / "missing").string();
  exit = run_child(command);
  EXPECT_FALSE(exit.ok());
  EXPECT_NE(exit.describe().find("could not start"), std::string::npos) << exit.describe();
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::experiments
