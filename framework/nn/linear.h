// Linear layer: y = x Wᵀ + b with PyTorch's weight layout [out, in].
#pragma once

#include <memory>
#include <vector>

#include "framework/nn/dropout.h"
#include "framework/nn/module.h"
#include "framework/tensor/random.h"

namespace rota::nn {

/// How a Linear's weight [out, in] and bias [out] start (the schemes of docs/recipes.md,
/// "Initialisation", are built from these).
struct WeightInit {
  enum class Kind {
    kPyTorch,        // weight and bias U(−1/√in, 1/√in): nn.Linear's default
    kNormal,         // weight N(0, scale²), bias 0
    kNormalFanIn,    // weight N(0, (scale/√in)²), bias 0
    kXavierUniform,  // weight U(±scale·√(6/(in+out))); bias 0, or U(±1/√in) when pytorch_bias
  };
  Kind kind = Kind::kPyTorch;
  /// kNormal: the standard deviation (> 0); kNormalFanIn: the factor on 1/√in; kXavierUniform:
  /// the gain. Unused by kPyTorch.
  double scale = 1.0;
  /// kXavierUniform only: the bias keeps nn.Linear's U(−1/√in, 1/√in) (fairseq's q/k/v).
  bool pytorch_bias = false;

  static WeightInit pytorch() { return {}; }
  static WeightInit normal(double stddev) { return {Kind::kNormal, stddev, false}; }
  static WeightInit normal_fan_in(double factor = 1.0) {
    return {Kind::kNormalFanIn, factor, false};
  }
  static WeightInit xavier_uniform(double gain, bool pytorch_bias) {
    return {Kind::kXavierUniform, gain, pytorch_bias};
  }
};

/// Names of a Linear's adapter parameters: "<module>.lora_a" [r, in] and "<module>.lora_b"
/// [out, r] beside "<module>.weight" [out, in].
inline constexpr char kLoraA[] = "lora_a";
inline constexpr char kLoraB[] = "lora_b";

/// A low-rank adapter on a Linear (LoRA, Hu et al. 2021): the layer computes
/// y = x Wᵀ + b + (alpha / rank) · dropout(x) Aᵀ Bᵀ with A [rank, in] and B [out, rank].
struct LoraOptions {
  int64_t rank = 8;      // r >= 1, at most min(in, out)
  double alpha = 16.0;   // the adapter's output is scaled by alpha / rank (> 0)
  double dropout = 0.0;  // dropout on the adapter's input while training, in [0, 1)

  double scale() const { return alpha / static_cast<double>(rank); }
};

struct LinearOptions {
  int64_t in_features = 0;
  int64_t out_features = 0;
  bool bias = true;
  DType dtype = DType::kF32;
  WeightInit init{};  // default: PyTorch's
};

/// Parameters: `weight` [out, in], `bias` [out] (when enabled); with an adapter also `lora_a`
/// [rank, in] and `lora_b` [out, rank].
class Linear : public Module {
 public:
  Linear(const LinearOptions& options, Generator& gen);
  /// x: [..., in] → [..., out] (with the adapter's term when there is one).
  Variable forward(const Variable& x) const;
  const Variable& weight() const { return weight_; }
  const Variable& bias() const { return bias_; }
  const LinearOptions& options() const { return options_; }

  /// Adds a low-rank adapter: `lora_a` [rank, in] drawn U(−1/√in, 1/√in) from `init_gen`
  /// (PyTorch's Kaiming-uniform with a = √5, as PEFT), `lora_b` [out, rank] zeros, so the layer
  /// computes what it did until B trains. Both in the weight's dtype, trainable; the weight and
  /// bias are left as they are (the caller freezes what it wants). `dropout_gen` may be null
  /// when options.dropout is 0. Throws for a second adapter, rank < 1 or > min(in, out),
  /// alpha <= 0 or dropout outside [0, 1).
  void add_lora(const LoraOptions& options, Generator& init_gen,
                std::shared_ptr<Generator> dropout_gen);
  bool has_lora() const { return lora_a_.defined(); }
  const LoraOptions& lora_options() const { return lora_options_; }
  const Variable& lora_a() const { return lora_a_; }
  const Variable& lora_b() const { return lora_b_; }
  /// The adapter's term alone, (alpha / rank) · dropout(x) Aᵀ Bᵀ: [..., in] → [..., out].
  /// Requires has_lora().
  Variable lora_delta(const Variable& x) const;

 private:
  LinearOptions options_;
  Variable weight_;
  Variable bias_;
  LoraOptions lora_options_;
  Variable lora_a_, lora_b_;
  std::shared_ptr<Dropout> lora_dropout_;
};

/// Several Linear layers applied to the same x, computed as one product:
/// [y_1, ..., y_L] = split(x·[W_1; ...; W_L]ᵀ + [b_1; ...; b_L]). Same values as calling each
/// layer's forward (up to the order oneDNN sums in), but x is read — and, under bf16, rounded —
/// once, the product is wider, and the backward's dx is one product instead of L plus L−1
/// additions. A layer's adapter, if it has one, is added to its own slice. The layers must share
/// in_features and all have a bias or none.
std::vector<Variable> forward_shared_input(const std::vector<const Linear*>& layers,
                                           const Variable& x);

}  // namespace rota::nn
