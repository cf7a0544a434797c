// PNG copies of the SVG plots when a converter (rsvg-convert, ImageMagick's convert) is installed.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "experiments/report/ablation_report.h"

namespace rota::experiments {

/// Converts every plot in `out` to PNG with the first of rsvg-convert or convert found on
/// $PATH (the converter's output goes to `log`), sets PlotFile::png for each one converted,
/// and returns a sentence for results.md: which tool made the PNGs, that none was found (only
/// SVG), or that the converter failed.
std::string export_pngs(const std::filesystem::path& out, std::vector<PlotFile>& plots,
                        const std::filesystem::path& log);

}  // namespace rota::experiments
