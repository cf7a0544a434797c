# The peer of bench/tokenizer_bench.cpp: Hugging Face tokenizers (PyPI) encoding WikiText-2 train.
"""Encodes WikiText-2 train with a tokenizer.json, `encode_batch` over the lines (each with its
'\\n', no special tokens) as Rota's encoding contract says, and prints the median speed of
REPEATS runs after a warm-up run. The reference's threads: RAYON_NUM_THREADS (default: every core).

    RAYON_NUM_THREADS=2 $(tools/peers/venv.sh) tools/tokenizer_goldens/bench_peer.py \\
        [tokenizer.json] [repeats]

The tokenizer defaults to tests/golden/tokenizers/gpt2_bpe.json, repeats to 5; the corpus is
$ROTA_SHARED/data (else ../shared/data beside the repository)/wikitext-2/train.txt.
"""
import os
import sys
import time
from pathlib import Path

from tokenizers import Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_goldens import (  # noqa: E402
    GOLDEN_DIR, GoldenError, read_text, shared_data_dir, split_lines)


def parse_args(argv):
    """(tokenizer.json path, repeats) from the command line."""
    if len(argv) > 2:
        raise GoldenError("usage: bench_peer.py [tokenizer.json] [repeats]")
    file = Path(argv[0]) if argv else GOLDEN_DIR / "gpt2_bpe.json"
    try:
        repeats = int(argv[1]) if len(argv) > 1 else 5
    except ValueError:
        raise GoldenError(f"repeats must be a whole number, not '{argv[1]}'") from None
    if repeats < 1:
        raise GoldenError(f"repeats must be at least 1, not {repeats}")
    if not file.is_file():
        raise GoldenError(f"{file}: no such tokenizer.json")
    return file, repeats


def time_encoding(tokenizer, lines):
    """Seconds to encode `lines` as one batch, and the number of tokens."""
    start = time.perf_counter()
    encodings = tokenizer.encode_batch(lines, add_special_tokens=False)
    seconds = time.perf_counter() - start
    return seconds, sum(len(encoding.ids) for encoding in encodings)


def upper_median(values):
    """The middle value, the upper one of the two middle values for an even count."""
    return sorted(values)[len(values) // 2]


def main(argv):
    try:
        file, repeats = parse_args(argv)
        text = read_text(shared_data_dir() / "wikitext-2" / "train.txt")
    except GoldenError as error:
        print(f"bench_peer.py: {error}", file=sys.stderr)
        return 2
    lines = split_lines(text)
    tokenizer = Tokenizer.from_file(str(file))
    time_encoding(tokenizer, lines)  # the first run warms the caches
    runs = [time_encoding(tokenizer, lines) for _ in range(repeats)]
    median = upper_median([seconds for seconds, _ in runs])
    tokens = runs[-1][1]
    megabytes = len(text.encode("utf-8")) / 1e6
    threads = os.environ.get("RAYON_NUM_THREADS", "unset")
    print(f"hf-tokenizers {file.name}: {megabytes / median:.2f} MB/s (median of {repeats}, "
          f"{median:.3f} s, {tokens} tokens, RAYON_NUM_THREADS={threads})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
