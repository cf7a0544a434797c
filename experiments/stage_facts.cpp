// Reading a finished training run directory (see stage_facts.h).
#include "experiments/stage_facts.h"

#include <algorithm>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "app/setup/data_source_setup.h"
#include "data/corpus/corpus.h"
#include "data/prepared/prepared_corpus.h"
#include "framework/base/error.h"
#include "framework/base/file_io.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
#include "framework/io/train_state.h"

namespace fs = std::filesystem;

namespace rota::experiments {

namespace {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

}  // namespace

void read_training_facts(const fs::path& run_dir, StageResult& stage) {
  const std::optional<fs::path> latest = io::find_latest(run_dir);
  ROTA_CHECK(latest.has_value(), "{}: no checkpoint (the run did not finish)", run_dir.string());
  const io::TrainState state = io::decode_train_state(read_file(*latest / io::kStateFile),
                                                      (*latest / io::kStateFile).string());
  stage.steps = state.step();
  stage.train_time_s = state.wall_time_s();
  stage.best_valid_step = state.has_best_eval() ? state.best_eval().step() : 0;

  // metrics.jsonl: a resumed run dropped the lines logged after its checkpoint, but keep the
  // last line per step anyway.
  std::map<int64_t, nlohmann::json> valid_by_step;
  std::vector<double> tokens_per_s;
  std::ifstream in(run_dir / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("split") || !j.contains("step")) continue;
    if (j["split"] == "valid") {
      valid_by_step[j["step"].get<int64_t>()] = j;
    } else if (j["split"] == "train" && j.contains("tokens_per_s") &&
               j["tokens_per_s"].is_number()) {
      const double rate = j["tokens_per_s"].get<double>();
      if (rate > 0) tokens_per_s.push_back(rate);
    }
  }
  stage.tokens_per_s = median(tokens_per_s);
  stage.curve.clear();
  for (const auto& [step, j] : valid_by_step) {
    if (j.contains(stage.primary) && j[stage.primary].is_number()) {
      stage.curve.emplace_back(step, j[stage.primary].get<double>());
    }
  }
  stage.best_valid.clear();
  const auto best = valid_by_step.find(stage.best_valid_step);
  if (best != valid_by_step.end()) {
    for (const auto& [name, value] : best->second.items()) {
      if (name != "step" && name != "split" && value.is_number()) {
        stage.best_valid[name] = value.get<double>();
      }
    }
  }
}

std::string evaluation_split(const recipes::Recipe& recipe) {
  const std::string source = app::recipe_source_name(recipe.data());
  try {
    if (recipe.data().has_prepared()) {
      return data::PreparedCorpus::open(recipe.data().prepared()).has_split("test") ? "test"
                                                                                    : "valid";
    }
    const data::Corpus corpus = app::open_recipe_corpus(recipe, data::default_data_options());
    if (!corpus.has_split("test")) return "valid";
    if (corpus.format() != data::CorpusFormat::kTsv) return "test";
    // A registered corpus says whether its test file has labels without locating the file.
    if (const data::CorpusInfo* info = data::find_corpus(source)) {
      const data::CorpusFile* file = data::find_corpus_file(*info, "test");
      return file != nullptr && file->labeled ? "test" : "valid";
    }
    return corpus.tsv_split("test").labeled ? "test" : "valid";
  } catch (const std::exception&) {
    return "test";  // the evaluation itself reports what is wrong with the corpus
  }
}

}  // namespace rota::experiments
