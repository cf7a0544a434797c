# Rota's softmax-attention layer and its positional encodings in PyTorch (loads Rota checkpoints).
"""SoftmaxAttention: the C++ `nn::SoftmaxAttention` (framework/nn/attention/softmax_attention.h)
with every encoding Rota trains inside softmax attention, parameter names and shapes equal to
the C++ state dict (relative to the layer, which a block registers as `attn`).

One logit formula for every encoding (docs/softmax-attention.md):

    l_ij = s*(q_i.k_j + a_ij) + b_ij,  l_ij = -inf where key j is hidden from query i,
    p_ij = softmax_j l_ij,  o_i = sum_j p_ij (v_j + c_ij),  t_ij = j - i - off,

query i at key position off + i (off = 0 for self-attention). A query that sees no key at all
gets o_i = 0 (the fused C++ kernel's rule), never NaN.

Children / parameters, as in C++: `q_proj` [H*D, E], `k_proj` and `v_proj` [H_kv*D, E] (grouped-
query attention: H_kv = config.kv_heads key/value heads, query head h reading key/value head
h // (H/H_kv), the order of Llama's repeat_kv), `out_proj` (Linear; biases as config.has_bias
says for "qkv" and "attention_out"); then, depending on the encoding, `rope.theta` [D/2] (frozen,
config.position.scaling applied), or `position` holding
  t5:             `weight` [N_b, H]
  shaw:           `key_table` [K_l + K_r + 1, D] (+ `value_table`, same shape)
  transformer_xl: `pos_bias_u` [H, D], `pos_bias_v` [H, D], `linear_pos.weight` [H*D, d_pe]
  skew:           `table` [2L - 1, D] or [H, 2L - 1, D] (per_head)
ALiBi, none, sinusoidal and learned_absolute have nothing inside the attention.
"""
import math
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .config import RotaConfig
from .positions import scale_rope_theta

__all__ = ["SoftmaxAttention", "make_shared_t5", "T5RelativeBias", "Alibi", "Rope",
           "ShawRelativeEncoding", "RelativeXlEncoding", "SkewRelativeEncoding",
           "alibi_slopes", "t5_relative_bucket", "chunk_visibility_mask"]

NOTHING_INSIDE = ("none", "sinusoidal", "learned_absolute")  # absolute ones: added by the encoder
LINEAR_ONLY = ("lrpe", "permute_former")


# ---- helpers -----------------------------------------------------------------------------

@dataclass
class AttentionCall:
    """What every encoding's attend() receives (C++ nn::AttentionCall)."""
    scale: float
    causal: bool = False
    query_offset: int = 0
    window: int = 0                            # W >= 1: key j hidden when off + i − j >= W
    key_padding_mask: Optional[Tensor] = None  # [B, Nk], 0/False = padding
    visibility_mask: Optional[Tensor] = None   # [Nq, Nk], 0/False = hidden
    dropout: float = 0.0
    training: bool = False


def _relative_index(n_q: int, n_k: int, device) -> Tensor:
    """[Nq, Nk] int64: j - i + Nq - 1, the row of t_ij among the block's ascending distances
    t_min = -(Nq - 1) - off ... t_max = Nk - 1 - off (independent of off)."""
    i = torch.arange(n_q, device=device).unsqueeze(1)
    j = torch.arange(n_k, device=device).unsqueeze(0)
    return j - i + (n_q - 1)


def _skew(x: Tensor, n_k: int, column_map: Optional[Tensor] = None) -> Tensor:
    """S[..., i, j] = x[..., i, c(j - i + Nq - 1)] (c = column_map or identity).
    x: [B, H, Nq, R] -> [B, H, Nq, Nk]."""
    n_q = x.shape[-2]
    index = _relative_index(n_q, n_k, x.device)  # [Nq, Nk]
    if column_map is not None:
        index = column_map[index]
    return torch.gather(x, -1, index.expand(*x.shape[:-2], n_q, n_k))


def chunk_visibility_mask(n: int, chunk_size: int, memory: int, device=None) -> Tensor:
    """[N, N] bool, True = visible: query p in chunk c = floor(p/C) sees keys
    [max(0, c*C - M), min(N, (c+1)*C)); M < 0: all history (C++ chunk_visibility_mask)."""
    if chunk_size < 1:
        raise ValueError(f"chunk_visibility_mask: chunk size must be >= 1, got {chunk_size}")
    p = torch.arange(n, device=device)
    c0 = torch.div(p, chunk_size, rounding_mode="floor") * chunk_size  # [N] chunk start
    lo = torch.zeros_like(c0) if memory < 0 else (c0 - memory).clamp(min=0)
    hi = (c0 + chunk_size).clamp(max=n)
    j = p.unsqueeze(0)
    return (j >= lo.unsqueeze(1)) & (j < hi.unsqueeze(1))


def _hidden_mask(call: AttentionCall, batch: int, n_q: int, n_k: int, device) -> Optional[Tensor]:
    """[B or 1, 1, Nq, Nk] bool, True = key hidden from the query; None when nothing is hidden."""
    hidden = None
    if call.causal:
        i = torch.arange(n_q, device=device).unsqueeze(1)
        j = torch.arange(n_k, device=device).unsqueeze(0)
        hidden = j > i + call.query_offset  # [Nq, Nk]
    if call.window > 0:  # sliding window: the previous W keys including the query's own
        i = torch.arange(n_q, device=device).unsqueeze(1)
        j = torch.arange(n_k, device=device).unsqueeze(0)
        outside = i + call.query_offset - j >= call.window  # [Nq, Nk]
        hidden = outside if hidden is None else hidden | outside
    if call.visibility_mask is not None:
        vis = call.visibility_mask
        if vis.shape != (n_q, n_k):
            raise ValueError(f"visibility_mask {tuple(vis.shape)} must be [Nq, Nk] = "
                             f"[{n_q}, {n_k}]")
        h = vis.to(device) == 0
        hidden = h if hidden is None else hidden | h
    if hidden is not None:
        hidden = hidden.view(1, 1, n_q, n_k)
    if call.key_padding_mask is not None:
        pad = call.key_padding_mask
        if pad.shape != (batch, n_k):
            raise ValueError(f"key_padding_mask {tuple(pad.shape)} must be [B, Nk] = "
                             f"[{batch}, {n_k}]")
        h = (pad.to(device) == 0).view(batch, 1, 1, n_k)
        hidden = h if hidden is None else hidden | h
    return hidden


def attention_probabilities(q: Tensor, k: Tensor, bias: Optional[Tensor],
                            call: AttentionCall) -> Tensor:
    """p = dropout(softmax_j(s*q.k + bias, hidden -> -inf)), rows with every key hidden = 0.
    q [B, H, Nq, D], k [B, H, Nk, D], bias broadcastable to [B, H, Nq, Nk] -> [B, H, Nq, Nk]."""
    batch, n_q, n_k = q.shape[0], q.shape[2], k.shape[2]
    logits = torch.matmul(q, k.transpose(-1, -2)) * call.scale  # [B, H, Nq, Nk]
    if bias is not None:
        logits = logits + bias
    hidden = _hidden_mask(call, batch, n_q, n_k, q.device)
    if hidden is None:
        p = torch.softmax(logits, dim=-1)
    else:
        dead = hidden.all(dim=-1, keepdim=True)  # [B|1, 1, Nq, 1]: no visible key
        p = torch.softmax(logits.masked_fill(hidden & ~dead, float("-inf")), dim=-1)
        p = p.masked_fill(dead, 0.0)
    if call.training and call.dropout > 0.0:
        p = F.dropout(p, call.dropout, training=True)
    return p


def attend_softmax(q: Tensor, k: Tensor, v: Tensor, bias: Optional[Tensor],
                   call: AttentionCall) -> Tensor:
    """[B, H, Nq, Dv]: the fused kernel's maths (C++ nn::attend_softmax)."""
    return torch.matmul(attention_probabilities(q, k, bias, call), v)


def _check_qkv(name: str, q: Tensor, k: Tensor, v: Tensor, head_dim: int, heads: int = 0):
    if not (q.dim() == 4 and k.dim() == 4 and v.dim() == 4 and q.shape[:2] == k.shape[:2] ==
            v.shape[:2] and q.shape[3] == k.shape[3] and k.shape[2] == v.shape[2]):
        raise ValueError(f"{name}: q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)} must "
                         "be [B, H, Nq, D], [B, H, Nk, D], [B, H, Nk, Dv]")
    if q.shape[3] != head_dim or (heads > 0 and q.shape[1] != heads):
        raise ValueError(f"{name}: q {tuple(q.shape)} does not match heads {heads or 'any'}, "
                         f"head dim {head_dim}")


# ---- RoPE --------------------------------------------------------------------------------

class Rope(nn.Module):
    """RoPE = LRPE Type 2, identity P, frozen theta_k = base^(-2k/D) (C++ Lrpe with rope_options),
    rescaled by `scaling` (config.RopeScaling: linear or llama3; positions.scale_rope_theta).
    Parameter `theta` [D/2] (frozen). Pairs (2k, 2k+1) (adjacent) or (k, k + D/2) (half) turn by
    pos*theta_k: (a cos - b sin, a sin + b cos); angles in float64, cos/sin rounded to x's dtype."""

    def __init__(self, head_dim: int, pairing: str = "adjacent", base: float = 10000.0,
                 scaling=None):
        super().__init__()
        if head_dim < 2 or head_dim % 2:
            raise ValueError(f"RoPE needs an even head dim, got {head_dim}")
        if pairing not in ("adjacent", "half"):
            raise ValueError(f"RoPE pairing {pairing!r} is not adjacent or half")
        self.head_dim, self.pairing = head_dim, pairing
        k = torch.arange(head_dim // 2, dtype=torch.float64)
        theta = torch.pow(torch.tensor(base, dtype=torch.float64), -2.0 * k / head_dim)
        theta = scale_rope_theta(theta, scaling)
        self.theta = nn.Parameter(theta.to(torch.get_default_dtype()), requires_grad=False)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """x [..., N, D], row n at position offset + n -> [..., N, D]."""
        n = x.shape[-2]
        positions = torch.arange(offset, offset + n, dtype=torch.float64, device=x.device)
        angles = positions.unsqueeze(1) * self.theta.detach().to(torch.float64)  # [N, D/2]
        cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
        if self.pairing == "adjacent":
            a, b = x[..., 0::2], x[..., 1::2]  # [..., N, D/2]
            return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
        a, b = x.chunk(2, dim=-1)
        return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)


# ---- bias-only encodings: ALiBi, T5 -------------------------------------------------------

def alibi_slopes(heads: int) -> list:
    """m_h (C++ alibi_slopes): 2^(-8(h+1)/c) for c the largest power of two <= H, then
    2^(-4(2h+1)/c), h = 0, 1, ... until H slopes (the even slopes of the 2c-head model)."""
    if heads < 1:
        raise ValueError(f"alibi_slopes: heads must be >= 1, got {heads}")
    c = 1 << (heads.bit_length() - 1)
    slopes = [2.0 ** (-8.0 * (h + 1) / c) for h in range(c)]
    slopes += [2.0 ** (-4.0 * (2 * h + 1) / c) for h in range(heads - c)]
    return slopes


class Alibi(nn.Module):
    """b_ij = -m_h*|t_ij| added after the scale (symmetric form, causal or not). No parameters."""

    def __init__(self, heads: int):
        super().__init__()
        self.heads = heads
        self.slopes = alibi_slopes(heads)

    def bias(self, n_q: int, n_k: int, query_offset: int, dtype, device) -> Tensor:
        """[H, Nq, Nk], computed in float64 and rounded once to dtype like the C++ table."""
        t = (_relative_index(n_q, n_k, device) - (n_q - 1) - query_offset).to(torch.float64)
        m = torch.tensor(self.slopes, dtype=torch.float64, device=device).view(-1, 1, 1)
        return (-m * t.abs()).to(dtype)

    def attend(self, q: Tensor, k: Tensor, v: Tensor, call: AttentionCall) -> Tensor:
        _check_qkv("Alibi", q, k, v, q.shape[-1], self.heads)
        bias = self.bias(q.shape[2], k.shape[2], call.query_offset, q.dtype, q.device)
        return attend_softmax(q, k, v, bias, call)


def t5_relative_bucket(t: Tensor, bidirectional: bool, num_buckets: int = 32,
                       max_distance: int = 128) -> Tensor:
    """T5's bucket of t = key - query (int64 tensor -> int64 tensor), as C++/HF/Mesh-TF:
    bidirectional: n' = N_b/2, base = n' if t > 0 else 0, n = |t|; else n' = N_b, base = 0,
    n = max(-t, 0). E = n'/2; n < E: base + n; else base + min(n'-1, E + trunc(ln(n/E) /
    ln(L/E) * (n' - E))) with the logarithm and products in float32."""
    _check_t5_options(bidirectional, num_buckets, max_distance)
    t = t.to(torch.int64)
    if bidirectional:
        n_prime = num_buckets // 2
        base = (t > 0).to(torch.int64) * n_prime
        n = t.abs()
    else:
        n_prime = num_buckets
        base = torch.zeros_like(t)
        n = (-t).clamp(min=0)
    exact = n_prime // 2
    log_span = float(torch.tensor(math.log(max_distance / exact), dtype=torch.float32))
    ratio = n.to(torch.float32) / float(exact)
    scaled = torch.log(ratio) / log_span * float(n_prime - exact)  # float32; -inf at n = 0
    large = exact + scaled.clamp(min=0).to(torch.int64)  # truncation toward zero (n >= E here)
    large = large.clamp(max=n_prime - 1)
    return base + torch.where(n < exact, n, large)


def _check_t5_options(bidirectional: bool, num_buckets: int, max_distance: int):
    per_direction = num_buckets // 2 if bidirectional else num_buckets
    if per_direction < 2 or (bidirectional and num_buckets % 2):
        raise ValueError(f"t5: num_buckets = {num_buckets} is too small"
                         f"{' or odd for the bidirectional split' if bidirectional else ''}")
    if max_distance <= per_direction // 2:
        raise ValueError(f"t5: max_distance = {max_distance} must exceed the exact range "
                         f"{per_direction // 2}")


class T5RelativeBias(nn.Module):
    """b_ij = weight[bucket(t_ij), h], added after the scale. Parameter `weight` [N_b, H]
    (nn.Embedding layout), init normal(0, E^-1/2) as in HF / C++."""

    def __init__(self, heads: int, num_buckets: int = 32, max_distance: int = 128,
                 bidirectional: bool = True, init_std: float = 0.02):
        super().__init__()
        _check_t5_options(bidirectional, num_buckets, max_distance)
        self.heads, self.num_buckets = heads, num_buckets
        self.max_distance, self.bidirectional = max_distance, bidirectional
        self.weight = nn.Parameter(torch.empty(num_buckets, heads).normal_(0.0, init_std))

    def bias(self, n_q: int, n_k: int, query_offset: int) -> Tensor:
        """[H, Nq, Nk] (differentiable in weight)."""
        device = self.weight.device
        t = torch.arange(n_q + n_k - 1, device=device) - (n_q - 1) - query_offset  # [n_rel]
        buckets = t5_relative_bucket(t, self.bidirectional, self.num_buckets, self.max_distance)
        table = self.weight[buckets].t()  # [H, n_rel]
        return table[:, _relative_index(n_q, n_k, device)]  # [H, Nq, Nk]

    def attend(self, q: Tensor, k: Tensor, v: Tensor, call: AttentionCall) -> Tensor:
        _check_qkv("T5RelativeBias", q, k, v, q.shape[-1], self.heads)
        return attend_softmax(q, k, v, self.bias(q.shape[2], k.shape[2], call.query_offset), call)


# ---- table-based encodings: Shaw, Transformer-XL, skew ------------------------------------

def _glorot_uniform_(t: Tensor, rows: int, cols: int) -> Tensor:
    bound = math.sqrt(6.0 / (rows + cols))
    with torch.no_grad():
        return t.uniform_(-bound, bound)


class ShawRelativeEncoding(nn.Module):
    """Shaw et al. 2018, tables shared by the heads: kappa(t) = clip(t, -K_l, K_r) + K_l,
    l_ij = s*q_i.(k_j + E^K[kappa(t_ij)]), o_i = sum_j p_ij (v_j + E^V[kappa(t_ij)]) with values.
    Row r of `key_table` / `value_table` [K_l + K_r + 1, D] is the clipped distance r - K_l
    (t = j - i - off: K_l clips the past, K_r the future)."""

    def __init__(self, head_dim: int, clip: int = 16, clip_left: Optional[int] = None,
                 clip_right: Optional[int] = None, values: bool = False):
        super().__init__()
        self.head_dim = head_dim
        self.clip_left = clip if clip_left is None or clip_left < 0 else clip_left
        self.clip_right = clip if clip_right is None or clip_right < 0 else clip_right
        if head_dim <= 0 or self.clip_left < 0 or self.clip_right < 0:
            raise ValueError(f"shaw: head_dim {head_dim} must be positive and the clip distances "
                             f"(left {self.clip_left}, right {self.clip_right}) non-negative")
        rows = self.clip_left + self.clip_right + 1
        self.key_table = nn.Parameter(_glorot_uniform_(torch.empty(rows, head_dim), rows, head_dim))
        self.value_table = (nn.Parameter(_glorot_uniform_(torch.empty(rows, head_dim), rows,
                                                          head_dim)) if values else None)

    def buckets(self, n_q: int, n_k: int, query_offset: int, device) -> Tensor:
        """[Nq, Nk] int64: kappa(t_ij)."""
        t = _relative_index(n_q, n_k, device) - (n_q - 1) - query_offset
        return t.clamp(-self.clip_left, self.clip_right) + self.clip_left

    def attend(self, q: Tensor, k: Tensor, v: Tensor, call: AttentionCall) -> Tensor:
        _check_qkv("ShawRelativeEncoding", q, k, v, self.head_dim)
        b, h, n_q, n_k = q.shape[0], q.shape[1], q.shape[2], k.shape[2]
        kappa = self.buckets(n_q, n_k, call.query_offset, q.device)  # [Nq, Nk]
        x = torch.matmul(q, (self.key_table * call.scale).t())  # [B, H, Nq, R]: s*q.E^K[r]
        index = kappa.expand(b, h, n_q, n_k)
        p = attention_probabilities(q, k, torch.gather(x, -1, index), call)  # [B, H, Nq, Nk]
        out = torch.matmul(p, v)  # [B, H, Nq, Dv]
        if self.value_table is not None:
            # W[i, r] = sum_{j: kappa(t_ij) = r} p_ij: [B, H, Nq, R]; o += W.E^V.
            w = p.new_zeros(b, h, n_q, self.value_table.shape[0]).scatter_add(-1, index, p)
            out = out + torch.matmul(w, self.value_table)
        return out


class RelativeXlEncoding(nn.Module):
    """Transformer-XL / ESPnet relative attention, per head h:
    l_ij = s*[(q_i + u_h).k_j + (q_i + v_h).p_h(rho_ij)], rho_ij = -t_ij = i + off - j,
    p_h(rho) = head h's D-block of linear_pos(pe(rho)), omega_c = base^(-2c/d_pe),
    interleaved pe[2c] = sin(rho omega_c), pe[2c+1] = cos; concatenated pe[c] = sin,
    pe[d_pe/2 + c] = cos. Parameters (ESPnet names): `pos_bias_u`, `pos_bias_v` [H, D],
    `linear_pos.weight` [H*D, d_pe] (no bias)."""

    def __init__(self, heads: int, head_dim: int, pe_dim: Optional[int] = None,
                 base: float = 10000.0, layout: str = "interleaved"):
        super().__init__()
        self.heads, self.head_dim = heads, head_dim
        self.pe_dim = pe_dim if pe_dim else heads * head_dim
        self.base, self.layout = base, layout
        if heads <= 0 or head_dim <= 0 or self.pe_dim % 2:
            raise ValueError(f"transformer_xl: heads {heads} and head_dim {head_dim} must be "
                             f"positive and pe_dim {self.pe_dim} even")
        if layout not in ("interleaved", "concatenated"):
            raise ValueError(f"transformer_xl: layout {layout!r} is not interleaved or "
                             "concatenated")
        self.linear_pos = nn.Linear(self.pe_dim, heads * head_dim, bias=False)
        self.pos_bias_u = nn.Parameter(_glorot_uniform_(torch.empty(heads, head_dim), heads,
                                                        head_dim))
        self.pos_bias_v = nn.Parameter(_glorot_uniform_(torch.empty(heads, head_dim), heads,
                                                        head_dim))

    def sinusoids(self, t_min: int, count: int, dtype, device) -> Tensor:
        """pe(rho) for rho = -t, t = t_min ... t_min + count - 1: [count, d_pe] (float64, rounded
        once to dtype like the C++ relative_sinusoids)."""
        half = self.pe_dim // 2
        c = torch.arange(half, dtype=torch.float64, device=device)
        omega = torch.pow(torch.tensor(self.base, dtype=torch.float64, device=device),
                          -2.0 * c / self.pe_dim)  # [d_pe/2]
        rho = -(torch.arange(count, dtype=torch.float64, device=device) + t_min)  # [count]
        angle = rho.unsqueeze(1) * omega  # [count, d_pe/2]
        sin, cos = angle.sin(), angle.cos()
        if self.layout == "interleaved":
            pe = torch.stack((sin, cos), dim=-1).flatten(-2)
        else:
            pe = torch.cat((sin, cos), dim=-1)
        return pe.to(dtype)

    def attend(self, q: Tensor, k: Tensor, v: Tensor, call: AttentionCall) -> Tensor:
        _check_qkv("RelativeXlEncoding", q, k, v, self.head_dim, self.heads)
        n_q, n_k = q.shape[2], k.shape[2]
        t_min, count = -(n_q - 1) - call.query_offset, n_q + n_k - 1
        pe = self.sinusoids(t_min, count, self.linear_pos.weight.dtype, q.device)
        # s*P: [count, H*D] -> [H, count, D]
        p = self.linear_pos(pe) * call.scale
        p = p.view(count, self.heads, self.head_dim).transpose(0, 1)
        u = self.pos_bias_u.view(1, self.heads, 1, self.head_dim)
        w = self.pos_bias_v.view(1, self.heads, 1, self.head_dim)
        position = _skew(torch.matmul(q + w, p.transpose(-1, -2)), n_k)  # [B, H, Nq, Nk]
        return attend_softmax(q + u, k, v, position, call)


class SkewRelativeEncoding(nn.Module):
    """Generalised skew: l_ij = s*(q_i.k_j + q_i.E[t_ij]) with `table` [2L - 1, D] (or
    [H, 2L - 1, D] per head) in ascending t, row r <-> t = r - (L - 1); |t| >= L is an error."""

    def __init__(self, head_dim: int, max_len: int = 512, heads: int = 1, per_head: bool = False):
        super().__init__()
        if head_dim <= 0 or max_len <= 0 or heads <= 0:
            raise ValueError(f"skew: head_dim {head_dim}, max_len {max_len} and heads {heads} must "
                             "be positive")
        self.head_dim, self.max_len, self.heads, self.per_head = head_dim, max_len, heads, per_head
        rows = 2 * max_len - 1
        shape = (heads, rows, head_dim) if per_head else (rows, head_dim)
        self.table = nn.Parameter(_glorot_uniform_(torch.empty(shape), rows, head_dim))

    def attend(self, q: Tensor, k: Tensor, v: Tensor, call: AttentionCall) -> Tensor:
        _check_qkv("SkewRelativeEncoding", q, k, v, self.head_dim,
                   self.heads if self.per_head else 0)
        n_q, n_k = q.shape[2], k.shape[2]
        reach = self.max_len - 1
        t_min, t_max = -(n_q - 1) - call.query_offset, n_k - 1 - call.query_offset
        if t_min < -reach or t_max > reach:
            raise ValueError(f"skew: n_q = {n_q}, n_k = {n_k} at query_offset {call.query_offset} "
                             f"need relative distances {t_min} ... {t_max}, but the table was "
                             f"built for max_len = {self.max_len} (|t| <= {reach})")
        rows = self.table.narrow(-2, t_min + reach, n_q + n_k - 1) * call.scale  # [(H,) n_rel, D]
        x = torch.matmul(q, rows.transpose(-1, -2))  # [B, H, Nq, n_rel]
        return attend_softmax(q, k, v, _skew(x, n_k), call)


# ---- the layer ----------------------------------------------------------------------------

def _t5_from_config(config: RotaConfig, causal: bool) -> T5RelativeBias:
    pc = config.position
    bidirectional = pc.bidirectional if pc.bidirectional is not None else not causal
    return T5RelativeBias(config.heads, pc.buckets, pc.max_distance, bidirectional,
                          init_std=1.0 / math.sqrt(config.width))


def make_shared_t5(config: RotaConfig, causal: bool) -> Optional[T5RelativeBias]:
    """The one T5 table of a softmax stack (C++ Encoder), None for every other encoding. Give it
    to every block's SoftmaxAttention; the first (owns_shared=True) registers it."""
    if config.attention != "softmax" or config.position.kind != "t5":
        return None
    return _t5_from_config(config, causal)


class SoftmaxAttention(nn.Module):
    """Multi-head softmax attention (C++ nn::SoftmaxAttention as a block builds it):
    q = x W_q^T + b_q, ... split into H heads of D = E/H, the encoding, softmax with the scale
    s = config.softmax_scale or 1/sqrt(D), causal / key padding / streaming chunk masks,
    attention dropout on the probabilities (training), heads merged, out_proj."""

    def __init__(self, config: RotaConfig, causal: bool, shared_t5: Optional[T5RelativeBias] = None,
                 owns_shared: bool = True):
        super().__init__()
        e, h = config.width, config.heads
        if e <= 0 or h <= 0 or e % h:
            raise ValueError(f"model.width {e} must be a positive multiple of heads {h}")
        pc = config.position
        if pc.kind in LINEAR_ONLY:
            raise ValueError(f"model.position.{pc.kind}: acts on linear-attention features; "
                             "softmax attention takes none, sinusoidal, learned_absolute, "
                             "rope, alibi, t5, shaw, transformer_xl or skew")
        if not 0.0 <= config.attention_dropout < 1.0:
            raise ValueError(f"attention dropout {config.attention_dropout} is outside [0, 1)")
        if config.stream_chunk < 0:
            raise ValueError(f"streaming chunk must be >= 0, got {config.stream_chunk}")
        if shared_t5 is not None and pc.kind != "t5":
            raise ValueError(f"shared_t5 given but the encoding is {pc.kind!r}")
        self.dim, self.heads, self.head_dim = e, h, e // h
        self.kv_heads = config.key_value_heads
        if self.kv_heads < 1 or h % self.kv_heads:
            raise ValueError(f"model.kv_heads {self.kv_heads} must be >= 1 and divide heads {h}")
        self.causal = causal
        self.scale = (config.softmax_scale if config.softmax_scale is not None
                      else 1.0 / math.sqrt(self.head_dim))
        self.attention_dropout = config.attention_dropout
        self.stream_chunk, self.stream_left_memory = config.stream_chunk, config.stream_left_memory
        if config.window < 0:
            raise ValueError(f"window must be >= 0 (0 = full), got {config.window}")
        self.window = config.window
        d = self.head_dim
        # Shaw, XL and skew are built before the projections, T5 after them (the C++ order).
        relative = None
        if pc.kind == "shaw":
            relative = ShawRelativeEncoding(d, pc.clip, pc.clip_left, pc.clip_right, pc.values)
        elif pc.kind == "transformer_xl":
            relative = RelativeXlEncoding(h, d, pc.pe_width, pc.base, pc.layout)
        elif pc.kind == "skew":
            relative = SkewRelativeEncoding(d, pc.max_len, h, pc.per_head)
        qkv_bias = config.has_bias("qkv")
        kv = self.kv_heads * d
        self.q_proj = self._linear(e, e, config.init_std, qkv_bias)
        self.k_proj = self._linear(e, kv, config.init_std, qkv_bias)
        self.v_proj = self._linear(e, kv, config.init_std, qkv_bias)
        self.out_proj = self._linear(e, e, config.init_std, config.has_bias("attention_out"))
        self._borrowed = None  # a shared T5 table owned (registered) by another layer
        if pc.kind == "rope":
            self.rope = Rope(d, pc.pairing, pc.base, pc.scaling)
        elif pc.kind == "alibi":
            relative = Alibi(h)
        elif pc.kind == "t5":
            if shared_t5 is None:
                relative = _t5_from_config(config, causal)
            elif owns_shared:
                relative = shared_t5
            else:
                self._borrowed = (shared_t5,)  # a tuple: not registered, no state_dict keys
        elif pc.kind not in NOTHING_INSIDE + ("shaw", "transformer_xl", "skew"):
            raise ValueError(f"model.position: unknown encoding {pc.kind!r}")
        if relative is not None:
            self.position = relative

    @staticmethod
    def _linear(n_in: int, n_out: int, init_std: float, bias: bool = True) -> nn.Linear:
        """C++ Linear: normal(0, init_std) weight and zero bias, or PyTorch's default when 0."""
        layer = nn.Linear(n_in, n_out, bias=bias)
        if init_std > 0:
            with torch.no_grad():
                layer.weight.normal_(0.0, init_std)
                if bias:
                    layer.bias.zero_()
        return layer

    @property
    def relative_encoding(self) -> Optional[nn.Module]:
        """ALiBi, T5 (own or shared), Shaw, XL or skew; None for none / absolute / RoPE."""
        if self._borrowed is not None:
            return self._borrowed[0]
        return self._modules.get("position")

    def _repeat_kv(self, t: Tensor) -> Tensor:
        """[B, H_kv, N, D] -> [B, H, N, D]: key/value head j serves query heads j*G ... j*G + G - 1
        (G = H / H_kv)."""
        group = self.heads // self.kv_heads
        return t if group == 1 else t.repeat_interleave(group, dim=1)

    def attend(self, q: Tensor, k: Tensor, v: Tensor, key_padding_mask: Optional[Tensor] = None,
               visibility_mask: Optional[Tensor] = None, query_offset: int = 0) -> Tensor:
        """The per-head part: q [B, H, Nq, D], k [B, H_kv, Nk, D], v [B, H_kv, Nk, D] (H_kv = H, or
        kv_heads) -> [B, H, Nq, D]."""
        if k.dim() == 4 and k.shape[1] == self.kv_heads:
            k, v = self._repeat_kv(k), self._repeat_kv(v)
        rope = self._modules.get("rope")
        if rope is not None:  # queries at off + i, keys at j
            q, k = rope(q, query_offset), rope(k, 0)
        call = AttentionCall(scale=self.scale, causal=self.causal, query_offset=query_offset,
                             window=self.window, key_padding_mask=key_padding_mask, visibility_mask=visibility_mask,
                             dropout=self.attention_dropout, training=self.training)
        relative = self.relative_encoding
        if relative is None:
            return attend_softmax(q, k, v, None, call)
        return relative.attend(q, k, v, call)

    def step(self, x: Tensor, cache: dict) -> Tensor:
        """One token of causal self-attention, x [B, E] -> [B, E] at position len(cache): its
        key and value (unrotated) are appended to cache["k"], cache["v"] [B, H_kv, n, D] (the C++
        SoftmaxAttention::step; with a window only the last W are kept)."""
        if not self.causal:
            raise ValueError("SoftmaxAttention: step() needs a causal layer")
        b, e = x.shape
        h, hkv, d = self.heads, self.kv_heads, self.head_dim
        q = self.q_proj(x).view(b, h, 1, d)
        k = self.k_proj(x).view(b, hkv, 1, d)
        v = self.v_proj(x).view(b, hkv, 1, d)
        if cache.get("k") is not None:
            k, v = torch.cat([cache["k"], k], dim=2), torch.cat([cache["v"], v], dim=2)
        if self.window > 0 and k.shape[2] > self.window:
            k, v = k[:, :, -self.window:], v[:, :, -self.window:]
        cache["k"], cache["v"] = k, v
        o = self.attend(q, k, v, query_offset=k.shape[2] - 1)  # [B, H, 1, D]
        return self.out_proj(o.reshape(b, e))

    def forward(self, x: Tensor, key_padding_mask: Optional[Tensor] = None, *,
                key_value_input: Optional[Tensor] = None, query_offset: int = 0) -> Tensor:
        """Self-attention x [B, N, E] -> [B, N, E]; key_padding_mask [B, N] (1/True = real key)
        or None. With config.stream_chunk > 0 the WeNet chunk visibility mask applies (self-
        attention only, as in the C++ block). Cross-attention (key_value_input [B, Nk, E],
        query i at key position query_offset + i) is the C++ layer's second form."""
        b, n_q, e = x.shape
        if e != self.dim:
            raise ValueError(f"SoftmaxAttention: x {tuple(x.shape)} must be [B, N, {self.dim}]")
        kv = x if key_value_input is None else key_value_input
        n_k = kv.shape[1]
        visibility = None
        if self.stream_chunk > 0:
            if key_value_input is not None or query_offset != 0:
                raise ValueError("SoftmaxAttention: the streaming chunk mask is for self-attention")
            visibility = chunk_visibility_mask(n_q, self.stream_chunk, self.stream_left_memory,
                                               x.device)
        h, hkv, d = self.heads, self.kv_heads, self.head_dim
        q = self.q_proj(x).view(b, n_q, h, d).transpose(1, 2)  # [B, H, Nq, D]
        k = self.k_proj(kv).view(b, n_k, hkv, d).transpose(1, 2)  # [B, H_kv, Nk, D]
        v = self.v_proj(kv).view(b, n_k, hkv, d).transpose(1, 2)  # [B, H_kv, Nk, D]
        o = self.attend(q, k, v, key_padding_mask, visibility, query_offset)  # [B, H, Nq, D]
        return self.out_proj(o.transpose(1, 2).reshape(b, n_q, e))
