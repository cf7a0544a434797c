# Positional encodings of linear attention (LRPE, RoPE, PermuteFormer) and the absolute ones.
"""LRPE (Qin et al. 2023) on attention features: y_s = Λ(s) P x_s.

  P: identity, Householder I − 2wwᵀ (w = v/(‖v‖ + 1e-6) when v is learned; a unit v when
     frozen), or the odd-even channel permutation (even channels first, then odd ones).
  Λ(s): Type 1 (unitary): [u ⊙ cos(sθ), u ⊙ sin(sθ)] with D angles (features double to 2D);
        Type 2 (orthogonal): pairs rotated by sθ_k, adjacent (2k, 2k+1) or half (k, k + D/2),
                 an odd last channel copied;
        Type 3 (permutation): u permuted by π^s (a fixed random permutation π).
RoPE is Type 2 with identity P and frozen θ. PermuteFormer is π^s before φ plus a per-head
decay γ_h = σ(3h/H + 2).
"""
import math

import numpy as np
import torch
import torch.nn as nn


def permutation_powers(permutation, offset, n):
    """[n, D] int64: row r is π^(offset + r) as an index vector (y[j] = u[table[r, j]])."""
    pi = [int(x) for x in permutation.tolist()]
    d = len(pi)
    cycle_of, pos, cycles = [-1] * d, [0] * d, []
    for j in range(d):
        if cycle_of[j] >= 0:
            continue
        cycle, x = [], j
        while cycle_of[x] < 0:
            cycle_of[x], pos[x] = len(cycles), len(cycle)
            cycle.append(x)
            x = pi[x]
        cycles.append(cycle)
    table = np.empty((n, d), dtype=np.int64)
    steps = np.arange(offset, offset + n, dtype=np.int64)
    for j in range(d):
        cycle = np.asarray(cycles[cycle_of[j]], dtype=np.int64)
        table[:, j] = cycle[(pos[j] + steps % len(cycle)) % len(cycle)]
    return torch.from_numpy(table)


def odd_even_index(d):
    """u[j] = x[index[j]]: even j take x[j/2], odd j take x[⌈D/2⌉ + (j−1)/2]."""
    h = (d + 1) // 2
    return torch.tensor([j // 2 if j % 2 == 0 else h + (j - 1) // 2 for j in range(d)])


class Lrpe(nn.Module):
    """LRPE on per-head features x [..., N, D] at positions offset … offset + N − 1."""

    def __init__(self, head_dim, type=2, pairing="adjacent", p="householder", learn_theta=True,
                 theta_base=10000.0):
        super().__init__()
        if head_dim < 2:
            raise ValueError(f"Lrpe: head_dim must be at least 2, got {head_dim}")
        self.head_dim, self.type, self.pairing, self.p = head_dim, type, pairing, p
        d = head_dim
        if type != 3:
            m = d if type == 1 else d // 2
            denom = d - d % 2 if type == 2 and not learn_theta else d
            theta = torch.tensor([theta_base ** (-2.0 * j / denom) for j in range(m)])
            self.theta = nn.Parameter(theta, requires_grad=learn_theta)
        if p in ("householder", "householder_frozen"):
            v = torch.randn(d)
            if p == "householder_frozen":
                v = v / v.norm()
            self.householder_v = nn.Parameter(v, requires_grad=p == "householder")
        if type == 3:
            self.register_buffer("permutation", torch.randperm(d))
        if p == "odd_even":
            self.register_buffer("odd_even", odd_even_index(d), persistent=False)

    @property
    def feature_dim(self):
        return 2 * self.head_dim if self.type == 1 else self.head_dim

    @property
    def makes_features_signed(self):
        return not (self.type == 3 and self.p in ("identity", "odd_even"))

    def apply_p(self, x):  # [..., D] → [..., D]
        if self.p == "householder":
            w = self.householder_v / (self.householder_v.norm() + 1e-6)
        elif self.p == "householder_frozen":
            w = self.householder_v
        elif self.p == "odd_even":
            return x.index_select(-1, self.odd_even)
        else:
            return x
        return x - 2.0 * (x @ w).unsqueeze(-1) * w

    def forward(self, x, offset=0):  # [..., N, D] → [..., N, F]
        n, d = x.shape[-2], self.head_dim
        u = self.apply_p(x)
        if self.type == 3:
            index = permutation_powers(self.permutation, offset, n).to(x.device)
            return torch.gather(u, -1, index.expand(*u.shape[:-2], n, d))
        # Angles s·θ_k in float64 (as Rota does: float32 angles lose ~3e-5 by position 512),
        # their cos and sin rounded once to the model's dtype.
        positions = torch.arange(offset, offset + n, device=x.device, dtype=torch.float64)
        angles = positions[:, None] * self.theta.to(torch.float64)[None, :]  # [N, m]
        cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
        if self.type == 1:
            return torch.cat([u * cos, u * sin], dim=-1)
        m = d // 2
        if self.pairing == "adjacent":
            a, b = u[..., 0:2 * m:2], u[..., 1:2 * m:2]
            rotated = torch.stack([a * cos - b * sin, b * cos + a * sin], dim=-1)
            rotated = rotated.flatten(-2)
        else:
            a, b = u[..., :m], u[..., m:2 * m]
            rotated = torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)
        if d % 2:
            rotated = torch.cat([rotated, u[..., 2 * m:]], dim=-1)
        return rotated


def scale_rope_theta(theta, scaling):
    """θ [D/2] (float64) rescaled by a RopeScaling (config.py), in float64; None: unchanged.
    linear: θ_k / factor. llama3: λ_k = 2π/θ_k, L = original_max_positions; θ_k / factor where
    λ_k > L/low_freq_factor, θ_k where λ_k < L/high_freq_factor, and in between
    (1 − s)·θ_k/factor + s·θ_k with s = (L/λ_k − low_freq_factor)/(high − low_freq_factor)."""
    if scaling is None:
        return theta
    theta = theta.to(torch.float64)
    if scaling.kind == "linear":
        return theta / scaling.factor
    if scaling.kind != "llama3":
        raise ValueError(f"unknown RoPE scaling {scaling.kind!r}")
    low, high = scaling.low_freq_factor, scaling.high_freq_factor
    context = float(scaling.original_max_positions)
    wavelength = 2.0 * math.pi / theta
    smooth = (context / wavelength - low) / (high - low)
    between = (1.0 - smooth) * theta / scaling.factor + smooth * theta
    scaled = torch.where(wavelength > context / low, theta / scaling.factor, between)
    return torch.where(wavelength < context / high, theta, scaled)


def rope(head_dim, pairing="adjacent", base=10000.0, scaling=None):
    """RoPE as an Lrpe: Type 2, identity P, frozen θ_k = base^(−2k/D), rescaled by `scaling`
    (a RopeScaling, or None)."""
    lrpe = Lrpe(head_dim, type=2, pairing=pairing, p="identity", learn_theta=False,
                theta_base=base)
    if scaling is not None:
        m = head_dim // 2
        unscaled = torch.tensor([base ** (-2.0 * j / (head_dim - head_dim % 2))
                                 for j in range(m)], dtype=torch.float64)
        with torch.no_grad():
            lrpe.theta.copy_(scale_rope_theta(unscaled, scaling).to(lrpe.theta.dtype))
    return lrpe


class PermuteFormer(nn.Module):
    """π^s on the features before φ, and the per-head decay γ_h = σ(3h/H + 2)."""

    def __init__(self, heads, head_dim):
        super().__init__()
        self.heads = heads
        self.register_buffer("permutation", torch.randperm(head_dim))

    def permute(self, x, offset=0):  # [..., N, D] → [..., N, D]
        n, d = x.shape[-2], x.shape[-1]
        index = permutation_powers(self.permutation, offset, n).to(x.device)
        return torch.gather(x, -1, index.expand(*x.shape[:-2], n, d))

    def decay(self, dtype=torch.float32, device=None):  # [H]
        h = torch.arange(self.heads, dtype=torch.float64, device=device)
        return torch.sigmoid(3.0 * h / self.heads + 2.0).to(dtype)


def sinusoidal_table(n, dim, offset=0, base=10000.0, dtype=torch.float32, device=None):
    """[n, dim]: pe[s, c] = sin(s·ω) for even c, cos(s·ω) for odd c, ω = base^(−2⌊c/2⌋/dim)."""
    pos = torch.arange(offset, offset + n, dtype=torch.float64, device=device)[:, None]
    c = torch.arange(dim, dtype=torch.float64, device=device)
    omega = base ** (-2.0 * torch.div(c, 2, rounding_mode="floor") / dim)
    angles = pos * omega
    table = torch.where(c.long() % 2 == 0, torch.sin(angles), torch.cos(angles))
    return table.to(dtype)


class LearnedPositionEmbedding(nn.Module):
    """A trained table of max_positions rows added to the token embeddings."""

    def __init__(self, max_positions, dim, init_std=0.02):
        super().__init__()
        self.max_positions = max_positions
        self.weight = nn.Parameter(torch.randn(max_positions, dim) * init_std)

    def forward(self, n, offset=0):  # → [n, E]
        if offset < 0 or offset + n > self.max_positions:
            raise ValueError(f"LearnedPositionEmbedding: positions {offset}..{offset + n - 1} "
                             f"requested but the table covers only {self.max_positions} "
                             "(learned absolute positions cannot extrapolate)")
        return self.weight[offset:offset + n]
