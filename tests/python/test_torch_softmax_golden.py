# Tests rota.torch.softmax_attention: committed goldens, gradcheck, C++ state-dict names.
"""Run: PYTHONPATH=python /usr/bin/python3 tests/python/test_torch_softmax_golden.py

Goldens (float64, written by tests/reference/*_reference.py, the same files the C++ golden tests
read): tests/golden/softmax_attention/ (the whole layer: none / rope / alibi / t5, output and
every gradient; T5 bucket tables; ALiBi slopes) and tests/golden/relative_encodings/ (Shaw, XL,
skew on projected heads q, k, v). Each case's parameters are loaded with strict load_state_dict,
so the golden parameter names (Rota's dotted names) must be exactly the module's keys.
"""
import json
import os
import unittest

import torch
from torch.nn.utils import stateless

from rota.torch.config import PositionConfig, RotaConfig
from rota.torch.softmax_attention import (SoftmaxAttention, alibi_slopes, chunk_visibility_mask,
                                          make_shared_t5, t5_relative_bucket)

torch.set_num_threads(1)
torch.set_flush_denormal(True)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden")
SOFTMAX = os.path.join(ROOT, "softmax_attention")
RELATIVE = os.path.join(ROOT, "relative_encodings")

# Tolerances, relative to the largest magnitude of the expected tensor.
F64_TOL = 1e-12   # float64 against float64 goldens
F32_TOL = 1e-5    # float32 run against the float64 goldens (the parity target)

MAX_ERRORS = {}  # name -> max relative error seen, printed at the end


def load_case(path):
    with open(path) as f:
        raw = json.load(f)
    tensors = {k: torch.tensor(v["data"], dtype=torch.float64).reshape(v["shape"])
               for k, v in raw["tensors"].items()}
    return raw["config"], tensors


def params_of(tensors):
    return {k[len("param."):]: v for k, v in tensors.items() if k.startswith("param.")}


def rel_err(actual, expected):
    scale = expected.abs().max().clamp(min=1e-300)
    return float((actual.to(torch.float64) - expected).abs().max() / scale)


class GoldenMixin:
    def assert_close(self, label, actual, expected, tol):
        self.assertEqual(tuple(actual.shape), tuple(expected.shape), label)
        self.assertTrue(torch.isfinite(actual).all(), label)
        err = rel_err(actual, expected)
        MAX_ERRORS[label] = max(MAX_ERRORS.get(label, 0.0), err)
        self.assertLessEqual(err, tol, f"{label}: max relative error {err:.3e} > {tol:.0e}")


# ---- the layer (tests/golden/softmax_attention) ------------------------------------------

def layer_config(cfg):
    pos = PositionConfig(kind=cfg["encoding"])
    if cfg["encoding"] == "t5":
        pos.buckets, pos.max_distance = cfg["t5_num_buckets"], cfg["t5_max_distance"]
    if cfg["encoding"] == "rope":
        pos.pairing = "adjacent"
    return RotaConfig(attention="softmax", width=cfg["dim"], heads=cfg["heads"], position=pos,
                      dropout=0.0, attention_dropout=0.0)


SOFTMAX_CASES = sorted(f[:-5] for f in os.listdir(SOFTMAX)
                       if f.endswith(".json") and not f.startswith("table_"))


class SoftmaxLayerGolden(GoldenMixin, unittest.TestCase):
    def run_case(self, name, dtype, tol):
        cfg, t = load_case(os.path.join(SOFTMAX, name + ".json"))
        layer = SoftmaxAttention(layer_config(cfg), causal=cfg["causal"]).to(dtype).eval()
        params = params_of(t)
        layer.load_state_dict(params, strict=True)  # copies (and rounds) into the layer's dtype
        self.assertEqual(sorted(layer.state_dict()), sorted(params))
        x = t["input"].to(dtype).requires_grad_(True)
        kv = t["key_value_input"].to(dtype).requires_grad_(True) if "key_value_input" in t else None
        mask = t.get("key_padding_mask")
        out = layer(x, mask, key_value_input=kv, query_offset=cfg["query_offset"])
        out.backward(t["upstream"].to(dtype))
        self.assert_close(f"{name}/{dtype}/output", out.detach(), t["output"], tol)
        self.assert_close(f"{name}/{dtype}/grad.input", x.grad, t["grad.input"], tol)
        if kv is not None:
            self.assert_close(f"{name}/{dtype}/grad.key_value_input", kv.grad,
                              t["grad.key_value_input"], tol)
        named = dict(layer.named_parameters())
        checked = 0
        for key in params:
            if key == "k_proj.bias" and cfg["encoding"] != "rope":
                # Analytically zero (b_k adds q_i.b_k to every logit of row i, which the softmax
                # cancels): both sides are rounding noise, so compare on the scale of the
                # k_proj gradient rather than relative to the noise itself.
                scale = t["grad.k_proj.weight"].abs().max()
                for label, g in (("golden", t["grad." + key]), ("ours", named[key].grad)):
                    err = float(g.abs().max() / scale)
                    MAX_ERRORS[f"{name}/{dtype}/grad.{key}.{label}"] = err
                    self.assertLessEqual(err, tol, f"{name}/{dtype}/grad.{key} ({label})")
                checked += 1
            elif "grad." + key in t:
                self.assert_close(f"{name}/{dtype}/grad.{key}", named[key].grad, t["grad." + key],
                                  tol)
                checked += 1
            else:  # only RoPE's frozen theta has no golden gradient
                self.assertEqual(key, "rope.theta")
                self.assertFalse(named[key].requires_grad)
        self.assertGreaterEqual(checked, 8)

    def test_cases_float64(self):
        self.assertEqual(len(SOFTMAX_CASES), 11)
        for name in SOFTMAX_CASES:
            with self.subTest(name):
                self.run_case(name, torch.float64, F64_TOL)

    def test_cases_float32(self):
        for name in SOFTMAX_CASES:
            with self.subTest(name):
                self.run_case(name, torch.float32, F32_TOL)

    def test_t5_bucket_tables(self):
        _, tables = load_case(os.path.join(SOFTMAX, "table_t5_buckets.json"))
        t = tables.pop("t").to(torch.int64)
        self.assertEqual(len(tables), 8)
        for name, expected in tables.items():
            nb, md, mode = name.split("_")
            got = t5_relative_bucket(t, mode == "bidirectional", int(nb), int(md))
            self.assertTrue(torch.equal(got, expected.to(torch.int64)), name)

    def test_alibi_slopes(self):
        _, tables = load_case(os.path.join(SOFTMAX, "table_alibi_slopes.json"))
        self.assertEqual(len(tables), 32)
        for h, expected in tables.items():
            got = torch.tensor(alibi_slopes(int(h)), dtype=torch.float64)
            self.assert_close(f"alibi_slopes/{h}", got, expected, 1e-15)
        self.assertEqual(alibi_slopes(3), [1 / 16, 1 / 256, 1 / 4])  # the C++ header's example


# ---- Shaw / XL / skew on heads (tests/golden/relative_encodings) ---------------------------

def relative_config(cfg):
    kind = {"shaw": "shaw", "xl": "transformer_xl", "skew": "skew"}[cfg["encoding"]]
    pos = PositionConfig(kind=kind)
    if kind == "shaw":
        pos.clip, pos.values = cfg["clip"], cfg["values"]
    elif kind == "transformer_xl":
        pos.layout, pos.pe_width = cfg["layout"], cfg["pe_dim"]
    else:
        pos.max_len = cfg["max_len"]
    h, d = cfg["heads"], cfg["head_dim"]
    return RotaConfig(attention="softmax", width=h * d, heads=h, position=pos)


RELATIVE_CASES = sorted(f[:-5] for f in os.listdir(RELATIVE) if f.endswith(".json"))


class RelativeEncodingGolden(GoldenMixin, unittest.TestCase):
    def run_case(self, name, dtype, tol):
        cfg, t = load_case(os.path.join(RELATIVE, name + ".json"))
        layer = SoftmaxAttention(relative_config(cfg), causal=cfg["causal"]).to(dtype).eval()
        params = params_of(t)
        layer.position.load_state_dict(params, strict=True)
        self.assertEqual(sorted(layer.position.state_dict()), sorted(params))
        q, k, v = (t[n].to(dtype).requires_grad_(True) for n in ("q", "k", "v"))
        out = layer.attend(q, k, v, key_padding_mask=t.get("key_padding_mask"),
                           query_offset=cfg["offset"])
        out.backward(t["upstream"].to(dtype))
        self.assert_close(f"{name}/{dtype}/output", out.detach(), t["output"], tol)
        for n, leaf in (("q", q), ("k", k), ("v", v)):
            self.assert_close(f"{name}/{dtype}/grad.{n}", leaf.grad, t["grad." + n], tol)
        named = dict(layer.position.named_parameters())
        for key in params:
            self.assert_close(f"{name}/{dtype}/grad.{key}", named[key].grad, t["grad." + key], tol)

    def test_cases_float64(self):
        self.assertEqual(len(RELATIVE_CASES), 12)
        for name in RELATIVE_CASES:
            with self.subTest(name):
                self.run_case(name, torch.float64, F64_TOL)

    def test_cases_float32(self):
        for name in RELATIVE_CASES:
            with self.subTest(name):
                self.run_case(name, torch.float32, F32_TOL)


# ---- state-dict names -------------------------------------------------------------------

PROJECTIONS = [f"{p}.{w}" for p in ("q_proj", "k_proj", "v_proj", "out_proj")
               for w in ("weight", "bias")]


def tiny(kind, width=8, heads=2, **position):
    return RotaConfig(attention="softmax", width=width, heads=heads, vocab_size=11,
                      position=PositionConfig(kind=kind, **position))


class StateDictNames(unittest.TestCase):
    """Expected names and shapes transcribed from the C++ source: the register_module /
    register_parameter calls of softmax_attention.cpp (q_proj, k_proj, v_proj, out_proj, rope,
    position), linear.cpp (weight, bias), lrpe.cpp (theta), t5_bias.cpp (weight [N_b, H]),
    shaw.cpp (key_table, value_table [K_l + K_r + 1, D]), relative_xl.cpp (linear_pos without
    bias, pos_bias_u, pos_bias_v [H, D]), skew.cpp (table [2L - 1, D] or [H, 2L - 1, D]); alibi
    has none. The golden tests above check the same names against the golden files."""

    def check(self, config, causal, expected):
        layer = SoftmaxAttention(config, causal)
        e = config.width
        want = {k: (e,) if k.endswith("bias") else (e, e) for k in PROJECTIONS}
        want.update(expected)
        got = {k: tuple(v.shape) for k, v in layer.state_dict().items()}
        self.assertEqual(got, want)
        return layer

    def test_every_encoding(self):
        d = 4  # width 8, 2 heads
        for kind in ("none", "sinusoidal", "learned_absolute", "alibi"):
            self.check(tiny(kind), True, {})
        layer = self.check(tiny("rope", pairing="half"), True, {"rope.theta": (d // 2,)})
        self.assertFalse(layer.rope.theta.requires_grad)
        self.check(tiny("t5", buckets=16, max_distance=64), False, {"position.weight": (16, 2)})
        self.check(tiny("shaw", clip=3), True, {"position.key_table": (7, d)})
        self.check(tiny("shaw", clip=16, clip_left=5, clip_right=2, values=True), False,
                   {"position.key_table": (8, d), "position.value_table": (8, d)})
        self.check(tiny("transformer_xl"), True,
                   {"position.pos_bias_u": (2, d), "position.pos_bias_v": (2, d),
                    "position.linear_pos.weight": (8, 8)})
        self.check(tiny("transformer_xl", pe_width=6, layout="concatenated"), True,
                   {"position.pos_bias_u": (2, d), "position.pos_bias_v": (2, d),
                    "position.linear_pos.weight": (8, 6)})
        self.check(tiny("skew", max_len=10), True, {"position.table": (19, d)})
        self.check(tiny("skew", max_len=10, per_head=True), True, {"position.table": (2, 19, d)})

    def test_refused(self):
        for kind in ("lrpe", "permute_former"):
            with self.assertRaisesRegex(ValueError, kind):
                SoftmaxAttention(tiny(kind), True)
        with self.assertRaisesRegex(ValueError, "even head dim"):
            SoftmaxAttention(tiny("rope", width=6, heads=2), True)

    def test_shared_t5_registered_once(self):
        """As models/encoder.cpp + transformer_block.cpp: one table per stack, registered by the
        first block only (`encoder.blocks.0.attn.position.weight`), used by every block."""
        config = tiny("t5", buckets=8, max_distance=16)
        shared = make_shared_t5(config, causal=True)
        self.assertFalse(shared.bidirectional)  # bidirectional default: not causal
        self.assertIsNone(make_shared_t5(tiny("alibi"), True))
        blocks = torch.nn.ModuleList()
        for i in range(3):
            block = torch.nn.Module()
            block.attn = SoftmaxAttention(config, True, shared, owns_shared=(i == 0))
            blocks.append(block)
        keys = [k for k in blocks.state_dict() if "position" in k]
        self.assertEqual(keys, ["0.attn.position.weight"])
        self.assertEqual(len(list(blocks.parameters())), 3 * 8 + 1)
        for block in blocks:
            self.assertIs(block.attn.relative_encoding, shared)
        # The third block's output follows the (first block's) table.
        x = torch.randn(1, 5, 8)
        before = blocks[2].attn(x)
        with torch.no_grad():
            blocks[0].attn.position.weight.add_(1.0 + torch.arange(16.0).view(8, 2))
        self.assertGreater(float((blocks[2].attn(x) - before).abs().max()), 1e-3)
        # dtype conversion of the container reaches the borrowed reference too.
        blocks.double()
        self.assertEqual(blocks[2].attn.relative_encoding.weight.dtype, torch.float64)
        self.assertEqual(blocks[2].attn(x.double()).dtype, torch.float64)


# ---- masks, offsets, streaming, dropout ----------------------------------------------------

ALL_KINDS = [("none", {}), ("rope", {}), ("rope", {"pairing": "half"}), ("alibi", {}),
             ("t5", {"buckets": 8, "max_distance": 8}), ("shaw", {"clip": 2}),
             ("shaw", {"clip": 3, "clip_left": 2, "clip_right": 1, "values": True}),
             ("transformer_xl", {}), ("transformer_xl", {"layout": "concatenated", "pe_width": 6}),
             ("skew", {"max_len": 10}), ("skew", {"max_len": 10, "per_head": True})]


def double_layer(kind, causal, seed=0, **kw):
    torch.manual_seed(seed)
    config = tiny(kind, **{k: v for k, v in kw.items() if k not in ("stream_chunk", "memory")})
    config.stream_chunk = kw.get("stream_chunk", 0)
    config.stream_left_memory = kw.get("memory", -1)
    layer = SoftmaxAttention(config, causal).double().eval()
    with torch.no_grad():  # larger, non-trivial parameters than init_std 0.02 gives
        for p in layer.parameters():
            if p.requires_grad:
                p.copy_(torch.randn_like(p) * 0.5)
    return layer


class MasksAndOffsets(unittest.TestCase):
    def test_chunk_mask_formula(self):
        for n, c, m in ((11, 3, 4), (10, 4, -1), (9, 2, 0), (7, 7, 0), (5, 8, 2)):
            want = torch.zeros(n, n, dtype=torch.bool)
            for p in range(n):
                c0 = p // c * c
                lo = 0 if m < 0 else max(0, c0 - m)
                want[p, lo:min(n, c0 + c)] = True
            self.assertTrue(torch.equal(chunk_visibility_mask(n, c, m), want), (n, c, m))

    def test_streaming_is_the_masked_layer(self):
        """stream_chunk applies chunk_visibility_mask(N, C, M) (and causal) to every encoding."""
        x = torch.randn(2, 9, 8, dtype=torch.float64)
        pad = torch.ones(2, 9)
        pad[1, 7:] = 0
        for kind, kw in ALL_KINDS:
            for causal in (False, True):
                with self.subTest(kind=kind, kw=kw, causal=causal):
                    streaming = double_layer(kind, causal, stream_chunk=3, memory=2, **kw)
                    plain = double_layer(kind, causal, **kw)
                    plain.load_state_dict(streaming.state_dict())
                    got = streaming(x, pad)
                    b, n, h, d = 2, 9, 2, 4
                    split = lambda t: t.view(b, n, h, d).transpose(1, 2)
                    o = plain.attend(split(plain.q_proj(x)), split(plain.k_proj(x)),
                                     split(plain.v_proj(x)), pad, chunk_visibility_mask(9, 3, 2))
                    want = plain.out_proj(o.transpose(1, 2).reshape(b, n, 8))
                    self.assertLessEqual(float((got - want).abs().max()), 1e-14)
                    # and the mask does change the result
                    self.assertGreater(float((got - plain(x, pad)).abs().max()), 1e-6)

    def test_end_aligned_queries_reproduce_self_attention_rows(self):
        """Causal cross-attention of the last 3 positions (query_offset = N - 3) gives the last
        3 rows of causal self-attention, for every encoding."""
        x = torch.randn(2, 7, 8, dtype=torch.float64)
        for kind, kw in ALL_KINDS:
            with self.subTest(kind=kind, kw=kw):
                layer = double_layer(kind, True, **kw)
                full = layer(x)
                tail = layer(x[:, 4:], key_value_input=x, query_offset=4)
                self.assertLessEqual(float((full[:, 4:] - tail).abs().max()), 1e-13)

    def test_padding_and_dead_rows(self):
        """Padded keys get no weight; a sequence whose keys are all padding gives out_proj's
        bias (the kernel's zero row), with finite gradients."""
        x = torch.randn(2, 6, 8, dtype=torch.float64, requires_grad=True)
        pad = torch.tensor([[1, 1, 1, 1, 0, 0], [0, 0, 0, 0, 0, 0]], dtype=torch.bool)
        for kind, kw in ALL_KINDS:
            for causal in (False, True):
                with self.subTest(kind=kind, kw=kw, causal=causal):
                    layer = double_layer(kind, causal, **kw)
                    out = layer(x, pad)
                    self.assertTrue(torch.isfinite(out).all())
                    self.assertLessEqual(float((out[1] - layer.out_proj.bias).abs().max()), 0.0)
                    x.grad = None
                    out.sum().backward()
                    self.assertTrue(torch.isfinite(x.grad).all())
                    # the padded keys' inputs do not influence the first sequence
                    x2 = x.detach().clone()
                    x2[0, 4:] += 10.0
                    diff = (layer(x2, pad)[0, :4] - out[0, :4]).abs().max()
                    self.assertLessEqual(float(diff), 1e-13)

    def test_scale_and_dropout(self):
        config = tiny("alibi")
        config.softmax_scale = 1.0
        config.attention_dropout = 0.5
        layer = SoftmaxAttention(config, False).double()
        self.assertEqual(layer.scale, 1.0)
        self.assertEqual(SoftmaxAttention(tiny("none"), False).scale, 0.5)  # 1/sqrt(4)
        x = torch.randn(1, 6, 8, dtype=torch.float64)
        layer.eval()
        self.assertTrue(torch.equal(layer(x), layer(x)))  # no dropout in eval
        layer.train()
        torch.manual_seed(1)
        a = layer(x)
        torch.manual_seed(2)
        b = layer(x)
        self.assertGreater(float((a - b).abs().max()), 1e-6)  # dropout in training


class OptionsWithoutGoldens(unittest.TestCase):
    def test_shaw_asymmetric_clip_naive_loop(self):
        """kappa(t) = clip(t, -K_left, K_right) + K_left with t = j - i - off (the past, t < 0,
        is clipped by K_left), value table included, against a per-(i, j) loop of the formula."""
        layer = double_layer("shaw", False, clip=9, clip_left=3, clip_right=1, values=True)
        self.assertEqual(tuple(layer.position.key_table.shape), (5, 4))
        b, h, n_q, n_k, d, off = 2, 2, 4, 9, 4, 3
        q, k, v = (torch.randn(b, h, n, d, dtype=torch.float64) for n in (n_q, n_k, n_k))
        pad = torch.ones(b, n_k)
        pad[1, :2] = 0
        got = layer.attend(q, k, v, key_padding_mask=pad, query_offset=off)
        ek, ev, s = layer.position.key_table, layer.position.value_table, layer.scale
        want = torch.zeros_like(got)
        for bb in range(b):
            for hh in range(h):
                for i in range(n_q):
                    logits, rows = [], []
                    for j in range(n_k):
                        t = j - i - off
                        r = min(max(t, -3), 1) + 3
                        rows.append(r)
                        visible = pad[bb, j] != 0
                        logits.append(s * (q[bb, hh, i] @ (k[bb, hh, j] + ek[r])) if visible
                                      else torch.tensor(float("-inf"), dtype=torch.float64))
                    p = torch.softmax(torch.stack(logits), 0)
                    for j in range(n_k):
                        want[bb, hh, i] += p[j] * (v[bb, hh, j] + ev[rows[j]])
        self.assertLessEqual(float((got - want).abs().max()), 1e-14)

    def test_rope_half_is_adjacent_up_to_a_channel_permutation(self):
        """Pairing half (k, k + D/2) with q/k projections permuted per head equals adjacent
        (2k, 2k + 1) (docs/softmax-attention.md); and the two differ on the same weights."""
        adjacent = double_layer("rope", True)
        half = double_layer("rope", True, pairing="half")
        half.load_state_dict(adjacent.state_dict())
        x = torch.randn(2, 6, 8, dtype=torch.float64)
        self.assertGreater(float((half(x) - adjacent(x)).abs().max()), 1e-6)
        d = 4
        per_head = [*range(0, d, 2), *range(1, d, 2)]  # half channel c <- adjacent channel
        perm = torch.tensor([hh * d + c for hh in range(2) for c in per_head])
        with torch.no_grad():
            for name in ("q_proj", "k_proj"):
                getattr(half, name).weight.copy_(getattr(adjacent, name).weight[perm])
                getattr(half, name).bias.copy_(getattr(adjacent, name).bias[perm])
        self.assertLessEqual(float((half(x) - adjacent(x)).abs().max()), 1e-14)

    def test_t5_bidirectional_option(self):
        for causal, option, want in ((True, None, False), (False, None, True), (True, True, True),
                                     (False, False, False)):
            config = tiny("t5", buckets=8, max_distance=16, bidirectional=option)
            self.assertEqual(SoftmaxAttention(config, causal).position.bidirectional, want)
            self.assertEqual(make_shared_t5(config, causal).bidirectional, want)


# ---- gradcheck ---------------------------------------------------------------------------

class GradCheck(unittest.TestCase):
    def test_gradcheck_every_encoding(self):
        x = torch.randn(2, 5, 8, dtype=torch.float64, requires_grad=True)
        pad = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
        for kind, kw in ALL_KINDS:
            for causal, extra in ((True, {}), (False, {"stream_chunk": 2, "memory": 1})):
                with self.subTest(kind=kind, kw=kw, causal=causal):
                    layer = double_layer(kind, causal, **kw, **extra)
                    names = [n for n, p in layer.named_parameters() if p.requires_grad]
                    values = tuple(dict(layer.named_parameters())[n].detach().clone()
                                   .requires_grad_(True) for n in names)

                    def f(inp, *params):
                        return stateless.functional_call(layer, dict(zip(names, params)),
                                                         (inp, None if causal else pad))

                    self.assertTrue(torch.autograd.gradcheck(f, (x,) + values, eps=1e-6,
                                                             atol=1e-7, rtol=1e-5))


def tearDownModule():
    if MAX_ERRORS:
        worst = {}
        for label, err in MAX_ERRORS.items():
            case, dtype = label.split("/")[:2]
            key = (case, dtype)
            worst[key] = max(worst.get(key, 0.0), err)
        print("\nmax relative error per golden case (over output and every gradient):")
        for (case, dtype), err in sorted(worst.items()):
            print(f"  {case:28s} {dtype:14s} {err:.2e}")


if __name__ == "__main__":
    unittest.main()
