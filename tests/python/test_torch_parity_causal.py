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

    def test_softmax_attention(self):
        for name, cfg in SOFTMAX_CASES.items():
            with self.subTest(name):
                self.check(name, cfg)


if __name__ == "__main__":
    unittest.main()
