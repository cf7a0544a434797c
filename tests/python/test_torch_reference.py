# The plain-PyTorch reference of issue 23 (bench/reference/train_torch_reference.py) on the tiny recipe.
"""Checks that the reference script trains (the loss falls over 20 steps, the summary lines and
JSON are written), that its evaluation of a model equals Rota's evaluation of the same weights
saved as a Rota checkpoint (valid and test, both initialisations), that its schedule is the
learning rate Rota's trainer uses at every step, that its weight-decay groups follow the
recipe's roles, and that the window samplers are deterministic per seed.
"""
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

import torch

import rota
import rota.torch as rt

torch.set_num_threads(2)
torch.set_flush_denormal(True)

REPO = os.environ.get("ROTA_REPO") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BINARY = os.environ.get("ROTA_BINARY") or os.path.join(REPO, "build", "rota")
SCRIPT = os.path.join(REPO, "bench", "reference", "train_torch_reference.py")
RECIPE = os.path.join(REPO, "recipes", "tests", "tiny_causal_lm.txtpb")


def load_script():
    spec = importlib.util.spec_from_file_location("train_torch_reference", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


R = load_script()


class TorchReference(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        cls.text, cls.recipe = R.resolve_recipe(BINARY, RECIPE, [])
        cls.prepared = R.prepared_corpus(BINARY, RECIPE, [], cls.recipe,
                                         os.path.join(cls.dir, "prepared"))
        cls.streams, cls.tokenizer = R.load_streams(cls.prepared)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_trains_and_reports(self):
        out = os.path.join(self.dir, "summary.json")
        result = subprocess.run(
            [sys.executable, SCRIPT, RECIPE, "--steps", "20", "--seed", "3", "--threads", "2",
             "--set", "train.log_every=1", "--prepared", self.prepared, "--rota", BINARY,
             "--out", out], capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = {line.split()[0]: dict(f.split("=", 1) for f in line.split())
                 for line in result.stdout.splitlines() if line.startswith("split=")}
        with open(out, encoding="utf-8") as f:
            summary = json.load(f)
        self.assertEqual((summary["seed"], summary["init"], summary["sampling"], summary["steps"]),
                         (3, "pytorch", "random", 20))
        for split in ("valid", "test"):
            self.assertAlmostEqual(float(lines[f"split={split}"]["loss"]),
                                   summary[f"{split}_loss"], places=4)
            self.assertAlmostEqual(summary[f"{split}_ppl"], math.exp(summary[f"{split}_loss"]))
        curve = [loss for _, loss in summary["loss_curve"]]
        self.assertEqual(len(curve), 20)
        first, last = sum(curve[:3]) / 3, sum(curve[-3:]) / 3
        self.assertLess(last, first - 0.7, curve)
        self.assertLess(summary["valid_loss"], math.log(256) - 1.0)
        self.assertGreater(summary["tokens_per_s"], 0)

    def test_evaluation_equals_rotas_on_the_same_weights(self):
        lrs = []
        source = os.path.join(self.dir, "source")
        schedule = ["train.steps=12", "schedule.kind=COSINE", "schedule.lr=3e-3",
                    "schedule.min_lr=1e-4", "schedule.warmup_steps=4",
                    "schedule.warmup_start_factor=0.1"]
        rota.train(RECIPE, schedule + ["train.eval_every=0"], out=source,
                   callback=lambda info: lrs.append((info["step"], info["lr"])))
        # The schedule: Rota's learning rate at each of its steps.
        _, recipe = R.resolve_recipe(BINARY, RECIPE, schedule)
        self.assertEqual([s for s, _ in lrs], list(range(1, 13)))
        for step, lr in lrs:
            self.assertAlmostEqual(R.learning_rate(step, recipe.message("schedule"), 12), lr,
                                   delta=1e-12, msg=f"step {step}")
        # The evaluation: a fresh model of each initialisation, scored by both sides.
        for init, splits in (("pytorch", ("valid", "test")), ("normal", ("valid",))):
            model = R.build(self.text, self.tokenizer.vocab_size, 5, init, 0.02)
            checkpoint = os.path.join(self.dir, f"init_{init}")
            rt.save_checkpoint(model, checkpoint, source=source)
            run = rota.load(checkpoint)
            for split in splits:
                ours, count = R.evaluate(model, self.streams[split], 32)
                theirs = run.eval(split)
                self.assertEqual(count, theirs["tokens"])
                # f32 on both sides: measured ≤ 6e-8 relative
                self.assertLess(abs(ours - theirs["loss"]) / theirs["loss"], 1e-5,
                                f"{init} {split}: {ours} vs Rota's {theirs['loss']}")

    def test_bf16_and_aligned_windows(self):
        summary = R.main([RECIPE, "--steps", "4", "--dtype", "bf16", "--sampling", "aligned",
                          "--init", "normal", "--init-std", "0.05", "--threads", "2",
                          "--eval-splits", "valid", "--prepared", self.prepared, "--rota", BINARY])
        self.assertEqual((summary["dtype"], summary["sampling"], summary["init_std"]),
                         ("bf16", "aligned", 0.05))
        self.assertTrue(math.isfinite(summary["valid_loss"]))
        self.assertNotIn("test_loss", summary)

    def test_initialisation(self):
        model = R.build(self.text, 256, 2, "normal", 0.05)
        self.assertAlmostEqual(float(model.encoder.embed.weight.std()), 0.05, delta=0.005)
        self.assertEqual(float(model.encoder.blocks[0].ffn.fc1.bias.abs().max()), 0.0)
        model = R.build(self.text, 256, 2, "pytorch", 0.05)
        self.assertAlmostEqual(float(model.encoder.embed.weight.std()), 1 / math.sqrt(32),
                               delta=0.02)
        fc1 = model.encoder.blocks[0].ffn.fc1.weight  # Kaiming-uniform: U(±1/√fan_in)
        self.assertLessEqual(float(fc1.abs().max()), 1 / math.sqrt(32))
        self.assertGreater(float(fc1.abs().max()), 0.9 / math.sqrt(32))
        lrpe = model.encoder.blocks[0].attn.lrpe
        self.assertTrue(torch.allclose(lrpe.theta, torch.tensor(
            [10000.0 ** (-2.0 * j / 16) for j in range(8)])))
        norm = model.encoder.blocks[1].ln2
        self.assertTrue(bool((norm.weight == 1).all()) and bool((norm.bias == 0).all()))

    def test_weight_decay_follows_the_recipes_roles(self):
        model = R.build(self.text, 256, 2, "pytorch", 0.02)
        names = {p: n for n, p in model.named_parameters()}
        optimizer = R.make_optimizer(model, self.recipe)
        decayed, kept = ({names[p] for p in g["params"]} for g in optimizer.param_groups)
        self.assertEqual(optimizer.param_groups[0]["weight_decay"], 0.01)
        self.assertIn("encoder.embed.weight", decayed)
        self.assertIn("encoder.blocks.0.attn.q_proj.weight", decayed)
        for name in ("encoder.blocks.0.attn.q_proj.bias", "encoder.blocks.0.ln1.weight",
                     "encoder.blocks.0.attn.lrpe.theta", "encoder.blocks.0.attn.lrpe.householder_v",
                     "encoder.final_norm.bias"):
            self.assertIn(name, kept)
        self.assertEqual(len(decayed) + len(kept), len(names))
        _, everything = R.resolve_recipe(BINARY, RECIPE, [
            "optimizer.decay_norms=true", "optimizer.decay_biases=true",
            "optimizer.decay_positional=true"])
        optimizer = R.make_optimizer(model, everything)
        self.assertEqual(len(optimizer.param_groups[0]["params"]), len(names))

    def test_samplers_are_deterministic_per_seed(self):
        stream = self.streams["train"]
        n, length = stream.numel(), 32

        def draws(seed, mode, batches=40):
            sampler = R.WindowSampler(stream, length, 4, seed, mode)
            return [sampler.next_batch() for _ in range(batches)]

        for mode in ("random", "aligned"):
            a, b, c = draws(7, mode), draws(7, mode), draws(8, mode)
            self.assertTrue(all(torch.equal(x[0], y[0]) for x, y in zip(a, b)), mode)
            self.assertFalse(all(torch.equal(x[0], y[0]) for x, y in zip(a, c)), mode)
            for ids, targets in a:
                self.assertEqual(tuple(ids.shape), (4, length))
                self.assertTrue(torch.equal(ids[:, 1:], targets[:, :-1]))
        sampler = R.WindowSampler(stream, length, 4, 7, "random")
        starts = torch.cat([sampler.next_starts() for _ in range(2000)])
        self.assertGreaterEqual(int(starts.min()), 0)
        self.assertLessEqual(int(starts.max()), n - 1 - length)
        self.assertGreater(int((starts % length != 0).sum()), 0)  # not aligned
        small = stream[:length * 10 + 1]  # 10 aligned windows: 2 full batches of 4 per epoch
        sampler = R.WindowSampler(small, length, 4, 7, "aligned")
        epoch = torch.cat([sampler.next_starts() for _ in range(2)])
        self.assertEqual(len(set(epoch.tolist())), 8)
        self.assertTrue(bool((epoch % length == 0).all()))
        sampler.next_starts()
        self.assertEqual(sampler.epoch, 1)


if __name__ == "__main__":
    unittest.main()
