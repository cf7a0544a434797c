// Backward engine: accumulation, graph shapes, grad mode, retain_graph, errors and lifetimes.
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/function.h"
#include "framework/autograd/grad_mode.h"
#include "framework/autograd/ops/elementwise.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::expect_error;

Tensor f64(const std::vector<double>& values, const Shape& shape) {
  return tensor_from(values, shape, DType::kF64);
}

Variable leaf(const std::vector<double>& values, const Shape& shape) {
  return Variable(f64(values, shape), true);
}

// Values of a tensor mapped element-wise by f, as a new f64 tensor (the test's reference).
Tensor map(const Tensor& t, const std::function<double(double)>& f) {
  std::vector<double> v = t.to_double_vector();
  for (double& x : v) x = f(x);
  return f64(v, t.shape());
}

// Test-local ops built on record_op, so the engine is tested independently of op libraries.

// sum of all elements -> scalar; backward broadcasts the scalar gradient.
Variable sum_all(const Variable& x) {
  double s = 0;
  for (double v : x.data().to_double_vector()) s += v;
  return record_op("test_sum", full({}, s, x.dtype()), {x},
                   [shape = x.shape(), dtype = x.dtype()](const Tensor& g) {
                     return std::vector<Tensor>{full(shape, g.item(), dtype)};
                   });
}

// Identity whose backward counts its runs.
Variable counted_identity(const Variable& x, int* runs) {
  return record_op("test_counted", x.data().clone(), {x}, [runs](const Tensor& g) {
    ++*runs;
    return std::vector<Tensor>{g};
  });
}

// Identity whose closure holds `saved` (to observe when saved tensors are freed).
Variable saving_identity(const Variable& x, Tensor saved) {
  return record_op("test_saving", x.data(), {x},
                   [saved](const Tensor& g) { return std::vector<Tensor>{g}; });
}

// Cheap identity link for very long chains (no kernel, output shares the input's storage).
Variable link(const Variable& x) {
  return record_op("test_link", x.data(), {x},
                   [](const Tensor& g) { return std::vector<Tensor>{g}; });
}

TEST(Engine, VariableUsedTwiceAccumulates) {
  const Tensor xv = f64({1, -2, 3}, {3});
  {
    Variable x(xv, true);
    sum_all(x * x).backward();
    EXPECT_TRUE(allclose(x.grad(), map(xv, [](double v) { return 2 * v; }), 0, 0));
  }
  {
    Variable x(xv, true);
    sum_all(x + x).backward();
    EXPECT_TRUE(allclose(x.grad(), f64({2, 2, 2}, {3}), 0, 0));
  }
  {
    // x * x * x: 3x^2, x appears in two different nodes.
    Variable x(xv, true);
    sum_all(x * x * x).backward();
    EXPECT_TRUE(allclose(x.grad(), map(xv, [](double v) { return 3 * v * v; }), 1e-15, 0));
  }
}

TEST(Engine, DiamondGraphs) {
  const Tensor xv = f64({0.5, -1.5, 2.0}, {3});
  {
    // a = 2x, b = 3x, c = a * b = 6x^2: dc/dx = 12x.
    Variable x(xv, true);
    Variable a = x * 2.0;
    Variable b = x * 3.0;
    sum_all(a * b).backward();
    EXPECT_TRUE(allclose(x.grad(), map(xv, [](double v) { return 12 * v; }), 1e-15, 0));
  }
  {
    // Shared non-leaf: h = exp(x), y = h*h + h: dy/dx = (2h + 1) h.
    Variable x(xv, true);
    Variable h = exp(x);
    sum_all(h * h + h).backward();
    EXPECT_TRUE(allclose(x.grad(),
                         map(xv,
                             [](double v) {
                               const double h = std::exp(v);
                               return (2 * h + 1) * h;
                             }),
                         1e-14, 0));
  }
  {
    // Two stacked diamonds with unequal path lengths.
    Variable x(xv, true);
    Variable a = x * 2.0;
    Variable b = a + a * a;  // 2x + 4x^2
    Variable c = b * x + a;  // 2x^2 + 4x^3 + 2x
    sum_all(c).backward();   // 4x + 12x^2 + 2
    EXPECT_TRUE(
        allclose(x.grad(), map(xv, [](double v) { return 4 * v + 12 * v * v + 2; }), 1e-14, 0));
  }
}

TEST(Engine, SharedSubexpressionRunsBackwardOnce) {
  Variable x = leaf({1, 2}, {2});
  int runs = 0;
  Variable h = counted_identity(x * 3.0, &runs);
  Variable total = h;
  for (int i = 0; i < 5; ++i) total = total + h * static_cast<double>(i);
  // total = h * (1 + 0 + 1 + 2 + 3 + 4) = 11h = 33x.
  sum_all(total).backward();
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(allclose(x.grad(), f64({33, 33}, {2}), 0, 0));
}

TEST(Engine, DeepChainBackwardAndDestruction) {
  // 10000 real ops: y = x * 1.0001^10000.
  const int depth = 10000;
  Variable x = leaf({1.0, -2.0}, {2});
  Variable y = x;
  for (int i = 0; i < depth; ++i) y = y * 1.0001;
  sum_all(y).backward();
  const double g = std::pow(1.0001, depth);
  EXPECT_TRUE(allclose(x.grad(), f64({g, g}, {2}), 1e-12, 0));
  y = Variable();  // releases the whole (already backwarded) chain
}

TEST(Engine, VeryDeepChainIsReleasedWithoutRecursion) {
  // A recursive shared_ptr release overflows the default 8 MB stack between 160k and 200k
  // nodes in a Release build (between 10k and 20k under ASan+Debug); 250k must still work.
  const int depth = 250000;
  Variable x = leaf({1.0}, {1});
  {
    // Dropped without backward, first the upper half (the lower half is still referenced from
    // `side`), then the rest.
    Variable y = x;
    Variable side;
    for (int i = 0; i < depth; ++i) {
      y = link(y);
      if (i == depth / 2) side = y;
    }
    std::weak_ptr<Node> head = y.grad_fn();
    std::weak_ptr<Node> middle = side.grad_fn();
    y = Variable();
    EXPECT_TRUE(head.expired());
    EXPECT_FALSE(middle.expired());
    side = Variable();
    EXPECT_TRUE(middle.expired());
  }
  {
    // Backward through the whole chain, then release of the (already backwarded) chain.
    Variable y = x;
    for (int i = 0; i < depth; ++i) y = link(y);
    y.backward();
    EXPECT_EQ(x.grad().item(), 1.0);
  }
}

TEST(Engine, NoGradGuardRecordsNothing) {
  Variable x = leaf({1, 2}, {2});
  ASSERT_TRUE(grad_enabled());
  {
    NoGradGuard guard;
    EXPECT_FALSE(grad_enabled());
    Variable y = exp(x) * x + 1.0;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_TRUE(y.is_leaf());
    EXPECT_EQ(y.grad_fn(), nullptr);
    EXPECT_FALSE(inspect_inputs({x}).any);
    // Nothing is saved: the closure is dropped at once.
    Tensor saved = zeros({1000});
    std::weak_ptr<Storage> watch = saved.storage();
    Variable z = saving_identity(x, saved);
    saved = Tensor();
    EXPECT_TRUE(watch.expired());
    EXPECT_FALSE(z.requires_grad());
    expect_error([&] { y.backward(ones({2}, DType::kF64)); }, {"backward", "require grad"});
  }
  EXPECT_TRUE(grad_enabled());
  Variable w = x * 2.0;
  EXPECT_TRUE(w.requires_grad());
  EXPECT_FALSE(w.is_leaf());
}

TEST(Engine, NoGradGuardNestsAndRestores) {
  EXPECT_TRUE(grad_enabled());
  {
    NoGradGuard outer;
    {
      NoGradGuard inner;
      EXPECT_FALSE(grad_enabled());
    }
    EXPECT_FALSE(grad_enabled()) << "inner guard must restore 'disabled', not 'enabled'";
  }
  EXPECT_TRUE(grad_enabled());
  // A guard restores the mode it found, also when that mode was off.
  set_grad_enabled(false);
  {
    NoGradGuard guard;
    EXPECT_FALSE(grad_enabled());
  }
  EXPECT_FALSE(grad_enabled());
  set_grad_enabled(true);
  // Restored on exceptions too.
  try {
    NoGradGuard guard;
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  EXPECT_TRUE(grad_enabled());
}

TEST(Engine, GradModeIsPerThread) {
  NoGradGuard guard;
  bool other_thread_enabled = false;
  std::thread t([&] { other_thread_enabled = grad_enabled(); });
  t.join();
  EXPECT_TRUE(other_thread_enabled);
  EXPECT_FALSE(grad_enabled());
}

TEST(Engine, RequiresGradPropagation) {
  Variable x = leaf({1, 2}, {2});
  Variable c(f64({3, 4}, {2}), false);
  EXPECT_TRUE(x.is_leaf());
  EXPECT_TRUE(x.requires_grad());
  EXPECT_FALSE(c.requires_grad());
  Variable cc = c * c;
  EXPECT_FALSE(cc.requires_grad());
  EXPECT_TRUE(cc.is_leaf());
  Variable xc = x * c;
  EXPECT_TRUE(xc.requires_grad());
  EXPECT_FALSE(xc.is_leaf());
  sum_all(xc).backward();
  EXPECT_TRUE(allclose(x.grad(), f64({3, 4}, {2}), 0, 0));
  EXPECT_FALSE(c.grad().defined());
  expect_error([&] { xc.set_requires_grad(false); }, {"set_requires_grad", "leaf"});
  expect_error([] { Variable(zeros({2}, DType::kI64), true); }, {"set_requires_grad", "i64"});
  expect_error([] { Variable(Tensor(), true); }, {"Variable", "undefined"});
}

TEST(Engine, RetainGraphAllowsASecondBackward) {
  const Tensor xv = f64({1, 2, 3}, {3});
  Variable x(xv, true);
  Variable y = sum_all(exp(x) * x);
  y.backward(Tensor(), /*retain_graph=*/true);
  const Tensor once = x.grad().clone();
  y.backward();
  // d/dx (x e^x) = (1 + x) e^x, accumulated twice.
  EXPECT_TRUE(allclose(once, map(xv, [](double v) { return (1 + v) * std::exp(v); }), 1e-14, 0));
  EXPECT_TRUE(
      allclose(x.grad(), map(xv, [](double v) { return 2 * (1 + v) * std::exp(v); }), 1e-14, 0));
  // The second backward did not retain: a third one fails with a clear message.
  expect_error([&] { y.backward(); }, {"backward", "retain_graph", "freed"});
}

TEST(Engine, SecondBackwardWithoutRetainThrows) {
  Variable x = leaf({1, 2}, {2});
  Variable y = sum_all(x * x);
  y.backward();
  expect_error([&] { y.backward(); }, {"backward", "test_sum", "retain_graph"});
  // The first backward's gradient is intact.
  EXPECT_TRUE(allclose(x.grad(), f64({2, 4}, {2}), 0, 0));
}

TEST(Engine, GradientsAccumulateAcrossBackwardCallsAndZeroGrad) {
  Variable x = leaf({1, -1}, {2});
  sum_all(x * 3.0).backward();
  sum_all(x * x).backward();
  // 3 + 2x.
  EXPECT_TRUE(allclose(x.grad(), f64({5, 1}, {2}), 0, 0));
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
  sum_all(x * 3.0).backward();
  EXPECT_TRUE(allclose(x.grad(), f64({3, 3}, {2}), 0, 0));
}

TEST(Engine, LeafGradIsAPrivateCopy) {
  // add() passes the same gradient tensor to both inputs; each leaf must own its .grad.
  Variable a = leaf({1, 2}, {2});
  Variable b = leaf({3, 4}, {2});
  Tensor seed = f64({1, 1}, {2});
  (a + b).backward(seed);
  Tensor ga = a.grad();
  ga.set({0}, 100.0);
  EXPECT_EQ(b.grad().at({0}), 1.0);
  EXPECT_EQ(seed.at({0}), 1.0);
  // A later backward accumulates into a's grad without touching the seed of the first.
  Variable y = a * 1.0;
  y.backward(seed);
  EXPECT_EQ(a.grad().at({0}), 101.0);
  EXPECT_EQ(seed.at({0}), 1.0);
}

TEST(Engine, LeafAsRoot) {
  Variable x = leaf({1, 2}, {2});
  x.backward(f64({0.5, -1}, {2}));
  EXPECT_TRUE(allclose(x.grad(), f64({0.5, -1}, {2}), 0, 0));
}

TEST(Engine, BackwardArgumentErrors) {
  Variable x = leaf({1, 2, 3}, {3});
  Variable y = x * 2.0;
  expect_error([&] { y.backward(); }, {"backward", "one-element", "[3]"});
  expect_error([&] { y.backward(ones({2}, DType::kF64)); }, {"backward", "[2]", "[3]"});
  expect_error([&] { y.backward(ones({3}, DType::kF32)); }, {"backward", "f32", "f64"});
  Variable c(f64({1}, {1}), false);
  expect_error([&] { c.backward(); }, {"backward", "does not require grad"});
  expect_error([&] { (c * 2.0).backward(); }, {"backward", "does not require grad"});
  expect_error([&] { run_backward({y}, {}, false); }, {"backward", "1 roots", "0 gradients"});
  // A one-element non-scalar output accepts the implicit seed.
  Variable one = leaf({4}, {1, 1});
  (one * 3.0).backward();
  EXPECT_EQ(one.grad().at({0, 0}), 3.0);
}

TEST(Engine, DetachCutsTheGraph) {
  const Tensor xv = f64({1, 2}, {2});
  Variable x(xv, true);
  Variable sq = x * x;
  Variable d = sq.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
  EXPECT_EQ(d.data().storage(), sq.data().storage());
  // z = d * x: d is a constant x^2, so dz/dx = x^2 (not 3x^2).
  sum_all(d * x).backward();
  EXPECT_TRUE(allclose(x.grad(), map(xv, [](double v) { return v * v; }), 0, 0));
  // The original graph is untouched and still differentiable.
  x.zero_grad();
  sum_all(sq).backward();
  EXPECT_TRUE(allclose(x.grad(), map(xv, [](double v) { return 2 * v; }), 0, 0));
}

// Splits x: [4] into its first 3 and last 1 elements; backward concatenates the gradients.
std::vector<Variable> split_3_1(const Variable& x, int* runs) {
  std::vector<Tensor> outs = {x.data().slice(0, 0, 3).clone(), x.data().slice(0, 3, 4).clone()};
  return record_multi_output_op("test_split", outs, {x}, [runs](const std::vector<Tensor>& grads) {
    ++*runs;
    EXPECT_EQ(grads.size(), 2u);
    EXPECT_EQ(grads[0].shape(), (Shape{3}));
    EXPECT_EQ(grads[1].shape(), (Shape{1}));
    Tensor g = Tensor::empty({4}, grads[0].dtype());
    g.slice(0, 0, 3).copy_from(grads[0]);
    g.slice(0, 3, 4).copy_from(grads[1]);
    return std::vector<Tensor>{g};
  });
}

TEST(Engine, MultiOutputOps) {
  {
    // Only the second output is used: the first one's gradient arrives as zeros.
    Variable x = leaf({1, 2, 3, 4}, {4});
    int runs = 0;
    std::vector<Variable> parts = split_3_1(x, &runs);
    ASSERT_EQ(parts.size(), 2u);
    EXPECT_EQ(parts[0].grad_fn(), parts[1].grad_fn());
    EXPECT_EQ(parts[1].output_nr(), 1);
    sum_all(parts[1] * 5.0).backward();
    EXPECT_EQ(runs, 1);
    EXPECT_TRUE(allclose(x.grad(), f64({0, 0, 0, 5}, {4}), 0, 0));
  }
  {
    // Both used, by paths of different lengths: the node still runs once, after both arrive.
    Variable x = leaf({1, 2, 3, 4}, {4});
    int runs = 0;
    std::vector<Variable> parts = split_3_1(x, &runs);
    Variable a = sum_all(parts[0] * 2.0);
    Variable b = sum_all(((parts[1] * 3.0) * 1.0) * 1.0);
    (a + b).backward();
    EXPECT_EQ(runs, 1);
    EXPECT_TRUE(allclose(x.grad(), f64({2, 2, 2, 3}, {4}), 0, 0));
  }
  {
    // No input needs grad: plain leaves, nothing recorded.
    int runs = 0;
    std::vector<Variable> parts = split_3_1(Variable(f64({1, 2, 3, 4}, {4})), &runs);
    EXPECT_FALSE(parts[0].requires_grad());
    EXPECT_FALSE(parts[1].requires_grad());
  }
}

TEST(Engine, WrongGradientShapeIsReported) {
  Variable x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Variable y = record_op("bad_shape", x.data().clone(), {x}, [](const Tensor& g) {
    return std::vector<Tensor>{zeros({3}, DType::kF64)};
  });
  expect_error(
      [&] {
        y.backward(ones({2, 3}, DType::kF64));
      },
      {"backward", "bad_shape", "[3]", "[2,3]"});
}

TEST(Engine, WrongGradientDTypeIsReported) {
  Variable x = leaf({1, 2}, {2});
  Variable y = record_op("bad_dtype", x.data().clone(), {x}, [](const Tensor& g) {
    return std::vector<Tensor>{zeros({2}, DType::kF32)};
  });
  expect_error([&] { y.backward(ones({2}, DType::kF64)); },
               {"backward", "bad_dtype", "f32", "f64"});
}

TEST(Engine, WrongGradientCountIsReported) {
  Variable a = leaf({1}, {1});
  Variable b = leaf({2}, {1});
  Variable y = record_op("bad_count", a.data().clone(), {a, b}, [](const Tensor& g) {
    return std::vector<Tensor>{g};  // should be two
  });
  expect_error([&] { y.backward(); }, {"backward", "bad_count", "1", "2"});
}

TEST(Engine, SavedTensorsFreedAfterBackward) {
  Variable x = leaf({1, 2}, {2});
  Tensor saved = zeros({1 << 12});
  std::weak_ptr<Storage> watch = saved.storage();
  Variable y = saving_identity(x, saved);
  saved = Tensor();
  std::weak_ptr<Node> node = y.grad_fn();
  EXPECT_FALSE(watch.expired());
  y.backward(ones({2}, DType::kF64));
  // y still references its node, but the node has dropped its closure and captures.
  EXPECT_TRUE(watch.expired());
  EXPECT_FALSE(node.expired());
  EXPECT_TRUE(node.lock()->released());
  y = Variable();
  EXPECT_TRUE(node.expired());
}

TEST(Engine, RetainGraphKeepsSavedTensors) {
  Variable x = leaf({1, 2}, {2});
  Tensor saved = zeros({16});
  std::weak_ptr<Storage> watch = saved.storage();
  Variable y = saving_identity(x, saved);
  saved = Tensor();
  y.backward(ones({2}, DType::kF64), true);
  EXPECT_FALSE(watch.expired());
  y.backward(ones({2}, DType::kF64));
  EXPECT_TRUE(watch.expired());
}

TEST(Engine, GraphFreedWhenOutputDroppedWithoutBackward) {
  Variable x = leaf({1, 2}, {2});
  Tensor saved = zeros({16});
  std::weak_ptr<Storage> watch = saved.storage();
  Variable inner = saving_identity(x, saved) * 2.0;
  saved = Tensor();
  std::weak_ptr<Node> inner_node = inner.grad_fn();
  std::weak_ptr<Node> first_node = inner.grad_fn()->next_edges()[0].node;
  Variable y = sum_all(exp(inner));
  std::weak_ptr<Node> top = y.grad_fn();
  inner = Variable();
  // y keeps the whole graph alive...
  EXPECT_FALSE(inner_node.expired());
  EXPECT_FALSE(watch.expired());
  // ...until it is dropped.
  y = Variable();
  EXPECT_TRUE(top.expired());
  EXPECT_TRUE(inner_node.expired());
  EXPECT_TRUE(first_node.expired());
  EXPECT_TRUE(watch.expired());
  // The leaf is unaffected.
  EXPECT_FALSE(x.grad().defined());
  EXPECT_TRUE(x.requires_grad());
}

TEST(Engine, RunBackwardWithTwoRoots) {
  const Tensor xv = f64({0.5, 1.5}, {2});
  {
    // Independent roots with their own seeds: x.grad = 2x g1 + 3 g2.
    Variable x(xv, true);
    Variable r1 = x * x;
    Variable r2 = x * 3.0;
    const Tensor g1 = f64({1, -1}, {2});
    const Tensor g2 = f64({2, 0.5}, {2});
    run_backward({r1, r2}, {g1, g2}, false);
    EXPECT_TRUE(allclose(x.grad(), f64({2 * 0.5 * 1 + 3 * 2, 2 * 1.5 * -1 + 3 * 0.5}, {2}), 0, 0));
  }
  {
    // One root is an ancestor of the other: r1 = e^x, r2 = r1 * r1.
    // x.grad = g1 e^x + g2 2 e^(2x); the shared node must wait for r2's contribution.
    Variable x(xv, true);
    int runs = 0;
    Variable r1 = counted_identity(exp(x), &runs);
    Variable r2 = r1 * r1;
    const Tensor g1 = f64({1, 2}, {2});
    const Tensor g2 = f64({-1, 0.5}, {2});
    run_backward({r2, r1}, {g2, g1}, false);
    EXPECT_EQ(runs, 1);
    std::vector<double> expected;
    for (int i = 0; i < 2; ++i) {
      const double v = xv.at({i});
      expected.push_back(g1.at({i}) * std::exp(v) + g2.at({i}) * 2 * std::exp(2 * v));
    }
    EXPECT_TRUE(allclose(x.grad(), f64(expected, {2}), 1e-14, 0));
  }
  {
    // The same root twice sums both seeds; scalar roots may omit their seeds.
    Variable x(xv, true);
    Variable loss = sum_all(x * 2.0);
    run_backward({loss, loss}, {Tensor(), Tensor()}, false);
    EXPECT_TRUE(allclose(x.grad(), f64({4, 4}, {2}), 0, 0));
  }
}

TEST(Engine, InputsThatNeedNoGradientGetNone) {
  Variable x = leaf({1, 2}, {2});
  Variable c(f64({5, 7}, {2}), false);
  const OpRecord rec = inspect_inputs({c, x, Variable()});
  EXPECT_EQ(rec.needs, (std::vector<bool>{false, true, false}));
  EXPECT_TRUE(rec.any);
  Variable y = record_op("test_needs", x.data().clone(), {c, x}, [](const Tensor& g) {
    return std::vector<Tensor>{Tensor(), g};
  });
  EXPECT_FALSE(y.grad_fn()->needs_input_grad(0));
  EXPECT_TRUE(y.grad_fn()->needs_input_grad(1));
  y.backward(ones({2}, DType::kF64));
  EXPECT_TRUE(allclose(x.grad(), f64({1, 1}, {2}), 0, 0));
  EXPECT_FALSE(c.grad().defined());
}

TEST(Engine, UndefinedGradientReachesLeafAsNothing) {
  // A backward may return an undefined gradient for an input that needs one (e.g. the
  // gradient is identically zero): the leaf then gets no gradient from that path.
  Variable x = leaf({1, 2}, {2});
  Variable y = record_op("test_zero", x.data().clone(), {x},
                         [](const Tensor& g) { return std::vector<Tensor>{Tensor()}; });
  y.backward(ones({2}, DType::kF64));
  EXPECT_FALSE(x.grad().defined());
  // Combined with a path that does deliver a gradient.
  Variable z = record_op("test_zero", x.data().clone(), {x},
                         [](const Tensor& g) { return std::vector<Tensor>{Tensor()}; });
  sum_all(z + x * 2.0).backward();
  EXPECT_TRUE(allclose(x.grad(), f64({2, 2}, {2}), 0, 0));
}

TEST(Engine, F32GraphsWork) {
  Variable x(tensor_from({1, 2}, {2}, DType::kF32), true);
  sum_all(x * x * 0.5f).backward();
  EXPECT_EQ(x.grad().dtype(), DType::kF32);
  EXPECT_TRUE(allclose(x.grad(), tensor_from({1, 2}, {2}, DType::kF32), 0, 0));
}

TEST(Engine, BackwardFreesSubgraphsSharedWithOtherOutputs) {
  // y1 and y2 share h; y1.backward() without retain_graph frees h's node, so y2.backward()
  // must fail loudly (not return a silently partial gradient). Both at once is fine.
  Variable x = leaf({0.5, 1.0}, {2});
  Variable h = exp(x);
  Variable y1 = sum_all(h * 2.0);
  Variable y2 = sum_all(h * 3.0);
  y1.backward();
  expect_error([&] { y2.backward(); }, {"backward", "retain_graph"});
  x.zero_grad();
  Variable k = exp(x);
  Variable z1 = sum_all(k * 2.0);
  Variable z2 = sum_all(k * 3.0);
  run_backward({z1, z2}, {Tensor(), Tensor()}, false);
  EXPECT_TRUE(
      allclose(x.grad(), map(x.data(), [](double v) { return 5 * std::exp(v); }), 1e-15, 0));
}

TEST(Engine, SetGradChecksAndAccumulatesIntoStridedGrads) {
  Variable x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_error([&] { x.set_grad(zeros({3, 2}, DType::kF64)); }, {"set_grad", "[3,2]", "[2,3]"});
  expect_error([&] { x.set_grad(zeros({2, 3}, DType::kF32)); }, {"set_grad", "f32", "f64"});
  // A transposed (non-contiguous) grad of the right shape still accumulates correctly.
  const Tensor base = f64({10, 40, 20, 50, 30, 60}, {3, 2});
  x.set_grad(base.transpose(0, 1));
  (x * 1.0).backward(ones({2, 3}, DType::kF64));
  EXPECT_TRUE(allclose(x.grad(), f64({11, 21, 31, 41, 51, 61}, {2, 3}), 0, 0));
  x.set_grad(Tensor());
  EXPECT_FALSE(x.grad().defined());
}

TEST(Engine, UndefinedVariableAccessorsDoNotCrash) {
  const Variable v;
  EXPECT_FALSE(v.defined());
  EXPECT_FALSE(v.requires_grad());
  EXPECT_FALSE(v.is_leaf());
  EXPECT_EQ(v.grad_fn(), nullptr);
  EXPECT_EQ(v.output_nr(), 0);
  EXPECT_EQ(v.gradient_edge().node, nullptr);
  expect_error([&] { v.data(); }, {"undefined"});
  expect_error([&] { v.grad(); }, {"grad", "undefined"});
  Variable w;
  expect_error([&] { w.zero_grad(); }, {"zero_grad", "undefined"});
  expect_error([&] { w.set_grad(Tensor()); }, {"set_grad", "undefined"});
  expect_error([&] { w.backward(); }, {"backward"});
}

TEST(Engine, SetDataChecksShapeAndDType) {
  Variable x = leaf({1, 2}, {2});
  x.set_data(f64({3, 4}, {2}));
  EXPECT_EQ(x.data().at({1}), 4.0);
  expect_error([&] { x.set_data(f64({3}, {1})); }, {"set_data", "[1]", "[2]"});
  expect_error(
      [&] {
        x.set_data(tensor_from({3, 4}, {2}, DType::kF32));
      },
      {"set_data", "f32", "f64"});
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
