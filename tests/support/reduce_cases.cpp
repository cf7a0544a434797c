// Reduction and along-one-axis test cases and their names (see reduce_cases.h).
#include "tests/support/reduce_cases.h"

namespace rota::testing {

std::vector<ReduceCase> with_and_without_keepdim(
    const std::vector<std::pair<Shape, std::vector<int64_t>>>& layouts) {
  std::vector<ReduceCase> cases;
  for (const auto& [shape, axes] : layouts) {
    cases.push_back({shape, axes, false});
    cases.push_back({shape, axes, true});
  }
  return cases;
}

std::string shape_name(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += "x";
    s += std::to_string(shape[i]);
  }
  return s;
}

std::string axes_name(const std::vector<int64_t>& axes) {
  if (axes.empty()) return "all";
  std::string s = axes.size() == 1 ? "axis" : "axes";
  for (size_t i = 0; i < axes.size(); ++i) {
    if (i > 0) s += "_";
    if (axes[i] < 0) s += "m";
    s += std::to_string(axes[i] < 0 ? -axes[i] : axes[i]);
  }
  return s;
}

std::string case_name(const ReduceCase& c) {
  return shape_name(c.shape) + "_" + axes_name(c.axes) + (c.keepdim ? "_keepdim" : "");
}

std::string case_name(const AxisCase& c) {
  return shape_name(c.shape) + "_" + axes_name({c.axis});
}

}  // namespace rota::testing
