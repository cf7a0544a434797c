// End to end: a 2-hidden-layer MLP (Module + init) fits two interleaved spirals with AdamW.
#include <cmath>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/loss.h"
#include "framework/autograd/ops/matmul.h"
#include "framework/backend/cpu/parallel.h"
#include "framework/nn/init.h"
#include "framework/nn/module.h"
#include "framework/optim/adam.h"
#include "framework/optim/clip.h"
#include "framework/optim/schedule.h"
#include "framework/tensor/random.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

constexpr double kPi = 3.14159265358979323846;

/// Two spirals, one per class, each 1.5 turns from radius 0.15 to 1, with N(0, 0.02^2) noise:
/// not linearly separable, and neighbouring arms are ~0.28 apart, so a small MLP must bend its
/// boundary several times. points: [2n, 2] f32, labels: [2n] i64.
void make_spirals(int64_t n, Generator& gen, Tensor& points, Tensor& labels) {
  std::vector<double> xy, y;
  for (int c = 0; c < 2; ++c) {
    for (int64_t i = 0; i < n; ++i) {
      const double s = static_cast<double>(i) / static_cast<double>(n - 1);
      const double radius = 0.15 + 0.85 * s;
      const double angle = 3 * kPi * s + c * kPi;
      xy.push_back(radius * std::cos(angle) + 0.02 * gen.next_normal());
      xy.push_back(radius * std::sin(angle) + 0.02 * gen.next_normal());
      y.push_back(c);
    }
  }
  points = tensor_from(xy, {2 * n, 2});
  labels = tensor_from(y, {2 * n}, DType::kI64);
}

/// 2 -> H -> H -> 2 with tanh; Xavier-uniform weights with tanh's gain, zero biases.
class Mlp : public nn::Module {
 public:
  Mlp(int64_t hidden, Generator& gen) {
    const double gain = nn::init::calculate_gain(nn::init::Nonlinearity::kTanh);
    auto layer = [&](const char* name, int64_t in, int64_t out, double layer_gain) {
      auto m = register_module(name, std::make_shared<nn::Module>());
      Variable w = m->register_parameter(
          "weight", nn::init::xavier_uniform_(Tensor::empty({out, in}), gen, layer_gain));
      Variable b = m->register_parameter("bias", nn::init::zeros_(Tensor::empty({out})));
      return std::make_pair(w, b);
    };
    fc1_ = layer("fc1", 2, hidden, gain);
    fc2_ = layer("fc2", hidden, hidden, gain);
    out_ = layer("out", hidden, 2, 1.0);
  }

  /// x: [N, 2] -> logits [N, 2].
  Variable forward(const Variable& x) const {
    const Variable h1 = tanh(linear(x, fc1_.first, fc1_.second));
    const Variable h2 = tanh(linear(h1, fc2_.first, fc2_.second));
    return linear(h2, out_.first, out_.second);
  }

 private:
  std::pair<Variable, Variable> fc1_, fc2_, out_;
};

double accuracy(const Tensor& logits, const Tensor& labels) {
  const std::vector<double> z = logits.to_double_vector(), y = labels.to_double_vector();
  int64_t correct = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const int predicted = z[2 * i + 1] > z[2 * i] ? 1 : 0;
    correct += predicted == static_cast<int>(y[i]);
  }
  return static_cast<double>(correct) / static_cast<double>(y.size());
}

/// Runs the test body on one thread: every tensor here is far below the parallel grain, so a
/// thread pool only adds fork/join and spin-wait overhead (40x on a loaded 2-core CI box).
/// The optimizers' and clipping's parallel paths are covered by the large-tensor tests.
class SingleThread {
 public:
  SingleThread() : previous_(backend::num_threads()) { backend::set_num_threads(1); }
  ~SingleThread() { backend::set_num_threads(previous_); }

 private:
  int previous_;
};

TEST(MlpLearns, TwoSpiralsWithAdamW) {
  SingleThread single_thread;
  Generator data_gen(2024);
  Tensor points, labels;
  make_spirals(100, data_gen, points, labels);
  Generator init_gen(7);
  Mlp model(32, init_gen);
  EXPECT_EQ(model.num_parameters(), (2 * 32 + 32) + (32 * 32 + 32) + (32 * 2 + 2));

  const int64_t steps = 1000;
  optim::AdamOptions adam;
  optim::AdamW opt(optim::decay_param_groups(model.named_parameters(), 1e-2, 1e-4), adam);
  optim::ScheduleOptions schedule_options;
  schedule_options.name = optim::ScheduleName::kCosine;
  schedule_options.lr = 1e-2;
  schedule_options.min_lr = 1e-3;
  schedule_options.warmup_steps = 50;
  schedule_options.total_steps = steps;
  const auto schedule = optim::make_schedule(schedule_options);

  const Variable x(points);
  double first_loss = 0, loss_value = 0;
  for (int64_t t = 1; t <= steps; ++t) {
    opt.zero_grad();
    const Variable loss = cross_entropy(model.forward(x), labels);
    loss.backward();
    loss_value = loss.item();
    if (t == 1) first_loss = loss_value;
    const double norm = optim::clip_grad_norm(model.parameters(), 1.0);
    ASSERT_TRUE(std::isfinite(norm)) << "step " << t;
    opt.set_lr(schedule->lr(t));
    opt.step();
  }
  // Untrained, the logits are small: loss ~ ln 2.
  EXPECT_NEAR(first_loss, std::log(2.0), 0.15);
  const Variable logits = model.forward(x);
  const double final_loss = cross_entropy(logits, labels).item();
  // Reaches 1.2e-3 with these seeds and at most 2.3e-3 with the other init / data seeds tried
  // (1, 2, 3 / 5, 6), so 1e-2 means "near zero" with a 4-8x margin (it starts at ln 2 = 0.69).
  EXPECT_LT(final_loss, 0.01) << "last training loss " << loss_value;
  EXPECT_EQ(accuracy(logits.data(), labels), 1.0);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
