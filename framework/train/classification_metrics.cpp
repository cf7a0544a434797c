// Accuracy and Matthews correlation from a confusion matrix.
#include "framework/train/classification_metrics.h"

#include <cmath>

#include "framework/base/error.h"

namespace rota::train {

ConfusionMatrix::ConfusionMatrix(int64_t num_classes)
    : classes_(num_classes), counts_(static_cast<size_t>(num_classes * num_classes), 0) {
  ROTA_CHECK(num_classes >= 2, "ConfusionMatrix: need at least 2 classes, got {}", num_classes);
}

void ConfusionMatrix::add(int64_t true_class, int64_t predicted_class) {
  ROTA_CHECK(true_class >= 0 && true_class < classes_ && predicted_class >= 0 &&
                 predicted_class < classes_,
             "ConfusionMatrix: class pair ({}, {}) outside [0, {})", true_class, predicted_class,
             classes_);
  ++counts_[static_cast<size_t>(true_class * classes_ + predicted_class)];
  ++total_;
}

int64_t ConfusionMatrix::count(int64_t true_class, int64_t predicted_class) const {
  return counts_[static_cast<size_t>(true_class * classes_ + predicted_class)];
}

double ConfusionMatrix::accuracy() const {
  if (total_ == 0) return 0.0;
  int64_t correct = 0;
  for (int64_t k = 0; k < classes_; ++k) correct += count(k, k);
  return static_cast<double>(correct) / static_cast<double>(total_);
}

double ConfusionMatrix::matthews_correlation() const {
  // Long double sums: s² reaches 1e12 for a million examples, beyond exact double products
  // only for absurd sizes, but the subtraction below cancels, so keep the extra bits.
  long double correct = 0, sum_pt = 0, sum_pp = 0, sum_tt = 0;
  for (int64_t k = 0; k < classes_; ++k) {
    correct += count(k, k);
    long double t = 0, p = 0;
    for (int64_t j = 0; j < classes_; ++j) {
      t += count(k, j);
      p += count(j, k);
    }
    sum_pt += p * t;
    sum_pp += p * p;
    sum_tt += t * t;
  }
  const long double s = total_;
  const long double denominator = (s * s - sum_pp) * (s * s - sum_tt);
  if (denominator <= 0) return 0.0;
  return static_cast<double>((correct * s - sum_pt) / std::sqrt(denominator));
}

}  // namespace rota::train
