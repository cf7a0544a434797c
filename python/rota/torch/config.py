# The model a Rota recipe describes, as plain Python values (the recipe's `model` block).
"""RotaConfig: every field of a recipe's `model { ... }` block that changes the network, with
the defaults of recipes/recipe.proto, in Python spelling (enums lower-case).

A config comes from a run's resolved recipe (`recipe.txtpb`, see `from_recipe_text`), from an
exported `config.json` (`from_dict`), or is written by hand. The vocabulary size and the number
of classes are not in a recipe (a learned tokenizer decides them): `from_recipe_text` takes
them as arguments, and `rota.torch.load` reads them from the checkpoint's tensor shapes.
"""
from dataclasses import asdict, dataclass, field, fields
from typing import Optional

from .text_format import Message, parse_text_format

KINDS = ("causal_lm", "masked_lm", "classifier")
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu", "swiglu", "geglu")
GATED_ACTIVATIONS = ("swiglu", "geglu")
NORM_KINDS = ("layer_norm", "rms_norm")
FEATURE_MAPS = ("one_plus_elu", "relu", "silu", "identity", "exp", "hedgehog")
NORMALIZATIONS = ("layer_norm", "rms_norm", "denominator", "group_norm")
DECAYS = (None, "retnet", "transnormer")
GATINGS = (None, "gla", "ssd")
UPDATE_RULES = ("additive", "delta")
OUTPUT_GATES = ("no_gate", "swish_gate", "sigmoid_gate")
POSITIONS = ("none", "sinusoidal", "learned_absolute", "rope", "lrpe", "permute_former", "shaw",
             "transformer_xl", "skew", "t5", "alibi")
LINEAR_ONLY = ("lrpe", "permute_former")
SOFTMAX_ONLY = ("shaw", "transformer_xl", "skew", "t5", "alibi")
BOTH_FAMILIES = ("none", "sinusoidal", "learned_absolute", "rope")  # apply to either family
LRPE_P = ("identity", "householder", "householder_frozen", "odd_even")


ROPE_SCALINGS = ("linear", "llama3")
BIAS_PARTS = ("qkv", "attention_out", "ffn", "norms")


@dataclass
class RopeScaling:
    """`model.position.rope.scaling`: a rescaling of RoPE's frozen θ (Hugging Face's rope_scaling
    of the same names). kind "linear": θ_k / factor. kind "llama3": with λ_k = 2π/θ_k and
    L = original_max_positions, θ_k / factor where λ_k > L/low_freq_factor, θ_k where
    λ_k < L/high_freq_factor, and in between (1 − s)·θ_k/factor + s·θ_k with
    s = (L/λ_k − low_freq_factor)/(high_freq_factor − low_freq_factor)."""
    kind: str = "linear"
    factor: float = 1.0                 # recipe default: 1 (linear), 8 (llama3)
    low_freq_factor: float = 1.0        # llama3
    high_freq_factor: float = 4.0       # llama3
    original_max_positions: int = 8192  # llama3

    def validate(self, need, at):
        need(self.kind in ROPE_SCALINGS, f"{at}: {self.kind!r} is not one of {ROPE_SCALINGS}")
        need(self.factor > 0, f"{at}.{self.kind}.factor must be > 0, got {self.factor}")
        if self.kind == "llama3":
            need(0 < self.low_freq_factor < self.high_freq_factor,
                 f"{at}.llama3: low_freq_factor {self.low_freq_factor} must be > 0 and < "
                 f"high_freq_factor {self.high_freq_factor}")
            need(self.original_max_positions >= 1, f"{at}.llama3.original_max_positions must "
                 f"be >= 1, got {self.original_max_positions}")


@dataclass
class Biases:
    """`model.biases`: per-part biases of the blocks; None follows `model.bias`."""
    qkv: Optional[bool] = None            # q/k/v_proj (and linear attention's gate_proj)
    attention_out: Optional[bool] = None  # out_proj
    ffn: Optional[bool] = None            # fc1/fc2 or gate_proj/up_proj/down_proj
    norms: Optional[bool] = None          # β of the LayerNorms (block, final, linear attention's)


@dataclass
class PositionConfig:
    """`model.position`: the encoding's kind and its parameters (only the kind's own are used)."""
    kind: str = "lrpe"
    add_sinusoidal: bool = False
    base: float = 10000.0          # sinusoidal, rope, transformer_xl
    max_positions: int = 512       # learned_absolute
    pairing: str = "adjacent"      # rope, lrpe: "adjacent" (2k, 2k+1) or "half" (k, k + D/2)
    type: int = 2                  # lrpe: 1 unitary, 2 orthogonal, 3 permutation
    p: str = "householder"         # lrpe: identity | householder | householder_frozen | odd_even
    learn_theta: bool = True       # lrpe
    theta_base: float = 10000.0    # lrpe
    clip: int = 16                 # shaw
    clip_left: Optional[int] = None   # shaw; None: clip
    clip_right: Optional[int] = None  # shaw; None: clip
    values: bool = False           # shaw: also the value table
    layout: str = "interleaved"    # transformer_xl: interleaved | concatenated
    pe_width: Optional[int] = None  # transformer_xl; None: the model width (H·D)
    max_len: int = 512             # skew
    per_head: bool = False         # skew
    buckets: int = 32              # t5
    max_distance: int = 128        # t5
    bidirectional: Optional[bool] = None  # t5; None: bidirectional unless causal
    scaling: Optional[RopeScaling] = None  # rope: a rescaling of θ; None: θ_k = base^(−2k/D)

    def resolved(self, causal, width):
        """A copy with the defaults that depend on the model filled in, as Rota's resolved
        recipe writes them (T5's direction, Shaw's one-sided clips, XL's table width)."""
        from dataclasses import replace
        if self.kind == "t5" and self.bidirectional is None:
            return replace(self, bidirectional=not causal)
        if self.kind == "shaw":
            return replace(self, clip_left=self.clip if self.clip_left is None else self.clip_left,
                           clip_right=self.clip if self.clip_right is None else self.clip_right)
        if self.kind == "transformer_xl" and self.pe_width is None:
            return replace(self, pe_width=width)
        return replace(self)


# The fields of RotaConfig an attention block of a hybrid stack sets for itself.
BLOCK_ATTENTION_FIELDS = ("attention", "feature_map", "normalization", "denominator_eps",
                          "chunk_size", "decay", "decay_learnable", "gating", "gla_rank",
                          "gla_temperature", "update_rule", "output_gate", "softmax_scale",
                          "attention_dropout", "window")


@dataclass
class HybridConfig:
    """`model.hybrid`: the blocks (every k-th: k − 1, 2k − 1, …; and/or a list, 0-based) that
    use this attention and position instead of the model's. position None: the model's."""
    every: Optional[int] = None
    blocks: list = field(default_factory=list)
    attention: str = "softmax"       # linear | softmax
    feature_map: str = "one_plus_elu"
    normalization: str = "layer_norm"
    denominator_eps: float = 1e-6
    chunk_size: int = 64
    decay: Optional[str] = None
    decay_learnable: bool = False
    gating: Optional[str] = None
    gla_rank: int = 16
    gla_temperature: float = 16.0
    update_rule: str = "additive"
    output_gate: str = "no_gate"
    softmax_scale: Optional[float] = None
    attention_dropout: float = 0.0
    window: int = 0                  # softmax sliding window; 0: full
    position: Optional[PositionConfig] = None

    def selected(self, layers):
        """The sorted 0-based block indices this hybrid selects in a stack of `layers`."""
        chosen = set(self.blocks)
        if self.every is not None and self.every >= 2:
            chosen.update(range(self.every - 1, layers, self.every))
        return sorted(chosen)


@dataclass
class RotaConfig:
    """The network of a Rota recipe (recipes/recipe.proto `Model`, plus vocabulary and classes)."""
    kind: str = "causal_lm"
    vocab_size: int = 0
    width: int = 256
    layers: int = 4
    heads: int = 4
    ffn_width: Optional[int] = None  # None: 4 · width; swiglu / geglu: ⌈width / 3⌉ · 8
    activation: str = "gelu"         # relu | gelu | gelu_tanh | silu | swiglu | geglu (gated)
    post_norm: bool = False          # norm_placement POST_NORM
    norm_kind: str = "layer_norm"    # layer_norm | rms_norm: the block norms and the final norm
    bias: bool = True                # False: no biases in the blocks' projections, no LayerNorm β
    biases: Biases = field(default_factory=Biases)  # per part; None: that part follows bias
    kv_heads: Optional[int] = None   # softmax attention's key/value heads (GQA); None: heads
    final_norm: bool = True
    norm_eps: float = 1e-5
    dropout: float = 0.1
    scale_embeddings: bool = False   # embedding_scale SQRT_WIDTH
    tie_embeddings: bool = True
    init_scheme: str = "pytorch"     # pytorch | normal | gpt2 | width_scaled | fairseq (Rota's init)
    init_std: float = 0.02           # σ of init_scheme normal and gpt2
    attention: str = "linear"        # linear | softmax
    # linear attention
    feature_map: str = "one_plus_elu"
    normalization: str = "layer_norm"
    denominator_eps: float = 1e-6
    chunk_size: int = 64
    decay: Optional[str] = None      # None | retnet | transnormer (linear.decay.schedule)
    decay_learnable: bool = False    # linear.decay.learnable
    gating: Optional[str] = None     # None | gla | ssd (linear.gating)
    gla_rank: int = 16
    gla_temperature: float = 16.0
    update_rule: str = "additive"    # additive | delta
    output_gate: str = "no_gate"     # no_gate | swish_gate | sigmoid_gate
    # softmax attention
    softmax_scale: Optional[float] = None  # None: 1/√D
    attention_dropout: float = 0.0
    stream_chunk: int = 0                  # 0: no streaming mask
    stream_left_memory: int = -1
    window: int = 0                        # sliding window W (causal); 0: full attention
    position: PositionConfig = field(default_factory=PositionConfig)
    hybrid: Optional[HybridConfig] = None  # model.hybrid: blocks with another attention
    # classifier
    num_classes: int = 2
    pooling: str = "mean"            # mean | cls

    @property
    def head_dim(self):
        return self.width // self.heads

    @property
    def key_value_heads(self):
        """Softmax attention's key/value heads: kv_heads, or heads when unset."""
        return self.heads if self.kv_heads is None else self.kv_heads

    def has_bias(self, part):
        """Whether `part` (qkv, attention_out, ffn or norms) has biases: model.biases' field
        for it when set, else model.bias."""
        if part not in BIAS_PARTS:
            raise ValueError(f"unknown bias part {part!r}; one of {BIAS_PARTS}")
        own = getattr(self.biases, part)
        return self.bias if own is None else own

    @property
    def ffn_hidden(self):
        if self.ffn_width is not None:
            return self.ffn_width
        if self.activation in GATED_ACTIVATIONS:  # 8/3 · width rounded up to a multiple of 8
            return (self.width + 2) // 3 * 8
        return 4 * self.width

    @property
    def causal(self):
        return self.kind == "causal_lm"

    def block_config(self, block):
        """The config block `block` (0-based) is built from: a hybrid block takes the hybrid's
        attention fields and position (the model's when it has none); `hybrid` is cleared."""
        from dataclasses import replace
        c = replace(self, hybrid=None)
        h = self.hybrid
        if h is not None and block in h.selected(self.layers):
            for name in BLOCK_ATTENTION_FIELDS:
                setattr(c, name, getattr(h, name))
            c.stream_chunk, c.stream_left_memory = 0, -1
            if h.position is not None:
                c.position = replace(h.position, add_sinusoidal=self.position.add_sinusoidal)
        return c

    def _validate_hybrid(self, need):
        h = self.hybrid
        need(self.layers >= 2, f"hybrid: needs layers >= 2, got {self.layers}")
        need(h.every is None or h.every >= 2, f"hybrid.every must be >= 2, got {h.every}")
        for i, b in enumerate(h.blocks):
            need(0 <= b < self.layers, f"hybrid.blocks[{i}]: block {b} is not in "
                 f"[0, {self.layers})")
        need(len(set(h.blocks)) == len(h.blocks), "hybrid.blocks: a block is listed twice")
        chosen = h.selected(self.layers)
        need(0 < len(chosen) < self.layers,
             f"hybrid: selects {len(chosen)} of {self.layers} blocks (at least one, not all)")
        need(h.attention in ("linear", "softmax"), f"hybrid.attention: {h.attention!r}")
        need(h.position is None or h.position.kind not in ("sinusoidal", "learned_absolute"),
             "hybrid.position: absolute encodings belong in model.position")
        need(self.position.kind != "t5" and (h.position is None or h.position.kind != "t5"),
             "hybrid: T5 (one bias table per stack) cannot be used in a hybrid stack")
        need(self.stream_chunk == 0, "hybrid: streaming is not supported in a hybrid stack")
        need(h.window == 0 or self.causal, "hybrid.attention.softmax.window: causal_lm only")
        block = self.block_config(chosen[0])
        if h.position is None and block.position.kind not in BOTH_FAMILIES:
            family = SOFTMAX_ONLY if h.attention == "linear" else LINEAR_ONLY
            need(block.position.kind not in family,
                 f"hybrid.position: absent, and model.position ({block.position.kind}) does not "
                 f"apply to {h.attention} attention")
        block._validate_attention(need, "hybrid.attention", "hybrid.position")

    def validate(self):
        """Raises ValueError naming the field, as `rota train` would refuse the recipe."""
        def need(condition, message):
            if not condition:
                raise ValueError("model." + message)
        need(self.kind in KINDS, f"kind: {self.kind!r} is not one of {KINDS}")
        need(self.vocab_size > 0, f"vocab_size must be positive, got {self.vocab_size}")
        need(self.width > 0 and self.heads > 0 and self.width % self.heads == 0,
             f"width {self.width} must be a positive multiple of heads {self.heads}")
        need(self.layers >= 0, f"layers must be >= 0, got {self.layers}")
        need(self.activation in ACTIVATIONS, f"ffn_activation: {self.activation!r}")
        need(self.norm_kind in NORM_KINDS, f"norm_kind: {self.norm_kind!r} is not one of "
             f"{NORM_KINDS}")
        need(isinstance(self.bias, bool), f"bias: {self.bias!r} is not a bool")
        for part in BIAS_PARTS:
            own = getattr(self.biases, part)
            need(own is None or isinstance(own, bool), f"biases.{part}: {own!r} is not a bool")
        if self.kv_heads is not None:
            need(self.kv_heads >= 1 and self.heads % self.kv_heads == 0,
                 f"kv_heads {self.kv_heads} must be >= 1 and divide heads {self.heads}")
            softmax = self.attention == "softmax" or (self.hybrid is not None and
                                                      self.hybrid.attention == "softmax")
            need(self.kv_heads == self.heads or softmax,
                 f"kv_heads {self.kv_heads}: grouped key/value heads are for softmax attention; "
                 f"linear attention has as many key/value heads as heads ({self.heads})")
        self._validate_attention(need, "attention", "position")
        need(self.window == 0 or self.causal, "attention.softmax.window: causal_lm only")
        if self.hybrid is not None:
            self._validate_hybrid(need)
        if self.kind == "classifier":
            need(self.num_classes >= 2, f"classifier.num_classes must be >= 2")
            need(self.pooling in ("mean", "cls"), f"classifier.pooling: {self.pooling!r}")
        return self

    def _validate_attention(self, need, at, pos):
        """The attention fields and position of this config (a model's, or a hybrid block's
        from block_config: `at` and `pos` name them in messages)."""
        need(self.attention in ("linear", "softmax"), f"{at}: {self.attention!r}")
        need(self.position.kind in POSITIONS, f"{pos}: {self.position.kind!r}")
        if self.position.scaling is not None:
            need(self.position.kind == "rope", f"{pos}.{self.position.kind}: a scaling applies "
                 "to rope only")
            self.position.scaling.validate(need, f"{pos}.rope.scaling")
        if self.attention == "linear":
            need(self.feature_map in FEATURE_MAPS, f"{at}.linear.feature_map: "
                 f"{self.feature_map!r}")
            need(self.normalization in NORMALIZATIONS,
                 f"{at}.linear.normalization: {self.normalization!r}")
            need(self.chunk_size >= 1, f"{at}.linear.chunk_size must be >= 1")
            need(self.decay in DECAYS, f"{at}.linear.decay.schedule: {self.decay!r}")
            need(self.decay is None or self.kind == "causal_lm",
                 f"{at}.linear.decay: defined for causal_lm models only")
            need(self.decay is None or self.position.kind != "permute_former",
                 f"{at}.linear.decay: permute_former brings its own per-head decay")
            need(self.gating in GATINGS, f"{at}.linear.gating: {self.gating!r}")
            need(self.update_rule in UPDATE_RULES,
                 f"{at}.linear.update_rule: {self.update_rule!r}")
            gated = self.gating is not None or self.update_rule == "delta"
            need(not gated or self.kind == "causal_lm",
                 f"{at}.linear.gating: defined for causal_lm models only")
            need(not gated or (self.decay is None and self.position.kind != "permute_former"
                               and self.normalization != "denominator"),
                 f"{at}.linear.gating: not with a fixed decay, permute_former or the "
                 "denominator")
            need(not (self.gating == "gla" and self.update_rule == "delta"),
                 f"{at}.linear.gating.gla: does not combine with the DELTA rule")
            need(self.output_gate in OUTPUT_GATES,
                 f"{at}.linear.output_gate: {self.output_gate!r}")
            need(self.position.kind not in SOFTMAX_ONLY,
                 f"{pos}.{self.position.kind}: applies to softmax attention only")
            if self.position.kind == "lrpe":
                need(self.position.type in (1, 2, 3), f"{pos}.lrpe.type: {self.position.type}")
                need(self.position.p in LRPE_P, f"{pos}.lrpe.p: {self.position.p!r}")
        else:
            need(self.position.kind not in LINEAR_ONLY,
                 f"{pos}.{self.position.kind}: acts on linear-attention features only")
            need(self.window >= 0, f"{at}.softmax.window must be >= 1 when set")
            need(self.window == 0 or self.stream_chunk == 0,
                 f"{at}.softmax.window: not with streaming")

    def to_dict(self):
        return asdict(self)

    @staticmethod
    def from_dict(values):
        values = dict(values)
        position = _position_from_dict(values.pop("position", {}))
        hybrid = values.pop("hybrid", None)
        if hybrid is not None:
            hybrid = dict(hybrid)
            own = hybrid.pop("position", None)
            hybrid = HybridConfig(position=None if own is None else _position_from_dict(own),
                                  **hybrid)
        biases = Biases(**(values.pop("biases", None) or {}))
        known = {f.name for f in fields(RotaConfig)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"config: unknown fields {unknown}")
        return RotaConfig(position=position, hybrid=hybrid, biases=biases, **values)

    @staticmethod
    def from_recipe_text(text, vocab_size=0, num_classes=None, source="recipe"):
        """The `model` block of a recipe in protobuf text format (a run's recipe.txtpb)."""
        model = Message(parse_text_format(text, source), "model", source).message("model")
        return config_from_model_message(model, vocab_size, num_classes)


def _position_from_dict(values):
    values = dict(values)
    scaling = values.pop("scaling", None)
    return PositionConfig(scaling=None if scaling is None else RopeScaling(**scaling), **values)


def _enum(value):
    return value.lower()


def config_from_model_message(m, vocab_size=0, num_classes=None):
    c = RotaConfig(vocab_size=vocab_size)
    c.kind = _enum(m.scalar("kind", "CAUSAL_LM"))
    c.width = m.integer("width", 256)
    c.layers = m.integer("layers", 4)
    c.heads = m.integer("heads", 4)
    c.ffn_width = m.integer("ffn_width", None)
    c.activation = _enum(m.scalar("ffn_activation", "GELU"))
    c.post_norm = m.scalar("norm_placement", "PRE_NORM") == "POST_NORM"
    c.norm_kind = _enum(m.scalar("norm_kind", "LAYER_NORM"))
    c.bias = m.boolean("bias", True)
    if m.has("biases"):
        b = m.message("biases")
        c.biases = Biases(**{part: b.boolean(part, None) for part in BIAS_PARTS})
    c.kv_heads = m.integer("kv_heads", None)
    c.final_norm = m.boolean("final_norm", True)
    c.norm_eps = m.number("norm_eps", 1e-5)
    c.dropout = m.number("dropout", 0.1)
    c.scale_embeddings = m.scalar("embedding_scale", "UNSCALED") == "SQRT_WIDTH"
    c.tie_embeddings = m.boolean("tie_embeddings", True)
    # A σ without a scheme selects NORMAL, as Rota resolves it (recipes/resolve.cpp).
    c.init_scheme = _enum(m.scalar("init_scheme", "NORMAL" if m.has("init_std") else "PYTORCH"))
    c.init_std = m.number("init_std", 0.02)
    attention_from_message(m.message("attention"), c)
    c.position = position_from_message(m.message("position"))
    if m.has("hybrid"):
        h = m.message("hybrid")
        c.hybrid = HybridConfig(every=h.integer("every", None), blocks=h.integers("blocks"))
        if not h.has("attention"):
            raise ValueError(f"{h.path}.attention: required (linear {{}} or softmax {{}})")
        attention_from_message(h.message("attention"), c.hybrid)
        if h.has("position"):
            c.hybrid.position = position_from_message(h.message("position"))
    classifier = m.message("classifier")
    if num_classes is not None:
        c.num_classes = num_classes
    elif classifier.has("num_classes"):
        c.num_classes = classifier.integer("num_classes", 2)
    c.pooling = _enum(classifier.scalar("pooling", "MEAN"))
    return c


def attention_from_message(attention, c):
    """An `Attention` message into the attention fields of c (a RotaConfig or HybridConfig)."""
    if attention.has("softmax"):
        c.attention = "softmax"
        s = attention.message("softmax")
        c.softmax_scale = s.number("scale", None)
        c.attention_dropout = s.number("dropout", 0.0)
        c.window = s.integer("window", 0)
        if s.has("streaming"):
            streaming = s.message("streaming")
            c.stream_chunk = streaming.integer("chunk", 16)
            c.stream_left_memory = streaming.integer("left_memory", -1)
    else:
        c.attention = "linear"
        la = attention.message("linear")
        c.feature_map = _enum(la.scalar("feature_map", "ONE_PLUS_ELU"))
        c.normalization = _enum(la.scalar("normalization", "LAYER_NORM"))
        c.denominator_eps = la.number("denominator_eps", 1e-6)
        c.chunk_size = la.integer("chunk_size", 64)
        if la.has("decay"):
            c.decay = _enum(la.message("decay").scalar("schedule", "RETNET"))
            c.decay_learnable = la.message("decay").boolean("learnable", False)
        gating = la.message("gating")
        if gating.has("gla"):
            c.gating = "gla"
            c.gla_rank = gating.message("gla").integer("rank", 16)
            c.gla_temperature = gating.message("gla").number("temperature", 16.0)
        elif gating.has("ssd"):
            c.gating = "ssd"
        c.update_rule = _enum(la.scalar("update_rule", "ADDITIVE"))
        c.output_gate = _enum(la.scalar("output_gate", "NO_GATE"))


def position_from_message(p):
    chosen = [k for k in POSITIONS if p.has(k)]
    if len(chosen) > 1:
        raise ValueError(f"{p.path}: more than one encoding set: {chosen}")
    pc = PositionConfig(kind=chosen[0] if chosen else "lrpe",
                        add_sinusoidal=p.boolean("add_sinusoidal", False))
    e = p.message(pc.kind)
    if pc.kind == "sinusoidal":
        pc.base = e.number("base", 10000.0)
    elif pc.kind == "learned_absolute":
        pc.max_positions = e.integer("max_positions", 512)
    elif pc.kind == "rope":
        pc.pairing = _enum(e.scalar("pairing", "ADJACENT"))
        pc.base = e.number("base", 10000.0)
        if e.has("scaling"):
            pc.scaling = rope_scaling_from_message(e.message("scaling"))
    elif pc.kind == "lrpe":
        pc.type = e.integer("type", 2)
        pc.pairing = _enum(e.scalar("pairing", "ADJACENT"))
        pc.p = _enum(e.scalar("p", "HOUSEHOLDER"))
        pc.learn_theta = e.boolean("learn_theta", True)
        pc.theta_base = e.number("theta_base", 10000.0)
    elif pc.kind == "shaw":
        pc.clip = e.integer("clip", 16)
        pc.clip_left = e.integer("clip_left", None)
        pc.clip_right = e.integer("clip_right", None)
        pc.values = e.boolean("values", False)
    elif pc.kind == "transformer_xl":
        pc.layout = _enum(e.scalar("layout", "INTERLEAVED"))
        pc.pe_width = e.integer("pe_width", None)
        pc.base = e.number("base", 10000.0)
    elif pc.kind == "skew":
        pc.max_len = e.integer("max_len", 512)
        pc.per_head = e.boolean("per_head", False)
    elif pc.kind == "t5":
        pc.buckets = e.integer("buckets", 32)
        pc.max_distance = e.integer("max_distance", 128)
        pc.bidirectional = e.boolean("bidirectional", None)
    return pc


def rope_scaling_from_message(s):
    """A `RopeScaling` message (exactly one of linear, llama3) with the proto's defaults."""
    chosen = [k for k in ROPE_SCALINGS if s.has(k)]
    if len(chosen) != 1:
        raise ValueError(f"{s.path}: set exactly one of {ROPE_SCALINGS}, got {chosen or 'none'}")
    e = s.message(chosen[0])
    if chosen[0] == "linear":
        return RopeScaling(kind="linear", factor=e.number("factor", 1.0))
    return RopeScaling(kind="llama3", factor=e.number("factor", 8.0),
                       low_freq_factor=e.number("low_freq_factor", 1.0),
                       high_freq_factor=e.number("high_freq_factor", 4.0),
                       original_max_positions=e.integer("original_max_positions", 8192))
