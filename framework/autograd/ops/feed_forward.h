// The feed-forward block's products as one op: act(x·W1ᵀ + b1)·W2ᵀ + b2.
#pragma once

#include "framework/autograd/variable.h"
#include "framework/backend/primitives/elementwise.h"

namespace rota {

/// y = act(x·w1ᵀ + b1)·w2ᵀ + b2 with no dropout between (nn::FeedForward uses it when its
/// dropout is inactive). x: [..., E], w1: [H, E], b1: [H], w2: [E', H], b2: [E']; act: kRelu,
/// kGeluErf, kGeluTanh or kSilu. Same values and gradients as linear_activation followed by
/// linear, bit for bit; under bf16 the hidden activation is written once, already rounded to
/// bf16 (the f32 activation the composed ops write and then round is never formed), and the
/// backward fuses each bias gradient with the rounding of its output gradient. Saves the
/// pre-activation h [..., H] (f32), the rounded activation and the product operands.
Variable feed_forward(const Variable& x, const Variable& w1, const Variable& b1, const Variable& w2,
                      const Variable& b2, backend::UnaryOp act);

/// The gated feed-forward block's products as one op (nn::FeedForward uses it for SwiGLU / GeGLU
/// when its dropout is inactive):
///   y = (act(x·w_gateᵀ + b_gate) ⊙ (x·w_upᵀ + b_up))·w_downᵀ + b_down
/// x: [..., E], w_gate, w_up: [H, E], w_down: [E', H], biases [H], [H], [E'] — all three defined
/// or all undefined. Same values and gradients as linear(x, [w_gate; w_up], [b_gate; b_up]) →
/// gated_activation → linear, bit for bit; under bf16 the gated activation is written once,
/// already rounded (the f32 one is never formed). Saves [gate | up] [..., 2H] (f32) and the
/// product operands.
Variable gated_feed_forward(const Variable& x, const Variable& w_gate, const Variable& b_gate,
                            const Variable& w_up, const Variable& b_up, const Variable& w_down,
                            const Variable& b_down, backend::UnaryOp act);

/// The gated activation of a SwiGLU / GeGLU block: gu = [gate | up] [..., 2H] (the one product
/// x·[W_gate; W_up]ᵀ) → act(gate) ⊙ up [..., H]. act: kSilu (SwiGLU) or kGeluErf (GeGLU), or any
/// activation backend::derivative_needs_only_input accepts. f32 or f64; forward and backward are
/// one fused pass each (backend/fused/gated_activation.h), the same values as the composed ops
/// act(narrow(gu)) * narrow(gu). Saves gu.
Variable gated_activation(const Variable& gu, backend::UnaryOp act);

}  // namespace rota
