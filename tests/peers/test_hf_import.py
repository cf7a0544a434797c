# `rota import hf` of checkpoints saved by PyPI transformers gives transformers' numbers.
"""Tiny random models are built with transformers itself, saved with
`save_pretrained(DIR, safe_serialization=True)` next to a byte-level BPE tokenizer.json trained
here with `tokenizers` (on Tiny Shakespeare), and imported with `rota import hf DIR --out RUN`:

  gpt2          GPT2LMHeadModel: learned positions (n_positions 128), LayerNorm, gelu_new,
                biases, tied head; Conv1D weights stored [in, out], q/k/v fused in c_attn;
  llama_gqa     LlamaForCausalLM: 4 heads on 2 key/value heads, rope_theta 500000 with the
                llama3 rescaling (factor 8, low 1, high 4, original context 64: θ_0 kept, θ_1
                interpolated, the rest divided), untied head, silu (SwiGLU);
  qwen2         Qwen2ForCausalLM: biases on q/k/v only, tied head, GQA, saved in shards (a
                model.safetensors.index.json and nine files);
  mistral       MistralForCausalLM: sliding window 8 (shorter than every sequence below), GQA;
  llama_linear  LlamaForCausalLM with rope_scaling {rope_type: linear, factor: 2}, tied head;
  llama_bf16    a GQA Llama saved in bfloat16 (config "dtype": "bfloat16", BF16 tensors), which
                Rota widens to float32; transformers runs it in float32 from the same bf16 values.

Every norm weight and bias is drawn at random (transformers starts them at 1 and 0), so a bias
or β put in the wrong place shows. Each run is checked against the source:

  weights      every Rota tensor is the source tensor it comes from, bit for bit (GPT-2's
               transposed and split; bf16 widened exactly); RoPE's θ is transformers'
               inv_freq (which it computes in float32) to 1e-6 relative, and rota.torch's θ of
               a freshly built model is the checkpoint's exactly;
  recipe       kv_heads, biases, window, RoPE pairing / base / scaling, tie, norm eps as the
               config says (read through rota.torch);
  logits       3 rows of 40 tokens of text, Rota (the native module) and rota.torch each against
               transformers in float32: max |HF − Rota| ≤ 1e-5 · max |HF logit|;
  generate     greedy: 20 new tokens for a batch of two prompts, Rota's generate_ids against
               transformers' generate(do_sample=False), identical ids;
  tokenizer    run.encode equals tokenizers' encoding of the source tokenizer.json (ASCII,
               accented, CJK, emoji, multi-line text); decoding gives the text back;
  eval         `rota eval RUN --data FILE --context 32`: its token count and loss equal a
               float64 NumPy cross-entropy of transformers' logits over the same windows (Rota's
               evaluation windows: inputs stream[32w, 32w + 32), the next tokens as targets, the
               last window shorter), relative 1e-5.

Also: the Llama GQA run exported again with `rota export hf` loads in transformers
(trust_remote_code) with nothing missing and gives the source's logits and greedy ids;
configs in transformers 4's spelling (top-level rope_theta and rope_scaling, torch_dtype;
Qwen2's sliding_window with use_sliding_window false) import to the same runs; refusals (an
architecture Rota does not import, rope_type dynamic, a missing tensor, a tensor of the wrong
shape) exit non-zero naming the problem and leave no checkpoint (nor anything that stops a
corrected import into the same --out); and a GPT-2 of the 124M
configuration (50257 tokens) imports with a peak resident memory of at most 1.5 times its
safetensors file.

The worst differences measured are printed at the end.
"""
import gc
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

STARTED = time.monotonic()
TMP = tempfile.TemporaryDirectory(prefix="rota-hf-import-")
# transformers copies trust_remote_code modules into HF_HOME: keep them in the test's directory,
# and never reach for the network.
os.environ["HF_HOME"] = os.path.join(TMP.name, "hf_home")
os.environ["HF_HUB_OFFLINE"] = "1"
REPO = os.environ.get("ROTA_REPO") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
SHARED = os.environ.get("ROTA_SHARED") or os.path.join(REPO, os.pardir, "shared")
os.environ.setdefault("ROTA_DATA", os.path.abspath(os.path.join(SHARED, "data")))

import numpy as np  # noqa: E402
import safetensors.torch  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402
from transformers import (AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel,  # noqa: E402
                          LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM,
                          Qwen2Config, Qwen2ForCausalLM)

import rota  # noqa: E402
import rota.torch as rt  # noqa: E402

transformers.utils.logging.disable_progress_bar()
transformers.utils.logging.set_verbosity_error()
torch.set_num_threads(1)

BINARY = os.environ.get("ROTA_BINARY") or os.path.join(REPO, "build", "rota")
LOGITS_BOUND = 1e-5   # · max |HF logit|
THETA_BOUND = 1e-6    # relative: Rota's θ (float64, rounded) vs transformers' (float32)
EVAL_BOUND = 1e-5     # relative: `rota eval` loss vs NumPy on transformers' logits
MEMORY_BOUND = 1.5    # peak RSS of the import / bytes of the safetensors file
CONTEXT = 32          # the evaluation windows (`rota eval --context`)
NEW_TOKENS = 20
EOT = "<|endoftext|>"
TEXTS = [
    "ROMEO: thou art",
    "Ünïcödé: café, naïve, 日本語, Ελληνικά, emoji 👍🏽 and ‘quotes’",
    "First line\n\nsecond line\nthird\tline\n",
    "  leading spaces and trailing   ",
    f"a special token {EOT} spelled out",
]
WORST = {}  # quantity -> (worst value, which case)
SMALLEST = {}  # quantity -> (smallest value, which case)


def note(quantity, value, where):
    if value >= WORST.get(quantity, (-1.0, ""))[0]:
        WORST[quantity] = (value, where)


def note_smallest(quantity, value, where):
    if value <= SMALLEST.get(quantity, (math.inf, ""))[0]:
        SMALLEST[quantity] = (value, where)


def rota_cli(*args):
    done = subprocess.run([BINARY, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(f"rota {' '.join(args)} failed ({done.returncode}):\n"
                             f"{done.stderr[-3000:]}")
    return done.stdout


def relative_difference(actual, expected):
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    return float(np.abs(actual - expected).max()) / max(float(np.abs(expected).max()), 1e-30)


def numpy_cross_entropy_sum(logits, targets):
    """Σ −log softmax(logits)[target] in float64; logits [N, V], targets [N]."""
    logits = np.asarray(logits, np.float64)
    top = logits.max(axis=1, keepdims=True)
    log_z = top[:, 0] + np.log(np.exp(logits - top).sum(axis=1))
    return float(np.sum(log_z - logits[np.arange(len(targets)), targets]))


def shakespeare():
    with open(os.path.join(SHARED, "data", "tinyshakespeare", "input.txt"),
              encoding="utf-8") as f:
        return f.read()


def train_tokenizer(text, size):
    """A GPT-2-style byte-level BPE (every byte has a token, so any text encodes)."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=size, special_tokens=[EOT], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator([text], trainer)
    return tokenizer


def synthetic_gpt2_tokenizer():
    """A byte-level BPE with GPT-2's 50257 entries: the 256 byte symbols, 50000 merges of two of
    them, and <|endoftext|> last (id 50256, as in GPT-2)."""
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {symbol: i for i, symbol in enumerate(alphabet)}
    merges = []
    for a in alphabet:
        for b in alphabet:
            if len(merges) == 50000:
                break
            merges.append((a, b))
            vocab[a + b] = len(vocab)
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([EOT])
    return tokenizer


def randomize_norms_and_biases(model, seed):
    """Norm weights 1 + N(0, 0.1²) and biases N(0, 0.1²) (transformers starts them at 1 and 0)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g) * 0.1
            if name.endswith(".bias"):
                p.copy_(noise)
            elif "norm" in name or ".ln_" in name:
                p.copy_(1.0 + noise)


LLAMA_SIZES = dict(hidden_size=64, intermediate_size=176, num_hidden_layers=2,
                   num_attention_heads=4, hidden_act="silu", attention_dropout=0.0,
                   initializer_range=0.1, max_position_embeddings=256, rms_norm_eps=1e-6)
LLAMA3 = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 64}


def build(name, vocab_size, eot_id):
    """(transformers model, save_pretrained keyword arguments, what the recipe must say)."""
    ids = dict(vocab_size=vocab_size, bos_token_id=eot_id, eos_token_id=eot_id)
    if name == "gpt2":
        config = GPT2Config(n_embd=64, n_layer=2, n_head=4, n_positions=128,
                            activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0,
                            attn_pdrop=0.0, initializer_range=0.1, **ids)
        return GPT2LMHeadModel(config), {}, dict(
            attention="softmax", kv_heads=None, window=0, position="learned_absolute",
            tie_embeddings=True, norm_kind="layer_norm", activation="gelu_tanh", bias=True,
            norm_eps=1e-5, ffn_width=256)
    llama = dict(attention="softmax", norm_kind="rms_norm", activation="swiglu", bias=False,
                 norm_eps=1e-6, ffn_width=176, position="rope", pairing="half")
    if name in ("llama_gqa", "llama_bf16"):
        config = LlamaConfig(num_key_value_heads=2, tie_word_embeddings=False,
                             rope_parameters=dict(LLAMA3), **LLAMA_SIZES, **ids)
        return LlamaForCausalLM(config), {}, dict(
            llama, kv_heads=2, window=0, tie_embeddings=False, base=500000.0,
            scaling=rt.RopeScaling(kind="llama3", factor=8.0, low_freq_factor=1.0,
                                   high_freq_factor=4.0, original_max_positions=64),
            biases=rt.Biases(qkv=False, attention_out=False, ffn=False, norms=False))
    if name == "qwen2":
        config = Qwen2Config(num_key_value_heads=2, tie_word_embeddings=True, **LLAMA_SIZES,
                             **ids)
        return Qwen2ForCausalLM(config), {"max_shard_size": "100KB"}, dict(
            llama, kv_heads=2, window=0, tie_embeddings=True, base=10000.0, scaling=None,
            biases=rt.Biases(qkv=True, attention_out=False, ffn=False, norms=False))
    if name == "mistral":
        config = MistralConfig(num_key_value_heads=2, sliding_window=8, tie_word_embeddings=False,
                               **LLAMA_SIZES, **ids)
        return MistralForCausalLM(config), {}, dict(
            llama, kv_heads=2, window=8, tie_embeddings=False, base=10000.0, scaling=None,
            biases=rt.Biases(qkv=False, attention_out=False, ffn=False, norms=False))
    if name == "llama_linear":
        config = LlamaConfig(num_key_value_heads=4, tie_word_embeddings=True,
                             rope_parameters={"rope_type": "linear", "factor": 2.0,
                                              "rope_theta": 10000.0}, **LLAMA_SIZES, **ids)
        return LlamaForCausalLM(config), {}, dict(
            llama, kv_heads=4, window=0, tie_embeddings=True, base=10000.0,
            scaling=rt.RopeScaling(kind="linear", factor=2.0))
    raise KeyError(name)


CASES = ("gpt2", "llama_gqa", "qwen2", "mistral", "llama_linear", "llama_bf16")
SOURCES = {}   # name -> the saved transformers directory
RUNS = {}      # name -> the imported run
EXPECT = {}    # name -> what the recipe must say
HF_MODELS = {}
TOKENIZER = None
EVAL_FILE = os.path.join(TMP.name, "eval.txt")
STREAM = None  # EVAL_FILE's text as token ids


def save_source(name, model, directory, save_kwargs):
    model.save_pretrained(directory, safe_serialization=True, **save_kwargs)
    TOKENIZER.save(os.path.join(directory, "tokenizer.json"))


def setUpModule():
    global TOKENIZER, STREAM
    text = shakespeare()
    TOKENIZER = train_tokenizer(text[:40000], 400)
    vocab_size = TOKENIZER.get_vocab_size()
    eot_id = TOKENIZER.token_to_id(EOT)
    # Text the tokenizer did not learn from; lines as in the corpus (TEXT files are lines).
    with open(EVAL_FILE, "w", encoding="utf-8") as f:
        f.write(text[500000:503000].rstrip("\n") + "\n")
    with open(EVAL_FILE, encoding="utf-8") as f:
        STREAM = np.array(TOKENIZER.encode(f.read()).ids, np.int64)
    for i, name in enumerate(CASES):
        torch.manual_seed(100 + i)
        model, save_kwargs, expect = build(name, vocab_size, eot_id)
        randomize_norms_and_biases(model, 200 + i)
        if name == "llama_bf16":
            model = model.to(torch.bfloat16)
        SOURCES[name] = os.path.join(TMP.name, "hf", name)
        save_source(name, model, SOURCES[name], save_kwargs)
        EXPECT[name] = expect
        RUNS[name] = os.path.join(TMP.name, "runs", name)
        rota_cli("import", "hf", SOURCES[name], "--out", RUNS[name])


def tearDownModule():
    print(f"\nworst measured ({time.monotonic() - STARTED:.1f} s from the imports on):")
    for quantity, (value, where) in sorted(WORST.items()):
        print(f"  {quantity:46s} {value:.2e}  ({where})")
    for quantity, (value, where) in sorted(SMALLEST.items()):
        print(f"  {quantity:46s} {value:.2e}  ({where}; the smallest)")
    TMP.cleanup()


def hf_model(name):
    """The source as transformers loads it, in float32 (transformers 5 would otherwise keep a
    bf16 checkpoint in bf16)."""
    if name not in HF_MODELS:
        HF_MODELS[name] = AutoModelForCausalLM.from_pretrained(SOURCES[name],
                                                               dtype=torch.float32).eval()
    return HF_MODELS[name]


def hf_logits(model, ids):
    with torch.no_grad():
        return model(torch.from_numpy(np.asarray(ids, np.int64))).logits.numpy()


def expected_rota_tensors(hf_state, config):
    """Rota's tensors (except RoPE's θ) from transformers' state dict: the mapping written out
    independently of the importer."""
    state = {k: v.detach().numpy() for k, v in hf_state.items()}
    out = {}
    if config.position.kind == "learned_absolute":  # GPT-2: Conv1D [in, out], c_attn = q|k|v
        e = config.width
        out["encoder.embed.weight"] = state["transformer.wte.weight"]
        out["encoder.pos_embed.weight"] = state["transformer.wpe.weight"]
        out["encoder.final_norm.weight"] = state["transformer.ln_f.weight"]
        out["encoder.final_norm.bias"] = state["transformer.ln_f.bias"]
        for i in range(config.layers):
            h, r = f"transformer.h.{i}.", f"encoder.blocks.{i}."
            weight, bias = state[h + "attn.c_attn.weight"], state[h + "attn.c_attn.bias"]
            for j, proj in enumerate(("q_proj", "k_proj", "v_proj")):
                out[r + f"attn.{proj}.weight"] = weight[:, j * e:(j + 1) * e].T
                out[r + f"attn.{proj}.bias"] = bias[j * e:(j + 1) * e]
            for source, target in (("attn.c_proj", "attn.out_proj"), ("mlp.c_fc", "ffn.fc1"),
                                   ("mlp.c_proj", "ffn.fc2")):
                out[r + target + ".weight"] = state[h + source + ".weight"].T
                out[r + target + ".bias"] = state[h + source + ".bias"]
            for source, target in (("ln_1", "ln1"), ("ln_2", "ln2")):
                for part in ("weight", "bias"):
                    out[f"{r}{target}.{part}"] = state[f"{h}{source}.{part}"]
        return out
    out["encoder.embed.weight"] = state["model.embed_tokens.weight"]
    out["encoder.final_norm.weight"] = state["model.norm.weight"]
    if not config.tie_embeddings:
        out["lm_head.weight"] = state["lm_head.weight"]
    for i in range(config.layers):
        h, r = f"model.layers.{i}.", f"encoder.blocks.{i}."
        for source, target in (("self_attn.q_proj", "attn.q_proj"),
                               ("self_attn.k_proj", "attn.k_proj"),
                               ("self_attn.v_proj", "attn.v_proj"),
                               ("self_attn.o_proj", "attn.out_proj"),
                               ("mlp.gate_proj", "ffn.gate_proj"), ("mlp.up_proj", "ffn.up_proj"),
                               ("mlp.down_proj", "ffn.down_proj")):
            for part in ("weight", "bias"):
                if f"{h}{source}.{part}" in state:
                    out[f"{r}{target}.{part}"] = state[f"{h}{source}.{part}"]
        out[r + "ln1.weight"] = state[h + "input_layernorm.weight"]
        out[r + "ln2.weight"] = state[h + "post_attention_layernorm.weight"]
    return out


def text_rows(rows=3, length=40):
    """rows × length token ids of the evaluation text."""
    return np.stack([STREAM[100 * r:100 * r + length] for r in range(rows)])


class ImportCase:
    """The checks every imported model gets; subclasses name the case."""
    name = None

    @classmethod
    def setUpClass(cls):
        cls.rota_run = rota.load(RUNS[cls.name])
        cls.hf = hf_model(cls.name)
        cls.torch_model = rt.from_pretrained(RUNS[cls.name])
        cls.config = cls.torch_model.config
        cls.expect = EXPECT[cls.name]

    def test_recipe_says_what_the_config_says(self):
        c, want = self.config, dict(self.expect)
        self.assertEqual(c.kind, "causal_lm")
        self.assertEqual(c.vocab_size, TOKENIZER.get_vocab_size())
        self.assertEqual((c.width, c.layers, c.heads), (64, 2, 4))
        self.assertEqual(c.position.kind, want.pop("position"))
        for field in ("pairing", "base", "scaling"):
            if field in want:
                self.assertEqual(getattr(c.position, field), want.pop(field), field)
        if c.position.kind == "learned_absolute":
            self.assertEqual(c.position.max_positions, 128)
        biases = want.pop("biases", None)
        if biases is not None:  # each part as the source has it
            self.assertEqual([c.has_bias(p) for p in ("qkv", "attention_out", "ffn", "norms")],
                             [biases.qkv, biases.attention_out, biases.ffn, biases.norms])
        self.assertEqual(c.key_value_heads, want.pop("kv_heads") or c.heads)
        self.assertEqual(c.ffn_hidden, want.pop("ffn_width"))
        for field, value in want.items():
            self.assertEqual(getattr(c, field), value, field)

    def test_weights_are_the_source_tensors(self):
        ours = self.rota_run.state_dict()
        expected = expected_rota_tensors(self.hf.state_dict(), self.config)
        thetas = sorted(k for k in ours if k.endswith(".rope.theta"))
        self.assertEqual(sorted(set(ours) - set(thetas)), sorted(expected))
        for name, value in expected.items():
            mine = ours[name]
            self.assertEqual((mine.dtype, mine.shape), (np.float32, value.shape), name)
            self.assertTrue(np.array_equal(mine, value), f"{self.name}: {name} differs")
        if self.config.position.kind != "rope":
            self.assertEqual(thetas, [])
            return
        self.assertEqual(len(thetas), self.config.layers)
        inv_freq = self.hf.model.rotary_emb.inv_freq.numpy()
        fresh = rt.build_model(self.config).state_dict()
        for name in thetas:
            error = relative_difference(ours[name], inv_freq)
            note("θ vs transformers' inv_freq (relative)", error, self.name)
            self.assertLessEqual(error, THETA_BOUND, f"{self.name}: {name}")
            self.assertTrue(np.array_equal(fresh[name].numpy(), ours[name]),
                            f"{self.name}: rota.torch computes another θ than the checkpoint's")
        if self.config.position.scaling is not None:  # the rescaling did change θ
            plain = self.config.position.base ** (-np.arange(0, 16, 2) / 16.0)
            self.assertGreater(relative_difference(ours[thetas[0]], plain), 0.1)

    def test_logits(self):
        ids = text_rows()
        expected = hf_logits(self.hf, ids)
        ours = self.rota_run.logits(ids)
        self.assertEqual((ours.dtype, ours.shape), (np.float32, expected.shape))
        error = relative_difference(ours, expected)
        note("logits Rota / max |logit|", error, self.name)
        self.assertLessEqual(error, LOGITS_BOUND, f"{self.name}: Rota's logits differ from "
                             f"transformers' by {error:.2e} of the largest logit")

    def test_rota_torch_logits(self):
        ids = text_rows()
        with torch.no_grad():
            ours = self.torch_model(torch.from_numpy(ids)).numpy()
        error = relative_difference(ours, hf_logits(self.hf, ids))
        note("logits rota.torch / max |logit|", error, self.name)
        self.assertLessEqual(error, LOGITS_BOUND, f"{self.name}: rota.torch's logits differ "
                             f"from transformers' by {error:.2e} of the largest logit")

    def test_greedy_generate(self):
        prompts = np.stack([STREAM[7:17], STREAM[400:410]])
        with torch.no_grad():
            out = self.hf.generate(torch.from_numpy(prompts), max_new_tokens=NEW_TOKENS,
                                   do_sample=False, eos_token_id=None, pad_token_id=0,
                                   output_logits=True, return_dict_in_generate=True)
        sequences = out.sequences.numpy()
        self.assertEqual(sequences.shape, (2, 10 + NEW_TOKENS))
        scores = torch.stack(out.logits, dim=1).numpy()  # [2, new, V]
        top2 = np.sort(scores, axis=-1)[..., -2:]  # how far each pick was from a tie
        note_smallest("greedy: top-2 logit gap / max |logit|",
                      float((top2[..., 1] - top2[..., 0]).min() / np.abs(scores).max()), self.name)
        expected = self.rota_run.generate_ids(list(prompts), max_tokens=NEW_TOKENS, temperature=0)
        for row in range(2):
            self.assertEqual(np.asarray(expected[row]).tolist(), sequences[row, 10:].tolist(),
                             f"{self.name}: greedy ids of prompt {row} differ from transformers'")

    def test_tokenizer(self):
        self.assertEqual(self.rota_run.vocab_size, TOKENIZER.get_vocab_size())
        self.assertEqual(self.rota_run.tokenizer.token_to_id(EOT), TOKENIZER.token_to_id(EOT))
        for text in TEXTS:
            with self.subTest(text=text):
                expected = TOKENIZER.encode(text).ids
                self.assertEqual(self.rota_run.encode(text).tolist(), expected)
                self.assertEqual(self.rota_run.decode(expected), text)

    def test_eval_on_a_text_file(self):
        done = rota_cli("eval", RUNS[self.name], "--data", EVAL_FILE, "--context", str(CONTEXT))
        values = dict(re.findall(r"(\w+)=(\S+)", done.strip().splitlines()[-1]))
        # Rota's evaluation windows: inputs stream[wT, wT + T), targets one token on; the last
        # window shorter, so that each of the N − 1 tokens after the first is scored once.
        n = len(STREAM)
        self.assertEqual(int(values["tokens"]), n - 1, "Rota scores every token but the first")
        total = 0.0
        for start in range(0, n - 1, CONTEXT):
            length = min(CONTEXT, n - 1 - start)
            window = STREAM[start:start + length + 1]
            logits = hf_logits(self.hf, window[None, :-1])[0]
            total += numpy_cross_entropy_sum(logits, window[1:])
        expected = total / (n - 1)
        error = abs(float(values["loss"]) - expected) / expected
        note("eval loss vs NumPy on HF logits (relative)", error, self.name)
        self.assertLessEqual(error, EVAL_BOUND, f"{self.name}: rota eval gives loss "
                             f"{values['loss']}, transformers' logits {expected:.6g}")


class Gpt2(ImportCase, unittest.TestCase):
    name = "gpt2"


class LlamaGqaLlama3(ImportCase, unittest.TestCase):
    name = "llama_gqa"

    def test_export_hf_loads_in_transformers(self):
        """The imported run, exported again, is a trust_remote_code model computing the source's
        logits (GQA and the llama3 θ through modeling_rota.py and rota.torch)."""
        out = os.path.join(TMP.name, "llama_gqa_export")
        rota_cli("export", "hf", RUNS[self.name], out)
        model, info = AutoModelForCausalLM.from_pretrained(
            out, trust_remote_code=True, dtype=torch.float32, output_loading_info=True)
        self.assertEqual({k: v for k, v in info.items() if v}, {})
        self.assertEqual(type(model).__name__, "RotaForCausalLM")
        ids = text_rows()
        with torch.no_grad():
            ours = model(input_ids=torch.from_numpy(ids)).logits.numpy()
        error = relative_difference(ours, hf_logits(self.hf, ids))
        note("logits export hf / max |logit|", error, self.name)
        self.assertLessEqual(error, LOGITS_BOUND)
        prompts = torch.from_numpy(np.stack([STREAM[7:17], STREAM[400:410]]))
        with torch.no_grad():
            theirs = self.hf.generate(prompts, max_new_tokens=NEW_TOKENS, do_sample=False,
                                      eos_token_id=None, pad_token_id=0)
            again = model.generate(prompts, max_new_tokens=NEW_TOKENS, do_sample=False,
                                   eos_token_id=None, pad_token_id=0)
        self.assertEqual(again.tolist(), theirs.tolist())


class Qwen2Sharded(ImportCase, unittest.TestCase):
    name = "qwen2"

    def test_source_is_sharded(self):
        files = os.listdir(SOURCES[self.name])
        self.assertIn("model.safetensors.index.json", files)
        self.assertNotIn("model.safetensors", files)
        self.assertGreater(len([f for f in files if f.startswith("model-000")]), 2)


class MistralWindow(ImportCase, unittest.TestCase):
    name = "mistral"

    def test_the_window_matters(self):
        """The logits checked above depend on the window: without it they differ."""
        ids = text_rows()
        windowless = rt.RotaConfig.from_dict(dict(self.config.to_dict(), window=0))
        model = rt.build_model(windowless)
        model.load_state_dict(self.torch_model.state_dict())
        with torch.no_grad():
            full = model.eval()(torch.from_numpy(ids)).numpy()
        self.assertGreater(relative_difference(full, hf_logits(self.hf, ids)), 1e-3)


class LlamaLinearScaling(ImportCase, unittest.TestCase):
    name = "llama_linear"


class LlamaBf16(ImportCase, unittest.TestCase):
    name = "llama_bf16"

    def test_source_is_bf16(self):
        with open(os.path.join(SOURCES[self.name], "config.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["dtype"], "bfloat16")
        with safetensors.safe_open(os.path.join(SOURCES[self.name], "model.safetensors"),
                                   framework="pt") as f:
            self.assertEqual({f.get_slice(k).get_dtype() for k in f.keys()}, {"BF16"})


def edited_copy(name, new_name, edit_config=None, edit_tensors=None):
    """A copy of a source directory with its config.json and/or model.safetensors changed."""
    directory = os.path.join(TMP.name, "hf", new_name)
    shutil.copytree(SOURCES[name], directory)
    if edit_config is not None:
        path = os.path.join(directory, "config.json")
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
        edit_config(config)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(config, f, indent=2)
    if edit_tensors is not None:
        path = os.path.join(directory, "model.safetensors")
        tensors = safetensors.torch.load_file(path)
        edit_tensors(tensors)
        safetensors.torch.save_file(tensors, path, metadata={"format": "pt"})
    return directory


class TransformersFourSpelling(unittest.TestCase):
    """Hub configs written by transformers 4 spell RoPE as top-level rope_theta + rope_scaling
    and the dtype as torch_dtype; Qwen2's carry a sliding_window that use_sliding_window false
    turns off. transformers 5 reads them as the configs above, and so must the importer."""

    def check_same_run(self, name, directory):
        run_dir = os.path.join(TMP.name, "runs", os.path.basename(directory))
        rota_cli("import", "hf", directory, "--out", run_dir)
        ours, theirs = rota.load(run_dir).state_dict(), rota.load(RUNS[name]).state_dict()
        self.assertEqual(sorted(ours), sorted(theirs))
        for key in ours:
            self.assertTrue(np.array_equal(ours[key], theirs[key]), key)
        old = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32).eval()
        ids = text_rows()  # transformers reads the old spelling as the same model
        self.assertTrue(np.array_equal(hf_logits(old, ids), hf_logits(hf_model(name), ids)))
        self.assertLessEqual(relative_difference(rota.load(run_dir).logits(ids),
                                                 hf_logits(old, ids)), LOGITS_BOUND)

    def test_llama3_scaling_as_rope_scaling(self):
        def edit(config):
            parameters = config.pop("rope_parameters")
            config["rope_theta"] = parameters.pop("rope_theta")
            config["rope_scaling"] = parameters
            config["torch_dtype"] = config.pop("dtype")
        self.check_same_run("llama_gqa", edited_copy("llama_gqa", "llama_gqa_v4", edit))

    def test_qwen2_window_switched_off(self):
        def edit(config):
            config.pop("layer_types")
            config.update(sliding_window=4, use_sliding_window=False, max_window_layers=1)
        self.check_same_run("qwen2", edited_copy("qwen2", "qwen2_v4", edit))


class Refusals(unittest.TestCase):
    """What the importer cannot import exactly, it refuses: a non-zero exit, a message naming
    the problem on stderr, and no checkpoint."""

    def refused(self, directory, *words):
        out = os.path.join(TMP.name, "runs", "refused_" + os.path.basename(directory))
        done = subprocess.run([BINARY, "import", "hf", directory, "--out", out],
                              capture_output=True, text=True)
        self.assertNotEqual(done.returncode, 0, done.stdout)
        self.assertIn(done.returncode, (1, 2), done.stderr)
        for word in words:
            self.assertRegex(done.stderr, word)
        self.assertFalse(os.path.exists(os.path.join(out, "checkpoints")),
                         "a refused import left a checkpoint")
        return done.stderr

    def test_unknown_architecture(self):
        def edit(config):
            config.update(architectures=["BertModel"], model_type="bert")
        self.refused(edited_copy("llama_gqa", "bert", edit), "BertModel")

    def test_dynamic_rope_scaling(self):
        def edit(config):
            config["rope_parameters"] = {"rope_type": "dynamic", "factor": 2.0,
                                         "rope_theta": 500000.0}
        self.refused(edited_copy("llama_gqa", "dynamic", edit), "dynamic")

    def test_missing_tensor(self):
        name = "model.layers.1.mlp.up_proj.weight"
        self.refused(edited_copy("llama_gqa", "missing", edit_tensors=lambda t: t.pop(name)),
                     re.escape(name))

    def test_the_same_out_after_a_refusal(self):
        """A refused import leaves nothing in the way: once the source is fixed, importing into
        the same --out works."""
        name = "model.layers.0.mlp.gate_proj.weight"
        directory = edited_copy("llama_gqa", "retry", edit_tensors=lambda t: t.pop(name))
        self.refused(directory, re.escape(name))
        shutil.copyfile(os.path.join(SOURCES["llama_gqa"], "model.safetensors"),
                        os.path.join(directory, "model.safetensors"))
        out = os.path.join(TMP.name, "runs", "refused_retry")
        rota_cli("import", "hf", directory, "--out", out)
        self.assertTrue(np.array_equal(rota.load(out).logits(text_rows()),
                                       rota.load(RUNS["llama_gqa"]).logits(text_rows())))

    def test_tensor_of_the_wrong_shape(self):
        name = "model.layers.0.self_attn.k_proj.weight"  # [kv_heads·D, E] = [32, 64]

        def edit(tensors):
            tensors[name] = torch.zeros(64, 64)
        self.refused(edited_copy("llama_gqa", "reshaped", edit_tensors=edit), re.escape(name),
                     r"\[\s*64\s*,\s*64\s*\]", r"\[\s*32\s*,\s*64\s*\]")


class Gpt2SmallMemory(unittest.TestCase):
    """GPT-2's 124M configuration (12 layers of width 768, 50257 tokens, 1024 positions, float32:
    a 498 MB safetensors file) imports with a peak resident set of at most 1.5 times the file."""

    def test_peak_memory_of_the_import(self):
        directory = os.path.join(TMP.name, "hf", "gpt2_124m")
        # The model is built and saved by a child python: a child forked from this process
        # starts with this process's resident pages, and its peak (ru_maxrss) keeps them even
        # after exec, so this process must not hold a 124M-parameter model when it starts the
        # import.
        build = (
            "import sys, torch\n"
            f"sys.path[:0] = [{os.path.dirname(os.path.abspath(__file__))!r}]\n"
            "import test_hf_import as t\n"
            "from transformers import GPT2Config, GPT2LMHeadModel\n"
            "tokenizer = t.synthetic_gpt2_tokenizer()\n"
            "assert tokenizer.get_vocab_size() == 50257\n"
            "torch.manual_seed(3)\n"
            "model = GPT2LMHeadModel(GPT2Config(n_embd=768, n_layer=12, n_head=12, "
            "n_positions=1024, vocab_size=50257, resid_pdrop=0.0, embd_pdrop=0.0, "
            "attn_pdrop=0.0))\n"
            "assert sum(p.numel() for p in model.parameters()) >= 100_000_000\n"
            f"model.save_pretrained({directory!r}, safe_serialization=True)\n"
            f"tokenizer.save({os.path.join(directory, 'tokenizer.json')!r})\n")
        done = subprocess.run([sys.executable, "-c", build], capture_output=True, text=True,
                              env=dict(os.environ, ROTA_BINARY=BINARY))
        self.assertEqual(done.returncode, 0, done.stderr[-3000:])
        tokenizer = Tokenizer.from_file(os.path.join(directory, "tokenizer.json"))
        ids = np.array([tokenizer.encode("ROMEO: thou art a villain, and").ids], np.int64)
        weights = os.path.getsize(os.path.join(directory, "model.safetensors"))
        self.assertGreater(weights, 4 * 100_000_000)
        out = os.path.join(TMP.name, "runs", "gpt2_124m")
        # The import's own peak: the high-water mark of its resident set (VmHWM) read from
        # /proc while it runs, once it has exec'd (the name is rota). Not ru_maxrss: a child
        # forked from this process starts with this process's resident pages, and ru_maxrss
        # keeps that through exec. VmHWM only grows, so the last reading is the peak up to a
        # few milliseconds before the end.
        with open(out + ".stdout", "w+") as stdout, open(out + ".stderr", "w+") as stderr:
            child = subprocess.Popen([BINARY, "import", "hf", directory, "--out", out],
                                     stdout=stdout, stderr=stderr)
            peak_kb, readings = 0, 0
            while child.poll() is None:
                try:
                    with open(f"/proc/{child.pid}/status", encoding="utf-8") as f:
                        fields = dict(line.split(":", 1) for line in f if ":" in line)
                    if fields.get("Name", "").strip() == "rota" and "VmHWM" in fields:
                        peak_kb = max(peak_kb, int(fields["VmHWM"].split()[0]))
                        readings += 1
                except (FileNotFoundError, ProcessLookupError, ValueError):
                    pass
                time.sleep(0.005)
            stdout.seek(0)
            stderr.seek(0)
            stdout, stderr = stdout.read(), stderr.read()
        self.assertEqual(child.returncode, 0, stderr[-3000:])
        self.assertGreater(readings, 10)  # the import ran long enough to be watched
        peak = peak_kb * 1024
        note("import peak RSS / safetensors bytes", peak / weights, "gpt2_124m")
        self.assertLessEqual(peak, MEMORY_BOUND * weights,
                             f"the import peaked at {peak / 1e6:.0f} MB for a "
                             f"{weights / 1e6:.0f} MB file")
        model = GPT2LMHeadModel.from_pretrained(directory, dtype=torch.float32)
        expected = hf_logits(model.eval(), ids)
        parameters = sum(p.numel() for p in model.parameters())
        print(f"\n  gpt2 124M: {parameters} parameters, {weights / 1e6:.0f} MB file, import "
              f"peak RSS {peak / 1e6:.0f} MB ({stdout.strip().splitlines()[-1]})")
        del model
        shutil.rmtree(directory)
        error = relative_difference(rota.load(out).logits(ids), expected)
        note("logits Rota / max |logit|", error, "gpt2_124m")
        self.assertLessEqual(error, LOGITS_BOUND)
        shutil.rmtree(out)


if __name__ == "__main__":
    unittest.main()
