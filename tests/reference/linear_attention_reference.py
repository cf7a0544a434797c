#!/usr/bin/python3
"""Writes golden cases for Rota's LinearAttention layer with LRPE (tests/golden/linear_attention/).

An independent PyTorch implementation of the layer from ../shared/design/lrpe.md: projections
with biases, phi = 1 + elu, LRPE (P then Lambda(s)), attention without a denominator (causal:
tril(QK^T)V; bidirectional: Q(K^T V) with padded keys removed), LayerNorm over the model width,
output projection. The decay/gating cases add RetNet's and TransNormerLLM's fixed per-head decays
(pairs weighted by gamma^(i-j) in the masked N x N form), a per-head GroupNorm instead of the
LayerNorm, and a swish or sigmoid output gate; the gating cases (learnable decay, GLA, Mamba-2's
SSD, DeltaNet, Gated DeltaNet) run the published recurrences token by token. Each case stores the parameters (Rota's dotted names), the input, the
upstream gradient, the output and every gradient, in float64.

Run with Debian's python3-torch:  /usr/bin/python3 tests/reference/linear_attention_reference.py
"""
import json
import math
import os

import torch

torch.set_num_threads(2)
torch.set_flush_denormal(True)
torch.set_default_dtype(torch.float64)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden", "linear_attention")
B, N, E, H = 2, 7, 8, 2
D = E // H


def thetas(core, d):
    m = d if core == "type1" else d // 2
    return torch.tensor([10000.0 ** (-2.0 * j / d) for j in range(m)])


def odd_even_index(d):
    h = (d + 1) // 2
    return [j // 2 if j % 2 == 0 else h + (j - 1) // 2 for j in range(d)]


def apply_p(x, p, v):
    if p == "identity":
        return x
    if p == "householder":
        w = v / (v.norm() + 1e-6)  # learnable Householder: normalised in every forward
        return x - 2.0 * (x @ w).unsqueeze(-1) * w
    if p == "odd_even":
        return x[..., odd_even_index(x.shape[-1])]
    raise ValueError(p)


def perm_powers(perm, n):
    # idx_0 = identity, idx_s[j] = idx_{s-1}[perm[j]]
    d = len(perm)
    idx = list(range(d))
    rows = []
    for _ in range(n):
        rows.append(list(idx))
        idx = [idx[perm[j]] for j in range(d)]
    return torch.tensor(rows)


def apply_core(u, core, theta, perm):
    n, d = u.shape[-2], u.shape[-1]
    s = torch.arange(n, dtype=torch.float64).unsqueeze(-1)
    if core == "type1":
        a = s * theta
        return torch.cat([u * torch.cos(a), u * torch.sin(a)], dim=-1)
    if core == "type2":
        a = s * theta  # [N, D/2], adjacent pairs (2k, 2k+1)
        out = u.clone()
        x0, x1 = u[..., 0::2][..., : d // 2], u[..., 1::2][..., : d // 2]
        y0 = x0 * torch.cos(a) - x1 * torch.sin(a)
        y1 = x0 * torch.sin(a) + x1 * torch.cos(a)
        out = torch.stack([y0, y1], dim=-1).reshape(*u.shape[:-1], 2 * (d // 2))
        if d % 2:
            out = torch.cat([out, u[..., -1:]], dim=-1)
        return out
    if core == "type3":
        table = perm_powers(perm, n)  # [N, D]
        return torch.gather(u, -1, table.expand(u.shape))
    raise ValueError(core)


def alibi_slopes(h):
    # The ALiBi reference's recursion (TransNormerLLM builds its decay from these slopes).
    def power_of_2(n):
        start = 2.0 ** (-(2.0 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(h).is_integer():
        return power_of_2(h)
    c = 2 ** math.floor(math.log2(h))
    return power_of_2(c) + alibi_slopes(2 * c)[0::2][: h - c]


def decay_rates(extra):
    kind = extra.get("decay", "none")
    if kind == "retnet":
        return [1.0 - 2.0 ** (-5 - h) for h in range(H)]
    if kind == "transnormer":
        layer_index, layers = extra["layer"], extra["layers"]
        depth = 0.0 if layers == 1 else layer_index / (layers - 1)
        return [math.exp(-m * (1.0 - depth + 1e-5)) for m in alibi_slopes(H)]
    return None


def gated_recurrence(x, q, k, v, params, extra):
    """The published recurrences, token by token: S_t = diag(a_t) S_{t-1} + k_t^T v_t (GLA:
    a_t = sigmoid(x Wd Wu + b)^(1/tau) per key channel; Mamba-2: a_t = exp(-dt_t A_h) per head
    with dt_t = softplus(x w + b) also scaling k_t; learnable decay: a_h = exp(-exp(w_h))), or
    the delta rule S_t = a_t (I - beta_t k_t^T k_t) S_{t-1} + beta_t k_t^T v_t with L2-normalised
    q, k and beta_t = sigmoid(x w + b); o_t = q_t S_t. q, k [B, H, N, F]; v [B, H, N, D]."""
    f = q.shape[-1]
    gating, rule = extra.get("gating"), extra.get("rule", "additive")
    log_a = None  # [B, H, N, F] or [B, H, N, 1]
    if gating == "gla":
        z = (x @ params["state_gate.gate_down.weight"].T) @ params["state_gate.gate_up.weight"].T
        z = z + params["state_gate.gate_up.bias"]
        log_a = (torch.nn.functional.logsigmoid(z) / extra["gla_temperature"])
        log_a = log_a.reshape(B, N, H, f).permute(0, 2, 1, 3)
    elif gating == "ssd":
        dt = torch.nn.functional.softplus(x @ params["state_gate.dt_proj.weight"].T
                                          + params["state_gate.dt_bias"])  # [B, N, H]
        dt = dt.permute(0, 2, 1).unsqueeze(-1)  # [B, H, N, 1]
        log_a = -dt * torch.exp(params["state_gate.a_log"]).reshape(1, H, 1, 1)
        if rule == "additive":
            k = k * dt
    elif extra.get("learnable_decay"):
        rate = -torch.exp(params["state_gate.decay_log_rate"])
        log_a = rate.reshape(1, H, 1, 1).expand(B, H, N, 1)
    if rule == "delta":
        q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6)
        k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
        beta = torch.sigmoid(x @ params["state_gate.beta_proj.weight"].T
                             + params["state_gate.beta_proj.bias"]).permute(0, 2, 1)  # [B, H, N]
    state = torch.zeros(B, H, f, D)
    outputs = []
    for t in range(N):
        a = torch.exp(log_a[:, :, t]) if log_a is not None else torch.ones(B, H, 1)  # [B,H,F|1]
        kt, vt = k[:, :, t], v[:, :, t]  # [B, H, F], [B, H, D]
        if rule == "delta":
            bt = beta[:, :, t].reshape(B, H, 1, 1)
            erase = kt.unsqueeze(-1) @ (kt.unsqueeze(-2) @ state)  # k^T (k S)
            state = a.unsqueeze(-1) * (state - bt * erase) + bt * (kt.unsqueeze(-1) @ vt.unsqueeze(-2))
        else:
            state = a.unsqueeze(-1) * state + kt.unsqueeze(-1) @ vt.unsqueeze(-2)
        outputs.append((q[:, :, t].unsqueeze(-2) @ state).squeeze(-2))
    return torch.stack(outputs, dim=2)


def layer(x, params, core, p, causal, key_mask, perm, extra=None):
    extra = extra or {}
    def proj(name, t):
        return t @ params[name + ".weight"].T + params[name + ".bias"]

    def heads(t):
        return t.reshape(B, N, H, D).permute(0, 2, 1, 3)

    def feats(t):
        phi = torch.where(t > 0, t + 1.0, torch.exp(t))  # 1 + elu
        u = apply_p(phi, p, params.get("lrpe.householder_v"))
        return apply_core(u, core, params.get("lrpe.theta"), perm)

    q = feats(heads(proj("q_proj", x)))
    k = feats(heads(proj("k_proj", x)))
    v = heads(proj("v_proj", x))
    if extra.get("gating") or extra.get("rule") or extra.get("learnable_decay"):
        o = gated_recurrence(x, q, k, v, params, extra)
    elif causal:
        scores = torch.tril(q @ k.transpose(-1, -2))
        rates = decay_rates(extra)
        if rates is not None:
            i = torch.arange(N, dtype=torch.float64)
            distance = (i.unsqueeze(-1) - i.unsqueeze(0)).clamp(min=0)  # [N, N], i - j below
            gamma = torch.tensor(rates).reshape(1, H, 1, 1)
            scores = scores * gamma ** distance
        o = scores @ v
    else:
        m = key_mask.reshape(B, 1, N, 1)
        o = q @ (k.transpose(-1, -2) @ (v * m))
    o = o.permute(0, 2, 1, 3).reshape(B, N, E)
    if extra.get("norm", "layer") == "group":
        o = torch.nn.functional.group_norm(
            o.reshape(B * N, E), H, params["norm.weight"], params["norm.bias"], 1e-5
        ).reshape(B, N, E)
    else:
        o = torch.nn.functional.layer_norm(o, (E,), params["norm.weight"], params["norm.bias"], 1e-5)
    gate = extra.get("gate", "none")
    if gate == "swish":
        o = o * torch.nn.functional.silu(proj("gate_proj", x))
    elif gate == "sigmoid":
        o = o * torch.sigmoid(proj("gate_proj", x))
    return proj("out_proj", o)


def tensor_entry(t):
    return {"shape": list(t.shape), "data": [float(f"{v:.17g}") for v in t.flatten().tolist()]}


def make_case(core, p, causal, seed, extra=None):
    extra = extra or {}
    g = torch.Generator().manual_seed(seed)
    params = {}
    names = ("q_proj", "k_proj", "v_proj", "out_proj")
    if extra.get("gate", "none") != "none":
        names += ("gate_proj",)
    for name in names:
        params[name + ".weight"] = torch.randn(E, E, generator=g) / math.sqrt(E)
        params[name + ".bias"] = 0.1 * torch.randn(E, generator=g)
    params["norm.weight"] = 1.0 + 0.1 * torch.randn(E, generator=g)
    params["norm.bias"] = 0.1 * torch.randn(E, generator=g)
    if core != "type3":
        params["lrpe.theta"] = thetas(core, D) + 0.05 * torch.rand(D if core == "type1" else D // 2, generator=g)
    if p == "householder":
        params["lrpe.householder_v"] = torch.randn(D, generator=g)
    f = 2 * D if core == "type1" else D
    if extra.get("gating") == "gla":
        r = extra["gla_rank"]
        params["state_gate.gate_down.weight"] = torch.randn(r, E, generator=g) / math.sqrt(E)
        params["state_gate.gate_up.weight"] = torch.randn(H * f, r, generator=g) / math.sqrt(r)
        params["state_gate.gate_up.bias"] = 1.0 + 0.5 * torch.randn(H * f, generator=g)
    if extra.get("gating") == "ssd":
        params["state_gate.dt_proj.weight"] = torch.randn(H, E, generator=g) / math.sqrt(E)
        params["state_gate.dt_bias"] = -1.0 + 0.5 * torch.randn(H, generator=g)
        params["state_gate.a_log"] = torch.log(1.0 + 3.0 * torch.rand(H, generator=g))
    if extra.get("learnable_decay"):
        rates = torch.tensor(decay_rates(extra))
        params["state_gate.decay_log_rate"] = torch.log(-torch.log(rates)) + 0.1 * torch.randn(
            H, generator=g)
    if extra.get("rule") == "delta":
        params["state_gate.beta_proj.weight"] = torch.randn(H, E, generator=g) / math.sqrt(E)
        params["state_gate.beta_proj.bias"] = 0.1 * torch.randn(H, generator=g)
    perm = torch.randperm(D, generator=g).tolist() if core == "type3" else None
    x = torch.randn(B, N, E, generator=g)
    key_mask = torch.ones(B, N)
    if not causal:
        key_mask[1, N - 2:] = 0.0  # the second sequence ends in two padding tokens
    upstream = torch.randn(B, N, E, generator=g)

    leaves = {k: t.clone().requires_grad_(True) for k, t in params.items()}
    xl = x.clone().requires_grad_(True)
    out = layer(xl, leaves, core, p, causal, key_mask, perm, extra)
    out.backward(upstream)

    tensors = {"input": x, "upstream": upstream, "output": out.detach(), "grad.input": xl.grad}
    if not causal:
        tensors["key_mask"] = key_mask
    if perm is not None:
        tensors["lrpe.permutation"] = torch.tensor(perm, dtype=torch.float64)
    for k, t in params.items():
        tensors["param." + k] = t
        tensors["grad." + k] = leaves[k].grad
    return {
        "config": {"core": core, "p": p, "causal": causal, "batch": B, "length": N, "dim": E,
                   "heads": H, **extra},
        "tensors": {k: tensor_entry(t) for k, t in tensors.items()},
    }


def main():
    os.makedirs(OUT, exist_ok=True)
    seed = 0
    for core in ("type1", "type2", "type3"):
        for p in ("identity", "householder", "odd_even"):
            for causal in (True, False):
                seed += 1
                case = make_case(core, p, causal, seed)
                name = f"{core}_{p}_{'causal' if causal else 'bidirectional'}.json"
                with open(os.path.join(OUT, name), "w") as f:
                    json.dump(case, f, separators=(",", ":"))
                print("wrote", name)
    # Decay and gating (issue 21): RetNet-like (rotation, RetNet decay, GroupNorm, swish gate),
    # LRPE-d-like (TransNormerLLM's decay of block 1 of 3, sigmoid gate), and the decay alone.
    decay_cases = {
        "retnet_type2_identity_causal": ("type2", "identity",
                                         {"decay": "retnet", "norm": "group", "gate": "swish"}),
        "lrpe_d_type1_householder_causal": ("type1", "householder",
                                            {"decay": "transnormer", "layer": 1, "layers": 3,
                                             "gate": "sigmoid"}),
        "decay_type3_odd_even_causal": ("type3", "odd_even",
                                        {"decay": "transnormer", "layer": 0, "layers": 1}),
        # Data-dependent gates and the delta rule, against the token-by-token recurrences.
        "learnable_decay_type2_householder_causal": ("type2", "householder",
                                                     {"decay": "retnet", "learnable_decay": True}),
        "gla_type1_identity_causal": ("type1", "identity",
                                      {"gating": "gla", "gla_rank": 3, "gla_temperature": 4.0,
                                       "gate": "swish"}),
        "ssd_type2_identity_causal": ("type2", "identity", {"gating": "ssd", "norm": "group"}),
        "deltanet_type2_householder_causal": ("type2", "householder", {"rule": "delta"}),
        "gated_deltanet_type3_identity_causal": ("type3", "identity",
                                                 {"rule": "delta", "gating": "ssd",
                                                  "gate": "swish"}),
    }
    for name, (core, p, extra) in decay_cases.items():
        seed += 1
        case = make_case(core, p, True, seed, extra)
        with open(os.path.join(OUT, name + ".json"), "w") as f:
            json.dump(case, f, separators=(",", ":"))
        print("wrote", name + ".json")


if __name__ == "__main__":
    main()
