#!/usr/bin/env python3
"""Compares the loss curves of two Rota runs (e.g. f32 vs bf16 of one recipe).

Reads <run>/metrics.jsonl of both runs and prints, per logged step, the train loss of each and
their difference, then the validation losses, and a summary: the largest |difference| over all
train steps, over the last quarter of training (where the curves should agree best), and of the
final validation loss. Exit status 1 when --max-final-val-diff is given and exceeded.

  python3 bench/compare_loss_curves.py runs/default-f32 runs/default-bf16 [--markdown]
"""
import argparse
import json
import sys


def read_metrics(run_dir):
    train, val = {}, {}
    with open(f"{run_dir}/metrics.jsonl") as f:
        for line in f:
            row = json.loads(line)
            if "loss" not in row:
                continue
            split = row.get("split")
            if split == "train":
                train[row["step"]] = row["loss"]
            elif split in ("val", "validation", "valid"):
                val[row["step"]] = row["loss"]
    return train, val


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference", help="run directory of the reference run (f32)")
    parser.add_argument("other", help="run directory of the compared run (bf16)")
    parser.add_argument("--markdown", action="store_true", help="print markdown tables")
    parser.add_argument("--max-final-val-diff", type=float, default=None,
                        help="fail (exit 1) when the final validation losses differ by more")
    args = parser.parse_args()
    ref_train, ref_val = read_metrics(args.reference)
    oth_train, oth_val = read_metrics(args.other)
    steps = sorted(set(ref_train) & set(oth_train))
    if not steps:
        sys.exit("no common train steps in the two metrics.jsonl files")
    sep = " | " if args.markdown else "  "
    edge = "| " if args.markdown else ""
    end = " |" if args.markdown else ""

    def row(*cells):
        print(edge + sep.join(str(c) for c in cells) + end)

    row("step", "train loss (ref)", "train loss (other)", "difference")
    if args.markdown:
        row("--:", "--:", "--:", "--:")
    for s in steps:
        row(s, f"{ref_train[s]:.4f}", f"{oth_train[s]:.4f}", f"{oth_train[s] - ref_train[s]:+.4f}")
    val_steps = sorted(set(ref_val) & set(oth_val))
    if val_steps:
        print()
        row("step", "val loss (ref)", "val loss (other)", "difference")
        if args.markdown:
            row("--:", "--:", "--:", "--:")
        for s in val_steps:
            row(s, f"{ref_val[s]:.4f}", f"{oth_val[s]:.4f}", f"{oth_val[s] - ref_val[s]:+.4f}")
    diffs = [abs(oth_train[s] - ref_train[s]) for s in steps]
    late = [abs(oth_train[s] - ref_train[s]) for s in steps if s >= steps[-1] * 3 / 4]
    print()
    print(f"max |train difference|: {max(diffs):.4f} (all {len(steps)} logged steps), "
          f"{max(late):.4f} (last quarter); mean |difference| {sum(diffs) / len(diffs):.4f}")
    if val_steps:
        final = oth_val[val_steps[-1]] - ref_val[val_steps[-1]]
        print(f"final validation loss: {ref_val[val_steps[-1]]:.4f} vs {oth_val[val_steps[-1]]:.4f} "
              f"({final:+.4f})")
        if args.max_final_val_diff is not None and abs(final) > args.max_final_val_diff:
            print(f"FAIL: |final validation difference| > {args.max_final_val_diff}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
