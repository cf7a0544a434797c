# rota._native under numpy 2 (the peers' venv) gives the arrays it gives under Debian's numpy 1.
"""Debian 12's pybind11 (2.10) reads a dtype's item size from numpy 1's struct layout; under numpy
2 that read is wrong, and arrays the bindings shaped themselves came out with strides of 0 (every
element the first) and integer inputs were refused. python/native/arrays.cpp now asks the dtype
object instead. This test builds one tiny run and checks, under numpy 2:
- the arrays against independent references: the checkpoint's safetensors read with numpy alone,
  and the logits of rota.torch (torch 2.x, the same checkpoint);
- every array-returning call against the same call made by Debian's python with numpy 1;
- integer inputs of every width and sign, lists, and masks of several dtypes.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "python"))
import native_support as ns  # noqa: E402

import rota  # noqa: E402

DEBIAN_PYTHON = os.environ.get("ROTA_DEBIAN_PYTHON", "/usr/bin/python3")
TEXT = "ROMEO:\nWhat say'st thou?"

# Run by Debian's python: the arrays of the same calls, saved with np.save (readable by numpy 2).
NUMPY1_SCRIPT = r"""
import sys, json, numpy as np, rota
run = rota.load(sys.argv[1])
out = sys.argv[2]
ids = run.encode(sys.argv[3])
arrays = {
    "encode": ids,
    "logits": run.logits(ids),
    "logits_batch": run.logits(np.stack([ids, ids[::-1]])),
    "generate_ids": run.generate_ids(sys.argv[3], max_tokens=6, temperature=0.9, seed=4),
}
state = run.state_dict()
for name, value in state.items():
    arrays["state/" + name] = value
for i, batch in enumerate(run.eval_batches("valid", batches=2)):
    for key, value in batch.items():
        arrays["batch%d/%s" % (i, key)] = value
np.savez(out, **{k.replace(".", "~"): v for k, v in arrays.items()})
print(json.dumps({"numpy": np.__version__}))
"""


class Numpy2Arrays(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.run_dir = ns.cli_train("causal_lm", os.path.join(cls.tmp.name, "run"),
                                   "train.steps=3")
        cls.loaded = rota.load(cls.run_dir)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_this_interpreter_has_numpy_2(self):
        self.assertGreaterEqual(int(np.__version__.split(".")[0]), 2, np.__version__)

    def test_state_dict_equals_the_checkpoint_read_with_numpy_alone(self):
        on_disk = ns.read_safetensors(os.path.join(self.loaded.checkpoint, "model.safetensors"))
        state = self.loaded.state_dict()
        self.assertEqual(sorted(state), sorted(on_disk))
        for name, value in on_disk.items():
            got = state[name]
            self.assertEqual(got.shape, value.shape, name)
            self.assertEqual(got.dtype, value.dtype, name)
            self.assertTrue(got.flags.c_contiguous, name)
            np.testing.assert_array_equal(got, value, err_msg=name)

    def test_logits_equal_rota_torch_on_torch_2(self):
        import torch
        import rota.torch as rt

        self.assertGreaterEqual(int(torch.__version__.split(".")[0]), 2, torch.__version__)
        model = rt.from_pretrained(self.run_dir)
        ids = self.loaded.encode(TEXT)
        got = self.loaded.logits(ids)
        with torch.no_grad():
            want = model(torch.from_numpy(ids.astype(np.int64))[None]).numpy()
        self.assertEqual(got.shape, want.shape)
        bound = 1e-5 * float(np.abs(want).max())
        self.assertLessEqual(float(np.abs(got - want).max()), bound)
        # A zero-stride result would repeat one number; real logits vary.
        self.assertGreater(float(got.std()), 0.0)

    def test_every_array_equals_the_numpy_1_interpreters(self):
        saved = os.path.join(self.tmp.name, "numpy1.npz")
        done = subprocess.run([DEBIAN_PYTHON, "-c", NUMPY1_SCRIPT, self.run_dir, saved, TEXT],
                              capture_output=True, text=True, env=os.environ.copy())
        self.assertEqual(done.returncode, 0, done.stderr)
        version = json.loads(done.stdout.strip().splitlines()[-1])["numpy"]
        self.assertEqual(version.split(".")[0], "1", "the reference interpreter has numpy " + version)
        want = {k.replace("~", "."): v for k, v in np.load(saved).items()}
        ids = self.loaded.encode(TEXT)
        got = {
            "encode": ids,
            "logits": self.loaded.logits(ids),
            "logits_batch": self.loaded.logits(np.stack([ids, ids[::-1]])),
            "generate_ids": self.loaded.generate_ids(TEXT, max_tokens=6, temperature=0.9, seed=4),
        }
        for name, value in self.loaded.state_dict().items():
            got["state/" + name] = value
        for i, batch in enumerate(self.loaded.eval_batches("valid", batches=2)):
            for key, value in batch.items():
                got["batch%d/%s" % (i, key)] = value
        self.assertEqual(sorted(got), sorted(want))
        for name in want:
            self.assertEqual(got[name].dtype, want[name].dtype, name)
            self.assertEqual(got[name].shape, want[name].shape, name)
            np.testing.assert_array_equal(got[name], want[name], err_msg=name)

    def test_integer_inputs_of_every_width_and_sign(self):
        ids = self.loaded.encode(TEXT)
        want = self.loaded.logits(ids.tolist())
        for dtype in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                      np.uint64):
            with self.subTest(dtype=np.dtype(dtype).name):
                np.testing.assert_array_equal(self.loaded.logits(ids.astype(dtype)), want)
                self.assertEqual(self.loaded.decode(ids.astype(dtype)), self.loaded.decode(ids.tolist()))
        # A strided view is read in its own order.
        doubled = np.repeat(ids.astype(np.int64), 2)[::2]
        np.testing.assert_array_equal(self.loaded.logits(doubled), want)
        with self.assertRaisesRegex(TypeError, "expected integers"):
            self.loaded.logits(ids.astype(np.float32))

    def test_masks_of_several_dtypes(self):
        masked = rota.load(ns.cli_train("masked_lm", os.path.join(self.tmp.name, "mlm"),
                                        "train.steps=2"))
        ids = np.stack([masked.encode("abcdef"), masked.encode("ghijkl")])
        mask = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]])
        want = masked.logits(ids, key_mask=mask.astype(np.float32))
        for dtype in (np.bool_, np.int8, np.int64, np.uint16, np.float64):
            with self.subTest(dtype=np.dtype(dtype).name):
                np.testing.assert_array_equal(masked.logits(ids, key_mask=mask.astype(dtype)), want)
        # The mask changes the logits of the first row's real tokens (it is read at all).
        everything = masked.logits(ids, key_mask=np.ones_like(mask))
        self.assertFalse(np.array_equal(everything[0, :4], want[0, :4]))


if __name__ == "__main__":
    unittest.main()
