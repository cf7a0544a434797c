#!/usr/bin/python3
"""Writes golden cases for Rota's SoftmaxAttention layer (tests/golden/softmax_attention/).

An independent PyTorch implementation of the layer from ../shared/design/encodings.md:
projections with biases, heads, the encoding (none / RoPE adjacent / ALiBi / T5), the logit
l_ij = s*q_i.k_j + b_ij with s = 1/sqrt(D), hidden entries -inf (causal: j > off + i; key
padding), softmax over j, P.V, output projection. Each case stores the parameters (Rota's dotted
names), the inputs, the upstream gradient, the output and every gradient, in float64.

Also written (table_*.json): T5 bucket tables for t = -300..300 computed the way HF transformers does
(float32 log, truncation), and ALiBi slopes for H = 1..32 from the reference's recursion.

Run with Debian's python3-torch:  /usr/bin/python3 tests/reference/softmax_attention_reference.py
"""
import json
import math
import os

import torch

torch.set_num_threads(2)
torch.set_flush_denormal(True)
torch.set_default_dtype(torch.float64)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden", "softmax_attention")


# ---- encodings, written from the references rather than from Rota ----

def alibi_slopes(n):
    """ofirpress/attention_with_linear_biases: get_slopes (recursive form)."""
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + alibi_slopes(2 * closest)[0::2][: n - closest]


def t5_bucket(relative_position, bidirectional, num_buckets, max_distance):
    """HF transformers T5Attention._relative_position_bucket (t = key - query)."""
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    large = max_exact + (
        torch.log(relative_position.float() / max_exact)
        / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)
    ).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    relative_buckets += torch.where(is_small, relative_position, large)
    return relative_buckets


def rope(x, positions, theta):
    """Adjacent pairs (2k, 2k+1) rotated by position * theta_k (RoFormer / GPT-J)."""
    a = positions.unsqueeze(-1) * theta  # [N, D/2]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    y0 = x0 * torch.cos(a) - x1 * torch.sin(a)
    y1 = x0 * torch.sin(a) + x1 * torch.cos(a)
    return torch.stack([y0, y1], dim=-1).flatten(-2)


def layer(xq, xkv, params, cfg, key_mask):
    B, nq, E = xq.shape
    nk = xkv.shape[1]
    H = cfg["heads"]
    D = E // H
    off = cfg["query_offset"]

    def proj(name, t):
        return t @ params[name + ".weight"].T + params[name + ".bias"]

    def heads(t, n):
        return t.reshape(B, n, H, D).permute(0, 2, 1, 3)

    q = heads(proj("q_proj", xq), nq)
    k = heads(proj("k_proj", xkv), nk)
    v = heads(proj("v_proj", xkv), nk)
    i = torch.arange(nq).reshape(nq, 1)
    j = torch.arange(nk).reshape(1, nk)
    t = j - i - off  # key position - query position
    enc = cfg["encoding"]
    if enc == "rope":
        q = rope(q, torch.arange(nq, dtype=torch.float64) + off, params["rope.theta"])
        k = rope(k, torch.arange(nk, dtype=torch.float64), params["rope.theta"])
    logits = (q @ k.transpose(-1, -2)) / math.sqrt(D)
    if enc == "alibi":
        m = torch.tensor(alibi_slopes(H)).reshape(1, H, 1, 1)
        logits = logits - m * t.abs().to(torch.float64)
    if enc == "t5":
        buckets = t5_bucket(t, not cfg["causal"], cfg["t5_num_buckets"], cfg["t5_max_distance"])
        bias = params["position.weight"][buckets]  # [nq, nk, H]
        logits = logits + bias.permute(2, 0, 1).unsqueeze(0)
    hidden = torch.zeros(B, 1, nq, nk, dtype=torch.bool)
    if cfg["causal"]:
        hidden = hidden | (t > 0)
    if key_mask is not None:
        hidden = hidden | (key_mask == 0).reshape(B, 1, 1, nk)
    logits = logits.masked_fill(hidden, float("-inf"))
    o = torch.softmax(logits, dim=-1) @ v
    return proj("out_proj", o.permute(0, 2, 1, 3).reshape(B, nq, E))


def tensor_entry(t):
    # json writes floats with repr: the shortest string that round-trips the double exactly.
    return {"shape": list(t.shape), "data": t.flatten().tolist()}


def make_case(cfg, seed):
    g = torch.Generator().manual_seed(seed)
    B, E, H, nq, nk = cfg["batch"], cfg["dim"], cfg["heads"], cfg["nq"], cfg["nk"]
    D = E // H
    params = {}
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        params[name + ".weight"] = torch.randn(E, E, generator=g) / math.sqrt(E)
        params[name + ".bias"] = 0.1 * torch.randn(E, generator=g)
    if cfg["encoding"] == "rope":
        params["rope.theta"] = torch.tensor([10000.0 ** (-2.0 * k / D) for k in range(D // 2)])
    if cfg["encoding"] == "t5":
        params["position.weight"] = torch.randn(cfg["t5_num_buckets"], H, generator=g)
    cross = cfg["self"] is False
    xq = torch.randn(B, nq, E, generator=g)
    xkv = torch.randn(B, nk, E, generator=g) if cross else xq
    key_mask = None
    if not cfg["causal"]:
        key_mask = torch.ones(B, nk)
        key_mask[1, nk - 3:] = 0.0  # the second sequence ends in three padding keys
    upstream = torch.randn(B, nq, E, generator=g)

    leaves = {k: t.clone().requires_grad_(k != "rope.theta") for k, t in params.items()}
    xql = xq.clone().requires_grad_(True)
    xkvl = xkv.clone().requires_grad_(True) if cross else xql
    out = layer(xql, xkvl, leaves, cfg, key_mask)
    out.backward(upstream)

    tensors = {"input": xq, "upstream": upstream, "output": out.detach(), "grad.input": xql.grad}
    if cross:
        tensors["key_value_input"] = xkv
        tensors["grad.key_value_input"] = xkvl.grad
    if key_mask is not None:
        tensors["key_padding_mask"] = key_mask
    for k, t in params.items():
        tensors["param." + k] = t
        if leaves[k].requires_grad:
            tensors["grad." + k] = leaves[k].grad
    return {"config": cfg, "tensors": {k: tensor_entry(t) for k, t in tensors.items()}}


def cases():
    base = {"batch": 2, "dim": 12, "heads": 3, "nq": 9, "nk": 9, "query_offset": 0, "self": True,
            "t5_num_buckets": 8, "t5_max_distance": 8}
    out = []
    for enc in ("none", "rope", "alibi", "t5"):
        for causal in (True, False):
            out.append((f"{enc}_self_{'causal' if causal else 'full'}",
                        dict(base, encoding=enc, causal=causal)))
    # Cross-attention: 4 queries at the end of 24 keys (off = 20, as with a cache or memory);
    # T5 with its default 32 buckets / distance 128 reaches the log-spaced buckets.
    for enc in ("rope", "alibi", "t5"):
        out.append((f"{enc}_cross_end_causal",
                    dict(base, encoding=enc, causal=True, nq=4, nk=24, query_offset=20, self=False,
                         t5_num_buckets=32, t5_max_distance=128)))
    return out


def bucket_tables():
    t = torch.arange(-300, 301)
    tables = {"t": t.to(torch.float64)}
    for nb, md in ((32, 128), (8, 16), (16, 64), (64, 256)):
        for bidir in (True, False):
            name = f"{nb}_{md}_{'bidirectional' if bidir else 'causal'}"
            tables[name] = t5_bucket(t, bidir, nb, md).to(torch.float64)
    return {"config": {"what": "T5 buckets of t = -300..300 per (num_buckets, max_distance, mode)"},
            "tensors": {k: tensor_entry(v) for k, v in tables.items()}}


def slope_tables():
    return {"config": {"what": "ALiBi slopes for H = 1..32 from the reference recursion"},
            "tensors": {str(h): tensor_entry(torch.tensor(alibi_slopes(h))) for h in range(1, 33)}}


def main():
    os.makedirs(OUT, exist_ok=True)
    for seed, (name, cfg) in enumerate(cases(), start=1):
        with open(os.path.join(OUT, name + ".json"), "w") as f:
            json.dump(make_case(cfg, seed), f, separators=(",", ":"))
        print("wrote", name)
    for name, content in (("table_t5_buckets", bucket_tables()),
                          ("table_alibi_slopes", slope_tables())):
        with open(os.path.join(OUT, name + ".json"), "w") as f:
            json.dump(content, f, separators=(",", ":"))
        print("wrote", name)


if __name__ == "__main__":
    main()
