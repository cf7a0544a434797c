# rota.load and rota.Run against the rota CLI: eval numbers, logits, gradients, generation, errors.
import json
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rota  # noqa: E402
from native_support import (IGNORE, TempDir, cli, cli_eval, cli_train,  # noqa: E402
                            cross_entropy_sum, perturbed_checkpoint, read_safetensors)


def setUpModule():
    global TMP, RUNS
    TMP = TempDir()
    RUNS = {kind: cli_train(kind, TMP.join(kind), "train.steps=10", "train.eval_every=5",
                            "train.checkpoint_every=5")
            for kind in ("causal_lm", "masked_lm", "classifier")}


def tearDownModule():
    TMP.cleanup()


class RunBasics(unittest.TestCase):
    def test_run_and_checkpoint_directories(self):
        run = rota.load(RUNS["causal_lm"])
        self.assertEqual(run.path, RUNS["causal_lm"])
        self.assertEqual(run.checkpoint, os.path.join(RUNS["causal_lm"], "checkpoints", "step_000010"))
        self.assertEqual(run.step, 10)
        with open(os.path.join(run.checkpoint, "recipe.txtpb")) as f:
            self.assertEqual(run.recipe_text, f.read())
        self.assertEqual((run.kind, run.vocab_size, run.labels), ("causal_lm", 256, []))
        earlier = rota.load(os.path.join(RUNS["causal_lm"], "checkpoints", "step_000005"))
        self.assertEqual((earlier.path, earlier.step), (RUNS["causal_lm"], 5))
        self.assertEqual(rota.load(RUNS["masked_lm"]).kind, "masked_lm")
        classifier = rota.load(RUNS["classifier"])
        self.assertEqual((classifier.kind, classifier.labels), ("classifier", ["0", "1"]))

    def test_state_dict_is_the_checkpoint_file(self):
        run = rota.load(RUNS["causal_lm"])
        state = run.state_dict()
        saved = read_safetensors(os.path.join(run.checkpoint, "model.safetensors"))
        self.assertEqual(list(state), list(saved))
        self.assertIn("encoder.blocks.0.attn.q_proj.weight", state)
        for name, value in saved.items():
            np.testing.assert_array_equal(state[name], value, err_msg=name)
        state["encoder.embed.weight"][:] = 0  # a copy: the run is unchanged
        self.assertTrue(np.any(run.state_dict()["encoder.embed.weight"] != 0))

    def test_encode_decode(self):
        run = rota.load(RUNS["causal_lm"])
        text = "ROMEO: Wherefore, é?"
        ids = run.encode(text)
        self.assertEqual(ids.dtype, np.int32)
        self.assertEqual(ids.tolist(), list(text.encode("utf-8")))  # the BYTE tokenizer: bytes
        self.assertEqual(run.decode(ids), text)
        self.assertEqual(run.decode(ids.astype(np.uint8)), text)
        self.assertEqual(run.decode([]), "")
        self.assertEqual(run.tokenizer.vocab_size, 256)
        self.assertEqual(run.decode(ids[:-2]), "ROMEO: Wherefore, \ufffd")  # half a character


class EvalAgainstCli(unittest.TestCase):
    """run.eval is `rota eval`; its batches, scored with run.logits in numpy, give the same loss."""

    def check_lm(self, kind, count_key):
        run = rota.load(RUNS[kind])
        expected = cli_eval(RUNS[kind], "valid", 3)
        got = run.eval("valid", batches=3)
        self.assertEqual(got["split"], "valid")
        self.assertEqual(got["parameters"], int(expected["parameters"]))
        self.assertEqual(got[count_key], int(expected[count_key]))
        for key in ("loss", "ppl"):
            self.assertAlmostEqual(got[key], expected[key], delta=1e-5 * expected[key])
        total, count = 0.0, 0
        batches = run.eval_batches("valid", batches=3)
        self.assertEqual(len(batches), 3)
        for batch in batches:
            logits = run.logits(batch["ids"], key_mask=batch.get("key_mask"))
            self.assertEqual(logits.shape, batch["ids"].shape + (run.vocab_size,))
            self.assertEqual(logits.dtype, np.float32)
            loss_sum, n = cross_entropy_sum(logits, batch["targets"])
            total += loss_sum
            count += n
        self.assertEqual(count, got[count_key])
        self.assertAlmostEqual(total / count, got["loss"], delta=1e-5 * got["loss"])

    def test_causal_lm(self):
        self.check_lm("causal_lm", "tokens")
        self.assertEqual(sorted(rota.load(RUNS["causal_lm"]).eval_batches("valid", 1)[0]),
                         ["ids", "targets"])

    def test_masked_lm(self):
        self.check_lm("masked_lm", "masked_tokens")
        batch = rota.load(RUNS["masked_lm"]).eval_batches("valid", 1)[0]
        self.assertEqual(sorted(batch), ["ids", "key_mask", "targets"])

    def test_classifier(self):
        run = rota.load(RUNS["classifier"])
        expected = cli_eval(RUNS["classifier"], "valid", 3)
        got = run.eval("valid", batches=3)
        for key in ("loss", "accuracy", "mcc"):
            self.assertAlmostEqual(got[key], expected[key], delta=1e-5 * max(1, abs(expected[key])))
        self.assertEqual(got["examples"], int(expected["examples"]))
        total, correct, count = 0.0, 0, 0
        for batch in run.eval_batches("valid", batches=3):
            logits = run.logits(batch["ids"], key_mask=batch["key_mask"])
            self.assertEqual(logits.shape, (batch["ids"].shape[0], 2))
            loss_sum, n = cross_entropy_sum(logits, batch["labels"])
            total += loss_sum
            count += n
            correct += int((logits.argmax(axis=1) == batch["labels"]).sum())
        self.assertEqual(count, got["examples"])
        self.assertAlmostEqual(total / count, got["loss"], delta=1e-5)
        self.assertAlmostEqual(correct / count, got["accuracy"], delta=1e-9)

    def test_default_split_is_the_clis_and_a_missing_split_is_named(self):
        """run.eval() evaluates what `rota eval RUN` does (test); "dev" names the validation
        split; a split the data lacks raises RecipeError naming the ones it has."""
        run = rota.load(RUNS["causal_lm"])
        expected = cli_eval(RUNS["causal_lm"], "test", 2)
        got = run.eval(batches=2)
        self.assertEqual(got["split"], "test")
        self.assertAlmostEqual(got["loss"], expected["loss"], delta=1e-5 * expected["loss"])
        self.assertEqual(run.eval("dev", batches=1)["split"], "valid")
        self.assertEqual(len(run.eval_batches(batches=1)), 1)
        with self.assertRaises(rota.RecipeError) as caught:
            run.eval("heldout", batches=1)
        message = str(caught.exception)
        self.assertIn("has no 'heldout' split: its data has train, valid, test", message)
        self.assertIn("split=valid", message)

    def test_other_context(self):
        run = rota.load(RUNS["causal_lm"])
        line = cli("eval", RUNS["causal_lm"], "--split", "valid", "--batches", "2", "--context",
                   "16").decode().split()
        expected = float(dict(item.split("=", 1) for item in line)["loss"])
        self.assertAlmostEqual(run.eval("valid", context=16, batches=2)["loss"], expected,
                               delta=1e-5 * expected)

    def test_padding_does_not_change_bidirectional_logits(self):
        run = rota.load(RUNS["masked_lm"])
        ids = run.encode("to be or not to be")
        alone = run.logits(ids)[0]
        padded = np.concatenate([ids, np.zeros(5, np.int32)])
        mask = np.concatenate([np.ones(len(ids)), np.zeros(5)])
        together = run.logits(padded[None], key_mask=mask[None])[0, :len(ids)]
        np.testing.assert_allclose(together, alone, rtol=1e-4, atol=1e-4)


class Gradients(unittest.TestCase):
    def finite_difference(self, kind, name, loss_of_run):
        """loss_and_grads' gradient of one element vs a central difference of two checkpoints."""
        run = rota.load(RUNS[kind])
        loss, grads = loss_of_run(run)
        state = run.state_dict()
        self.assertIn(name, grads)
        for key, value in grads.items():  # every gradient is a parameter's, of its shape
            self.assertEqual(value.shape, state[key].shape, key)
        grad = grads[name]
        index = np.unravel_index(np.argmax(np.abs(grad)), grad.shape)
        h = 1e-2
        losses = []
        for sign in (1, -1):
            out = TMP.join("%s_fd_%d_%s" % (kind, sign, name))
            path = perturbed_checkpoint(run.checkpoint, name, index, sign * h, out)
            losses.append(loss_of_run(rota.load(path))[0])
        numeric = (losses[0] - losses[1]) / (2 * h)
        self.assertAlmostEqual(grad[index], numeric, delta=0.02 * abs(numeric) + 1e-4)
        return loss

    def test_causal_lm(self):
        text = "First Citizen:\nBefore we proceed any further, hear me speak."
        ids = rota.load(RUNS["causal_lm"]).encode(text)

        def loss_of(run):
            return run.loss_and_grads(ids)

        loss = self.finite_difference("causal_lm", "encoder.blocks.1.ffn.fc1.weight", loss_of)
        # targets default to the next ids: the mean cross-entropy of the logits
        run = rota.load(RUNS["causal_lm"])
        loss_sum, n = cross_entropy_sum(run.logits(ids)[:, :-1], ids[None, 1:].astype(np.int64))
        self.assertAlmostEqual(loss, loss_sum / n, delta=1e-5 * loss)
        targets = np.full((1, len(ids)), IGNORE)
        targets[0, :-1] = ids[1:]
        self.assertAlmostEqual(run.loss_and_grads(ids, targets=targets)[0], loss, delta=1e-6)

    def test_masked_lm(self):
        run = rota.load(RUNS["masked_lm"])
        batch = run.eval_batches("valid", 1)[0]

        def loss_of(r):
            return r.loss_and_grads(batch["ids"], targets=batch["targets"],
                                    key_mask=batch["key_mask"])

        loss = self.finite_difference("masked_lm", "encoder.blocks.0.attn.q_proj.weight", loss_of)
        loss_sum, n = cross_entropy_sum(run.logits(batch["ids"], batch["key_mask"]),
                                        batch["targets"])
        self.assertAlmostEqual(loss, loss_sum / n, delta=1e-5 * loss)

    def test_classifier(self):
        run = rota.load(RUNS["classifier"])
        batch = run.eval_batches("valid", 1)[0]

        def loss_of(r):
            return r.loss_and_grads(batch["ids"], key_mask=batch["key_mask"],
                                    labels=batch["labels"])

        loss = self.finite_difference("classifier", "classifier.weight", loss_of)
        loss_sum, n = cross_entropy_sum(run.logits(batch["ids"], batch["key_mask"]),
                                        batch["labels"])
        self.assertAlmostEqual(loss, loss_sum / n, delta=1e-5 * loss)


class Generation(unittest.TestCase):
    def test_same_as_cli(self):
        run = rota.load(RUNS["causal_lm"])
        for temperature, top_k, seed in ((0.8, 0, 3), (1.0, 5, 11), (0.0, 0, 0)):
            printed = cli("generate", RUNS["causal_lm"], "--prompt", "ROMEO:", "--tokens", "40",
                          "--temperature", str(temperature), "--top-k", str(top_k), "--seed",
                          str(seed))
            text = run.generate("ROMEO:", max_tokens=40, temperature=temperature, top_k=top_k,
                                seed=seed)
            self.assertEqual(text + "\n", printed.decode("utf-8", "replace"))
            new_ids = run.generate_ids("ROMEO:", max_tokens=40, temperature=temperature,
                                       top_k=top_k, seed=seed)
            self.assertEqual(len(new_ids), 40)
            self.assertEqual(bytes(run.encode("ROMEO:").tolist() + new_ids.tolist()) + b"\n",
                             printed)
            # ids as the prompt give the same continuation
            np.testing.assert_array_equal(
                run.generate_ids(run.encode("ROMEO:"), max_tokens=40, temperature=temperature,
                                 top_k=top_k, seed=seed), new_ids)

    def test_options_same_as_cli(self):
        """top_p, repetition_penalty and stop as `rota generate` applies them, bytes alike."""
        run = rota.load(RUNS["causal_lm"])
        free = cli("generate", RUNS["causal_lm"], "--prompt", "ROMEO:", "--tokens", "60",
                   "--temperature", "0.9", "--top-p", "0.9", "--repetition-penalty", "1.3",
                   "--seed", "11")
        new_ids = run.generate_ids("ROMEO:", max_tokens=60, temperature=0.9, top_p=0.9,
                                   repetition_penalty=1.3, seed=11)
        self.assertEqual(bytes(run.encode("ROMEO:").tolist() + new_ids.tolist()) + b"\n", free)
        self.assertEqual(run.generate("ROMEO:", max_tokens=60, temperature=0.9, top_p=0.9,
                                      repetition_penalty=1.3, seed=11) + "\n",
                         free.decode("utf-8", "replace"))
        # A stop string of two ASCII bytes from the middle of the continuation.
        continuation = free[6:-1]
        at = next(i for i in range(len(continuation) // 2, len(continuation) - 1)
                  if continuation[i] < 0x80 and continuation[i + 1] < 0x80)
        stop = continuation[at:at + 2].decode()
        cut = continuation[:continuation.index(stop.encode())]
        text = run.generate("ROMEO:", max_tokens=60, temperature=0.9, top_p=0.9,
                            repetition_penalty=1.3, seed=11, stop=[stop, "never here"])
        self.assertEqual(text, ("ROMEO:".encode() + cut).decode("utf-8", "replace"))
        self.assertEqual(text + "\n", cli("generate", RUNS["causal_lm"], "--prompt", "ROMEO:",
                                          "--tokens", "60", "--temperature", "0.9", "--top-p",
                                          "0.9", "--repetition-penalty", "1.3", "--seed", "11",
                                          "--stop", stop).decode("utf-8", "replace"))
        stopped_ids = run.generate_ids("ROMEO:", max_tokens=60, temperature=0.9, top_p=0.9,
                                       repetition_penalty=1.3, seed=11, stop=stop)
        # The ids up to the one that completed the stop string.
        self.assertTrue(len(cut) + 1 <= len(stopped_ids) <= len(cut) + 2)
        np.testing.assert_array_equal(stopped_ids, new_ids[:len(stopped_ids)])

    def test_a_list_of_prompts_and_samples_equal_each_alone(self):
        run = rota.load(RUNS["causal_lm"])
        prompts = ["ROMEO:", "JULIET: O Romeo", "To be"]
        options = dict(max_tokens=20, temperature=1.1, top_k=50, top_p=0.95,
                       repetition_penalty=1.2, seed=7)
        batch = run.generate_ids(prompts, num_samples=3, **options)
        texts = run.generate(prompts, num_samples=3, **options)
        self.assertEqual([len(entry) for entry in batch], [3, 3, 3])
        for prompt, ids, text in zip(prompts, batch, texts):
            alone = run.generate_ids(prompt, num_samples=3, **options)
            for sample in range(3):
                np.testing.assert_array_equal(ids[sample], alone[sample])
                self.assertEqual(text[sample], run.decode(
                    np.concatenate([run.encode(prompt), ids[sample]])))
            # sample 0 is the single sample with the seed
            np.testing.assert_array_equal(ids[0], run.generate_ids(prompt, **options))
            self.assertEqual(text[0], run.generate(prompt, **options))
            self.assertFalse(np.array_equal(ids[0], ids[1]))
        # One sample per prompt: a flat list; ids as prompts too.
        flat = run.generate(prompts, **options)
        self.assertEqual(flat, [entry[0] for entry in texts])
        self.assertEqual(run.generate([run.encode(p) for p in prompts], **options), flat)
        # The CLI's records of the same prompts file: the same number of ids per record.
        path = TMP.join("prompts.txt")
        with open(path, "w") as f:
            f.write("\n".join(prompts) + "\n")
        records = cli("generate", RUNS["causal_lm"], "--prompts", path, "--samples", "3",
                      "--format", "jsonl", "--tokens", "20", "--temperature", "1.1", "--top-k",
                      "50", "--top-p", "0.95", "--repetition-penalty", "1.2", "--seed", "7")
        lines = [json.loads(line) for line in records.decode().splitlines()]
        self.assertEqual([(r["prompt"], r["sample"]) for r in lines],
                         [(p, s) for p in (1, 2, 3) for s in range(3)])
        self.assertEqual([r["tokens"] for r in lines], [len(ids) for entry in batch for ids in entry])
        self.assertEqual([r["text"] for r in lines],
                         [t[len(p):] for p, entry in zip(prompts, texts) for t in entry])



class Errors(unittest.TestCase):
    def test_errors_are_rota_errors(self):
        run = rota.load(RUNS["causal_lm"])
        masked = rota.load(RUNS["masked_lm"])
        classifier = rota.load(RUNS["classifier"])
        cases = [
            (lambda: rota.load(TMP.join("nothing here")), "no such file"),
            (lambda: run.logits([1, 2, 999]), "999"),
            (lambda: run.logits(np.zeros((2, 3, 4), np.int64)), "dimensions"),
            (lambda: run.logits([1, 2], key_mask=[1, 1]), "key_mask"),
            (lambda: masked.logits([[1, 2]], key_mask=[[1, 1, 1]]), "key_mask"),
            (lambda: run.generate("ROMEO", max_tokens=-1), "max_tokens"),
            (lambda: run.generate("ROMEO", temperature=-1), "temperature"),
            (lambda: run.generate("ROMEO", top_p=0), "top_p must be in (0, 1]"),
            (lambda: run.generate("ROMEO", top_p=1.5), "top_p must be in (0, 1]"),
            (lambda: run.generate("ROMEO", repetition_penalty=0), "repetition_penalty"),
            (lambda: run.generate("ROMEO", num_samples=0), "num_samples must be >= 1"),
            (lambda: run.generate("ROMEO", stop=""), "empty stop string"),
            (lambda: run.generate(["ROMEO", ""]), "prompt 1: the prompt encodes to no tokens"),
            (lambda: run.generate("ROMEO", stop_at_eos=True), "has no <eos> token"),
            (lambda: run.generate(""), "no tokens"),
            (lambda: masked.generate("ROMEO"), "not a causal language model"),
            (lambda: masked.loss_and_grads([[1, 2, 3]]), "needs targets"),
            (lambda: classifier.loss_and_grads([[1, 2, 3]]), "needs labels"),
            (lambda: classifier.loss_and_grads([[1, 2]], labels=[0, 1]), "labels"),
            (lambda: run.loss_and_grads([[1, 2]], targets=[[1, 2, 3]]), "targets"),
            (lambda: run.eval("nope", batches=1), "nope"),
            (lambda: run.decode([300]), "300"),
        ]
        for call, words in cases:
            with self.assertRaises(rota.Error) as caught:
                call()
            self.assertIn(words, str(caught.exception))
        self.assertTrue(issubclass(rota.Error, RuntimeError))

    def test_type_errors(self):
        run = rota.load(RUNS["causal_lm"])
        with self.assertRaises(TypeError):
            run.logits(np.array([1.0, 2.0]))
        with self.assertRaises(TypeError):
            run.decode("abc")


if __name__ == "__main__":
    unittest.main()
