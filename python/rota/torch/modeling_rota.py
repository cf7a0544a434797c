# Hugging Face `transformers` wrappers of rota.torch models, for exported directories (trust_remote_code).
"""`rota export hf RUN OUT` writes this file next to config.json and the other rota.torch
sources, so that users who have `transformers` can load OUT with

    AutoModelForCausalLM.from_pretrained(OUT, trust_remote_code=True)

(AutoModelForMaskedLM / AutoModelForSequenceClassification for the other kinds). The network is
rota.torch's own (built from config.json's `rota_recipe`); these classes only adapt the calling
convention (input_ids, attention_mask, labels → an output with .loss and .logits) and, for
causal LMs, `generate()` (GenerationMixin; every step recomputes the full forward pass, with no
cache). Without transformers, use `rota.torch.from_pretrained(OUT)` instead.
Everything the recipe's model block says is rota.torch's, so an imported Hugging Face model
(`rota import hf`: grouped-query attention `kv_heads`, per-part `biases`, RoPE's θ `scaling`)
exported again computes here what it computed in transformers.
tests/peers/test_hf_roundtrip.py checks them with transformers 5.25 (tools/peers/), and
tests/peers/test_hf_import.py an imported Llama with grouped-query attention and the llama3 θ.
"""
import torch

try:
    from transformers import GenerationMixin, PreTrainedModel
    from transformers.modeling_outputs import (CausalLMOutput, MaskedLMOutput,
                                               SequenceClassifierOutput)
    try:
        from transformers import PreTrainedConfig  # transformers 5
    except ImportError:
        from transformers import PretrainedConfig as PreTrainedConfig  # transformers 4
except ImportError:  # rota.torch works without transformers; these classes then do not exist
    PreTrainedConfig = None

from .config import RotaConfig
from .models import IGNORE_INDEX, build_model
from .positions import Lrpe, odd_even_index

if PreTrainedConfig is not None:

    class RotaHfConfig(PreTrainedConfig):
        model_type = "rota"

        def __init__(self, rota_recipe="", rota_kind="causal_lm", vocab_size=0, **kwargs):
            self.rota_recipe, self.rota_kind = rota_recipe, rota_kind
            self.vocab_size = vocab_size
            super().__init__(**kwargs)

        def to_rota_config(self):
            config = RotaConfig.from_recipe_text(self.rota_recipe, vocab_size=self.vocab_size,
                                                 source="config.json:rota_recipe")
            if config.kind == "classifier":
                config.num_classes = self.num_labels
            return config.validate()

    class _RotaPreTrained(PreTrainedModel):
        """Holds the rota.torch model as `rota`. model.safetensors has Rota's names
        (encoder.…); transformers prefixes them with base_model_prefix while loading."""
        config_class = RotaHfConfig
        base_model_prefix = "rota"
        main_input_name = "input_ids"
        # The loss is a mean over this batch's own targets; a Trainer must not pass
        # num_items_in_batch expecting a sum.
        accepts_loss_kwargs = False

        def __init__(self, config):
            super().__init__(config)
            self.rota = build_model(config.to_rota_config())
            # rota.torch freezes some parameters (RoPE's θ, LRPE's θ without learn_theta, a
            # frozen Householder vector); transformers' loader makes every float parameter it
            # sets trainable, so from_pretrained freezes these again.
            self._rota_frozen = [name for name, p in self.named_parameters()
                                 if not p.requires_grad]
            self.post_init()

        @classmethod
        def from_pretrained(cls, *args, **kwargs):
            loaded = super().from_pretrained(*args, **kwargs)
            model = loaded[0] if isinstance(loaded, tuple) else loaded  # output_loading_info
            for name in model._rota_frozen:
                model.get_parameter(name).requires_grad_(False)
            return loaded

        @torch.no_grad()
        def _init_weights(self, module):
            # Every parameter and persistent buffer comes from model.safetensors. transformers
            # builds the model on the meta device, so the one tensor that is not stored there,
            # LRPE's odd-even index (p: ODD_EVEN, a non-persistent buffer), is rebuilt here.
            if isinstance(module, Lrpe) and getattr(module, "odd_even", None) is not None:
                module.odd_even.copy_(odd_even_index(module.head_dim))

        def get_input_embeddings(self):
            return self.rota.encoder.embed

        def _key_mask(self, input_ids, attention_mask):
            if attention_mask is None:
                return None
            if attention_mask.shape != input_ids.shape:
                raise ValueError(f"attention_mask has shape {tuple(attention_mask.shape)}; "
                                 f"input_ids have {tuple(input_ids.shape)}")
            return attention_mask

    class RotaForCausalLM(_RotaPreTrained, GenerationMixin):
        def forward(self, input_ids, attention_mask=None, labels=None, **kwargs):
            # A causal model needs no key mask for padding at the end of a row (no real token
            # attends to it); padding before real tokens would change them, and Rota's causal
            # LMs take no key mask, so it is refused rather than ignored.
            mask = self._key_mask(input_ids, attention_mask)
            if mask is not None:
                mask = mask.bool()
                if bool((mask[:, 1:] & ~mask[:, :-1]).any()):
                    raise ValueError("RotaForCausalLM: attention_mask has padding before real "
                                     "tokens (left padding); Rota's causal LMs take no key "
                                     "mask, so pad on the right or pass rows one by one")
            logits = self.rota(input_ids)
            loss = None
            if labels is not None:  # HF convention: labels are the inputs; shift here
                loss = torch.nn.functional.cross_entropy(
                    logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(),
                    ignore_index=IGNORE_INDEX)
            return CausalLMOutput(loss=loss, logits=logits)

        def prepare_inputs_for_generation(self, input_ids, attention_mask=None, **kwargs):
            # No cache: each step runs the whole sequence again (O(N) per new token, where
            # rota.torch's own CausalLm.generate keeps the recurrent state).
            return {"input_ids": input_ids, "attention_mask": attention_mask}

    class RotaForMaskedLM(_RotaPreTrained):
        def forward(self, input_ids, attention_mask=None, labels=None, **kwargs):
            logits = self.rota(input_ids, self._key_mask(input_ids, attention_mask))
            loss = None
            if labels is not None:
                loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(),
                                                         ignore_index=IGNORE_INDEX)
            return MaskedLMOutput(loss=loss, logits=logits)

    class RotaForSequenceClassification(_RotaPreTrained):
        def forward(self, input_ids, attention_mask=None, labels=None, **kwargs):
            logits = self.rota(input_ids, self._key_mask(input_ids, attention_mask))
            loss = None
            if labels is not None:
                loss = torch.nn.functional.cross_entropy(logits, labels)
            return SequenceClassifierOutput(loss=loss, logits=logits)
