# Rota's linear attention layer in PyTorch: chunked causal, bidirectional, and the recurrent step.
"""q, k = φ(x W_q), φ(x W_k) per head (with LRPE / RoPE / PermuteFormer on the features), then
  causal:        o_s = Σ_{t≤s} γ^(s−t) (q_s·k_t) v_t    (γ = 1 unless PermuteFormer)
  bidirectional: O = Q (Kᵀ diag(m) V)                 (m: 1 for real keys, 0 for padding)
without 1/√D and, unless normalization is "denominator", without a denominator; a LayerNorm or
RMSNorm over the width follows, then out_proj. The causal form is computed chunk by chunk
(C = chunk_size): inside a chunk the masked quadratic product, across chunks the running
state S = Σ kᵀv, so time and memory are linear in N. `step` is the same layer as a recurrence
with an O(1) state per token, for generation.
"""
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


def bidirectional_linear_attention(q, k, v, key_mask=None):
    """q, k: [B, H, N, F]; v: [B, H, N, Dv]; key_mask: [B, N] (1 real, 0 padding) → [B, H, N, Dv]."""
    if key_mask is not None:
        k = k * key_mask.to(k.dtype)[:, None, :, None]
    return q @ (k.transpose(-1, -2) @ v)


class LinearAttention(nn.Module):
    """Rota's `LinearAttention` (framework/nn/attention/linear_attention.cpp), same parameter names."""

    def __init__(self, config, causal):
        super().__init__()
        e, h = config.width, config.heads
        self.config, self.causal = config, causal
        self.heads, self.head_dim = h, e // h
        self.q_proj = nn.Linear(e, e, bias=config.bias)
        self.k_proj = nn.Linear(e, e, bias=config.bias)
        self.v_proj = nn.Linear(e, e, bias=config.bias)
        self.out_proj = nn.Linear(e, e, bias=config.bias)
        if config.normalization == "layer_norm":
            self.norm = LayerNorm(e, config.norm_eps, config.bias)
        elif config.normalization == "rms_norm":
            self.norm = RMSNorm(e, eps=config.norm_eps)
        else:
            self.norm = None
        position = config.position
        self.permute_former = None
        self.lrpe = None
        if position.kind == "permute_former":
            self.permute_former = PermuteFormer(h, self.head_dim)
        elif position.kind == "rope":
            self.lrpe = rope(self.head_dim, position.pairing, position.base)
        elif position.kind == "lrpe":
            self.lrpe = Lrpe(self.head_dim, position.type, position.pairing, position.p,
                             position.learn_theta, position.theta_base)
        if config.normalization == "denominator":
            if config.feature_map not in ("one_plus_elu", "relu", "exp"):
                raise ValueError("LinearAttention: the denominator needs non-negative features, "
                                 f"but feature map {config.feature_map!r} is signed")
            if self.lrpe is not None and self.lrpe.makes_features_signed:
                raise ValueError("LinearAttention: this positional encoding makes the features "
                                 "signed, so the denominator is ill-defined")

    @property
    def feature_dim(self):
        return self.lrpe.feature_dim if self.lrpe is not None else self.head_dim

    def features(self, x, offset=0):  # [B, H, N, D] → [B, H, N, F]
        if self.permute_former is not None:
            return feature_map(self.config.feature_map, self.permute_former.permute(x, offset))
        phi = feature_map(self.config.feature_map, x)
        return self.lrpe(phi, offset) if self.lrpe is not None else phi

    def _split_heads(self, t):  # [B, N, E] → [B, H, N, D]
        b, n, _ = t.shape
        return t.reshape(b, n, self.heads, self.head_dim).transpose(1, 2)

    def _finish(self, heads_out):  # [B, H, N, D] → [B, N, E]
        b, _, n, _ = heads_out.shape
        merged = heads_out.transpose(1, 2).reshape(b, n, self.config.width)
        if self.norm is not None:
            # In the norm's own dtype: under CPU autocast the products above give bf16, and
            # PyTorch 1.13's layer_norm refuses bf16 input with f32 γ/β (Rota's norm runs in f32).
            merged = self.norm(merged.to(self.norm.weight.dtype))
        return self.out_proj(merged)

    def _decay(self, dtype, device):
        return self.permute_former.decay(dtype, device) if self.permute_former is not None else None

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
        denominator = self.config.normalization == "denominator"
        if denominator:
            v = torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)
        if self.causal:
            out = causal_linear_attention(q, k, v, self.config.chunk_size, decay)
        else:
            out = bidirectional_linear_attention(q, k, v, key_mask)
        if denominator:
            out = out[..., :-1] / out[..., -1:].clamp(min=self.config.denominator_eps)
        return self._finish(out)

    def initial_state(self, batch, dtype=torch.float32, device=None):
        """The recurrent state: S [B, H, F, D(+1 with the denominator)] and the position."""
        extra = 1 if self.config.normalization == "denominator" else 0
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
        return self._finish(out).squeeze(1)
