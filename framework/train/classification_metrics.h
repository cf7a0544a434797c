// Classification metrics from a confusion matrix: accuracy and Matthews correlation (CoLA's
// metric).
#pragma once

#include <cstdint>
#include <vector>

namespace rota::train {

/// counts[true_class][predicted_class] over K classes.
class ConfusionMatrix {
 public:
  explicit ConfusionMatrix(int64_t num_classes);
  /// Records one example; both classes must be in [0, K).
  void add(int64_t true_class, int64_t predicted_class);
  int64_t total() const { return total_; }
  int64_t count(int64_t true_class, int64_t predicted_class) const;
  /// Fraction of examples predicted correctly (0 when empty).
  double accuracy() const;
  /// Matthews correlation coefficient; for K > 2 Gorodkin's R_K:
  ///   (c·s − Σ_k p_k·t_k) / sqrt((s² − Σ_k p_k²)·(s² − Σ_k t_k²)),
  /// c = correct, s = total, t_k / p_k = examples truly / predicted in class k. 0 when the
  /// denominator is 0 (every prediction, or every label, in one class), as scikit-learn does.
  double matthews_correlation() const;

 private:
  int64_t classes_;
  int64_t total_ = 0;
  std::vector<int64_t> counts_;  // [K, K] row-major
};

}  // namespace rota::train
