// A small SVG line-chart writer (axes, log scales, min–max bands, legend) for the plots.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace rota::experiments {

/// One line of a chart. A NaN y leaves a gap; low/high (empty, or one per x; NaN: none there)
/// draw a shaded band around the line, e.g. the min–max over seeds.
struct ChartSeries {
  std::string name;
  std::vector<double> x, y;
  std::vector<double> low, high;
};

struct ChartOptions {
  std::string title;
  std::string subtitle;  // a second, smaller line under the title (small multiples only)
  std::string x_label, y_label;
  bool log_x = false;  // logarithmic axes (non-positive values are left out)
  bool log_y = false;
  /// Tick positions and labels of the x axis (e.g. {2, "2×"}); empty: chosen automatically.
  std::vector<std::pair<double, std::string>> x_ticks;
  int width = 820;
  int height = 460;
};

/// The chart as a standalone SVG document: a white background, grid, axes with tick labels,
/// per series a shaded `<path class="band">` (when it has low/high), one `<path class="line"
/// data-series="NAME">` and a circle per point, and a legend with every name. Colours cycle
/// through a fixed palette in series order. Text is XML-escaped.
std::string render_line_chart(const ChartOptions& options, const std::vector<ChartSeries>& series);

/// One panel of a small-multiples chart: a title and at most about 8 series.
struct ChartPanel {
  std::string title;
  std::vector<ChartSeries> series;
};

/// Panels side by side (`columns` per row), sharing both axes so they compare at a glance;
/// options.width / height are one panel's plot area. Each panel is a `<g class="panel"
/// data-panel="TITLE">` with its title, grid, labelled ticks (log axes: decades, 1-2-5 or finer
/// steps, else round values, so at least 4 labels span the data), per series a shaded band,
/// a `<path class="line" data-series="NAME">` with a circle per point, and a direct label
/// (`<text class="label">`) right of the plot at the line's last point, spread apart so labels
/// never overlap, joined to the line by a thin leader: no legend covers the data. Colours and
/// dashes restart in each panel.
std::string render_small_multiples(const ChartOptions& options,
                                   const std::vector<ChartPanel>& panels, int columns);

/// About `target` round tick values (1, 2 or 5 × 10^k steps) covering [low, high].
std::vector<double> nice_ticks(double low, double high, int target = 5);

/// `text` with &, <, >, " and ' escaped for XML.
std::string xml_escape(const std::string& text);

}  // namespace rota::experiments
