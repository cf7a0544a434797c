// One variant × seed of an ablation (see run_unit.h): train and eval children, progress.
#include "experiments/run_unit.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/setup/context_length.h"
#include "experiments/host_facts.h"
#include "experiments/run_record.h"
#include "experiments/stage_facts.h"
#include "experiments/subprocess.h"
#include "framework/base/file_io.h"
#include "framework/io/checkpoint_paths.h"
#include "framework/io/log.h"

namespace fs = std::filesystem;

namespace rota::experiments {

namespace {

using Json = nlohmann::ordered_json;

/// A run that cannot go on; the message says why (caught by run_unit).
struct RunFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// A stop request ended the run early.
struct RunStopped : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What a previous rota ablate finished for this run.
struct Progress {
  std::vector<bool> trained;
  Json evals = Json::object();  // key -> {"metrics": {...}, "parameters": N}
};

Progress read_progress(const fs::path& file, size_t stages) {
  Progress progress;
  progress.trained.assign(stages, false);
  if (!fs::exists(file)) return progress;
  const Json j = Json::parse(read_file(file), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return progress;  // unreadable: redo the checks
  if (j.contains("trained") && j["trained"].is_array()) {
    for (size_t i = 0; i < stages && i < j["trained"].size(); ++i) {
      progress.trained[i] = j["trained"][i].is_boolean() && j["trained"][i].get<bool>();
    }
  }
  if (j.contains("evals") && j["evals"].is_object()) progress.evals = j["evals"];
  return progress;
}

void write_progress(const fs::path& file, const Progress& progress) {
  Json j = {{"trained", progress.trained}, {"evals", progress.evals}};
  write_file_atomically(file, j.dump(2) + "\n");
}

/// The fields in which a run's recorded recipe differs from the planned one, for messages.
std::string recipe_change(const std::string& recorded, const std::string& planned) {
  std::string text;
  for (const std::string& field : recipe_differences(recorded, planned)) {
    text += (text.empty() ? "" : "; ") + field;
  }
  return text.empty() ? "the texts differ" : text;
}

/// "key=value key=value" -> map (values that are not numbers are skipped).
MetricMap parse_metrics_line(const std::string& line) {
  MetricMap values;
  std::istringstream fields(line);
  for (std::string field; fields >> field;) {
    const size_t eq = field.find('=');
    if (eq == std::string::npos) continue;
    try {
      size_t used = 0;
      const double value = std::stod(field.substr(eq + 1), &used);
      if (used == field.size() - eq - 1) values[field.substr(0, eq)] = value;
    } catch (const std::exception&) {
    }
  }
  return values;
}

/// A `positions=A-B tokens=N loss=L ppl=P` line of `rota eval --by-position`; nullopt for any
/// other line.
std::optional<PositionLoss> parse_position_line(const std::string& line) {
  constexpr std::string_view kPrefix = "positions=";
  if (line.rfind(kPrefix, 0) != 0) return std::nullopt;
  const size_t dash = line.find('-');
  const size_t space = line.find(' ');
  if (dash == std::string::npos || space == std::string::npos || dash > space) return std::nullopt;
  const MetricMap fields = parse_metrics_line(line);
  if (!fields.contains("tokens") || !fields.contains("loss")) return std::nullopt;
  try {
    PositionLoss loss;
    loss.first = std::stoll(line.substr(kPrefix.size(), dash - kPrefix.size()));
    loss.last = std::stoll(line.substr(dash + 1, space - dash - 1));
    loss.tokens = static_cast<int64_t>(fields.at("tokens"));
    loss.loss = fields.at("loss");
    return loss;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

struct EvalOutput {
  MetricMap metrics;
  int64_t parameters = 0;
  std::vector<PositionLoss> positions;  // with by_position
};

class UnitRunner {
 public:
  UnitRunner(const PlannedRun& run, const UnitSettings& settings, RunResult& result)
      : run_(run), settings_(settings), result_(result) {}

  void run() {
    progress_ = read_progress(run_.dir / kProgressFile, run_.stages.size());
    for (const StagePlan& stage : run_.stages) {
      check_stop();
      check_recipe(stage);
      // A run directory deleted by hand after training is trained again.
      if (progress_.trained[stage.index] && !io::find_latest(stage.run_dir)) {
        progress_.trained[stage.index] = false;
      }
      if (!progress_.trained[stage.index]) {
        train(stage);
        progress_.trained[stage.index] = true;
        forget_evaluations_from(stage.index);  // they were of other weights
        write_progress(run_.dir / kProgressFile, progress_);
      }
      result_.stages.push_back(evaluate_stage(stage));
    }
    result_.status = RunResult::Status::kOk;
    write_file_atomically(run_.dir / kResultFile, result_to_json(result_));
  }

 private:
  /// Drops the cached evaluations of stage `first` and the stages after it.
  void forget_evaluations_from(int first) {
    Json kept = Json::object();
    for (const auto& [key, value] : progress_.evals.items()) {
      bool later = false;
      for (int i = first; i < static_cast<int>(run_.stages.size()); ++i) {
        later |= key.rfind(fmt::format("stage{}|", i), 0) == 0;
      }
      if (!later) kept[key] = value;
    }
    progress_.evals = kept;
  }

  std::string label() const { return fmt::format("{} seed {}", run_.variant, run_.seed); }

  void check_stop() const {
    if (settings_.stop_signal != nullptr && settings_.stop_signal() != 0) {
      throw RunStopped("stopped before it finished; rerun the same command to continue");
    }
  }

  /// Existing checkpoints are only used if they were trained with the planned recipe.
  void check_recipe(const StagePlan& stage) const {
    const fs::path recorded_file = stage.run_dir / "recipe.txtpb";
    if (!fs::exists(recorded_file) || !io::find_latest(stage.run_dir)) return;
    const std::string recorded = read_file(recorded_file);
    if (recorded != stage.recipe_text) {
      throw RunFailure(fmt::format(
          "{} was trained with a different recipe ({}); the ablation or its base recipe "
          "changed since. Delete that directory to retrain this run, or use another --out",
          stage.run_dir.string(), recipe_change(recorded, stage.recipe_text)));
    }
  }

  /// Runs a child with its output appended to the stage's console.log (stdout, stderr to
  /// `stdout_path`, `stderr_path` when given), after a header line naming the command.
  ChildExit start(const StagePlan& stage, const std::vector<std::string>& argv,
                  const fs::path& stdout_path = {}, const fs::path& stderr_path = {}) const {
    fs::create_directories(stage.run_dir);
    const fs::path log = stage.run_dir / kConsoleLog;
    {
      std::ofstream header(log, std::ios::app);
      const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
      header << fmt::format("==== {:%Y-%m-%d %H:%M:%S} {}\n", fmt::localtime(now),
                            command_line(argv));
    }
    ChildCommand command;
    command.program = settings_.program;
    command.argv = argv;
    command.env = settings_.env;
    command.stdout_path = stdout_path.empty() ? log : stdout_path;
    command.stderr_path = stderr_path.empty() ? log : stderr_path;
    return run_child(command, settings_.stop_signal);
  }

  void train(const StagePlan& stage) const {
    io::log_info("{}: training stage {} in {}", label(), stage.index + 1, stage.run_dir.string());
    const ChildExit exit = start(stage, train_argv(stage, settings_.program_name));
    if (exit.ok()) return;
    check_stop();
    const fs::path log = stage.run_dir / kConsoleLog;
    throw RunFailure(fmt::format("rota train failed ({}): {} (log: {})", exit.describe(),
                                 last_error_line(log), log.string()));
  }

  /// `rota eval CHECKPOINT --split SPLIT [--context N] [--batches B] [--by-position]`, or its
  /// cached result.
  EvalOutput evaluate(const StagePlan& stage, const fs::path& checkpoint, const std::string& split,
                      int64_t context, bool by_position) {
    const std::string key = fmt::format("stage{}|{}|{}|context{}|batches{}{}", stage.index,
                                        checkpoint.filename().string(), split, context,
                                        settings_.eval_batches, by_position ? "|positions" : "");
    if (progress_.evals.contains(key)) {
      const Json& cached = progress_.evals[key];
      EvalOutput out;
      for (const auto& [name, value] : cached.at("metrics").items()) {
        out.metrics[name] = value.get<double>();
      }
      out.parameters = cached.at("parameters").get<int64_t>();
      if (cached.contains("positions")) {
        for (const Json& p : cached.at("positions")) {
          out.positions.push_back({p.at(0).get<int64_t>(), p.at(1).get<int64_t>(),
                                   p.at(2).get<int64_t>(),
                                   p.at(3).is_null() ? std::nan("") : p.at(3).get<double>()});
        }
      }
      return out;
    }
    std::vector<std::string> argv = {settings_.program_name, "eval", checkpoint.string(), "--split",
                                     split};
    if (by_position) argv.push_back("--by-position");
    if (context > 0) {
      argv.push_back("--context");
      argv.push_back(std::to_string(context));
    }
    if (settings_.eval_batches > 0) {
      argv.push_back("--batches");
      argv.push_back(std::to_string(settings_.eval_batches));
    }
    // stdout holds the metrics line (ending in parameters=N), stderr the log.
    const fs::path captured = run_.dir / "eval.out", log_part = run_.dir / "eval.err";
    fs::remove(captured);
    fs::remove(log_part);
    const ChildExit exit = start(stage, argv, captured, log_part);
    const fs::path log = stage.run_dir / kConsoleLog;
    if (fs::exists(log_part)) {
      std::ofstream(log, std::ios::app) << read_file(log_part);  // keep the log with the rest
    }
    if (!exit.ok()) {
      check_stop();
      throw RunFailure(fmt::format("rota eval failed ({}): {} (log: {})", exit.describe(),
                                   last_error_line(log), log.string()));
    }
    EvalOutput out;
    std::string last_split_line;
    std::ifstream in(captured);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("split=", 0) == 0) last_split_line = line;
      if (std::optional<PositionLoss> position = parse_position_line(line)) {
        out.positions.push_back(*position);
      }
    }
    if (by_position && out.positions.empty()) {
      throw RunFailure(
          fmt::format("rota eval --by-position printed no positions lines (output: "
                      "{}, log: {})",
                      captured.string(), log.string()));
    }
    out.metrics = parse_metrics_line(last_split_line);
    // `parameters=N` ends the line: the model's size, not a metric.
    if (const auto it = out.metrics.find("parameters"); it != out.metrics.end()) {
      out.parameters = static_cast<int64_t>(it->second);
      out.metrics.erase(it);
    }
    if (out.metrics.empty()) {
      throw RunFailure(fmt::format("rota eval printed no metrics line (output: {}, log: {})",
                                   captured.string(), log.string()));
    }
    fs::remove(captured);
    fs::remove(log_part);
    Json metrics = Json::object();
    for (const auto& [name, value] : out.metrics) metrics[name] = value;
    progress_.evals[key] = {{"metrics", metrics}, {"parameters", out.parameters}};
    if (by_position) {
      Json positions = Json::array();
      for (const PositionLoss& p : out.positions) {
        positions.push_back(Json::array(
            {p.first, p.last, p.tokens, std::isnan(p.loss) ? Json(nullptr) : Json(p.loss)}));
      }
      progress_.evals[key]["positions"] = positions;
    }
    write_progress(run_.dir / kProgressFile, progress_);
    return out;
  }

  StageResult evaluate_stage(const StagePlan& stage) {
    StageResult result;
    result.kind = model_kind_name(stage.recipe);
    result.primary = primary_metric(stage.recipe);
    result.run_dir = stage.run_dir;
    read_training_facts(stage.run_dir, result);
    const std::optional<fs::path> best = io::find_best(stage.run_dir);
    result.evaluated_checkpoint = best ? *best : *io::find_latest(stage.run_dir);
    result.test_split = evaluation_split(stage.recipe);
    check_stop();
    io::log_info("{}: evaluating stage {} on {}", label(), stage.index + 1, result.test_split);
    // The first stage of a causal LM is also read position by position (its extrapolation).
    const bool by_position =
        stage.index == 0 && stage.recipe.model().kind() == recipes::Model::CAUSAL_LM;
    const EvalOutput test =
        evaluate(stage, result.evaluated_checkpoint, result.test_split, 0, by_position);
    result.test = test.metrics;
    result.parameters = test.parameters;
    if (stage.index != 0) return result;
    const int64_t trained_length = stage.recipe.data().sequence_length();
    for (const int multiplier : settings_.context_multipliers) {
      ContextResult context;
      context.multiplier = multiplier;
      context.length = trained_length * multiplier;
      if (multiplier == 1) {
        context.value = result.test.at(result.primary);
        context.positions = test.positions;
      } else if (const std::string problem = app::context_problem(stage.recipe, context.length);
                 !problem.empty()) {
        context.note = "n/a: " + problem;
      } else {
        check_stop();
        const EvalOutput at_length = evaluate(stage, result.evaluated_checkpoint, result.test_split,
                                              context.length, by_position);
        context.positions = at_length.positions;
        if (at_length.metrics.contains(result.primary)) {
          context.value = at_length.metrics.at(result.primary);
        } else {
          context.note = "rota eval printed no " + result.primary;
        }
      }
      result.contexts.push_back(context);
    }
    return result;
  }

  const PlannedRun& run_;
  const UnitSettings& settings_;
  RunResult& result_;
  Progress progress_;
};

/// Writes the record of a finished run under settings.records_out.
void write_record(const PlannedRun& run, const RunResult& result, const UnitSettings& settings,
                  const std::string& cpu) {
  const RunRecord record = make_record(run, result, settings.context_multipliers,
                                       settings.rota_version, cpu, utc_time_text());
  const fs::path file = record_path(settings.records_out, run.variant, run.seed);
  fs::create_directories(file.parent_path());
  write_file_atomically(file, record_to_json(record));
}

/// The multipliers of a stored result's first stage.
std::vector<int> stored_multipliers(const RunResult& result) {
  std::vector<int> multipliers;
  for (const ContextResult& c : result.stages.front().contexts) multipliers.push_back(c.multiplier);
  return multipliers;
}

}  // namespace

std::string last_error_line(const fs::path& log) {
  std::ifstream in(log);
  std::string last, last_error;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line.rfind("==== ", 0) == 0) continue;
    last = line;
    if (line.rfind("error:", 0) == 0) last_error = line;
  }
  return last_error.empty() ? last : last_error;
}

RunResult run_unit(const PlannedRun& run, const std::vector<std::string>& variant_overrides,
                   const UnitSettings& settings) {
  RunResult result;
  result.variant = run.variant;
  result.seed = run.seed;
  result.overrides = variant_overrides;
  result.eval_batches = settings.eval_batches;
  try {
    fs::create_directories(run.dir);
    const fs::path result_file = run.dir / kResultFile;
    if (fs::exists(result_file)) {
      std::optional<RunResult> stored = result_from_json(read_file(result_file));
      if (stored && stored->eval_batches == settings.eval_batches &&
          stored->stages.size() == run.stages.size() &&
          stored_multipliers(*stored) == settings.context_multipliers) {
        for (const StagePlan& stage : run.stages) {
          const fs::path recorded_file = stage.run_dir / "recipe.txtpb";
          if (!fs::exists(recorded_file) || read_file(recorded_file) != stage.recipe_text) {
            throw RunFailure(fmt::format(
                "{} was trained with a different recipe than the ablation now plans ({}); "
                "delete {} to redo this run, or use another --out",
                stage.run_dir.string(),
                fs::exists(recorded_file)
                    ? recipe_change(read_file(recorded_file), stage.recipe_text)
                    : "its recipe.txtpb is missing",
                run.dir.string()));
          }
        }
        stored->overrides = variant_overrides;
        const fs::path record = record_path(settings.records_out, run.variant, run.seed);
        if (!settings.records_out.empty() && !fs::exists(record)) {
          write_record(run, *stored, settings, /*cpu=*/"");
        } else if (fs::exists(record) && looks_like_record(read_file(record))) {
          stored->cpu = record_from_json(read_file(record), record).cpu;
        }
        return *stored;
      }
      // Evaluated differently (or unreadable): redo what is missing from progress.json.
      fs::remove(result_file);
    }
    UnitRunner(run, settings, result).run();
    result.cpu = settings.cpu;
    if (!settings.records_out.empty()) write_record(run, result, settings, settings.cpu);
  } catch (const RunStopped& stopped) {
    result.status = RunResult::Status::kInterrupted;
    result.error = stopped.what();
    result.stages.clear();
  } catch (const std::exception& error) {
    result.status = RunResult::Status::kFailed;
    result.error = error.what();
    result.stages.clear();
  }
  return result;
}

}  // namespace rota::experiments
