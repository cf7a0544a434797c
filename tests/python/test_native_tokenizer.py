# rota.load_tokenizer and rota.Tokenizer: Rota, Hugging Face and SentencePiece files, lookups, errors.
import json
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rota  # noqa: E402
from native_support import REPO, TempDir, cli_train  # noqa: E402

GOLDEN = os.path.join(REPO, "tests", "golden", "tokenizers")
TEXT = "Hello world, the cat sat on the mat.\nA second line: 42 items!"


class Tokenizers(unittest.TestCase):
    def test_hugging_face_tokenizer_json(self):
        path = os.path.join(GOLDEN, "gpt2_bpe.json")
        with open(path) as f:
            spec = json.load(f)
        tokenizer = rota.load_tokenizer(path)
        self.assertEqual(tokenizer.kind, "huggingface")
        self.assertEqual(tokenizer.vocab_size, len(spec["model"]["vocab"]) + len(spec["added_tokens"]))
        ids = tokenizer.encode(TEXT)
        self.assertEqual(ids.dtype, np.int32)
        self.assertEqual(tokenizer.decode(ids), TEXT)
        for token, id_ in list(spec["model"]["vocab"].items())[250:300]:
            self.assertEqual(tokenizer.id_to_token(id_), token)
            self.assertEqual(tokenizer.token_to_id(token), id_)
        self.assertIsNone(tokenizer.token_to_id("no such token at all"))
        # each id is its vocabulary entry: the pieces of "Hello" spell it (Ġ is GPT-2's space)
        pieces = [tokenizer.id_to_token(int(i)) for i in tokenizer.encode(" Hello")]
        self.assertEqual("".join(pieces), "ĠHello")

    def test_sentencepiece_model(self):
        tokenizer = rota.load_tokenizer(os.path.join(GOLDEN, "spm_t5_style.model"))
        self.assertEqual((tokenizer.kind, tokenizer.vocab_size), ("sentencepiece", 300))
        ids = tokenizer.encode("hello there")
        self.assertEqual(tokenizer.decode(ids).strip(), "hello there")
        for id_ in range(tokenizer.vocab_size):
            self.assertEqual(tokenizer.token_to_id(tokenizer.id_to_token(id_)), id_)

    def test_run_tokenizer_directory(self):
        tmp = TempDir()
        try:
            run_dir = cli_train("causal_lm", tmp.join("run"), "train.steps=1")
            run = rota.load(run_dir)
            alone = rota.load_tokenizer(os.path.join(run_dir, "tokenizer"))
            self.assertEqual(alone.kind, "byte")
            np.testing.assert_array_equal(alone.encode(TEXT), run.encode(TEXT))
            np.testing.assert_array_equal(run.tokenizer.encode(TEXT), run.encode(TEXT))
            run.tokenizer.save(tmp.join("saved"))
            np.testing.assert_array_equal(rota.load_tokenizer(tmp.join("saved")).encode(TEXT),
                                          run.encode(TEXT))
        finally:
            tmp.cleanup()

    def test_not_a_tokenizer(self):
        with self.assertRaises(rota.Error) as caught:
            rota.load_tokenizer(os.path.join(REPO, "README.md"))
        self.assertIn("not a tokenizer", str(caught.exception))
        tokenizer = rota.load_tokenizer(os.path.join(GOLDEN, "gpt2_bpe.json"))
        with self.assertRaises(rota.Error):
            tokenizer.decode([tokenizer.vocab_size])
        with self.assertRaises(rota.Error):
            tokenizer.id_to_token(-1)


if __name__ == "__main__":
    unittest.main()
