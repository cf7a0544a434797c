// Mean ± sample standard deviation over seeds, and how the report prints numbers.
#pragma once

#include <string>
#include <vector>

namespace rota::experiments {

/// Count, mean and sample standard deviation (n − 1 in the denominator; NaN below 2 values) of
/// the finite values.
struct Summary {
  int n = 0;
  double mean = 0;
  double std = 0;
};
Summary summarize(const std::vector<double>& values);

/// A number with about `significant` digits and no exponent ("123.5", "0.8234", "12345").
std::string format_number(double value, int significant = 4);
/// "123.5 ± 1.2": the std to 2 significant digits and the mean to the same decimal place;
/// one value: the value alone; none: "—".
std::string format_mean_std(const Summary& summary);

}  // namespace rota::experiments
