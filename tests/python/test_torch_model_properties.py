# rota.torch on its own: maths properties of its linear attention, gradients, strict loading, saving.
import copy
import os
import sys
import tempfile
import unittest

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import rota.torch as rt  # noqa: E402
from rota.torch import safetensors_io  # noqa: E402
from rota.torch.checkpoint import config_to_model_text  # noqa: E402

torch.set_num_threads(2)
torch.set_flush_denormal(True)

LINEAR_POSITIONS = [
    rt.PositionConfig(kind="none"),
    rt.PositionConfig(kind="sinusoidal"),
    rt.PositionConfig(kind="learned_absolute", max_positions=64),
    rt.PositionConfig(kind="rope"),
    rt.PositionConfig(kind="rope", pairing="half"),
    rt.PositionConfig(kind="permute_former"),
] + [rt.PositionConfig(kind="lrpe", type=t, p=p, pairing=pairing)
     for t in (1, 2, 3) for p in ("identity", "householder", "householder_frozen", "odd_even")
     for pairing in (("adjacent", "half") if t == 2 else ("adjacent",))]


def small_config(position, kind="causal_lm", **overrides):
    values = dict(kind=kind, vocab_size=23, width=12, layers=2, heads=2, ffn_width=16,
                  dropout=0.0, chunk_size=4, position=copy.deepcopy(position))
    values.update(overrides)
    return rt.RotaConfig(**values)


def quadratic_reference(q, k, v, decay=None):
    """o_s = Σ_{t≤s} γ^(s−t) (q_s·k_t) v_t, written out with an explicit [N, N] weight matrix."""
    n = q.shape[2]
    s = torch.arange(n, dtype=q.dtype)
    diff = s[:, None] - s[None, :]
    mask = (diff >= 0).to(q.dtype)
    if decay is None:
        weights = mask.expand(q.shape[1], n, n)
    else:
        weights = decay.reshape(-1, 1, 1) ** diff.clamp(min=0) * mask
    return ((q @ k.transpose(-1, -2)) * weights) @ v


def loop_reference(q, k, v, decay=None):
    """The same as a per-token loop over the recurrent state S = γS + kᵀv, o = qS."""
    b, h, n, f = q.shape
    state = torch.zeros(b, h, f, v.shape[-1], dtype=q.dtype)
    outs = []
    for t in range(n):
        if decay is not None:
            state = state * decay.reshape(1, h, 1, 1)
        state = state + k[:, :, t, :, None] * v[:, :, t, None, :]
        outs.append((q[:, :, t, None, :] @ state)[:, :, 0])
    return torch.stack(outs, dim=2)


class ChunkedEqualsQuadraticEqualsRecurrent(unittest.TestCase):
    def test_kernels(self):
        g = torch.Generator().manual_seed(0)
        for n, c in [(13, 4), (3, 8), (9, 1), (16, 16), (1, 4)]:
            for decay in (None, torch.tensor([0.9, 0.6], dtype=torch.float64)):
                q, k = (torch.randn(2, 2, n, 5, generator=g, dtype=torch.float64) for _ in "qk")
                v = torch.randn(2, 2, n, 3, generator=g, dtype=torch.float64)
                chunked = rt.causal_linear_attention(q, k, v, c, decay)
                with self.subTest(n=n, c=c, decay=decay is not None):
                    torch.testing.assert_close(chunked, quadratic_reference(q, k, v, decay),
                                               rtol=1e-12, atol=1e-12)
                    torch.testing.assert_close(chunked, loop_reference(q, k, v, decay),
                                               rtol=1e-12, atol=1e-12)

    def test_model_forward_equals_recurrent_generation_state(self):
        for position in LINEAR_POSITIONS:
            for normalization in ("layer_norm", "rms_norm"):
                torch.manual_seed(1)
                model = rt.build_model(small_config(position, normalization=normalization))
                model.double().eval()
                ids = torch.randint(0, 23, (2, 11))
                full = model(ids)
                state = model.initial_state(2)
                stepped = torch.stack([model.step(ids[:, t], state) for t in range(11)], 1)
                with self.subTest(position=position.kind, type=position.type, p=position.p,
                                  pairing=position.pairing, norm=normalization):
                    torch.testing.assert_close(stepped, full, rtol=1e-10, atol=1e-10)

    def test_bf16_autocast_forward_runs_and_stays_close_to_f32(self):
        # CPU autocast computes the products in bf16; every norm still sees its own dtype.
        for normalization in ("layer_norm", "rms_norm"):
            torch.manual_seed(2)
            model = rt.build_model(small_config(LINEAR_POSITIONS[0], normalization=normalization))
            model.eval()
            ids = torch.randint(0, 23, (2, 11))
            with torch.no_grad():
                full = model(ids)
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    low = model(ids).float()
            with self.subTest(norm=normalization):
                self.assertTrue(torch.isfinite(low).all())
                # bf16 keeps 8 significant bits: logits agree to a few percent of their spread.
                self.assertLess(float((low - full).abs().max()), 0.05 * float(full.std()) + 0.02)

    def test_denominator_with_nonnegative_features(self):
        for fmap in ("one_plus_elu", "relu", "exp"):
            for position in (rt.PositionConfig(kind="none"),
                             rt.PositionConfig(kind="lrpe", type=3, p="identity")):
                torch.manual_seed(2)
                model = rt.build_model(small_config(position, normalization="denominator",
                                                    feature_map=fmap)).double().eval()
                ids = torch.randint(0, 23, (1, 9))
                state = model.initial_state(1)
                stepped = torch.stack([model.step(ids[:, t], state) for t in range(9)], 1)
                torch.testing.assert_close(stepped, model(ids), rtol=1e-10, atol=1e-10)

    def test_denominator_refuses_signed_features(self):
        with self.assertRaisesRegex(ValueError, "signed"):
            rt.build_model(small_config(rt.PositionConfig(kind="none"),
                                        normalization="denominator", feature_map="silu"))
        with self.assertRaisesRegex(ValueError, "signed"):
            rt.build_model(small_config(rt.PositionConfig(kind="lrpe", type=2),
                                        normalization="denominator"))


class RelativePosition(unittest.TestCase):
    def test_lrpe_products_depend_on_distance_only(self):
        g = torch.Generator().manual_seed(3)
        for t in (1, 2, 3):
            for p in ("identity", "householder", "odd_even"):
                lrpe = rt.Lrpe(7 if t == 2 else 6, type=t, p=p).double()
                d = lrpe.head_dim
                x = torch.randn(5, d, generator=g, dtype=torch.float64)
                y = torch.randn(5, d, generator=g, dtype=torch.float64)
                base = lrpe(x, 0) @ lrpe(y, 0).t()  # [s, t] products at positions s, t
                shifted = lrpe(x, 9) @ lrpe(y, 9).t()
                with self.subTest(type=t, p=p):
                    torch.testing.assert_close(shifted, base, rtol=1e-10, atol=1e-10)
                    # and not invariant to a shift of one side only (position matters)
                    self.assertGreater((lrpe(x, 3) @ lrpe(y, 0).t() - base).abs().max(), 1e-3)

    def test_permutation_powers_compose(self):
        perm = torch.randperm(9)
        table = rt.positions.permutation_powers(perm, 0, 12)
        power = torch.arange(9)
        for s in range(12):
            self.assertTrue(torch.equal(table[s], power))
            power = perm[power]
        torch.testing.assert_close(rt.positions.permutation_powers(perm, 5, 3), table[5:8])


class Gradients(unittest.TestCase):
    def test_gradcheck_every_linear_encoding(self):
        for position in LINEAR_POSITIONS:
            for causal in (True, False):
                torch.manual_seed(4)
                cfg = small_config(position, width=8, heads=2, chunk_size=3)
                layer = rt.LinearAttention(cfg, causal).double()
                x = torch.randn(1, 5, 8, dtype=torch.float64, requires_grad=True)
                mask = None if causal else torch.tensor([[1, 1, 1, 0, 1]])
                params = [p for p in layer.parameters() if p.requires_grad]
                fn = lambda x, *ps: layer(x, mask)  # noqa: E731 - parameters read from layer
                with self.subTest(position=position.kind, type=position.type, p=position.p,
                                  causal=causal):
                    self.assertTrue(torch.autograd.gradcheck(fn, (x, *params), eps=1e-6,
                                                             atol=1e-7, rtol=1e-6))

    def test_bidirectional_key_mask_hides_padding(self):
        torch.manual_seed(5)
        model = rt.build_model(small_config(rt.PositionConfig(kind="lrpe"),
                                            kind="classifier")).double().eval()
        ids = torch.randint(0, 23, (1, 8))
        mask = torch.tensor([[1, 1, 1, 1, 1, 0, 0, 0]])
        other = ids.clone()
        other[0, 5:] = (other[0, 5:] + 1) % 23
        torch.testing.assert_close(model(ids, mask), model(other, mask), rtol=0, atol=1e-12)
        torch.testing.assert_close(model(ids, mask), model(ids[:, :5]), rtol=1e-12, atol=1e-12)


class LoadingAndSaving(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def _saved(self, kind="causal_lm", position=None):
        torch.manual_seed(6)
        model = rt.build_model(small_config(position or rt.PositionConfig(kind="lrpe", type=3),
                                            kind=kind))
        out = os.path.join(self.dir.name, f"ckpt_{kind}")
        rt.save_checkpoint(model, out)
        return model, out

    def test_round_trip_every_kind(self):
        for kind in ("causal_lm", "masked_lm", "classifier"):
            model, out = self._saved(kind)
            loaded = rt.from_pretrained(out)
            self.assertEqual(loaded.config, model.config)
            ids = torch.randint(0, 23, (2, 7))
            torch.testing.assert_close(loaded(ids), model.eval()(ids), rtol=0, atol=0)

    def test_model_text_round_trips_every_option(self):
        for position in LINEAR_POSITIONS + [rt.PositionConfig(kind=k) for k in (
                "alibi", "t5", "shaw", "transformer_xl", "skew")]:
            attention = "softmax" if position.kind in ("alibi", "t5", "shaw", "transformer_xl",
                                                       "skew") else "linear"
            cfg = small_config(position, attention=attention, post_norm=True, activation="silu",
                               scale_embeddings=True, tie_embeddings=False)
            if attention == "softmax":  # the linear block's fields are not written for softmax
                cfg.chunk_size = rt.RotaConfig().chunk_size
                cfg.stream_chunk, cfg.stream_left_memory, cfg.softmax_scale = 4, 2, 0.5
            again = rt.RotaConfig.from_recipe_text(config_to_model_text(cfg), vocab_size=23)
            with self.subTest(position=position.kind):
                self.assertEqual(again, cfg)

    def test_strict_loading_refuses(self):
        _, out = self._saved()
        path = os.path.join(out, "model.safetensors")
        tensors, meta = safetensors_io.read(path)

        def refused(changed, pattern):
            bad = os.path.join(self.dir.name, "bad")
            os.makedirs(bad, exist_ok=True)
            for name in os.listdir(out):
                if name != "model.safetensors":
                    with open(os.path.join(out, name), "rb") as f, \
                            open(os.path.join(bad, name), "wb") as g:
                        g.write(f.read())
            safetensors_io.write(os.path.join(bad, "model.safetensors"), changed)
            with self.assertRaisesRegex(ValueError, pattern):
                rt.from_pretrained(bad)

        missing = dict(tensors)
        del missing["encoder.blocks.1.attn.lrpe.permutation"]
        refused(missing, "missing in the file.*permutation")
        extra = dict(tensors, **{"encoder.blocks.0.attn.extra": np.zeros(3, np.float32)})
        refused(extra, "not in the model.*extra")
        reshaped = dict(tensors)
        reshaped["encoder.blocks.0.ln1.weight"] = np.zeros(13, np.float32)
        refused(reshaped, "shape")
        retyped = dict(tensors)
        retyped["encoder.blocks.0.ln1.weight"] = retyped["encoder.blocks.0.ln1.weight"].view(
            np.int32)
        refused(retyped, "refusing to convert")

    def test_damaged_file_is_refused(self):
        _, out = self._saved()
        path = os.path.join(out, "model.safetensors")
        with open(path, "r+b") as f:
            f.seek(-3, os.SEEK_END)
            byte = f.read(1)
            f.seek(-3, os.SEEK_END)
            f.write(bytes([byte[0] ^ 1]))
        with self.assertRaisesRegex(ValueError, "CRC-32C"):
            rt.from_pretrained(out)

    def test_crc32c_known_values(self):
        self.assertEqual(safetensors_io.crc32c(b"123456789"), 0xE3069283)  # the standard check
        data = bytes(range(256)) * 700
        crc = 0xFFFFFFFF
        for byte in data:  # bitwise definition, independent of the table and block folding
            crc ^= byte
            for _ in range(8):
                crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        self.assertEqual(safetensors_io.crc32c(data), crc ^ 0xFFFFFFFF)


if __name__ == "__main__":
    unittest.main()
