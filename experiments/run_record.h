// A finished ablation run's record: its results and provenance in one small committable file.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "experiments/run_plan.h"
#include "experiments/run_result.h"

namespace rota::experiments {

/// What every record file says first, so records are told apart from other JSON.
inline constexpr char kRecordFormat[] = "rota-ablation-record";
inline constexpr int kRecordFormatVersion = 1;
/// OUT/records/<variant>/seed<S>.json.
inline constexpr char kRecordsDir[] = "records";

/// One variant × seed that finished: everything its report row, plots and statistics need
/// (results, validation curves, by-position losses, extrapolation), which recipe and settings
/// produced it, and where. No checkpoints: a few KB.
struct RunRecord {
  RunResult result;                        // status ok; stages as run_unit returned them
  std::vector<int> context_multipliers;    // the extrapolation lengths it was evaluated at
  std::vector<std::string> stage_recipes;  // comparable_recipe_text of each stage
  std::vector<std::string> recipe_sha256;  // SHA-256 of each stage_recipes entry
  std::string rota_version;                // `rota --version`'s first line; empty: unknown
  std::string cpu;                         // CPU model of the machine; empty: not recorded
  std::string finished_at;                 // UTC, "2026-12-07 11:40 UTC"
  std::filesystem::path file;              // where it was read from (not written)
};

/// A stage's resolved recipe as records compare it: format_recipe of the planned recipe with
/// the follow-up's finetune.init_from (an absolute path to the first stage's directory, which
/// differs between output directories and machines) left out.
std::string comparable_recipe_text(const StagePlan& stage);
/// Lowercase hex SHA-256 of a text.
std::string text_sha256(const std::string& text);

/// The record of `result` (status ok) for `run`.
RunRecord make_record(const PlannedRun& run, const RunResult& result,
                      const std::vector<int>& context_multipliers, const std::string& rota_version,
                      const std::string& cpu, const std::string& finished_at);

/// Where a run's record lives under an output directory.
std::filesystem::path record_path(const std::filesystem::path& out, const std::string& variant,
                                  uint64_t seed);

std::string record_to_json(const RunRecord& record);
/// Whether a text declares itself a record (its "format" is kRecordFormat), however damaged
/// the rest.
bool looks_like_record(const std::string& text);
/// Parses record_to_json's text. Throws rota::Error naming `file` and what is wrong when the
/// text is not a complete record of a format this Rota reads.
RunRecord record_from_json(const std::string& text, const std::filesystem::path& file);

/// Every record in `sources`: files, or directories searched recursively for *.json files that
/// declare themselves records (other JSON is skipped). Throws rota::Error for a source that
/// does not exist, a file given by name that is not a record, or a damaged record.
std::vector<RunRecord> read_records(const std::vector<std::filesystem::path>& sources);

/// Whether `record` is the result of `run` evaluated as asked: the same seed and variant, the
/// same recipe for every stage (by digest), the same eval_batches and multipliers.
bool record_answers(const RunRecord& record, const PlannedRun& run, int64_t eval_batches,
                    const std::vector<int>& context_multipliers);

/// The fields in which two recipe texts differ ("train.lr: 0.001 -> 0.002", one per line, at
/// most `limit`), as field paths; the first differing line where a text does not parse.
std::vector<std::string> recipe_differences(const std::string& recorded, const std::string& planned,
                                            size_t limit = 8);

}  // namespace rota::experiments
