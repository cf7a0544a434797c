# Writes Rota's tokenizer goldens with Hugging Face tokenizers (PyPI); --check compares them.
"""The reference side of Rota's Hugging Face tokenizer.json support (docs/data.md, "Goldens and
speed"), run with the python of the PyPI peers' venv:

    $(tools/peers/venv.sh) tools/tokenizer_goldens/make_goldens.py [--shared DIR] [--out DIR]
    $(tools/peers/venv.sh) tools/tokenizer_goldens/make_goldens.py --check [--shared DIR]

Without --check it trains small tokenizer.json files of every kind on the shared corpora (Debian's
`spm_train` for the SentencePiece charsmap), and writes to tests/golden/tokenizers/ the files, the
stress text, the reference's ids of whole corpora (count + sha256 of the little-endian uint32
ids), ids and decodes of the stress lines and of sample lines (goldens.json), the outputs of each
normalizer and pre-tokenizer alone (components.json), and the reference's encoding of Rota's
committed exports (rota_export/*.json). The reference's WordPiece and Unigram trainers are not
deterministic, so a run rewrites every file: commit them together.

--check trains nothing: it loads every committed tokenizer.json, re-encodes and decodes every
committed input with the installed `tokenizers`, compares with the committed goldens, prints each
difference (file, case, first differing index) and exits 1 on any, 0 when all match.

--shared names the folder holding data/ (default: $ROTA_SHARED, else ../shared beside the
repository); --out writes the goldens elsewhere than tests/golden/tokenizers/ (to compare a run
with the committed files).
"""
import argparse
import array
import base64
import decimal
import hashlib
import json
import math
import os
import re
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tokenizers
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

REPO = Path(__file__).resolve().parents[2]
GOLDEN_DIR = REPO / "tests" / "golden" / "tokenizers"
EXPORT_DIR = GOLDEN_DIR / "rota_export"

CORPORA = ("wikitext-2/train.txt", "wikitext-2/valid.txt", "wikitext-2/test.txt",
           "tinyshakespeare/input.txt", "sst-2/dev.tsv")
SHAKESPEARE = "tinyshakespeare/input.txt"
SAMPLE_CORPUS = "wikitext-2/valid.txt"
SAMPLE_STEP = 250  # every 250th line of SAMPLE_CORPUS is a sample

# Text the corpora lack: accents (composed and combining), CJK, emoji with ZWJ, RTL, Cyrillic,
# control characters, tabs, CRLF, NBSP and other spaces, special-token strings.
STRESS_LINES = [
    'Café naïve résumé — cafe\u0301 nai\u0308ve ÅNGSTRÖM ǅ ﬁ ﬀ ① ²³ ½ Ⅻ',
    '東京は日本の首都です。中文字符测试，标点！𠀋𪚲',
    'Family: 👨\u200d👩\u200d👧\u200d👦 flag: 🇫🇷 skin: 👍🏽 heart: ❤\ufe0f',
    'עברית: שלום עולם! العربية: مرحبا بالعالم. فارسی ۱۲۳',
    'Русский текст: Съешь же ещё этих мягких французских булок. ΣΊΣΥΦΟΣ σίσυφος İstanbul',
    'tabs\there\t\tand  double  spaces   triple',
    'crlf line\r',
    'nbsp\u00a0here thin\u2009space ideographic\u3000space em\u2003space nel\u0085end zwsp\u200bx',
    'controls \u0001\u0002\u0007\u001b[0m\u007f bidi \u202eevil\u202c soft\u00adhyphen',
    'specials: <|endoftext|> [CLS] [SEP] [MASK] <mask> <s> </s> <unk> [UNK] <pad> <|begin_of_text|>',
    'joined<|endoftext|>tokens[MASK]here<mask>x and  <mask>  spaced',
    "Don't you're I'm he'll we've it'd 'S 'T 1234567 3.14159 1,000,000 @-@ x² 10%",
    '   leading spaces and trailing   ',
    '',
    '\t',
    'email me@example.com url https://example.com/a?b=c#d (brackets) [square] {curly} «guillemets» „quotes“',
    'combining: a\u0300\u0301\u0302 e\u0327\u0306 Z\u0351\u0352\u0353 hangul 한국어 ᄒ\u1161\u11ab jamo',
    'math: ∑∫√∞ ≤≥≠ ⊂⊃ arrows ←→ box ┌─┐ braille ⠁⠃ dingbats ✓✗ private \ue000',
    'added [R]   after, a word, words, sword, word-play, [R]\t<mask>end 2024-11-26 12345',
    '<s>Hello at the start</s>',
    '<mask> starts this line [CLS][SEP]',
    '  <|endoftext|>  two spaces before',
    '     ',
    '\r',
    '<|endoftext|>',
    '[MASK]',
    'Antidisestablishmentarianism' + 'x' * 90 + ' supercalifragilisticexpialidocious',
    'digits 12345678901234567890 !!!???... ’s ’S ‘quoted’ ... — –– ---',
    'mixed\ttabs \t\t and\u000bvertical\u000cfeed\u2028line\u2029para',
    'newer emoji \U0001FAE0\U0001FABF unassigned \u0378\U00050000 tag \U000E0001 surrogate-free \U0010FFFD ligature ǆ Ǳ',
]
STRESS_TEXT = "\n".join(STRESS_LINES) + "\nno final newline"

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                  r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


class GoldenError(Exception):
    """A missing input or a failed tool: reported as one line, exit status 2."""


# ---- text and ids ------------------------------------------------------------------------------

def read_text(path):
    """A file's text as UTF-8, bytes as they are (no newline translation)."""
    try:
        return Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise GoldenError(f"{path}: no such file") from None
    except UnicodeDecodeError as error:
        raise GoldenError(f"{path}: not UTF-8 ({error})") from None


def split_lines(text):
    """The lines of `text`, each with its '\\n' (only '\\n' ends a line), and a last line
    without one."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def ids_sha256(ids):
    """The goldens' hash of an id sequence: sha256 of the ids as little-endian uint32."""
    words = array.array("I", ids)
    if words.itemsize != 4:
        raise GoldenError(f"array 'I' has {words.itemsize} bytes on this platform, not 4")
    if sys.byteorder != "little":
        words.byteswap()
    return hashlib.sha256(words.tobytes()).hexdigest()


def shared_data_dir(shared=None):
    """The corpora folder: SHARED/data, SHARED from --shared, $ROTA_SHARED or ../shared."""
    base = Path(shared or os.environ.get("ROTA_SHARED") or REPO.parent / "shared")
    data = base / "data"
    missing = [name for name in CORPORA if not (data / name).is_file()]
    if missing:
        raise GoldenError(f"{data}: the shared corpora are missing ({', '.join(missing)}); "
                          "pass --shared DIR or set ROTA_SHARED to the folder holding data/")
    return data


# ---- JSON as the Node script wrote it ----------------------------------------------------------
# The committed files were written by JavaScript's JSON.stringify; writing the same bytes keeps
# regenerated files comparable with them: no spaces, non-ASCII characters as they are, keys that
# are array indices ("0", "17") first in numeric order, numbers in JavaScript's shortest form
# (0.0 as 0, 1e-7 as 1e-7).

_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*")


def _is_array_index(key):
    return _ARRAY_INDEX.fullmatch(key) is not None and int(key) < 2**32 - 1


def _ordered_keys(mapping):
    indices = sorted((key for key in mapping if _is_array_index(key)), key=int)
    return indices + [key for key in mapping if not _is_array_index(key)]


def js_number(value):
    """A number as JavaScript's Number.prototype.toString writes it."""
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        raise GoldenError(f"{value} has no JSON form")
    if value == int(value) and abs(value) < 1e21:
        return str(int(value))
    sign, digit_tuple, exponent = decimal.Decimal(repr(value)).as_tuple()
    point = exponent + len(digit_tuple)  # value = 0.DIGITS * 10**point
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    prefix = "-" if sign else ""
    if 0 < point <= 21:
        return prefix + (digits + "0" * (point - len(digits)) if len(digits) <= point
                         else digits[:point] + "." + digits[point:])
    if -6 < point <= 0:
        return prefix + "0." + "0" * -point + digits
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{prefix}{mantissa}e{'+' if point - 1 >= 0 else '-'}{abs(point - 1)}"


def js_json(value):
    """`value` as JSON.stringify(value) writes it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return js_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(js_json(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(key, ensure_ascii=False) + ":" + js_json(value[key])
                              for key in _ordered_keys(value)) + "}"
    raise GoldenError(f"no JSON form for {type(value).__name__}")


def write_text(path, text):
    Path(path).write_bytes(text.encode("utf-8"))


# ---- training helpers --------------------------------------------------------------------------

def train(model, files, normalizer=None, pre_tokenizer=None):
    """The reference's default trainer for `model` on `files` (without its progress bars); the
    trained tokenizer.json."""
    tokenizer = Tokenizer(model)
    if normalizer is not None:
        tokenizer.normalizer = normalizer
    if pre_tokenizer is not None:
        tokenizer.pre_tokenizer = pre_tokenizer
    trainer = model.get_trainer()
    trainer.show_progress = False
    tokenizer.train([str(file) for file in files], trainer)
    return json.loads(tokenizer.to_str())


def merge_pair(merge):
    """A trained merge, saved as ["a", "b"] or as "a b"."""
    if isinstance(merge, list):
        return merge[0], merge[1]
    parts = merge.split(" ")
    return parts[0], parts[1]


def extend_with_merges(vocab, trained_merges, size):
    """Adds the trained merges whose parts are in `vocab`, in order, until `vocab` has `size`
    entries; returns the merges kept."""
    merges = []
    for merge in trained_merges:
        a, b = merge_pair(merge)
        if len(vocab) >= size:
            break
        if a not in vocab or b not in vocab:
            continue
        merges.append([a, b])
        vocab.setdefault(a + b, len(vocab))
    return merges


def by_id(vocab):
    """A {token: id} vocabulary's tokens in id order."""
    return [token for token, _ in sorted(vocab.items(), key=lambda item: item[1])]


def byte_token(byte):
    return f"<0x{byte:02X}>"


def byte_level_chars():
    """The byte-level alphabet: printable bytes stand for themselves, the others for 256 + n."""
    chars, shifted = [], 0
    for byte in range(256):
        if 33 <= byte <= 126 or 161 <= byte <= 172 or byte >= 174:
            chars.append(chr(byte))
        else:
            chars.append(chr(256 + shifted))
            shifted += 1
    return chars


def byte_level_bpe(corpus, size):
    """A byte-level BPE of `size` tokens: the 256 byte characters, then the trained merges."""
    trained = train(models.BPE(), [corpus],
                    pre_tokenizer=pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True))
    vocab = {char: i for i, char in enumerate(byte_level_chars())}
    merges = extend_with_merges(vocab, trained["model"]["merges"], size)
    return vocab, merges


def added(id_, content, special=True, **extra):
    token = {"id": id_, "content": content, "single_word": False, "lstrip": False,
             "rstrip": False, "normalized": not special, "special": special}
    token.update(extra)
    return token


def doc(**parts):
    """A tokenizer.json document: the top-level keys in the reference's order, model last."""
    result = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
              "normalizer": None, "pre_tokenizer": None, "post_processor": None, "decoder": None}
    result.update(parts)
    return result


def special(token, type_id=0):
    return {"SpecialToken": {"id": token, "type_id": type_id}}


def sequence(name, type_id=0):
    return {"Sequence": {"id": name, "type_id": type_id}}


def template(single, pair, specials):
    return {"type": "TemplateProcessing", "single": single, "pair": pair,
            "special_tokens": {token: {"id": token, "ids": [id_], "tokens": [token]}
                               for token, id_ in specials}}


def bpe_model(vocab, merges, unk_token=None, prefix=None, suffix=None, fuse_unk=False,
              byte_fallback=False, ignore_merges=False):
    return {"type": "BPE", "dropout": None, "unk_token": unk_token,
            "continuing_subword_prefix": prefix, "end_of_word_suffix": suffix,
            "fuse_unk": fuse_unk, "byte_fallback": byte_fallback, "ignore_merges": ignore_merges,
            "vocab": vocab, "merges": merges}


BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
              "use_regex": True}
SPM_STYLE_DECODER = {"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"},
    {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}


# ---- a BPE trainer of our own ------------------------------------------------------------------
# For the options the reference's default trainer does not set: continuing_subword_prefix and
# end_of_word_suffix. Counts pairs over distinct words weighted by frequency; merges the most
# frequent pair, the first seen among equals.

_JS_WHITESPACE = re.compile(
    "[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+")


def _is_word_char(char):
    return char.isascii() and (char.isalnum() or char == "_")


def split_at_non_word(word):
    """Cuts `word` before and after each character outside [A-Za-z0-9_]; no empty pieces."""
    pieces, start = [], 0
    for i in range(1, len(word)):
        if not _is_word_char(word[i]) or not _is_word_char(word[i - 1]):
            pieces.append(word[start:i])
            start = i
    pieces.append(word[start:])
    return pieces


def subword_words(text, count):
    """The first `count` whitespace-separated words of `text`, cut at non-word characters."""
    words = [word for word in _JS_WHITESPACE.split(text) if word][:count]
    return [piece for word in words for piece in split_at_non_word(word)]


def apply_merge(symbols, a, b, joined):
    i = 0
    while i + 1 < len(symbols):
        if symbols[i] == a and symbols[i + 1] == b:
            symbols[i:i + 2] = [joined]
        i += 1


def train_subword_bpe(words, merge_count, prefix, suffix):
    """BPE with a continuation prefix and an end-of-word suffix: (vocabulary in order, merges)."""
    counts = {}
    for word in words:
        counts[word] = counts.get(word, 0) + 1
    split = [[(prefix if i > 0 else "") + char + (suffix if i == len(word) - 1 else "")
              for i, char in enumerate(word)] for word in counts]
    frequencies = list(counts.values())
    vocab = dict.fromkeys(symbol for symbols in split for symbol in symbols)
    merges = []
    for _ in range(merge_count):
        pairs = {}
        for symbols, frequency in zip(split, frequencies):
            for i in range(len(symbols) - 1):
                pair = (symbols[i], symbols[i + 1])
                pairs[pair] = pairs.get(pair, 0) + frequency
        if not pairs:
            break
        a, b = max(pairs, key=pairs.get)  # the first of the most frequent
        joined = a + (b[len(prefix):] if b.startswith(prefix) else b)
        merges.append([a, b])
        vocab[joined] = None
        for symbols in split:
            apply_merge(symbols, a, b, joined)
    return list(vocab), merges


# ---- SentencePiece ----------------------------------------------------------------------------

def train_sentencepiece(corpus, tmp):
    """Trains a unigram SentencePiece model (nmt_nfkc) with Debian's spm_train; its bytes."""
    prefix = Path(tmp) / "spm"
    command = ["spm_train", f"--input={corpus}", f"--model_prefix={prefix}", "--vocab_size=2000",
               "--model_type=unigram", "--normalization_rule_name=nmt_nfkc",
               "--character_coverage=1.0", "--minloglevel=2", "--num_threads=2"]
    try:
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except FileNotFoundError:
        raise GoldenError("spm_train not found: install Debian's sentencepiece package") from None
    except subprocess.CalledProcessError as error:
        detail = error.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        raise GoldenError(f"spm_train failed (exit {error.returncode}): {detail[0]}") from None
    return Path(f"{prefix}.model").read_bytes()


def _varint(buf, pos):
    value, shift = 0, 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def protobuf_fields(buf):
    """(field number, value) of a protobuf message: varints as int, length-delimited as bytes,
    32-bit as float; 64-bit fields are skipped."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield field, value
        elif wire == 2:
            length, pos = _varint(buf, pos)
            yield field, bytes(buf[pos:pos + length])
            pos += length
        elif wire == 5:
            yield field, struct.unpack_from("<f", buf, pos)[0]
            pos += 4
        elif wire == 1:
            pos += 8
        else:
            raise GoldenError(f"sentencepiece model: protobuf wire type {wire} is not supported")


def read_sentencepiece(model):
    """ModelProto.pieces (1) {piece (1), score (2), type (3)} and normalizer_spec (3)
    {precompiled_charsmap (2)}: ([piece, score] list, id of the unknown piece, charsmap)."""
    vocab, unk, charsmap = [], 0, b""
    for field, value in protobuf_fields(model):
        if field == 1:
            piece, score, kind = "", 0.0, 1
            for inner, item in protobuf_fields(value):
                if inner == 1:
                    piece = item.decode("utf-8")
                elif inner == 2:
                    score = item
                elif inner == 3:
                    kind = item
            if kind == 2:
                unk = len(vocab)
            vocab.append([piece, score])
        elif field == 3:
            for inner, item in protobuf_fields(value):
                if inner == 2:
                    charsmap = item
    return vocab, unk, charsmap


# ---- the tokenizers ----------------------------------------------------------------------------

def gpt2_doc(vocab, merges):
    return doc(
        added_tokens=[added(len(vocab), "<|endoftext|>")],
        pre_tokenizer={"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                       "use_regex": True},
        post_processor={"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                        "use_regex": True},
        decoder=BYTE_LEVEL,
        model=bpe_model(vocab, merges))


def llama3_doc(vocab, merges):
    """Llama 3 style: a Split regex then ByteLevel without its regex, ignore_merges."""
    base = len(vocab)
    begin = "<|begin_of_text|>"
    return doc(
        added_tokens=[added(base, begin), added(base + 1, "<|end_of_text|>"),
                      added(base + 2, "<mask>", lstrip=True)],
        normalizer=None,
        pre_tokenizer={"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": LLAMA3_PATTERN}, "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": False}]},
        post_processor=template([special(begin), sequence("A")],
                                [special(begin), sequence("A"), special(begin, 1),
                                 sequence("B", 1)],
                                [(begin, base)]),
        decoder=BYTE_LEVEL,
        model=bpe_model(vocab, merges, ignore_merges=True))


def bert_wordpiece_doc(corpus):
    """WordPiece, BERT style: 5 specials, then the trained vocabulary up to 3000 tokens."""
    trained = train(models.WordPiece(), [corpus],
                    normalizer=normalizers.BertNormalizer(lowercase=True),
                    pre_tokenizer=pre_tokenizers.BertPreTokenizer())
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {token: i for i, token in enumerate(specials)}
    for token in by_id(trained["model"]["vocab"]):
        if len(vocab) >= 3000:
            break
        vocab.setdefault(token, len(vocab))
    return doc(
        added_tokens=[added(i, token) for i, token in enumerate(specials)],
        normalizer={"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                    "strip_accents": None, "lowercase": True},
        pre_tokenizer={"type": "BertPreTokenizer"},
        post_processor=template([special("[CLS]"), sequence("A"), special("[SEP]")],
                                [special("[CLS]"), sequence("A"), special("[SEP]"),
                                 sequence("B", 1), special("[SEP]", 1)],
                                [("[CLS]", 2), ("[SEP]", 3)]),
        decoder={"type": "WordPiece", "prefix": "##", "cleanup": True},
        model={"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
               "max_input_chars_per_word": 100, "vocab": vocab})


def unigram_metaspace_doc(corpus):
    """Unigram with Metaspace (ALBERT/T5 style), <unk> at 0 and byte fallback."""
    trained = train(models.Unigram(), [corpus], pre_tokenizer=pre_tokenizers.Metaspace(
        replacement="▁", prepend_scheme="always", split=True))
    vocab = [["<unk>", 0.0], ["<s>", 0.0], ["</s>", 0.0], ["<mask>", 0.0]]
    vocab += [[byte_token(byte), 0.0] for byte in range(256)]
    seen = {piece for piece, _ in vocab}
    for piece, score in trained["model"]["vocab"]:
        if len(vocab) >= 3000:
            break
        if piece not in seen:
            vocab.append([piece, score])
            seen.add(piece)
    return doc(
        added_tokens=[added(0, "<unk>"), added(1, "<s>"), added(2, "</s>"),
                      added(3, "<mask>", lstrip=True, rstrip=False)],
        normalizer={"type": "Sequence", "normalizers": [
            {"type": "NFKC"}, {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]},
        pre_tokenizer={"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first",
                       "split": True},
        post_processor=template([sequence("A"), special("</s>")],
                                [sequence("A"), special("</s>"), sequence("B", 1),
                                 special("</s>", 1)],
                                [("</s>", 2)]),
        decoder=SPM_STYLE_DECODER,
        model={"type": "Unigram", "unk_id": 0, "vocab": vocab, "byte_fallback": True})


def spm_precompiled_doc(corpus, tmp):
    """Unigram from a SentencePiece model (nmt_nfkc): the Precompiled normalizer's charsmap."""
    vocab, unk, charsmap = read_sentencepiece(train_sentencepiece(corpus, tmp))
    metaspace = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always",
                 "split": True}
    return doc(
        added_tokens=[added(i, vocab[i][0]) for i in range(3)],
        normalizer={"type": "Sequence", "normalizers": [
            {"type": "Precompiled",
             "precompiled_charsmap": base64.b64encode(charsmap).decode("ascii")},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]},
        pre_tokenizer=metaspace,
        decoder=dict(metaspace),
        model={"type": "Unigram", "unk_id": unk, "vocab": vocab, "byte_fallback": False})


def wordlevel_doc(corpus):
    """WordLevel (lowercased, up to 4000 words, then the digits) with the remaining normalizers
    and pre-tokenizers."""
    trained = train(models.WordLevel(), [corpus], pre_tokenizer=pre_tokenizers.Whitespace())
    vocab = {"[UNK]": 0}
    for token in by_id(trained["model"]["vocab"]):
        if len(vocab) >= 4000:
            break
        vocab.setdefault(token.lower(), len(vocab))
    for digit in "0123456789":
        vocab.setdefault(digit, len(vocab))
    return doc(
        added_tokens=[added(0, "[UNK]"), added(len(vocab), "dont", False, single_word=True)],
        normalizer={"type": "Sequence", "normalizers": [
            {"type": "NFKD"}, {"type": "StripAccents"}, {"type": "Lowercase"},
            {"type": "Strip", "strip_left": True, "strip_right": True},
            {"type": "Replace", "pattern": {"String": "'"}, "content": ""}, {"type": "NFC"}]},
        pre_tokenizer={"type": "Sequence", "pretokenizers": [
            {"type": "WhitespaceSplit"}, {"type": "Digits", "individual_digits": True},
            {"type": "Punctuation", "behavior": "Contiguous"}, {"type": "Whitespace"}]},
        post_processor={"type": "BertProcessing", "sep": ["[UNK]", 0], "cls": ["[UNK]", 0]},
        decoder=None,
        model={"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"})


def bert_cased_doc(bert):
    """The WordPiece vocabulary with a BertNormalizer that keeps case and accents."""
    return {**bert,
            "normalizer": {"type": "BertNormalizer", "clean_text": True,
                           "handle_chinese_chars": False, "strip_accents": False,
                           "lowercase": False},
            "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": False}}


def bpe_subword_unk_doc(text):
    """BPE with a continuation prefix, an end-of-word suffix, <unk> (fused) and byte fallback
    for ASCII bytes only (other unknown characters become <unk>); Split with invert."""
    symbols, merges = train_subword_bpe(subword_words(text, 60000), 400, "##", "</w>")
    vocab = {"<unk>": 0}
    for byte in range(128):
        vocab[byte_token(byte)] = len(vocab)
    for symbol in symbols:
        vocab.setdefault(symbol, len(vocab))
    return doc(
        added_tokens=[added(0, "<unk>")],
        normalizer={"type": "Sequence", "normalizers": [
            {"type": "NFD"},
            {"type": "BertNormalizer", "clean_text": False, "handle_chinese_chars": True,
             "strip_accents": False, "lowercase": False}]},
        pre_tokenizer={"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": r"\w+|[^\w\s]+"}, "behavior": "Removed",
             "invert": True},
            {"type": "Split", "pattern": {"String": "-"}, "behavior": "MergedWithNext",
             "invert": False},
            {"type": "Punctuation", "behavior": "MergedWithPrevious"}]},
        decoder={"type": "Sequence", "decoders": [
            {"type": "ByteFallback"},
            {"type": "Replace", "pattern": {"String": "##"}, "content": ""},
            {"type": "BPEDecoder", "suffix": "</w>"}]},
        model=bpe_model(vocab, merges, unk_token="<unk>", prefix="##", suffix="</w>",
                        fuse_unk=True, byte_fallback=True))


def llama2_doc(corpus):
    """Llama 2 style: no pre-tokenizer, a Prepend + Replace normalizer, BPE with byte fallback."""
    trained = train(models.BPE(), [corpus], normalizer=normalizers.Sequence(
        [normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")]))
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for byte in range(256):
        vocab[byte_token(byte)] = len(vocab)
    for token in by_id(trained["model"]["vocab"]):
        if len(token) == 1:
            vocab.setdefault(token, len(vocab))
    merges = extend_with_merges(vocab, trained["model"]["merges"], 2500)
    return doc(
        added_tokens=[added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")],
        normalizer={"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
        pre_tokenizer=None,
        post_processor=template([special("<s>"), sequence("A")],
                                [special("<s>"), sequence("A"), special("<s>", 1),
                                 sequence("B", 1)],
                                [("<s>", 1)]),
        decoder=SPM_STYLE_DECODER,
        model=bpe_model(vocab, merges, unk_token="<unk>", fuse_unk=True, byte_fallback=True))


def unigram_never_doc(unigram):
    """Metaspace without prepending or splitting, over the Unigram vocabulary."""
    metaspace = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never",
                 "split": False}
    return {**unigram,
            "normalizer": {"type": "Sequence",
                           "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]},
            "pre_tokenizer": {"type": "Sequence",
                              "pretokenizers": [{"type": "WhitespaceSplit"}, metaspace]},
            "decoder": dict(metaspace)}


def roberta_doc(gpt2_vocab, merges):
    """RoBERTa style: ByteLevel with a prefix space after contiguous digit runs, <unk> in the
    BPE model (fuse_unk false), rstrip and single_word added tokens, RobertaProcessing."""
    vocab = dict(gpt2_vocab)
    base = len(vocab)
    for i, token in enumerate(["<s>", "<pad>", "</s>", "<unk>", "<mask>", "[R]", "word"]):
        vocab[token] = base + i
    return doc(
        added_tokens=[added(base, "<s>"), added(base + 1, "<pad>"), added(base + 2, "</s>"),
                      added(base + 3, "<unk>"), added(base + 4, "<mask>", lstrip=True),
                      added(base + 5, "[R]", False, rstrip=True, normalized=False),
                      added(base + 6, "word", True, single_word=True)],
        pre_tokenizer={"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": False}, dict(BYTE_LEVEL)]},
        post_processor={"type": "RobertaProcessing", "sep": ["</s>", base + 2],
                        "cls": ["<s>", base], "trim_offsets": True, "add_prefix_space": True},
        decoder=BYTE_LEVEL,
        model=bpe_model(vocab, merges, unk_token="<unk>", prefix="", suffix=""))


def build_tokenizers(data, tmp):
    """Trains every tokenizer: {name: tokenizer.json document}, in the goldens' order."""
    shakespeare = data / SHAKESPEARE
    gpt2_vocab, gpt2_merges = byte_level_bpe(shakespeare, 3000)
    docs = {"gpt2_bpe": gpt2_doc(gpt2_vocab, gpt2_merges),
            "llama3_bpe": llama3_doc(gpt2_vocab, gpt2_merges),
            "bert_wordpiece": bert_wordpiece_doc(shakespeare),
            "unigram_metaspace": unigram_metaspace_doc(shakespeare),
            "spm_precompiled_unigram": spm_precompiled_doc(shakespeare, tmp),
            "wordlevel_variants": wordlevel_doc(shakespeare)}
    docs["bert_cased_variant"] = bert_cased_doc(docs["bert_wordpiece"])
    docs["bpe_subword_unk"] = bpe_subword_unk_doc(read_text(shakespeare))
    docs["llama2_bpe"] = llama2_doc(data / "sst-2" / "dev.tsv")
    docs["unigram_metaspace_never"] = unigram_never_doc(docs["unigram_metaspace"])
    docs["roberta_bpe"] = roberta_doc(gpt2_vocab, gpt2_merges)
    return docs


# ---- goldens -----------------------------------------------------------------------------------

def encode_lines(tokenizer, text):
    """The ids of `text` encoded line by line (each line with its '\\n'), no special tokens."""
    encodings = tokenizer.encode_batch(split_lines(text), add_special_tokens=False)
    return [id_ for encoding in encodings for id_ in encoding.ids]


def encode_decode(tokenizer, line):
    """{ids, decoded}: `line` encoded without special tokens and its ids decoded with them."""
    ids = tokenizer.encode(line, add_special_tokens=False).ids
    return {"ids": ids, "decoded": tokenizer.decode(ids, skip_special_tokens=False)}


def corpus_golden(tokenizer, text):
    ids = encode_lines(tokenizer, text)
    return {"count": len(ids), "sha256": ids_sha256(ids)}


def sample_goldens(tokenizer, sample_lines):
    return [{"line": i, **encode_decode(tokenizer, sample_lines[i])}
            for i in range(0, len(sample_lines), SAMPLE_STEP)]


def golden_entry(tokenizer, texts, stress_lines, sample_lines):
    """What goldens.json holds for one tokenizer; `texts` maps the corpora to encode to their
    text."""
    return {"corpora": {corpus: corpus_golden(tokenizer, text) for corpus, text in texts.items()},
            "stress": [encode_decode(tokenizer, line) for line in stress_lines],
            "sample": sample_goldens(tokenizer, sample_lines)}


def tokenizer_path(name):
    """The committed file of a goldens.json entry: NAME.json or rota_export/KIND.json."""
    return GOLDEN_DIR / f"{name}.json"


def committed_tokenizer_names():
    """The tokenizer.json files committed beside goldens.json, as goldens.json names them."""
    names = [path.stem for path in sorted(GOLDEN_DIR.glob("*.json"))
             if path.name not in ("goldens.json", "components.json")]
    names += [f"rota_export/{path.stem}" for path in sorted(EXPORT_DIR.glob("*.json"))]
    return names


def charsmap_of(spm_doc):
    """The Precompiled normalizer's charsmap in a tokenizer.json document, as bytes."""
    for normalizer in spm_doc["normalizer"]["normalizers"]:
        if normalizer["type"] == "Precompiled":
            return base64.b64decode(normalizer["precompiled_charsmap"])
    raise GoldenError("spm_precompiled_unigram.json has no Precompiled normalizer")


def component_table(charsmap):
    """Each normalizer and pre-tokenizer alone: its JSON config (what Rota parses) with the
    reference's constructor of it. ([(config, normalizer)], [(config, pre-tokenizer)])."""
    n, p = normalizers, pre_tokenizers
    normalizer_list = [
        ({"type": "NFC"}, n.NFC()),
        ({"type": "NFD"}, n.NFD()),
        ({"type": "NFKC"}, n.NFKC()),
        ({"type": "NFKD"}, n.NFKD()),
        ({"type": "Lowercase"}, n.Lowercase()),
        ({"type": "StripAccents"}, n.StripAccents()),
        ({"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "StripAccents"}]},
         n.Sequence([n.NFD(), n.StripAccents()])),
        ({"type": "Strip", "strip_left": True, "strip_right": True}, n.Strip(True, True)),
        ({"type": "Strip", "strip_left": False, "strip_right": True}, n.Strip(False, True)),
        ({"type": "Strip", "strip_left": True, "strip_right": False}, n.Strip(True, False)),
        ({"type": "Prepend", "prepend": "▁"}, n.Prepend("▁")),
        ({"type": "Replace", "pattern": {"String": " "}, "content": "▁"}, n.Replace(" ", "▁")),
        ({"type": "Replace", "pattern": {"String": "e"}, "content": ""}, n.Replace("e", "")),
        ({"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
          "strip_accents": None, "lowercase": True},
         n.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None,
                          lowercase=True)),
        ({"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": False,
          "strip_accents": False, "lowercase": False},
         n.BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False,
                          lowercase=False)),
        ({"type": "BertNormalizer", "clean_text": False, "handle_chinese_chars": True,
          "strip_accents": True, "lowercase": False},
         n.BertNormalizer(clean_text=False, handle_chinese_chars=True, strip_accents=True,
                          lowercase=False)),
        # The charsmap is that of spm_precompiled_unigram.json (the C++ test reads it there).
        ({"type": "Precompiled", "precompiled_charsmap": None,
          "charsmap_of": "spm_precompiled_unigram.json"}, n.Precompiled(charsmap)),
    ]
    pre_tokenizer_list = [
        ({"type": "ByteLevel", "add_prefix_space": True, "use_regex": True},
         p.ByteLevel(add_prefix_space=True, use_regex=True)),
        ({"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
         p.ByteLevel(add_prefix_space=False, use_regex=True)),
        ({"type": "ByteLevel", "add_prefix_space": False, "use_regex": False},
         p.ByteLevel(add_prefix_space=False, use_regex=False)),
        ({"type": "Whitespace"}, p.Whitespace()),
        ({"type": "WhitespaceSplit"}, p.WhitespaceSplit()),
        ({"type": "BertPreTokenizer"}, p.BertPreTokenizer()),
    ]
    for replacement, scheme, split in (("▁", "always", True), ("▁", "first", True),
                                       ("_", "never", False)):
        pre_tokenizer_list.append(
            ({"type": "Metaspace", "replacement": replacement, "prepend_scheme": scheme,
              "split": split},
             p.Metaspace(replacement=replacement, prepend_scheme=scheme, split=split)))
    for individual in (True, False):
        pre_tokenizer_list.append(({"type": "Digits", "individual_digits": individual},
                                   p.Digits(individual_digits=individual)))
    for behavior in ("removed", "isolated", "merged_with_previous", "merged_with_next",
                     "contiguous"):
        name = "".join(word.capitalize() for word in behavior.split("_"))  # MergedWithNext
        pre_tokenizer_list.append(({"type": "Punctuation", "behavior": name},
                                   p.Punctuation(behavior=behavior)))
        for invert in (False, True):
            pre_tokenizer_list.append(
                ({"type": "Split", "pattern": {"String": " "}, "behavior": name, "invert": invert},
                 p.Split(" ", behavior=behavior, invert=invert)))
    pre_tokenizer_list.append(
        ({"type": "Sequence", "pretokenizers": [
            {"type": "WhitespaceSplit"}, {"type": "Punctuation", "behavior": "Isolated"},
            {"type": "Digits", "individual_digits": False}]},
         p.Sequence([p.WhitespaceSplit(), p.Punctuation(behavior="isolated"),
                     p.Digits(individual_digits=False)])))
    return normalizer_list, pre_tokenizer_list


def component_goldens(charsmap, stress_lines):
    """What components.json holds: each component's config and outputs on the stress lines."""
    normalizer_list, pre_tokenizer_list = component_table(charsmap)
    return {
        "normalizers": [{"config": config,
                         "outputs": [normalizer.normalize_str(line) for line in stress_lines]}
                        for config, normalizer in normalizer_list],
        "pre_tokenizers": [{"config": config,
                            "outputs": [[piece for piece, _ in pre.pre_tokenize_str(line)]
                                        for line in stress_lines]}
                           for config, pre in pre_tokenizer_list]}


def generate(data, out=GOLDEN_DIR):
    """Retrains every tokenizer and writes the goldens to `out` (tests/golden/tokenizers/); Rota's
    exports are read from tests/golden/tokenizers/rota_export/ whatever `out` is."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rota-goldens-") as tmp:
        docs = build_tokenizers(data, Path(tmp))
    write_text(out / "stress.txt", STRESS_TEXT)
    stress_lines = split_lines(STRESS_TEXT)
    texts = {corpus: read_text(data / corpus) for corpus in CORPORA}
    sample_lines = split_lines(texts[SAMPLE_CORPUS])
    components = component_goldens(charsmap_of(docs["spm_precompiled_unigram"]), stress_lines)
    write_text(out / "components.json", js_json(components) + "\n")
    sources = {}
    for name, tokenizer_doc in docs.items():
        sources[name] = js_json(tokenizer_doc)
        write_text(out / f"{name}.json", sources[name])
    # Rota's own tokenizers exported as tokenizer.hf.json (written by the C++ test
    # rota_export_golden.cpp with ROTA_UPDATE_EXPORT_GOLDENS=1): the reference encodes them too.
    for path in sorted(EXPORT_DIR.glob("*.json")):
        sources[f"rota_export/{path.stem}"] = read_text(path)
    summary = {}
    for name, source in sources.items():
        entry = golden_entry(Tokenizer.from_str(source), texts, stress_lines, sample_lines)
        summary[name] = entry
        print(name, js_json(entry["corpora"]), flush=True)
    write_text(out / "goldens.json", js_json(summary) + "\n")


# ---- --check -----------------------------------------------------------------------------------

def first_difference(got, want):
    """The first index where two sequences differ (the shorter one's length if one is a prefix
    of the other), or None when they are equal."""
    for i, (a, b) in enumerate(zip(got, want)):
        if a != b:
            return i
    return None if len(got) == len(want) else min(len(got), len(want))


def describe_difference(where, got, want, width=8):
    """'' when equal, else one line: where, the first differing index and what follows it."""
    i = first_difference(got, want)
    if i is None:
        return ""
    unit = "character" if isinstance(got, str) else "index"
    return (f"{where}: first difference at {unit} {i} (lengths {len(got)} and {len(want)}): "
            f"got {got[i:i + width]!r}, want {want[i:i + width]!r}")


def compare_cases(where, got, want):
    """Differences between lists of {ids, decoded[, line]} cases."""
    if len(got) != len(want):
        return [f"{where}: {len(got)} cases, the golden has {len(want)}"]
    differences = []
    for i, (mine, theirs) in enumerate(zip(got, want)):
        case = f"{where}[{i}]" + (f" (line {theirs['line']})" if "line" in theirs else "")
        if mine.get("line") != theirs.get("line"):
            differences.append(
                f"{case}: line {mine.get('line')}, the golden has {theirs.get('line')}")
        for key in ("ids", "decoded"):
            line = describe_difference(f"{case} {key}", mine[key], theirs[key])
            if line:
                differences.append(line)
    return differences


def compare_entry(name, got, want):
    """Differences between a recomputed goldens.json entry and the committed one (`got` may
    hold only some of the corpora)."""
    where = f"goldens.json {name}"
    differences = []
    if set(want["corpora"]) != set(CORPORA):
        differences.append(f"{where} corpora: {sorted(want['corpora'])}, expected {list(CORPORA)}")
    for corpus, mine in got["corpora"].items():
        theirs = want["corpora"].get(corpus)
        if theirs is not None and mine != theirs:
            differences.append(
                f"{where} corpus {corpus}: {mine['count']} ids, sha256 {mine['sha256'][:16]}…; "
                f"the golden has {theirs['count']} ids, sha256 {theirs['sha256'][:16]}… (only "
                "the count and hash are committed, so the first differing index is unknown)")
    differences += compare_cases(f"{where} stress", got["stress"], want["stress"])
    differences += compare_cases(f"{where} sample", got["sample"], want["sample"])
    return differences


def compare_components(got, want):
    differences = []
    for kind in ("normalizers", "pre_tokenizers"):
        if len(got[kind]) != len(want[kind]):
            differences.append(f"components.json {kind}: {len(got[kind])} configurations, the "
                               f"golden has {len(want[kind])}")
            continue
        for i, (mine, theirs) in enumerate(zip(got[kind], want[kind])):
            config = json.dumps(theirs["config"], ensure_ascii=False)
            where = f"components.json {kind}[{i}] {config}"
            if mine["config"] != theirs["config"]:
                differences.append(f"{where}: config differs from this script's "
                                   f"{json.dumps(mine['config'], ensure_ascii=False)}")
                continue
            for line, (out, golden) in enumerate(zip(mine["outputs"], theirs["outputs"])):
                text = describe_difference(f"{where} stress line {line}", out, golden)
                if text:
                    differences.append(text)
            if len(mine["outputs"]) != len(theirs["outputs"]):
                differences.append(f"{where}: {len(mine['outputs'])} outputs, the golden has "
                                   f"{len(theirs['outputs'])}")
    return differences


def check_inputs():
    """Differences in what the goldens were made from: the stress text, and a tokenizer file
    for each goldens.json entry and the other way round."""
    differences = []
    text = describe_difference("stress.txt (against this script's stress text)",
                               read_text(GOLDEN_DIR / "stress.txt"), STRESS_TEXT, width=20)
    if text:
        differences.append(text)
    goldens, files = read_goldens(), committed_tokenizer_names()
    for name in sorted(set(files) - set(goldens)):
        differences.append(f"{name}.json: no entry in goldens.json")
    for name in sorted(set(goldens) - set(files)):
        differences.append(f"goldens.json {name}: no file {name}.json")
    return differences


def read_goldens():
    return json.loads(read_text(GOLDEN_DIR / "goldens.json"))


def committed_stress_lines():
    return split_lines(read_text(GOLDEN_DIR / "stress.txt"))


def check_tokenizer(name, want, texts, stress_lines, sample_lines):
    """Differences between the committed goldens.json entry `want` of tokenizer `name` and the
    installed reference's encoding of the committed file (only the corpora in `texts`)."""
    tokenizer = Tokenizer.from_file(str(tokenizer_path(name)))
    return compare_entry(name, golden_entry(tokenizer, texts, stress_lines, sample_lines), want)


def check_components(stress_lines):
    """Differences between components.json and the installed reference's components."""
    spm_doc = json.loads(read_text(tokenizer_path("spm_precompiled_unigram")))
    got = component_goldens(charsmap_of(spm_doc), stress_lines)
    return compare_components(got, json.loads(read_text(GOLDEN_DIR / "components.json")))


def check(data, corpora=CORPORA, log=print):
    """Re-encodes every committed input with the installed reference and compares with the
    committed goldens (of the whole corpora, only `corpora`); the differences, one line each."""
    differences = check_inputs()
    stress_lines = committed_stress_lines()
    texts = {corpus: read_text(data / corpus) for corpus in corpora}
    sample_lines = split_lines(read_text(data / SAMPLE_CORPUS))
    files = set(committed_tokenizer_names())
    for name, want in read_goldens().items():
        if name not in files:
            continue  # reported by check_inputs
        start = time.perf_counter()
        found = check_tokenizer(name, want, texts, stress_lines, sample_lines)
        differences += found
        log(f"{name}: {f'{len(found)} differences' if found else 'match'} "
            f"({time.perf_counter() - start:.1f} s)")
    found = check_components(stress_lines)
    differences += found
    log(f"components: {f'{len(found)} differences' if found else 'match'}")
    return differences


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true",
                        help="retrain nothing: compare the committed goldens with this reference")
    parser.add_argument("--out", metavar="DIR", default=GOLDEN_DIR,
                        help="where to write the goldens (default: tests/golden/tokenizers)")
    parser.add_argument("--shared", metavar="DIR",
                        help="the folder holding data/ (default: $ROTA_SHARED or ../shared)")
    args = parser.parse_args(argv)
    try:
        data = shared_data_dir(args.shared)
        if not args.check:
            generate(data, args.out)
            return 0
        print(f"checking {GOLDEN_DIR.relative_to(REPO)} against tokenizers "
              f"{tokenizers.__version__} (corpora in {data})", flush=True)
        start = time.perf_counter()
        differences = check(data, log=lambda line: print(line, flush=True))
    except GoldenError as error:
        print(f"make_goldens.py: {error}", file=sys.stderr)
        return 2
    for line in differences:
        print(line)
    elapsed = time.perf_counter() - start
    if differences:
        print(f"{len(differences)} differences ({elapsed:.0f} s)")
        return 1
    print(f"all goldens match ({elapsed:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
