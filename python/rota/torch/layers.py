# Building blocks of Rota's models in PyTorch: norms, feed-forward, activations, feature maps.
import torch
import torch.nn as nn
import torch.nn.functional as F


GATED = {"swiglu": "silu", "geglu": "gelu"}  # gated FFN activation → the gate's activation


def activation(name, x):
    """The FFN activation of `model.ffn_activation` (ungated; for swiglu / geglu, the gate's)."""
    if name == "relu":
        return F.relu(x)
    if name == "gelu":
        return F.gelu(x)  # exact, x·Φ(x)
    if name == "gelu_tanh":
        return F.gelu(x, approximate="tanh")
    if name == "silu":
        return F.silu(x)
    raise ValueError(f"unknown activation {name!r}")


def feature_map(name, x):
    """φ of linear attention (`model.attention.linear.feature_map`)."""
    if name == "one_plus_elu":
        return 1.0 + F.elu(x)
    if name == "relu":
        return F.relu(x)
    if name == "silu":
        return F.silu(x)
    if name == "identity":
        return x
    if name == "exp":
        return torch.exp(x)
    raise ValueError(f"unknown feature map {name!r}")


class RMSNorm(nn.Module):
    """y = x / √(mean(x²) + eps) · weight over the last dimension."""

    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):  # [..., E] → [..., E]
        rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x * rstd * self.weight


class LayerNorm(nn.Module):
    """torch's LayerNorm with the bias β optional (`model.bias: false` drops it)."""

    def __init__(self, dim, eps, bias=True):
        super().__init__()
        self.dim, self.eps = dim, eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim)) if bias else None

    def forward(self, x):  # [..., E] → [..., E]
        return F.layer_norm(x, (self.dim,), self.weight, self.bias, self.eps)


def make_norm(kind, dim, eps, bias=True):
    """A block norm of `model.norm_kind`: "layer_norm" (β unless bias is False) or "rms_norm"."""
    if kind == "rms_norm":
        return RMSNorm(dim, eps)
    if kind == "layer_norm":
        return LayerNorm(dim, eps, bias)
    raise ValueError(f"unknown norm kind {kind!r}")


class FeedForward(nn.Module):
    """fc2(act(fc1(x))) with dropout on the hidden activations (training only); gated
    (activation "swiglu" or "geglu", Shazeer 2020): down_proj(act(gate_proj(x)) ⊙ up_proj(x)),
    act silu or exact gelu. bias=False: no projection has a bias."""

    def __init__(self, dim, hidden, activation_name, dropout, bias=True):
        super().__init__()
        self.gated = activation_name in GATED
        if self.gated:
            self.gate_proj = nn.Linear(dim, hidden, bias=bias)
            self.up_proj = nn.Linear(dim, hidden, bias=bias)
            self.down_proj = nn.Linear(hidden, dim, bias=bias)
        else:
            self.fc1 = nn.Linear(dim, hidden, bias=bias)
            self.fc2 = nn.Linear(hidden, dim, bias=bias)
        self.activation = activation_name
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):  # [..., E] → [..., E]
        if self.gated:  # [..., F] gated hidden
            hidden = activation(GATED[self.activation], self.gate_proj(x)) * self.up_proj(x)
            return self.down_proj(self.dropout(hidden))
        return self.fc2(self.dropout(activation(self.activation, self.fc1(x))))
