# rota.torch hybrid stacks and sliding windows on their own: configs, per-block layers, stepping.
import os
import sys
import unittest

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import rota.torch as rt  # noqa: E402
from rota.torch.checkpoint import config_to_model_text  # noqa: E402
from rota.torch.softmax_attention import AttentionCall, attend_softmax  # noqa: E402

torch.set_num_threads(2)
P, H = rt.PositionConfig, rt.HybridConfig


def hybrid_config(**overrides):
    values = dict(vocab_size=23, width=16, layers=4, heads=2, ffn_width=24, dropout=0.0,
                  chunk_size=3, position=P(kind="lrpe"),
                  hybrid=H(every=3, blocks=[0], attention="softmax", window=3,
                           position=P(kind="rope", pairing="half")))
    values.update(overrides)
    return rt.RotaConfig(**values)


class HybridConfigs(unittest.TestCase):
    def test_selection_block_configs_and_layers(self):
        cfg = hybrid_config().validate()
        self.assertEqual(cfg.hybrid.selected(cfg.layers), [0, 2])
        model = rt.CausalLm(cfg)
        for i, block in enumerate(model.encoder.blocks):
            softmax = i in (0, 2)
            self.assertEqual(type(block.attn).__name__,
                             "SoftmaxAttention" if softmax else "LinearAttention")
            self.assertEqual(cfg.block_config(i).position.kind, "rope" if softmax else "lrpe")
            self.assertIsNone(cfg.block_config(i).hybrid)
        names = set(model.state_dict())
        self.assertIn("encoder.blocks.0.attn.q_proj.weight", names)
        self.assertIn("encoder.blocks.1.attn.norm.weight", names)   # linear: LayerNorm
        self.assertNotIn("encoder.blocks.0.attn.norm.weight", names)  # softmax: none

    def test_round_trips(self):
        for cfg in (hybrid_config(),
                    # (the model's linear fields are not written for a softmax stack)
                    hybrid_config(attention="softmax", position=P(kind="alibi"), chunk_size=64,
                                  hybrid=H(blocks=[1, 3], attention="linear", decay="retnet",
                                           output_gate="swish_gate",
                                           position=P(kind="lrpe", type=3, p="odd_even"))),
                    hybrid_config(position=P(kind="sinusoidal"),
                                  hybrid=H(every=2, attention="softmax"))):
            with self.subTest(cfg.hybrid):
                cfg.validate()
                text = config_to_model_text(cfg)
                self.assertIn("hybrid {", text)
                again = rt.RotaConfig.from_recipe_text(text, cfg.vocab_size)
                self.assertEqual(again.to_dict(), cfg.to_dict())
                self.assertEqual(rt.RotaConfig.from_dict(cfg.to_dict()), cfg)

    def test_refusals_name_the_field(self):
        bad = {
            "model.hybrid.every must be >= 2": dict(hybrid=H(every=1)),
            "model.hybrid.blocks[0]: block 4": dict(hybrid=H(blocks=[4])),
            "model.hybrid: selects 4 of 4": dict(hybrid=H(every=2, blocks=[0, 2])),
            "model.hybrid: selects 0 of 4": dict(hybrid=H()),
            "model.hybrid: needs layers >= 2": dict(layers=1, hybrid=H(blocks=[0])),
            "model.hybrid.position: absent": dict(hybrid=H(blocks=[1])),
            "model.hybrid.position.alibi": dict(hybrid=H(blocks=[1], attention="linear",
                                                         position=P(kind="alibi"))),
            "model.hybrid.position: absolute": dict(hybrid=H(blocks=[1],
                                                             position=P(kind="sinusoidal"))),
            "model.hybrid.attention.softmax.window: causal_lm only": dict(
                kind="masked_lm", hybrid=H(blocks=[1], window=2, position=P(kind="rope"))),
        }
        for expected, overrides in bad.items():
            with self.subTest(expected):
                with self.assertRaises(ValueError) as raised:
                    hybrid_config(**overrides).validate()
                self.assertIn(expected, str(raised.exception))


class HybridGeneration(unittest.TestCase):
    def test_step_equals_forward_and_greedy_equals_full_forward_argmax(self):
        for cfg in (hybrid_config(),
                    hybrid_config(attention="softmax", position=P(kind="alibi"),
                                  hybrid=H(blocks=[2], attention="linear",
                                           position=P(kind="lrpe", type=1)))):
            with self.subTest(cfg.hybrid.attention):
                torch.manual_seed(0)
                model = rt.CausalLm(cfg).double().eval()
                self.assertTrue(model.encoder.supports_step)
                ids = torch.randint(0, cfg.vocab_size, (13,))
                with torch.no_grad():
                    full = model(ids[None])[0]
                    state = model.initial_state(1)
                    for t in range(len(ids)):
                        row = model.step(ids[t:t + 1], state)[0]
                        torch.testing.assert_close(row, full[t], rtol=1e-10, atol=1e-10)
                out = model.generate(ids[:4], 10, temperature=0)
                seq = ids[:4]
                with torch.no_grad():
                    for _ in range(10):
                        seq = torch.cat([seq, model(seq[None])[0, -1].argmax()[None]])
                self.assertEqual(out.tolist(), seq.tolist())


class SlidingWindow(unittest.TestCase):
    def test_window_mask_equals_a_plain_masked_softmax_with_gradients(self):
        torch.manual_seed(1)
        q, k, v = (torch.randn(2, 2, 9, 3, dtype=torch.float64, requires_grad=True)
                   for _ in range(3))
        for offset, n_q in ((0, 9), (4, 5)):
            qq = q[:, :, :n_q]
            out = attend_softmax(qq, k, v, None, AttentionCall(scale=0.5, causal=True,
                                                               query_offset=offset, window=3))
            i = torch.arange(n_q)[:, None] + offset
            j = torch.arange(9)[None, :]
            visible = (j <= i) & (i - j < 3)
            logits = (qq @ k.transpose(-1, -2) * 0.5).masked_fill(~visible, float("-inf"))
            reference = torch.softmax(logits, -1) @ v
            torch.testing.assert_close(out, reference, rtol=1e-12, atol=1e-12)
            grads = torch.autograd.grad(out.sum(), (q, k, v))
            expected = torch.autograd.grad(reference.sum(), (q, k, v))
            for a, b in zip(grads, expected):
                torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
        self.assertTrue(torch.autograd.gradcheck(
            lambda a, b, c: attend_softmax(a, b, c, None, AttentionCall(
                scale=0.5, causal=True, window=2)), (q, k, v)))


if __name__ == "__main__":
    unittest.main()
