# rota.torch: Rota's models in plain PyTorch, loading Rota runs and checkpoints strictly.
"""
    import rota.torch as rt
    model = rt.from_pretrained("runs/my_run")       # a run, checkpoint or exported directory
    logits = model(torch.tensor([[1, 2, 3]]))       # [B, N, V]
    rt.save_checkpoint(model, "finetuned_ckpt", source="runs/my_run")

Needs only PyTorch and NumPy (the native `rota` module is used for tokenizers when present).
"""
from .checkpoint import CheckpointError, load, resolve_checkpoint, save_checkpoint
from .config import Biases, HybridConfig, PositionConfig, RopeScaling, RotaConfig
from .linear_attention import (LinearAttention, bidirectional_linear_attention,
                               causal_linear_attention)
from .models import (IGNORE_INDEX, CausalLm, Classifier, Encoder, MaskedLm, TransformerBlock,
                     build_model, sample)
from .positions import Lrpe, PermuteFormer


def from_pretrained(path, dtype=None, device="cpu"):
    """The model of a Rota run, checkpoint or `rota export hf` directory, in eval mode."""
    import torch
    model, _ = load(path, dtype=dtype or torch.float32, device=device)
    return model


def load_tokenizer(path):
    """The tokenizer of a run, checkpoint or export directory (or a tokenizer file), through the
    native `rota` module (Rota's own C++ tokenizers, so ids match training exactly)."""
    import os
    try:
        import rota as native
        native.load_tokenizer  # noqa: B018 - raises if the extension is not built
    except (ImportError, AttributeError) as e:
        raise ImportError("rota.torch.load_tokenizer needs the native rota module "
                          "(pip install ./python builds it)") from e
    if os.path.isdir(path):
        try:
            path = resolve_checkpoint(path)
        except CheckpointError:
            pass
        # An export (rota export hf) keeps Rota's own files in rota_tokenizer/: every kind has
        # them, while its tokenizer.json is the Hugging Face form, absent for SentencePiece.
        if os.path.isdir(os.path.join(path, "rota_tokenizer")):
            path = os.path.join(path, "rota_tokenizer")
    return native.load_tokenizer(path)
