# rota.torch vs Rota on the LLaMA-style block (RMSNorm, SwiGLU / GeGLU, no biases): every kind.
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import parity_support as ps  # noqa: E402
import rota.torch as rt  # noqa: E402
import torch  # noqa: E402
from rota.torch.checkpoint import config_to_model_text  # noqa: E402

P = rt.PositionConfig
LLAMA = dict(norm_kind="rms_norm", activation="swiglu", bias=False)
CASES = {
    "llama_lrpe2": ps.config(**LLAMA),
    "llama_softmax_rope_half": ps.config(attention="softmax", position=P(kind="rope",
                                                                          pairing="half"),
                                         **LLAMA),
    "llama_mlm_geglu": ps.config("masked_lm", **dict(LLAMA, activation="geglu")),
    "llama_cls_default_width": ps.config("classifier", ffn_width=None, **LLAMA),
    "no_bias_layer_norm_post_norm": ps.config(bias=False, post_norm=True),
    "rms_norm_blocks_only": ps.config(norm_kind="rms_norm"),
}


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
                if not cfg.bias:
                    heads = ("mlm_norm.bias", "mlm_bias", "classifier.bias")
                    self.assertEqual([k for k in state if "bias" in k and k not in heads], [])
                if cfg.kind == "causal_lm" and cfg.attention == "linear":
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


if __name__ == "__main__":
    unittest.main()
