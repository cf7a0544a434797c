"""Plain-PyTorch reference training of a Rota recipe's causal LM, to compare with `rota train`.

Issue 23 asks for "your own PyTorch script of the same model" as the reference for Rota's runs.

The model is rota.torch's (so the architecture is exactly Rota's); the token ids come from Rota's
own tokenizer and corpus code through `rota data prepare`; everything else (initialisation,
window sampling, AdamW, the schedule, clipping, bf16 autocast, evaluation) is ordinary PyTorch:

  python3 bench/reference/train_torch_reference.py RECIPE [--set a.b=v]... [--seed N]
      [--init pytorch|normal] [--init-std S] [--sampling random|aligned] [--steps N]
      [--dtype f32|bf16] [--threads N] [--eval-every N] [--prepared DIR] [--out results.json]

See bench/reference/README.md.
"""
import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
try:
    import rota.torch as rt
except ImportError:  # not installed: use the source tree (python/ and the native module's build)
    sys.path[:0] = [os.path.join(REPO, "python"), os.path.join(REPO, "build", "python")]
    import rota.torch as rt
import rota
from rota.torch.layers import RMSNorm
from rota.torch.positions import LearnedPositionEmbedding
from rota.torch.text_format import Message, parse_text_format

# Fields of `data` that decide the token ids (the others only decide the batches).
LOADER_FIELDS = ("sequence_length", "batch_size", "shuffle", "window_sampling", "mlm")
# The sampler's generator gets seed ^ this, so its stream differs from the initialisation's
# (torch.manual_seed(seed)).
DATA_SEED_SALT = 0x5EEDDA7A


def rota_binary(explicit=None):
    for candidate in (explicit, os.environ.get("ROTA_BINARY"), os.path.join(REPO, "build", "rota")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return "rota"  # on PATH


def run_rota(binary, args):
    result = subprocess.run([binary, *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{binary} {' '.join(args)} failed ({result.returncode}):\n"
                         f"{result.stderr.strip()}")
    return result.stdout


def resolve_recipe(binary, recipe, sets):
    """The recipe as Rota resolves it (every default written out, --set applied), parsed."""
    flags = [x for s in sets for x in ("--set", s)]
    text = run_rota(binary, ["recipe", "show", recipe, *flags])
    return text, Message(parse_text_format(text, recipe), "recipe", recipe)


def prepared_corpus(binary, recipe_path, sets, recipe, prepared=None):
    """A `rota data prepare` directory holding the recipe's token ids (made when missing)."""
    data = recipe.message("data")
    if data.has("prepared"):
        return data.scalar("prepared", "")
    if prepared is None:
        key = {k: v for k, v in data.fields.items() if k not in LOADER_FIELDS}
        digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
        prepared = os.path.join("runs", "reference-data", digest)
    if not os.path.exists(os.path.join(prepared, "manifest.json")):
        flags = [x for s in sets for x in ("--set", s)]
        os.makedirs(os.path.dirname(os.path.abspath(prepared)), exist_ok=True)
        try:
            print(run_rota(binary, ["data", "prepare", recipe_path, *flags, "--out", prepared]),
                  end="", flush=True)
        except SystemExit:
            if not os.path.exists(os.path.join(prepared, "manifest.json")):
                raise  # (else a concurrent run prepared it first)
    return prepared


def load_streams(prepared):
    """{split: int64 tensor of the split's ids} and Rota's tokenizer, from a prepared directory
    (docs/data.md "Prepared corpora": raw little-endian uint16/uint32 shards, in order)."""
    with open(os.path.join(prepared, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    if manifest.get("format") != "rota.prepared" or manifest.get("version") != 1:
        raise SystemExit(f"{prepared}: not a version-1 prepared corpus")
    dtype = {"uint16": np.dtype("<u2"), "uint32": np.dtype("<u4")}[manifest["dtype"]]
    streams = {}
    for split, entry in manifest["splits"].items():
        parts = [np.fromfile(os.path.join(prepared, s["file"]), dtype=dtype)
                 for s in entry["shards"]]
        ids = np.concatenate(parts) if parts else np.zeros(0, dtype)
        if ids.size != entry["tokens"]:
            raise SystemExit(f"{prepared}: split {split} holds {ids.size} ids, the manifest "
                             f"says {entry['tokens']}")
        streams[{"validation": "valid", "dev": "valid"}.get(split, split)] = torch.from_numpy(
            ids.astype(np.int64))
    tokenizer = rota.load_tokenizer(os.path.join(prepared, manifest["tokenizer"]["dir"]))
    return streams, tokenizer


def initialise(model, scheme, std):
    """Re-initialises a rota.torch model in place. pytorch: nn.Linear's own reset_parameters
    (Kaiming-uniform weights, U(±1/√fan_in) biases), embeddings N(0, 1/√E). normal: every
    weight and embedding N(0, std), biases 0. Both: norms γ = 1, β = 0; LRPE θ, Householder v
    and the other position parameters stay as rota.torch made them."""
    width = model.config.width
    for module in model.modules():
        if isinstance(module, nn.Linear):
            if scheme == "pytorch":
                module.reset_parameters()
            else:
                nn.init.normal_(module.weight, 0.0, std)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
        elif isinstance(module, (nn.Embedding, LearnedPositionEmbedding)):
            nn.init.normal_(module.weight, 0.0, 1.0 / math.sqrt(width) if scheme == "pytorch"
                            else std)
        elif isinstance(module, (nn.LayerNorm, RMSNorm)):
            nn.init.ones_(module.weight)
            if getattr(module, "bias", None) is not None:
                nn.init.zeros_(module.bias)


def parameter_groups(model, optimizer):
    """AdamW groups with the recipe's weight decay per role, as Rota's role_param_groups:
    Linear weights always decay; biases, norms, embeddings and position parameters (LRPE θ,
    Householder v, ...) as optimizer.decay_biases / _norms / _embeddings / _positional say."""
    decays = {"weight": True, "bias": optimizer.boolean("decay_biases", False),
              "norm": optimizer.boolean("decay_norms", False),
              "embedding": optimizer.boolean("decay_embeddings", True),
              "positional": optimizer.boolean("decay_positional", False)}
    role_of = {}
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if isinstance(module, (nn.LayerNorm, RMSNorm)):
                role = "norm"
            elif isinstance(module, (nn.Embedding, LearnedPositionEmbedding)):
                role = "embedding"
            elif isinstance(module, nn.Linear):
                role = "weight" if name == "weight" else "bias"
            else:
                role = "positional"
            role_of.setdefault(p, role)  # a tied weight counts once, as the embedding
    groups = {True: [], False: []}
    for p, role in role_of.items():
        if p.requires_grad:
            groups[decays[role]].append(p)
    return groups


def make_optimizer(model, recipe):
    o = recipe.message("optimizer")
    groups = parameter_groups(model, o)
    if o.has("sgd"):
        s = o.message("sgd")
        cls, kw = torch.optim.SGD, dict(momentum=s.number("momentum", 0.0),
                                        nesterov=s.boolean("nesterov", False))
        wd = s.number("weight_decay", 0.0)
    else:
        adam = o.has("adam")
        a = o.message("adam" if adam else "adamw")
        cls = torch.optim.Adam if adam else torch.optim.AdamW
        kw = dict(betas=(a.number("beta1", 0.9), a.number("beta2", 0.999)),
                  eps=a.number("eps", 1e-8))
        wd = a.number("weight_decay", 0.0 if adam else 0.01)
    return cls([{"params": groups[True], "weight_decay": wd},
                {"params": groups[False], "weight_decay": 0.0}], lr=0.0, **kw)


def learning_rate(step, schedule, total_steps):
    """Rota's schedule (framework/optim/schedule.cpp) at optimizer step t = 1, 2, …, T:
    warm-up lr·(s + (1 − s)·t/W) for t ≤ W, then constant / linear / cosine decay over
    p = (t − W)/(T − W) to min_lr (reached at t = T), or inverse-sqrt lr·√(W/t) ≥ min_lr."""
    kind = schedule.scalar("kind", "COSINE")
    lr, warmup = schedule.number("lr", 1e-3), schedule.integer("warmup_steps", 0)
    min_lr = 0.0 if kind == "CONSTANT" else schedule.number("min_lr", 0.0)
    start = schedule.number("warmup_start_factor", 0.0)
    if warmup > 0 and step <= warmup:
        return lr * (start + (1.0 - start) * step / warmup)
    if kind == "CONSTANT":
        return lr
    if kind == "INVERSE_SQRT":
        return max(min_lr, lr * math.sqrt(warmup) / math.sqrt(step))
    p = min(1.0, max(0.0, (step - warmup) / (total_steps - warmup)))
    if kind == "LINEAR":
        return lr + (min_lr - lr) * p
    return min_lr + (lr - min_lr) * 0.5 * (1.0 + math.cos(math.pi * p))


class WindowSampler:
    """Training windows of `length` ids (+ the next id as targets) from a token stream.
    random: each sequence of each batch starts at a uniform position in [0, N − 1 − length].
    aligned: the (N − 1) // length windows starting at multiples of length, in a fresh random
    order every epoch, incomplete last batches dropped. A function of the seed alone."""

    def __init__(self, stream, length, batch_size, seed, mode="random"):
        if mode not in ("random", "aligned"):
            raise ValueError(f"sampling: {mode!r} is neither 'random' nor 'aligned'")
        self.stream, self.length, self.batch_size, self.mode = stream, length, batch_size, mode
        self.windows = (stream.numel() - 1) // length
        if self.windows < (batch_size if mode == "aligned" else 1):
            raise ValueError(f"the training split ({stream.numel()} ids) is too short for "
                             f"batches of {batch_size} windows of {length}")
        self.generator = torch.Generator().manual_seed(seed ^ DATA_SEED_SALT)
        self.epoch, self.order, self.position = 0, None, 0

    def next_starts(self):
        if self.mode == "random":
            high = self.stream.numel() - self.length  # exclusive: starts ≤ N − 1 − length
            return torch.randint(0, high, (self.batch_size,), generator=self.generator)
        if self.order is None or self.position + self.batch_size > self.windows:
            if self.order is not None:
                self.epoch += 1
            self.order, self.position = torch.randperm(self.windows, generator=self.generator), 0
        chosen = self.order[self.position:self.position + self.batch_size]
        self.position += self.batch_size
        return chosen * self.length

    def next_batch(self):
        index = self.next_starts()[:, None] + torch.arange(self.length)[None, :]
        return self.stream[index], self.stream[index + 1]


def autocast(bf16):
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16)


@torch.no_grad()
def evaluate(model, stream, length, bf16=False, batch_size=None):
    """(loss, targets) as Rota scores a split: non-overlapping windows of `length` ids, the last
    one partial, each with only its own context, so every id after the first is predicted once;
    loss = Σ cross-entropy / (N − 1). Batches hold ≤ 2^27 logits unless batch_size is given."""
    was_training = model.training
    model.eval()
    n = stream.numel()
    batch_size = batch_size or max(1, min(256, 2**27 // (length * model.config.vocab_size)))
    starts = list(range(0, n - 1, length))
    full = [s for s in starts if s + length <= n - 1]
    groups = [full[i:i + batch_size] for i in range(0, len(full), batch_size)]
    groups += [[s] for s in starts if s + length > n - 1]  # the partial last window
    total = 0.0
    for group in groups:
        size = min(length, n - 1 - group[0])
        index = torch.tensor(group)[:, None] + torch.arange(size)[None, :]
        with autocast(bf16):
            logits = model(stream[index])
        total += float(F.cross_entropy(logits.float().flatten(0, 1), stream[index + 1].flatten(),
                                       reduction="sum"))
    model.train(was_training)
    return total / (n - 1), n - 1


def build(recipe_text, vocab_size, seed, init, init_std):
    """rota.torch's model of the recipe's model block, seeded, then re-initialised."""
    config = rt.RotaConfig.from_recipe_text(recipe_text, vocab_size)
    if config.kind != "causal_lm":
        raise SystemExit(f"model.kind: {config.kind.upper()}; this script trains causal LMs only")
    torch.manual_seed(seed)
    model = rt.build_model(config)
    initialise(model, init, init_std)
    # Under CPU autocast, PyTorch 1.13's layer_norm refuses a bf16 input with f32 γ/β (the
    # attention output reaching LinearAttention.norm is a bf16 matmul result): norms take f32.
    for module in model.modules():
        if isinstance(module, (nn.LayerNorm, RMSNorm)):
            module.register_forward_pre_hook(lambda _, inputs: tuple(x.float() for x in inputs))
    return model


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("recipe")
    ap.add_argument("--set", action="append", default=[], metavar="a.b=v",
                    help="recipe override, as `rota train --set`")
    ap.add_argument("--seed", type=int, help="default: the recipe's train.seed")
    ap.add_argument("--init", choices=("pytorch", "normal"), default="pytorch")
    ap.add_argument("--init-std", type=float, help="σ of --init normal (default: the recipe's "
                    "model.init_std, itself 0.02 by default)")
    ap.add_argument("--sampling", choices=("random", "aligned"), default="random")
    ap.add_argument("--steps", type=int, help="train.steps (the schedule follows)")
    ap.add_argument("--dtype", choices=("f32", "bf16"), help="default: the recipe's train.dtype")
    ap.add_argument("--threads", type=int, default=0, help="default: the recipe's train.threads, "
                    "else PyTorch's own")
    ap.add_argument("--eval-every", type=int, default=0, help="validation every N steps "
                    "(default 0: only at the end)")
    ap.add_argument("--eval-splits", help="splits scored at the end, comma-separated (default: "
                    "valid and test, those the corpus has; '' for none)")
    ap.add_argument("--prepared", help="`rota data prepare` directory (made when missing; "
                    "default runs/reference-data/<hash of the data block>)")
    ap.add_argument("--rota", help="the rota binary (default $ROTA_BINARY, build/rota, PATH)")
    ap.add_argument("--out", help="write the JSON summary here")
    args = ap.parse_args(argv)

    binary = rota_binary(args.rota)
    sets = list(args.set) + ([f"train.steps={args.steps}"] if args.steps is not None else [])
    recipe_text, recipe = resolve_recipe(binary, args.recipe, sets)
    model_block, data, train = (recipe.message(n) for n in ("model", "data", "train"))
    if not train.has("steps"):
        raise SystemExit("train.epochs: give train.steps (or --steps) instead")
    steps, accumulation = train.integer("steps", 0), train.integer("gradient_accumulation", 1)
    length, batch_size = data.integer("sequence_length", 512), data.integer("batch_size", 32)
    seed = args.seed if args.seed is not None else train.integer("seed", 1)
    bf16 = (args.dtype or train.scalar("dtype", "F32").lower()) == "bf16"
    init_std = args.init_std if args.init_std is not None else model_block.number("init_std", 0.02)
    threads = args.threads or train.integer("threads", 0)
    if threads:
        torch.set_num_threads(threads)
    torch.set_flush_denormal(True)

    prepared = prepared_corpus(binary, args.recipe, sets, recipe, args.prepared)
    streams, tokenizer = load_streams(prepared)
    model = build(recipe_text, tokenizer.vocab_size, seed, args.init, init_std)
    optimizer = make_optimizer(model, recipe)
    sampler = WindowSampler(streams["train"], length, batch_size, seed, args.sampling)
    clip, log_every = train.number("grad_clip", 1.0), max(1, train.integer("log_every", 50))
    parameters = sum(p.numel() for p in model.parameters())
    sizes = ", ".join(f"{s} {streams[s].numel()}" for s in ("train", "valid", "test")
                      if s in streams)
    print(f"reference: {args.recipe} seed={seed} init={args.init}"
          f"{f' std={init_std:g}' if args.init == 'normal' else ''} sampling={args.sampling} "
          f"dtype={'bf16' if bf16 else 'f32'} steps={steps} threads={torch.get_num_threads()} "
          f"parameters={parameters} vocabulary={tokenizer.vocab_size} ({tokenizer.kind}) "
          f"ids: {sizes}", flush=True)

    model.train()
    curve, train_seconds, tokens = [], 0.0, 0
    for step in range(1, steps + 1):
        began = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss_value = 0.0
        for _ in range(accumulation):
            ids, targets = sampler.next_batch()
            with autocast(bf16):
                logits = model(ids)
            loss = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())
            (loss / accumulation).backward()
            loss_value += float(loss) / accumulation
            tokens += targets.numel()
        if not math.isfinite(loss_value):
            raise SystemExit(f"loss became {loss_value} at step {step}")
        grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(),
                                                         clip if clip > 0 else math.inf))
        lr = learning_rate(step, recipe.message("schedule"), steps)
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.step()
        train_seconds += time.perf_counter() - began
        if step == 1 or step % log_every == 0 or step == steps:
            curve.append([step, round(loss_value, 5)])
            print(f"step {step}/{steps} | loss {loss_value:.4f} | lr {lr:.3g} | gnorm "
                  f"{grad_norm:.3g} | {tokens / train_seconds:.0f} tok/s", flush=True)
        if args.eval_every and step % args.eval_every == 0 and step != steps:
            loss_v, _ = evaluate(model, streams["valid"], length, bf16)
            print(f"eval step {step}: valid loss {loss_v:.4f} ppl {math.exp(loss_v):.2f}",
                  flush=True)

    summary = dict(recipe=args.recipe, overrides=args.set, seed=seed, init=args.init,
                   init_std=init_std if args.init == "normal" else None, sampling=args.sampling,
                   steps=steps, dtype="bf16" if bf16 else "f32", threads=torch.get_num_threads(),
                   parameters=parameters, tokens_per_s=round(tokens / train_seconds, 1),
                   train_seconds=round(train_seconds, 2), loss_curve=curve)
    splits = ([s for s in ("valid", "test") if s in streams] if args.eval_splits is None
              else [s for s in args.eval_splits.split(",") if s])
    for split in splits:
        if split not in streams:
            raise SystemExit(f"--eval-splits: the corpus has no split {split!r}")
        loss_s, count = evaluate(model, streams[split], length, bf16)
        summary[f"{split}_loss"], summary[f"{split}_ppl"] = loss_s, math.exp(loss_s)
        print(f"split={split} loss={loss_s:.4f} ppl={math.exp(loss_s):.2f} tokens={count} "
              f"step={steps}", flush=True)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(json.dumps(summary) + "\n")
    return summary


if __name__ == "__main__":
    main()
