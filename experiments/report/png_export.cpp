// PNG copies of the SVG plots (see png_export.h).
#include "experiments/report/png_export.h"

#include <fmt/format.h>

#include "experiments/subprocess.h"

namespace fs = std::filesystem;

namespace rota::experiments {

std::string export_pngs(const fs::path& out, std::vector<PlotFile>& plots, const fs::path& log) {
  if (plots.empty()) return "";
  std::string tool = "rsvg-convert";
  fs::path program = find_on_path(tool);
  if (program.empty()) {
    tool = "convert";
    program = find_on_path(tool);
  }
  if (program.empty()) {
    return "Only SVG plots: no SVG-to-PNG converter (rsvg-convert or ImageMagick's convert) was "
           "found on PATH.";
  }
  int converted = 0;
  for (PlotFile& plot : plots) {
    const std::string png = fs::path(plot.svg).replace_extension(".png").string();
    fs::remove(out / png);
    ChildCommand command;
    command.program = program.string();
    command.argv =
        tool == "rsvg-convert"
            ? std::vector<std::string>{tool, "-o", (out / png).string(), (out / plot.svg).string()}
            : std::vector<std::string>{tool, (out / plot.svg).string(), (out / png).string()};
    command.stdout_path = log;
    command.stderr_path = log;
    const ChildExit exit = run_child(command);
    if (exit.ok() && fs::exists(out / png) && fs::file_size(out / png) > 0) {
      plot.png = png;
      ++converted;
    }
  }
  if (converted == static_cast<int>(plots.size())) {
    return fmt::format("PNG copies made with {}.", tool);
  }
  return fmt::format(
      "{} of {} PNG copies made: {} ({}) failed (its output is in {}); the SVG plots are "
      "complete.",
      converted, plots.size(), tool, program.string(), log.filename().string());
}

}  // namespace rota::experiments
