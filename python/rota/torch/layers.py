# Building blocks of Rota's models in PyTorch: norms, feed-forward, activations, feature maps.
import torch
import torch.nn as nn
import torch.nn.functional as F


def activation(name, x):
    """The FFN activation of `model.ffn_activation`."""
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


class FeedForward(nn.Module):
    """fc2(act(fc1(x))) with dropout on the hidden activations (training only)."""

    def __init__(self, dim, hidden, activation_name, dropout):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.activation = activation_name
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):  # [..., E] → [..., E]
        return self.fc2(self.dropout(activation(self.activation, self.fc1(x))))
