// Ablation run records: JSON, digests, matching against the plan, field differences.
#include "experiments/run_record.h"

#include <algorithm>

#include <fmt/format.h>
#include <google/protobuf/text_format.h>
#include <nlohmann/json.hpp>

#include "app/run/resume_policy.h"
#include "data/util/sha256.h"
#include "framework/base/error.h"
#include "framework/base/file_io.h"
#include "recipes/field_differences.h"
#include "recipes/loader.h"

namespace fs = std::filesystem;

namespace rota::experiments {

namespace {

using Json = nlohmann::ordered_json;

}  // namespace

std::string comparable_recipe_text(const StagePlan& stage) {
  recipes::Recipe recipe = stage.recipe;
  if (stage.index > 0) recipe.mutable_finetune()->clear_init_from();
  return recipes::format_recipe(recipe);
}

std::string text_sha256(const std::string& text) {
  data::Sha256 digest;
  digest.update(text);
  return digest.hex_digest();
}

RunRecord make_record(const PlannedRun& run, const RunResult& result,
                      const std::vector<int>& context_multipliers, const std::string& rota_version,
                      const std::string& cpu, const std::string& finished_at) {
  RunRecord record;
  record.result = result;
  record.context_multipliers = context_multipliers;
  for (const StagePlan& stage : run.stages) {
    record.stage_recipes.push_back(comparable_recipe_text(stage));
    record.recipe_sha256.push_back(text_sha256(record.stage_recipes.back()));
  }
  record.rota_version = rota_version;
  record.cpu = cpu;
  record.finished_at = finished_at;
  return record;
}

fs::path record_path(const fs::path& out, const std::string& variant, uint64_t seed) {
  return out / kRecordsDir / variant / ("seed" + std::to_string(seed) + ".json");
}

std::string record_to_json(const RunRecord& record) {
  const Json result = Json::parse(result_to_json(record.result));
  Json stages = Json::array();
  for (size_t i = 0; i < record.stage_recipes.size(); ++i) {
    stages.push_back(
        {{"recipe_sha256", record.recipe_sha256.at(i)}, {"recipe", record.stage_recipes[i]}});
  }
  const Json j{{"format", kRecordFormat},
               {"format_version", kRecordFormatVersion},
               {"variant", record.result.variant},
               {"seed", record.result.seed},
               {"rota_version", record.rota_version},
               {"cpu", record.cpu},
               {"finished_at", record.finished_at},
               {"eval_batches", record.result.eval_batches},
               {"context_multipliers", record.context_multipliers},
               {"stage_recipes", stages},
               {"result", result}};
  return j.dump(1) + "\n";
}

bool looks_like_record(const std::string& text) {
  // Cheap and robust to damage after the opening: the format key comes first.
  const size_t key = text.find("\"format\"");
  if (key == std::string::npos || key > 64) return false;
  return text.find(std::string("\"") + kRecordFormat + "\"", key) != std::string::npos;
}

RunRecord record_from_json(const std::string& text, const fs::path& file) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  const std::string where = file.string() + ": ";
  if (j.is_discarded() || !j.is_object()) {
    throw Error(where +
                "not a valid ablation run record (the JSON does not parse); restore it "
                "from version control or delete it to redo that run");
  }
  if (j.value("format", "") != kRecordFormat) {
    throw Error(where + "not an ablation run record (no \"format\": \"" +
                std::string(kRecordFormat) + "\")");
  }
  if (!j.contains("format_version") || !j["format_version"].is_number_integer() ||
      j["format_version"].get<int>() != kRecordFormatVersion) {
    throw Error(where + fmt::format("a record of format version {}; this Rota reads version {}",
                                    j.contains("format_version") ? j["format_version"].dump()
                                                                 : std::string("(none)"),
                                    kRecordFormatVersion));
  }
  RunRecord record;
  record.file = file;
  try {
    std::optional<RunResult> result = result_from_json(j.at("result").dump());
    if (!result) throw Error(where + "its \"result\" is incomplete");
    record.result = std::move(*result);
    record.result.variant = j.at("variant").get<std::string>();
    record.result.seed = j.at("seed").get<uint64_t>();
    record.result.eval_batches = j.at("eval_batches").get<int64_t>();
    record.context_multipliers = j.at("context_multipliers").get<std::vector<int>>();
    for (const Json& stage : j.at("stage_recipes")) {
      record.stage_recipes.push_back(stage.at("recipe").get<std::string>());
      record.recipe_sha256.push_back(stage.at("recipe_sha256").get<std::string>());
    }
    record.rota_version = j.at("rota_version").get<std::string>();
    record.cpu = j.at("cpu").get<std::string>();
    record.finished_at = j.at("finished_at").get<std::string>();
  } catch (const nlohmann::json::exception& error) {
    throw Error(where + "a damaged ablation run record (" + library_detail(error) +
                "); restore it from version control or delete it to redo that run");
  }
  if (record.stage_recipes.size() != record.result.stages.size() || record.stage_recipes.empty()) {
    throw Error(where + fmt::format("a damaged ablation run record ({} stage recipes for {} "
                                    "stage results)",
                                    record.stage_recipes.size(), record.result.stages.size()));
  }
  for (size_t i = 0; i < record.stage_recipes.size(); ++i) {
    if (text_sha256(record.stage_recipes[i]) != record.recipe_sha256[i]) {
      throw Error(where + fmt::format("stage {}'s recipe does not match its recipe_sha256 (the "
                                      "record was edited or damaged)",
                                      i + 1));
    }
  }
  record.result.cpu = record.cpu;
  record.result.record_file = file;
  return record;
}

std::vector<RunRecord> read_records(const std::vector<fs::path>& sources) {
  std::vector<RunRecord> records;
  for (const fs::path& source : sources) {
    std::error_code error;
    const fs::file_status status = fs::status(source, error);
    if (error || !fs::exists(status)) {
      throw Error(source.string() +
                  ": no such file or directory (--records names record files "
                  "or directories holding them, e.g. OUT/records)");
    }
    if (fs::is_regular_file(status)) {
      records.push_back(record_from_json(read_file(source), source));
      continue;
    }
    if (!fs::is_directory(status)) {
      throw Error(source.string() + ": neither a file nor a directory");
    }
    std::vector<fs::path> files;
    // Symbolic links to directories are not followed, so a link loop cannot recurse forever.
    fs::recursive_directory_iterator it(source, fs::directory_options::skip_permission_denied,
                                        error);
    for (; !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
      if (it->is_regular_file(error) && it->path().extension() == ".json") {
        files.push_back(it->path());
      }
    }
    if (error) {
      throw Error(source.string() + ": cannot list the records in it (" + error.message() + ")");
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      const std::string text = read_file(file);
      if (looks_like_record(text)) records.push_back(record_from_json(text, file));
    }
  }
  return records;
}

bool record_answers(const RunRecord& record, const PlannedRun& run, int64_t eval_batches,
                    const std::vector<int>& context_multipliers) {
  if (record.result.variant != run.variant || record.result.seed != run.seed) return false;
  if (record.result.eval_batches != eval_batches) return false;
  if (record.context_multipliers != context_multipliers) return false;
  if (record.recipe_sha256.size() != run.stages.size()) return false;
  for (size_t i = 0; i < run.stages.size(); ++i) {
    if (record.recipe_sha256[i] != text_sha256(comparable_recipe_text(run.stages[i]))) {
      return false;
    }
  }
  return true;
}

std::vector<std::string> recipe_differences(const std::string& recorded, const std::string& planned,
                                            size_t limit) {
  recipes::Recipe a, b;
  namespace pb = google::protobuf;
  if (!pb::TextFormat::ParseFromString(recorded, &a) ||
      !pb::TextFormat::ParseFromString(planned, &b)) {
    const std::string line = app::first_difference(recorded, planned);
    return line.empty() ? std::vector<std::string>{} : std::vector<std::string>{line};
  }
  return recipes::field_differences(a, b, "", limit, "recorded only", "planned only");
}

}  // namespace rota::experiments
