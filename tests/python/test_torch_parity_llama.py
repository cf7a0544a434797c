# rota.torch vs Rota on LLaMA-style blocks: RMSNorm, SwiGLU/GeGLU, biases, GQA, RoPE scaling.
import math
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import parity_support as ps  # noqa: E402
import rota.torch as rt  # noqa: E402
import torch  # noqa: E402
from rota.torch.checkpoint import config_to_model_text  # noqa: E402

P = rt.PositionConfig
S = rt.RopeScaling
LLAMA = dict(norm_kind="rms_norm", activation="swiglu", bias=False)
LLAMA3 = S(kind="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
           original_max_positions=16)
CASES = {
    "llama_lrpe2": ps.config(**LLAMA),
    "llama_softmax_rope_half": ps.config(attention="softmax", position=P(kind="rope",
                                                                          pairing="half"),
                                         **LLAMA),
    "llama_mlm_geglu": ps.config("masked_lm", **dict(LLAMA, activation="geglu")),
    "llama_cls_default_width": ps.config("classifier", ffn_width=None, **LLAMA),
    "no_bias_layer_norm_post_norm": ps.config(bias=False, post_norm=True),
    "rms_norm_blocks_only": ps.config(norm_kind="rms_norm"),
    # Llama 3 / Qwen2: grouped-query attention (4 query heads of D = 4 on 2 key/value heads),
    # RoPE HALF with the llama3 rescaling of θ, biases on q/k/v only.
    "llama_gqa_llama3_qkv_bias": ps.config(
        attention="softmax", heads=4, kv_heads=2, biases=rt.Biases(qkv=True),
        position=P(kind="rope", pairing="half", base=500000.0, scaling=LLAMA3), **LLAMA),
    # Multi-query attention with a sliding window (Mistral), linear RoPE scaling, and the
    # per-part biases the other way round: bias true but none on out_proj and the norms.
    "mqa_window_linear_scaling": ps.config(
        attention="softmax", heads=4, kv_heads=1, window=5,
        biases=rt.Biases(attention_out=False, norms=False),
        position=P(kind="rope", scaling=S(kind="linear", factor=2.0))),
    # Linear attention: RoPE scaled (llama3) on the features (D = 8, all three llama3 cases);
    # biases on the FFN only, the output gate following qkv, the GroupNorm's shift norms.
    "linear_rope_llama3_ffn_bias": ps.config(
        bias=False, biases=rt.Biases(ffn=True), normalization="group_norm",
        output_gate="swish_gate", position=P(kind="rope", pairing="half", scaling=S(
            kind="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
            original_max_positions=64))),  # θ_0 kept, θ_1 interpolated, θ_2, θ_3 divided
}


def scaled_theta(head_dim, base, scaling):
    """RoPE's θ_k = base^(−2k/D) rescaled as recipes/recipe.proto's RopeScaling says, in
    float64 (written out here independently of rota.torch)."""
    out = []
    for k in range(head_dim // 2):
        theta = base ** (-2.0 * k / head_dim)
        if scaling is not None and scaling.kind == "linear":
            theta /= scaling.factor
        elif scaling is not None:
            length, low, high = (scaling.original_max_positions, scaling.low_freq_factor,
                                 scaling.high_freq_factor)
            wavelength = 2 * math.pi / theta
            if wavelength > length / low:
                theta /= scaling.factor
            elif wavelength >= length / high:
                s = (length / wavelength - low) / (high - low)
                theta = (1 - s) * theta / scaling.factor + s * theta
        out.append(theta)
    return np.array(out)


def expected_biases(cfg):
    """The block bias tensors the config promises, by the part each belongs to."""
    parts = {"qkv": ["attn.q_proj.bias", "attn.k_proj.bias", "attn.v_proj.bias"],
             "attention_out": ["attn.out_proj.bias"],
             "ffn": (["ffn.gate_proj.bias", "ffn.up_proj.bias", "ffn.down_proj.bias"]
                     if cfg.activation in ("swiglu", "geglu") else ["ffn.fc1.bias",
                                                                    "ffn.fc2.bias"]),
             "norms": ["ln1.bias", "ln2.bias"] if cfg.norm_kind == "layer_norm" else []}
    if cfg.attention == "linear":
        if cfg.output_gate != "no_gate":
            parts["qkv"].append("attn.gate_proj.bias")
        if cfg.normalization in ("layer_norm", "group_norm"):
            parts["norms"].append("attn.norm.bias")
    names = set()
    for part, suffixes in parts.items():
        if cfg.has_bias(part):
            names |= {f"encoder.blocks.{i}.{s}" for i in range(cfg.layers) for s in suffixes}
    if (cfg.has_bias("norms") and cfg.norm_kind == "layer_norm" and cfg.final_norm
            and not cfg.post_norm):
        names.add("encoder.final_norm.bias")
    return names


class LlamaBlockParity(ps.ParityTestCase):
    def test_llama_style_blocks(self):
        for name, cfg in CASES.items():
            with self.subTest(name):
                case = self.check(name, cfg)
                state = case.model.state_dict()
                # The parameters the options promise: gated projections, no biases but the heads'.
                if cfg.activation in ("swiglu", "geglu"):
                    self.assertIn("encoder.blocks.0.ffn.gate_proj.weight", state)
                    self.assertEqual(state["encoder.blocks.0.ffn.up_proj.weight"].shape[0],
                                     cfg.ffn_hidden)
                heads = ("mlm_norm.bias", "mlm_bias", "classifier.bias")
                self.assertEqual({k for k in state if k.endswith("bias") and k not in heads},
                                 expected_biases(cfg), f"{name}: biases")
                native = case.run.state_dict()
                if cfg.kv_heads is not None:
                    d = cfg.width // cfg.heads
                    for proj in ("k_proj", "v_proj"):
                        self.assertEqual(native[f"encoder.blocks.0.attn.{proj}.weight"].shape,
                                         (cfg.kv_heads * d, cfg.width), proj)
                if cfg.position.kind == "rope":
                    where = "rope" if cfg.attention == "softmax" else "lrpe"
                    key = f"encoder.blocks.0.attn.{where}.theta"
                    theta = scaled_theta(cfg.width // cfg.heads, cfg.position.base,
                                         cfg.position.scaling).astype(np.float32)
                    self.assertTrue(np.array_equal(native[key], theta), f"{name}: Rota's θ")
                    fresh = rt.build_model(case.model.config).state_dict()[key].numpy()
                    self.assertTrue(np.array_equal(fresh, theta), f"{name}: rota.torch's θ")
                    if cfg.position.scaling is not None:  # the scaling changes some θ_k
                        plain = scaled_theta(cfg.width // cfg.heads, cfg.position.base, None)
                        self.assertFalse(np.allclose(theta, plain), name)
                if cfg.kind == "causal_lm":  # linear: the recurrence; softmax: full passes
                    prompt = case.run.encode("ROMEO:")
                    ours = case.model.generate(torch.from_numpy(prompt.astype("int64")), 12,
                                               temperature=0)
                    theirs = case.run.generate_ids(prompt, max_tokens=12, temperature=0.0)
                    self.assertEqual(ours.numpy()[len(prompt):].tolist(), theirs.tolist())

    def test_config_round_trip(self):
        cfg = ps.config(**LLAMA)
        text = config_to_model_text(cfg)
        self.assertIn("norm_kind: RMS_NORM", text)
        self.assertIn("bias: false", text)
        self.assertIn("ffn_activation: SWIGLU", text)
        back = rt.RotaConfig.from_recipe_text(text, vocab_size=cfg.vocab_size)
        for field in ("norm_kind", "bias", "activation", "ffn_hidden"):
            self.assertEqual(getattr(back, field), getattr(cfg, field), field)
        self.assertEqual(rt.RotaConfig.from_dict(cfg.to_dict()), cfg)
        # The gated default width: ⌈width / 3⌉ · 8.
        self.assertEqual(ps.config(ffn_width=None, activation="swiglu").ffn_hidden, 48)
        self.assertEqual(ps.config(ffn_width=None).ffn_hidden, 64)
        with self.assertRaisesRegex(ValueError, "model.norm_kind"):
            ps.config(norm_kind="batch_norm", vocab_size=5).validate()

    def test_gqa_biases_and_scaling_round_trip(self):
        for name in ("llama_gqa_llama3_qkv_bias", "mqa_window_linear_scaling",
                     "linear_rope_llama3_ffn_bias"):
            cfg = CASES[name]
            text = config_to_model_text(cfg)
            back = rt.RotaConfig.from_recipe_text(text, vocab_size=cfg.vocab_size)
            for field in ("kv_heads", "biases", "position", "bias", "window"):
                self.assertEqual(getattr(back, field), getattr(cfg, field), f"{name}: {field}")
            self.assertEqual(rt.RotaConfig.from_dict(cfg.to_dict()), cfg)
        text = config_to_model_text(CASES["llama_gqa_llama3_qkv_bias"])
        self.assertIn("kv_heads: 2", text)
        self.assertIn("biases { qkv: true }", text)
        self.assertIn("original_max_positions: 16", text)
        # The recipe's defaults: llama3 {} is factor 8, 1, 4, 8192; linear {} factor 1.
        recipe = "model { position { rope { scaling { llama3 {} } } } }"
        self.assertEqual(rt.RotaConfig.from_recipe_text(recipe).position.scaling,
                         S(kind="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                           original_max_positions=8192))
        recipe = "model { bias: false biases { norms: true } position { rope {} } }"
        back = rt.RotaConfig.from_recipe_text(recipe)
        self.assertEqual([back.has_bias(p) for p in ("qkv", "attention_out", "ffn", "norms")],
                         [False, False, False, True])
        refused = {
            "kv_heads 3 must be >= 1 and divide heads 4": dict(attention="softmax", heads=4,
                                                               kv_heads=3),
            "grouped key/value heads are for softmax attention": dict(heads=2, kv_heads=1),
            "low_freq_factor 4.0 must be > 0 and < high_freq_factor 2.0": dict(
                position=P(kind="rope", scaling=S(kind="llama3", low_freq_factor=4.0,
                                                  high_freq_factor=2.0))),
            "factor must be > 0": dict(position=P(kind="rope", scaling=S(factor=0.0))),
            "a scaling applies to rope only": dict(position=P(kind="lrpe", scaling=S())),
        }
        for message, overrides in refused.items():
            with self.subTest(message), self.assertRaisesRegex(ValueError, message):
                ps.config(vocab_size=5, **overrides).validate()
        with self.assertRaisesRegex(ValueError, "set exactly one of"):
            rt.RotaConfig.from_recipe_text("model { position { rope { scaling {} } } }")


if __name__ == "__main__":
    unittest.main()
