# Shared by the rota.torch parity tests: train tiny Rota runs and compare them with rota.torch.
"""Each case is a model block (a rota.torch RotaConfig written as recipe text) trained for two
steps by the `rota` binary on a shipped corpus; the comparisons then use the run's checkpoint:

  logits     the native module's logits (Rota's C++ forward) vs rota.torch in float32, max
             |difference| ≤ 1e-5 · max |logit|;
  eval loss  Rota's evaluation loss on the first batches of the valid split vs rota.torch's
             token-weighted loss over the very batches Rota evaluates, to 1e-6 (relative);
  gradients  one training step's loss and parameter gradients (dropout off, no update) vs
             rota.torch's backward pass, per tensor ≤ 1e-4 of the largest gradient entry of
             that tensor (or of the model, for tensors whose gradient vanishes analytically).
"""
import os
import subprocess
import tempfile
import unittest

import numpy as np
import torch

import rota
import rota.torch as rt
from rota.torch.checkpoint import config_to_model_text

torch.set_num_threads(2)
torch.set_flush_denormal(True)

BINARY = os.environ.get("ROTA_BINARY", "build/rota")

DATA = {
    "causal_lm": 'data { corpus: "tinyshakespeare" tokenizer { kind: BYTE } '
                 "sequence_length: 24 batch_size: 3 }",
    "masked_lm": 'data { corpus: "tinyshakespeare" tokenizer { kind: BYTE } '
                 "sequence_length: 24 batch_size: 3 }",
    "classifier": 'data { corpus: "sst-2" tokenizer { kind: BYTE } '
                  "sequence_length: 24 batch_size: 3 }",
}
TRAIN = ("schedule { kind: CONSTANT lr: 3e-3 }\n"
         "train { steps: 2 eval_every: 0 checkpoint_every: 2 log_every: 1 seed: 7 "
         "tensorboard: false }\n")


def config(kind="causal_lm", attention="linear", position=None, **overrides):
    values = dict(kind=kind, width=16, layers=2, heads=2, ffn_width=24, dropout=0.0,
                  chunk_size=5, attention=attention,
                  position=position or rt.PositionConfig(kind="lrpe"))
    values.update(overrides)
    return rt.RotaConfig(**values)


def train_run(cfg, workdir, name):
    """A two-step run of the model block cfg; returns the run directory."""
    recipe = os.path.join(workdir, name + ".txtpb")
    text = f'version: 1\nname: "{name}"\n' + config_to_model_text(cfg) + DATA[cfg.kind] + "\n"
    text += TRAIN
    with open(recipe, "w", encoding="utf-8") as f:
        f.write(text)
    out = os.path.join(workdir, name)
    result = subprocess.run([BINARY, "train", recipe, "--out", out], capture_output=True,
                            text=True, env=dict(os.environ, OMP_NUM_THREADS="2"))
    if result.returncode != 0:
        raise AssertionError(f"rota train {name} failed ({result.returncode}):\n{text}\n"
                             f"{result.stderr[-3000:]}")
    return out


def relative_error(actual, expected):
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    scale = max(float(np.abs(expected).max(initial=0.0)), 1e-30)
    return float(np.abs(actual - expected).max(initial=0.0)) / scale


def batch_tensors(batch):
    return {k: torch.from_numpy(np.asarray(v)) for k, v in batch.items()}


class ParityCase:
    """Checks one trained run against rota.torch."""

    def __init__(self, test, run_dir):
        self.test = test
        self.run = rota.load(run_dir)
        self.model, _ = rt.load(run_dir)
        self.kind = self.model.config.kind

    def sample_inputs(self, n=29, batch=2, seed=0):
        g = np.random.default_rng(seed)
        ids = g.integers(0, self.model.config.vocab_size, size=(batch, n), dtype=np.int64)
        mask = None
        if self.kind != "causal_lm":
            mask = np.ones((batch, n), dtype=np.int64)
            mask[1, n - 7:] = 0  # the second row is padded
        return ids, mask

    def torch_logits(self, ids, mask, dtype=torch.float32):
        model = self.model.to(dtype)
        with torch.no_grad():
            out = model(torch.from_numpy(ids),
                        None if mask is None else torch.from_numpy(mask))
        self.model.to(torch.float32)
        return out.numpy()

    def check_logits(self):
        ids, mask = self.sample_inputs()
        native = self.run.logits(ids, mask) if mask is not None else self.run.logits(ids)
        ours = self.torch_logits(ids, mask)
        if mask is not None and self.kind == "masked_lm":  # padded query rows are not defined
            keep = mask.astype(bool)
            native, ours = native[keep], ours[keep]
        self.test.assertEqual(np.shape(native), np.shape(ours))
        error = relative_error(ours, native)
        self.test.assertLessEqual(error, 1e-5, f"logits differ: relative error {error:.2e}")
        return error

    def torch_batch_loss(self, model, batch):
        t = batch_tensors(batch)
        if self.kind == "causal_lm":
            return model.loss(t["ids"], t["targets"])
        if self.kind == "masked_lm":
            return model.loss(t["ids"], t["targets"], t.get("key_mask"))
        return model.loss(t["ids"], t["labels"], t.get("key_mask"))

    def batch_weight(self, batch):
        if self.kind == "classifier":
            return len(batch["labels"])
        return int((np.asarray(batch["targets"]) != rt.IGNORE_INDEX).sum())

    def check_eval_loss(self, batches=2):
        native = self.run.eval("valid", batches=batches)
        model = self.model.to(torch.float64)
        total, weight = 0.0, 0
        with torch.no_grad():
            for batch in self.run.eval_batches("valid", batches=batches):
                w = self.batch_weight(batch)
                if w == 0:
                    continue
                total += float(self.torch_batch_loss(model, batch)) * w
                weight += w
        self.model.to(torch.float32)
        ours = total / weight
        error = abs(ours - native["loss"]) / abs(native["loss"])
        self.test.assertLessEqual(error, 1e-6, f"eval loss {ours} vs Rota's {native['loss']}")
        return error

    def check_gradients(self):
        batch = self.run.eval_batches("valid", batches=1)[0]
        arrays = {k: np.asarray(v) for k, v in batch.items()}
        if self.kind == "causal_lm":
            loss, grads = self.run.loss_and_grads(arrays["ids"], targets=arrays["targets"])
        elif self.kind == "masked_lm":
            loss, grads = self.run.loss_and_grads(arrays["ids"], targets=arrays["targets"],
                                                  key_mask=arrays.get("key_mask"))
        else:
            loss, grads = self.run.loss_and_grads(arrays["ids"], labels=arrays["labels"],
                                                  key_mask=arrays.get("key_mask"))
        model = self.model.to(torch.float64)
        model.train()
        model.zero_grad()
        ours = self.torch_batch_loss(model, batch)
        ours.backward()
        model.eval()
        self.test.assertLessEqual(abs(float(ours) - loss) / abs(loss), 1e-6)
        trainable = {n: p for n, p in model.named_parameters() if p.requires_grad}
        self.test.assertEqual(sorted(grads), sorted(trainable),
                              "Rota and rota.torch differ in which parameters train")
        overall = max(float(np.abs(g).max(initial=0.0)) for g in grads.values())
        worst = 0.0
        for name, p in trainable.items():
            expected = np.asarray(grads[name], np.float64)
            actual = p.grad.detach().numpy() if p.grad is not None else np.zeros_like(expected)
            scale = max(float(np.abs(expected).max(initial=0.0)), 1e-3 * overall)
            error = float(np.abs(actual - expected).max(initial=0.0)) / scale
            worst = max(worst, error)
            self.test.assertLessEqual(error, 1e-4, f"gradient of {name}: error {error:.2e}")
        self.model.to(torch.float32)
        return worst


class ParityTestCase(unittest.TestCase):
    """A test class whose runs share one temporary directory and whose measured errors are
    printed at the end (the figures docs/python.md quotes)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.results = {}

    @classmethod
    def tearDownClass(cls):
        for name, (logits, loss, grads) in sorted(cls.results.items()):
            print(f"{name:30s} logits {logits:.1e}  eval loss {loss:.1e}  gradients {grads:.1e}")
        cls.tmp.cleanup()

    def check(self, name, cfg):
        """Trains the case, checks its config round trip, logits, eval loss and gradients."""
        case = ParityCase(self, train_run(cfg, self.tmp.name, name))
        self.assertEqual(case.model.config.position, cfg.position.resolved(cfg.causal, cfg.width))
        self.results[name] = (case.check_logits(), case.check_eval_loss(), case.check_gradients())
        return case
