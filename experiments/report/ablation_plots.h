// The ablation's plots: validation curves per variant and length extrapolation, as SVG files.
#pragma once

#include <vector>

#include "experiments/report/ablation_report.h"

namespace rota::experiments {

/// Series drawn in one panel at most; more variants are split into panels (small multiples).
inline constexpr int kMaxSeriesPerPanel = 8;

/// Writes into report.out and returns (titles and file names) small-multiples charts
/// (render_small_multiples: shared axes, direct line labels, no legend over the data) with at
/// most kMaxSeriesPerPanel variants per panel — one panel when they fit, else one per level of
/// the grid's first axis, else groups of variants each with the baseline:
/// - validation_curves.svg: the first stage's validation primary metric against the step, per
///   variant the mean over its finished seeds with a min–max band (log y for perplexity); left
///   out when no result has a curve (results rebuilt from results.csv);
/// - finetune_validation_curves.svg: the same for a follow-up stage;
/// - extrapolation.svg (with two or more context multipliers): the test primary metric against
///   the multiplier of the training length (log x), one line per variant, mean over seeds with
///   a min–max band; a multiplier the encoding cannot run at is left out of its line;
/// - positions.svg (causal LMs, when the runs recorded it): the test loss per position bucket
///   (1, 2–3, 4–7, … at the bucket's first position, log x) at the longest evaluation length
///   that has it, one line per variant, mean over seeds with a min–max band: whether the loss
///   keeps falling with position, and where an encoding stops extrapolating.
std::vector<PlotFile> write_plots(const AblationReport& report);

}  // namespace rota::experiments
