# Rota's benchmark models (recipes/bench) in PyTorch, written for speed: the peer of `rota bench`.
"""The same models as Rota builds from a recipe (models/, framework/nn), as a PyTorch engineer
would write them for throughput:

  CausalLm: embed (tied) -> blocks -> final_norm -> logits = h @ embed^T
  MaskedLm: the same trunk, bidirectional -> mlm_norm -> logits = h @ embed^T + mlm_bias
  pre-norm block: h = x + attn(ln1(x)); y = h + ffn(ln2(h)), ffn = fc2(act(fc1(.)))
  attn: one fused q/k/v product (the three Linear weights concatenated), heads, phi on q and k,
      LRPE Type 2 (W_s = Lambda(s) P) on the features, linear attention without 1/sqrt(D) and
      without denominator, LayerNorm over the width ("attn.norm"), out_proj.
  causal attention: chunked (intra-chunk masked product + exclusive prefix sum of per-chunk
      K^T V states), all chunks at once in batched matmuls; bidirectional: Q (K^T diag(m) V).
  LRPE: phi(x) @ [P, P Sigma] in one matmul (P = I - 2 w w^T, Sigma = the signed pair swap),
      then y = u * cos + (u Sigma) * sin with per-channel angles s * theta.

Parameters carry Rota's dotted names (encoder.blocks.0.attn.q_proj.weight, ...), so a Rota
state dict or the f64 reference's parameter dict (tests/reference/train_step_reference.py)
loads as it is. The configuration is read from the recipe file (PeerConfig.from_recipe); a
recipe asking for anything this peer does not implement is refused with the field named.
"""
import math
import re
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

# ---- recipe text format (a small subset of protobuf text format) ----

_TOKEN = re.compile(r'\s+|#[^\n]*|"(?:[^"\\]|\\.)*"|[{}:;,\[\]<>]|[^\s{}:;,\[\]<>"#]+')


def parse_txtpb(text):
    """Protobuf text → {field: [values]}; a value is a string (scalars, unquoted) or a dict."""
    tokens = [t for t in _TOKEN.findall(text) if t.strip() and not t.startswith("#")]
    pos = 0

    def message(closing):
        nonlocal pos
        fields = {}
        while pos < len(tokens) and tokens[pos] != closing:
            name = tokens[pos]
            pos += 1
            if tokens[pos] == ":":
                pos += 1
            if tokens[pos] in ("{", "<"):
                end = "}" if tokens[pos] == "{" else ">"
                pos += 1
                value = message(end)
                pos += 1
            else:
                value = tokens[pos]
                if value.startswith('"'):
                    value = re.sub(r"\\(.)", r"\1", value[1:-1])
                pos += 1
            fields.setdefault(name, []).append(value)
            if pos < len(tokens) and tokens[pos] in (";", ","):
                pos += 1
        if closing is not None and pos >= len(tokens):
            raise ValueError("recipe: unbalanced braces")
        return fields

    return message(None)


class _Msg:
    """Typed read access to one parsed message with the proto's defaults; records what is read."""

    def __init__(self, fields, path):
        self.fields, self.path, self.read = fields or {}, path, set()

    def has(self, name):
        return name in self.fields

    def _raw(self, name, default):
        self.read.add(name)
        values = self.fields.get(name)
        return default if values is None else values[-1]

    def str(self, name, default=None):
        return self._raw(name, default)

    def int(self, name, default=None):
        v = self._raw(name, default)
        return None if v is None else int(v)

    def float(self, name, default=None):
        v = self._raw(name, default)
        return None if v is None else float(v)

    def bool(self, name, default=None):
        v = self._raw(name, default)
        if isinstance(v, bool) or v is None:
            return v
        if v in ("true", "True", "t", "1"):
            return True
        if v in ("false", "False", "f", "0"):
            return False
        raise ValueError(f"recipe: {self.path}.{name}: not a bool: {v}")

    def msg(self, name):
        self.read.add(name)
        values = self.fields.get(name)
        return _Msg(values[-1] if values else {}, f"{self.path}.{name}")

    def refuse_unread(self):
        """Fields present but not read are options this peer does not implement: refuse them."""
        extra = sorted(set(self.fields) - self.read)
        if extra:
            raise NotImplementedError(
                f"recipe: {self.path} sets {', '.join(extra)}, which the PyTorch peer does not "
                "implement (it would not be the same model)")


def _require(condition, message):
    if not condition:
        raise NotImplementedError("recipe: " + message + " (not implemented by the PyTorch peer)")


@dataclass
class PeerConfig:
    name: str
    kind: str  # "causal_lm" | "masked_lm"
    vocab_size: int
    width: int
    layers: int
    heads: int
    ffn_width: int
    activation: str  # "gelu" | "gelu_tanh" | "relu" | "silu"
    pre_norm: bool
    final_norm: bool
    norm_eps: float
    scale_embeddings: bool
    tie_embeddings: bool
    init_std: float
    feature_map: str  # "one_plus_elu" | "relu" | "silu" | "identity" | "exp"
    normalization: str  # "layer_norm" | "rms_norm" (after attention)
    gla: tuple | None  # GLA's state gate (rank, temperature); None: no gate
    output_gate: str  # "no_gate" | "swish_gate" | "sigmoid_gate"
    chunk_size: int
    lrpe: bool  # LRPE Type 2 on the features; False: NoPE
    lrpe_half_pairing: bool
    lrpe_p: str  # "householder" | "householder_frozen" | "identity"
    learn_theta: bool
    theta_base: float
    sequence_length: int
    batch_size: int
    mlm_probability: float
    mlm_mask_fraction: float
    mlm_random_fraction: float
    lr: float
    beta1: float
    beta2: float
    adam_eps: float
    weight_decay: float
    decay_norms: bool
    decay_biases: bool
    decay_embeddings: bool
    decay_positional: bool
    grad_clip: float

    @property
    def causal(self):
        return self.kind == "causal_lm"

    @property
    def tokens_per_step(self):
        return self.batch_size * self.sequence_length

    @staticmethod
    def from_recipe(path):
        with open(path, encoding="utf-8") as f:
            root = _Msg(parse_txtpb(f.read()), "recipe")
        name = root.str("name", "")
        m = root.msg("model")
        kind = m.str("kind", "CAUSAL_LM")
        _require(kind in ("CAUSAL_LM", "MASKED_LM"), f"model.kind {kind}")
        width = m.int("width", 256)
        activation = m.str("ffn_activation", "GELU")
        _require(activation in ("GELU", "GELU_TANH", "RELU", "SILU"),
                 f"model.ffn_activation {activation}")
        placement = m.str("norm_placement", "PRE_NORM")
        _require(m.str("norm_kind", "LAYER_NORM") == "LAYER_NORM",
                 f"model.norm_kind {m.str('norm_kind', 'LAYER_NORM')}")
        _require(m.str("bias", "true") == "true", "model.bias false (the peer has biases)")
        dropout = m.float("dropout", 0.1)
        _require(dropout == 0.0, f"model.dropout {dropout} (the peer needs dropout 0)")
        attention = m.msg("attention")
        _require(not attention.has("softmax"), "model.attention.softmax")
        linear = attention.msg("linear")
        attention.refuse_unread()
        feature_map = linear.str("feature_map", "ONE_PLUS_ELU")
        _require(feature_map in ("ONE_PLUS_ELU", "RELU", "SILU", "IDENTITY", "EXP"),
                 f"model.attention.linear.feature_map {feature_map}")
        normalization = linear.str("normalization", "LAYER_NORM")
        _require(normalization in ("LAYER_NORM", "RMS_NORM"),
                 f"model.attention.linear.normalization {normalization}")
        chunk_size = linear.int("chunk_size", 64)
        output_gate = linear.str("output_gate", "NO_GATE")
        _require(output_gate in ("NO_GATE", "SWISH_GATE", "SIGMOID_GATE"),
                 f"model.attention.linear.output_gate {output_gate}")
        gating = linear.msg("gating")
        gla = None
        if gating.has("gla"):
            gla_msg = gating.msg("gla")
            gla = (gla_msg.int("rank", 16), gla_msg.float("temperature", 16.0))
            gla_msg.refuse_unread()
        gating.refuse_unread()
        linear.refuse_unread()
        position = m.msg("position")
        _require(not position.bool("add_sinusoidal", False), "model.position.add_sinusoidal")
        use_lrpe = position.has("lrpe")
        _require(use_lrpe or position.has("none"), "model.position: only lrpe and none")
        position.msg("none")
        lrpe = position.msg("lrpe")
        position.refuse_unread()
        lrpe_type = lrpe.int("type", 2)
        _require(lrpe_type == 2, f"model.position.lrpe.type {lrpe_type} (only Type 2)")
        pairing = lrpe.str("pairing", "ADJACENT")
        lrpe_p = lrpe.str("p", "HOUSEHOLDER")
        _require(lrpe_p in ("HOUSEHOLDER", "HOUSEHOLDER_FROZEN", "IDENTITY"),
                 f"model.position.lrpe.p {lrpe_p}")
        learn_theta = lrpe.bool("learn_theta", True)
        theta_base = lrpe.float("theta_base", 10000.0)
        lrpe.refuse_unread()
        config_model = dict(
            width=width, layers=m.int("layers", 4), heads=m.int("heads", 4),
            ffn_width=m.int("ffn_width", 4 * width), activation=activation.lower(),
            pre_norm=placement == "PRE_NORM", final_norm=m.bool("final_norm", True),
            norm_eps=m.float("norm_eps", 1e-5),
            scale_embeddings=m.str("embedding_scale", "UNSCALED") == "SQRT_WIDTH",
            tie_embeddings=m.bool("tie_embeddings", True), init_std=m.float("init_std", 0.02))
        m.refuse_unread()
        _require(config_model["tie_embeddings"], "model.tie_embeddings false")

        data = root.msg("data")
        vocab_size = data.msg("tokenizer").int("vocab_size")
        if vocab_size is None:
            raise ValueError("recipe: data.tokenizer.vocab_size must be set for the PyTorch peer")
        mlm = data.msg("mlm")

        o = root.msg("optimizer")
        _require(not o.has("sgd") and not o.has("adam"), "optimizer other than adamw")
        adamw = o.msg("adamw")
        train = root.msg("train")
        accumulation = train.int("gradient_accumulation", 1)
        _require(accumulation == 1, f"train.gradient_accumulation {accumulation}")
        return PeerConfig(
            name=name, kind=kind.lower(), vocab_size=vocab_size, **config_model,
            feature_map=feature_map.lower(), normalization=normalization.lower(), gla=gla,
            output_gate=output_gate.lower(), chunk_size=chunk_size, lrpe=use_lrpe,
            lrpe_half_pairing=pairing == "HALF", lrpe_p=lrpe_p.lower(), learn_theta=learn_theta,
            theta_base=theta_base, sequence_length=data.int("sequence_length", 256),
            batch_size=data.int("batch_size", 16), mlm_probability=mlm.float("probability", 0.15),
            mlm_mask_fraction=mlm.float("mask_fraction", 0.8),
            mlm_random_fraction=mlm.float("random_fraction", 0.1),
            lr=root.msg("schedule").float("lr", 1e-3), beta1=adamw.float("beta1", 0.9),
            beta2=adamw.float("beta2", 0.999), adam_eps=adamw.float("eps", 1e-8),
            weight_decay=adamw.float("weight_decay", 0.01),
            decay_norms=o.bool("decay_norms", False), decay_biases=o.bool("decay_biases", False),
            decay_embeddings=o.bool("decay_embeddings", True),
            decay_positional=o.bool("decay_positional", False),
            grad_clip=train.float("grad_clip", 1.0))


# ---- linear attention kernels ----

def _tril(c, dtype, device):
    """The C×C lower-triangular mask. Made on every call (a 64×64 fill costs microseconds): a
    module-level cache would be global state that torch.compile guards on and recompiles for."""
    return torch.ones(c, c, dtype=dtype, device=device).tril_()


def causal_gated_linear_attention(q, k, v, log_gate, chunk):
    """GLA: q, k, log_gate: [B, H, N, F], v: [B, H, N, D] → o [B, H, N, D] with
    S_t = diag(e^(g_t)) S_{t-1} + k_t^T v_t, o_t = q_t S_t (log_gate g <= 0).

    Chunked as GLA's paper writes the chunk form: with b the cumulative gate inside a chunk,
    intra-chunk pairs are (q_i e^(b_i)) · (k_j e^(-b_j)) masked to j <= i, and the state enters as
    (q_i e^(b_i)) S_c, S_{c+1} = e^(b_last) S_c + Σ_j (k_j e^(b_last - b_j))^T v_j (a loop over the
    chunks). Exact while e^(-b) stays in range inside a chunk (|b| < ~80 in f32: with τ = 16 a
    gate would have to average -1.3 per step over 64 steps); Rota's kernel splits chunks into
    16-row sub-blocks so that it never needs that. Gates are applied in f32 (also under bf16
    autocast); the products then autocast."""
    b, h, n, f = q.shape
    d = v.shape[-1]
    c = max(1, min(chunk, n))
    nc = (n + c - 1) // c
    pad = nc * c - n
    if pad:  # padded rows: zero keys and values, gate 0 (a factor of 1)
        q, k, v, log_gate = (F.pad(t, (0, 0, 0, pad)) for t in (q, k, v, log_gate))
    g = _at_least_f32(log_gate).reshape(b, h, nc, c, f)
    cum = torch.cumsum(g, dim=3)  # [B, H, nc, C, F]
    last = cum[:, :, :, -1:]  # [B, H, nc, 1, F]
    qd = q.reshape(b, h, nc, c, f) * torch.exp(cum)
    kc = k.reshape(b, h, nc, c, f)
    vc = v.reshape(b, h, nc, c, d)
    scores = torch.matmul(qd, (kc * torch.exp(-cum)).transpose(-1, -2))  # [B, H, nc, C, C]
    out = torch.matmul(scores * _tril(c, scores.dtype, scores.device), vc)  # [B, H, nc, C, D]
    if nc > 1:
        states = torch.matmul((kc * torch.exp(last - cum)).transpose(-1, -2), vc)  # [.., F, D]
        decay = torch.exp(last).transpose(-1, -2)  # [B, H, nc, F, 1]
        state = states.new_zeros(b, h, f, d)
        inter = [None] * nc
        for i in range(nc):
            inter[i] = torch.matmul(qd[:, :, i], state.to(qd.dtype))  # [B, H, C, D]
            state = decay[:, :, i] * state + states[:, :, i]
        out = out + torch.stack(inter, dim=2)
    out = out.reshape(b, h, nc * c, d)
    return out[:, :, :n] if pad else out


class StateGate(nn.Module):
    """GLA's gate (Rota's state_gate): log α = logsigmoid(x W_down W_up + b) / τ per key channel."""

    def __init__(self, width, heads, feature_dim, rank, temperature):
        super().__init__()
        self.heads, self.feature_dim, self.temperature = heads, feature_dim, temperature
        self.gate_down = nn.Linear(width, rank, bias=False)
        self.gate_up = nn.Linear(rank, heads * feature_dim)

    def forward(self, x):
        """x: [B, N, E] → log gates [B, H, N, F] (f32)."""
        b, n, _ = x.shape
        z = _at_least_f32(self.gate_up(self.gate_down(x)))
        g = F.logsigmoid(z) / self.temperature
        return g.view(b, n, self.heads, self.feature_dim).permute(0, 2, 1, 3)


class RMSNorm(nn.Module):
    """y = x / sqrt(mean(x^2) + eps) · weight (Rota's RMSNorm; computed in f32)."""

    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x = _at_least_f32(x)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def causal_linear_attention(q, k, v, chunk):
    """q, k: [B, H, N, F], v: [B, H, N, D] → o [B, H, N, D], o_s = Σ_{t<=s} (q_s·k_t) v_t.

    Chunked: the sequence is cut into nc chunks of C rows (zero-padded at the end); inside a
    chunk tril(Q_c K_c^T) V_c, across chunks Q_c S_c with S_c = Σ_{c'<c} K_c'^T V_c' (an
    exclusive prefix sum of the per-chunk states, all chunks in one batched matmul)."""
    b, h, n, f = q.shape
    d = v.shape[-1]
    c = max(1, min(chunk, n))
    nc = (n + c - 1) // c
    pad = nc * c - n
    if pad:
        q, k, v = (F.pad(t, (0, 0, 0, pad)) for t in (q, k, v))
    qc = q.reshape(b, h, nc, c, f)
    kc = k.reshape(b, h, nc, c, f)
    vc = v.reshape(b, h, nc, c, d)
    scores = torch.matmul(qc, kc.transpose(-1, -2))  # [B, H, nc, C, C]
    out = torch.matmul(scores * _tril(c, scores.dtype, scores.device), vc)  # [B, H, nc, C, D]
    if nc > 1:
        states = torch.matmul(kc[:, :, :-1].transpose(-1, -2), vc[:, :, :-1])  # [B, H, nc-1, F, D]
        prefix = torch.cat([states.new_zeros(b, h, 1, f, d), torch.cumsum(states, dim=2)], dim=2)
        out = out + torch.matmul(qc, prefix)  # S_0 = 0, S_c = Σ_{c'<c} K_c'^T V_c'
    out = out.reshape(b, h, nc * c, d)
    return out[:, :, :n] if pad else out


def bidirectional_linear_attention(q, k, v, key_mask=None):
    """q, k: [B, H, N, F], v: [B, H, N, D], key_mask [B, N] (0 = padding) → Q (K^T diag(m) V)."""
    if key_mask is not None:
        v = v * key_mask.to(v.dtype)[:, None, :, None]
    return torch.matmul(q, torch.matmul(k.transpose(-1, -2), v))


_FEATURE_MAPS = {
    "one_plus_elu": lambda x: F.elu(x) + 1.0,
    "relu": F.relu,
    "silu": F.silu,
    "identity": lambda x: x,
    "exp": torch.exp,
}

_ACTIVATIONS = {
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
    "silu": F.silu,
}


def _at_least_f32(x):
    """bf16 activations (autocast) → f32 for LayerNorm and the cross-entropy (CPU autocast in
    torch 1.13 does not up-cast layer_norm itself); f32 / f64 stay as they are."""
    return x.float() if x.dtype == torch.bfloat16 else x


# ---- modules ----

class Lrpe(nn.Module):
    """LRPE Type 2: y = Λ(s) P x on the last dim (D), positions s = 0 .. N-1 on dim -2."""

    def __init__(self, head_dim, p, learn_theta, theta_base, half_pairing):
        super().__init__()
        d = head_dim
        m = d // 2
        denom = d - d % 2 if not learn_theta else d  # as nn::Lrpe: frozen uses the rotated width
        theta = torch.tensor([theta_base ** (-2.0 * j / denom) for j in range(m)])
        self.theta = nn.Parameter(theta, requires_grad=learn_theta)
        self.p = p
        if p in ("householder", "householder_frozen"):
            v = torch.randn(d)
            if p == "householder_frozen":
                v = v / v.norm()
            self.householder_v = nn.Parameter(v, requires_grad=p == "householder")
        # Channel pairs (i0, i1): angle index per channel (m = the unrotated odd channel) and
        # the signed swap Σ with (u Σ)[i0] = -u[i1], (u Σ)[i1] = u[i0].
        angle_of = torch.full((d,), m, dtype=torch.int64)
        swap = torch.zeros(d, d)
        for j in range(m):
            i0, i1 = (j, j + m) if half_pairing else (2 * j, 2 * j + 1)
            angle_of[i0] = angle_of[i1] = j
            swap[i1, i0] = -1.0
            swap[i0, i1] = 1.0
        self.register_buffer("angle_of", angle_of, persistent=False)
        self.register_buffer("swap", swap, persistent=False)

    def mix(self, dtype):
        """[P, P Σ]: [D, 2D] (P symmetric, so x @ P = (P x)^T row-wise)."""
        d = self.swap.shape[0]
        if self.p == "identity":
            p = torch.eye(d, dtype=dtype, device=self.swap.device)
        else:
            v = self.householder_v
            w = v if self.p == "householder_frozen" else v / (v.norm() + 1e-6)
            p = torch.eye(d, dtype=w.dtype, device=w.device) - 2.0 * torch.outer(w, w)
        return torch.cat([p, p @ self.swap.to(p.dtype)], dim=1)

    def cos_sin(self, n):
        """Per-channel cos and sin of s θ: [N, D] each (0 angle for an odd last channel)."""
        positions = torch.arange(n, dtype=self.theta.dtype, device=self.theta.device)
        angles = positions[:, None] * self.theta  # [N, m]
        angles = F.pad(angles, (0, 1))[:, self.angle_of]  # [N, D]
        return torch.cos(angles), torch.sin(angles)

    def forward(self, x):
        """x: [..., N, D] → [..., N, D]."""
        d = x.shape[-1]
        uv = torch.matmul(x, self.mix(x.dtype))  # [..., N, 2D]: P x and Σ-swapped P x
        cos, sin = (t.to(uv.dtype) for t in self.cos_sin(x.shape[-2]))  # bf16 under autocast
        return uv[..., :d] * cos + uv[..., d:] * sin


class LinearAttention(nn.Module):
    """Children q_proj, k_proj, v_proj, out_proj, norm, lrpe (Rota's names)."""

    def __init__(self, cfg, causal):
        super().__init__()
        e = cfg.width
        self.heads, self.causal, self.chunk = cfg.heads, causal, cfg.chunk_size
        self.feature_map = _FEATURE_MAPS[cfg.feature_map]
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(e, e) for _ in range(4))
        self.norm = (RMSNorm(e, cfg.norm_eps) if cfg.normalization == "rms_norm"
                     else nn.LayerNorm(e, eps=cfg.norm_eps))
        self.lrpe = (Lrpe(e // cfg.heads, cfg.lrpe_p, cfg.learn_theta, cfg.theta_base,
                          cfg.lrpe_half_pairing) if cfg.lrpe else None)
        self.state_gate = None
        if cfg.gla is not None:
            _require(causal, "GLA in a bidirectional model")
            self.state_gate = StateGate(e, cfg.heads, e // cfg.heads, *cfg.gla)
        self.gate_proj = nn.Linear(e, e) if cfg.output_gate != "no_gate" else None
        self.gate_act = F.silu if cfg.output_gate == "swish_gate" else torch.sigmoid

    def forward(self, x, key_mask=None):
        b, n, e = x.shape
        h = self.heads
        d = e // h
        weight = torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight])
        bias = torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias])
        qkv = F.linear(x, weight, bias).view(b, n, 3, h, d).permute(2, 0, 3, 1, 4)  # [3,B,H,N,D]
        qk = self.feature_map(qkv[:2])  # [2, B, H, N, D]
        if self.lrpe is not None:
            qk = self.lrpe(qk)
        q, k, v = qk[0], qk[1], qkv[2]
        if self.state_gate is not None:
            o = causal_gated_linear_attention(q, k, v, self.state_gate(x), self.chunk)
        elif self.causal:
            o = causal_linear_attention(q, k, v, self.chunk)
        else:
            o = bidirectional_linear_attention(q, k, v, key_mask)
        o = self.norm(_at_least_f32(o.permute(0, 2, 1, 3).reshape(b, n, e)))
        if self.gate_proj is not None:
            o = o * self.gate_act(self.gate_proj(x))
        return self.out_proj(o)


class FeedForward(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fc1 = nn.Linear(cfg.width, cfg.ffn_width)
        self.fc2 = nn.Linear(cfg.ffn_width, cfg.width)
        self.act = _ACTIVATIONS[cfg.activation]

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class TransformerBlock(nn.Module):
    def __init__(self, cfg, causal):
        super().__init__()
        self.pre_norm = cfg.pre_norm
        self.ln1 = nn.LayerNorm(cfg.width, eps=cfg.norm_eps)
        self.attn = LinearAttention(cfg, causal)
        self.ln2 = nn.LayerNorm(cfg.width, eps=cfg.norm_eps)
        self.ffn = FeedForward(cfg)

    def forward(self, x, key_mask=None):
        if self.pre_norm:
            h = x + self.attn(self.ln1(x), key_mask)
            return h + self.ffn(self.ln2(h))
        h = self.ln1(x + self.attn(x, key_mask))
        return self.ln2(h + self.ffn(h))


class Encoder(nn.Module):
    """Children embed, blocks.<i>, final_norm (pre-norm with final_norm)."""

    def __init__(self, cfg, causal):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.width)
        self.scale = math.sqrt(cfg.width) if cfg.scale_embeddings else None
        self.blocks = nn.ModuleList(TransformerBlock(cfg, causal) for _ in range(cfg.layers))
        self.final_norm = (nn.LayerNorm(cfg.width, eps=cfg.norm_eps)
                           if cfg.final_norm and cfg.pre_norm else None)

    def forward(self, ids, key_mask=None):
        x = F.embedding(ids, self.embed.weight)
        if self.scale is not None:
            x = x * self.scale
        for block in self.blocks:
            x = block(x, key_mask)
        return self.final_norm(x) if self.final_norm is not None else x


class CausalLm(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.encoder = Encoder(cfg, causal=True)

    def forward(self, ids):
        """ids [B, N] → logits [B, N, V] (tied output projection)."""
        return F.linear(self.encoder(ids), self.encoder.embed.weight)

    def loss(self, batch):
        logits = self(batch["ids"])
        return F.cross_entropy(_at_least_f32(logits).reshape(-1, logits.shape[-1]),
                               batch["targets"].reshape(-1), ignore_index=-100)


class MaskedLm(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.encoder = Encoder(cfg, causal=False)
        self.mlm_norm = nn.LayerNorm(cfg.width, eps=cfg.norm_eps)
        self.mlm_bias = nn.Parameter(torch.zeros(cfg.vocab_size))

    def forward(self, ids, key_mask=None):
        h = self.mlm_norm(self.encoder(ids, key_mask))
        return F.linear(h, self.encoder.embed.weight, self.mlm_bias)

    def loss(self, batch):
        logits = self(batch["ids"], batch.get("key_mask"))
        return F.cross_entropy(_at_least_f32(logits).reshape(-1, logits.shape[-1]),
                               batch["targets"].reshape(-1), ignore_index=-100)


def build_model(cfg, seed=1):
    """The recipe's model, initialised as Rota does (normal(0, init_std) for embedding and
    projection weights, zero biases, LayerNorm 1/0, θ_j = base^(-2j/D), v ~ N(0, I)); f32."""
    torch.manual_seed(seed)
    model = CausalLm(cfg) if cfg.causal else MaskedLm(cfg)
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, 0.0, cfg.init_std)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
    return model


# ---- training step pieces ----

def parameter_kind(name, p):
    """Rota's optimizer groups (app/setup/optimizer_setup.cpp): norm, embedding, positional,
    else weight (rank >= 2) or bias."""
    parts = name.split(".")
    if "lrpe" in parts:
        return "positional"
    if any(part in ("ln1", "ln2", "norm", "final_norm", "mlm_norm") for part in parts):
        return "norm"
    if "embed" in parts:
        return "embedding"
    return "weight" if p.dim() >= 2 else "bias"


def make_optimizer(model, cfg, foreach=True):
    """AdamW over Rota's decay groups (decay per kind from the recipe's decay_* flags)."""
    decays = {"weight": True, "bias": cfg.decay_biases, "norm": cfg.decay_norms,
              "embedding": cfg.decay_embeddings, "positional": cfg.decay_positional}
    groups = {}
    for name, p in model.named_parameters():
        if p.requires_grad:
            groups.setdefault(decays[parameter_kind(name, p)], []).append(p)
    param_groups = [{"params": ps, "weight_decay": cfg.weight_decay if decay else 0.0}
                    for decay, ps in groups.items()]
    return torch.optim.AdamW(param_groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2),
                             eps=cfg.adam_eps, foreach=foreach)


def clip_grad_norm(params, max_norm):
    """Global L2 norm; grads scaled by max_norm / norm when norm > max_norm (no +1e-6, as
    optim::clip_grad_norm). Returns the pre-clip norm (a 0-dim tensor), without a host sync."""
    grads = [p.grad for p in params if p.grad is not None]
    norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    scale = torch.clamp(max_norm / norm, max=1.0)
    torch._foreach_mul_(grads, scale)
    return norm


def random_batch(cfg, gen):
    """A random batch of the recipe's shape: causal next-token pairs, or BERT-style corruption
    (probability / mask / random fractions of the recipe; [MASK] = the last id) with full rows."""
    b, n, vocab = cfg.batch_size, cfg.sequence_length, cfg.vocab_size
    if cfg.causal:
        seq = torch.randint(0, vocab, (b, n + 1), generator=gen)
        return {"ids": seq[:, :n].contiguous(), "targets": seq[:, 1:].contiguous()}
    original = torch.randint(1, vocab - 1, (b, n), generator=gen)
    u = torch.rand(b, n, generator=gen)
    selected = u < cfg.mlm_probability
    r = u / cfg.mlm_probability  # uniform in [0, 1) on the selected positions
    ids = original.clone()
    ids[selected & (r < cfg.mlm_mask_fraction)] = vocab - 1
    random_ids = torch.randint(1, vocab - 1, (b, n), generator=gen)
    swap = selected & (r >= cfg.mlm_mask_fraction) & (
        r < cfg.mlm_mask_fraction + cfg.mlm_random_fraction)
    ids[swap] = random_ids[swap]
    targets = torch.where(selected, original, torch.full_like(original, -100))
    return {"ids": ids, "targets": targets, "key_mask": torch.ones(b, n)}


def training_flops_per_token(cfg):
    """models::training_flops_per_token (models/model_flops.cpp) for this peer's configs."""
    e, f, v = float(cfg.width), float(cfg.ffn_width), float(cfg.vocab_size)
    d = e / cfg.heads
    forward = cfg.layers * 2.0 * (4.0 * e * e + 2.0 * e * f) + 2.0 * v * e
    n = float(cfg.sequence_length)
    chunk = min(float(cfg.chunk_size), n)
    attention = 2.0 * chunk * d + 4.0 * d * d if cfg.causal else 4.0 * d * d
    forward += cfg.layers * cfg.heads * attention
    return 3.0 * forward
