# Proves the PyTorch peer is Rota's model: chunked attention; f64 loss, gradients, steps match.
"""Usage: check_peer.py [--quick] [--recipe-dir DIR]   (exit status 0: all pass, 1: a mismatch)

(a) causal_linear_attention (chunked, the peer's kernel) equals the quadratic masked product
    tril(Q K^T) V, forward and gradients, in f64, for N % C != 0, N < C, C = 1, C = N and N a
    multiple of C.
(b) With identical parameters and batches, the peer's CausalLm / MaskedLm built from
    recipes/bench/bench_small.txtpb / bench_small_bidirectional.txtpb give the same loss and
    the same gradient of every parameter as the model of tests/reference/train_step_reference.py
    (imported, not re-written) in f64; then two training steps (clip + AdamW with the recipe's
    hyperparameters) give the same parameters. The peer's causal attention is chunked (the
    reference's is quadratic), with sequence lengths that leave a partial last chunk.
    Two sizes: the reference's own tiny size (chunk 5, length 12) and bench-small's vocabulary,
    width, layers, heads and FFN width from the recipe (chunk 64 from the recipe, length 70;
    skipped with --quick). The gradient clip is taken from the recipe (1.0, which bites on
    every step here) and, at the tiny size, also set above every norm (the other branch).
    The reference fixes the model options it implements; the check first asserts the recipe
    asks for exactly those (pre-norm, GELU, final norm, tied unscaled embeddings, 1+elu, no
    denominator + LayerNorm, LRPE Type 2 adjacent with learnable θ and learnable Householder P,
    LayerNorm eps 1e-5, no dropout). Not covered: initialisation (parameters come from the
    reference) and the random batches of torch_bench.py.
(c) The GLA family recipe (recipes/bench/bench_small_gla.txtpb: GLA gates, RMSNorm, swish output
    gate): the peer's chunked GLA kernel equals fla-style token-by-token recurrence in f64 for
    ragged chunk ends, and the peer's whole model equals `rota.torch`'s model of the same recipe
    (python/rota/torch, itself checked against Rota by tests/python/test_torch_parity_causal.py)
    with the same parameters: loss and every gradient in f64. Needs `rota.torch` importable
    (PYTHONPATH=python:build/python, as the tests run it).
"""
import argparse
import dataclasses
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "reference"))
import rota_models  # noqa: E402
import train_step_reference as ref  # noqa: E402  (sets the default dtype to f64)

torch.set_num_threads(2)
torch.set_flush_denormal(True)
torch.set_default_dtype(torch.float64)

# f64 results of the same maths in a different summation order agree to ~1e-15 relative; these
# bounds leave room for the longer sums of bench-small's sizes and nothing more.
LOSS_RTOL = 1e-12
TENSOR_RTOL = 1e-10  # max |peer - ref| over max |ref| of each tensor

failures = []


def compare(what, got, want, rtol):
    scale = float(want.abs().max()) if want.numel() else 0.0
    err = float((got - want).abs().max()) if want.numel() else 0.0
    ok = err <= rtol * max(scale, 1e-300) and got.shape == want.shape
    if not ok:
        failures.append(f"{what}: max |diff| {err:.3e} vs scale {scale:.3e} (rtol {rtol:g})")
    return err / scale if scale > 0 else err


# ---- (a) chunked causal attention vs quadratic masked reference ----

def quadratic_causal(q, k, v):
    """o_s = Σ_{t<=s} (q_s·k_t) v_t with the full N×N matrix."""
    return torch.tril(q @ k.transpose(-1, -2)) @ v


def check_chunked_attention():
    g = torch.Generator().manual_seed(7)
    worst = 0.0
    for n, c in ((12, 5), (3, 8), (7, 1), (9, 9), (16, 4), (130, 64)):
        q, k = (torch.randn(2, 3, n, 6, generator=g).requires_grad_() for _ in range(2))
        v = torch.randn(2, 3, n, 5, generator=g).requires_grad_()
        upstream = torch.randn(2, 3, n, 5, generator=g)
        results = []
        for fn in (lambda: rota_models.causal_linear_attention(q, k, v, c),
                   lambda: quadratic_causal(q, k, v)):
            out = fn()
            grads = torch.autograd.grad(out, (q, k, v), upstream)
            results.append((out.detach(), grads))
        (out, grads), (want, want_grads) = results
        worst = max(worst, compare(f"(a) N={n} C={c} output", out, want, TENSOR_RTOL))
        for name, a, b in zip("qkv", grads, want_grads):
            worst = max(worst, compare(f"(a) N={n} C={c} grad {name}", a, b, TENSOR_RTOL))
    print(f"(a) chunked == quadratic causal attention: 6 (N, C) cases, worst relative diff "
          f"{worst:.2e}")


# ---- (b) the peer model vs the golden reference model ----

def assert_reference_options(cfg):
    """The reference implements one option set; the recipe must ask for exactly that."""
    expected = dict(activation="gelu", pre_norm=True, final_norm=True, scale_embeddings=False,
                    tie_embeddings=True, feature_map="one_plus_elu", lrpe=True,
                    lrpe_half_pairing=False, lrpe_p="householder", learn_theta=True,
                    norm_eps=ref.LN_EPS)
    wrong = {k: getattr(cfg, k) for k, v in expected.items() if getattr(cfg, k) != v}
    if wrong:
        failures.append(f"(b) recipe {cfg.name} has options the reference does not model: {wrong}")
        return False
    return True


def set_reference_size(vocab, dim, layers, heads, ffn, batch, length):
    ref.VOCAB, ref.DIM, ref.LAYERS, ref.HEADS, ref.FFN = vocab, dim, layers, heads, ffn
    ref.HEAD_DIM = dim // heads
    ref.BATCH, ref.LENGTH = batch, length
    ref.MASK_ID = vocab - 1


def check_model(cfg, label, steps=2):
    kind = cfg.kind
    g = torch.Generator().manual_seed(11)
    params = ref.make_params(kind, g)
    make_batch = ref.causal_batch if kind == "causal_lm" else ref.masked_batch
    batches = [make_batch(g) for _ in range(steps)]

    # Reference: its parameter dict, its loss, its clip; AdamW over its decay rule (rank >= 2).
    leaves = {k: t.clone().requires_grad_(True) for k, t in params.items()}
    groups = [{"params": [t for k, t in leaves.items() if ref.is_decayed(k, t)],
               "weight_decay": cfg.weight_decay},
              {"params": [t for k, t in leaves.items() if not ref.is_decayed(k, t)],
               "weight_decay": 0.0}]
    ref_opt = torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.adam_eps)

    # Peer: built from the recipe, f64, loaded with the same tensors under Rota's names.
    model = rota_models.build_model(cfg).double()
    model.load_state_dict(params, strict=True)
    peer_params = dict(model.named_parameters())
    peer_opt = rota_models.make_optimizer(model, cfg)

    worst, norms = 0.0, []
    for s, batch in enumerate(batches):
        ref_opt.zero_grad(set_to_none=True)
        ref_loss = ref.loss_of(kind, leaves, batch)
        ref_loss.backward()
        peer_opt.zero_grad(set_to_none=True)
        peer_loss = model.loss(batch)
        peer_loss.backward()
        worst = max(worst, compare(f"(b) {label} step {s} loss", peer_loss.detach(),
                                   ref_loss.detach(), LOSS_RTOL))
        if s == 0:
            for name, t in leaves.items():
                worst = max(worst, compare(f"(b) {label} grad {name}", peer_params[name].grad,
                                           t.grad, TENSOR_RTOL))
        ref_norm = ref.clip_grad_norm(list(leaves.values()), cfg.grad_clip)
        peer_norm = float(rota_models.clip_grad_norm(list(model.parameters()), cfg.grad_clip))
        worst = max(worst, compare(f"(b) {label} step {s} grad norm", torch.tensor(peer_norm),
                                   torch.tensor(ref_norm), LOSS_RTOL))
        norms.append(ref_norm)
        ref_opt.step()
        peer_opt.step()
    for name, t in leaves.items():
        worst = max(worst, compare(f"(b) {label} after {steps} steps: {name}",
                                   peer_params[name].detach(), t.detach(), TENSOR_RTOL))
    print(f"(b) {label}: loss {float(ref_loss):.6f}, {len(leaves)} gradients and parameters "
          f"after {steps} AdamW steps equal (worst relative diff {worst:.2e}; pre-clip grad "
          f"norms {', '.join(f'{n:.3g}' for n in norms)}, clip {cfg.grad_clip:g})")


# ---- (c) the GLA family recipe vs rota.torch ----

def recurrent_gla(q, k, v, g):
    """S_t = diag(e^(g_t)) S_{t-1} + k_t^T v_t, o_t = q_t S_t, token by token."""
    b, h, n, f = q.shape
    state = q.new_zeros(b, h, f, v.shape[-1])
    out = []
    for t in range(n):
        kv = k[:, :, t].unsqueeze(-1) * v[:, :, t].unsqueeze(-2)  # [B, H, F, D]
        state = state * torch.exp(g[:, :, t]).unsqueeze(-1) + kv
        out.append(torch.einsum("bhf,bhfd->bhd", q[:, :, t], state))
    return torch.stack(out, dim=2)


def check_gla(recipe_dir):
    g = torch.Generator().manual_seed(13)
    worst = 0.0
    for n, c in ((12, 5), (3, 8), (7, 1), (70, 64)):
        q, k = (torch.randn(2, 2, n, 6, generator=g).requires_grad_() for _ in range(2))
        v = torch.randn(2, 2, n, 5, generator=g).requires_grad_()
        gate = (torch.nn.functional.logsigmoid(torch.randn(2, 2, n, 6, generator=g)) / 4.0)
        gate.requires_grad_()
        upstream = torch.randn(2, 2, n, 5, generator=g)
        results = []
        for fn in (lambda: rota_models.causal_gated_linear_attention(q, k, v, gate, c),
                   lambda: recurrent_gla(q, k, v, gate)):
            out = fn()
            results.append((out.detach(), torch.autograd.grad(out, (q, k, v, gate), upstream)))
        (out, grads), (want, want_grads) = results
        worst = max(worst, compare(f"(c) GLA N={n} C={c} output", out, want, TENSOR_RTOL))
        for name, a, b in zip(("q", "k", "v", "gate"), grads, want_grads):
            worst = max(worst, compare(f"(c) GLA N={n} C={c} grad {name}", a, b, TENSOR_RTOL))
    print(f"(c) chunked GLA == token-by-token recurrence: 4 (N, C) cases, worst relative diff "
          f"{worst:.2e}")

    try:
        import rota.torch as rt
    except ImportError as e:
        failures.append(f"(c) rota.torch is not importable ({e}); run with "
                        "PYTHONPATH=python:build/python")
        return
    path = os.path.join(recipe_dir, "bench_small_gla.txtpb")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    cfg = rota_models.PeerConfig.from_recipe(path)
    cfg = dataclasses.replace(cfg, vocab_size=53, chunk_size=16)  # chunks of 16, 16, 16, 2
    reference = rt.build_model(rt.RotaConfig.from_recipe_text(text, vocab_size=cfg.vocab_size))
    reference = reference.double().train()
    model = rota_models.build_model(cfg).double()
    with torch.no_grad():  # random values everywhere: biases, norm gains and gates included
        for p in reference.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.2)
    model.load_state_dict(reference.state_dict(), strict=True)
    ids = torch.randint(0, cfg.vocab_size, (2, 50), generator=g)
    batch = {"ids": ids[:, :-1], "targets": ids[:, 1:]}  # 49 rows: chunks of 16, 16, 16, 1
    want = torch.nn.functional.cross_entropy(
        reference(batch["ids"]).reshape(-1, cfg.vocab_size), batch["targets"].reshape(-1))
    got = model.loss(batch)
    reference_params = dict(reference.named_parameters())
    peer_params = dict(model.named_parameters())
    if sorted(reference_params) != sorted(peer_params):
        failures.append("(c) parameter names differ: "
                        f"{sorted(set(reference_params) ^ set(peer_params))}")
        return
    names = sorted(reference_params)
    want_grads = torch.autograd.grad(want, [reference_params[n] for n in names])
    got_grads = torch.autograd.grad(got, [peer_params[n] for n in names])
    worst = compare("(c) GLA model loss", got.detach(), want.detach(), LOSS_RTOL)
    for name, a, b in zip(names, got_grads, want_grads):
        worst = max(worst, compare(f"(c) GLA model grad {name}", a, b, TENSOR_RTOL))
    print(f"(c) {cfg.name} (V {cfg.vocab_size}, C {cfg.chunk_size}, N 49) equals rota.torch: "
          f"loss {float(want):.6f} and {len(names)} gradients (worst relative diff {worst:.2e})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe-dir", default=os.path.join(REPO, "recipes", "bench"))
    parser.add_argument("--quick", action="store_true",
                        help="only the reference's tiny size (seconds instead of minutes)")
    args = parser.parse_args()

    check_chunked_attention()
    for recipe in ("bench_small.txtpb", "bench_small_bidirectional.txtpb"):
        cfg = rota_models.PeerConfig.from_recipe(os.path.join(args.recipe_dir, recipe))
        if not assert_reference_options(cfg):
            continue
        # The reference's own tiny size; the recipe's chunk replaced by 5 so 12 rows make
        # chunks of 5, 5 and 2.
        tiny = dataclasses.replace(cfg, vocab_size=37, width=16, layers=2, heads=2, ffn_width=32,
                                   chunk_size=5)
        set_reference_size(37, 16, 2, 2, 32, batch=3, length=12)
        check_model(tiny, f"{cfg.name} at the reference size (V 37, E 16, L 2, H 2, C 5, N 12)")
        # The same with a clip threshold above every gradient norm (the clip's other branch).
        check_model(dataclasses.replace(tiny, grad_clip=100.0),
                    f"{cfg.name} at the reference size, clip not biting")
        if args.quick:
            continue
        # The recipe's sizes (chunk included), at length 70: chunks of 64 and 6.
        set_reference_size(cfg.vocab_size, cfg.width, cfg.layers, cfg.heads, cfg.ffn_width,
                           batch=3, length=70)
        check_model(cfg, f"{cfg.name} at the recipe's sizes (V {cfg.vocab_size}, E {cfg.width}, "
                         f"L {cfg.layers}, H {cfg.heads}, FFN {cfg.ffn_width}, C "
                         f"{cfg.chunk_size}, N 70)")

    check_gla(args.recipe_dir)

    if failures:
        print(f"FAILED: {len(failures)} mismatch(es)")
        for f in failures[:40]:
            print("  " + f)
        sys.exit(1)
    print("PASS: the PyTorch peer computes the same model as the f64 golden reference")


if __name__ == "__main__":
    main()
