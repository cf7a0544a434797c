# The commands of docs/pretrained.md and the README's import line, run on tiny models saved by transformers.
"""docs/pretrained.md shows `rota import hf` on `~/models/gpt2` and `~/models/qwen2-0.5b`, then
`rota eval` and `rota generate` of the imported run, and a fine-tuning recipe with
`finetune { init_from: "runs/gpt2" }`; the README's usage shows the GPT-2 import. Nothing can
be downloaded here, so this test builds stand-ins with the PyPI transformers of the peers'
venv: a tiny random GPT2LMHeadModel and a tiny Qwen2ForCausalLM saved in shards (each with a
byte-level BPE tokenizer.json trained here), places them at ~/models/… of a scratch HOME, and
runs the commands exactly as the docs spell them (the documented `rota` being the build's
binary) in a scratch working directory:

  - the block between BEGIN/END IMPORT COMMANDS, in order: every command exits 0, the imports
    say what they wrote, `rota eval` prints its last line split=… ppl=…, `rota generate` prints
    the prompt and 40 greedy tokens (the same text twice);
  - the README's `build/rota import hf …` line;
  - the fine-tuning recipe of "Fine-tuning an imported model", cut down to 2 steps on SST-2: it
    loads the imported weights ("finetune: N tensors from …") and trains;
  - "Low-rank adapters (LoRA)": its recipe written to lora.txtpb, cut down (2 steps, windows of
    64 tokens: the stand-in GPT-2 has 128 positions), and the block between BEGIN/END LORA
    COMMANDS in order — the run trains only adapters and checkpoints only them, `rota eval` and
    `rota generate` read it, `rota export hf` merges every adapted layer; and the README's
    `build/rota train lora.txtpb …` line.
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import unittest

TMP = tempfile.TemporaryDirectory(prefix="rota-pretrained-docs-")
os.environ["HF_HOME"] = os.path.join(TMP.name, "hf_home")
os.environ["HF_HUB_OFFLINE"] = "1"
REPO = os.environ.get("ROTA_REPO") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
SHARED = os.environ.get("ROTA_SHARED") or os.path.join(REPO, os.pardir, "shared")
DATA = os.path.abspath(os.path.join(SHARED, "data"))
BINARY = os.environ.get("ROTA_BINARY") or os.path.join(REPO, "build", "rota")

import torch  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402

transformers.utils.logging.disable_progress_bar()
torch.set_num_threads(1)


def train_tokenizer(path):
    """A byte-level BPE tokenizer.json trained on Tiny Shakespeare; returns its size."""
    with open(os.path.join(DATA, "tinyshakespeare", "input.txt"), encoding="utf-8") as f:
        text = f.read()[:200_000]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|endoftext|>"], show_progress=False)
    tokenizer.train_from_iterator(text.splitlines(), trainer)
    tokenizer.save(path)
    return tokenizer.get_vocab_size()


def save_models(models_dir):
    """~/models/gpt2 (GPT2LMHeadModel) and ~/models/qwen2-0.5b (Qwen2ForCausalLM, sharded)."""
    torch.manual_seed(0)
    gpt2 = os.path.join(models_dir, "gpt2")
    os.makedirs(gpt2)
    vocab = train_tokenizer(os.path.join(gpt2, "tokenizer.json"))
    config = transformers.GPT2Config(vocab_size=vocab, n_positions=128, n_embd=32, n_layer=2,
                                     n_head=2, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                     bos_token_id=0, eos_token_id=0)
    transformers.GPT2LMHeadModel(config).save_pretrained(gpt2, safe_serialization=True)
    qwen = os.path.join(models_dir, "qwen2-0.5b")
    os.makedirs(qwen)
    shutil.copy(os.path.join(gpt2, "tokenizer.json"), qwen)
    config = transformers.Qwen2Config(vocab_size=vocab, hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, max_position_embeddings=1024,
                                      tie_word_embeddings=True)
    transformers.Qwen2ForCausalLM(config).save_pretrained(qwen, safe_serialization=True,
                                                          max_shard_size="20KB")
    assert os.path.exists(os.path.join(qwen, "model.safetensors.index.json"))


def doc_text(path):
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        return f.read()


def command_lines(block):
    """The commands of a shell block, comments removed."""
    out = []
    for line in block.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or line.startswith("```"):
            continue
        out.append(re.sub(r"\s+#.*$", "", line))
    return out


class PretrainedDocs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.home = os.path.join(TMP.name, "home")
        save_models(os.path.join(cls.home, "models"))
        cls.env = dict(os.environ, HOME=cls.home, ROTA_DATA=DATA,
                       PATH=os.path.dirname(os.path.abspath(BINARY)) + os.pathsep
                       + os.environ.get("PATH", ""))

    def run_shell(self, command, cwd):
        # The docs' `rota` and `build/rota` are the build's binary; ~ is the scratch HOME.
        argv = shlex.split(command)
        if argv[0] in ("rota", "build/rota"):
            argv[0] = BINARY
        argv = [os.path.join(self.home, a[2:]) if a.startswith("~/") else a for a in argv]
        done = subprocess.run(argv, cwd=cwd, env=self.env, capture_output=True, text=True,
                              timeout=600)
        self.assertEqual(done.returncode, 0,
                         f"{command} failed ({done.returncode}):\n{done.stderr[-3000:]}")
        return done.stdout + done.stderr

    def test_import_commands_block(self):
        text = doc_text("docs/pretrained.md")
        block = text.split("<!-- BEGIN IMPORT COMMANDS -->", 1)[1].split(
            "<!-- END IMPORT COMMANDS -->", 1)[0]
        commands = command_lines(block)
        self.assertEqual(len(commands), 4)
        cwd = os.path.join(TMP.name, "import_block")
        os.makedirs(os.path.join(cwd, "my_texts"))
        with open(os.path.join(DATA, "tinyshakespeare", "input.txt"), encoding="utf-8") as f:
            sample = f.read()[-20_000:]
        with open(os.path.join(cwd, "my_texts", "test.txt"), "w", encoding="utf-8") as f:
            f.write(sample)
        outputs = [self.run_shell(c, cwd) for c in commands]
        self.assertIn("imported GPT2LMHeadModel", outputs[0])
        self.assertIn("imported Qwen2ForCausalLM", outputs[1])
        self.assertTrue(os.path.isdir(os.path.join(cwd, "runs", "qwen2", "checkpoints")))
        with open(os.path.join(cwd, "runs", "qwen2", "recipe.txtpb"), encoding="utf-8") as f:
            self.assertIn("sequence_length: 512", f.read())
        last = [line for line in outputs[2].splitlines() if line.startswith("split=")]
        self.assertTrue(last and re.search(r"ppl=[0-9.e+]+", last[-1]), outputs[2][-2000:])
        self.assertIn("The meaning of life", outputs[3])
        # Greedy decoding is deterministic: the same command prints the same text.
        self.assertEqual(self.run_shell(commands[3], cwd).split("\n")[-2],
                         outputs[3].split("\n")[-2])

    def test_readme_import_line(self):
        lines = [line for line in doc_text("README.md").splitlines()
                 if line.startswith("build/rota import hf ")]
        self.assertEqual(len(lines), 1)
        cwd = os.path.join(TMP.name, "readme")
        os.makedirs(cwd)
        self.assertIn("imported GPT2LMHeadModel", self.run_shell(command_lines(lines[0])[0], cwd))
        self.assertTrue(os.path.isdir(os.path.join(cwd, "runs", "gpt2", "checkpoints",
                                                   "step_000000")))

    def test_fine_tuning_recipe(self):
        section = doc_text("docs/pretrained.md").split("## Fine-tuning an imported model", 1)[1]
        recipe = section.split("```protobuf", 1)[1].split("```", 1)[0]
        self.assertIn('init_from: "runs/gpt2"', recipe)
        cwd = os.path.join(TMP.name, "finetune")
        os.makedirs(cwd)
        self.run_shell("rota import hf ~/models/gpt2 --out runs/gpt2", cwd)
        with open(os.path.join(cwd, "sst2.txtpb"), "w", encoding="utf-8") as f:
            f.write(recipe)
        out = self.run_shell("rota train sst2.txtpb --set train.steps=2 --set "
                             "schedule.warmup_steps=1 --set train.eval_every=2 --set "
                             "train.eval_batches=1", cwd)
        self.assertRegex(out, r"finetune: \d+ tensors from .*runs/gpt2")
        self.assertIn("freshly initialised: classifier.weight, classifier.bias", out)

    def lora_recipe(self, cwd):
        """The LoRA section's recipe, cut down, as cwd/lora.txtpb, and a GPT-2 in cwd/runs/gpt2."""
        section = doc_text("docs/pretrained.md").split("## Low-rank adapters (LoRA)", 1)[1]
        recipe = section.split("```protobuf", 1)[1].split("```", 1)[0]
        self.assertIn('init_from: "runs/gpt2"', recipe)
        cut = (recipe.replace("train { steps: 1000 }",
                              "train { steps: 2 eval_every: 2 eval_batches: 1 }")
               .replace("warmup_steps: 50", "warmup_steps: 1")
               .replace("sequence_length: 256", "sequence_length: 64"))
        self.assertEqual(cut.count("steps: 2 "), 1)
        self.assertIn("sequence_length: 64", cut)
        os.makedirs(cwd)
        with open(os.path.join(cwd, "lora.txtpb"), "w", encoding="utf-8") as f:
            f.write(cut)
        self.run_shell("rota import hf ~/models/gpt2 --out runs/gpt2", cwd)

    def test_lora_section(self):
        cwd = os.path.join(TMP.name, "lora")
        self.lora_recipe(cwd)
        block = doc_text("docs/pretrained.md").split("<!-- BEGIN LORA COMMANDS -->", 1)[1].split(
            "<!-- END LORA COMMANDS -->", 1)[0]
        lora_commands = command_lines(block)
        self.assertEqual(len(lora_commands), 4)
        outputs = [self.run_shell(c, cwd) for c in lora_commands]
        self.assertRegex(outputs[0], r"finetune\.lora: rank 8, alpha 16")
        self.assertRegex(outputs[0], r"parameters \(\d+ trainable\)")
        checkpoint = os.path.join(cwd, "runs", "gpt2-lora", "checkpoints", "step_000002")
        stored = read_safetensors_names(os.path.join(checkpoint, "model.safetensors"))
        # Six adapted layers in each of the stand-in's two blocks, A and B each.
        self.assertEqual(len(stored), 24, stored)
        self.assertTrue(all(n.endswith((".lora_a", ".lora_b")) for n in stored), stored)
        last = [line for line in outputs[1].splitlines() if line.startswith("split=valid")]
        self.assertTrue(last and re.search(r"ppl=[0-9.e+]+", last[-1]), outputs[1][-2000:])
        self.assertIn("ROMEO:", outputs[2])
        self.assertIn("merged into the weights of 12 layers", outputs[3])
        exported = read_safetensors_names(
            os.path.join(cwd, "runs", "gpt2-lora-hf", "model.safetensors"))
        self.assertFalse([n for n in exported if "lora" in n])

    def test_readme_lora_line(self):
        lines = [line for line in doc_text("README.md").splitlines()
                 if line.startswith("build/rota train lora.txtpb ")]
        self.assertEqual(len(lines), 1)
        cwd = os.path.join(TMP.name, "readme_lora")
        self.lora_recipe(cwd)
        out = self.run_shell(command_lines(lines[0])[0], cwd)
        self.assertIn("finetune.lora: rank 8", out)
        self.assertTrue(os.path.isdir(os.path.join(cwd, "runs", "gpt2-lora", "checkpoints",
                                                   "step_000002")))


def read_safetensors_names(path):
    """The tensor names of a safetensors file (its JSON header)."""
    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
    return sorted(k for k in header if k != "__metadata__")


if __name__ == "__main__":
    unittest.main()
