// ConfusionMatrix: accuracy and Matthews correlation against closed forms computed here.
#include "framework/train/classification_metrics.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "framework/base/error.h"
#include "framework/tensor/random.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

struct Labelled {
  std::vector<int64_t> truth;
  std::vector<int64_t> predicted;
};

// `count` random (true, predicted) pairs over `classes` classes; predictions agree with the
// truth with probability `agreement`, otherwise are uniform.
Labelled random_labels(Generator& gen, int64_t classes, int64_t count, double agreement) {
  Labelled labels;
  for (int64_t i = 0; i < count; ++i) {
    const auto truth = static_cast<int64_t>(gen.next_below(static_cast<uint64_t>(classes)));
    const bool agree = gen.next_double() < agreement;
    labels.truth.push_back(truth);
    labels.predicted.push_back(
        agree ? truth : static_cast<int64_t>(gen.next_below(static_cast<uint64_t>(classes))));
  }
  return labels;
}

train::ConfusionMatrix confusion_of(const Labelled& labels, int64_t classes) {
  train::ConfusionMatrix matrix(classes);
  for (size_t i = 0; i < labels.truth.size(); ++i) matrix.add(labels.truth[i], labels.predicted[i]);
  return matrix;
}

// Pearson correlation of the one-hot indicator matrices X (truth) and Y (prediction), both
// [N, K], with the covariance summed over the K columns: cov(X, Y) / sqrt(cov(X, X) cov(Y, Y)).
// This is the definition of Gorodkin's R_K; 0 when a variance is 0.
double one_hot_pearson(const Labelled& labels, int64_t classes) {
  const auto n = static_cast<int64_t>(labels.truth.size());
  std::vector<double> mean_x(static_cast<size_t>(classes), 0.0);
  std::vector<double> mean_y(static_cast<size_t>(classes), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    mean_x[static_cast<size_t>(labels.truth[static_cast<size_t>(i)])] += 1.0 / n;
    mean_y[static_cast<size_t>(labels.predicted[static_cast<size_t>(i)])] += 1.0 / n;
  }
  double cov_xy = 0, cov_xx = 0, cov_yy = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < classes; ++k) {
      const double x =
          (labels.truth[static_cast<size_t>(i)] == k ? 1.0 : 0.0) - mean_x[static_cast<size_t>(k)];
      const double y = (labels.predicted[static_cast<size_t>(i)] == k ? 1.0 : 0.0) -
                       mean_y[static_cast<size_t>(k)];
      cov_xy += x * y;
      cov_xx += x * x;
      cov_yy += y * y;
    }
  }
  if (cov_xx == 0 || cov_yy == 0) return 0.0;
  return cov_xy / std::sqrt(cov_xx * cov_yy);
}

TEST(ConfusionMatrix, CountsAndAccuracy) {
  Generator gen(3);
  for (int64_t classes : {2, 3, 7}) {
    const Labelled labels = random_labels(gen, classes, 500, 0.6);
    const train::ConfusionMatrix matrix = confusion_of(labels, classes);
    int64_t correct = 0;
    std::vector<int64_t> counts(static_cast<size_t>(classes * classes), 0);
    for (size_t i = 0; i < labels.truth.size(); ++i) {
      correct += labels.truth[i] == labels.predicted[i] ? 1 : 0;
      ++counts[static_cast<size_t>(labels.truth[i] * classes + labels.predicted[i])];
    }
    EXPECT_EQ(matrix.total(), 500);
    for (int64_t t = 0; t < classes; ++t) {
      for (int64_t p = 0; p < classes; ++p) {
        EXPECT_EQ(matrix.count(t, p), counts[static_cast<size_t>(t * classes + p)]);
      }
    }
    EXPECT_DOUBLE_EQ(matrix.accuracy(), static_cast<double>(correct) / 500.0);
  }
}

TEST(ConfusionMatrix, EmptyMatrixGivesZeros) {
  const train::ConfusionMatrix matrix(3);
  EXPECT_EQ(matrix.total(), 0);
  EXPECT_EQ(matrix.accuracy(), 0.0);
  EXPECT_EQ(matrix.matthews_correlation(), 0.0);
}

TEST(ConfusionMatrix, BinaryMccMatchesClosedForm) {
  Generator gen(17);
  for (int trial = 0; trial < 50; ++trial) {
    const int64_t count = 20 + static_cast<int64_t>(gen.next_below(400));
    const double agreement = gen.next_double();
    const Labelled labels = random_labels(gen, 2, count, agreement);
    double tp = 0, tn = 0, fp = 0, fn = 0;
    for (size_t i = 0; i < labels.truth.size(); ++i) {
      const bool truth = labels.truth[i] == 1;
      const bool predicted = labels.predicted[i] == 1;
      tp += truth && predicted ? 1 : 0;
      tn += !truth && !predicted ? 1 : 0;
      fp += !truth && predicted ? 1 : 0;
      fn += truth && !predicted ? 1 : 0;
    }
    const double denominator = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn);
    const double expected = denominator == 0 ? 0.0 : (tp * tn - fp * fn) / std::sqrt(denominator);
    EXPECT_NEAR(confusion_of(labels, 2).matthews_correlation(), expected, 1e-12)
        << "trial " << trial << ": tp=" << tp << " tn=" << tn << " fp=" << fp << " fn=" << fn;
  }
}

TEST(ConfusionMatrix, MccIsOneForPerfectAndMinusOneForInvertedBinary) {
  Generator gen(5);
  const Labelled labels = random_labels(gen, 2, 200, 1.0);
  EXPECT_NEAR(confusion_of(labels, 2).matthews_correlation(), 1.0, 1e-15);
  EXPECT_EQ(confusion_of(labels, 2).accuracy(), 1.0);

  Labelled inverted = labels;
  for (int64_t& p : inverted.predicted) p = 1 - p;
  EXPECT_NEAR(confusion_of(inverted, 2).matthews_correlation(), -1.0, 1e-15);
  EXPECT_EQ(confusion_of(inverted, 2).accuracy(), 0.0);

  for (int64_t classes : {3, 5}) {
    const Labelled perfect = random_labels(gen, classes, 300, 1.0);
    EXPECT_NEAR(confusion_of(perfect, classes).matthews_correlation(), 1.0, 1e-15);
  }
}

TEST(ConfusionMatrix, MccIsZeroWhenAllPredictionsAreOneClass) {
  Generator gen(9);
  for (int64_t classes : {2, 4}) {
    for (int64_t constant = 0; constant < classes; ++constant) {
      Labelled labels = random_labels(gen, classes, 100, 0.5);
      for (int64_t& p : labels.predicted) p = constant;
      const train::ConfusionMatrix matrix = confusion_of(labels, classes);
      EXPECT_EQ(matrix.matthews_correlation(), 0.0);
      // Accuracy is still the share of the predicted class among the labels.
      int64_t share = 0;
      for (int64_t t : labels.truth) share += t == constant ? 1 : 0;
      EXPECT_DOUBLE_EQ(matrix.accuracy(), static_cast<double>(share) / 100.0);
    }
  }
  // Every label in one class: 0 as well.
  Labelled one_label = random_labels(gen, 3, 50, 0.0);
  for (int64_t& t : one_label.truth) t = 2;
  EXPECT_EQ(confusion_of(one_label, 3).matthews_correlation(), 0.0);
}

TEST(ConfusionMatrix, MultiClassMccIsPearsonOfOneHotIndicators) {
  Generator gen(23);
  for (int64_t classes : {2, 3, 4, 6}) {
    for (int trial = 0; trial < 10; ++trial) {
      const int64_t count = 30 + static_cast<int64_t>(gen.next_below(300));
      const Labelled labels = random_labels(gen, classes, count, gen.next_double());
      EXPECT_NEAR(confusion_of(labels, classes).matthews_correlation(),
                  one_hot_pearson(labels, classes), 1e-12)
          << classes << " classes, trial " << trial;
    }
  }
  // Systematic confusion (every class predicted as the next one) is strongly negative for
  // K = 2 only; for K > 2 the minimum of R_K is above −1.
  for (int64_t classes : {3, 5}) {
    Labelled shifted = random_labels(gen, classes, 200, 1.0);
    for (int64_t& p : shifted.predicted) p = (p + 1) % classes;
    const double mcc = confusion_of(shifted, classes).matthews_correlation();
    EXPECT_NEAR(mcc, one_hot_pearson(shifted, classes), 1e-12);
    EXPECT_GT(mcc, -1.0);
    EXPECT_LT(mcc, 0.0);
  }
}

TEST(ConfusionMatrix, OutOfRangeClassesThrow) {
  train::ConfusionMatrix matrix(3);
  EXPECT_THROW(matrix.add(-1, 0), Error);
  EXPECT_THROW(matrix.add(0, -1), Error);
  EXPECT_THROW(matrix.add(3, 0), Error);
  EXPECT_THROW(matrix.add(0, 3), Error);
  EXPECT_EQ(matrix.total(), 0);
  matrix.add(2, 2);
  EXPECT_EQ(matrix.total(), 1);
  EXPECT_THROW(train::ConfusionMatrix(1), Error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
