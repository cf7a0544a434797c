# Rota's models in PyTorch: the encoder trunk, causal LM, masked LM and classifier.
"""Same structure and parameter names as models/ in C++:

  Encoder: embed (× √E if scale_embeddings) [+ sinusoidal or learned positions] → dropout →
           blocks → final_norm (pre-norm models)
  block, pre-norm:  h = x + drop(attn(ln1(x)));  y = h + drop(ffn(ln2(h)))
  block, post-norm: h = ln1(x + drop(attn(x)));  y = ln2(h + drop(ffn(h)))
  norms: LayerNorm or RMSNorm (norm_kind); bias=False drops every block bias and LayerNorm β,
         biases.{qkv, attention_out, ffn, norms} set them per part (config.has_bias);
  ffn: fc2(act(fc1)) or, gated (swiglu, geglu), down_proj(act(gate_proj) ⊙ up_proj)
  CausalLm:   logits = h Eᵀ (tied) or lm_head(h)
  MaskedLm:   logits = mlm_norm(h) Eᵀ + mlm_bias
  Classifier: logits = classifier(drop(pool(h))), pool = mean over real tokens or the first token
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import RotaConfig
from .layers import FeedForward, make_norm
from .linear_attention import LinearAttention
from .positions import LearnedPositionEmbedding, sinusoidal_table

IGNORE_INDEX = -100


class TransformerBlock(nn.Module):
    def __init__(self, config, causal, shared_t5=None, owns_shared=True, layer=0):
        super().__init__()
        e = config.width
        self.post_norm = config.post_norm
        self.ln1 = make_norm(config.norm_kind, e, config.norm_eps, config.has_bias("norms"))
        if config.attention == "linear":
            self.attn = LinearAttention(config, causal, layer)
        else:
            from .softmax_attention import SoftmaxAttention
            self.attn = SoftmaxAttention(config, causal, shared_t5, owns_shared)
        self.ln2 = make_norm(config.norm_kind, e, config.norm_eps, config.has_bias("norms"))
        self.ffn = FeedForward(e, config.ffn_hidden, config.activation, config.dropout,
                               config.has_bias("ffn"))
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x, key_mask=None):  # [B, N, E] → [B, N, E]
        if not self.post_norm:
            h = x + self.dropout(self.attn(self.ln1(x), key_mask))
            return h + self.dropout(self.ffn(self.ln2(h)))
        h = self.ln1(x + self.dropout(self.attn(x, key_mask)))
        return self.ln2(h + self.dropout(self.ffn(h)))

    def step(self, x, state):  # [B, E] → [B, E] (recurrent state, or a softmax key cache)
        if not self.post_norm:
            h = x + self.attn.step(self.ln1(x), state)
            return h + self.ffn(self.ln2(h))
        h = self.ln1(x + self.attn.step(x, state))
        return self.ln2(h + self.ffn(h))


class Encoder(nn.Module):
    def __init__(self, config, causal):
        super().__init__()
        self.config = config
        e, position = config.width, config.position
        self.embed = nn.Embedding(config.vocab_size, e)
        self.sinusoidal_base = None
        self.pos_embed = None
        if position.kind == "sinusoidal":
            self.sinusoidal_base = position.base
        elif position.add_sinusoidal and position.kind not in ("none", "learned_absolute"):
            self.sinusoidal_base = 10000.0
        if position.kind == "learned_absolute":
            self.pos_embed = LearnedPositionEmbedding(position.max_positions, e, config.init_std)
        self.dropout = nn.Dropout(config.dropout)
        shared_t5 = None
        if config.attention == "softmax" and config.hybrid is None:
            from .softmax_attention import make_shared_t5
            shared_t5 = make_shared_t5(config, causal)
        # Each block from its own config (a hybrid stack's blocks differ).
        self.blocks = nn.ModuleList(
            TransformerBlock(config.block_config(i), causal, shared_t5, owns_shared=i == 0,
                             layer=i)
            for i in range(config.layers))
        self.final_norm = (make_norm(config.norm_kind, e, config.norm_eps,
                                     config.has_bias("norms"))
                           if config.final_norm and not config.post_norm else None)

    def embed_tokens(self, ids, offset=0):  # [B, N] → [B, N, E]
        x = self.embed(ids)
        if self.config.scale_embeddings:
            x = x * math.sqrt(self.config.width)
        n = ids.shape[-1]
        if self.sinusoidal_base is not None:
            x = x + sinusoidal_table(n, self.config.width, offset, self.sinusoidal_base, x.dtype,
                                     x.device)
        if self.pos_embed is not None:
            x = x + self.pos_embed(n, offset)
        return x

    def forward(self, ids, key_mask=None):  # [B, N] → [B, N, E]
        x = self.dropout(self.embed_tokens(ids))
        for block in self.blocks:
            x = block(x, key_mask)
        return self.final_norm(x) if self.final_norm is not None else x

    @property
    def supports_step(self):
        """Every block linear (recurrent state), or a causal hybrid stack (linear blocks keep
        their state, softmax blocks a key/value cache)."""
        if self.config.hybrid is not None:
            return self.config.causal
        return self.config.attention == "linear"

    def initial_state(self, batch):
        weight = self.embed.weight
        return {"position": 0, "layers": [
            {} if not hasattr(block.attn, "initial_state")
            else block.attn.initial_state(batch, weight.dtype, weight.device)
            for block in self.blocks]}

    def step(self, ids, state):  # [B] → [B, E]
        if not self.supports_step:
            raise ValueError("step() needs linear attention (a recurrent state) or a causal "
                             "hybrid stack; this model uses softmax attention, so generate with "
                             "full forward passes")
        x = self.embed_tokens(ids.unsqueeze(1), state["position"]).squeeze(1)
        for block, layer_state in zip(self.blocks, state["layers"]):
            x = block.step(x, layer_state)
        state["position"] += 1
        return self.final_norm(x) if self.final_norm is not None else x


class RotaModel(nn.Module):
    """Common base: the config, and the loss of one batch as Rota's trainer computes it."""

    def __init__(self, config: RotaConfig):
        super().__init__()
        self.config = config.validate()


class CausalLm(RotaModel):
    def __init__(self, config):
        super().__init__(config)
        self.encoder = Encoder(config, causal=True)
        self.lm_head = (None if config.tie_embeddings else
                        nn.Linear(config.width, config.vocab_size, bias=False))

    def project(self, hidden):  # [..., E] → [..., V]
        if self.lm_head is not None:
            return self.lm_head(hidden)
        return hidden @ self.encoder.embed.weight.t()

    def forward(self, ids, key_mask=None):  # [B, N] → [B, N, V]
        return self.project(self.encoder(ids))

    def loss(self, ids, targets):
        """Mean cross-entropy over targets ≠ IGNORE_INDEX (targets: ids shifted by one)."""
        logits = self(ids)
        return F.cross_entropy(logits.flatten(0, -2), targets.flatten(), ignore_index=IGNORE_INDEX)

    def initial_state(self, batch=1):
        return self.encoder.initial_state(batch)

    def step(self, ids, state):  # [B] → [B, V]: next-token logits, O(1) per token
        return self.project(self.encoder.step(ids, state))

    @torch.no_grad()
    def generate(self, ids, max_new_tokens, temperature=1.0, top_k=0, generator=None,
                 eos_id=None):
        """Continues ids [N] or [B, N]: the recurrent state for linear attention (each token
        costs O(1)), full forward passes for softmax attention. temperature 0 is greedy."""
        single = ids.dim() == 1
        ids = ids.reshape(1, -1) if single else ids
        if ids.shape[1] == 0:
            raise ValueError("generate: the prompt must hold at least one token")
        out = ids
        if self.encoder.supports_step:
            state = self.initial_state(ids.shape[0])
            for t in range(ids.shape[1]):
                logits = self.step(ids[:, t], state)
        else:
            logits = self(ids)[:, -1]
        for _ in range(max_new_tokens):
            token = sample(logits, temperature, top_k, generator)
            out = torch.cat([out, token[:, None]], dim=1)
            if eos_id is not None and bool((token == eos_id).all()):
                break
            logits = self.step(token, state) if self.encoder.supports_step else self(out)[:, -1]
        return out[0] if single else out


def sample(logits, temperature=1.0, top_k=0, generator=None):
    """[B, V] → [B]: greedy when temperature is 0, else softmax(logits / T) over the top k."""
    if temperature == 0:
        return logits.argmax(-1)
    logits = logits / temperature
    if top_k and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits.float(), dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


class MaskedLm(RotaModel):
    def __init__(self, config):
        super().__init__(config)
        self.encoder = Encoder(config, causal=False)
        self.mlm_norm = nn.LayerNorm(config.width, eps=config.norm_eps)
        self.mlm_bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, ids, key_mask=None):  # [B, N] → [B, N, V]
        hidden = self.mlm_norm(self.encoder(ids, key_mask))
        return hidden @ self.encoder.embed.weight.t() + self.mlm_bias

    def loss(self, ids, targets, key_mask=None):
        """Mean cross-entropy over the masked positions (targets ≠ IGNORE_INDEX)."""
        logits = self(ids, key_mask)
        return F.cross_entropy(logits.flatten(0, -2), targets.flatten(), ignore_index=IGNORE_INDEX)


class Classifier(RotaModel):
    def __init__(self, config):
        super().__init__(config)
        self.encoder = Encoder(config, causal=False)
        self.dropout = nn.Dropout(config.dropout)
        self.classifier = nn.Linear(config.width, config.num_classes)

    def forward(self, ids, key_mask=None):  # [B, N] → [B, C]
        h = self.encoder(ids, key_mask)
        if self.config.pooling == "cls":
            pooled = h[:, 0]
        else:
            m = (key_mask.to(h.dtype) if key_mask is not None
                 else torch.ones(ids.shape, dtype=h.dtype, device=h.device)).unsqueeze(-1)
            pooled = (h * m).sum(1) / m.sum(1)
        return self.classifier(self.dropout(pooled))

    def loss(self, ids, labels, key_mask=None):
        return F.cross_entropy(self(ids, key_mask), labels)


MODEL_CLASSES = {"causal_lm": CausalLm, "masked_lm": MaskedLm, "classifier": Classifier}


def build_model(config):
    """The nn.Module a config describes (random initialisation; load a checkpoint next)."""
    config.validate()
    return MODEL_CLASSES[config.kind](config)
