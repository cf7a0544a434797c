#!/usr/bin/python3
"""Writes golden cases for Rota's Shaw / Transformer-XL / generalised-skew relative encodings
(tests/golden/relative_encodings/).

Independent PyTorch implementations written the way each reference does it:
  * Shaw: tensor2tensor style, the (n_q, n_k, D) tensor of gathered clipped embeddings,
    q pre-scaled (so the key term is scaled and the value term is not);
  * XL: ESPnet RelPositionMultiHeadedAttention ("latest"): ESPnet's pe_positive / pe_negative
    table (or Transformer-XL's concatenated sin/cos), linear_pos without bias, pos_bias_u/v,
    matrix_ac + rel_shift(matrix_bd) by zero-pad and reshape, scaled together; self-attention
    uses ESPnet's own `x.size(-1) // 2 + 1` slice, other blocks pass n_k explicitly;
  * skew: the blog post's diagonal stacking of Q·E over all 2·max_len − 1 columns, then
    transpose and truncate (start-aligned, so query_offset = 0 only).
Each case stores q, k, v, the masks, the parameters (Rota's names), the upstream gradient, the
output and every gradient, in float64. Conventions: t = j − i − offset, tables in ascending-t
row order (encodings.md sections 1–5).

Run with Debian's python3-torch:  /usr/bin/python3 tests/reference/relative_encodings_reference.py
"""
import json
import math
import os

import torch

torch.set_num_threads(2)
torch.set_flush_denormal(True)
torch.set_default_dtype(torch.float64)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden", "relative_encodings")


def visible(n_q, n_k, offset, causal, key_mask, batch):
    """[B, 1, n_q, n_k] boolean: key j visible to query i."""
    i = torch.arange(n_q).unsqueeze(1)
    j = torch.arange(n_k).unsqueeze(0)
    vis = torch.ones(n_q, n_k, dtype=torch.bool)
    if causal:
        vis = j <= i + offset
    vis = vis.expand(batch, 1, n_q, n_k)
    if key_mask is not None:
        vis = vis & (key_mask != 0).reshape(batch, 1, 1, n_k)
    return vis


def masked_softmax(scores, vis):
    return torch.softmax(scores.masked_fill(~vis, float("-inf")), dim=-1)


# ---- Shaw (tensor2tensor) -------------------------------------------------------------------


def shaw(q, k, v, params, cfg, vis):
    n_q, n_k, d = q.shape[2], k.shape[2], q.shape[3]
    kk, off = cfg["clip"], cfg["offset"]
    rel = torch.arange(n_k).unsqueeze(0) - torch.arange(n_q).unsqueeze(1) - off  # j − i − off
    idx = torch.clamp(rel, -kk, kk) + kk
    rel_k = params["key_table"][idx]  # [n_q, n_k, D]
    qs = q * d ** -0.5
    logits = qs @ k.transpose(-1, -2) + torch.einsum("bhid,ijd->bhij", qs, rel_k)
    p = masked_softmax(logits, vis)
    out = p @ v
    if cfg["values"]:
        out = out + torch.einsum("bhij,ijd->bhid", p, params["value_table"][idx])
    return out


# ---- Transformer-XL / ESPnet ----------------------------------------------------------------


def espnet_pe(length, d_model):
    """ESPnet RelPositionalEncoding.extend_pe: rows ρ = length−1 … −(length−1)."""
    pe_positive = torch.zeros(length, d_model)
    pe_negative = torch.zeros(length, d_model)
    position = torch.arange(0, length, dtype=torch.float64).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * -(math.log(10000.0) / d_model))
    pe_positive[:, 0::2] = torch.sin(position * div_term)
    pe_positive[:, 1::2] = torch.cos(position * div_term)
    pe_negative[:, 0::2] = torch.sin(-1 * position * div_term)
    pe_negative[:, 1::2] = torch.cos(-1 * position * div_term)
    pe_positive = torch.flip(pe_positive, [0])
    pe_negative = pe_negative[1:]
    return torch.cat([pe_positive, pe_negative], dim=0)  # row length−1 ↔ ρ = 0


def xl_original_pe(rhos, d_model):
    """Transformer-XL PositionalEmbedding: cat([sin(ρ·inv_freq), cos(ρ·inv_freq)])."""
    inv_freq = 1 / (10000 ** (torch.arange(0.0, d_model, 2.0) / d_model))
    sinusoid_inp = torch.outer(rhos, inv_freq)
    return torch.cat([sinusoid_inp.sin(), sinusoid_inp.cos()], dim=-1)


def rel_shift(x, n_k):
    """ESPnet rel_shift (zero pad, reshape, drop the first row), keeping n_k columns."""
    zero_pad = torch.zeros((*x.size()[:3], 1), dtype=x.dtype)
    x_padded = torch.cat([zero_pad, x], dim=-1)
    x_padded = x_padded.view(*x.size()[:2], x.size(3) + 1, x.size(2))
    return x_padded[:, :, 1:].view_as(x)[:, :, :, :n_k]


def xl(q, k, v, params, cfg, vis):
    b, h, n_q, d = q.shape
    n_k, off, d_pe = k.shape[2], cfg["offset"], cfg["pe_dim"]
    rho_max, rho_min = off + n_q - 1, -(n_k - 1 - off)  # rows ρ = rho_max … rho_min
    if cfg["layout"] == "interleaved":
        length = max(abs(rho_max), abs(rho_min)) + 1
        pe = espnet_pe(length, d_pe)
        center = length - 1
        pos_emb = pe[center - rho_max: center - rho_min + 1]
    else:
        pos_emb = xl_original_pe(torch.arange(rho_max, rho_min - 1, -1.0), d_pe)
    n_rel = pos_emb.shape[0]
    assert n_rel == n_q + n_k - 1
    p = (pos_emb @ params["linear_pos.weight"].T).view(n_rel, h, d).transpose(0, 1)  # [H, n_rel, D]
    qt = q.transpose(1, 2)  # (batch, time1, head, d_k) as in ESPnet
    q_with_bias_u = (qt + params["pos_bias_u"]).transpose(1, 2)
    q_with_bias_v = (qt + params["pos_bias_v"]).transpose(1, 2)
    matrix_ac = q_with_bias_u @ k.transpose(-2, -1)
    matrix_bd = q_with_bias_v @ p.transpose(-2, -1)
    if n_q == n_k and off == 0:
        matrix_bd = rel_shift(matrix_bd, matrix_bd.size(-1) // 2 + 1)  # ESPnet's own slice
    else:
        matrix_bd = rel_shift(matrix_bd, n_k)
    scores = (matrix_ac + matrix_bd) / math.sqrt(d)
    return masked_softmax(scores, vis) @ v


# ---- generalised skew (the blog post) -------------------------------------------------------


def skew(q, k, v, params, cfg, vis):
    n_q, n_k, d = q.shape[2], k.shape[2], q.shape[3]
    n3 = cfg["max_len"]
    assert cfg["offset"] == 0 and n_q <= n3 and n_k <= n3
    # The blog's E: [D, 2·n3 − 1], first column t = n3 − 1, last t = −(n3 − 1). Rota stores the
    # table in ascending t: E_blog = flip(table)ᵀ.
    e_blog = torch.flip(params["table"], [0]).T
    qe = q @ e_blog  # [B, H, n_q, 2·n3 − 1]
    diagonals = [torch.diagonal(qe, offset=kk, dim1=-2, dim2=-1) for kk in range(n3 - 1, -1, -1)]
    s = torch.stack(diagonals, dim=-2)  # [B, H, n3, n_q]: row j holds key j for every query
    s = s.transpose(-1, -2)[..., :n_k]
    scores = (q @ k.transpose(-1, -2) + s) / math.sqrt(d)
    return masked_softmax(scores, vis) @ v


# ---- cases ----------------------------------------------------------------------------------


def tensor_entry(t):
    return {"shape": list(t.shape), "data": [float(f"{x:.17g}") for x in t.flatten().tolist()]}


def make_params(cfg, g):
    h, d = cfg["heads"], cfg["head_dim"]
    if cfg["encoding"] == "shaw":
        rows = 2 * cfg["clip"] + 1
        params = {"key_table": 0.5 * torch.randn(rows, d, generator=g)}
        if cfg["values"]:
            params["value_table"] = 0.5 * torch.randn(rows, d, generator=g)
        return params
    if cfg["encoding"] == "xl":
        return {
            "pos_bias_u": 0.5 * torch.randn(h, d, generator=g),
            "pos_bias_v": 0.5 * torch.randn(h, d, generator=g),
            "linear_pos.weight": torch.randn(h * d, cfg["pe_dim"], generator=g) / math.sqrt(cfg["pe_dim"]),
        }
    return {"table": 0.5 * torch.randn(2 * cfg["max_len"] - 1, d, generator=g)}


def make_case(cfg, seed):
    g = torch.Generator().manual_seed(seed)
    b, h, d = cfg["batch"], cfg["heads"], cfg["head_dim"]
    n_q, n_k = cfg["n_q"], cfg["n_k"]
    params = make_params(cfg, g)
    q = torch.randn(b, h, n_q, d, generator=g)
    k = torch.randn(b, h, n_k, d, generator=g)
    v = torch.randn(b, h, n_k, d, generator=g)
    key_mask = None
    if cfg["key_padding"]:
        key_mask = torch.ones(b, n_k)
        key_mask[b - 1, n_k - 2:] = 0.0  # the last sequence ends in two padding keys
    upstream = torch.randn(b, h, n_q, d, generator=g)
    vis = visible(n_q, n_k, cfg["offset"], cfg["causal"], key_mask, b)
    assert bool(vis.any(dim=-1).all()), "every query must see a key"

    leaves = {name: t.clone().requires_grad_(True) for name, t in params.items()}
    ql, kl, vl = (t.clone().requires_grad_(True) for t in (q, k, v))
    fn = {"shaw": shaw, "xl": xl, "skew": skew}[cfg["encoding"]]
    out = fn(ql, kl, vl, leaves, cfg, vis)
    out.backward(upstream)

    tensors = {"q": q, "k": k, "v": v, "upstream": upstream, "output": out.detach(),
               "grad.q": ql.grad, "grad.k": kl.grad, "grad.v": vl.grad}
    if key_mask is not None:
        tensors["key_padding_mask"] = key_mask
    for name, t in params.items():
        tensors["param." + name] = t
        tensors["grad." + name] = leaves[name].grad
    return {"config": cfg, "tensors": {name: tensor_entry(t) for name, t in tensors.items()}}


def config(encoding, n_q, n_k, offset, causal, batch=1, key_padding=False, **extra):
    cfg = {"encoding": encoding, "batch": batch, "heads": 2, "head_dim": 4, "n_q": n_q, "n_k": n_k,
           "offset": offset, "causal": causal, "key_padding": key_padding}
    cfg.update(extra)
    return cfg


CASES = {
    # Shaw: clip K = 2 or 3, so every case reaches distances beyond the clip.
    "shaw_self_causal": config("shaw", 7, 7, 0, True, clip=2, values=False),
    "shaw_self_full_values": config("shaw", 6, 6, 0, False, batch=2, key_padding=True, clip=2,
                                    values=True),
    "shaw_cross_start": config("shaw", 4, 6, 0, False, clip=2, values=False),
    "shaw_cross_end_causal": config("shaw", 3, 8, 5, True, clip=3, values=True),
    # Transformer-XL / ESPnet.
    "xl_self_full": config("xl", 6, 6, 0, False, layout="interleaved", pe_dim=8),
    "xl_self_causal": config("xl", 7, 7, 0, True, batch=2, key_padding=True,
                             layout="interleaved", pe_dim=8),
    "xl_self_full_concat": config("xl", 5, 5, 0, False, layout="concatenated", pe_dim=6),
    "xl_cross_end_causal": config("xl", 3, 7, 4, True, layout="interleaved", pe_dim=8),
    # Generalised skew (start-aligned).
    "skew_self_full": config("skew", 5, 5, 0, False, max_len=5),
    "skew_self_causal": config("skew", 6, 6, 0, True, max_len=8),
    "skew_cross_start": config("skew", 3, 6, 0, False, max_len=7),
    "skew_cross_start_causal": config("skew", 4, 6, 0, True, batch=2, key_padding=True, max_len=6),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for seed, (name, cfg) in enumerate(sorted(CASES.items()), start=1):
        with open(os.path.join(OUT, name + ".json"), "w") as f:
            json.dump(make_case(cfg, seed), f, separators=(",", ":"))
        print("wrote", name)


if __name__ == "__main__":
    main()
