# Runs every command shown in README.md and docs/*.md (cut down), or checks it, or names its test.
"""How a documented command is accounted for (exactly one way each; anything else fails):

- Synopsis lines (a code block with `[--option ...]` groups) are checked against the
  subcommand's `--help`: each option shown exists, takes a value or not as shown, is required
  exactly when shown outside brackets, and the positionals match. Across all docs, every option
  of every subcommand must be shown in some synopsis.
- `RUNS[doc]` lists the commands that run for real, in document order, in one scratch directory
  per doc (links to the repository's recipes/, bench/, framework/ and the build directory), with
  placeholders replaced by stand-ins and cut-down overrides appended (a few training steps, one
  layer, short sequences, one evaluation batch). Exit codes, the outputs the docs state
  (`# last line: …`, `# → runs/x`, a `$ ` command's shown output) and named files are checked.
- `OPTIONS_ONLY` lists commands of other programs that cannot run here: each `--option` they show
  must appear in that program's `--help`.
- `ELSEWHERE` lists the commands another test runs, or that cannot run here, with the reason;
  the file named must exist and contain the fragments given, and a command a covering test reads
  from a section of the doc must lie inside that section.

ROTA_BINARY, ROTA_REPO, ROTA_SHARED (data in ROTA_SHARED/data) and ROTA_MPIEXEC (absent: the
build has no MPI, and `mpirun ...` lines run as one process) come from CTest. One CTest test per
doc runs `DocCommands.test_<doc path as an identifier>`; with no argument every doc runs.
"""
import dataclasses
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.environ.get("ROTA_REPO", os.path.join(HERE, "..", "..")))
BINARY = os.path.abspath(os.environ.get("ROTA_BINARY", os.path.join(REPO, "build", "rota")))
SHARED = os.path.abspath(os.environ.get("ROTA_SHARED", os.path.join(REPO, "..", "shared")))
MPIEXEC = os.environ.get("ROTA_MPIEXEC", "")
COMMAND_TIMEOUT = 600

# ---------------------------------------------------------------------------------------------
# Finding the commands of a doc.

PROGRAMS = (r"rota|build/rota|mpirun|make|cmake|ninja|ctest|python3|/usr/bin/python3|"
            r"\.venv/bin/\S+|pip|apt-get|protoc|fuzz/\S+|build-fuzz/\S+|build/bench/\S+|cd|"
            r"for \w+ in .*; do")
ENV_PREFIX = r"(?:[A-Z_][A-Z0-9_]*=\S+\s+)*"
COMMAND = re.compile(rf"{ENV_PREFIX}(?:{PROGRAMS})(?:\s|$)", re.S)
ASSIGNMENT = re.compile(r"""[A-Z_][A-Z0-9_]*=(?:"[^"]*"|'[^']*'|\S*)$""")
# Blocks in these languages hold code or data, not shell commands (the Python ones run in
# tests/python/test_python_docs.py and test_native_docs.py).
CODE_LANGUAGES = {"python", "cpp", "json", "protobuf"}


@dataclasses.dataclass
class DocCommand:
    doc: str            # path relative to the repository
    line: int           # first line of the command in the doc
    text: str           # the command: prompt, continuations and trailing comment removed
    comment: str        # the trailing `# comment`, without '#'
    synopsis: bool      # in a block of usage lines (`[--option ...]`)
    shown_output: list  # lines shown after a `$ ` command, up to the next prompt

    @property
    def key(self):
        return normalise(self.text)


def normalise(text):
    return " ".join(text.split())


def quotes_open(text):
    try:
        shlex.split(text)
        return False
    except ValueError:
        return True


def strip_comment(text):
    """(command, comment): a '#' after whitespace and outside quotes starts the comment."""
    quote = None
    for i, char in enumerate(text):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or text[i - 1].isspace()):
            return text[:i].rstrip(), text[i + 1:].strip()
    return text.rstrip(), ""


def fenced_blocks(path):
    """(language, [(line number, text)]) of every ``` block."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    block, language = None, ""
    for number, line in enumerate(lines, 1):
        fence = line.strip()
        if fence.startswith("```"):
            if block is None:
                block, language = [], fence[3:].strip()
            else:
                yield language, block
                block = None
        elif block is not None:
            block.append((number, line))


def block_commands(doc, block):
    """The command lines of one block, continuations joined."""
    prompts = any(line.startswith("$ ") for _, line in block)
    synopsis = any("[--" in line or "]..." in line for _, line in block)
    found, i = [], 0
    while i < len(block):
        number, line = block[i]
        i += 1
        if prompts:
            if not line.startswith("$ "):
                if found:
                    found[-1].shown_output.append(line)
                continue
            line = line[2:]
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        while (text.endswith("\\") or quotes_open(text)) and i < len(block):
            following = block[i][1]
            i += 1
            if text.endswith("\\"):
                text = text[:-1].rstrip() + " " + following.strip()
            else:
                text += "\n" + following
        text, comment = strip_comment(text)
        if COMMAND.match(text) or ASSIGNMENT.match(text):
            found.append(DocCommand(doc, number, text, comment, synopsis, []))
    return found


def doc_commands(doc):
    commands = []
    for language, block in fenced_blocks(os.path.join(REPO, doc)):
        if language not in CODE_LANGUAGES:
            commands += block_commands(doc, block)
    return commands


def all_docs():
    docs = sorted(os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, "docs", "*.md")))
    return ["README.md"] + docs


def test_name(doc):
    return "test_" + re.sub(r"[^0-9A-Za-z]", "_", doc)


# ---------------------------------------------------------------------------------------------
# How each command is accounted for.

@dataclasses.dataclass(frozen=True)
class Run:
    """Runs the command in the doc's scratch directory, cut down."""
    stand_ins: tuple = ()     # (placeholder, concrete) pairs for this command, besides the doc's
    cut_down: tuple = ()      # (field, value) pairs set last (over the default and the doc)
    extra: str = ""           # arguments appended (e.g. an --out keeping alternatives apart)
    before: tuple = ()        # shell commands that make what the doc assumes exists
    exit_code: int = 0
    expect: tuple = ()        # regular expressions the output must contain
    files: tuple = ()         # paths that must exist afterwards
    after: tuple = ()         # shell commands that must succeed afterwards (checks)
    as_written: bool = False  # no cut-down (the command trains nothing)
    needs: str = ""           # a path of the build the command needs; without it, `otherwise`
    otherwise: object = None  # an Elsewhere, used when `needs` is missing


@dataclasses.dataclass(frozen=True)
class Elsewhere:
    """Another test runs the command, or it cannot run here: why, and the file that shows it."""
    reason: str
    path: str = ""            # a file of the repository (a test that runs it, or its definition)
    contains: tuple = ()      # fragments that file must contain
    section: tuple = ()       # (start, end): the command must lie between lines starting so


@dataclasses.dataclass(frozen=True)
class OptionsOnly:
    """Cannot run here; every --option shown must be in `help_command`'s output."""
    reason: str
    help_command: str


TINY = "recipes/tests/tiny_causal_lm.txtpb"

# The cut-down every `rota train` gets (also each run of `rota ablate`), unless the command sets
# the field itself: a few steps, one layer, short sequences, one validation batch at the end.
TRAIN_CUT_DOWN = (("train.steps", "3"), ("schedule.warmup_steps", "1"), ("train.eval_every", "0"),
                  ("train.eval_batches", "1"), ("model.layers", "1"),
                  ("data.sequence_length", "32"), ("data.batch_size", "4"))
ABLATE_CUT_DOWN = (("data.sequence_length", "16"), ("data.batch_size", "2"))
OTHER_CUT_DOWN = {
    "eval": "--batches 2",
    "bench train": "--steps 2 --warmup 1",
    "ablate": "--eval-batches 1",
}
BENCHMARK_CUT_DOWN = "--benchmark_min_time=0.01"  # Google Benchmark: the last flag wins

# Doc-wide stand-ins for placeholders (a Run's own stand_ins come first).
STAND_INS = {
    "README.md": (("RECIPE", TINY), ("DIR", "prepared/tiny")),
    "docs/distributed.md": (("RECIPE", TINY),),
}

RUNS = {
    "README.md": {
        "make train": Run(expect=(r"---- sample",), files=("runs/default/metrics.jsonl",)),
        "build/rota train recipes/causal_lm/wikitext2_lrpe_type2.txtpb": Run(),
        # The lines with RECIPE are alternatives: other tiny recipes keep their runs apart, and
        # the resumed one was interrupted first.
        "build/rota train RECIPE --set model.layers=6 --set schedule.lr=5e-4": Run(
            stand_ins=(("RECIPE", "recipes/tests/tiny_softmax_lm.txtpb"),),
            expect=(r"run=runs/tiny-softmax-lm",)),
        "build/rota train RECIPE --resume": Run(
            before=(f"build/rota train {TINY} --stop-after 1 "
                    + " ".join(f"--set {f}={v}" for f, v in TRAIN_CUT_DOWN),),
            expect=(r"resumed from runs/tiny-causal-lm/checkpoints/step_000001 at step 1",)),
        "build/rota eval runs/wikitext2-lrpe-type2 --split test": Run(),
        "build/rota generate runs/default --prompt \"ROMEO:\" --tokens 300 --temperature 0.8 "
        "--top-k 40": Run(expect=(r"ROMEO:",)),
        "build/rota train recipes/masked_lm/wikitext2_lrpe.txtpb": Run(),
        "build/rota train recipes/classifier/sst2_from_mlm.txtpb": Run(
            expect=(r"accuracy=", r"run=runs/sst2-from-mlm-wikitext2-lrpe")),
        "build/rota train recipes/linearize/wikitext2_lrpe_transfer.txtpb": Run(
            before=("build/rota train recipes/linearize/wikitext2_softmax_rope.txtpb "
                    + " ".join(f"--set {f}={v}" for f, v in TRAIN_CUT_DOWN),),
            expect=(r"transfer_mse_block0=", r"run=runs/wikitext2-lrpe-transfer")),
        "build/rota data list": Run(expect=(r"tinyshakespeare", r"wikitext-2")),
        "build/rota data prepare RECIPE --out DIR": Run(
            files=("prepared/tiny/manifest.json",),
            after=("build/rota data verify prepared/tiny",)),
        "build/rota bench train recipes/bench/bench_small.txtpb --dtype bf16": Run(
            expect=(r"dtype=bf16", r"tokens_per_s=\S+ step_ms=\S+ gflops=\S+ mfu=\S+")),
        "build/rota train RECIPE --set train.dtype=BF16": Run(
            stand_ins=(("RECIPE", "recipes/tests/tiny_masked_lm.txtpb"),),
            expect=(r"run=runs/tiny-masked-lm",)),
        "mpirun --allow-run-as-root -np 2 build/rota train RECIPE": Run(
            stand_ins=(("RECIPE", "recipes/tests/tiny_classifier.txtpb"),),
            expect=(r"run=runs/tiny-classifier",)),
    },
    "docs/ablations.md": {
        # Into a copy of the committed report: the rebuilt files equal the committed ones.
        "build/rota ablate recipes/ablations/encodings_causal.txtpb --from-csv "
        "docs/ablations/encodings-causal/results.csv --out docs/ablations/encodings-causal": Run(
            as_written=True,
            before=('mkdir -p docs/ablations && cp -r "$ROTA_REPO/docs/ablations/encodings-causal" '
                    "docs/ablations/",),
            expect=(r"24 of 24 runs finished",),
            after=tuple(f'cmp docs/ablations/encodings-causal/{name} '
                        f'"$ROTA_REPO/docs/ablations/encodings-causal/{name}"'
                        for name in ("results.csv", "extrapolation.svg")) + (
                "diff <(grep -v Generated docs/ablations/encodings-causal/results.md) "
                '<(grep -v Generated "$ROTA_REPO/docs/ablations/encodings-causal/results.md")',)),
        # runs/x: a model with learned absolute positions trained at 256 tokens.
        "rota eval runs/x --context 512": Run(
            before=(f"rota train {TINY} --out runs/x --set train.steps=2 --set train.eval_every=0 "
                    "--set train.eval_batches=1 --set data.sequence_length=256 "
                    "--set 'model.position={learned_absolute {max_positions: 256}}'",),
            exit_code=2),
        "build/rota ablate recipes/ablations/encodings_causal.txtpb --jobs 2": Run(
            expect=(r"24 of 24 runs finished, 0 failed",),
            files=("runs/ablations/encodings-causal/results.md",)),
        "build/rota ablate recipes/ablations/p_matrix.txtpb --jobs 2": Run(
            expect=(r"36 of 36 runs finished, 0 failed",),
            files=("runs/ablations/p-matrix/results.md",)),
        # Two shards "on two machines", then the merge over their records, which trains nothing
        # and reports every run (cut down like the shards, so the records answer its plan).
        "build/rota ablate recipes/ablations/init_schemes_300_steps.txtpb --shard 1/2 --out "
        "runs/init-a": Run(expect=(r"5 of 9 runs finished, 0 failed, 0 unfinished, 4 left to other shards;",),
                          files=("runs/init-a/records/normal/seed1.json",)),
        "build/rota ablate recipes/ablations/init_schemes_300_steps.txtpb --shard 2/2 --out "
        "runs/init-b": Run(expect=(r"4 of 9 runs finished, 0 failed, 0 unfinished, 5 left to other shards;",),
                          files=("runs/init-b/records/normal/seed2.json",)),
        "build/rota ablate recipes/ablations/init_schemes_300_steps.txtpb --records "
        "runs/init-a/records --records runs/init-b/records --out runs/init": Run(
            expect=(r"9 of 9 runs finished, 0 failed, 0 unfinished;",),
            after=("test ! -e runs/init/runs", "grep -q '9 of them were read from run records' "
                   "runs/init/results.md")),
        # Four blocks, so that the hybrid's every-fourth block exists.
        "build/rota ablate recipes/ablations/decay_gating.txtpb --jobs 2": Run(
            cut_down=(("model.layers", "4"),),
            expect=(r"33 of 33 runs finished, 0 failed",),
            files=("runs/ablations/decay-gating/results.md",)),
    },
    "docs/checkpoints.md": {
        "protoc --decode=rota.io.TrainState -I framework/io framework/io/train_state.proto "
        "< runs/NAME/checkpoints/step_000500/state.binpb": Run(
            stand_ins=(("step_000500", "step_000003"),),
            before=(f"build/rota train {TINY} --out runs/NAME "
                    + " ".join(f"--set {f}={v}" for f, v in TRAIN_CUT_DOWN),),
            expect=(r"(?m)^step: 3$", r"crc32c: \d+")),
    },
    "docs/long-context.md": {
        "build/rota bench train recipes/bench/bench_small.txtpb --set train.recompute_blocks=true":
            Run(expect=(r"peak_tensor_mb=\S+ step_bytes_per_token=\d+",
                        r"tokens_per_s=\S+ step_ms=\S+ gflops=\S+ mfu=\S+")),
        # The 64k run, cut down (32-token windows); then its per-position evaluation.
        "build/rota train recipes/experiments/long_context_64k.txtpb": Run(
            files=("runs/long-context-64k/checkpoints/latest",)),
        "build/rota eval runs/long-context-64k --split test --by-position": Run(
            expect=(r"positions=1-1 tokens=\d+ loss=\S+", r"split=test loss=\S+ ppl=\S+")),
        # Stateful training (lanes carrying the state), and its evaluation in lanes.
        "build/rota train recipes/tests/tiny_causal_lm.txtpb --out runs/tiny-stateful "
        "--set train.carry_state=true": Run(expect=(r"split=valid loss=\S+ ppl=\S+",)),
        "build/rota eval runs/tiny-stateful --split test --by-position": Run(
            expect=(r"positions=1-1 tokens=\d+ loss=\S+", r"split=test loss=\S+ ppl=\S+")),
        # Packed documents: every line of Tiny Shakespeare a document.
        "build/rota train recipes/tests/tiny_causal_lm.txtpb --out runs/tiny-lines "
        "--set 'data.document_separator=\"\\n\"'": Run(expect=(r"split=valid loss=\S+ ppl=\S+",)),
        # Packed documents the source marks: every paragraph (speech) a document.
        "build/rota train recipes/tests/tiny_causal_lm.txtpb --out runs/tiny-speeches "
        "--set data.documents=PARAGRAPHS": Run(expect=(r"split=valid loss=\S+ ppl=\S+",)),
        # The 1M-token sequence cut to 32,768 tokens: four segments of 8,192.
        "build/rota bench train recipes/bench/bench_small_1m.txtpb --steps 1 --warmup 0 --dtype bf16":
            Run(cut_down=(("data.sequence_length", "32768"),),
                expect=(r"tokens_per_step=32768 dtype=bf16",
                        r"peak_tensor_mb=\S+ step_bytes_per_token=\d+",
                        r"tokens_per_s=\S+ step_ms=\S+ gflops=\S+ mfu=\S+")),
    },
    "docs/distributed.md": {
        # Interrupted, so that the next line resumes it.
        "mpirun -np 2 rota train recipes/causal_lm/wikitext2_lrpe_type2.txtpb": Run(
            extra="--stop-after 1", expect=(r"stopped at step 1/3",)),
        "mpirun -np 2 rota train RECIPE --resume": Run(
            stand_ins=(("RECIPE", "recipes/causal_lm/wikitext2_lrpe_type2.txtpb"),),
            expect=(r"resumed from runs/wikitext2-lrpe-type2/checkpoints/step_000001",
                    r"step=3 run=runs/wikitext2-lrpe-type2")),
        "rota train RECIPE": Run(expect=(r"run=runs/tiny-causal-lm",)),
        # 2 cores here: one core and thread per rank instead of 8.
        "mpirun -np 2 --map-by slot:PE=8 rota train RECIPE --set train.threads=8": Run(
            stand_ins=(("slot:PE=8", "slot:PE=1"), ("train.threads=8", "train.threads=1")),
            extra="--out runs/pe", expect=(r"run=runs/pe",)),
        "mpirun -np 2 --bind-to none rota train RECIPE": Run(
            extra="--out runs/unbound", expect=(r"run=runs/unbound",)),
        'S="--set train.steps=25 --set train.threads=1 --set train.log_every=1 '
        '--set train.eval_every=0 --set train.eval_batches=1"': Run(),
        # 7 steps (the medians below skip the first 5) of sequences of 64.
        "OMP_NUM_THREADS=1 build/rota train recipes/bench/bench_small.txtpb $S --out /tmp/scale1":
            Run(cut_down=(("train.steps", "7"), ("data.sequence_length", "64")),
                files=("tmp/scale1/metrics.jsonl",)),
        "OMP_NUM_THREADS=1 mpirun -np 2 build/rota train recipes/bench/bench_small.txtpb $S "
        "--out /tmp/scale2": Run(cut_down=(("train.steps", "7"), ("data.sequence_length", "64")),
                                 files=("tmp/scale2/metrics.jsonl",)),
        "for run in /tmp/scale1 /tmp/scale2; do python3 -c ' import json, statistics, sys "
        "lines = [json.loads(l) for l in open(sys.argv[1] + \"/metrics.jsonl\")] "
        "train = [l for l in lines if l[\"split\"] == \"train\" and l[\"step\"] > 5] "
        "print(sys.argv[1], \"tokens/s\", round(statistics.median(l[\"tokens_per_s\"] for l in "
        "train)), \"allreduce s/step\", statistics.median(l.get(\"allreduce_s\", 0) for l in "
        "train))' $run; done": Run(
            expect=(r"/scale1 tokens/s \d+ allreduce s/step 0(\.0)?\n",
                    r"/scale2 tokens/s \d+ allreduce s/step [0-9.e-]+\n")),
    },
    "docs/performance.md": {
        # Asks ninja about the target instead of building it (the test must not rebuild).
        "ninja -C build linear_attention_bench": Run(
            stand_ins=(("-C build", "-C build -t query"),),
            expect=(r"linear_attention_bench:",), needs="build/bench/linear_attention_bench",
            otherwise=Elsewhere("the build has no benchmarks (ROTA_BUILD_BENCH=OFF or not built "
                                "yet); bench/CMakeLists.txt builds every *_bench.cpp",
                                "bench/linear_attention_bench.cpp", ("BM_LrpeKernel",))),
        "OMP_NUM_THREADS=2 build/bench/linear_attention_bench "
        "--benchmark_filter='Lrpe(Kernel|Fused)' --benchmark_min_time=0.5": Run(
            expect=(r"BM_LrpeKernel", r"BM_LrpeFused"), needs="build/bench/linear_attention_bench",
            otherwise=Elsewhere("the build has no benchmarks (ROTA_BUILD_BENCH=OFF)",
                                "bench/linear_attention_bench.cpp", ("BM_LrpeKernel",))),
        "ROTA_MAX_CPU_ISA=avx2 OMP_NUM_THREADS=2 build/bench/linear_attention_bench "
        "--benchmark_filter=LrpeKernel": Run(
            expect=(r"BM_LrpeKernel",), needs="build/bench/linear_attention_bench",
            otherwise=Elsewhere("the build has no benchmarks (ROTA_BUILD_BENCH=OFF)",
                                "bench/linear_attention_bench.cpp", ("BM_LrpeKernel",))),
        # Every step logged, so that the two short runs have steps in common.
        "build/rota train recipes/default.txtpb --out runs/default-f32 --set train.log_every=25":
            Run(cut_down=(("train.log_every", "1"),)),
        "build/rota train recipes/default.txtpb --out runs/default-bf16 --set train.log_every=25 "
        "--set train.dtype=BF16": Run(cut_down=(("train.log_every", "1"),)),
        "build/rota train recipes/default.txtpb --out runs/default-f32-seed2 "
        "--set train.log_every=25 --set train.seed=2": Run(cut_down=(("train.log_every", "1"),)),
        "python3 bench/compare_loss_curves.py runs/default-f32 runs/default-bf16": Run(
            expect=(r"train loss \(ref\)", r"(?m)^3 ")),
    },
    "docs/python-native.md": {
        "build/rota train recipes/tests/tiny_causal_lm.txtpb --out runs/tiny": Run(
            files=("runs/tiny/checkpoints/latest",)),
    },
    "docs/python.md": {
        # runs/walkthrough: the walkthrough's run (rota.train of the tiny recipe), made with rota.
        "build/rota export hf runs/walkthrough runs/walkthrough_hf": Run(
            before=(f"build/rota train {TINY} --out runs/walkthrough "
                    + " ".join(f"--set {f}={v}" for f, v in TRAIN_CUT_DOWN),),
            files=("runs/walkthrough_hf/config.json", "runs/walkthrough_hf/model.safetensors")),
    },
    "docs/recipes.md": {
        "rota train recipes/default.txtpb": Run(),
        # An alternative to the line above, not its continuation: its own run directory.
        "rota train recipes/default.txtpb --set model.layers=6 --set schedule.lr=1e-3": Run(
            extra="--out runs/default-6-layers"),
        "rota ablate recipes/ablations/encodings_causal.txtpb --out runs/encodings": Run(
            expect=(r"24 of 24 runs finished, 0 failed",), files=("runs/encodings/results.md",)),
    },
    "docs/results.md": {
        "make train": Run(expect=(r"---- sample",)),
        "build/rota train recipes/causal_lm/wikitext2_lrpe_type2.txtpb": Run(),
        "build/rota eval runs/wikitext2-lrpe-type2 --split test": Run(
            expect=(r"split=test loss=\S+ ppl=",)),
        "build/rota train recipes/causal_lm/wikitext2_nope.txtpb": Run(),
        "build/rota eval runs/wikitext2-nope --split test": Run(
            expect=(r"split=test loss=\S+ ppl=",)),
        "build/rota train recipes/masked_lm/wikitext2_lrpe.txtpb": Run(),
        "build/rota train recipes/classifier/sst2_from_mlm.txtpb": Run(),
        "build/rota eval runs/sst2-from-mlm-wikitext2-lrpe/checkpoints/best --split valid": Run(
            expect=(r"split=valid loss=\S+ accuracy=",)),
        "build/rota eval runs/sst2-from-mlm-wikitext2-lrpe/checkpoints/best --split test": Run(
            expect=(r"split=test loss=\S+ accuracy=",)),
    },
    # In order, in one scratch directory: each stage starts from the run before it.
    "docs/linearization.md": {
        "rota train recipes/linearize/wikitext2_softmax_rope.txtpb": Run(
            files=("runs/wikitext2-softmax-rope/checkpoints/latest",)),
        "rota train recipes/linearize/wikitext2_lrpe_transfer.txtpb": Run(
            expect=(r"linearize: teacher runs/wikitext2-softmax-rope",
                    r"split=valid loss=\S+ ppl=\S+ tokens=\d+ transfer_mse=\S+ "
                    r"transfer_mse_block0=")),
        "rota train recipes/linearize/wikitext2_lrpe_finetune.txtpb": Run(
            expect=(r"finetune\.lora: rank 8", r"run=runs/wikitext2-lrpe-linearized")),
        "rota eval runs/wikitext2-lrpe-linearized --split test": Run(
            expect=(r"split=test loss=\S+ ppl=",)),
    },
    "docs/training.md": {
        "build/rota train recipes/tests/tiny_causal_lm.txtpb --out runs/tiny-early --set "
        "train.steps=40 --set train.eval_every=5 --set "
        "'train.early_stopping={patience: 2 min_delta: 100}'": Run(
            expect=(r"early stopping: valid loss has not improved by more than 100 for 2 "
                    r"evaluations", r"step=15 stopped_early=true run=runs/tiny-early")),
        # `rota generate`'s options on a tiny run standing in for runs/default.
        "rota generate runs/default --prompt \"ROMEO:\" --tokens 200 --top-p 0.9 "
        "--repetition-penalty 1.2": Run(
            before=(f"build/rota train {TINY} --out runs/default "
                    + " ".join(f"--set {f}={v}" for f, v in TRAIN_CUT_DOWN),),
            expect=(r"ROMEO:",)),
        "rota generate runs/default --prompt \"ROMEO:\" --stop \"JULIET\" --samples 3 "
        "--format jsonl": Run(expect=(r'\{"prompt":1,"sample":0,"text":',
                                      r'\{"prompt":1,"sample":2,"text":')),
        "rota generate runs/default --prompts prompts.txt --samples 2 --format jsonl --seed 1": Run(
            before=("printf 'ROMEO:\\nJULIET: O Romeo\\n' > prompts.txt",),
            expect=(r'\{"prompt":1,"sample":0,', r'\{"prompt":2,"sample":1,')),
        "rota train recipes/masked_lm/wikitext2_lrpe.txtpb": Run(),
        "rota train recipes/classifier/sst2_from_mlm.txtpb": Run(
            expect=(r"mlm-wikitext2-lrpe",)),
        "rota eval runs/sst2-from-mlm-wikitext2-lrpe/checkpoints/best --split valid": Run(
            expect=(r"split=valid loss=\S+ accuracy=",)),
    },
}

OPTIONS_ONLY = {
    "docs/performance.md": {
        "OMP_NUM_THREADS=2 python3 bench/peers/compare.py --rota build/rota --recipes bench_small "
        "bench_seq512_b16 bench_seq2048 bench_seq8192 --dtypes f32 bf16 --rounds 3 --steps 5 "
        "--warmup 2 --threads 2 --peer-blas-dir "
        "/tmp/peer/openblas/usr/lib/x86_64-linux-gnu/openblas-pthread": OptionsOnly(
            "the PyTorch peer needs python3-torch and the OpenBLAS of the line above, and the "
            "comparison takes tens of minutes; run by hand (bench/peers/README.md)",
            "python3 bench/peers/compare.py --help"),
        "/usr/bin/python3 bench/peers/compare.py --rota build/rota --recipes bench_small "
        "bench_seq8192 bench_small_gla --dtypes f32 bf16 --rounds 3 --steps 5 --warmup 2 "
        "--threads 2 --markdown /tmp/peers.md": OptionsOnly(
            "the comparison runs PyTorch 2.x eagerly and compiled for about 25 minutes on an "
            "otherwise quiet machine; run by hand (bench/peers/README.md)",
            "/usr/bin/python3 bench/peers/compare.py --help"),
    },
}

NATIVE_DOCS_TEST = Elsewhere(
    "tests/python/test_native_docs.py runs the whole shell block (it builds the Python module, "
    "trains runs/tiny, installs the package into a venv)",
    "tests/python/test_native_docs.py", ('shell = blocks("sh")', '["bash", "-e", "-c", shell[0]]'))
OWN_DATA_WORKED = Elsewhere(
    "tests/cli/own_data_docs_cli_test.cpp writes the worked examples' recipes and data and runs "
    "their commands in order", "tests/cli/own_data_docs_cli_test.cpp",
    ('"### Worked examples"', "ASSERT_EQ(commands, 9)"), ("### Worked examples", "## "))
OWN_DATA_EVAL = dataclasses.replace(OWN_DATA_WORKED,
                                    section=("## Evaluation and prediction", "## "))
PREPARED = Elsewhere(
    "tests/cli/data_prepare_cli_test.cpp runs the prepared-corpus commands in order, cut down",
    "tests/cli/data_prepare_cli_test.cpp",
    ("BEGIN PREPARED COMMANDS", "ASSERT_EQ(commands.size(), 4u)"),
    ("<!-- BEGIN PREPARED COMMANDS", "<!-- END PREPARED COMMANDS"))
README_OWN_DATA = Elsewhere(
    "tests/cli/readme_own_data_cli_test.cpp runs the block on generated files, cut down",
    "tests/cli/readme_own_data_cli_test.cpp",
    ('"### Train on your own data"', "ASSERT_EQ(commands.size(), 3u)"),
    ("### Train on your own data", "## "))
PYTHON_INSTALL = Elsewhere(
    "tests/python/test_python_docs.py runs the Install block in a fresh venv",
    "tests/python/test_python_docs.py", ('blocks(self.text, "sh", "Install")', "shadowing-bin",
                                         'PIP_NO_INDEX="1"'),
    ("## Install", "## "))
HF_IMPORT = Elsewhere(
    "tests/peers/test_pretrained_docs.py runs the block on tiny models saved by transformers (the "
    "peers' venv: PyPI transformers is not in Debian)", "tests/peers/test_pretrained_docs.py",
    ("BEGIN IMPORT COMMANDS", "self.assertEqual(len(commands), 4)"),
    ("<!-- BEGIN IMPORT COMMANDS", "<!-- END IMPORT COMMANDS"))
README_HF_IMPORT = Elsewhere(
    "tests/peers/test_pretrained_docs.py runs the README's import line on a tiny GPT-2 saved by "
    "transformers", "tests/peers/test_pretrained_docs.py", ('"build/rota import hf "',))
LORA_DOCS = Elsewhere(
    "tests/peers/test_pretrained_docs.py runs the block on a tiny GPT-2 saved by transformers and "
    "imported, with the section's recipe cut down", "tests/peers/test_pretrained_docs.py",
    ("BEGIN LORA COMMANDS", "self.assertEqual(len(lora_commands), 4)"),
    ("<!-- BEGIN LORA COMMANDS", "<!-- END LORA COMMANDS"))
README_LORA = Elsewhere(
    "tests/peers/test_pretrained_docs.py runs the README's LoRA line with docs/pretrained.md's "
    "recipe, cut down, on an imported tiny GPT-2", "tests/peers/test_pretrained_docs.py",
    ('"build/rota train lora.txtpb "',))
FUZZ_BUILD = Elsewhere(
    "needs the clang build of `make fuzz` (build-fuzz/); CI runs `make fuzz`, which runs "
    "fuzz/run.sh over every target", ".ci/run", ("make fuzz FUZZ_SECONDS=15",))

ELSEWHERE = {
    "README.md": {
        "make test": Elsewhere("runs the whole suite, this test included; CI runs it", ".ci/run",
                               ("make test",)),
        "build/rota train recipes/causal_lm/wikitext2_lrpe_type2.txtpb --set "
        "'data.files={train: \"my_texts/*.txt\"}' --out runs/my-texts": README_OWN_DATA,
        "build/rota train RECIPE --set 'data.tokenizer={path: \"tokenizer.json\"}' "
        "--out runs/my-tokenizer": README_OWN_DATA,
        "build/rota predict runs/my-texts --input new_examples.txt": README_OWN_DATA,
        "build/rota import hf ~/models/gpt2 --out runs/gpt2": README_HF_IMPORT,
        "build/rota train lora.txtpb --out runs/gpt2-lora": README_LORA,
    },
    "docs/pretrained.md": {
        "rota import hf ~/models/gpt2 --out runs/gpt2": HF_IMPORT,
        "rota import hf ~/models/qwen2-0.5b --out runs/qwen2 --set data.sequence_length=512":
            HF_IMPORT,
        "rota eval runs/gpt2 --data my_texts/test.txt": HF_IMPORT,
        "rota generate runs/gpt2 --prompt \"The meaning of life\" --tokens 40 --temperature 0":
            HF_IMPORT,
        "rota train lora.txtpb --out runs/gpt2-lora": LORA_DOCS,
        "rota eval runs/gpt2-lora --split valid": LORA_DOCS,
        "rota generate runs/gpt2-lora --prompt \"ROMEO:\" --tokens 40 --temperature 0": LORA_DOCS,
        "rota export hf runs/gpt2-lora runs/gpt2-lora-hf": LORA_DOCS,
    },
    "docs/data.md": {
        "rota train lm_text.txtpb": OWN_DATA_WORKED,
        "rota train lm_jsonl.txtpb": OWN_DATA_WORKED,
        "rota train reviews.txtpb": OWN_DATA_WORKED,
        "rota eval runs/reviews --split valid": OWN_DATA_WORKED,
        "rota train pairs.txtpb": OWN_DATA_WORKED,
        "rota eval runs/reviews --data test.csv": OWN_DATA_EVAL,
        "rota eval runs/lm_text --data 'more_text/*.txt'": OWN_DATA_EVAL,
        "rota predict runs/reviews --input unlabelled.csv --output predictions.jsonl":
            OWN_DATA_EVAL,
        "rota predict runs/lm_text --input lines.txt --tokens": OWN_DATA_EVAL,
        "rota data prepare recipes/causal_lm/wikitext2_lrpe_type1.txtpb --out prepared/wikitext-2":
            PREPARED,
        "rota data prepare --corpus my_texts/ --tokenizer prepared/wikitext-2/tokenizer "
        "--out prepared/mine --shard-mb 64": PREPARED,
        "rota data verify prepared/wikitext-2": PREPARED,
        "rota train recipes/causal_lm/wikitext2_lrpe_type1.txtpb --set "
        "data.prepared=prepared/wikitext-2": PREPARED,
    },
    "docs/distributed.md": {
        "mpirun -np 2 --hostfile hosts.txt --map-by node --bind-to none -x OMP_NUM_THREADS=32 "
        "-x ROTA_DATA /opt/rota/build/rota train /shared/recipes/wikitext2_lrpe_type2.txtpb "
        "--out /shared/runs/wikitext2": Elsewhere(
            "needs two machines (node1, node2) reachable by ssh; the other mpirun lines of this "
            "doc run here, and tests/framework/distributed/launch/ compares multi-rank runs",
            "tests/CMakeLists.txt", ("distributed_launch",)),
        "make build": Elsewhere(
            "builds the whole tree; this test runs against that build", "Makefile",
            ("build: configure", "cmake --build $(BUILD)")),
    },
    "docs/performance.md": {
        "apt-get download libopenblas0-pthread && dpkg-deb -x libopenblas0-pthread_*.deb "
        "/tmp/peer/openblas": Elsewhere(
            "downloads a Debian package (no network here); only the PyTorch peer below uses it",
            "bench/peers/README.md", ("apt-get download libopenblas0-pthread",)),
    },
    "docs/python-native.md": {
        "cmake --build build --target rota rota_native": NATIVE_DOCS_TEST,
        "PYTHONPATH=python:build/python /usr/bin/python3 -c 'import rota; "
        "print(rota.load(\"runs/tiny\").kind)'": NATIVE_DOCS_TEST,
        "/usr/bin/python3 -m venv --system-site-packages .venv": NATIVE_DOCS_TEST,
        ".venv/bin/pip install ./python": NATIVE_DOCS_TEST,
        "cd /tmp && \"$OLDPWD/.venv/bin/python\" -c \"import rota; "
        "print(rota.load('$OLDPWD/runs/tiny').step)\"": NATIVE_DOCS_TEST,
    },
    "docs/python.md": {
        "/usr/bin/python3 -m venv --system-site-packages .venv": PYTHON_INSTALL,
        ".venv/bin/pip install ./python": PYTHON_INSTALL,
        ".venv/bin/python -c \"import rota, rota.torch; print(rota.__version__)\"": PYTHON_INSTALL,
    },
    "docs/testing.md": {
        "make fuzz": Elsewhere(
            "builds build-fuzz/ with clang and fuzzes every target 60 s; CI runs it (15 s each)",
            ".ci/run", ("make fuzz FUZZ_SECONDS=15",)),
        "make fuzz FUZZ_SECONDS=600": Elsewhere(
            "fuzzes every target 10 min; CI runs the same with FUZZ_SECONDS=15", ".ci/run",
            ("make fuzz FUZZ_SECONDS=15",)),
        "fuzz/run.sh build-fuzz 600 recipe_fuzzer": FUZZ_BUILD,
        "build-fuzz/fuzz/recipe_fuzzer CRASH_FILE": FUZZ_BUILD,
    },
}


def account(command):
    """What the tables say about a command: a list (exactly one entry when accounted for)."""
    found = []
    if command.synopsis:
        found.append("synopsis")
    for table in (RUNS, OPTIONS_ONLY, ELSEWHERE):
        if command.key in {normalise(k) for k in table.get(command.doc, {})}:
            found.append(lookup(table, command))
    return found


def lookup(table, command):
    return next(v for k, v in table.get(command.doc, {}).items() if normalise(k) == command.key)


# ---------------------------------------------------------------------------------------------
# Synopsis lines against --help.

@dataclasses.dataclass
class Usage:
    """What a synopsis line or a --help shows: options (name → (takes a value, required)) and
    positionals (a list of required flags)."""
    options: dict
    positionals: list


def synopsis_usage(text):
    """(subcommand words, Usage) of a line `rota SUB [SUB2] ARGS` (an mpirun prefix dropped)."""
    words = text.split()
    start = next((i for i, w in enumerate(words) if re.fullmatch(r"(\S*/)?rota", w)), None)
    if start is None or start + 1 == len(words):
        return None, None
    words = words[start + 1:]
    sub = [words.pop(0)]
    while words and "Subcommands:" in rota_help(sub)[1]:
        sub.append(words.pop(0))
    tokens = re.findall(r"\]\.\.\.|[\[\]]|[^\s\[\]]+", " ".join(words))
    options, positionals, depth, i = {}, [], 0, 0
    while i < len(tokens):
        token = tokens[i]
        if token == "[":
            depth += 1
        elif token in ("]", "]..."):
            depth -= 1
        elif token.startswith("--"):
            following = tokens[i + 1] if i + 1 < len(tokens) else "]"
            takes_value = (following not in ("[", "]", "]...", "|")
                           and not following.startswith("--"))
            options[token] = (takes_value, depth == 0)
            i += takes_value
        elif re.fullmatch(r"[A-Z][A-Z_]*(\.\w+)?", token):
            positionals.append(depth == 0)
        i += 1
    return sub, Usage(options, positionals)


def help_usage(help_text):
    """The Usage of a CLI11 --help: its Options and Positionals sections."""
    options, positionals, section = {}, [], None
    for line in help_text.splitlines():
        if re.fullmatch(r"\w+:", line.strip()) and not line.startswith(" "):
            section = line.strip()[:-1]
            continue
        if not line.startswith("  ") or line.startswith("   "):
            continue
        words = re.split(r"\s{2,}", line.strip())[0].split()
        if section == "Options":
            name = words[0].split(",")[-1]
            if name != "--help":
                # After the name comes the value's type (TEXT, INT:NUMBER, auto|plain|none ...)
                # unless it is a flag; "Excludes:" and "Needs:" name other options, which a
                # flag may have too.
                takes_value = len(words) > 1 and words[1] not in ("REQUIRED", "Excludes:",
                                                                  "Needs:")
                options[name] = (takes_value, "REQUIRED" in words)
        elif section == "Positionals":
            positionals.append("REQUIRED" in words)
    return Usage(options, positionals)


HELP_CACHE = {}


def rota_help(sub):
    if tuple(sub) not in HELP_CACHE:
        done = subprocess.run([BINARY] + list(sub) + ["--help"], capture_output=True, text=True)
        HELP_CACHE[tuple(sub)] = (done.returncode, done.stdout + done.stderr)
    return HELP_CACHE[tuple(sub)]


def synopsis_problems(command):
    """What a synopsis line shows that its subcommand's --help does not say."""
    sub, shown = synopsis_usage(command.text)
    where = f"{command.doc}:{command.line}: `{command.text}`"
    if sub is None:
        return [f"{where}: a usage line without a rota subcommand"]
    code, text = rota_help(sub)
    if code != 0:
        return [f"{where}: `rota {' '.join(sub)} --help` exits {code}:\n{text}"]
    actual = help_usage(text)
    problems = []
    for option, (takes_value, required) in shown.options.items():
        if option not in actual.options:
            problems.append(f"{where}: rota {' '.join(sub)} has no option {option}")
            continue
        has_value, is_required = actual.options[option]
        if takes_value != has_value:
            problems.append(f"{where}: {option} is shown {'with' if takes_value else 'without'} a "
                            f"value, but it takes {'one' if has_value else 'none'}")
        if required != is_required:
            shown_as, is_ = (("required" if r else "optional") for r in (required, is_required))
            problems.append(f"{where}: {option} is shown as {shown_as}, but it is {is_}")
    if shown.positionals != actual.positionals:
        problems.append(f"{where}: positionals shown (required?) {shown.positionals}, "
                        f"--help has {actual.positionals}")
    return problems


def subcommands(prefix=()):
    """Every leaf subcommand of rota, as word tuples."""
    _, text = rota_help(prefix)
    listed = re.search(r"Subcommands:\n((?:  .*\n?)+)", text)
    if not listed:
        return [tuple(prefix)]
    leaves = []
    for line in listed.group(1).splitlines():
        leaves += subcommands(tuple(prefix) + (line.split()[0],))
    return leaves


# ---------------------------------------------------------------------------------------------
# Running commands.

def make_scratch():
    """A scratch directory with the links the docs' relative paths need, and bin/rota for PATH."""
    scratch = tempfile.mkdtemp(prefix="rota-doc-commands-")
    for name, target in (("recipes", os.path.join(REPO, "recipes")),
                         ("bench", os.path.join(REPO, "bench")),
                         ("framework", os.path.join(REPO, "framework")),
                         ("build", os.path.dirname(BINARY))):
        os.symlink(target, os.path.join(scratch, name))
    os.makedirs(os.path.join(scratch, "bin"))
    os.makedirs(os.path.join(scratch, "tmp"))
    os.symlink(BINARY, os.path.join(scratch, "bin", "rota"))
    return scratch


def command_env(scratch):
    env = dict(os.environ)
    env["PATH"] = os.path.join(scratch, "bin") + os.pathsep + env.get("PATH", "")
    env.setdefault("ROTA_DATA", os.path.join(SHARED, "data"))
    env["ROTA_OFFLINE"] = "1"
    env["ROTA_REPO"] = REPO
    return env


def replace_word(text, word, replacement):
    return re.sub(rf"(?<![\w]){re.escape(word)}(?![\w])", lambda _: replacement, text)


def split_env_prefix(text):
    match = re.match(ENV_PREFIX, text)
    return text[:match.end()], text[match.end():]


def rota_subcommand(text):
    """'train', 'eval', 'bench train', ... of a command that runs rota, else None."""
    _, rest = split_env_prefix(text)
    match = re.search(r"(?:^|\s)(?:\S*/)?rota\s+(bench \w+|\w+)", rest)
    if not match or not re.match(r"(mpirun\s|(\S*/)?rota\s)", rest):
        return None
    return match.group(1)


def cut_down(text, run):
    """The cut-down arguments for a command (none for commands that are not rota's)."""
    sub = rota_subcommand(text)
    fields = dict(TRAIN_CUT_DOWN)
    if sub == "ablate":
        fields.update(ABLATE_CUT_DOWN)
    if sub in ("train", "ablate"):
        for field in list(fields):
            if f"--set {field}=" in text:  # the command's own value stays
                del fields[field]
        fields.update(dict(run.cut_down))
        arguments = [f"--set {f}={v}" for f, v in fields.items()]
    else:
        arguments = [f"--set {f}={v}" for f, v in run.cut_down]
    if sub in OTHER_CUT_DOWN:
        # "--flag value" pairs; a flag the command sets itself keeps the command's value.
        words = OTHER_CUT_DOWN[sub].split()
        arguments += [f"{flag} {value}" for flag, value in zip(words[::2], words[1::2])
                      if flag not in text.split()]
    if re.match(r"\S*build/bench/", split_env_prefix(text)[1]):
        arguments.append(BENCHMARK_CUT_DOWN)
    return " ".join(arguments)


def with_mpi_launcher(text):
    """mpirun as configured: root's flags added when missing; without MPI, one process."""
    prefix, rest = split_env_prefix(text)
    if not rest.startswith("mpirun "):
        return text
    if not MPIEXEC:
        return prefix + re.sub(r"^mpirun\s.*?(?=(\S*/)?rota\s)", "", rest)
    flags = ["--oversubscribe"] if "--oversubscribe" not in rest else []
    if os.geteuid() == 0 and "--allow-run-as-root" not in rest:
        flags.insert(0, "--allow-run-as-root")
    return prefix + shlex.quote(MPIEXEC) + " " + " ".join(flags) + rest[len("mpirun"):]


def makefile_equivalent(target):
    """The command a Makefile target runs, as a doc would write it (build/rota ...)."""
    with open(os.path.join(REPO, "Makefile"), encoding="utf-8") as f:
        makefile = f.read()
    lines = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", makefile, re.M).group(1).splitlines()
    # The target's own command is the line that runs the binary; the lines before it configure
    # and build (timed phases), which a doc does not spell out.
    recipe = next((line for line in lines if "$(BUILD)/rota " in line), lines[-1]).strip()
    recipe = recipe.replace("./$(BUILD)/", "build/").replace("$(TRAIN_ARGS)", "")
    return normalise(recipe)


def concrete_command(command, run):
    """The command as it runs here: stand-ins, /tmp in the scratch directory, cut down, MPI."""
    text = command.text
    if text.startswith("make "):
        text = makefile_equivalent(text.split()[1])
    for word, concrete in tuple(run.stand_ins) + STAND_INS.get(command.doc, ()):
        text = replace_word(text, word, concrete)
    text = re.sub(r"(?<![\w.])/tmp/", "tmp/", text)
    additions = " ".join(a for a in ("" if run.as_written else cut_down(text, run), run.extra) if a)
    if additions:
        text += " " + additions
    return with_mpi_launcher(text)


def shell(script, scratch, env):
    # errors="replace": text sampled from a barely trained byte-level model (rota generate) need
    # not be UTF-8.
    return subprocess.run(["bash", "-c", script], cwd=scratch, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, errors="replace",
                          timeout=COMMAND_TIMEOUT)


def claimed_outputs(command):
    """What the doc says the command prints or makes: `# last line: …`, `# → runs/x/`, a `$ `
    command's shown output. (regular expressions on the last stdout line, paths, exact lines)."""
    last_line, paths = None, []
    if command.comment.startswith("last line: "):
        shown = command.comment[len("last line: "):]
        last_line = r"\S+".join(map(re.escape, shown.split("…")))
    for match in re.finditer(r"(?:→|a run in) (runs/\S+)", command.comment):
        paths.append(match.group(1).rstrip("/"))
    return last_line, paths, [line for line in command.shown_output if line.strip()]


# ---------------------------------------------------------------------------------------------
# The test.

class DocCommands(unittest.TestCase):
    summary = {}

    def check_doc(self, doc):
        started = time.monotonic()
        commands = doc_commands(doc)
        self.check_accounting(doc, commands)
        counts = {"run": 0, "synopsis": 0, "elsewhere": 0}
        runs, synopsis_errors = [], []
        for command in commands:
            (how,) = account(command)
            if isinstance(how, Run) and how.needs and not os.path.exists(
                    os.path.join(os.path.dirname(BINARY), os.path.relpath(how.needs, "build"))):
                how = how.otherwise
            if how == "synopsis":
                synopsis_errors += synopsis_problems(command)
                counts["synopsis"] += 1
            elif isinstance(how, OptionsOnly):
                self.check_options_exist(command, how)
                counts["synopsis"] += 1
            elif isinstance(how, Elsewhere):
                self.check_elsewhere(command, how)
                counts["elsewhere"] += 1
            else:
                runs.append((command, how))
        self.assertFalse(synopsis_errors, "\n".join(synopsis_errors))
        if runs:
            self.run_in_order(runs)
        counts["run"] = len(runs)
        DocCommands.summary[doc] = (len(commands), counts, time.monotonic() - started)

    def check_accounting(self, doc, commands):
        problems = []
        for command in commands:
            ways = account(command)
            if len(ways) != 1:
                state = "accounted for twice" if ways else "not accounted for"
                problems.append(f"{doc}:{command.line}: {state} (add it to RUNS, OPTIONS_ONLY or "
                                f"ELSEWHERE in {__file__}):\n  {command.text}")
        keys = {c.key for c in commands}
        for table in (RUNS, OPTIONS_ONLY, ELSEWHERE):
            for key in table.get(doc, {}):
                if normalise(key) not in keys:
                    problems.append(f"{doc}: the table names a command the doc no longer "
                                    f"shows:\n  {key}")
        self.assertFalse(problems, "\n".join(problems))

    def check_options_exist(self, command, how):
        done = subprocess.run(how.help_command, shell=True, cwd=REPO, capture_output=True,
                              text=True)
        self.assertEqual(done.returncode, 0, f"{how.help_command}:\n{done.stderr}")
        for option in re.findall(r"(?<!\S)--[a-z][\w-]*", command.text):
            self.assertIn(option, done.stdout,
                          f"{command.doc}:{command.line}: `{how.help_command}` has no {option}")

    def check_elsewhere(self, command, how):
        self.assertTrue(how.reason)
        if how.path:
            path = os.path.join(REPO, how.path)
            self.assertTrue(os.path.isfile(path),
                            f"{command.doc}:{command.line}: {how.path} is gone")
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for fragment in how.contains:
                self.assertIn(fragment, text, f"{command.doc}:{command.line}: {how.path} no longer "
                              f"contains {fragment!r} (does it still run `{command.text}`?)")
        if how.section:
            start, end = section_lines(command.doc, *how.section)
            self.assertIsNotNone(start, f"{command.doc}: no line starts with {how.section[0]!r}, "
                                 f"the section {how.path} runs")
            self.assertTrue(start < command.line < end,
                            f"{command.doc}:{command.line}: `{command.text}` is outside the "
                            f"section {how.section[0]!r} that {how.path} runs")

    def run_in_order(self, runs):
        scratch = make_scratch()
        self.addCleanup(shutil.rmtree, scratch, True)
        env = command_env(scratch)
        assignments = []
        for command, run in runs:
            for setup in run.before:
                done = shell("\n".join(assignments + [setup]), scratch, env)
                self.assertEqual(done.returncode, 0, f"{command.doc}:{command.line}: the set-up "
                                 f"`{setup}` failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
            concrete = concrete_command(command, run)
            done = shell("\n".join(assignments + [concrete]), scratch, env)
            self.check_run(command, run, concrete, done, scratch, env, assignments)
            if ASSIGNMENT.match(command.text):
                assignments.append(command.text)

    def check_run(self, command, run, concrete, done, scratch, env, assignments):
        output = done.stdout + done.stderr
        where = (f"{command.doc}:{command.line}: `{command.text}`\nran as: {concrete}\n"
                 f"exit {done.returncode}; output (end):\n{output[-4000:]}")
        self.assertEqual(done.returncode, run.exit_code, where)
        for pattern in run.expect:
            self.assertRegex(output, pattern, where)
        last_line, paths, shown = claimed_outputs(command)
        if last_line:
            lines = done.stdout.strip().splitlines()
            self.assertTrue(lines and re.match(last_line, lines[-1]), f"last line: …\n{where}")
        for path in paths + list(run.files):
            self.assertTrue(os.path.exists(os.path.join(scratch, path)), f"no {path}\n{where}")
        for line in shown:
            self.assertIn(line, output.splitlines(), f"the output the doc shows\n{where}")
        for check in run.after:
            checked = shell("\n".join(assignments + [check]), scratch, env)
            self.assertEqual(checked.returncode, 0, f"check `{check}` after it:\n"
                             f"{checked.stdout[-3000:]}{checked.stderr[-3000:]}\n{where}")
        if command.text.startswith("make "):
            self.check_make_equivalent(command)

    def check_make_equivalent(self, command):
        """`make X` ran as the command its Makefile target runs; the doc must say that command."""
        equivalent = makefile_equivalent(command.text.split()[1])
        with open(os.path.join(REPO, command.doc), encoding="utf-8") as f:
            text = f.read()
        self.assertTrue(equivalent in normalise(text),
                        f"{command.doc}: `{command.text}` runs `{equivalent}` (Makefile); the doc "
                        "should say so")

    def test_synopses_show_every_subcommand_and_option(self):
        """Every subcommand of rota has a synopsis line, and every option of it is shown in one."""
        shown = {}
        for doc in all_docs():
            for command in doc_commands(doc):
                sub, usage = synopsis_usage(command.text) if command.synopsis else (None, None)
                if sub:
                    shown.setdefault(tuple(sub), set()).update(usage.options)
        problems = []
        for sub in subcommands():
            if sub not in shown:
                problems.append(f"rota {' '.join(sub)}: no synopsis line in README.md or docs/")
                continue
            missing = set(help_usage(rota_help(sub)[1]).options) - shown[sub]
            if missing:
                problems.append(f"rota {' '.join(sub)}: no synopsis shows {sorted(missing)}")
        self.assertFalse(problems, "\n".join(problems))

    @classmethod
    def tearDownClass(cls):
        for doc, (found, counts, seconds) in sorted(cls.summary.items()):
            print(f"{doc}: {found} commands: {counts['run']} run, {counts['synopsis']} checked "
                  f"against --help, {counts['elsewhere']} elsewhere ({seconds:.0f} s)",
                  file=sys.stderr)


def section_lines(doc, start, end):
    """Line numbers of the first line starting with `start` and of the next one starting `end`."""
    with open(os.path.join(REPO, doc), encoding="utf-8") as f:
        lines = f.read().split("\n")
    first = next((i for i, line in enumerate(lines, 1) if line.startswith(start)), None)
    if first is None:
        return None, None
    last = next((i for i, line in enumerate(lines, 1) if i > first and line.startswith(end)),
                len(lines) + 1)
    return first, last


def add_doc_tests():
    for doc in all_docs():
        setattr(DocCommands, test_name(doc), lambda self, doc=doc: self.check_doc(doc))


add_doc_tests()

if __name__ == "__main__":
    unittest.main()
