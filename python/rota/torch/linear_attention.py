# Rota's linear attention layer in PyTorch: chunked causal, bidirectional, and the recurrent step.
"""q, k = φ(x W_q), φ(x W_k) per head (with LRPE / RoPE / PermuteFormer on the features), then
  causal:        o_s = Σ_{t≤s} γ^(s−t) (q_s·k_t) v_t    (γ = 1 unless PermuteFormer)
  bidirectional: O = Q (Kᵀ diag(m) V)                 (m: 1 for real keys, 0 for padding)
without 1/√D and, unless normalization is "denominator", without a denominator; a LayerNorm,
RMSNorm or per-head GroupNorm over the width follows, an optional output gate
(o ⊙ act(x W_g + b_g)), then out_proj. γ is PermuteFormer's decay or a fixed per-head decay of
the RetNet / TransNormerLLM schedules (`state_decay_rates`). The causal form is computed chunk by chunk
(C = chunk_size): inside a chunk the masked quadratic product, across chunks the running
state S = Σ kᵀv, so time and memory are linear in N. `step` is the same layer as a recurrence
with an O(1) state per token, for generation.
"""
import math

import torch
import torch.nn as nn

from .layers import LayerNorm, RMSNorm, feature_map
from .positions import Lrpe, PermuteFormer, rope


def causal_linear_attention(q, k, v, chunk_size=64, decay=None):
    """q, k: [B, H, N, F]; v: [B, H, N, Dv]; decay: [H] or None → [B, H, N, Dv]."""
    b, h, n, f = q.shape
    dv = v.shape[-1]
    if n == 0:
        return v.new_zeros(b, h, 0, dv)
    c = max(1, min(chunk_size, n))
    pad = (-n) % c
    if pad:  # zero rows at the end change no earlier output
        q, k, v = (torch.nn.functional.pad(t, (0, 0, 0, pad)) for t in (q, k, v))
    chunks = (n + pad) // c
    qc = q.reshape(b, h, chunks, c, f)
    kc = k.reshape(b, h, chunks, c, f)
    vc = v.reshape(b, h, chunks, c, dv)
    i = torch.arange(c, device=q.device)
    scores = qc @ kc.transpose(-1, -2)  # [B, H, L, C, C]
    if decay is None:
        intra = (scores * (i[:, None] >= i[None, :]).to(q.dtype)) @ vc
        kv = kc.transpose(-1, -2) @ vc  # [B, H, L, F, Dv]
        before = torch.cumsum(kv, dim=2) - kv  # state from all earlier chunks
        inter = qc @ before
    else:
        gamma = decay.to(q.dtype).reshape(h, 1, 1)
        diff = (i[:, None] - i[None, :]).to(q.dtype)  # [C, C]
        weights = torch.where(diff >= 0, gamma ** diff.clamp(min=0), torch.zeros_like(diff))
        intra = (scores * weights[None, :, None]) @ vc  # γ^(i−j) inside the chunk
        g = decay.to(q.dtype).reshape(1, h, 1, 1)
        to_end = g ** (c - 1 - i).to(q.dtype).reshape(1, 1, c, 1)  # γ^(C−1−j)
        from_start = g ** (i + 1).to(q.dtype).reshape(1, 1, c, 1)  # γ^(i+1)
        state = q.new_zeros(b, h, f, dv)
        inter = []
        for l in range(chunks):
            inter.append((qc[:, :, l] * from_start) @ state)
            state = state * g ** c + (kc[:, :, l] * to_end).transpose(-1, -2) @ vc[:, :, l]
        inter = torch.stack(inter, dim=2)
    out = (intra + inter).reshape(b, h, chunks * c, dv)
    return out[:, :, :n]


def _alibi_slopes(heads):
    # ALiBi's head slopes: for a power of two c, 2^(−8(h+1)/c); otherwise the slopes of the
    # largest power of two below, then every other slope of the next power's list.
    def power_of_two(c):
        return [2.0 ** (-8.0 * (h + 1) / c) for h in range(c)]

    c = 2 ** int(math.floor(math.log2(heads)))
    if c == heads:
        return power_of_two(c)
    return power_of_two(c) + power_of_two(2 * c)[0::2][: heads - c]


def state_decay_rates(schedule, heads, layer=0, layers=1):
    """γ_h of a decay schedule: "retnet" 1 − 2^(−5−h); "transnormer" exp(−m_h·(1 − l/(L−1) +
    1e−5)) with m_h ALiBi's slopes (l/(L−1) = 0 for one block); None: no decay."""
    if schedule is None:
        return None
    if schedule == "retnet":
        return [1.0 - 2.0 ** (-5 - h) for h in range(heads)]
    if schedule == "transnormer":
        depth = 0.0 if layers == 1 else layer / (layers - 1)
        return [math.exp(-m * (1.0 - depth + 1e-5)) for m in _alibi_slopes(heads)]
    raise ValueError(f"decay schedule {schedule!r}")


class StateGate(nn.Module):
    """Rota's `StateGate` (framework/nn/attention/state_gate.cpp), same parameter names: GLA's
    low-rank per-channel gates, Mamba-2's Δ·A decay, a learnable per-head decay, the delta
    rule's β."""

    def __init__(self, config, heads, feature_dim, learnable_rates=None):
        super().__init__()
        e = config.width
        self.config, self.heads, self.feature_dim = config, heads, feature_dim
        if config.gating == "gla":
            self.gate_down = nn.Linear(e, config.gla_rank, bias=False)
            self.gate_up = nn.Linear(config.gla_rank, heads * feature_dim)
        elif config.gating == "ssd":
            self.dt_proj = nn.Linear(e, heads, bias=False)
            self.a_log = nn.Parameter(torch.log(torch.empty(heads).uniform_(1.0, 16.0)))
            dt = torch.exp(math.log(1e-3) + torch.rand(heads) * math.log(100.0))
            self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))
        if learnable_rates is not None:
            rates = torch.tensor(learnable_rates, dtype=torch.float64)
            self.decay_log_rate = nn.Parameter(torch.log(-torch.log(rates)).float())
        if config.update_rule == "delta":
            self.beta_proj = nn.Linear(e, heads)

    def delta_t(self, x):  # [B, N, E] → [B, H, N, 1]
        dt = nn.functional.softplus(self.dt_proj(x) + self.dt_bias)
        return dt.transpose(1, 2).unsqueeze(-1)

    def log_gate(self, x):  # [B, N, E] → [B, H, N, F | 1] or None
        b, n, _ = x.shape
        if self.config.gating == "gla":
            z = self.gate_up(self.gate_down(x))
            g = nn.functional.logsigmoid(z) / self.config.gla_temperature
            return g.reshape(b, n, self.heads, self.feature_dim).transpose(1, 2)
        if self.config.gating == "ssd":
            return -self.delta_t(x) * torch.exp(self.a_log).reshape(1, -1, 1, 1)
        if hasattr(self, "decay_log_rate"):
            return (-torch.exp(self.decay_log_rate)).reshape(1, -1, 1, 1).expand(b, -1, n, 1)
        return None

    def key_scale(self, x):  # Δ_t for the additive SSD, else None
        if self.config.gating == "ssd" and self.config.update_rule == "additive":
            return self.delta_t(x)
        return None

    def beta(self, x):  # [B, N, E] → [B, H, N]
        return torch.sigmoid(self.beta_proj(x)).transpose(1, 2)


def l2_normalize(x, eps=1e-6):
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True) + eps)


def gated_state_step(state, q, k, v, log_gate, beta):
    """One token of S_t = a_t S_{t−1} + k_tᵀ v_t, or of the delta rule
    S_t = a_t (S_{t−1} − β_t k_tᵀ (k_t S_{t−1})) + β_t k_tᵀ v_t; o_t = q_t S_t.
    state [B, H, F, D]; q, k [B, H, F]; v [B, H, D]; log_gate [B, H, F | 1] or None;
    beta [B, H] or None → (o [B, H, D], new state)."""
    a = torch.exp(log_gate).unsqueeze(-1) if log_gate is not None else 1.0
    write = k.unsqueeze(-1) @ v.unsqueeze(-2)  # kᵀv [B, H, F, D]
    if beta is None:
        state = a * state + write
    else:
        bt = beta.unsqueeze(-1).unsqueeze(-1)
        state = a * (state - bt * (k.unsqueeze(-1) @ (k.unsqueeze(-2) @ state))) + bt * write
    return (q.unsqueeze(-2) @ state).squeeze(-2), state


def bidirectional_linear_attention(q, k, v, key_mask=None):
    """q, k: [B, H, N, F]; v: [B, H, N, Dv]; key_mask: [B, N] (1 real, 0 padding) → [B, H, N, Dv]."""
    if key_mask is not None:
        k = k * key_mask.to(k.dtype)[:, None, :, None]
    return q @ (k.transpose(-1, -2) @ v)


class HedgehogFeatureMap(nn.Module):
    """Rota's `HedgehogFeatureMap`: per head [softmax(xW + b), softmax(−(xW + b))], W = I, b = 0
    at initialisation (framework/nn/attention/hedgehog_feature_map.h)."""

    def __init__(self, heads, head_dim):
        super().__init__()
        self.weight = nn.Parameter(torch.eye(head_dim).repeat(heads, 1, 1))  # [H, D, D]
        self.bias = nn.Parameter(torch.zeros(heads, head_dim))  # [H, D]

    def forward(self, x):  # [B, H, N, D] → [B, H, N, 2D]
        z = x @ self.weight.to(x.dtype) + self.bias.to(x.dtype)[None, :, None, :]
        return torch.cat([torch.softmax(z, -1), torch.softmax(-z, -1)], -1)


class LinearAttention(nn.Module):
    """Rota's `LinearAttention` (framework/nn/attention/linear_attention.cpp), same parameter names."""

    def __init__(self, config, causal, layer=0):
        super().__init__()
        e, h = config.width, config.heads
        self.config, self.causal = config, causal
        self.heads, self.head_dim = h, e // h
        if config.kv_heads is not None and config.kv_heads != h:
            raise ValueError(f"LinearAttention: kv_heads {config.kv_heads} differs from heads {h}; "
                             "grouped key/value heads are for softmax attention")
        qkv_bias, norm_bias = config.has_bias("qkv"), config.has_bias("norms")
        self.q_proj = nn.Linear(e, e, bias=qkv_bias)
        self.k_proj = nn.Linear(e, e, bias=qkv_bias)
        self.v_proj = nn.Linear(e, e, bias=qkv_bias)
        self.out_proj = nn.Linear(e, e, bias=config.has_bias("attention_out"))
        if config.normalization == "layer_norm":
            self.norm = LayerNorm(e, config.norm_eps, norm_bias)
        elif config.normalization == "rms_norm":
            self.norm = RMSNorm(e, eps=config.norm_eps)
        elif config.normalization == "group_norm":
            self.norm = nn.GroupNorm(h, e, eps=config.norm_eps)
            if not norm_bias:  # Rota's GroupNorm has no shift then (as its LayerNorms)
                self.norm.register_parameter("bias", None)
        else:
            self.norm = None
        self.gate_proj = (nn.Linear(e, e, bias=qkv_bias) if config.output_gate != "no_gate"
                          else None)
        if config.decay is not None and not causal:
            raise ValueError("LinearAttention: a decay is defined for causal attention only")
        self.decay_rates = state_decay_rates(config.decay, h, layer, config.layers)
        self.state_gate = None
        learnable = self.decay_rates if config.decay_learnable else None
        if config.gating is not None or config.update_rule == "delta" or learnable is not None:
            if not causal:
                raise ValueError("LinearAttention: gating and the delta rule are causal only")
            self.decay_rates = None  # a learnable decay runs as a gate
        position = config.position
        self.permute_former = None
        self.lrpe = None
        if position.kind == "permute_former":
            self.permute_former = PermuteFormer(h, self.head_dim)
        elif position.kind == "rope":
            self.lrpe = rope(self.head_dim, position.pairing, position.base, position.scaling)
        elif position.kind == "lrpe":
            self.lrpe = Lrpe(self.head_dim, position.type, position.pairing, position.p,
                             position.learn_theta, position.theta_base)
        self.feature_map = None
        if config.feature_map == "hedgehog":
            if self.lrpe is not None or self.permute_former is not None:
                raise ValueError("LinearAttention: the hedgehog feature map takes no positional "
                                 "encoding on the features (rope, lrpe, permute_former)")
            self.feature_map = HedgehogFeatureMap(h, self.head_dim)
        if config.normalization == "denominator":
            if config.feature_map not in ("one_plus_elu", "relu", "exp", "hedgehog"):
                raise ValueError("LinearAttention: the denominator needs non-negative features, "
                                 f"but feature map {config.feature_map!r} is signed")
            if self.lrpe is not None and self.lrpe.makes_features_signed:
                raise ValueError("LinearAttention: this positional encoding makes the features "
                                 "signed, so the denominator is ill-defined")
        if config.gating is not None or config.update_rule == "delta" or learnable is not None:
            self.state_gate = StateGate(config, h, self.feature_dim, learnable)

    @property
    def feature_dim(self):
        if self.feature_map is not None:
            return 2 * self.head_dim
        return self.lrpe.feature_dim if self.lrpe is not None else self.head_dim

    def features(self, x, offset=0):  # [B, H, N, D] → [B, H, N, F]
        if self.feature_map is not None:
            return self.feature_map(x)
        if self.permute_former is not None:
            return feature_map(self.config.feature_map, self.permute_former.permute(x, offset))
        phi = feature_map(self.config.feature_map, x)
        return self.lrpe(phi, offset) if self.lrpe is not None else phi

    def _split_heads(self, t):  # [B, N, E] → [B, H, N, D]
        b, n, _ = t.shape
        return t.reshape(b, n, self.heads, self.head_dim).transpose(1, 2)

    def _finish(self, heads_out, x):  # [B, H, N, D] → [B, N, E]; x [B, N, E] the layer input
        b, _, n, _ = heads_out.shape
        merged = heads_out.transpose(1, 2).reshape(b, n, self.config.width)
        if isinstance(self.norm, nn.GroupNorm):  # GroupNorm takes [rows, channels]
            merged = self.norm(merged.reshape(b * n, -1).to(self.norm.weight.dtype))
            merged = merged.reshape(b, n, -1)
        elif self.norm is not None:
            # In the norm's own dtype: under CPU autocast the products above give bf16, and
            # PyTorch 1.13's layer_norm refuses bf16 input with f32 γ/β (Rota's norm runs in f32).
            merged = self.norm(merged.to(self.norm.weight.dtype))
        if self.gate_proj is not None:
            gate = self.gate_proj(x)
            act = nn.functional.silu if self.config.output_gate == "swish_gate" else torch.sigmoid
            merged = merged * act(gate)
        return self.out_proj(merged)

    def _decay(self, dtype, device):
        if self.permute_former is not None:
            return self.permute_former.decay(dtype, device)
        if self.decay_rates is None:
            return None
        return torch.tensor(self.decay_rates, dtype=torch.float64, device=device).to(dtype)

    def forward(self, x, key_mask=None, offset=0):  # x [B, N, E] → [B, N, E]
        if key_mask is not None and self.causal:
            raise ValueError("LinearAttention: a key padding mask applies to bidirectional "
                             "attention only")
        q = self.features(self._split_heads(self.q_proj(x)), offset)
        k = self.features(self._split_heads(self.k_proj(x)), offset)
        v = self._split_heads(self.v_proj(x))
        decay = self._decay(x.dtype, x.device)
        if decay is not None and not self.causal:
            # γ^(s−t) = γ^s · γ^(−t): weights above 1 for t > s, growing with the length.
            n = x.shape[1]
            worst = (offset + n - 1) * -torch.log(decay.double().min()).item()
            if worst >= 80.0:
                raise ValueError("LinearAttention: bidirectional PermuteFormer weights reach "
                                 f"e^{worst:.0f} at length {offset + n}")
            s = torch.arange(offset, offset + n, dtype=x.dtype, device=x.device)
            g = decay.reshape(1, -1, 1, 1)
            q = q * g ** s.reshape(1, 1, n, 1)
            k = k * g ** (-s).reshape(1, 1, n, 1)
        if self.state_gate is not None:
            return self._finish(self._gated(x, q, k, v), x)
        denominator = self.config.normalization == "denominator"
        if denominator:
            v = torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)
        if self.causal:
            out = causal_linear_attention(q, k, v, self.config.chunk_size, decay)
        else:
            out = bidirectional_linear_attention(q, k, v, key_mask)
        if denominator:
            out = out[..., :-1] / out[..., -1:].clamp(min=self.config.denominator_eps)
        return self._finish(out, x)

    def _gate_inputs(self, x, q, k):  # the gate, β and the (normalised / scaled) q, k
        gate = self.state_gate
        log_gate = gate.log_gate(x)
        beta = None
        if self.config.update_rule == "delta":
            q, k, beta = l2_normalize(q), l2_normalize(k), gate.beta(x)
        scale = gate.key_scale(x)
        if scale is not None:
            k = k * scale
        return q, k, log_gate, beta

    def _gated(self, x, q, k, v):  # token by token: [B, H, N, F|D] → [B, H, N, D]
        q, k, log_gate, beta = self._gate_inputs(x, q, k)
        b, h, n, f = q.shape
        state = q.new_zeros(b, h, f, v.shape[-1])
        outputs = []
        for t in range(n):
            o, state = gated_state_step(state, q[:, :, t], k[:, :, t], v[:, :, t],
                                        log_gate[:, :, t] if log_gate is not None else None,
                                        beta[:, :, t] if beta is not None else None)
            outputs.append(o)
        return torch.stack(outputs, dim=2) if outputs else v.new_zeros(b, h, 0, v.shape[-1])

    def initial_state(self, batch, dtype=torch.float32, device=None):
        """The recurrent state: S [B, H, F, D(+1 with the denominator)] and the position."""
        extra = 1 if self.config.normalization == "denominator" and self.state_gate is None else 0
        return {"kv": torch.zeros(batch, self.heads, self.feature_dim, self.head_dim + extra,
                                  dtype=dtype, device=device), "position": 0}

    def step(self, x, state):  # x [B, E] → [B, E]; updates state in place
        if not self.causal:
            raise ValueError("LinearAttention: step() needs a causal layer")
        xs = x.unsqueeze(1)
        position = state["position"]
        q = self.features(self._split_heads(self.q_proj(xs)), position)  # [B, H, 1, F]
        k = self.features(self._split_heads(self.k_proj(xs)), position)
        v = self._split_heads(self.v_proj(xs))  # [B, H, 1, D]
        if self.state_gate is not None:
            q, k, log_gate, beta = self._gate_inputs(xs, q, k)
            out, state["kv"] = gated_state_step(
                state["kv"], q[:, :, 0], k[:, :, 0], v[:, :, 0],
                log_gate[:, :, 0] if log_gate is not None else None,
                beta[:, :, 0] if beta is not None else None)
            state["position"] = position + 1
            return self._finish(out.unsqueeze(2), xs).squeeze(1)
        if self.config.normalization == "denominator":
            v = torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)
        decay = self._decay(x.dtype, x.device)
        kv = state["kv"]
        if decay is not None:
            kv = kv * decay.reshape(1, -1, 1, 1)
        kv = kv + k.transpose(-1, -2) @ v  # S = γS + kᵀv
        state["kv"], state["position"] = kv, position + 1
        out = q @ kv  # [B, H, 1, D(+1)]
        if self.config.normalization == "denominator":
            out = out[..., :-1] / out[..., -1:].clamp(min=self.config.denominator_eps)
        return self._finish(out, xs).squeeze(1)
