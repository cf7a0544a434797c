# rota.train against `rota train`: the same weights, callback steps, early stop, resume, Ctrl-C.
import json
import os
import signal
import subprocess
import sys
import time
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rota  # noqa: E402
from native_support import BINARY, TINY, TempDir, cli_train, read_safetensors  # noqa: E402

STEPS = ["train.steps=8", "train.eval_every=4", "train.checkpoint_every=4", "train.log_every=1"]


def setUpModule():
    global TMP, CLI_RUN
    TMP = TempDir()
    CLI_RUN = cli_train("causal_lm", TMP.join("cli"), *STEPS)


def tearDownModule():
    TMP.cleanup()


def final_weights(run_dir):
    return read_safetensors(os.path.join(run_dir, "checkpoints", "step_000008",
                                         "model.safetensors"))


def train_lines(run_dir):
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        return [line for line in map(json.loads, f) if line["split"] == "train"]


class Train(unittest.TestCase):
    def assert_same_weights(self, run_dir):
        expected = final_weights(CLI_RUN)
        got = final_weights(run_dir)
        self.assertEqual(list(got), list(expected))
        for name in expected:
            np.testing.assert_array_equal(got[name], expected[name], err_msg=name)

    def test_same_run_as_the_cli_with_callback(self):
        seen = []
        run = rota.train(TINY["causal_lm"], STEPS, out=TMP.join("py"), callback=seen.append)
        self.assertIsInstance(run, rota.Run)
        self.assertEqual((run.path, run.step), (TMP.join("py"), 8))
        self.assert_same_weights(TMP.join("py"))
        self.assertEqual([info["step"] for info in seen], list(range(1, 9)))
        lines = train_lines(TMP.join("py"))
        for info, line in zip(seen, lines):
            self.assertEqual(info["total_steps"], 8)
            self.assertAlmostEqual(info["loss"], line["loss"], delta=1e-6 * line["loss"])
            self.assertAlmostEqual(info["lr"], line["lr"])
            self.assertAlmostEqual(info["grad_norm"], line["grad_norm"], delta=1e-6)
            self.assertEqual(info["tokens_seen"], line["tokens_seen"])
            self.assertGreater(info["tokens_per_s"], 0)
        self.assertEqual(seen[0]["tokens"], 4 * 32)
        self.assertIsNone(seen[0]["eval"])
        self.assertEqual(sorted(seen[3]["eval"]), ["loss", "ppl", "tokens"])
        self.assertEqual(seen[7]["eval"]["loss"], run.eval("valid", batches=4)["loss"])

    def test_stop_from_the_callback_then_resume(self):
        out = TMP.join("stopped")
        run = rota.train(TINY["causal_lm"], STEPS, out=out, callback=lambda info: info["step"] < 3)
        self.assertEqual(run.step, 3)
        self.assertTrue(run.checkpoint.endswith("step_000003"))
        run = rota.train(TINY["causal_lm"], STEPS, out=out, resume=True)
        self.assertEqual(run.step, 8)
        self.assert_same_weights(out)  # resuming is bit-exact

    def test_ctrl_c_checkpoints_and_raises_keyboard_interrupt(self):
        out = TMP.join("interrupted")

        def interrupt(info):
            if info["step"] == 2:
                os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C sends

        with self.assertRaises(KeyboardInterrupt):
            rota.train(TINY["causal_lm"], STEPS, out=out, callback=interrupt)
        self.assertEqual(rota.load(out).step, 2)
        # Python's own handler is back: another SIGINT is a plain KeyboardInterrupt
        with self.assertRaises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        run = rota.train(TINY["causal_lm"], STEPS, out=out, resume=True)
        self.assertEqual(run.step, 8)
        self.assert_same_weights(out)

    def test_threads_follow_the_environment_and_recipe_whatever_is_imported(self):
        """Importing PyTorch (before or after rota) leaves OpenMP's count at 1 for the thread;
        rota.train still uses OMP_NUM_THREADS, or the recipe's train.threads, and logs it."""
        if subprocess.run([sys.executable, "-c", "import torch"]).returncode != 0:
            self.fail("this test needs PyTorch (make test installs it)")
        for order in ("import torch\nimport rota", "import rota\nimport torch"):
            for env_threads, recipe_threads, expected in (("2", 0, 2), ("3", 0, 3), ("2", 1, 1)):
                out = TMP.join(f"threads-{len(os.listdir(TMP.path))}")
                script = (f"{order}\n"
                          f"run = rota.train({TINY['causal_lm']!r}, ['train.steps=1', "
                          f"'train.eval_batches=1', 'train.threads={recipe_threads}'], "
                          f"out={out!r})\n")
                env = dict(os.environ, OMP_NUM_THREADS=env_threads)
                done = subprocess.run([sys.executable, "-c", script], env=env,
                                      capture_output=True, text=True)
                self.assertEqual(done.returncode, 0, done.stderr)
                self.assertIn(f"({expected} threads)", done.stderr, f"{order!r}\n{done.stderr}")

    def test_callback_exception_stops_with_a_checkpoint(self):
        out = TMP.join("raised")

        def fail(info):
            if info["step"] == 2:
                raise ValueError("stop here")

        with self.assertRaisesRegex(ValueError, "stop here"):
            rota.train(TINY["causal_lm"], STEPS, out=out, callback=fail)
        self.assertEqual(rota.load(out).step, 2)

    def test_recipe_text_and_seed(self):
        with open(TINY["causal_lm"]) as f:
            text = f.read()
        run = rota.train(text, ["train.steps=2"], out=TMP.join("text"), seed=7)
        self.assertEqual(run.step, 2)
        self.assertIn("seed: 7", run.recipe_text)
        self.assertIn('name: "tiny-causal-lm"', run.recipe_text)

    def test_recipe_errors(self):
        with self.assertRaises(rota.RecipeError) as caught:
            rota.train(TINY["causal_lm"], ["train.stepz=2"], out=TMP.join("bad"))
        self.assertIn("stepz", str(caught.exception))
        self.assertIsInstance(caught.exception, rota.Error)
        with self.assertRaises(rota.RecipeError):
            rota.train(TMP.join("missing.txtpb"), out=TMP.join("bad2"))
        with self.assertRaises(rota.RecipeError):
            rota.train("model { kind: NOPE }", out=TMP.join("bad3"))

    def test_run_directory_is_locked_while_training(self):
        # rota.train holds RUN/.lock as `rota train` does: a CLI run into the same directory,
        # started from the callback, is refused naming this process.
        out = TMP.join("locked")
        refusals = []

        def second_writer(info):
            if info["step"] == 1:
                refusals.append(subprocess.run(
                    [BINARY, "train", TINY["causal_lm"], "--out", out, "--resume"],
                    capture_output=True))

        rota.train(TINY["causal_lm"], STEPS, out=out, callback=second_writer)
        self.assertEqual(len(refusals), 1)
        self.assertEqual(refusals[0].returncode, 1)
        message = refusals[0].stderr.decode(errors="replace")
        self.assertIn("%s is in use by " % out, message)
        self.assertIn("(pid %d on " % os.getpid(), message)
        self.assertEqual(rota.load(out).step, 8)
        # Released at the end: the next run of the directory goes ahead.
        subprocess.run([BINARY, "train", TINY["causal_lm"], "--out", out, "--resume",
                        *sum([["--set", s] for s in STEPS], [])], check=True, capture_output=True)


class TrainingBatches(unittest.TestCase):
    """rota.training_batches: the C++ tests prove the batches are rota train's; here the Python
    surface: arrays, the end of the run, states through pickle, resume_from, errors."""

    def test_batches_states_and_resume(self):
        import pickle
        overrides = ["train.steps=3", "train.gradient_accumulation=2"]
        batches = rota.training_batches(TINY["causal_lm"], overrides)
        self.assertEqual((batches.total, len(batches), batches.micro_batches_per_step), (6, 6, 2))
        seen = []
        for i, batch in enumerate(batches):
            self.assertEqual(batch["tokens"].shape, (2, 32))
            self.assertEqual(batch["tokens"].dtype, np.int64)
            self.assertEqual(batch["targets"].shape, (2, 32))
            # A causal LM's targets are its inputs shifted by one.
            np.testing.assert_array_equal(batch["targets"][:, :-1], batch["tokens"][:, 1:])
            seen.append(batch["tokens"])
            if i == 1:
                state = pickle.loads(pickle.dumps(batches.state()))
        self.assertEqual(len(seen), 6)
        self.assertEqual(len(batches), 0)
        later = rota.training_batches(TINY["causal_lm"], overrides)
        later.load_state(state)
        self.assertEqual(later.drawn, 2)
        rest = [b["tokens"] for b in later]
        self.assertEqual(len(rest), 4)
        for got, expected in zip(rest, seen[2:]):
            np.testing.assert_array_equal(got, expected)
        # resume_from a run stopped after one step: the micro-batches after its first two.
        run_dir = TMP.join("batches-run")
        rota.train(TINY["causal_lm"], overrides + ["train.eval_every=0"], out=run_dir,
                   callback=lambda info: False)
        resumed = rota.training_batches(TINY["causal_lm"], overrides + ["train.eval_every=0"],
                                        resume_from=run_dir)
        self.assertEqual(resumed.drawn, 2)
        np.testing.assert_array_equal(next(resumed)["tokens"], seen[2])

    def test_other_tasks_and_errors(self):
        masked = next(rota.training_batches(TINY["masked_lm"], ["train.steps=2"]))
        self.assertEqual(set(masked), {"tokens", "targets", "mask", "epoch"})
        classifier = next(rota.training_batches(TINY["classifier"], ["train.steps=2"]))
        self.assertEqual(set(classifier), {"tokens", "mask", "labels", "epoch"})
        self.assertEqual(classifier["labels"].shape, (classifier["tokens"].shape[0],))
        with self.assertRaises(rota.RecipeError):
            rota.training_batches(TINY["causal_lm"], ["train.stepz=2"])
        stateful = rota.training_batches(TINY["causal_lm"], ["train.carry_state=true"])
        with self.assertRaises(rota.RecipeError):
            next(stateful)


if __name__ == "__main__":
    unittest.main()
