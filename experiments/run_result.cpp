// result.json of an ablation run (see run_result.h).
#include "experiments/run_result.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace rota::experiments {

namespace {

using Json = nlohmann::ordered_json;

Json metrics_to_json(const MetricMap& metrics) {
  Json object = Json::object();
  for (const auto& [name, value] : metrics) object[name] = value;
  return object;
}

MetricMap metrics_from_json(const Json& object) {
  MetricMap metrics;
  for (const auto& [name, value] : object.items()) metrics[name] = value.get<double>();
  return metrics;
}

Json stage_to_json(const StageResult& stage) {
  Json curve = Json::array();
  for (const auto& [step, value] : stage.curve) curve.push_back(Json::array({step, value}));
  Json contexts = Json::array();
  for (const ContextResult& c : stage.contexts) {
    Json entry = {{"multiplier", c.multiplier}, {"length", c.length}};
    entry["value"] = c.value ? Json(*c.value) : Json(nullptr);
    entry["note"] = c.note;
    if (!c.positions.empty()) {
      Json positions = Json::array();
      for (const PositionLoss& p : c.positions) {
        // JSON has no NaN: an unreached bucket's loss is null.
        positions.push_back({{"first", p.first},
                             {"last", p.last},
                             {"tokens", p.tokens},
                             {"loss", std::isnan(p.loss) ? Json(nullptr) : Json(p.loss)}});
      }
      entry["positions"] = positions;
    }
    contexts.push_back(entry);
  }
  return Json{{"kind", stage.kind},
              {"primary", stage.primary},
              {"run_dir", stage.run_dir.string()},
              {"parameters", stage.parameters},
              {"steps", stage.steps},
              {"train_time_s", stage.train_time_s},
              {"tokens_per_s", stage.tokens_per_s},
              {"best_valid_step", stage.best_valid_step},
              {"best_valid", metrics_to_json(stage.best_valid)},
              {"curve", curve},
              {"test_split", stage.test_split},
              {"evaluated_checkpoint", stage.evaluated_checkpoint.string()},
              {"test", metrics_to_json(stage.test)},
              {"contexts", contexts}};
}

StageResult stage_from_json(const Json& j) {
  StageResult stage;
  stage.kind = j.at("kind").get<std::string>();
  stage.primary = j.at("primary").get<std::string>();
  stage.run_dir = j.at("run_dir").get<std::string>();
  stage.parameters = j.at("parameters").get<int64_t>();
  stage.steps = j.at("steps").get<int64_t>();
  stage.train_time_s = j.at("train_time_s").get<double>();
  stage.tokens_per_s = j.at("tokens_per_s").get<double>();
  stage.best_valid_step = j.at("best_valid_step").get<int64_t>();
  stage.best_valid = metrics_from_json(j.at("best_valid"));
  for (const Json& point : j.at("curve")) {
    stage.curve.emplace_back(point.at(0).get<int64_t>(), point.at(1).get<double>());
  }
  stage.test_split = j.at("test_split").get<std::string>();
  stage.evaluated_checkpoint = j.at("evaluated_checkpoint").get<std::string>();
  stage.test = metrics_from_json(j.at("test"));
  for (const Json& entry : j.at("contexts")) {
    ContextResult c;
    c.multiplier = entry.at("multiplier").get<int>();
    c.length = entry.at("length").get<int64_t>();
    if (!entry.at("value").is_null()) c.value = entry.at("value").get<double>();
    c.note = entry.at("note").get<std::string>();
    if (entry.contains("positions")) {
      for (const Json& p : entry.at("positions")) {
        PositionLoss loss;
        loss.first = p.at("first").get<int64_t>();
        loss.last = p.at("last").get<int64_t>();
        loss.tokens = p.at("tokens").get<int64_t>();
        loss.loss = p.at("loss").is_null() ? std::nan("") : p.at("loss").get<double>();
        c.positions.push_back(loss);
      }
    }
    stage.contexts.push_back(c);
  }
  return stage;
}

}  // namespace

std::string status_name(RunResult::Status status) {
  switch (status) {
    case RunResult::Status::kOk:
      return "ok";
    case RunResult::Status::kFailed:
      return "failed";
    case RunResult::Status::kInterrupted:
      return "interrupted";
    case RunResult::Status::kNotRun:
      return "not run";
    case RunResult::Status::kOtherShard:
      return "other shard";
  }
  return "unknown";
}

std::string result_to_json(const RunResult& result) {
  Json stages = Json::array();
  for (const StageResult& stage : result.stages) stages.push_back(stage_to_json(stage));
  const Json j{{"variant", result.variant},
               {"seed", result.seed},
               {"overrides", result.overrides},
               {"eval_batches", result.eval_batches},
               {"stages", stages}};
  return j.dump(2) + "\n";
}

std::optional<RunResult> result_from_json(const std::string& text) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  try {
    RunResult result;
    result.variant = j.at("variant").get<std::string>();
    result.seed = j.at("seed").get<uint64_t>();
    result.overrides = j.at("overrides").get<std::vector<std::string>>();
    result.eval_batches = j.at("eval_batches").get<int64_t>();
    for (const Json& stage : j.at("stages")) result.stages.push_back(stage_from_json(stage));
    if (result.stages.empty()) return std::nullopt;
    result.status = RunResult::Status::kOk;
    result.reused = true;
    return result;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace rota::experiments
