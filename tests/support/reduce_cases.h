// Cases for reduction and along-one-axis tests, (shape, axes, keepdim) and (shape, axis), and
// their gtest names ("2x3x4_axes0_m1_keepdim").
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "framework/tensor/shape.h"

namespace rota::testing {

/// A reduction over `axes` (empty = all) of an input of `shape`.
struct ReduceCase {
  Shape shape;
  std::vector<int64_t> axes;
  bool keepdim;
};

/// Each (shape, axes) pair without and then with keepdim.
std::vector<ReduceCase> with_and_without_keepdim(
    const std::vector<std::pair<Shape, std::vector<int64_t>>>& layouts);

/// An op along `axis` (softmax, cumsum, ...) of an input of `shape`.
struct AxisCase {
  Shape shape;
  int64_t axis;
};

/// "2x3x4"; "scalar" for a 0-d shape.
std::string shape_name(const Shape& shape);

/// "all" for no axes, "axis1" for one, "axes0_m1" for several (m = minus).
std::string axes_name(const std::vector<int64_t>& axes);

/// "<shape>_<axes>", with "_keepdim" when kept: "2x3x4_axes0_m1_keepdim".
std::string case_name(const ReduceCase& c);

/// "<shape>_<axis>": "2x3x4_axism1".
std::string case_name(const AxisCase& c);

/// gtest name generator for these cases: case_name(c) for a case, "<op.name>_<case_name(c)>"
/// for an (op, case) tuple whose op has a `name`.
struct CaseName {
  template <typename Case>
  std::string operator()(const ::testing::TestParamInfo<Case>& info) const {
    return case_name(info.param);
  }
  template <typename Op, typename Case>
  std::string operator()(const ::testing::TestParamInfo<std::tuple<Op, Case>>& info) const {
    return std::get<0>(info.param).name + "_" + case_name(std::get<1>(info.param));
  }
};

}  // namespace rota::testing
