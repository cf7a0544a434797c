# `rota export hf` output loaded by PyPI transformers, tokenizers and safetensors gives Rota's numbers.
"""Five tiny runs are trained with the `rota` binary (3 steps each) and exported with
`rota export hf RUN OUT`:

  lm         causal LM, linear attention with LRPE (Type 2, Householder P), byte tokenizer
             (recipes/tests/tiny_causal_lm.txtpb as it is, but for the step counts);
  lm_bpe     the same model on a Hugging Face tokenizer (tests/golden/tokenizers/gpt2_bpe.json,
             byte-level BPE with an added special token);
  hybrid     a 3-block causal stack: LRPE with the odd-even P (a buffer that is not stored) in
             blocks 0 and 2, a softmax RoPE block (a frozen θ) as block 1;
  mlm        masked LM, LRPE Type 3 with a frozen Householder P (an integer permutation buffer);
  cls        classifier over JSON Lines with string labels in a recipe-given order (one of them
             not ASCII).

Each export is loaded with AutoModelFor{CausalLM,MaskedLM,SequenceClassification}
.from_pretrained(OUT, trust_remote_code=True) and AutoTokenizer.from_pretrained(OUT,
trust_remote_code=True) (transformers 5 reads config.json through AutoConfig, whose class is in
modeling_rota.py, before the tokenizer: without the argument it asks on stdin; the byte LM also
checks trust_remote_code=False), and checked against the run as the native module (Rota's C++)
reads it:

  weights      nothing missing, unexpected or reshaped; every tensor bit-identical to
               run.state_dict(); the parameters that train are exactly the ones Rota returns
               gradients for (frozen ones stay frozen);
  logits       float32, max |HF − Rota| ≤ 1e-5 · max |Rota logit| (padded query rows of a
               masked LM excluded, as in the parity tests);
  loss         the wrapper's loss with `labels` against a float64 NumPy cross-entropy of the
               wrapper's own logits (causal: HF's convention, labels = inputs shifted inside),
               relative 1e-6; and against Rota's loss of the same batch (loss_and_grads with the
               targets Rota's convention gives), relative 1e-5;
  labels       id2label / label2id against the run's labels and its labels.json;
  tokenizer    input_ids equal run.encode(text) on ASCII, non-ASCII, multi-line (CRLF, blank
               lines, tabs) texts and special-token spellings, with and without special tokens
               (neither Rota's encode nor the exported tokenizer adds any); decode round trips;
               a classifier's evaluation inputs are <cls> + the tokenizer's ids;
  generate     greedy model.generate() (a batch of two prompts; the wrapper keeps no cache and
               reruns the whole sequence per token) gives the ids of
               run.generate_ids(..., temperature=0), and the logits generate() scored each step
               with are Rota's logits of the generated sequence (bound as above); causal
               wrappers accept right padding (logits unchanged) and refuse left padding;
  back to Rota rota.torch.save_checkpoint(model.rota, ...) of changed weights gives, in Rota,
               the logits transformers gives;
  safetensors  safe_open(framework="numpy" and "pt") reads the checkpoint's model.safetensors and
               optimizer.safetensors and the export's model.safetensors: names, shapes, dtypes
               and values equal to run.state_dict() (model files), to an independent parse of
               the file (all files) and between the two frameworks; the metadata's CRC-32C is
               that of the data.

The worst differences measured are printed at the end (docs/python.md quotes them).
"""
import json
import os
import struct
import subprocess
import tempfile
import time
import unittest

STARTED = time.monotonic()
TMP = tempfile.TemporaryDirectory(prefix="rota-hf-roundtrip-")
# transformers copies trust_remote_code modules into HF_HOME: keep them in the test's directory,
# and never reach for the network.
os.environ["HF_HOME"] = os.path.join(TMP.name, "hf_home")
os.environ["HF_HUB_OFFLINE"] = "1"
REPO = os.environ.get("ROTA_REPO") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
SHARED = os.environ.get("ROTA_SHARED") or os.path.join(REPO, os.pardir, "shared")
os.environ.setdefault("ROTA_DATA", os.path.abspath(os.path.join(SHARED, "data")))  # corpora

import numpy as np  # noqa: E402
import safetensors  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import (AutoModelForCausalLM, AutoModelForMaskedLM,  # noqa: E402
                          AutoModelForSequenceClassification, AutoTokenizer)

import rota  # noqa: E402
import rota.torch as rt  # noqa: E402

transformers.utils.logging.disable_progress_bar()
torch.set_num_threads(1)

BINARY = os.environ.get("ROTA_BINARY") or os.path.join(REPO, "build", "rota")
IGNORE = -100
LOGITS_BOUND = 1e-5      # · max |logit|
OWN_LOSS_BOUND = 1e-6    # relative: the wrapper's loss vs NumPy on the wrapper's logits
ROTA_LOSS_BOUND = 1e-5   # relative: the wrapper's loss vs Rota's loss of the same batch
STEPS = ["train.steps=3", "train.eval_every=0", "train.checkpoint_every=3", "train.log_every=1"]
LABELS = ["positive", "négatif", "mixed"]  # the recipe's order (not sorted): ids 0, 1, 2
TEXTS = [
    "ROMEO: thou art",
    "Ünïcödé: café, naïve, 日本語, Ελληνικά, emoji 👍🏽 and ‘quotes’",
    "First line\n\n  indented second line\r\nthird\tline\n",
    "a\n b\n\n\nc  \n",
    "  leading spaces and trailing   ",
    "specials spelled out: <pad> <unk> <cls> <mask> <eos> <|endoftext|>",
]
WORST = {}  # quantity -> (worst value, which run)


def note(quantity, value, where):
    if value >= WORST.get(quantity, (-1.0, ""))[0]:
        WORST[quantity] = (value, where)


def rota_cli(*args):
    done = subprocess.run([BINARY, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(f"rota {' '.join(args)} failed ({done.returncode}):\n"
                             f"{done.stderr[-3000:]}")
    return done.stdout


def write_classifier_data(directory):
    """JSON Lines with string labels; returns the recipe and the validation rows in order."""
    words = ["good", "bad", "fine", "awful", "great", "dull", "so-so", "lovely", "grim", "odd"]
    splits = {}
    for split, count, offset in (("train", 30, 0), ("valid", 8, 3)):
        rows = []
        for i in range(count):
            text = " ".join(words[(i * 7 + j + offset) % len(words)] for j in range(2 + i % 4))
            rows.append({"text": text + (" — très" if i % 3 == 0 else ""),
                         "label": LABELS[(i + offset) % 3]})
        path = os.path.join(directory, f"cls_{split}.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        splits[split] = (path, rows)
    recipe = os.path.join(directory, "cls.txtpb")
    with open(recipe, "w", encoding="utf-8") as f:
        f.write(f"""version: 1
name: "hf-cls"
model {{
  kind: CLASSIFIER width: 32 layers: 2 heads: 2 ffn_width: 64 dropout: 0.0
  attention {{ linear {{}} }}
  position {{ lrpe {{ type: 2 p: HOUSEHOLDER }} }}
  classifier {{ num_classes: 3 pooling: MEAN }}
}}
data {{
  files {{
    train: "{splits['train'][0]}" valid: "{splits['valid'][0]}"
    text_field: "text" label_field: "label"
    labels: [{', '.join(json.dumps(label, ensure_ascii=False) for label in LABELS)}]
  }}
  tokenizer {{ kind: BYTE }}
  sequence_length: 48
  batch_size: 4
}}
schedule {{ kind: CONSTANT lr: 3e-3 }}
train {{ steps: 3 eval_every: 0 checkpoint_every: 3 log_every: 1 seed: 1 tensorboard: false }}
""")
    return recipe, splits["valid"][1]


def tiny(name):
    return os.path.join(REPO, "recipes", "tests", name)


# name -> (recipe, overrides, Auto class)
CASES = {
    "lm": (tiny("tiny_causal_lm.txtpb"), [], AutoModelForCausalLM),
    "lm_bpe": (tiny("tiny_causal_lm.txtpb"), [
        "data.tokenizer={path: \"%s\"}" % os.path.join(REPO, "tests", "golden", "tokenizers",
                                                       "gpt2_bpe.json")], AutoModelForCausalLM),
    "hybrid": (tiny("tiny_causal_lm.txtpb"), [
        "model.layers=3", "model.position={lrpe {type: 2 p: ODD_EVEN}}",
        "model.hybrid={blocks: 1 attention {softmax {}} position {rope {}}}"],
        AutoModelForCausalLM),
    "mlm": (tiny("tiny_masked_lm.txtpb"), [
        "model.position={lrpe {type: 3 p: HOUSEHOLDER_FROZEN}}"], AutoModelForMaskedLM),
    "cls": (None, [], AutoModelForSequenceClassification),
}
RUNS = {}     # name -> run directory
EXPORTS = {}  # name -> export directory
CLS_VALID_ROWS = []


def setUpModule():
    recipe, rows = write_classifier_data(TMP.name)
    CLS_VALID_ROWS.extend(rows)
    for name, (base, overrides, _) in CASES.items():
        run_dir = os.path.join(TMP.name, name)
        args = ["train", base or recipe, "--out", run_dir]
        for override in (STEPS if base else []) + overrides:
            args += ["--set", override]
        rota_cli(*args)
        out = os.path.join(TMP.name, name + "_hf")
        printed = rota_cli("export", "hf", run_dir, out)
        if "tokenizer.json: written" not in printed:
            raise AssertionError(f"rota export hf {name} wrote no tokenizer.json:\n{printed}")
        RUNS[name], EXPORTS[name] = run_dir, out


def tearDownModule():
    print(f"\nworst measured ({time.monotonic() - STARTED:.1f} s from the imports on):")
    for quantity, (value, where) in sorted(WORST.items()):
        print(f"  {quantity:42s} {value:.2e}  ({where})")
    TMP.cleanup()


def relative_difference(actual, expected):
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    return float(np.abs(actual - expected).max()) / max(float(np.abs(expected).max()), 1e-30)


def numpy_cross_entropy(logits, targets):
    """Mean −log softmax(logits)[target] over targets ≠ −100, in float64."""
    logits = np.asarray(logits, np.float64).reshape(-1, logits.shape[-1])
    targets = np.asarray(targets).reshape(-1)
    keep = targets != IGNORE
    logits, targets = logits[keep], targets[keep]
    top = logits.max(axis=1, keepdims=True)
    log_z = top[:, 0] + np.log(np.exp(logits - top).sum(axis=1))
    return float(np.mean(log_z - logits[np.arange(len(targets)), targets]))


class ExportCase:
    """The checks every export gets; subclasses name the run."""
    name = None

    @classmethod
    def setUpClass(cls):
        cls.rota_run = rota.load(RUNS[cls.name])
        cls.out = EXPORTS[cls.name]
        auto = CASES[cls.name][2]
        cls.model, cls.loading_info = auto.from_pretrained(cls.out, trust_remote_code=True,
                                                           output_loading_info=True)
        cls.tokenizer = AutoTokenizer.from_pretrained(cls.out, trust_remote_code=True)

    def forward(self, ids, mask=None, labels=None):
        with torch.no_grad():
            return self.model(input_ids=torch.from_numpy(np.asarray(ids, np.int64)),
                              attention_mask=None if mask is None else
                              torch.from_numpy(np.asarray(mask, np.int64)),
                              labels=None if labels is None else
                              torch.from_numpy(np.asarray(labels, np.int64)))

    def test_weights_load_unchanged(self):
        info = {k: v for k, v in self.loading_info.items() if v}
        self.assertEqual(info, {}, f"{self.name}: transformers reports problems loading {self.out}")
        with open(os.path.join(self.out, "config.json"), encoding="utf-8") as f:
            self.assertEqual(type(self.model).__name__, json.load(f)["architectures"][0])
        self.assertFalse(self.model.training, "from_pretrained should give an eval-mode model")
        expected = self.rota_run.state_dict()
        ours = {k.removeprefix("rota."): v for k, v in self.model.state_dict().items()}
        self.assertEqual(sorted(ours), sorted(expected))
        for name, value in expected.items():
            mine = ours[name].numpy()
            self.assertEqual((mine.dtype, mine.shape), (value.dtype, value.shape), name)
            self.assertTrue(np.array_equal(mine, value), f"{self.name}: {name} differs")
        self.assertEqual(self.model.config.vocab_size, self.rota_run.vocab_size)
        self.assertEqual(self.model.config.model_type, "rota")

    def sample_ids(self, n=29):
        ids = np.random.default_rng(7).integers(0, self.rota_run.vocab_size, size=(2, n))
        if self.rota_run.kind == "causal_lm":
            return ids, None
        mask = np.ones_like(ids)
        mask[1, n - 8:] = 0  # the second row is padded
        return ids, mask

    def test_logits(self):
        ids, mask = self.sample_ids()
        expected = self.rota_run.logits(ids) if mask is None else self.rota_run.logits(ids, mask)
        ours = self.forward(ids, mask).logits.numpy()
        self.assertEqual(ours.dtype, np.float32)
        self.assertEqual(ours.shape, expected.shape)
        if self.rota_run.kind == "masked_lm":  # padded query rows are not defined
            ours, expected = ours[mask.astype(bool)], expected[mask.astype(bool)]
        error = relative_difference(ours, expected)
        note("logits / max |logit|", error, self.name)
        self.assertLessEqual(error, LOGITS_BOUND, f"{self.name}: logits differ from Rota's by "
                             f"{error:.2e} of the largest logit")

    def check_loss(self, output, numpy_loss, rota_loss):
        loss = float(output.loss)
        own = abs(loss - numpy_loss) / abs(numpy_loss)
        against_rota = abs(loss - rota_loss) / abs(rota_loss)
        note("loss vs NumPy on the same logits", own, self.name)
        note("loss vs Rota's loss", against_rota, self.name)
        self.assertLessEqual(own, OWN_LOSS_BOUND, f"{self.name}: the wrapper's loss {loss} is not "
                             f"the cross-entropy of its logits, {numpy_loss}")
        self.assertLessEqual(against_rota, ROTA_LOSS_BOUND,
                             f"{self.name}: the wrapper's loss {loss}, Rota's {rota_loss}")

    def check_trainable(self, grads):
        trainable = {n.removeprefix("rota.") for n, p in self.model.named_parameters()
                     if p.requires_grad}
        self.assertEqual(trainable, set(grads), f"{self.name}: the parameters that train under "
                         "transformers are not the ones Rota trains")

    def test_tokenizer(self):
        tok = self.tokenizer
        self.assertEqual(len(tok), self.rota_run.vocab_size)
        for text in TEXTS:
            expected = self.rota_run.encode(text).tolist()
            with self.subTest(text=text):
                self.assertEqual(tok(text)["input_ids"], expected)
                self.assertEqual(tok(text, add_special_tokens=False)["input_ids"], expected)
                self.assertEqual(tok.decode(expected), text)
                self.assertEqual(self.rota_run.decode(expected), text)
        # Special tokens are vocabulary entries with Rota's ids.
        for token in ("<pad>", "<unk>", "<bos>", "<eos>", "<mask>", "<cls>", "<sep>"):
            rota_id = self.rota_run.tokenizer.token_to_id(token)
            if rota_id is not None:
                self.assertEqual(tok.convert_tokens_to_ids(token), rota_id, token)
                self.assertEqual(tok.convert_ids_to_tokens(rota_id), token)


class CausalCase(ExportCase):
    def test_loss_with_hf_labels(self):
        ids, _ = self.sample_ids()
        labels = ids.copy()
        labels[1, :6] = IGNORE  # e.g. a prompt without a loss
        output = self.forward(ids, labels=labels)
        numpy_loss = numpy_cross_entropy(output.logits.numpy()[:, :-1], labels[:, 1:])
        targets = np.full_like(ids, IGNORE)  # Rota's convention: targets are given shifted
        targets[:, :-1] = labels[:, 1:]
        rota_loss, grads = self.rota_run.loss_and_grads(ids, targets=targets)
        self.check_loss(output, numpy_loss, rota_loss)
        self.check_trainable(grads)

    def test_right_padding_is_accepted_and_left_padding_refused(self):
        ids, _ = self.sample_ids()
        mask = np.ones_like(ids)
        mask[1, -5:] = 0
        padded = self.forward(ids, mask).logits.numpy()
        self.assertTrue(np.array_equal(padded, self.forward(ids).logits.numpy()))
        mask = np.ones_like(ids)
        mask[1, :5] = 0
        with self.assertRaisesRegex(ValueError, "left padding"):
            self.forward(ids, mask)

    def test_greedy_generate(self):
        prompts = [self.rota_run.encode("ROMEO: "), self.rota_run.encode("JULIET: O Romeo, Romeo")]
        n = min(len(p) for p in prompts)
        prompts = np.stack([p[:n] for p in prompts]).astype(np.int64)
        new = 12
        with torch.no_grad():
            out = self.model.generate(torch.from_numpy(prompts), max_new_tokens=new,
                                      do_sample=False, output_logits=True,
                                      return_dict_in_generate=True)
        sequences = out.sequences.numpy()
        self.assertEqual(sequences.shape, (2, n + new))
        self.assertTrue(np.array_equal(sequences[:, :n], prompts))
        expected = self.rota_run.generate_ids(list(prompts), max_tokens=new, temperature=0)
        for row in range(2):
            self.assertEqual(sequences[row, n:].tolist(), np.asarray(expected[row]).tolist(),
                             f"{self.name}: greedy ids of prompt {row} differ from Rota's")
        # The logits generate() picked each token from are Rota's for the generated text.
        scored = torch.stack(out.logits, dim=1).numpy()  # [2, new, V]
        rota_logits = self.rota_run.logits(sequences)[:, n - 1:n - 1 + new]
        error = relative_difference(scored, rota_logits)
        note("generate() step logits / max |logit|", error, self.name)
        self.assertLessEqual(error, LOGITS_BOUND)


class CausalByteLm(CausalCase, unittest.TestCase):
    name = "lm"

    def test_tokenizer_loads_without_running_remote_code(self):
        """transformers 5 reads config.json through AutoConfig first; refusing the remote code
        still gives the same tokenizer (from tokenizer.json alone)."""
        verbosity = transformers.utils.logging.get_verbosity()
        transformers.utils.logging.set_verbosity_error()  # (it warns of the plain config)
        try:
            plain = AutoTokenizer.from_pretrained(self.out, trust_remote_code=False)
        finally:
            transformers.utils.logging.set_verbosity(verbosity)
        self.assertEqual(type(plain), type(self.tokenizer))
        for text in TEXTS:
            self.assertEqual(plain(text)["input_ids"], self.rota_run.encode(text).tolist())

    def test_back_to_rota_with_save_checkpoint(self):
        """The wrapper's network (`model.rota`, trained on in transformers, say) goes back to
        Rota with rota.torch.save_checkpoint; Rota then computes the logits transformers does."""
        weight = self.model.rota.encoder.embed.weight
        original = weight.detach().clone()
        with torch.no_grad():  # weights Rota never saw
            weight.mul_(1.5)
        try:
            out = os.path.join(TMP.name, "lm_back_to_rota")
            rt.save_checkpoint(self.model.rota, out, source=RUNS[self.name])
            ids, _ = self.sample_ids()
            back = rota.load(out)
            error = relative_difference(back.logits(ids), self.forward(ids).logits.numpy())
            note("logits / max |logit|", error, self.name + " (saved back to Rota)")
            self.assertLessEqual(error, LOGITS_BOUND)
            self.assertGreater(relative_difference(back.logits(ids), self.rota_run.logits(ids)),
                               1e-2, "the saved checkpoint should hold the changed weights")
        finally:
            with torch.no_grad():
                weight.copy_(original)


class CausalBpeLm(CausalCase, unittest.TestCase):
    name = "lm_bpe"


class CausalHybridLm(CausalCase, unittest.TestCase):
    name = "hybrid"


class MaskedLm(ExportCase, unittest.TestCase):
    name = "mlm"

    def test_loss_on_rotas_masked_batch(self):
        batch = self.rota_run.eval_batches("valid", batches=1)[0]
        ids, targets, mask = batch["ids"], batch["targets"], batch["key_mask"]
        self.assertGreater(int((targets != IGNORE).sum()), 0)
        output = self.forward(ids, mask, labels=targets)
        expected = self.rota_run.logits(ids, mask)
        keep = np.asarray(mask).astype(bool)
        error = relative_difference(output.logits.numpy()[keep], expected[keep])
        note("logits / max |logit|", error, self.name + " (eval batch)")
        self.assertLessEqual(error, LOGITS_BOUND)
        rota_loss, grads = self.rota_run.loss_and_grads(ids, targets=targets, key_mask=mask)
        self.check_loss(output, numpy_cross_entropy(output.logits.numpy(), targets), rota_loss)
        self.check_trainable(grads)
        self.assertIn("encoder.blocks.0.attn.lrpe.householder_v",
                      {n.removeprefix("rota.") for n, p in self.model.named_parameters()
                       if not p.requires_grad})


class StringLabelClassifier(ExportCase, unittest.TestCase):
    name = "cls"

    def test_labels(self):
        self.assertEqual(self.rota_run.labels, LABELS)
        with open(os.path.join(RUNS[self.name], "labels.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["labels"], LABELS)
        config = self.model.config
        self.assertEqual(config.num_labels, len(LABELS))
        self.assertEqual(config.id2label, dict(enumerate(LABELS)))
        self.assertEqual(config.label2id, {label: i for i, label in enumerate(LABELS)})

    def test_inputs_loss_and_predictions_on_rotas_batch(self):
        batch = self.rota_run.eval_batches("valid", batches=1)[0]
        ids, mask, labels = batch["ids"], batch["key_mask"], batch["labels"]
        # Rota's classifier inputs are <cls> + the text's ids: the exported tokenizer gives them
        # once <cls> is put in front (it adds no special tokens itself).
        cls_id = self.tokenizer.convert_tokens_to_ids("<cls>")
        self.assertEqual(len(ids), 4)
        for row, example in enumerate(CLS_VALID_ROWS[:len(ids)]):
            length = int(np.asarray(mask[row]).sum())
            self.assertEqual(np.asarray(ids[row][:length]).tolist(),
                             [cls_id] + self.tokenizer(example["text"])["input_ids"],
                             example["text"])
        self.assertEqual([self.model.config.id2label[int(i)] for i in labels],
                         [example["label"] for example in CLS_VALID_ROWS[:len(labels)]])
        output = self.forward(ids, mask, labels=labels)
        expected = self.rota_run.logits(ids, mask)
        error = relative_difference(output.logits.numpy(), expected)
        note("logits / max |logit|", error, self.name + " (eval batch)")
        self.assertLessEqual(error, LOGITS_BOUND)
        rota_loss, grads = self.rota_run.loss_and_grads(ids, labels=labels, key_mask=mask)
        self.check_loss(output, numpy_cross_entropy(output.logits.numpy(), labels), rota_loss)
        self.check_trainable(grads)


def crc32c_table():
    table = []
    for index in range(256):
        crc = index
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
        table.append(crc)
    return table


CRC32C_TABLE = crc32c_table()


def crc32c(data):
    """CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), byte by byte."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = CRC32C_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def parse_safetensors(path):
    """(tensors, metadata, data bytes) of a safetensors file, read with struct, json and numpy."""
    dtypes = {"F32": "<f4", "F64": "<f8", "I32": "<i4", "I64": "<i8"}  # (no BF16 run here)
    with open(path, "rb") as f:
        raw = f.read()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + length])
    data = raw[8 + length:]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        if entry["dtype"] not in dtypes:
            raise AssertionError(f"{path}: {name} has dtype {entry['dtype']}, not one of "
                                 f"{sorted(dtypes)} this parser reads")
        tensors[name] = np.frombuffer(data[begin:end], dtype=dtypes[entry["dtype"]]).reshape(
            entry["shape"])
    return tensors, header.get("__metadata__", {}), data


class SafetensorsFiles(unittest.TestCase):
    def check_file(self, path, expected=None):
        """Reads path with safetensors' numpy and torch frameworks; compares with the file
        parsed by hand and, for model files, with the run's state_dict."""
        parsed, metadata, data = parse_safetensors(path)
        self.assertGreater(len(parsed), 0, path)
        with safetensors.safe_open(path, framework="numpy") as f:
            self.assertEqual(f.metadata(), metadata, path)
            as_numpy = {name: f.get_tensor(name) for name in f.keys()}
        with safetensors.safe_open(path, framework="pt") as f:
            self.assertEqual(f.metadata(), metadata, path)
            as_torch = {name: f.get_tensor(name) for name in f.keys()}
        self.assertEqual((metadata.get("format"), metadata.get("format_version")), ("rota", "1"),
                         path)
        self.assertEqual(metadata.get("data_crc32c"), "%08x" % crc32c(data), path)
        self.assertEqual(sorted(as_numpy), sorted(parsed), path)
        self.assertEqual(sorted(as_torch), sorted(parsed), path)
        if expected is not None:
            self.assertEqual(sorted(as_numpy), sorted(expected), path)
        for name, value in parsed.items():
            ours, theirs = as_numpy[name], as_torch[name].numpy()
            self.assertEqual((ours.dtype, ours.shape), (value.dtype, value.shape), name)
            self.assertEqual((theirs.dtype, theirs.shape), (value.dtype, value.shape), name)
            self.assertTrue(np.array_equal(ours, value), f"{path}: {name} (numpy)")
            self.assertTrue(np.array_equal(theirs, value), f"{path}: {name} (pt)")
            if expected is not None:
                want = expected[name]
                self.assertEqual((value.dtype, value.shape), (want.dtype, want.shape), name)
                self.assertTrue(np.array_equal(value, want), f"{path}: {name} vs state_dict()")
        return parsed

    def test_every_file_rota_writes(self):
        for name in CASES:
            with self.subTest(name):
                run = rota.load(RUNS[name])
                state = run.state_dict()
                model_file = os.path.join(run.checkpoint, "model.safetensors")
                self.check_file(model_file, state)
                exported = os.path.join(EXPORTS[name], "model.safetensors")
                self.check_file(exported, state)
                with open(model_file, "rb") as f, open(exported, "rb") as g:
                    self.assertEqual(f.read(), g.read(), "the export's model.safetensors is the "
                                     "checkpoint's, byte for byte")
                optimizer = self.check_file(os.path.join(run.checkpoint, "optimizer.safetensors"))
                # AdamW's step count, and its moments and step count for every trainable
                # parameter (docs/checkpoints.md).
                _, grads = trainable_of(run)
                expected_names = sorted(["step"] + [f"{p}.{s}" for p in grads
                                                    for s in ("exp_avg", "exp_avg_sq", "step")])
                self.assertEqual(sorted(optimizer), expected_names)
                self.assertEqual(int(optimizer["step"]), run.step)
                for p in grads:
                    self.assertEqual(optimizer[p + ".exp_avg"].shape, state[p].shape, p)
                    self.assertEqual(optimizer[p + ".exp_avg_sq"].shape, state[p].shape, p)
                    self.assertTrue((optimizer[p + ".exp_avg_sq"] >= 0).all(), p)
                    self.assertEqual(int(optimizer[p + ".step"]), run.step, p)


def trainable_of(run):
    """Rota's loss and gradients (one per trainable parameter) on one validation batch."""
    batch = run.eval_batches("valid", batches=1)[0]
    if run.kind == "causal_lm":
        return run.loss_and_grads(batch["ids"], targets=batch["targets"])
    if run.kind == "masked_lm":
        return run.loss_and_grads(batch["ids"], targets=batch["targets"],
                                  key_mask=batch["key_mask"])
    return run.loss_and_grads(batch["ids"], labels=batch["labels"], key_mask=batch["key_mask"])


if __name__ == "__main__":
    unittest.main()
