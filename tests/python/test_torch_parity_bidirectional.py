# rota.torch vs Rota on masked LMs and classifiers (bidirectional, padded batches).
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import parity_support as ps  # noqa: E402
import rota.torch as rt  # noqa: E402

P = rt.PositionConfig
H = rt.HybridConfig
MASKED_CASES = {
    "mlm_lrpe2": ps.config("masked_lm"),
    "mlm_lrpe1_frozen": ps.config("masked_lm", position=P(kind="lrpe", type=1,
                                                          p="householder_frozen")),
    "mlm_lrpe3_odd_even_rms": ps.config("masked_lm", normalization="rms_norm",
                                        position=P(kind="lrpe", type=3, p="odd_even")),
    "mlm_rope": ps.config("masked_lm", position=P(kind="rope")),
    "mlm_lrpe2_half_silu": ps.config("masked_lm", feature_map="silu",
                                     position=P(kind="lrpe", pairing="half")),
    "mlm_sinusoidal_exp": ps.config("masked_lm", feature_map="exp",
                                           position=P(kind="sinusoidal")),
    "mlm_permute_former": ps.config("masked_lm", position=P(kind="permute_former")),
    "mlm_lrpe3_identity_denominator": ps.config("masked_lm", normalization="denominator",
                                                position=P(kind="lrpe", type=3, p="identity")),
    "mlm_learned_post_norm": ps.config("masked_lm", post_norm=True,
                                       position=P(kind="learned_absolute", max_positions=32)),
    "mlm_softmax_t5": ps.config("masked_lm", attention="softmax",
                                position=P(kind="t5", buckets=8, max_distance=16)),
    "mlm_softmax_shaw": ps.config("masked_lm", attention="softmax",
                                  position=P(kind="shaw", clip=4, values=True)),
    "mlm_softmax_xl": ps.config("masked_lm", attention="softmax",
                                position=P(kind="transformer_xl", pe_width=8)),
    "mlm_softmax_skew": ps.config("masked_lm", attention="softmax",
                                  position=P(kind="skew", max_len=30)),
    "mlm_softmax_alibi": ps.config("masked_lm", attention="softmax", position=P(kind="alibi")),
    "mlm_softmax_rope_streaming": ps.config("masked_lm", attention="softmax",
                                            position=P(kind="rope"), stream_chunk=5),
    # A hybrid stack with padded batches: a softmax Shaw block between linear LRPE blocks.
    "mlm_hybrid_lrpe_softmax_shaw": ps.config(
        "masked_lm", layers=3, hybrid=H(blocks=[1], attention="softmax",
                                        position=P(kind="shaw", clip=3, values=True))),
}
CLASSIFIER_CASES = {
    "cls_lrpe2_mean": ps.config("classifier"),
    "cls_lrpe3_first_token": ps.config("classifier", pooling="cls",
                                       position=P(kind="lrpe", type=3)),
    "cls_sinusoidal": ps.config("classifier", position=P(kind="sinusoidal"), num_classes=2),
    "cls_rope_half": ps.config("classifier", position=P(kind="rope", pairing="half")),
    "cls_permute_former": ps.config("classifier", position=P(kind="permute_former")),
    "cls_lrpe1_odd_even": ps.config("classifier", position=P(kind="lrpe", type=1,
                                                             p="odd_even")),
    "cls_learned_relu_rms": ps.config("classifier", feature_map="relu",
                                      normalization="rms_norm",
                                      position=P(kind="learned_absolute", max_positions=32)),
    "cls_softmax_alibi": ps.config("classifier", attention="softmax", position=P(kind="alibi")),
    "cls_softmax_xl": ps.config("classifier", attention="softmax",
                                position=P(kind="transformer_xl")),
    "cls_softmax_skew_per_head": ps.config("classifier", attention="softmax",
                                           position=P(kind="skew", max_len=32, per_head=True)),
    "cls_softmax_sinusoidal": ps.config("classifier", attention="softmax",
                                        position=P(kind="sinusoidal")),
    "cls_softmax_t5": ps.config("classifier", attention="softmax",
                                position=P(kind="t5", buckets=6, max_distance=12)),
    "cls_softmax_shaw_first_token": ps.config("classifier", attention="softmax",
                                              pooling="cls", position=P(kind="shaw", clip=2)),
    "cls_hybrid_alibi_linear_rope": ps.config(
        "classifier", attention="softmax", position=P(kind="alibi"),
        hybrid=H(every=2, attention="linear", position=P(kind="rope"))),
}


class BidirectionalParity(ps.ParityTestCase):
    def check_all(self, cases):
        for name, cfg in cases.items():
            with self.subTest(name):
                self.check(name, cfg)

    def test_masked_lm(self):
        self.check_all(MASKED_CASES)

    def test_classifier(self):
        self.check_all(CLASSIFIER_CASES)


if __name__ == "__main__":
    unittest.main()
