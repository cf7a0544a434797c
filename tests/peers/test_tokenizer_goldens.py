# Checks the committed tokenizer goldens against PyPI tokenizers (make_goldens.py --check).
"""Runs the comparison of tools/tokenizer_goldens/make_goldens.py --check (no retraining) with
the venv's `tokenizers`: every committed tokenizer.json of tests/golden/tokenizers/ re-encodes
and decodes the stress text and the sample lines of WikiText-2 valid, each normalizer and
pre-tokenizer alone re-runs on the stress lines, and the results must equal goldens.json and
components.json. Of the whole corpora, all but WikiText-2 train are re-encoded (valid, test,
Tiny Shakespeare, SST-2 dev; ~30 s on one core): train is 75% of the corpora's bytes and would
take ~2 minutes; `make_goldens.py --check` encodes it too, and data_golden checks Rota against
the same hashes. Needs ROTA_SHARED (the folder holding data/; default ../shared beside the
repository); ROTA_REPO names the repository (default: the one holding this file).
"""
import importlib.util
import os
import sys
import unittest
from pathlib import Path

REPO = Path(os.environ.get("ROTA_REPO") or Path(__file__).resolve().parents[2])
SCRIPT = REPO / "tools" / "tokenizer_goldens" / "make_goldens.py"


def load_script():
    """make_goldens.py as a module (tools/ is not a package)."""
    if not SCRIPT.is_file():
        raise FileNotFoundError(f"{SCRIPT} not found: set ROTA_REPO to the repository")
    spec = importlib.util.spec_from_file_location("make_goldens", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_goldens"] = module
    spec.loader.exec_module(module)
    return module


goldens = load_script()
CORPORA = tuple(corpus for corpus in goldens.CORPORA if corpus != "wikitext-2/train.txt")


class TokenizerGoldens(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.data = goldens.shared_data_dir(os.environ.get("ROTA_SHARED"))
        cls.texts = {corpus: goldens.read_text(cls.data / corpus) for corpus in CORPORA}
        cls.sample_lines = goldens.split_lines(cls.texts[goldens.SAMPLE_CORPUS])
        cls.stress_lines = goldens.committed_stress_lines()

    def assert_no_differences(self, differences):
        self.assertEqual([], differences, "\n" + "\n".join(differences))

    def test_inputs(self):
        """stress.txt is the script's stress text; each tokenizer file has its goldens entry."""
        self.assert_no_differences(goldens.check_inputs())

    def test_every_tokenizer(self):
        committed = goldens.read_goldens()
        self.assertGreaterEqual(len(committed), 14)
        for name, want in committed.items():
            with self.subTest(tokenizer=name):
                self.assert_no_differences(goldens.check_tokenizer(
                    name, want, self.texts, self.stress_lines, self.sample_lines))

    def test_components(self):
        self.assert_no_differences(goldens.check_components(self.stress_lines))

    def test_difference_report(self):
        """A changed golden is reported with its first differing index."""
        name = "gpt2_bpe"
        want = goldens.read_goldens()[name]
        want["stress"][0]["ids"][3] += 1
        differences = goldens.check_tokenizer(name, want, {}, self.stress_lines,
                                              self.sample_lines)
        self.assertEqual(1, len(differences), differences)
        self.assertIn("goldens.json gpt2_bpe stress[0] ids: first difference at index 3",
                      differences[0])


if __name__ == "__main__":
    unittest.main()
