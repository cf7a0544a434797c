#!/usr/bin/python3
"""Writes golden training steps of Rota's tiny CausalLm and MaskedLm (tests/golden/train_step/).

Three cases: causal_lm and masked_lm with the default block below, and causal_lm_llama, a
causal LM with the LLaMA-style block (model.norm_kind RMS_NORM, ffn_activation SWIGLU, bias
false): ln1, ln2 and final_norm are RMSNorms x / sqrt(mean(x^2) + eps) * weight, the FFN is
down_proj(silu(gate_proj(x)) * up_proj(x)), and no projection has a bias nor the attention's
LayerNorm a beta.

An independent PyTorch implementation of both models as Rota defines them (models/*.h):
  embed (tied) -> blocks -> final_norm, each pre-norm block
      h = x + attn(ln1(x));  y = h + ffn(ln2(h)),  ffn = fc2(gelu_erf(fc1(.)))
  attn = linear attention: q, k, v projections with bias, heads, phi = 1 + elu, LRPE Type 2
      (adjacent pairs) on phi with learnable theta and learnable Householder P
      (w = v / (|v| + 1e-6)), no denominator (causal: tril(QK^T)V; bidirectional: Q(K^T diag(m) V)
      with m the key padding mask), LayerNorm over the model width ("attn.norm"), out_proj.
  CausalLm logits = hidden @ embed^T;  MaskedLm logits = mlm_norm(hidden) @ embed^T + mlm_bias.
  Loss: mean cross-entropy over targets != -100.
The optimiser step mirrors Rota's train::StepRunner with optim::AdamW over
optim::decay_param_groups: global L2 grad-norm clipping (scale = max_norm / norm, no +1e-6,
as framework/optim/clip.h documents), then torch.optim.AdamW with weight decay on tensors of
rank >= 2 (projection matrices, FFN matrices, the embedding) and none on rank < 2 tensors
(biases, norm gains/offsets, LRPE theta and householder_v, mlm_bias).

Two more cases fine-tune with low-rank adapters (LoRA, framework/nn/linear.h): causal_lm_lora
(the default block) and causal_lm_llama_lora (the LLaMA-style block). Each selected projection
computes  x W^T + b + (alpha / rank) * (x A^T) B^T  with A [rank, in] and B [out, rank] (both
drawn non-zero here, so every path carries gradient); the base weights are frozen, and only the
adapters and the LRPE parameters (finetune.lora.train "positional") train. Frozen parameters
have no gradient entry and end where they started.

Each case stores the initial parameters (Rota's dotted names), the three batches, the loss and
pre-clip gradient norm of each step, every gradient of the first step (before clipping) and the
parameters after three steps, in float64.

Run with Debian's python3-torch:  /usr/bin/python3 tests/reference/train_step_reference.py
"""
import json
import math
import os

import torch
import torch.nn.functional as F

torch.set_num_threads(2)
torch.set_flush_denormal(True)
torch.set_default_dtype(torch.float64)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden", "train_step")

VOCAB, DIM, LAYERS, HEADS, FFN = 37, 16, 2, 2, 32
HEAD_DIM = DIM // HEADS
BATCH, LENGTH = 3, 12
STEPS = 3
LR, BETAS, EPS, WEIGHT_DECAY = 1e-2, (0.9, 0.99), 1e-8, 0.1
LN_EPS = 1e-5
LORA_RANK, LORA_ALPHA = 2, 3.0  # scale alpha / rank = 1.5
MASK_ID = VOCAB - 1  # the masked LM's [MASK] token
PAD_ID = 0


# ---- parameters ----

def make_params(kind, g, llama=False):
    """Deterministic non-trivial parameters, by Rota name, in Rota's registration order."""
    p = {}

    def matrix(name, rows, cols):
        p[name] = 0.2 * torch.randn(rows, cols, generator=g)

    def vector(name, n, scale=0.1):
        p[name] = scale * torch.randn(n, generator=g)

    def norm(name):
        p[name + ".weight"] = 1.0 + 0.1 * torch.randn(DIM, generator=g)
        if not llama:  # RMSNorm, and LayerNorm without beta, have a weight only
            p[name + ".bias"] = 0.1 * torch.randn(DIM, generator=g)

    def linear(name, out_features, in_features):
        matrix(name + ".weight", out_features, in_features)
        if not llama:
            vector(name + ".bias", out_features)

    matrix("encoder.embed.weight", VOCAB, DIM)
    for i in range(LAYERS):
        b = f"encoder.blocks.{i}."
        norm(b + "ln1")
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            linear(b + "attn." + proj, DIM, DIM)
        norm(b + "attn.norm")
        # Angles spread over (0.15, 1.35) rad per position so every pair rotates visibly within
        # 12 positions (the default 10000^(-2j/D) leaves the last pairs almost still).
        p[b + "attn.lrpe.theta"] = 0.15 + 1.2 * torch.rand(HEAD_DIM // 2, generator=g)
        p[b + "attn.lrpe.householder_v"] = torch.randn(HEAD_DIM, generator=g)
        norm(b + "ln2")
        if llama:
            linear(b + "ffn.gate_proj", FFN, DIM)
            linear(b + "ffn.up_proj", FFN, DIM)
            linear(b + "ffn.down_proj", DIM, FFN)
        else:
            linear(b + "ffn.fc1", FFN, DIM)
            linear(b + "ffn.fc2", DIM, FFN)
    norm("encoder.final_norm")
    if kind == "masked_lm":
        norm("mlm_norm")
        vector("mlm_bias", VOCAB)
    return p


def add_adapters(p, targets, g):
    """lora_a [rank, in] and lora_b [out, rank] beside every selected ".weight" [out, in]."""
    for name in [k[: -len(".weight")] for k in list(p) if k.endswith(".weight")]:
        if name.split(".")[-1] in targets:
            out_features, in_features = p[name + ".weight"].shape
            p[name + ".lora_a"] = 0.3 * torch.randn(LORA_RANK, in_features, generator=g)
            p[name + ".lora_b"] = 0.3 * torch.randn(out_features, LORA_RANK, generator=g)


# ---- model ----

def layer_norm(x, params, name):
    return F.layer_norm(x, (DIM,), params[name + ".weight"], params.get(name + ".bias"), LN_EPS)


def rms_norm(x, params, name):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + LN_EPS) * params[name + ".weight"]


def block_norm(x, params, name):
    """ln1, ln2, final_norm: RMSNorm in the LLaMA-style case (no ".bias"), else LayerNorm."""
    llama = name + ".bias" not in params
    return rms_norm(x, params, name) if llama else layer_norm(x, params, name)


def linear(x, params, name):
    y = x @ params[name + ".weight"].T
    if name + ".bias" in params:
        y = y + params[name + ".bias"]
    if name + ".lora_a" in params:
        y = y + (LORA_ALPHA / LORA_RANK) * ((x @ params[name + ".lora_a"].T)
                                            @ params[name + ".lora_b"].T)
    return y


def lrpe_type2_householder(x, theta, v):
    """x: [B, H, N, D] -> Lambda(s) P x with P = I - 2 w w^T, Lambda(s) adjacent 2x2 rotations."""
    w = v / (v.norm() + 1e-6)
    u = x - 2.0 * (x @ w).unsqueeze(-1) * w
    n = x.shape[-2]
    angles = torch.arange(n, dtype=torch.float64).unsqueeze(-1) * theta  # [N, D/2]
    u0, u1 = u[..., 0::2], u[..., 1::2]
    y0 = u0 * torch.cos(angles) - u1 * torch.sin(angles)
    y1 = u0 * torch.sin(angles) + u1 * torch.cos(angles)
    return torch.stack([y0, y1], dim=-1).reshape(u.shape)


def linear_attention(x, params, name, causal, key_mask):
    b, n, _ = x.shape

    def heads(t):
        return t.reshape(b, n, HEADS, HEAD_DIM).permute(0, 2, 1, 3)

    def features(t):
        phi = F.elu(t) + 1.0
        return lrpe_type2_householder(phi, params[name + ".lrpe.theta"],
                                      params[name + ".lrpe.householder_v"])

    q = features(heads(linear(x, params, name + ".q_proj")))
    k = features(heads(linear(x, params, name + ".k_proj")))
    v = heads(linear(x, params, name + ".v_proj"))
    if causal:
        o = torch.tril(q @ k.transpose(-1, -2)) @ v
    else:
        m = key_mask.reshape(b, 1, n, 1)
        o = q @ (k.transpose(-1, -2) @ (v * m))
    o = o.permute(0, 2, 1, 3).reshape(b, n, DIM)
    return linear(layer_norm(o, params, name + ".norm"), params, name + ".out_proj")


def encoder(ids, params, causal, key_mask):
    x = params["encoder.embed.weight"][ids]
    for i in range(LAYERS):
        b = f"encoder.blocks.{i}."
        h = x + linear_attention(block_norm(x, params, b + "ln1"), params, b + "attn", causal,
                                 key_mask)
        u = block_norm(h, params, b + "ln2")
        if b + "ffn.gate_proj.weight" in params:  # SwiGLU
            hidden = F.silu(linear(u, params, b + "ffn.gate_proj")) * linear(u, params,
                                                                            b + "ffn.up_proj")
            x = h + linear(hidden, params, b + "ffn.down_proj")
        else:
            hidden = F.gelu(linear(u, params, b + "ffn.fc1"))
            x = h + linear(hidden, params, b + "ffn.fc2")
    return block_norm(x, params, "encoder.final_norm")


def loss_of(kind, params, batch):
    embed = params["encoder.embed.weight"]
    if kind == "causal_lm":
        logits = encoder(batch["ids"], params, True, None) @ embed.T
    else:
        h = layer_norm(encoder(batch["ids"], params, False, batch["key_mask"]), params, "mlm_norm")
        logits = h @ embed.T + params["mlm_bias"]
    return F.cross_entropy(logits.reshape(-1, VOCAB), batch["targets"].reshape(-1),
                           ignore_index=-100)


# ---- batches ----

def causal_batch(g):
    seq = torch.randint(0, VOCAB, (BATCH, LENGTH + 1), generator=g)
    targets = seq[:, 1:].clone()
    targets[2, LENGTH - 2:] = -100  # the last row ends in two ignored targets
    return {"ids": seq[:, :LENGTH].clone(), "targets": targets}


def masked_batch(g):
    lengths = [LENGTH, LENGTH - 3, LENGTH - 5]  # rows 1 and 2 end in padding
    original = torch.randint(1, MASK_ID, (BATCH, LENGTH), generator=g)
    key_mask = torch.zeros(BATCH, LENGTH)
    ids = torch.full((BATCH, LENGTH), PAD_ID, dtype=torch.int64)
    targets = torch.full((BATCH, LENGTH), -100, dtype=torch.int64)
    for r, n in enumerate(lengths):
        key_mask[r, :n] = 1.0
        ids[r, :n] = original[r, :n]
        chosen = torch.randperm(n, generator=g)[: max(2, n // 4)]  # ~25% of real tokens
        targets[r, chosen] = original[r, chosen]
        ids[r, chosen] = MASK_ID
    return {"ids": ids, "targets": targets, "key_mask": key_mask}


# ---- training ----

def is_decayed(name, tensor):
    """optim::decay_param_groups: rank >= 2 decays, rank < 2 does not."""
    return tensor.dim() >= 2


def clip_grad_norm(params, max_norm):
    """optim::clip_grad_norm: global L2 norm; scale by max_norm / norm when it exceeds max_norm."""
    norm = math.sqrt(sum(float((p.grad * p.grad).sum()) for p in params))
    if norm > max_norm:
        for p in params:
            p.grad.mul_(max_norm / norm)
    return norm


def tensor_entry(t):
    return {"shape": list(t.shape), "data": [float(x) for x in t.flatten().tolist()]}


def is_trained(name, lora_targets):
    """Everything without adapters; with them, the adapters and the LRPE parameters only."""
    if not lora_targets:
        return True
    return name.endswith((".lora_a", ".lora_b", ".lrpe.theta", ".lrpe.householder_v"))


def make_case(kind, seed, clip_norm, llama=False, lora_targets=()):
    g = torch.Generator().manual_seed(seed)
    initial = make_params(kind, g, llama)
    if lora_targets:
        add_adapters(initial, lora_targets, g)
    batches = [(causal_batch if kind == "causal_lm" else masked_batch)(g) for _ in range(STEPS)]

    leaves = {k: t.clone().requires_grad_(is_trained(k, lora_targets))
              for k, t in initial.items()}
    trained = {k: t for k, t in leaves.items() if t.requires_grad}
    groups = [
        {"params": [t for k, t in trained.items() if is_decayed(k, t)],
         "weight_decay": WEIGHT_DECAY},
        {"params": [t for k, t in trained.items() if not is_decayed(k, t)], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=LR, betas=BETAS, eps=EPS)
    losses, norms, first_grads = [], [], None
    for batch in batches:
        opt.zero_grad(set_to_none=True)
        loss = loss_of(kind, leaves, batch)
        loss.backward()
        if first_grads is None:
            first_grads = {k: t.grad.clone() for k, t in trained.items()}
        norm = clip_grad_norm(list(trained.values()), clip_norm)
        opt.step()
        losses.append(float(loss))
        norms.append(norm)
    # Both branches of the clip must be taken (it bites on some step and not on another), and
    # no norm may sit so close to the threshold that rounding could change which steps clip.
    assert any(n > clip_norm for n in norms), (kind, norms, clip_norm)
    assert any(n < clip_norm for n in norms), (kind, norms, clip_norm)
    assert all(abs(n / clip_norm - 1.0) > 0.02 for n in norms), (kind, norms, clip_norm)

    tensors = {}
    for s, batch in enumerate(batches):
        for key, t in batch.items():
            tensors[f"step{s}.{key}"] = t
        tensors[f"step{s}.loss"] = torch.tensor([losses[s]])
        tensors[f"step{s}.grad_norm"] = torch.tensor([norms[s]])
    for k in initial:
        tensors["param." + k] = initial[k]
        if k in first_grads:
            tensors["grad." + k] = first_grads[k]
        tensors["final." + k] = leaves[k].detach()
    config = {"kind": kind, "vocab_size": VOCAB, "dim": DIM, "layers": LAYERS, "heads": HEADS,
              "ffn_dim": FFN, "batch": BATCH, "length": LENGTH, "steps": STEPS, "lr": LR,
              "beta1": BETAS[0], "beta2": BETAS[1], "eps": EPS, "weight_decay": WEIGHT_DECAY,
              "clip_norm": clip_norm}
    if llama:
        config.update({"norm_kind": "rms_norm", "activation": "swiglu", "bias": False})
    if lora_targets:
        config.update({"lora_targets": list(lora_targets), "lora_rank": LORA_RANK,
                       "lora_alpha": LORA_ALPHA, "lora_train": ["positional"]})
    print(kind, "losses", losses, "grad norms", norms, "clip", clip_norm)
    return {"config": config,
            "tensors": {k: tensor_entry(t) for k, t in tensors.items()}}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, kind, seed, clip_norm, llama, lora in (
            ("causal_lm", "causal_lm", 1, 2.3, False, ()),
            ("masked_lm", "masked_lm", 2, 3.3, False, ()),
            ("causal_lm_llama", "causal_lm", 4, 2.3, True, ()),
            ("causal_lm_lora", "causal_lm", 5, 1.25, False,
             ("q_proj", "v_proj", "out_proj", "fc1", "fc2")),
            ("causal_lm_llama_lora", "causal_lm", 6, 1.6, True,
             ("k_proj", "gate_proj", "up_proj", "down_proj"))):
        case = make_case(kind, seed, clip_norm, llama, lora)
        with open(os.path.join(OUT, name + ".json"), "w") as f:
            json.dump(case, f, separators=(",", ":"))
        print("wrote", name + ".json")


if __name__ == "__main__":
    main()
