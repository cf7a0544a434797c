"""Writes golden cases of Rota's decay, gating and delta-rule kernels from flash-linear-attention's
reference forms (tests/golden/fla/), the field's implementations (fla-core, PyPI).

Each case runs one of fla's plain-PyTorch "naive" recurrences on random inputs and stores the
inputs, the output, the final state and the gradient of every input (q, k, v, gates, beta, the
initial state) for a random upstream gradient of the output and of the final state. Rota's tests
(tests/framework/backend/fused/fla_reference_golden.cpp) feed the same inputs to Rota's chunked
kernels, mapped as the case's config says, and compare in float64 and float32.

| fla form (fla.ops...)                              | Rota kernel (framework/backend/fused)          | which Rota options run it |
|----------------------------------------------------|------------------------------------------------|---------------------------|
| linear_attn.naive.naive_recurrent_linear_attn      | causal_linear_attention_forward, no decay      | plain causal linear attention |
| retention.naive.naive_retention                    | causal_linear_attention_forward, decay [H]     | `decay { schedule: RETNET }` |
| simple_gla.naive.naive_recurrent_simple_gla, g = log γ_h at every step | causal_linear_attention_forward, decay [H] | `decay { schedule: TRANSNORMER }` (block 1 of 3; rates computed here from ALiBi's slopes), with a state |
| simple_gla.naive.naive_recurrent_simple_gla        | gated_linear_attention_forward, gate [.., 1]   | `gating { ssd {} }`, `decay { learnable: true }` |
| gla.naive.naive_recurrent_gla                      | gated_linear_attention_forward, gate [.., F]   | `gating { gla {} }` |
| delta_rule.naive.delta_rule_recurrence             | delta_rule_attention_forward, no gate          | `update_rule: DELTA` |
| gated_delta_rule.naive.naive_recurrent_gated_delta_rule | delta_rule_attention_forward, gate [..]   | `update_rule: DELTA` + `gating { ssd {} }` |

Where the definitions differ on purpose, the config says how to map one onto the other:
- "q_scale": fla multiplies q by this inside the form (K^-1/2 where the form has no scale
  argument: retention, GLA, DeltaNet); Rota's kernels take q as given (its layers normalise the
  output instead), so the test passes q·q_scale to Rota and multiplies Rota's dq by q_scale.
  Where the form takes a scale (linear_attn, simple_gla, gated delta rule) it is given 1.
- Layouts: fla's [B, T, H, K] (or [B, H, T, K]) is stored in Rota's [B, H, N, F]; fla's
  per-head gates and beta [B, T, H] as Rota's [B, H, N] ([B, H, N, 1] for the scalar gate).
- retention has no state arguments (no initial or final state in that case).

fla's naive forms cast their inputs to float32 (`.float()`, `.to(torch.float32)`, dtype=
torch.float). To get float64 goldens of the same formulas, the forms run inside `float64_forms()`,
which makes those casts keep float64 for the duration; `check_against_float32` then reruns each
form unpatched in float32 and requires the two to agree to float32's accuracy, so the patch
changes nothing but the precision.

Run with the peers' venv (tools/peers/README.md):
  $(tools/peers/venv.sh) tests/reference/fla_reference.py
"""
import contextlib
import json
import math
import os

import torch

from fla.ops.delta_rule.naive import delta_rule_recurrence
from fla.ops.gated_delta_rule.naive import naive_recurrent_gated_delta_rule
from fla.ops.gla.naive import naive_recurrent_gla
from fla.ops.linear_attn.naive import naive_recurrent_linear_attn
from fla.ops.retention.naive import naive_retention
from fla.ops.simple_gla.naive import naive_recurrent_simple_gla
import fla

torch.set_num_threads(2)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden", "fla")
B, H, F, D = 1, 2, 8, 6
LENGTHS = (1, 6, 45)  # one row; shorter than every chunk tried; several chunks with a ragged end


@contextlib.contextmanager
def float64_forms():
    """fla's float32 casts keep float64 while inside (see the module's docstring)."""
    saved = (torch.float32, torch.float, torch.Tensor.float)
    torch.float32 = torch.float64
    torch.float = torch.float64
    torch.Tensor.float = torch.Tensor.double
    try:
        yield
    finally:
        torch.float32, torch.float, torch.Tensor.float = saved


def to_fla(x):
    """Rota's [B, H, N, ...] as fla's [B, T, H, ...]."""
    return x.transpose(1, 2).contiguous()


def from_fla(x):
    return x.transpose(1, 2).contiguous()


LAYER, LAYERS = 1, 3  # the TransNormer case's block


def alibi_slopes(heads):
    """ALiBi's head slopes (Press et al. 2022): 2^(-8/h·(i+1)) for h a power of two, else the
    slopes of the power of two below, then every other slope of twice that."""
    def power_of_two(h):
        return [2.0 ** (-8.0 / h * (i + 1)) for i in range(h)]
    if heads & (heads - 1) == 0:
        return power_of_two(heads)
    below = 1 << (heads.bit_length() - 1)
    return power_of_two(below) + power_of_two(2 * below)[0::2][:heads - below]


def transnormer_rates(heads, layer, layers):
    """TransNormerLLM's LRPE-d decay: γ_h = exp(-m_h·(1 - l/(L-1) + 1e-5)), m_h ALiBi's slopes."""
    depth = 0.0 if layers == 1 else layer / (layers - 1)
    return torch.tensor([math.exp(-m * (1.0 - depth + 1e-5)) for m in alibi_slopes(heads)],
                        dtype=torch.float64)


def random_inputs(kind, n, gen):
    def normal(*shape, std=1.0):
        return torch.randn(*shape, generator=gen, dtype=torch.float64) * std

    x = {"q": normal(B, H, n, F), "k": normal(B, H, n, F), "v": normal(B, H, n, D)}
    if kind in ("delta_rule", "gated_delta_rule"):
        x["k"] = x["k"] / x["k"].norm(dim=-1, keepdim=True)  # DeltaNet's L2-normalised keys
        x["beta"] = torch.sigmoid(normal(B, H, n))
    if kind == "gla":
        # GLA's gate: log σ(·)/τ per key channel (τ = 4 keeps decays from vanishing at once).
        x["log_gate"] = torch.nn.functional.logsigmoid(normal(B, H, n, F)) / 4.0
    if kind == "transnormer_decay":
        x["log_gate"] = torch.log(transnormer_rates(H, LAYER, LAYERS)).view(1, H, 1).expand(
            B, H, n).contiguous()
    if kind in ("simple_gla", "gated_delta_rule"):
        # Mamba-2's scalar gate −Δ·A with Δ = softplus(·), A in [0.5, 2].
        delta = torch.nn.functional.softplus(normal(B, H, n) - 2.0)
        a = 0.5 + 1.5 * torch.rand(H, generator=gen, dtype=torch.float64)
        x["log_gate"] = -delta * a.view(1, H, 1)
    if kind != "retention":
        x["initial_state"] = normal(B, H, F, D, std=0.5)
    return x


def run_form(kind, x):
    """fla's form on Rota-layout inputs: (o [B, H, N, D], final state [B, H, F, D] or None)."""
    init = x.get("initial_state")
    if kind == "linear_attn":
        o, s = naive_recurrent_linear_attn(to_fla(x["q"]), to_fla(x["k"]), to_fla(x["v"]),
                                           scale=1.0, initial_state=init,
                                           output_final_state=True)
        return from_fla(o), s
    if kind == "retention":
        return naive_retention(x["q"], x["k"], x["v"]), None  # [B, H, T, K] in and out
    if kind in ("simple_gla", "transnormer_decay"):
        o, s = naive_recurrent_simple_gla(to_fla(x["q"]), to_fla(x["k"]), to_fla(x["v"]),
                                          to_fla(x["log_gate"]), scale=1.0, initial_state=init,
                                          output_final_state=True)
        return from_fla(o), s
    if kind == "gla":
        o, s = naive_recurrent_gla(to_fla(x["q"]), to_fla(x["k"]), to_fla(x["v"]),
                                   to_fla(x["log_gate"]), initial_state=init,
                                   output_final_state=True)
        return from_fla(o), s
    if kind == "delta_rule":
        return delta_rule_recurrence(x["q"], x["k"], x["v"], x["beta"], initial_state=init,
                                     output_final_state=True)  # [B, H, T, K] in and out
    if kind == "gated_delta_rule":
        o, s = naive_recurrent_gated_delta_rule(to_fla(x["q"]), to_fla(x["k"]), to_fla(x["v"]),
                                                to_fla(x["beta"]), to_fla(x["log_gate"]),
                                                scale=1.0, initial_state=init,
                                                output_final_state=True)
        return from_fla(o), s
    raise ValueError(kind)


# fla's q scale inside the forms that take none (module docstring).
Q_SCALE = {"retention": F ** -0.5, "gla": F ** -0.5, "delta_rule": F ** -0.5}


def check_against_float32(kind, x, o64, s64):
    """The unpatched float32 form agrees with the float64 run (the patch changed only precision)."""
    x32 = {name: t.float() for name, t in x.items()}
    o32, s32 = run_form(kind, x32)
    assert o32.dtype == torch.float32, (kind, o32.dtype)
    for name, got, want in (("o", o32, o64), ("final_state", s32, s64)):
        if want is None:
            continue
        err = (got.double() - want).abs().max().item()
        scale = max(1.0, want.abs().max().item())
        assert err <= 1e-4 * scale, f"{kind} {name}: float32 form differs by {err}"


def make_case(kind, n, seed):
    gen = torch.Generator().manual_seed(seed)
    x = random_inputs(kind, n, gen)
    for t in x.values():
        t.requires_grad_(True)
    with float64_forms():
        o, s = run_form(kind, x)
    assert o.dtype == torch.float64, (kind, o.dtype)
    grad_out = torch.randn(o.shape, generator=gen, dtype=torch.float64)
    loss = (o * grad_out).sum()
    tensors = {name: t.detach() for name, t in x.items()}
    tensors["grad_out"] = grad_out
    if s is not None:
        assert s.dtype == torch.float64, (kind, s.dtype)
        grad_final_state = torch.randn(s.shape, generator=gen, dtype=torch.float64)
        loss = loss + (s * grad_final_state).sum()
        tensors["grad_final_state"] = grad_final_state
        tensors["final_state"] = s.detach()
    grads = torch.autograd.grad(loss, list(x.values()))
    for name, g in zip(x, grads):
        tensors["d" + name] = g
    tensors["out"] = o.detach()
    check_against_float32(kind, {k: v.detach() for k, v in x.items()}, o.detach(),
                          None if s is None else s.detach())
    if kind == "transnormer_decay":
        # The rates are the golden's constants, not an input: no gradient of them is compared.
        tensors.pop("log_gate")
        tensors.pop("dlog_gate")
    config = {"kind": kind, "length": n, "batch": B, "heads": H, "key_dim": F, "value_dim": D,
              "q_scale": Q_SCALE.get(kind, 1.0), "seed": seed,
              "source": f"fla-core {fla.__version__}, torch {torch.__version__}"}
    if kind == "transnormer_decay":
        config.update(layer=LAYER, layers=LAYERS)
    return {"config": config,
            "tensors": {k: {"shape": list(t.shape),
                            "data": [float(f"{v:.17g}") for v in t.flatten().tolist()]}
                        for k, t in tensors.items()}}


def main():
    os.makedirs(OUT, exist_ok=True)
    seed = 100
    for kind in ("linear_attn", "retention", "simple_gla", "gla", "delta_rule",
                 "gated_delta_rule", "transnormer_decay"):
        for n in LENGTHS:
            seed += 1
            case = make_case(kind, n, seed)
            name = f"{kind}_n{n}.json"
            with open(os.path.join(OUT, name), "w") as f:
                json.dump(case, f, separators=(",", ":"))
            print("wrote", name)


if __name__ == "__main__":
    main()
