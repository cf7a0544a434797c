# `rota bench train` for the PyTorch peer: times full training steps of a recipe, same output.
"""Usage: torch_bench.py RECIPE [--steps N] [--warmup W] [--dtype f32|bf16] [--compile]

Each step: zero grads, forward + loss on a fresh random batch of the recipe's shape, backward,
global-norm clip (train.grad_clip), AdamW (foreach) over Rota's decay groups. bf16 runs the
forward and backward under torch.autocast('cpu', dtype=torch.bfloat16) with f32 master weights.
--compile (torch 2.x) runs the model's loss through torch.compile (TorchInductor's CPU code,
default mode): the forward and backward graphs are compiled during the first warm-up step, which
therefore is not timed (--warmup must be >= 1); the optimizer step stays eager (AdamW foreach).
The step time excludes drawing the random batch (Rota's excludes nothing, but its batch is a
slice of a pre-tokenised stream). Threads: OMP_NUM_THREADS, else 2 (also OPENBLAS_NUM_THREADS
unless set). f32 matmuls go through the BLAS torch loads; Debian's torch is built with
BLAS_INFO=generic, which resolves to the netlib reference BLAS unless an OpenBLAS comes first
on LD_LIBRARY_PATH (the first line names the library: blas=…). bf16 matmuls use oneDNN.

Output (stdout), as `rota bench train`:
  recipe=NAME threads=T steps=N tokens_per_step=K peer=pytorch-VERSION dtype=D mode=M blas=PATH
  tokens_per_s=… step_ms=… gflops=…
with step_ms the median timed step (the upper median for an even count, as Rota) and gflops
from the same analytic FLOP count as models/model_flops.cpp. Per-step lines go to stderr.
"""
import argparse
import contextlib
import os
import sys
import time

# Before torch loads its BLAS: an OpenBLAS put first on LD_LIBRARY_PATH (README) sizes its
# thread pool from this at load time.
THREADS = int(os.environ.get("OMP_NUM_THREADS") or 2)
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(THREADS))

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rota_models  # noqa: E402


def blas_library():
    """The BLAS torch's f32 matmuls go through: the one built into torch (PyPI's wheels link MKL
    statically: BLAS_INFO=mkl), else the shared library this process loaded (Debian's torch is
    built with BLAS_INFO=generic and calls whatever libblas.so.3 the loader found)."""
    config = torch.__config__.show()
    info = next((word.split("=", 1)[1].rstrip(",") for word in config.split()
                 if word.startswith("BLAS_INFO=")), "generic")
    if info != "generic":
        return f"{info}(built-in)"
    with open("/proc/self/maps", encoding="utf-8") as maps:
        paths = {line.split()[-1] for line in maps if "blas" in line.rsplit("/", 1)[-1]}
    return sorted(paths)[0] if paths else "none"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipe")
    parser.add_argument("--steps", type=int, default=10, help="timed steps (default 10)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first (default 2)")
    parser.add_argument("--dtype", choices=("f32", "bf16"), default="f32")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--compile", action="store_true",
                        help="torch.compile the model's loss (torch 2.x; needs --warmup >= 1)")
    args = parser.parse_args()
    if args.steps < 1 or args.warmup < 0:
        parser.error("--steps must be >= 1 and --warmup >= 0")
    if args.compile and (args.warmup < 1 or not hasattr(torch, "compile")):
        parser.error("--compile needs torch 2.x and --warmup >= 1 (the first step compiles)")

    threads = THREADS
    torch.set_num_threads(threads)
    torch.set_flush_denormal(True)

    cfg = rota_models.PeerConfig.from_recipe(args.recipe)
    model = rota_models.build_model(cfg, seed=args.seed)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = rota_models.make_optimizer(model, cfg)
    gen = torch.Generator().manual_seed(args.seed)
    loss_of = torch.compile(model.loss) if args.compile else model.loss

    def precision():
        if args.dtype == "bf16":
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    blas = blas_library()
    if "/blas/libblas" in blas:
        print(f"warning: torch's BLAS is the netlib reference ({blas}): f32 matmuls run "
              "unoptimised; put an OpenBLAS first on LD_LIBRARY_PATH (bench/peers/README.md)",
              file=sys.stderr)

    total = args.warmup + args.steps
    step_seconds = []
    for i in range(total):
        batch = rota_models.random_batch(cfg, gen)
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        with precision():
            loss = loss_of(batch)
        loss.backward()
        rota_models.clip_grad_norm(params, cfg.grad_clip)
        optimizer.step()
        seconds = time.perf_counter() - start
        if i >= args.warmup:
            step_seconds.append(seconds)
        print(f"bench step {i + 1}/{total}{' (warm-up)' if i < args.warmup else ''}: "
              f"{seconds * 1e3:.1f} ms, loss {loss.item():.4f}", file=sys.stderr, flush=True)

    median = sorted(step_seconds)[len(step_seconds) // 2]
    tokens = cfg.tokens_per_step
    flops = rota_models.training_flops_per_token(cfg) * tokens
    print(f"recipe={cfg.name} threads={threads} steps={args.steps} tokens_per_step={tokens} "
          f"peer=pytorch-{torch.__version__} dtype={args.dtype} "
          f"mode={'compiled' if args.compile else 'eager'} blas={blas}")
    print(f"tokens_per_s={tokens / median:.1f} step_ms={median * 1e3:.2f} "
          f"gflops={flops / median / 1e9:.2f}")


if __name__ == "__main__":
    main()
