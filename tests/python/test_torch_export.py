# The other direction: rota.torch modules saved as Rota checkpoints, and `rota export hf`.
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
import parity_support as ps  # noqa: E402
import rota  # noqa: E402
import rota.torch as rt  # noqa: E402

BINARY = ps.BINARY


def cli(*args):
    return subprocess.run([BINARY, *args], capture_output=True, text=True,
                          env=dict(os.environ, OMP_NUM_THREADS="2"))


def torch_eval_loss(model, run, kind, batches=2):
    """rota.torch's token-weighted loss over the batches Rota evaluates."""
    case = ps.ParityCase.__new__(ps.ParityCase)
    case.kind = kind
    total, weight = 0.0, 0
    model = model.double().eval()
    with torch.no_grad():
        for batch in run.eval_batches("valid", batches=batches):
            w = case.batch_weight(batch)
            total += float(case.torch_batch_loss(model, batch)) * w
            weight += w
    model.float()
    return total / weight


class SaveAsRotaCheckpoint(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        cls.lm_run = ps.train_run(ps.config(), cls.dir, "lm")
        cls.cls_run = ps.train_run(ps.config("classifier", position=rt.PositionConfig(
            kind="lrpe", type=3)), cls.dir, "cls")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def trained_further(self, run_dir):
        """The run's model after a few AdamW steps in PyTorch (weights Rota never saw)."""
        model = rt.from_pretrained(run_dir)
        model.train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        batch = rota.load(run_dir).eval_batches("valid", batches=1)[0]
        tensors = ps.batch_tensors(batch)
        for _ in range(3):
            optimizer.zero_grad()
            if model.config.kind == "classifier":
                loss = model.loss(tensors["ids"], tensors["labels"], tensors.get("key_mask"))
            else:
                loss = model.loss(tensors["ids"], tensors["targets"])
            loss.backward()
            optimizer.step()
        return model.eval()

    def test_rota_eval_reproduces_the_torch_loss(self):
        for run_dir, kind in ((self.lm_run, "causal_lm"), (self.cls_run, "classifier")):
            with self.subTest(kind):
                model = self.trained_further(run_dir)
                out = os.path.join(self.dir, f"saved_{kind}")
                rt.save_checkpoint(model, out, source=run_dir)
                saved = rota.load(out)  # Rota's own loader: sizes, CRCs, strict names
                native = saved.eval("valid", batches=2)["loss"]
                ours = torch_eval_loss(model, saved, kind)
                self.assertLessEqual(abs(ours - native) / native, 1e-6)
                original = rota.load(run_dir).eval("valid", batches=2)["loss"]
                self.assertGreater(abs(native - original), 1e-4)  # the new weights are used
                result = cli("eval", out, "--split", "valid", "--batches", "2")
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertIn(f"loss={native:.6g}", result.stdout)

    def test_llama_style_block_exports_and_saves(self):
        """RMSNorm, SwiGLU and no biases: `rota export hf` and rt.save_checkpoint carry the
        gate/up/down projections and no bias tensors, and Rota reads the saved weights back."""
        cfg = ps.config(norm_kind="rms_norm", activation="swiglu", bias=False, ffn_width=None)
        run_dir = ps.train_run(cfg, self.dir, "lm_llama")
        out = os.path.join(self.dir, "hf_llama")
        result = cli("export", "hf", run_dir, out)
        self.assertEqual(result.returncode, 0, result.stderr)
        exported, original = rt.from_pretrained(out), rt.from_pretrained(run_dir)
        self.assertEqual(exported.config, original.config)
        self.assertEqual((exported.config.norm_kind, exported.config.activation,
                          exported.config.bias, exported.config.ffn_hidden),
                         ("rms_norm", "swiglu", False, 48))
        state = exported.state_dict()
        self.assertEqual(tuple(state["encoder.blocks.1.ffn.down_proj.weight"].shape), (16, 48))
        self.assertEqual([k for k in state if k.endswith(".bias")], [])
        ids = torch.randint(0, original.config.vocab_size, (2, 17))
        torch.testing.assert_close(exported(ids), original(ids), rtol=0, atol=0)
        # PyTorch-trained weights saved for Rota: Rota's evaluation reproduces rota.torch's loss.
        model = self.trained_further(run_dir)
        saved_dir = os.path.join(self.dir, "saved_llama")
        rt.save_checkpoint(model, saved_dir, source=run_dir)
        saved = rota.load(saved_dir)
        native = saved.eval("valid", batches=2)["loss"]
        self.assertLessEqual(abs(torch_eval_loss(model, saved, "causal_lm") - native) / native,
                             1e-6)
        self.assertGreater(abs(native - rota.load(run_dir).eval("valid", batches=2)["loss"]),
                           1e-4)

    def test_finetune_init_from_a_torch_checkpoint(self):
        model = self.trained_further(self.lm_run)
        out = os.path.join(self.dir, "init_source")
        rt.save_checkpoint(model, out, source=self.lm_run)
        # Fine-tune with a learning rate so small that the weights cannot move measurably.
        finetuned = rota.train(os.path.join(self.dir, "lm.txtpb"),
                               ["train.steps=1", f"finetune.init_from={out}",
                                "schedule.lr=1e-12", "optimizer.adamw.weight_decay=0"],
                               out=os.path.join(self.dir, "finetuned"))
        theirs = finetuned.state_dict()
        for name, value in model.state_dict().items():
            np.testing.assert_allclose(theirs[name], value.numpy(), rtol=0, atol=1e-9,
                                       err_msg=name)

    def test_lora_run_exports_merged_and_is_refused_unmerged(self):
        """A run fine-tuned with low-rank adapters (its checkpoint holds only the adapters and a
        reference to its base): `rota export hf` folds them into the weights, and rota.torch on
        the export reproduces Rota's own evaluation of the adapted run; rota.torch refuses the
        run directory itself, saying how to get a loadable model."""
        lora_run = os.path.join(self.dir, "lora")
        result = cli("train", os.path.join(self.dir, "lm.txtpb"), "--out", lora_run,
                     "--set", f"finetune.init_from={self.lm_run}", "--set", "finetune.lora.rank=2",
                     "--set", "finetune.lora.targets+=q_proj", "--set",
                     "finetune.lora.targets+=fc1", "--set", "schedule.lr=3e-2")
        self.assertEqual(result.returncode, 0, result.stderr)
        with self.assertRaisesRegex(rt.CheckpointError, "rota export hf"):
            rt.load(lora_run)
        out = os.path.join(self.dir, "lora_hf")
        result = cli("export", "hf", lora_run, out)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("merged into the weights of 4 layers", result.stdout)
        exported = rt.from_pretrained(out)
        native = rota.load(lora_run)
        ours = torch_eval_loss(exported, native, "causal_lm")
        theirs = native.eval("valid", batches=2)["loss"]
        self.assertLessEqual(abs(ours - theirs) / theirs, 1e-6)
        base = rota.load(self.lm_run).eval("valid", batches=2)["loss"]
        self.assertGreater(abs(theirs - base), 1e-4)  # the adapters changed the model

    def test_refuses_to_overwrite(self):
        model = rt.from_pretrained(self.lm_run)
        out = os.path.join(self.dir, "exists")
        os.makedirs(out)
        with self.assertRaisesRegex(ValueError, "already exists"):
            rt.save_checkpoint(model, out, source=self.lm_run)


class ExportHf(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_export_loads_with_from_pretrained(self):
        run_dir = ps.train_run(ps.config(attention="softmax", position=rt.PositionConfig(
            kind="t5", buckets=8, max_distance=16)), self.dir, "lm_t5")
        out = os.path.join(self.dir, "hf_lm")
        result = cli("export", "hf", run_dir, out)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("tokenizer.json: written", result.stdout)
        for name in ("config.json", "model.safetensors", "tokenizer.json", "modeling_rota.py",
                     "models.py", "softmax_attention.py", "rota_tokenizer"):
            self.assertTrue(os.path.exists(os.path.join(out, name)), name)
        with open(os.path.join(out, "config.json")) as f:
            config = json.load(f)
        self.assertEqual(config["model_type"], "rota")
        self.assertEqual(config["architectures"], ["RotaForCausalLM"])
        self.assertEqual(config["auto_map"]["AutoModelForCausalLM"],
                         "modeling_rota.RotaForCausalLM")
        exported, original = rt.from_pretrained(out), rt.from_pretrained(run_dir)
        self.assertEqual(exported.config, original.config)
        ids = torch.randint(0, original.config.vocab_size, (2, 17))
        torch.testing.assert_close(exported(ids), original(ids), rtol=0, atol=0)
        # The exported tokenizer gives the run's ids.
        tokenizer = rt.load_tokenizer(out)
        text = "ROMEO: thou art\n"
        np.testing.assert_array_equal(tokenizer.encode(text), rota.load(run_dir).encode(text))
        # The exported modeling sources are the installed rota.torch's (embedded at build time).
        with open(os.path.join(out, "models.py")) as f, open(rt.models.__file__) as g:
            self.assertEqual(f.read(), g.read())
        refused = cli("export", "hf", run_dir, out)
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("not an empty directory", refused.stderr)

    def test_sentencepiece_run_exports_without_tokenizer_json(self):
        cfg = ps.config()
        run_dir = os.path.join(self.dir, "spm")
        recipe = os.path.join(self.dir, "spm.txtpb")
        text = ('version: 1\nname: "spm"\n' + rt.checkpoint.config_to_model_text(cfg) +
                'data { corpus: "tinyshakespeare" tokenizer { kind: SENTENCEPIECE_BPE '
                'vocab_size: 300 } sequence_length: 24 batch_size: 3 }\n' + ps.TRAIN)
        with open(recipe, "w", encoding="utf-8") as f:
            f.write(text)
        self.assertEqual(cli("train", recipe, "--out", run_dir).returncode, 0)
        out = os.path.join(self.dir, "hf_spm")
        result = cli("export", "hf", run_dir, out)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("tokenizer.json: not written", result.stdout)
        self.assertFalse(os.path.exists(os.path.join(out, "tokenizer.json")))
        # rota_tokenizer/ carries the SentencePiece model: the same ids as the run.
        text = "ROMEO: thou art\n"
        np.testing.assert_array_equal(rt.load_tokenizer(out).encode(text),
                                      rota.load(run_dir).encode(text))
        ids = torch.randint(0, 300, (1, 13))
        torch.testing.assert_close(rt.from_pretrained(out)(ids), rt.from_pretrained(run_dir)(ids),
                                   rtol=0, atol=0)

    def test_init_scheme_round_trips_through_the_model_block(self):
        # init_std is written only for the schemes that have a σ (Rota refuses it otherwise).
        for scheme, has_std in (("normal", True), ("gpt2", True), ("pytorch", False),
                                ("fairseq", False), ("width_scaled", False)):
            with self.subTest(scheme):
                cfg = ps.config()
                cfg.init_scheme = scheme
                block = rt.checkpoint.config_to_model_text(cfg)
                self.assertIn(f"init_scheme: {scheme.upper()}", block)
                self.assertEqual("init_std:" in block, has_std)
                recipe = os.path.join(self.dir, f"init_{scheme}.txtpb")
                with open(recipe, "w", encoding="utf-8") as f:
                    f.write('version: 1\nname: "init"\n' + block +
                            'data { corpus: "tinyshakespeare" tokenizer { kind: CHAR } '
                            'sequence_length: 24 batch_size: 3 }\n' + ps.TRAIN)
                shown = cli("recipe", "show", recipe)
                self.assertEqual(shown.returncode, 0, shown.stderr)
                back = rt.RotaConfig.from_recipe_text(shown.stdout, vocab_size=cfg.vocab_size)
                self.assertEqual(back.init_scheme, scheme)

    def test_a_model_block_without_a_scheme_starts_as_rota_resolves_it(self):
        # No scheme: the default PYTORCH; a σ alone: NORMAL (what it meant before the default
        # changed). rota.torch reads the unresolved text as Rota's `recipe show` resolves it.
        for extra, scheme in (("", "pytorch"), ("init_std: 0.05 ", "normal")):
            with self.subTest(extra or "nothing"):
                text = ('version: 1\nname: "init"\nmodel { kind: CAUSAL_LM width: 16 layers: 1 '
                        'heads: 2 ' + extra + 'position { lrpe {} } }\ndata { corpus: '
                        '"tinyshakespeare" tokenizer { kind: CHAR } sequence_length: 24 '
                        'batch_size: 3 }\n' + ps.TRAIN)
                recipe = os.path.join(self.dir, "unresolved.txtpb")
                with open(recipe, "w", encoding="utf-8") as f:
                    f.write(text)
                shown = cli("recipe", "show", recipe)
                self.assertEqual(shown.returncode, 0, shown.stderr)
                self.assertIn(f"init_scheme: {scheme.upper()}", shown.stdout)
                self.assertEqual(rt.RotaConfig.from_recipe_text(text, vocab_size=65).init_scheme,
                                 scheme)

    def test_classifier_labels(self):
        run_dir = ps.train_run(ps.config("classifier"), self.dir, "cls")
        out = os.path.join(self.dir, "hf_cls")
        self.assertEqual(cli("export", "hf", run_dir, out).returncode, 0)
        with open(os.path.join(out, "config.json")) as f:
            config = json.load(f)
        self.assertEqual(config["architectures"], ["RotaForSequenceClassification"])
        self.assertEqual(config["num_labels"], 2)
        self.assertEqual(sorted(config["id2label"]), ["0", "1"])
        model = rt.from_pretrained(out)
        self.assertEqual(model.config.num_classes, 2)

    def test_damaged_config_json_is_named(self):
        """from_pretrained on an export whose config.json is damaged names the file and what is
        wrong with it (not a bare JSONDecodeError or KeyError)."""
        run_dir = ps.train_run(ps.config(), self.dir, "lm_damaged")
        out = os.path.join(self.dir, "hf_damaged")
        result = cli("export", "hf", run_dir, out)
        self.assertEqual(result.returncode, 0, result.stderr)
        config_path = os.path.join(out, "config.json")
        with open(config_path, encoding="utf-8") as f:
            good = f.read()
        truncated = good[:good.index("\n", len(good) // 2)]
        try:
            json.loads(truncated)
            self.fail("the truncated config.json parses")
        except json.JSONDecodeError as error:
            where = f"{config_path}:{error.lineno}:{error.colno}: not valid JSON"
        for text, needles in (
                (truncated, [where]),
                ("[1, 2]", [config_path, "a JSON list, not the object of a model config"]),
                (b"\xff\xfe{}", [config_path, "not UTF-8"]),
                (json.dumps({"rota_recipe": 7}), [config_path, "must be the recipe's text"]),
                (json.dumps({"rota": {"widht": 64}}), [config_path, "not a model config", "widht"])):
            with open(config_path, "wb") as f:
                f.write(text if isinstance(text, bytes) else text.encode("utf-8"))
            with self.assertRaises(rt.checkpoint.CheckpointError) as caught:
                rt.from_pretrained(out)
            for needle in needles:
                self.assertIn(needle, str(caught.exception))

    def test_missing_run_is_an_error(self):
        result = cli("export", "hf", os.path.join(self.dir, "nope"), os.path.join(self.dir, "o"))
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("nope", result.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "o")))


if __name__ == "__main__":
    unittest.main()
