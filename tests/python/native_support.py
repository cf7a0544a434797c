# Shared helpers of the rota._native tests: the built `rota` CLI, tiny runs, safetensors, numpy losses.
import json
import os
import shutil
import struct
import subprocess
import tempfile

import numpy as np

REPO = os.environ.get("ROTA_REPO") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
BINARY = os.environ.get("ROTA_BINARY") or os.path.join(REPO, "build", "rota")
TINY = {
    "causal_lm": os.path.join(REPO, "recipes", "tests", "tiny_causal_lm.txtpb"),
    "masked_lm": os.path.join(REPO, "recipes", "tests", "tiny_masked_lm.txtpb"),
    "classifier": os.path.join(REPO, "recipes", "tests", "tiny_classifier.txtpb"),
}
IGNORE = -100


def cli(*args, cwd=None):
    """Runs the rota CLI; returns its stdout (bytes). Fails the test on a non-zero exit."""
    done = subprocess.run([BINARY, *args], cwd=cwd, capture_output=True)
    if done.returncode != 0:
        raise AssertionError("rota %s failed (%d): %s" % (" ".join(args), done.returncode,
                                                          done.stderr.decode(errors="replace")))
    return done.stdout


def cli_train(kind, out, *overrides):
    args = ["train", TINY[kind], "--out", out]
    for override in overrides:
        args += ["--set", override]
    cli(*args)
    return out


def cli_eval(run, split, batches):
    """The key=value pairs of `rota eval`'s last line, as floats (split as a string)."""
    line = cli("eval", run, "--split", split, "--batches", str(batches)).decode().strip()
    pairs = dict(item.split("=", 1) for item in line.splitlines()[-1].split())
    return {k: (v if k == "split" else float(v)) for k, v in pairs.items()}


def read_safetensors(path):
    """name -> numpy array of a safetensors file (docs/checkpoints.md)."""
    dtypes = {"F32": np.float32, "F64": np.float64, "I32": np.int32, "I64": np.int64}
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        data = f.read()
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype=dtypes[entry["dtype"]]).reshape(
            entry["shape"])
    return out


def _crc32c_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
        table.append(crc)
    return table


_CRC32C = _crc32c_table()


def crc32c(data):
    """CRC-32C (Castagnoli), as Rota's checkpoints record it."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def perturbed_checkpoint(checkpoint, name, index, delta, out):
    """A copy of the checkpoint directory with one element of the f32 parameter `name` changed by
    delta, with the CRCs Rota checks brought up to date (the safetensors data_crc32c, the file's
    size/CRC record in state.binpb and state.binpb's own trailing CRC: docs/checkpoints.md)."""
    shutil.copytree(checkpoint, out)
    path = os.path.join(out, "model.safetensors")
    with open(path, "rb") as f:
        raw = bytearray(f.read())
    old_file_crc = crc32c(raw)
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + length])
    entry = header[name]
    assert entry["dtype"] == "F32"
    flat = int(np.ravel_multi_index(index, entry["shape"]))
    offset = 8 + length + entry["data_offsets"][0] + 4 * flat
    (value,) = struct.unpack("<f", raw[offset:offset + 4])
    raw[offset:offset + 4] = struct.pack("<f", value + delta)
    old_data_crc = header["__metadata__"]["data_crc32c"].encode()
    new_data_crc = ("%08x" % crc32c(raw[8 + length:])).encode()
    assert raw[8:8 + length].count(old_data_crc) == 1
    raw[8:8 + length] = raw[8:8 + length].replace(old_data_crc, new_data_crc)
    with open(path, "wb") as f:
        f.write(raw)
    state_path = os.path.join(out, "state.binpb")
    with open(state_path, "rb") as f:
        state = bytearray(f.read())
    body = state[:-5]
    assert state[-5] == (15 << 3) | 5 and body.count(struct.pack("<I", old_file_crc)) == 1
    body = body.replace(struct.pack("<I", old_file_crc), struct.pack("<I", crc32c(raw)))
    with open(state_path, "wb") as f:
        f.write(body + bytes([(15 << 3) | 5]) + struct.pack("<I", crc32c(body)))
    return out


def cross_entropy_sum(logits, targets):
    """Sum of -log softmax(logits)[target] over targets != IGNORE (float64), and their count."""
    logits = logits.astype(np.float64).reshape(-1, logits.shape[-1])
    targets = targets.reshape(-1)
    keep = targets != IGNORE
    logits, targets = logits[keep], targets[keep]
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -log_probs[np.arange(len(targets)), targets].sum(), int(keep.sum())


class TempDir:
    def __init__(self):
        self.path = tempfile.mkdtemp(prefix="rota-native-test-")

    def join(self, *parts):
        return os.path.join(self.path, *parts)

    def cleanup(self):
        shutil.rmtree(self.path, ignore_errors=True)
