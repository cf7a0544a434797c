# rota.torch vs Rota on causal LMs: every linear-attention option and every softmax encoding.
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import parity_support as ps  # noqa: E402
import rota.torch as rt  # noqa: E402
import torch  # noqa: E402

P = rt.PositionConfig
LINEAR_CASES = {
    "nope": ps.config(position=P(kind="none")),
    "sinusoidal": ps.config(position=P(kind="sinusoidal")),
    "learned_absolute": ps.config(position=P(kind="learned_absolute", max_positions=64)),
    "rope_adjacent": ps.config(position=P(kind="rope")),
    "rope_half": ps.config(position=P(kind="rope", pairing="half", base=500.0)),
    "permute_former": ps.config(position=P(kind="permute_former")),
    "lrpe1_householder": ps.config(position=P(kind="lrpe", type=1)),
    "lrpe1_odd_even": ps.config(position=P(kind="lrpe", type=1, p="odd_even")),
    "lrpe2_householder": ps.config(position=P(kind="lrpe", type=2)),
    "lrpe2_half_identity": ps.config(position=P(kind="lrpe", type=2, pairing="half",
                                                p="identity", add_sinusoidal=True)),
    "lrpe2_frozen_fixed_theta": ps.config(position=P(kind="lrpe", p="householder_frozen",
                                                     learn_theta=False)),
    "lrpe2_odd_even": ps.config(position=P(kind="lrpe", p="odd_even")),
    "lrpe3_identity": ps.config(position=P(kind="lrpe", type=3, p="identity")),
    "lrpe3_householder": ps.config(position=P(kind="lrpe", type=3)),
    "relu_rmsnorm": ps.config(feature_map="relu", normalization="rms_norm"),
    "silu_post_norm": ps.config(feature_map="silu", post_norm=True, activation="relu"),
    "identity_untied_scaled": ps.config(feature_map="identity", tie_embeddings=False,
                                        scale_embeddings=True, activation="gelu_tanh"),
    "hedgehog": ps.config(feature_map="hedgehog", position=P(kind="none")),
    "hedgehog_denominator": ps.config(feature_map="hedgehog", normalization="denominator",
                                      position=P(kind="none")),
    "exp_denominator": ps.config(feature_map="exp", normalization="denominator",
                                 position=P(kind="none"), activation="silu"),
    "relu_denominator_lrpe3": ps.config(feature_map="relu", normalization="denominator",
                                        position=P(kind="lrpe", type=3, p="odd_even")),
    "no_final_norm_chunk1": ps.config(final_norm=False, chunk_size=1),
    # Decay and gating: RetNet (rotation, multi-scale decay, per-head GroupNorm, swish gate) and
    # LRPE-d (LRPE with TransNormerLLM's depth-dependent decay, sigmoid gate).
    "retnet": ps.config(feature_map="identity", position=P(kind="rope"), decay="retnet",
                        normalization="group_norm", output_gate="swish_gate"),
    "lrpe_d": ps.config(feature_map="silu", position=P(kind="lrpe", type=1), decay="transnormer",
                        output_gate="sigmoid_gate"),
    "lrpe_d_learnable": ps.config(position=P(kind="lrpe", type=2), decay="retnet",
                                  decay_learnable=True),
    "gla": ps.config(feature_map="silu", position=P(kind="none"), gating="gla", gla_rank=4,
                     output_gate="swish_gate"),
    "ssd": ps.config(position=P(kind="rope"), gating="ssd", normalization="rms_norm"),
    "deltanet": ps.config(feature_map="silu", position=P(kind="lrpe", type=3),
                          update_rule="delta"),
    "gated_deltanet": ps.config(feature_map="silu", position=P(kind="none"), gating="ssd",
                                update_rule="delta", output_gate="swish_gate"),
    "retnet_llama_block": ps.config(feature_map="identity", position=P(kind="rope"),
                                    decay="retnet", normalization="group_norm",
                                    output_gate="swish_gate", bias=False, norm_kind="rms_norm",
                                    activation="swiglu"),
}
SOFTMAX_CASES = {
    "softmax_nope": ps.config(attention="softmax", position=P(kind="none")),
    "softmax_sinusoidal": ps.config(attention="softmax", position=P(kind="sinusoidal")),
    "softmax_learned": ps.config(attention="softmax",
                                 position=P(kind="learned_absolute", max_positions=40)),
    "softmax_rope": ps.config(attention="softmax", position=P(kind="rope", pairing="half")),
    "softmax_alibi": ps.config(attention="softmax", position=P(kind="alibi"), heads=4),
    "softmax_t5": ps.config(attention="softmax", position=P(kind="t5", buckets=8,
                                                            max_distance=20)),
    "softmax_shaw_values": ps.config(attention="softmax", position=P(
        kind="shaw", clip=3, clip_left=5, values=True)),
    "softmax_transformer_xl": ps.config(attention="softmax", position=P(
        kind="transformer_xl", layout="concatenated")),
    "softmax_skew_per_head": ps.config(attention="softmax", position=P(
        kind="skew", max_len=32, per_head=True)),
    "softmax_streaming_scaled": ps.config(attention="softmax", position=P(kind="rope"),
                                          stream_chunk=4, stream_left_memory=6,
                                          softmax_scale=0.3),
}

# Hybrid stacks: per-block layers with the same names; generation through the recurrent state
# of the linear blocks and the key/value cache of the softmax blocks on both sides.
H = rt.HybridConfig
HYBRID_CASES = {
    "hybrid_lrpe_softmax_rope": ps.config(
        layers=3, position=P(kind="lrpe", type=2),
        hybrid=H(every=2, attention="softmax", position=P(kind="rope"))),
    "hybrid_rope_window": ps.config(
        layers=3, position=P(kind="rope"),
        hybrid=H(blocks=[0, 2], attention="softmax", window=3, softmax_scale=0.4)),
    "hybrid_alibi_linear_block": ps.config(
        attention="softmax", layers=3, position=P(kind="alibi"),
        hybrid=H(blocks=[1], attention="linear", feature_map="silu", decay="transnormer",
                 output_gate="swish_gate", normalization="group_norm",
                 position=P(kind="lrpe", type=1))),
}


class CausalParity(ps.ParityTestCase):
    def test_linear_attention(self):
        for name, cfg in LINEAR_CASES.items():
            with self.subTest(name):
                case = self.check(name, cfg)
                # Greedy generation: Rota's recurrent state vs rota.torch's recurrent state.
                prompt = case.run.encode("ROMEO:")
                ours = case.model.generate(torch.from_numpy(prompt.astype("int64")), 12,
                                           temperature=0)
                theirs = case.run.generate_ids(prompt, max_tokens=12, temperature=0.0)
                self.assertEqual(ours.numpy()[len(prompt):].tolist(), theirs.tolist())

    def test_hybrid_stacks(self):
        for name, cfg in HYBRID_CASES.items():
            with self.subTest(name):
                case = self.check(name, cfg)
                chosen = cfg.hybrid.selected(cfg.layers)
                for i, block in enumerate(case.model.encoder.blocks):
                    family = cfg.block_config(i).attention
                    self.assertEqual(type(block.attn).__name__,
                                     "SoftmaxAttention" if family == "softmax"
                                     else "LinearAttention", f"block {i}")
                    self.assertEqual(family != cfg.attention, i in chosen)
                # The config survives the recipe text Rota wrote for the run.
                run_dir = os.path.join(self.tmp.name, name)
                with open(os.path.join(run_dir, "recipe.txtpb"), encoding="utf-8") as f:
                    again = rt.RotaConfig.from_recipe_text(f.read(), cfg.vocab_size)
                self.assertEqual(again.hybrid.selected(again.layers), chosen)
                self.assertEqual(again.hybrid.attention, cfg.hybrid.attention)
                self.assertEqual(again.hybrid.window, cfg.hybrid.window)
                # Greedy generation: both sides step (recurrent state + key/value cache).
                self.assertTrue(case.model.encoder.supports_step)
                prompt = case.run.encode("ROMEO:")
                ours = case.model.generate(torch.from_numpy(prompt.astype("int64")), 12,
                                           temperature=0)
                theirs = case.run.generate_ids(prompt, max_tokens=12, temperature=0.0)
                self.assertEqual(ours.numpy()[len(prompt):].tolist(), theirs.tolist())
                # And rota.torch's stepping equals the argmax of its own full forward passes.
                full = torch.from_numpy(prompt.astype("int64"))
                for _ in range(12):
                    with torch.no_grad():
                        nxt = case.model(full[None])[0, -1].argmax()
                    full = torch.cat([full, nxt[None]])
                self.assertEqual(ours.tolist(), full.tolist())

    def test_softmax_attention(self):
        for name, cfg in SOFTMAX_CASES.items():
            with self.subTest(name):
                self.check(name, cfg)


if __name__ == "__main__":
    unittest.main()
