# rota: Rota's runs, tokenizers and training from Python, through the native module rota._native.
"""Rota from Python (docs/python-native.md).

    import rota
    run = rota.load("runs/default")           # a run directory or a checkpoint directory
    logits = run.logits(run.encode("ROMEO:"))   # float32 [1, N, V]
    print(run.generate("ROMEO:", max_tokens=100, temperature=0.8, seed=1))
    run = rota.train("recipes/tests/tiny_causal_lm.txtpb", ["train.steps=5"], out="/tmp/tiny")

The native API (load, train, training_batches, load_tokenizer, Error, IGNORE_INDEX, Run, Tokenizer,
TrainingBatches) comes from the
compiled module rota._native. Without it `import rota` still works (rota.torch needs only PyTorch
and NumPy) and using the native API raises ImportError saying how to build it. This file does not
import torch.
"""
import os
import pkgutil

# The module may sit next to this file (an installed package) or in the build tree: CMake writes
# <build>/python/rota/_native*.so, a `rota` folder without __init__.py. Extending __path__ with
# the `rota` folders of the other sys.path entries (PYTHONPATH=python:build/python), ROTA_NATIVE_DIR
# and <repo>/build/python/rota lets the package found first import the module from there.
__path__ = pkgutil.extend_path(__path__, __name__)
_here = os.path.dirname(os.path.abspath(__file__))
for _folder in (os.environ.get("ROTA_NATIVE_DIR", ""),
                os.path.join(_here, os.pardir, os.pardir, "build", "python", "rota")):
    if _folder and os.path.isdir(_folder) and os.path.abspath(_folder) not in map(
            os.path.abspath, __path__):
        __path__.append(os.path.abspath(_folder))



def _load_sentencepiece_apart():
    """Debian's libsentencepiece.so exports the protobuf 3.14 copy it was built with; rota._native
    uses libprotobuf.so 3.21 (python/CMakeLists.txt). Loaded first with RTLD_DEEPBIND, the
    sentencepiece libraries bind to their own copy; the module, loaded next, binds to 3.21 (it
    lists libprotobuf.so before them). Without this, SentencePiece tokenizers abort on a protobuf
    version check."""
    import ctypes
    flags = os.RTLD_NOW | os.RTLD_LOCAL | getattr(os, "RTLD_DEEPBIND", 0)
    for library in ("libsentencepiece.so.0", "libsentencepiece_train.so.0"):
        try:
            ctypes.CDLL(library, mode=flags)
        except OSError:  # not installed: the module's own import then says what is missing
            pass


_load_sentencepiece_apart()

_NATIVE_NAMES = ("Error", "RecipeError", "IGNORE_INDEX", "Run", "Tokenizer", "TrainingBatches",
                 "load", "load_tokenizer", "train", "training_batches")

try:
    from ._native import (IGNORE_INDEX, Error, RecipeError, Run, Tokenizer, TrainingBatches,
                          __version__, load, load_tokenizer, train, training_batches)
    _native_error = None
except ImportError as error:  # not built, or built for another Python
    _native_error = error
    try:
        from importlib.metadata import version as _version
        __version__ = _version("rota")
    except Exception:  # not installed either: running from the source tree
        __version__ = "unknown"


def __getattr__(name):
    """Names of the native API when rota._native could not be imported: a clear ImportError."""
    if name in _NATIVE_NAMES and _native_error is not None:
        raise ImportError(
            f"rota.{name} needs the native module rota._native, which could not be imported "
            f"({_native_error}). Build it with `cmake --build build --target rota_native` (the "
            f"README's `make build` builds it) and put build/python on PYTHONPATH next to "
            f"python/, set ROTA_NATIVE_DIR to the folder holding _native*.so, or install the "
            f"package: python3 -m venv --system-site-packages .venv && .venv/bin/pip install "
            f"./python") from _native_error
    raise AttributeError(f"module 'rota' has no attribute '{name}'")


__all__ = list(_NATIVE_NAMES) + ["__version__"]
