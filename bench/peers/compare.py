# Runs `rota bench train` and the PyTorch peer alternately; reports Rota/PyTorch throughput ratios.
"""Usage: compare.py [--rota build/rota] [--python PY] [--recipes R ...] [--dtypes f32 bf16]
                     [--modes eager compiled] [--rounds K] [--steps N] [--warmup W]
                     [--threads T] [--peer-blas-dir DIR] [--markdown FILE]

Each round runs, for every recipe and dtype, one Rota run and one PyTorch run per peer mode
(eager; compiled = torch.compile of the model's loss, torch 2.x) back to back; the order
alternates from round to round (Rota first in rounds 1, 3, …, last in rounds 2, 4, …), so slow
drift of the machine hits every side alike. All get OMP_NUM_THREADS=T and the same --steps /
--warmup / --dtype. A ratio is Rota's tokens/s over one peer mode's tokens/s in the same round
(> 1: Rota is faster). The summary gives, per recipe, dtype and mode, the median tokens/s of
each side, the median, min and max of the ratios, and Rota's mfu when its output has one. A
failed run (e.g. a dtype the binary does not support) is reported and leaves that ratio out;
the exit status is then 1.
The peer runs under --python: by default the peers' venv (tools/peers/venv.sh: PyTorch 2.x from
PyPI) when it is complete, else Debian's /usr/bin/python3 (PyTorch 1.13, eager only).
Recipes are paths, or names of recipes/bench/*.txtpb (bench_small, bench_seq2048, …).
--peer-blas-dir DIR puts an OpenBLAS first on the peer's LD_LIBRARY_PATH (Debian's torch
otherwise runs f32 matmuls on the netlib reference BLAS; README.md).
"""
import argparse
import datetime
import itertools
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
PEER = os.path.join(HERE, "torch_bench.py")
PEERS_VENV = os.path.join(REPO, "tools", "peers", "venv.sh")


def default_python():
    """The peers' venv python when that venv is complete, else Debian's python3."""
    check = subprocess.run([PEERS_VENV, "--check"], capture_output=True)
    if check.returncode == 0:
        path = subprocess.run([PEERS_VENV, "--path"], capture_output=True, text=True).stdout
        return os.path.join(path.strip(), "bin", "python")
    return "/usr/bin/python3"


def recipe_path(name):
    if os.path.exists(name):
        return name
    candidate = os.path.join(REPO, "recipes", "bench", name if name.endswith(".txtpb")
                             else name + ".txtpb")
    if not os.path.exists(candidate):
        sys.exit(f"compare.py: no recipe '{name}' (neither a path nor recipes/bench/{name}.txtpb)")
    return candidate


def parse_fields(text):
    """All key=value words of the output (later lines win): tokens_per_s, step_ms, mfu, …"""
    fields = {}
    for line in text.splitlines():
        for word in line.split():
            key, eq, value = word.partition("=")
            if eq and key:
                fields[key] = value
    return fields


def run(command, threads, timeout, library_dir=None):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    if library_dir:
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (library_dir, os.environ.get("LD_LIBRARY_PATH")) if p)
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    fields = parse_fields(done.stdout)
    if done.returncode != 0 or "tokens_per_s" not in fields:
        lines = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()
        return None, f"exit {done.returncode}: {lines[-1]}"
    return fields, None


def number(value):
    """'0.123' → 0.123, '12.3%' → 12.3 (the suffix is kept by the caller)."""
    return float(value.rstrip("%"))


def summarise(results, recipes, dtypes, modes):
    """Rows of the summary table, one per (recipe, dtype, peer mode)."""
    rows = []
    for recipe, dtype, mode in itertools.product(recipes, dtypes, modes):
        pairs = [r for r in results
                 if r["recipe"] == recipe and r["dtype"] == dtype and r["mode"] == mode]
        good = [r for r in pairs if r["rota"] and r["torch"]]
        name = os.path.basename(recipe).removesuffix(".txtpb")
        row = {"recipe": name, "dtype": dtype, "mode": mode,
               "pairs": f"{len(good)}/{len(pairs)}"}
        if good:
            ratios = [r["ratio"] for r in good]
            row.update(
                rota=statistics.median(number(r["rota"]["tokens_per_s"]) for r in good),
                torch=statistics.median(number(r["torch"]["tokens_per_s"]) for r in good),
                median=statistics.median(ratios), min=min(ratios), max=max(ratios))
            mfus = [r["rota"]["mfu"] for r in good if "mfu" in r["rota"]]
            if mfus:
                suffix = "%" if mfus[0].endswith("%") else ""
                row["mfu"] = f"{statistics.median(number(m) for m in mfus):.4g}{suffix}"
        errors = sorted({e for r in pairs for e in r["errors"]})
        if errors:
            row["errors"] = "; ".join(errors)
        rows.append(row)
    return rows


HEADER = ["recipe", "dtype", "PyTorch mode", "pairs", "Rota tok/s", "PyTorch tok/s",
          "ratio median", "ratio min", "ratio max", "Rota mfu"]


def table_cells(row):
    def fmt(key, spec):
        return format(row[key], spec) if key in row else "–"
    return [row["recipe"], row["dtype"], row["mode"], row["pairs"], fmt("rota", ".1f"),
            fmt("torch", ".1f"),
            fmt("median", ".3f"), fmt("min", ".3f"), fmt("max", ".3f"), row.get("mfu", "–")]


def print_table(rows):
    cells = [HEADER] + [table_cells(r) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(HEADER))]
    for c in cells:
        print("  ".join(x.ljust(w) for x, w in zip(c, widths)))
    for r in rows:
        if "errors" in r:
            print(f"{r['recipe']} {r['dtype']} {r['mode']}: failed runs: {r['errors']}")


def write_markdown(path, rows, args, torch_version):
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"Rota vs PyTorch peer ({datetime.date.today().isoformat()}): {args.rounds} "
                f"round(s), {args.steps} timed steps after {args.warmup} warm-up, "
                f"OMP_NUM_THREADS={args.threads}, `{args.rota}`, PyTorch {torch_version}. "
                "Ratio = Rota tokens/s ÷ PyTorch tokens/s per pair (> 1: Rota faster).\n\n")
        f.write("| " + " | ".join(HEADER) + " |\n")
        f.write("|" + "|".join("---" if i < 3 else "--:" for i in range(len(HEADER))) + "|\n")
        for r in rows:
            f.write("| " + " | ".join(table_cells(r)) + " |\n")
        for r in rows:
            if "errors" in r:
                f.write(f"\n{r['recipe']} {r['dtype']} {r['mode']}: failed runs: {r['errors']}\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rota", default=os.path.join(REPO, "build", "rota"),
                        help="the rota binary (default: build/rota of this tree)")
    parser.add_argument("--python", help="runs torch_bench.py (default: the peers' venv python "
                        "when complete, else /usr/bin/python3)")
    parser.add_argument("--recipes", nargs="+", default=["bench_small"])
    parser.add_argument("--dtypes", nargs="+", default=["f32"], choices=("f32", "bf16"))
    parser.add_argument("--modes", nargs="+", choices=("eager", "compiled"),
                        help="peer modes (default: eager compiled, eager alone on torch 1.x)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds (one ratio per recipe, dtype and mode each)")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS") or 2))
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per run")
    parser.add_argument("--peer-blas-dir", metavar="DIR",
                        help="put DIR (holding an OpenBLAS libblas.so.3) first on the peer's "
                             "LD_LIBRARY_PATH; default: whatever BLAS torch finds")
    parser.add_argument("--markdown", metavar="FILE", help="also write the summary table here")
    args = parser.parse_args()
    if not os.access(args.rota, os.X_OK):
        sys.exit(f"compare.py: {args.rota} is not an executable rota binary (--rota)")
    recipes = [recipe_path(r) for r in args.recipes]
    common = ["--steps", str(args.steps), "--warmup", str(args.warmup)]

    python = args.python or default_python()
    torch_major = subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                                 capture_output=True, text=True).stdout.strip().split(".")[0]
    modes = args.modes or (["eager", "compiled"] if torch_major not in ("", "1") else ["eager"])
    if "compiled" in modes and args.warmup < 1:
        sys.exit("compare.py: the compiled mode needs --warmup >= 1 (its first step compiles)")

    results, torch_version, torch_blas = [], "?", "?"
    for round_index in range(args.rounds):
        for recipe in recipes:
            for dtype in args.dtypes:
                commands = {"rota": [args.rota, "bench", "train", recipe] + common +
                            ["--dtype", dtype]}
                for mode in modes:
                    commands[mode] = ([python, PEER, recipe] + common + ["--dtype", dtype] +
                                      (["--compile"] if mode == "compiled" else []))
                order = list(commands) if round_index % 2 == 0 else list(commands)[::-1]
                fields, errors = {}, {}
                for side in order:
                    fields[side], errors[side] = run(
                        commands[side], args.threads, args.timeout,
                        args.peer_blas_dir if side != "rota" else None)
                for mode in modes:
                    pair = {"recipe": recipe, "dtype": dtype, "mode": mode, "ratio": None,
                            "rota": fields["rota"], "torch": fields[mode],
                            "errors": [f"{side}: {errors[side]}" for side in ("rota", mode)
                                       if errors[side]]}
                    if pair["torch"]:
                        torch_version = pair["torch"].get("peer", "?").replace("pytorch-", "")
                        torch_blas = pair["torch"].get("blas", "?")
                    if pair["rota"] and pair["torch"]:
                        pair["ratio"] = (number(pair["rota"]["tokens_per_s"]) /
                                         number(pair["torch"]["tokens_per_s"]))
                        if pair["rota"].get("threads") != pair["torch"].get("threads"):
                            print(f"warning: Rota ran {pair['rota'].get('threads')} threads, "
                                  f"PyTorch {pair['torch'].get('threads')} (train.threads?)")
                    results.append(pair)

                def show(side):
                    f = fields[side]
                    if not f:
                        return "failed"
                    extra = f" mfu={f['mfu']}" if "mfu" in f else ""
                    return f"{f['tokens_per_s']} tok/s ({f.get('step_ms', '?')} ms){extra}"
                ratios = " ".join(
                    f"{r['mode']} {r['ratio']:.3f}" if r["ratio"] else f"{r['mode']} –"
                    for r in results[-len(modes):])
                print(f"round {round_index + 1}/{args.rounds} {os.path.basename(recipe)} {dtype} "
                      f"({' then '.join(order)}): rota {show('rota')} | "
                      + " | ".join(f"pytorch {m} {show(m)}" for m in modes)
                      + f" | ratio {ratios}", flush=True)
                for side in order:
                    if errors[side]:
                        print(f"  {side}: {errors[side]}", flush=True)

    rows = summarise(results, recipes, args.dtypes, modes)
    print(f"\nPyTorch {torch_version}, BLAS {torch_blas}")
    print_table(rows)
    if args.markdown:
        write_markdown(args.markdown, rows, args, f"{torch_version} (BLAS {torch_blas})")
        print(f"wrote {args.markdown}")
    sys.exit(1 if any(r["errors"] for r in results) else 0)


if __name__ == "__main__":
    main()
