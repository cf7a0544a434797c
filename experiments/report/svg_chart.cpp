// The SVG line-chart writer (see svg_chart.h).
#include "experiments/report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

namespace rota::experiments {

namespace {

// Distinguishable colours (a colour-blind-friendly qualitative set), cycled in series order.
constexpr const char* kPalette[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00",
                                    "#56b4e9", "#000000", "#8c564b", "#7f7f7f", "#bcbd22"};
constexpr int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);
// Past the palette, colours repeat with a dash pattern per cycle so every series stays distinct.
constexpr const char* kDashes[] = {"", " stroke-dasharray=\"7 4\"", " stroke-dasharray=\"2 3\"",
                                   " stroke-dasharray=\"9 3 2 3\""};
constexpr int kDashCount = sizeof(kDashes) / sizeof(kDashes[0]);

const char* dash_of(size_t series_index) {
  return kDashes[(series_index / kPaletteSize) % kDashCount];
}

constexpr double kLeft = 72, kTop = 44, kBottom = 56, kLegendWidth = 230;

bool usable(double value, bool log) {
  return std::isfinite(value) && (!log || value > 0);
}

/// One axis: data range in transformed space (log10 for log axes) -> pixels.
struct Axis {
  bool log = false;
  double low = 0, high = 1;  // transformed
  double pixel_low = 0, pixel_high = 1;

  double transform(double value) const { return log ? std::log10(value) : value; }
  double to_pixel(double value) const {
    const double t = (transform(value) - low) / (high - low);
    return pixel_low + t * (pixel_high - pixel_low);
  }
};

/// Range of the usable values, padded by 5 % (transformed space); a single value gets room.
void fit(Axis& axis, const std::vector<double>& values, double pad_fraction) {
  double low = std::numeric_limits<double>::infinity(), high = -low;
  for (double v : values) {
    if (!usable(v, axis.log)) continue;
    low = std::min(low, axis.transform(v));
    high = std::max(high, axis.transform(v));
  }
  if (!std::isfinite(low)) {
    low = 0;
    high = 1;
  }
  if (high - low < 1e-12) {
    const double room = axis.log ? 0.1 : std::max(std::abs(low) * 0.1, 1.0);
    low -= room;
    high += room;
  }
  const double pad = (high - low) * pad_fraction;
  axis.low = low - pad;
  axis.high = high + pad;
}

std::string tick_label(double value) {
  if (value == 0) return "0";
  const double magnitude = std::abs(value);
  if (magnitude >= 1e6 || magnitude < 1e-3) return fmt::format("{:.3g}", value);
  return fmt::format("{:.6g}", value);
}

/// Tick values of an axis: nice linear ticks, or for a log axis decades (with 2 and 5 between
/// them when the range is short) — falling back to linear ticks inside a short decade.
/// A round value (one or two significant digits: 1, 1.2, 1.5, 2, 2.5, 3, 4, ... × 10^k)
/// inside (low, high) on a log axis, as near the middle of the gap as possible; 0 when none.
double round_value_between(double low, double high) {
  const double middle = (std::log10(low) + std::log10(high)) / 2;
  double best = 0, best_distance = INFINITY;
  for (int e = static_cast<int>(std::floor(std::log10(low))) - 1;
       e <= static_cast<int>(std::ceil(std::log10(high))); ++e) {
    for (const double m : {1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0}) {
      const double v = m * std::pow(10.0, e);
      if (v <= low || v >= high) continue;
      const double distance = std::abs(std::log10(v) - middle);
      if (distance < best_distance) {
        best = v;
        best_distance = distance;
      }
    }
  }
  return best;
}

/// Log-axis ticks with a labelled value near each end: where the stretch between an end of
/// the axis and the nearest tick is over a fifth of the axis, a round value inside it is added.
std::vector<double> fill_log_ends(const Axis& axis, std::vector<double> ticks) {
  if (ticks.empty()) return ticks;
  const double span = axis.high - axis.low;
  const double low = std::pow(10.0, axis.low), high = std::pow(10.0, axis.high);
  if (std::log10(ticks.front()) - axis.low > span / 5) {
    const double v = round_value_between(low, ticks.front() / std::pow(10.0, span / 20));
    if (v > 0) ticks.insert(ticks.begin(), v);
  }
  if (axis.high - std::log10(ticks.back()) > span / 5) {
    const double v = round_value_between(ticks.back() * std::pow(10.0, span / 20), high);
    if (v > 0) ticks.push_back(v);
  }
  return ticks;
}

std::vector<double> axis_ticks(const Axis& axis) {
  if (!axis.log) return nice_ticks(axis.low, axis.high);
  const double low = std::pow(10.0, axis.low), high = std::pow(10.0, axis.high);
  // Decades, then 1-2-5, then finer mantissas: the first set that labels 5 to 12 values
  // across the range; a range inside one short stretch of a decade (230 to 480)
  // gets round linear values (250, 300, ...) placed on the log scale.
  const std::vector<std::vector<double>> mantissas = {
      {1}, {1, 2, 5}, {1, 1.5, 2, 3, 5, 7}, {1, 2, 3, 4, 5, 6, 7, 8, 9}};
  std::vector<double> previous;
  for (const std::vector<double>& set : mantissas) {
    std::vector<double> ticks;
    for (int e = static_cast<int>(std::floor(axis.low));
         e <= static_cast<int>(std::ceil(axis.high)); ++e) {
      for (const double m : set) {
        const double v = m * std::pow(10.0, e);
        if (v >= low && v <= high) ticks.push_back(v);
      }
    }
    if (ticks.size() >= 5 && ticks.size() <= 12) return fill_log_ends(axis, ticks);
    if (ticks.size() > 12) {
      // Too many: the coarser set when it labelled a few values, else every k-th decade.
      if (previous.size() >= 3) return fill_log_ends(axis, previous);
      const size_t stride = (ticks.size() + 7) / 8;
      std::vector<double> thinned;
      for (size_t i = 0; i < ticks.size(); i += stride) thinned.push_back(ticks[i]);
      return fill_log_ends(axis, thinned);
    }
    previous = std::move(ticks);
  }
  std::vector<double> ticks = nice_ticks(low, high, 6);
  std::erase_if(ticks, [](double v) { return v <= 0; });
  return fill_log_ends(axis, ticks);
}

std::string number(double value) {
  return fmt::format("{:.2f}", value);
}

}  // namespace

std::vector<double> nice_ticks(double low, double high, int target) {
  std::vector<double> ticks;
  if (!(high > low) || !std::isfinite(low) || !std::isfinite(high)) return ticks;
  const double raw = (high - low) / std::max(1, target);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  }
  for (double v = std::ceil(low / step) * step; v <= high + step * 1e-9; v += step) {
    ticks.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  }
  return ticks;
}

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string render_line_chart(const ChartOptions& options, const std::vector<ChartSeries>& series) {
  const double width = options.width, height = options.height;
  Axis x_axis, y_axis;
  x_axis.log = options.log_x;
  y_axis.log = options.log_y;
  std::vector<double> xs, ys;
  for (const ChartSeries& s : series) {
    xs.insert(xs.end(), s.x.begin(), s.x.end());
    ys.insert(ys.end(), s.y.begin(), s.y.end());
    ys.insert(ys.end(), s.low.begin(), s.low.end());
    ys.insert(ys.end(), s.high.begin(), s.high.end());
  }
  for (const auto& [value, label] : options.x_ticks) xs.push_back(value);
  fit(x_axis, xs, 0.03);
  fit(y_axis, ys, 0.06);
  const double plot_right = width - kLegendWidth;
  x_axis.pixel_low = kLeft;
  x_axis.pixel_high = plot_right;
  y_axis.pixel_low = height - kBottom;  // y grows upwards
  y_axis.pixel_high = kTop;

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"12\">\n",
      options.width, options.height);
  svg += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"white\"/>\n",
                     options.width, options.height);
  svg += fmt::format(
      "<text x=\"{}\" y=\"24\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">{}"
      "</text>\n",
      number((kLeft + plot_right) / 2), xml_escape(options.title));

  // Grid and tick labels.
  svg += "<g class=\"grid\" stroke=\"#e0e0e0\" stroke-width=\"1\">\n";
  std::vector<std::pair<double, std::string>> x_ticks = options.x_ticks;
  if (x_ticks.empty()) {
    for (double v : axis_ticks(x_axis)) x_ticks.emplace_back(v, tick_label(v));
  }
  const std::vector<double> y_ticks = axis_ticks(y_axis);
  for (const auto& [value, label] : x_ticks) {
    if (!usable(value, x_axis.log)) continue;
    const double px = x_axis.to_pixel(value);
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n", number(px),
                       number(kTop), number(height - kBottom));
  }
  for (double value : y_ticks) {
    const double py = y_axis.to_pixel(value);
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>\n", number(kLeft),
                       number(py), number(plot_right));
  }
  svg += "</g>\n<g class=\"axes\" fill=\"#333333\">\n";
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333333\"/>\n",
      number(kLeft), number(kTop), number(plot_right - kLeft), number(height - kBottom - kTop));
  for (const auto& [value, label] : x_ticks) {
    if (!usable(value, x_axis.log)) continue;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                       number(x_axis.to_pixel(value)), number(height - kBottom + 16),
                       xml_escape(label));
  }
  for (double value : y_ticks) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", number(kLeft - 6),
                       number(y_axis.to_pixel(value) + 4), xml_escape(tick_label(value)));
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     number((kLeft + plot_right) / 2), number(height - 14),
                     xml_escape(options.x_label));
  svg += fmt::format(
      "<text x=\"16\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {0})\">{1}"
      "</text>\n",
      number((kTop + height - kBottom) / 2), xml_escape(options.y_label));
  svg += "</g>\n";

  // Bands first (under every line), then lines and points.
  for (size_t i = 0; i < series.size(); ++i) {
    const ChartSeries& s = series[i];
    if (s.low.size() != s.x.size() || s.high.size() != s.x.size()) continue;
    const char* colour = kPalette[i % kPaletteSize];
    // One closed polygon per run of points that all have a band.
    size_t start = 0;
    std::string d;
    while (start < s.x.size()) {
      auto has_band = [&](size_t k) {
        return usable(s.x[k], x_axis.log) && usable(s.low[k], y_axis.log) &&
               usable(s.high[k], y_axis.log);
      };
      if (!has_band(start)) {
        ++start;
        continue;
      }
      size_t end = start;
      while (end + 1 < s.x.size() && has_band(end + 1)) ++end;
      if (end > start) {
        for (size_t k = start; k <= end; ++k) {
          d += fmt::format("{}{} {} ", k == start ? "M" : "L", number(x_axis.to_pixel(s.x[k])),
                           number(y_axis.to_pixel(s.high[k])));
        }
        for (size_t k = end + 1; k-- > start;) {
          d += fmt::format("L{} {} ", number(x_axis.to_pixel(s.x[k])),
                           number(y_axis.to_pixel(s.low[k])));
        }
        d += "Z ";
      }
      start = end + 1;
    }
    if (!d.empty()) {
      d.pop_back();
      svg += fmt::format(
          "<path class=\"band\" data-series=\"{}\" d=\"{}\" fill=\"{}\" fill-opacity=\"0.15\" "
          "stroke=\"none\"/>\n",
          xml_escape(s.name), d, colour);
    }
  }
  for (size_t i = 0; i < series.size(); ++i) {
    const ChartSeries& s = series[i];
    const char* colour = kPalette[i % kPaletteSize];
    std::string d, points;
    bool pen_down = false;
    for (size_t k = 0; k < s.x.size() && k < s.y.size(); ++k) {
      if (!usable(s.x[k], x_axis.log) || !usable(s.y[k], y_axis.log)) {
        pen_down = false;  // a gap
        continue;
      }
      const double px = x_axis.to_pixel(s.x[k]), py = y_axis.to_pixel(s.y[k]);
      d += fmt::format("{}{} {} ", pen_down ? "L" : "M", number(px), number(py));
      pen_down = true;
      points += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"2.5\" fill=\"{}\"/>\n", number(px),
                            number(py), colour);
    }
    if (!d.empty()) d.pop_back();
    svg += fmt::format(
        "<path class=\"line\" data-series=\"{}\" d=\"{}\" fill=\"none\" stroke=\"{}\" "
        "stroke-width=\"2\"{}/>\n",
        xml_escape(s.name), d.empty() ? "M0 0" : d, colour, dash_of(i));
    svg += points;
  }

  svg += "<g class=\"legend\">\n";
  for (size_t i = 0; i < series.size(); ++i) {
    const double y = kTop + 8 + 20 * static_cast<double>(i);
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" "
        "stroke-width=\"3\"{4}/>\n",
        number(plot_right + 14), number(y), number(plot_right + 38), kPalette[i % kPaletteSize],
        dash_of(i));
    svg += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", number(plot_right + 44),
                       number(y + 4), xml_escape(series[i].name));
  }
  svg += "</g>\n";
  if (xs.empty() || ys.empty()) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">no data</text>\n",
                       number((kLeft + plot_right) / 2), number(height / 2));
  }
  svg += "</svg>\n";
  return svg;
}

namespace {

constexpr double kLabelCharWidth = 7.0;  // px per character of 12 px DejaVu Sans, roughly

/// Label positions: each wanted y moved as little as possible so that labels are at least
/// `gap` apart and inside [top, bottom]; returns them in the input order.
std::vector<double> spread_labels(const std::vector<double>& wanted, double gap, double top,
                                  double bottom) {
  std::vector<size_t> order(wanted.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return wanted[a] < wanted[b]; });
  std::vector<double> y(wanted.size());
  double previous = top - gap;
  for (const size_t i : order) {
    y[i] = std::max(wanted[i], previous + gap);
    previous = y[i];
  }
  // Pushed past the bottom: shift the tail back up.
  double next = bottom + gap;
  for (size_t k = order.size(); k-- > 0;) {
    const size_t i = order[k];
    y[i] = std::min(y[i], next - gap);
    next = y[i];
  }
  return y;
}

}  // namespace

std::string render_small_multiples(const ChartOptions& options,
                                   const std::vector<ChartPanel>& panels, int columns) {
  columns = std::max(1, std::min<int>(columns, static_cast<int>(panels.size())));
  const int rows = panels.empty() ? 1 : (static_cast<int>(panels.size()) + columns - 1) / columns;
  // Every panel shares the axes, so panels compare at a glance.
  Axis x_axis, y_axis;
  x_axis.log = options.log_x;
  y_axis.log = options.log_y;
  std::vector<double> xs, ys;
  size_t longest_name = 1;
  for (const ChartPanel& panel : panels) {
    for (const ChartSeries& series : panel.series) {
      xs.insert(xs.end(), series.x.begin(), series.x.end());
      ys.insert(ys.end(), series.y.begin(), series.y.end());
      ys.insert(ys.end(), series.low.begin(), series.low.end());
      ys.insert(ys.end(), series.high.begin(), series.high.end());
      // Characters, not bytes, for the label width.
      size_t characters = 0;
      for (const char c : series.name) characters += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
      longest_name = std::max(longest_name, characters);
    }
  }
  for (const auto& [value, label] : options.x_ticks) xs.push_back(value);
  fit(x_axis, xs, 0.03);
  fit(y_axis, ys, 0.06);

  const double label_width = 18 + kLabelCharWidth * static_cast<double>(longest_name);
  const double plot_width = options.width, plot_height = options.height;
  const double panel_width = kLeft + plot_width + label_width;
  const double panel_height = 28 + plot_height + 40;
  const double title_height = options.subtitle.empty() ? 40 : 58;
  // Wide enough for the title (bold 15 px: about 9 px a character).
  const double title_width = 40 + 9.0 * static_cast<double>(options.title.size());
  const double width = std::max(panel_width * columns, title_width);
  const double height = title_height + panel_height * rows + 24;

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"12\">\n",
      number(width), number(height));
  svg += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"white\"/>\n",
                     number(width), number(height));
  svg += fmt::format(
      "<text x=\"{}\" y=\"26\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">{}"
      "</text>\n",
      number(width / 2), xml_escape(options.title));
  if (!options.subtitle.empty()) {
    svg +=
        fmt::format("<text x=\"{}\" y=\"46\" text-anchor=\"middle\" fill=\"#444444\">{}</text>\n",
                    number(width / 2), xml_escape(options.subtitle));
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     number(width / 2), number(height - 8), xml_escape(options.x_label));

  std::vector<std::pair<double, std::string>> x_ticks = options.x_ticks;
  if (x_ticks.empty()) {
    for (double v : axis_ticks(x_axis)) x_ticks.emplace_back(v, tick_label(v));
  }
  const std::vector<double> y_ticks = axis_ticks(y_axis);

  for (size_t p = 0; p < panels.size(); ++p) {
    const ChartPanel& panel = panels[p];
    const double origin_x = panel_width * static_cast<double>(p % columns);
    const double origin_y = title_height + panel_height * static_cast<double>(p / columns);
    const double left = origin_x + kLeft, right = left + plot_width;
    const double top = origin_y + 28, bottom = top + plot_height;
    x_axis.pixel_low = left;
    x_axis.pixel_high = right;
    y_axis.pixel_low = bottom;
    y_axis.pixel_high = top;
    svg += fmt::format("<g class=\"panel\" data-panel=\"{}\">\n", xml_escape(panel.title));
    svg += fmt::format(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"13\" "
        "font-weight=\"bold\">{}</text>\n",
        number((left + right) / 2), number(top - 9), xml_escape(panel.title));
    svg += "<g class=\"grid\" stroke=\"#e0e0e0\" stroke-width=\"1\">\n";
    for (const auto& [value, label] : x_ticks) {
      if (!usable(value, x_axis.log)) continue;
      svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n",
                         number(x_axis.to_pixel(value)), number(top), number(bottom));
    }
    for (const double value : y_ticks) {
      svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>\n", number(left),
                         number(y_axis.to_pixel(value)), number(right));
    }
    svg += "</g>\n<g class=\"axes\" fill=\"#333333\">\n";
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333333\"/>\n",
        number(left), number(top), number(plot_width), number(plot_height));
    for (const auto& [value, label] : x_ticks) {
      if (!usable(value, x_axis.log)) continue;
      svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                         number(x_axis.to_pixel(value)), number(bottom + 16), xml_escape(label));
    }
    for (const double value : y_ticks) {
      svg +=
          fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", number(left - 6),
                      number(y_axis.to_pixel(value) + 4), xml_escape(tick_label(value)));
    }
    svg += fmt::format(
        "<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\" transform=\"rotate(-90 {0} {1})\">{2}"
        "</text>\n",
        number(origin_x + 16), number((top + bottom) / 2), xml_escape(options.y_label));
    svg += "</g>\n";

    // Bands, then lines and points, then a label at each line's last point.
    for (size_t i = 0; i < panel.series.size(); ++i) {
      const ChartSeries& series = panel.series[i];
      if (series.low.size() != series.x.size() || series.high.size() != series.x.size()) continue;
      std::string d;
      size_t start = 0;
      auto has_band = [&](size_t k) {
        return usable(series.x[k], x_axis.log) && usable(series.low[k], y_axis.log) &&
               usable(series.high[k], y_axis.log);
      };
      while (start < series.x.size()) {
        if (!has_band(start)) {
          ++start;
          continue;
        }
        size_t end = start;
        while (end + 1 < series.x.size() && has_band(end + 1)) ++end;
        if (end > start) {
          for (size_t k = start; k <= end; ++k) {
            d += fmt::format("{}{} {} ", k == start ? "M" : "L",
                             number(x_axis.to_pixel(series.x[k])),
                             number(y_axis.to_pixel(series.high[k])));
          }
          for (size_t k = end + 1; k-- > start;) {
            d += fmt::format("L{} {} ", number(x_axis.to_pixel(series.x[k])),
                             number(y_axis.to_pixel(series.low[k])));
          }
          d += "Z ";
        }
        start = end + 1;
      }
      if (d.empty()) continue;
      d.pop_back();
      svg += fmt::format(
          "<path class=\"band\" data-series=\"{}\" d=\"{}\" fill=\"{}\" fill-opacity=\"0.13\" "
          "stroke=\"none\"/>\n",
          xml_escape(series.name), d, kPalette[i % kPaletteSize]);
    }
    std::vector<double> label_wanted;
    std::vector<std::pair<double, double>> line_ends;  // pixel of each series' last point
    std::vector<size_t> labelled;
    for (size_t i = 0; i < panel.series.size(); ++i) {
      const ChartSeries& series = panel.series[i];
      const char* colour = kPalette[i % kPaletteSize];
      std::string d, points;
      bool pen_down = false;
      std::optional<std::pair<double, double>> last;
      for (size_t k = 0; k < series.x.size() && k < series.y.size(); ++k) {
        if (!usable(series.x[k], x_axis.log) || !usable(series.y[k], y_axis.log)) {
          pen_down = false;
          continue;
        }
        const double px = x_axis.to_pixel(series.x[k]), py = y_axis.to_pixel(series.y[k]);
        d += fmt::format("{}{} {} ", pen_down ? "L" : "M", number(px), number(py));
        pen_down = true;
        points += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"2.5\" fill=\"{}\"/>\n", number(px),
                              number(py), colour);
        last = {px, py};
      }
      if (!d.empty()) d.pop_back();
      svg += fmt::format(
          "<path class=\"line\" data-series=\"{}\" d=\"{}\" fill=\"none\" stroke=\"{}\" "
          "stroke-width=\"2\"{}/>\n",
          xml_escape(series.name), d.empty() ? "M0 0" : d, colour, dash_of(i));
      svg += points;
      if (last) {
        labelled.push_back(i);
        line_ends.push_back(*last);
        label_wanted.push_back(last->second);
      }
    }
    const std::vector<double> label_y = spread_labels(label_wanted, 14, top + 6, bottom - 2);
    svg += "<g class=\"labels\">\n";
    for (size_t k = 0; k < labelled.size(); ++k) {
      const size_t i = labelled[k];
      const char* colour = kPalette[i % kPaletteSize];
      const double x0 = line_ends[k].first, y0 = line_ends[k].second;
      // A leader from the line's end to its label in the margin right of the plot.
      svg += fmt::format(
          "<path class=\"leader\" d=\"M{} {} L{} {} L{} {}\" fill=\"none\" stroke=\"{}\" "
          "stroke-width=\"1\"{}/>\n",
          number(x0 + 3), number(y0), number(right + 4), number(y0), number(right + 12),
          number(label_y[k]), colour, dash_of(i));
      svg += fmt::format(
          "<text class=\"label\" data-series=\"{}\" x=\"{}\" y=\"{}\" fill=\"{}\">{}</text>\n",
          xml_escape(panel.series[i].name), number(right + 15), number(label_y[k] + 4), colour,
          xml_escape(panel.series[i].name));
    }
    svg += "</g>\n</g>\n";
  }
  if (xs.empty() || ys.empty()) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">no data</text>\n",
                       number(width / 2), number(height / 2));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace rota::experiments
