# Loading Rota runs and checkpoints into rota.torch models, and saving modules as Rota checkpoints.
"""Paths accepted by `load`:
  - a run directory (runs/NAME): its `checkpoints/latest` checkpoint;
  - a checkpoint directory (runs/NAME/checkpoints/step_000500);
  - an exported Hugging Face-style directory (`rota export hf`): config.json + model.safetensors.
Loading is strict: every parameter and buffer of the model must be in the file with the same
shape and a compatible dtype, and the file must hold nothing else.

`save_checkpoint` writes a directory that Rota reads as a checkpoint (`finetune.init_from`,
`rota eval`, `rota generate`): model.safetensors, an empty optimizer.safetensors (a fresh
optimizer), recipe.txtpb (the model block regenerated from the module's config), the tokenizer
files of the run it came from, and state.binpb with the size and CRC-32C of every file.
"""
import json
import os
import shutil
import struct

import numpy as np
import torch

from . import safetensors_io
from .config import RotaConfig
from .models import build_model

MODEL_FILE = "model.safetensors"
OPTIMIZER_FILE = "optimizer.safetensors"
STATE_FILE = "state.binpb"
RECIPE_FILE = "recipe.txtpb"
CONFIG_FILE = "config.json"


class CheckpointError(ValueError):
    pass


def resolve_checkpoint(path):
    """The checkpoint directory a run, checkpoint or export path names."""
    path = os.fspath(path)
    if not os.path.isdir(path):
        raise CheckpointError(f"{path}: not a directory (expected a run, a checkpoint or an "
                              "exported model directory)")
    if os.path.exists(os.path.join(path, MODEL_FILE)):
        return path
    latest = os.path.join(path, "checkpoints", "latest")
    if os.path.exists(latest):
        with open(latest, encoding="utf-8") as f:
            name = f.read().strip()
        if not name or "/" in name or name in (".", ".."):
            raise CheckpointError(f"{latest}: does not name a checkpoint directory ({name!r})")
        resolved = os.path.join(path, "checkpoints", name)
        if not os.path.exists(os.path.join(resolved, MODEL_FILE)):
            raise CheckpointError(f"{latest} names {name}, which has no {MODEL_FILE}")
        return resolved
    raise CheckpointError(f"{path}: no {MODEL_FILE} and no checkpoints/latest (not a run, "
                          "checkpoint or exported model directory)")


def read_config_json(config_path):
    """config.json as a dict; CheckpointError naming the file (and line:column) when it is not
    one."""
    try:
        with open(config_path, encoding="utf-8") as f:
            data = json.load(f)
    except json.JSONDecodeError as error:
        raise CheckpointError(f"{config_path}:{error.lineno}:{error.colno}: not valid JSON "
                              f"({error.msg}); re-export it with `rota export hf` or restore "
                              "it") from None
    except UnicodeDecodeError as error:
        raise CheckpointError(f"{config_path}: not UTF-8 text (byte {error.start}); re-export it "
                              "with `rota export hf` or restore it") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{config_path}: a JSON {type(data).__name__}, not the object of "
                              "a model config; re-export it with `rota export hf` or restore it")
    return data


def read_config(checkpoint_dir, tensors):
    """The model config of a checkpoint: config.json if present, else the recipe, with the
    vocabulary size and class count read off the tensor shapes."""
    vocab = tensors.get("encoder.embed.weight")
    if vocab is None:
        raise CheckpointError(f"{checkpoint_dir}: {MODEL_FILE} has no encoder.embed.weight "
                              "(not a Rota model)")
    config_path = os.path.join(checkpoint_dir, CONFIG_FILE)
    if os.path.exists(config_path):
        data = read_config_json(config_path)
        if "rota_recipe" in data:  # written by `rota export hf`
            if not isinstance(data["rota_recipe"], str):
                raise CheckpointError(f"{config_path}: \"rota_recipe\" must be the recipe's text "
                                      f"(a string), not {type(data['rota_recipe']).__name__}")
            config = RotaConfig.from_recipe_text(data["rota_recipe"], source=config_path)
        else:
            try:
                config = RotaConfig.from_dict(data.get("rota", data))
            except (TypeError, ValueError, KeyError, AttributeError) as error:
                raise CheckpointError(f"{config_path}: not a model config Rota reads ({error}); "
                                      "re-export it with `rota export hf` or restore it") from None
    else:
        recipe = os.path.join(checkpoint_dir, RECIPE_FILE)
        if not os.path.exists(recipe):
            raise CheckpointError(f"{checkpoint_dir}: neither {CONFIG_FILE} nor {RECIPE_FILE}")
        with open(recipe, encoding="utf-8") as f:
            config = RotaConfig.from_recipe_text(f.read(), source=recipe)
    config.vocab_size = int(vocab.shape[0])
    if "classifier.weight" in tensors:
        config.num_classes = int(tensors["classifier.weight"].shape[0])
    return config.validate()


def load_state_dict_strict(model, tensors, where):
    """Copies file tensors into the model; refuses missing, unexpected, reshaped or retyped."""
    own = model.state_dict()
    missing = [k for k in own if k not in tensors]
    unexpected = [k for k in tensors if k not in own]
    if missing or unexpected:
        raise CheckpointError(f"{where}: strict loading: missing in the file: {missing[:8]}; not "
                              f"in the model: {unexpected[:8]}")
    converted = {}
    for name, target in own.items():
        array = tensors[name]
        if tuple(array.shape) != tuple(target.shape):
            raise CheckpointError(f"{where}: {name} has shape {list(array.shape)} in the file, "
                                  f"{list(target.shape)} in the model")
        if target.is_floating_point() != np.issubdtype(array.dtype, np.floating):
            raise CheckpointError(f"{where}: {name} is {array.dtype} in the file but the model "
                                  f"holds {target.dtype} (refusing to convert)")
        converted[name] = torch.from_numpy(np.ascontiguousarray(array)).to(target.dtype)
    model.load_state_dict(converted, strict=True)


def load(path, dtype=torch.float32, device="cpu"):
    """(model, checkpoint_dir): the rota.torch model of a Rota run/checkpoint/export, with its
    weights, in eval mode."""
    checkpoint_dir = resolve_checkpoint(path)
    tensors, _ = safetensors_io.read(os.path.join(checkpoint_dir, MODEL_FILE))
    if any(name.endswith((".lora_a", ".lora_b")) for name in tensors):
        raise CheckpointError(
            f"{checkpoint_dir}: a run fine-tuned with low-rank adapters (finetune.lora): its "
            "checkpoint holds the adapters and a reference to the base model, not a whole "
            "model. `rota export hf RUN OUT` folds the adapters into the weights; load OUT")
    config = read_config(checkpoint_dir, tensors)
    model = build_model(config)
    load_state_dict_strict(model, tensors, os.path.join(checkpoint_dir, MODEL_FILE))
    model.to(device=device, dtype=dtype)
    model.eval()
    return model, checkpoint_dir


# ---- saving ----

def _fmt(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _attention_lines(c, indent):
    """An `attention { ... }` block for the attention fields of c (RotaConfig or HybridConfig)."""
    i = indent
    lines = [f"{i}attention {{"]
    if c.attention == "linear":
        lines += [f"{i}  linear {{", f"{i}    feature_map: {c.feature_map.upper()}",
                  f"{i}    normalization: {c.normalization.upper()}"]
        if c.normalization == "denominator":
            lines.append(f"{i}    denominator_eps: {_fmt(float(c.denominator_eps))}")
        lines.append(f"{i}    chunk_size: {c.chunk_size}")
        if c.decay is not None:
            lines.append(f"{i}    decay {{ schedule: {c.decay.upper()} "
                         f"learnable: {_fmt(getattr(c, 'decay_learnable', False))} }}")
        gating = getattr(c, "gating", None)
        if gating == "gla":
            lines.append(f"{i}    gating {{ gla {{ rank: {c.gla_rank} "
                         f"temperature: {_fmt(float(c.gla_temperature))} }} }}")
        elif gating == "ssd":
            lines.append(f"{i}    gating {{ ssd {{}} }}")
        if getattr(c, "update_rule", "additive") != "additive":  # causal models only
            lines.append(f"{i}    update_rule: {c.update_rule.upper()}")
        lines += [f"{i}    output_gate: {c.output_gate.upper()}", f"{i}  }}"]
    else:
        lines += [f"{i}  softmax {{"]
        if c.softmax_scale is not None:
            lines.append(f"{i}    scale: {_fmt(float(c.softmax_scale))}")
        lines.append(f"{i}    dropout: {_fmt(float(c.attention_dropout))}")
        if getattr(c, "stream_chunk", 0) > 0:
            lines += [f"{i}    streaming {{", f"{i}      chunk: {c.stream_chunk}",
                      f"{i}      left_memory: {c.stream_left_memory}", f"{i}    }}"]
        if c.window > 0:
            lines.append(f"{i}    window: {c.window}")
        lines.append(f"{i}  }}")
    lines.append(f"{i}}}")
    return lines


def _position_lines(p, indent):
    """A `position { ... }` block for a PositionConfig."""
    i = indent
    fields = {
        "none": [], "alibi": [], "permute_former": [],
        "sinusoidal": [("base", float(p.base))],
        "learned_absolute": [("max_positions", p.max_positions)],
        "rope": [("pairing", p.pairing.upper()), ("base", float(p.base))],
        # only Type 2 pairs channels; Type 3 has no angles (recipes/applicability.cpp)
        "lrpe": [("type", p.type), ("pairing", p.pairing.upper() if p.type == 2 else None),
                 ("p", p.p.upper()), ("learn_theta", p.learn_theta if p.type != 3 else None),
                 ("theta_base", float(p.theta_base) if p.type != 3 else None)],
        "shaw": [("clip", p.clip), ("clip_left", p.clip_left), ("clip_right", p.clip_right),
                 ("values", p.values)],
        "transformer_xl": [("layout", p.layout.upper()), ("pe_width", p.pe_width),
                           ("base", float(p.base))],
        "skew": [("max_len", p.max_len), ("per_head", p.per_head)],
        "t5": [("buckets", p.buckets), ("max_distance", p.max_distance),
               ("bidirectional", p.bidirectional)],
    }[p.kind]
    lines = [f"{i}position {{", f"{i}  {p.kind} {{"]
    lines += [f"{i}    {k}: {_fmt(v)}" for k, v in fields if v is not None]
    if p.kind == "rope" and p.scaling is not None:
        s = p.scaling
        values = [("factor", float(s.factor))]
        if s.kind == "llama3":
            values += [("low_freq_factor", float(s.low_freq_factor)),
                       ("high_freq_factor", float(s.high_freq_factor)),
                       ("original_max_positions", s.original_max_positions)]
        lines += [f"{i}    scaling {{", f"{i}      {s.kind} {{"]
        lines += [f"{i}        {k}: {_fmt(v)}" for k, v in values]
        lines += [f"{i}      }}", f"{i}    }}"]
    lines.append(f"{i}  }}")
    if p.add_sinusoidal:  # written only when set: it does not apply to none or absolute ones
        lines.append(f"{i}  add_sinusoidal: true")
    lines.append(f"{i}}}")
    return lines


def config_to_model_text(config):
    """The recipe's `model { ... }` block for a config (protobuf text format)."""
    c = config
    lines = ["model {", f"  kind: {c.kind.upper()}", f"  width: {c.width}",
             f"  layers: {c.layers}", f"  heads: {c.heads}", f"  ffn_width: {c.ffn_hidden}",
             f"  ffn_activation: {c.activation.upper()}",
             f"  norm_placement: {'POST_NORM' if c.post_norm else 'PRE_NORM'}",
             f"  norm_kind: {c.norm_kind.upper()}", f"  bias: {_fmt(c.bias)}",
             f"  final_norm: {_fmt(c.final_norm)}", f"  norm_eps: {_fmt(float(c.norm_eps))}",
             f"  dropout: {_fmt(float(c.dropout))}",
             f"  embedding_scale: {'SQRT_WIDTH' if c.scale_embeddings else 'UNSCALED'}",
             f"  init_scheme: {c.init_scheme.upper()}"]
    if c.init_scheme in ("normal", "gpt2"):  # Rota refuses init_std with the other schemes
        lines.append(f"  init_std: {_fmt(float(c.init_std))}")
    if c.kind != "classifier":  # a classifier has no vocabulary output to tie
        lines.append(f"  tie_embeddings: {_fmt(c.tie_embeddings)}")
    if c.kv_heads is not None:
        lines.append(f"  kv_heads: {c.kv_heads}")
    parts = [(name, getattr(c.biases, name)) for name in ("qkv", "attention_out", "ffn", "norms")]
    if any(value is not None for _, value in parts):
        lines.append("  biases { " + " ".join(f"{name}: {_fmt(value)}" for name, value in parts
                                              if value is not None) + " }")
    lines += _attention_lines(c, "  ")
    lines += _position_lines(c.position, "  ")
    if c.hybrid is not None:
        h = c.hybrid
        lines.append("  hybrid {")
        if h.every is not None:
            lines.append(f"    every: {h.every}")
        lines += [f"    blocks: {b}" for b in h.blocks]
        lines += _attention_lines(h, "    ")
        if h.position is not None:
            lines += _position_lines(h.position, "    ")
        lines.append("  }")
    if c.kind == "classifier":
        lines += ["  classifier {", f"    num_classes: {c.num_classes}",
                  f"    pooling: {c.pooling.upper()}", "  }"]
    lines.append("}")
    return "\n".join(lines) + "\n"


def replace_model_block(recipe_text, model_text):
    """recipe_text with its top-level `model { ... }` block replaced by model_text."""
    from .text_format import _tokens
    depth, start, end = 0, None, None
    lines = recipe_text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    for kind, value, line, col in _tokens(recipe_text, "recipe"):
        at = offsets[line - 1] + col - 1
        if depth == 0 and kind == "word" and value == "model" and start is None:
            start = at
        if kind == "punct" and value in "{<":
            depth += 1
        elif kind == "punct" and value in "}>":
            depth -= 1
            if depth == 0 and start is not None and end is None:
                end = at + 1
    if start is None:
        return model_text + recipe_text
    return recipe_text[:start] + model_text.rstrip("\n") + recipe_text[end:]


def _varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number, wire, payload):
    return _varint(number << 3 | wire) + payload


def encode_train_state(step, files):
    """A rota.io.TrainState (framework/io/train_state.proto): version 1, the step, lr_scale 1,
    the file checks, and the trailing crc32c field (field 15) over every byte before it."""
    body = _field(1, 0, _varint(1)) + _field(2, 0, _varint(step))
    body += _field(8, 1, struct.pack("<d", 1.0))
    for name, size, crc in files:
        entry = (_field(1, 2, _varint(len(name.encode())) + name.encode()) +
                 _field(2, 0, _varint(size)) + _field(3, 5, struct.pack("<I", crc)))
        body += _field(12, 2, _varint(len(entry)) + entry)
    return body + _field(15, 5, struct.pack("<I", safetensors_io.crc32c(body)))


def save_checkpoint(model, out_dir, source=None, recipe_text=None, step=0):
    """Writes `model` (a rota.torch model) as a Rota checkpoint directory `out_dir`.

    source: a Rota run/checkpoint whose tokenizer files and recipe (data, optimizer, ...) come
    along; the recipe's model block is regenerated from model.config. recipe_text overrides
    the recipe entirely. Files are written into `<out_dir>.tmp` and renamed into place."""
    out_dir = os.fspath(out_dir).rstrip("/")
    if os.path.exists(out_dir):
        raise CheckpointError(f"{out_dir}: already exists (refusing to overwrite)")
    source_dir = resolve_checkpoint(source) if source is not None else None
    if recipe_text is None:
        base = ""
        if source_dir is not None:
            with open(os.path.join(source_dir, RECIPE_FILE), encoding="utf-8") as f:
                base = f.read()
        recipe_text = replace_model_block(base, config_to_model_text(model.config))
    tmp = f"{out_dir}.tmp.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    tensors = {name: t.detach().to("cpu").contiguous().numpy()
               for name, t in model.state_dict().items()}
    tensors = {k: (v.astype(np.float32) if v.dtype in (np.float16, np.float64) else v)
               for k, v in tensors.items()}
    safetensors_io.write(os.path.join(tmp, MODEL_FILE), tensors)
    safetensors_io.write(os.path.join(tmp, OPTIMIZER_FILE), {})
    with open(os.path.join(tmp, RECIPE_FILE), "w", encoding="utf-8") as f:
        f.write(recipe_text)
    names = [MODEL_FILE, OPTIMIZER_FILE, RECIPE_FILE]
    if source_dir is not None:
        for name in sorted(os.listdir(source_dir)):
            if name in (MODEL_FILE, OPTIMIZER_FILE, RECIPE_FILE, STATE_FILE, CONFIG_FILE):
                continue
            if os.path.isfile(os.path.join(source_dir, name)) and ".tmp" not in name:
                shutil.copyfile(os.path.join(source_dir, name), os.path.join(tmp, name))
                names.append(name)
    files = []
    for name in names:
        with open(os.path.join(tmp, name), "rb") as f:
            data = f.read()
        files.append((name, len(data), safetensors_io.crc32c(data)))
    with open(os.path.join(tmp, STATE_FILE), "wb") as f:
        f.write(encode_train_state(step, files))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, out_dir)
    return out_dir
