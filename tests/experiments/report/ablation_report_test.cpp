// The ablation report from known results: the comparison with the baseline (golden lines),
// results.csv read back, the small-multiples plots (panels, labels, ticks) and the ETA.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "experiments/progress.h"
#include "experiments/report/ablation_plots.h"
#include "experiments/report/ablation_report.h"
#include "experiments/report/svg_chart.h"
#include "experiments/run_plan.h"
#include "framework/base/error.h"
#include "recipes/ablation.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace rota::experiments {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using rota::testing::TempDir;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) {
    ++n;
  }
  return n;
}

/// An ablation file next to a copy of the tiny causal LM, loaded, with its planned runs and
/// finished results whose test PPL (and extrapolation) are `ppl[variant][seed index]`.
struct Fixture {
  TempDir tmp;
  recipes::AblationPlan plan;
  AblationReport report;

  Fixture(const std::string& body, const std::map<std::string, std::vector<double>>& ppl) {
    fs::copy_file(fs::path(ROTA_SOURCE_DIR) / "recipes/tests/tiny_causal_lm.txtpb",
                  tmp / "base.txtpb");
    std::ofstream(tmp / "study.txtpb")
        << "version: 1\nbase: \"base.txtpb\"\nseeds: [1, 2, 3]\ncontext_multipliers: [1, 2]\n"
        << body;
    plan = recipes::load_ablation(tmp / "study.txtpb");
    report.plan = &plan;
    report.out = tmp / "out";
    fs::create_directories(report.out);
    report.runs = plan_runs(plan, report.out);
    report.command = "rota ablate study.txtpb";
    for (const PlannedRun& run : report.runs) {
      RunResult r;
      const recipes::Variant& variant = plan.ablation.variant(run.variant_index);
      r.overrides.assign(variant.overrides().begin(), variant.overrides().end());
      r.variant = run.variant;
      r.seed = run.seed;
      const auto found = ppl.find(run.variant);
      const double value = found == ppl.end() ? NAN : found->second.at(run.seed - 1);
      if (std::isnan(value)) {
        r.status = RunResult::Status::kFailed;
        r.error = "killed";
      } else {
        r.status = RunResult::Status::kOk;
        StageResult s;
        s.kind = "causal_lm";
        s.primary = "ppl";
        s.parameters = 1000;
        s.train_time_s = 1.5;
        s.tokens_per_s = 100;
        s.steps = 20;
        s.best_valid_step = 20;
        s.best_valid = {{"loss", std::log(value + 1)}, {"ppl", value + 1}};
        s.test_split = "test";
        s.test = {{"loss", std::log(value)}, {"ppl", value}};
        s.contexts.push_back({1, 32, value, ""});
        s.contexts.push_back({2, 64, value * 2, ""});
        s.curve = {{10, value * 2}, {20, value + 1}};
        r.stages.push_back(s);
      }
      report.results.push_back(r);
    }
  }
};

TEST(AblationReport, ResultsOnTheValidationSplitAreLabelledSoAndTheBiasIsNamed) {
  const std::string body = "variant { name: \"a\" }\nvariant { name: \"b\" }\nbaseline: \"a\"\n";
  const std::map<std::string, std::vector<double>> ppl = {{"a", {100, 110, 120}},
                                                          {"b", {101, 112, 126}}};
  Fixture on_test(body, ppl);
  EXPECT_EQ(results_markdown(on_test.report).find("Selection bias"), std::string::npos);
  // Data without a labelled test split: the final evaluation ran on the validation split.
  Fixture f(body, ppl);
  for (RunResult& r : f.report.results) r.stages[0].test_split = "valid";
  const std::string md = results_markdown(f.report);
  EXPECT_NE(md.find("- **Selection bias:** the data has no labelled test split, so the numbers "
                    "reported here come from the validation split"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("Valid PPL of `checkpoints/best` on the valid split with windows"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("paired by seed; **bold** where the interval excludes 0."), std::string::npos);
  EXPECT_NE(md.find("of valid PPL, paired by seed"), std::string::npos) << md;
  // Outside the CSV's column names (a schema), no heading or axis says "test".
  for (const char* wrong : {"test PPL", "Test PPL"}) {
    EXPECT_EQ(md.find(wrong), std::string::npos) << wrong << "\n" << md;
  }
  const std::vector<PlotFile> plots = write_plots(f.report);
  bool extrapolation = false;
  for (const PlotFile& plot : plots) {
    std::ifstream in(f.report.out / plot.svg);
    const std::string svg(std::istreambuf_iterator<char>(in), {});
    EXPECT_EQ(svg.find(">test "), std::string::npos) << plot.svg;
    if (plot.svg == "extrapolation.svg") {
      extrapolation = true;
      EXPECT_NE(svg.find(">valid perplexity<"), std::string::npos) << svg.substr(0, 2000);
    }
  }
  EXPECT_TRUE(extrapolation);
}

TEST(AblationReport, ComparesEveryVariantWithTheBaselinePairedBySeed) {
  // b − a = +1, +2, +6: mean 3, 95% CI 3 ± 4.302652730·√(7/3) = [−3.57, +9.57], p =
  // 1 − √(27/41) = 0.1885; c − a = −10, −11, −12: mean −11, CI −11 ± 4.302652730/√3 =
  // [−13.48, −8.52], t = −11√3, p = 1 − 11√3/√365 = 0.00274. Decimals: those of a's PPL
  // (about 110) at 4 significant digits.
  Fixture f(
      "variant { name: \"a\" }\nvariant { name: \"b\" }\nvariant { name: \"c\" }\n"
      "baseline: \"a\"\n",
      {{"a", {100, 110, 120}}, {"b", {101, 112, 126}}, {"c", {90, 99, 108}}});
  const std::string md = results_markdown(f.report);
  const size_t section = md.find("## Against the baseline\n\nEach variant against `a` on test PPL");
  ASSERT_NE(section, std::string::npos) << md;
  const std::string expected =
      "| variant | baseline | verdict | seeds | difference per seed (1, 2, 3) | mean difference "
      "[95% CI] | p (paired t) |\n"
      "|---|---|---|---:|---:|---:|---:|\n"
      "| c | a | **better** (the 95% CI excludes 0) | 3 | −10.0, −11.0, −12.0 | −11.0 [−13.5, "
      "−8.5] | 0.0027 |\n"
      "| b | a | within noise (the 95% CI contains 0) | 3 | +1.0, +2.0, +6.0 | +3.0 [−3.6, "
      "+9.6] | 0.19 |\n\n"
      "- Worse than the baseline (95% CI excludes 0): none\n"
      "- Better than the baseline (95% CI excludes 0): c\n"
      "- Within noise (95% CI contains 0): b\n";
  EXPECT_NE(md.find(expected, section), std::string::npos) << md.substr(section);
  EXPECT_NE(md.find("Lower is better, so a positive difference means the variant is worse."),
            std::string::npos);
  // Extrapolation at 2×: the differences double (b: +2, +4, +12; c: −20, −22, −24).
  EXPECT_NE(md.find("| c | a | **−11.0 [−13.5, −8.5]** | **−22.0 [−27.0, −17.0]** |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| b | a | +3.0 [−3.6, +9.6] | +6.0 [−7.1, +19.1] |"), std::string::npos) << md;
  EXPECT_LT(md.find("## Against the baseline"), md.find("## Length extrapolation"));
}

TEST(AblationReport, ComparisonsPairOnlySeedsBothFinished) {
  // b's seed 3 failed: two pairs (+1, +2), df = 1: 1.5 ± 12.70620474 · 0.5 = [−4.85, +7.85].
  Fixture f("variant { name: \"a\" }\nvariant { name: \"b\" }\nbaseline: \"a\"\n",
            {{"a", {100, 110, 120}}, {"b", {101, 112, NAN}}});
  const std::string md = results_markdown(f.report);
  EXPECT_NE(md.find("| b | a | within noise (the 95% CI contains 0) | 2 | +1.0, +2.0, — | +1.5 "
                    "[−4.9, +7.9] |"),
            std::string::npos)
      << md;
}

TEST(AblationReport, WithoutABaselineTheReportSaysHowToGetOne) {
  Fixture f("variant { name: \"a\" }\nvariant { name: \"b\" }\n",
            {{"a", {100, 110, 120}}, {"b", {101, 112, 126}}});
  const std::string md = results_markdown(f.report);
  EXPECT_NE(md.find("No `baseline:` in the ablation file"), std::string::npos);
  EXPECT_EQ(md.find("mean difference"), std::string::npos);
}

TEST(AblationReport, StatesHowEachVariantsWeightsStart) {
  const std::map<std::string, std::vector<double>> ppl = {{"a", {100, 110, 120}},
                                                          {"b", {101, 112, 126}}};
  Fixture alike("variant { name: \"a\" }\nvariant { name: \"b\" overrides: \"model.dropout=0\" }\n",
                ppl);
  EXPECT_NE(results_markdown(alike.report)
                .find("- Initialisation: `model.init_scheme` PYTORCH, in every variant\n"),
            std::string::npos)
      << results_markdown(alike.report);
  Fixture differ(
      "variant { name: \"a\" }\nvariant { name: \"b\" overrides: \"model.init_scheme=GPT2\" "
      "overrides: \"model.init_std=0.05\" }\n",
      ppl);
  std::string md = results_markdown(differ.report);
  EXPECT_NE(md.find("- Initialisation per variant — a: `model.init_scheme` PYTORCH; b: "
                    "`model.init_scheme` GPT2 (σ 0.05)\n"),
            std::string::npos)
      << md;
  // A fine-tune starts from its checkpoint; the scheme starts only what that lacks.
  Fixture tuned("variant { name: \"a\" overrides: \"finetune.init_from=/runs/base\" }\n",
                {{"a", {100, 110, 120}}});
  EXPECT_NE(results_markdown(tuned.report)
                .find("- Initialisation: weights from `/runs/base` (`model.init_scheme` PYTORCH "
                      "for the parameters it lacks), in every variant\n"),
            std::string::npos)
      << results_markdown(tuned.report);
  // Rebuilt from a results.csv, the runs may predate a change of the default, and the CSV does
  // not say how they started: no line rather than a guess.
  differ.report.source_note = "from results.csv";
  EXPECT_EQ(results_markdown(differ.report).find("- Initialisation"), std::string::npos);
}

TEST(AblationReport, AxisBaselineComparesWithinEachLevelOfTheOtherAxes) {
  Fixture f(
      "axis { name: \"t\" level { name: \"x\" } level { name: \"y\" overrides: "
      "\"train.steps=10\" } }\n"
      "axis { name: \"p\" level { name: \"h\" } level { name: \"i\" overrides: "
      "\"model.position.lrpe.p=IDENTITY\" } }\nbaseline: \"p=h\"\n",
      {{"x_h", {100, 110, 120}},
       {"x_i", {101, 112, 126}},
       {"y_h", {200, 210, 220}},
       {"y_i", {190, 199, 208}}});
  const std::string md = results_markdown(f.report);
  EXPECT_NE(md.find("Each variant against its baseline (`p=h`: the variant that differs from it "
                    "only on that axis)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| x_i | x_h | within noise"), std::string::npos) << md;
  EXPECT_NE(md.find("| y_i | y_h | **better**"), std::string::npos) << md;
  EXPECT_NE(md.find("- Better than the baseline (95% CI excludes 0): y_i (vs y_h)"),
            std::string::npos);
}

TEST(AblationReport, ResultsCsvReadsBackToTheSameReport) {
  Fixture f(
      "variant { name: \"a\" }\nvariant { name: \"b\" overrides: \"train.steps=10\" "
      "overrides: \"train.eval_every=5\" }\nbaseline: \"a\"\n",
      {{"a", {100, 110, 120}}, {"b", {101, NAN, 126}}});
  f.report.results[0].stages[0].contexts[1] = {2, 64, std::nullopt, "n/a: cannot run"};
  const std::string csv = results_csv(f.report);
  const std::vector<RunResult> back = results_from_csv(csv, f.report.runs);
  ASSERT_EQ(back.size(), 6u);
  EXPECT_EQ(back[4].status, RunResult::Status::kFailed);
  EXPECT_EQ(back[4].error, "killed");
  EXPECT_EQ(back[3].overrides, (std::vector<std::string>{"train.steps=10", "train.eval_every=5"}));
  EXPECT_FALSE(back[0].stages[0].contexts[1].value.has_value());
  EXPECT_TRUE(back[0].stages[0].curve.empty());  // the CSV has no curves
  AblationReport again = f.report;
  again.results = back;
  EXPECT_EQ(results_csv(again), csv);
  // A missing run is "not run"; a malformed number is named.
  const std::string header = csv.substr(0, csv.find('\n') + 1);
  const std::vector<RunResult> none = results_from_csv(header, f.report.runs);
  EXPECT_EQ(none[0].status, RunResult::Status::kNotRun);
  EXPECT_EQ(none[0].error, "not in results.csv");
  std::string broken = csv;
  broken.replace(broken.find(",1000,"), 6, ",1e3x,");
  try {
    results_from_csv(broken, f.report.runs);
    ADD_FAILURE() << "a malformed number was accepted";
  } catch (const rota::Error& error) {
    EXPECT_EQ(std::string(error.what()), "results.csv row 1: parameters = '1e3x' is not a number");
  }
}

/// The y coordinates of the direct labels of each panel.
std::vector<std::vector<double>> label_ys(const std::string& svg) {
  std::vector<std::vector<double>> panels;
  const std::regex label("<text class=\"label\"[^>]* y=\"([0-9.]+)\"");
  size_t pos = 0;
  while ((pos = svg.find("<g class=\"panel\"", pos)) != std::string::npos) {
    const size_t end = svg.find("<g class=\"panel\"", pos + 1);
    const std::string panel = svg.substr(pos, end == std::string::npos ? end : end - pos);
    panels.emplace_back();
    for (std::sregex_iterator it(panel.begin(), panel.end(), label), last; it != last; ++it) {
      panels.back().push_back(std::stod((*it)[1]));
    }
    pos += 1;
  }
  return panels;
}

TEST(AblationPlots, AGridOfTwelveIsFacetedByItsFirstAxisWithLabelsThatDoNotOverlap) {
  std::string body = "axis { name: \"type\"";
  for (int t = 1; t <= 3; ++t) {
    body += " level { name: \"t" + std::to_string(t) +
            "\" overrides: \"train.steps=" + std::to_string(10 + t) + "\" }";
  }
  body += " }\naxis { name: \"p\"";
  for (const char* p : {"HOUSEHOLDER", "HOUSEHOLDER_FROZEN", "IDENTITY", "ODD_EVEN"}) {
    std::string name(p);
    for (char& c : name) c = static_cast<char>(std::tolower(c));
    body += " level { name: \"" + name + "\" overrides: \"model.position.lrpe.p=" + p + "\" }";
  }
  body += " }\nbaseline: \"p=householder\"\n";
  std::map<std::string, std::vector<double>> ppl;
  double value = 240;
  for (int t = 1; t <= 3; ++t) {
    for (const char* p : {"householder", "householder_frozen", "identity", "odd_even"}) {
      ppl[fmt::format("t{}_{}", t, p)] = {value, value + 1, value + 2};
      value += 0.5;  // lines nearly on top of each other: their labels must still spread
    }
  }
  Fixture f(body, ppl);
  const std::vector<PlotFile> plots = write_plots(f.report);
  ASSERT_EQ(plots.size(), 2u);
  for (const PlotFile& plot : plots) {
    const std::string svg = [&] {
      std::ifstream in(f.report.out / plot.svg);
      return std::string(std::istreambuf_iterator<char>(in), {});
    }();
    EXPECT_EQ(count(svg, "<g class=\"panel\""), 3u) << plot.svg;
    EXPECT_NE(svg.find("data-panel=\"type = t2\""), std::string::npos);
    EXPECT_EQ(count(svg, "class=\"line\""), 12u);
    EXPECT_EQ(count(svg, "class=\"label\""), 12u);
    EXPECT_EQ(count(svg, "class=\"legend\""), 0u);
    // Series are named by their other levels inside a panel.
    EXPECT_EQ(count(svg, ">householder_frozen</text>"), 3u);
    for (const std::vector<double>& ys : label_ys(svg)) {
      ASSERT_EQ(ys.size(), 4u);
      std::vector<double> sorted = ys;
      std::sort(sorted.begin(), sorted.end());
      for (size_t i = 1; i < sorted.size(); ++i) EXPECT_GE(sorted[i] - sorted[i - 1], 14 - 1e-9);
    }
  }
}

TEST(AblationPlots, ALongListIsSplitIntoPanelsThatEachShowTheBaseline) {
  std::string body;
  std::map<std::string, std::vector<double>> ppl;
  for (int v = 0; v < 10; ++v) {
    body += fmt::format("variant {{ name: \"v{}\" overrides: \"train.steps={}\" }}\n", v, 10 + v);
    ppl[fmt::format("v{}", v)] = {100.0 + v, 101.0 + v, 102.0 + v};
  }
  Fixture f(body + "baseline: \"v3\"\n", ppl);
  write_plots(f.report);
  std::ifstream in(f.report.out / "extrapolation.svg");
  const std::string svg(std::istreambuf_iterator<char>(in), {});
  EXPECT_EQ(count(svg, "<g class=\"panel\""), 2u);
  EXPECT_EQ(count(svg, ">v3 (baseline)</text>"), 2u);
  EXPECT_EQ(count(svg, "class=\"line\""), 11u);  // 9 variants + the baseline twice
}

TEST(AblationPlots, LogAxesLabelValuesAcrossTheData) {
  ChartOptions options;
  options.log_y = true;
  auto y_labels = [&](double low, double high) {
    const std::string svg =
        render_small_multiples(options, {{"", {ChartSeries{"s", {1, 2}, {low, high}, {}, {}}}}}, 1);
    std::vector<double> labels;
    const std::regex tick("text-anchor=\"end\">([0-9.]+)</text>");
    for (std::sregex_iterator it(svg.begin(), svg.end(), tick), last; it != last; ++it) {
      labels.push_back(std::stod((*it)[1]));
    }
    return labels;
  };
  // Inside one stretch of a decade: round values every 50.
  EXPECT_EQ(y_labels(240, 480), (std::vector<double>{250, 300, 350, 400, 450, 500}));
  // Most of a decade: 1–9 steps, plus a round value in the gap at the bottom.
  EXPECT_EQ(y_labels(230, 1150),
            (std::vector<double>{250, 300, 400, 500, 600, 700, 800, 900, 1000}));
  // Several decades: 1-2-5.
  EXPECT_EQ(y_labels(3, 4000),
            (std::vector<double>{2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}));
}

TEST(AblationProgress, EtaFromFinishedRunsElseFromTheRunningOnes) {
  EtaInput input;
  input.total = 10;
  input.done = 4;
  input.jobs = 2;
  input.finished_seconds = {100, 140};  // 120 s a run
  input.running = {{30, 0.25}, {60, 0.5}};
  // Left: 4 not started + 0.75 + 0.5 = 5.25 runs × 120 s / 2 at once.
  EXPECT_DOUBLE_EQ(*eta_seconds(input), 5.25 * 120 / 2);
  // Nothing finished yet: 30 / 0.25 = 60 / 0.5 = 120 s a run from the running ones.
  input.finished_seconds.clear();
  EXPECT_DOUBLE_EQ(*eta_seconds(input), 5.25 * 120 / 2);
  // Too little progress to tell.
  input.running = {{3, 0.01}};
  EXPECT_FALSE(eta_seconds(input).has_value());
  // One run left: one at a time, whatever --jobs.
  input = EtaInput{10, 9, {50}, {}, 4};
  EXPECT_DOUBLE_EQ(*eta_seconds(input), 50);
  input.done = 10;
  EXPECT_EQ(*eta_seconds(input), 0);
  EXPECT_EQ(format_duration(42), "42 s");
  EXPECT_EQ(format_duration(12 * 60 + 20), "12 min");
  EXPECT_EQ(format_duration(3900), "1 h 05 min");
}

TEST(AblationProgress, LastLoggedStepSkipsATornLastLine) {
  TempDir tmp;
  EXPECT_EQ(last_logged_step(tmp.path()), 0);
  std::ofstream(tmp / "metrics.jsonl") << "{\"step\":25,\"split\":\"train\",\"loss\":3.1}\n"
                                       << "{\"step\":50,\"split\":\"valid\",\"loss\":3.0}\n"
                                       << "{\"step\":75,\"spl";
  EXPECT_EQ(last_logged_step(tmp.path()), 50);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::experiments
