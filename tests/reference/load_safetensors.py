#!/usr/bin/env python3
"""Load a Rota (or any) .safetensors file with numpy alone: name -> np.ndarray.

    from load_safetensors import load
    state = load("runs/tiny/checkpoints/step_000500/model.safetensors")
    model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})  # PyTorch

Run as a script to list the tensors (or dump them as JSON with --json).
"""
import json
import sys

import numpy as np

DTYPES = {"F32": np.float32, "F64": np.float64, "BF16": np.uint16, "I32": np.int32, "I64": np.int64}


def load(path):
    with open(path, "rb") as f:
        blob = f.read()
    n = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + n])
    header.pop("__metadata__", None)
    data = memoryview(blob)[8 + n:]
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        array = np.frombuffer(data[begin:end], dtype=np.dtype(DTYPES[info["dtype"]]).newbyteorder("<"))
        if info["dtype"] == "BF16":  # numpy has no bfloat16: widen the bits to float32
            array = (array.astype(np.uint32) << 16).view(np.float32)
        out[name] = array.reshape(info["shape"])
    return out


if __name__ == "__main__":
    tensors = load(sys.argv[1])
    if "--json" in sys.argv[2:]:
        json.dump({k: {"shape": list(v.shape), "values": v.ravel().tolist()} for k, v in tensors.items()},
                  sys.stdout)
    else:
        for name, array in tensors.items():
            print(f"{name}: {array.dtype} {list(array.shape)}")
