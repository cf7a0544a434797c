# Hugging Face `transformers` wrappers of rota.torch models, for exported directories (trust_remote_code).
"""`rota export hf RUN OUT` writes this file next to config.json and the other rota.torch
sources, so that users who have `transformers` can load OUT with

    AutoModelForCausalLM.from_pretrained(OUT, trust_remote_code=True)

(AutoModelForMaskedLM / AutoModelForSequenceClassification for the other kinds). The network is
rota.torch's own (built from config.json's `rota_recipe`); these classes only adapt the calling
convention (input_ids, attention_mask, labels → an output with .loss and .logits). Without
transformers, use `rota.torch.from_pretrained(OUT)` instead. transformers is not available
where Rota is developed, so these wrappers are untested there; rota.torch itself is tested.
"""
import os

import torch

try:
    from transformers import PretrainedConfig, PreTrainedModel
    from transformers.modeling_outputs import (CausalLMOutput, MaskedLMOutput,
                                               SequenceClassifierOutput)
except ImportError:  # rota.torch works without transformers; these classes then do not exist
    PretrainedConfig = None

from .config import RotaConfig
from .models import IGNORE_INDEX, build_model

if PretrainedConfig is not None:

    class RotaHfConfig(PretrainedConfig):
        model_type = "rota"

        def __init__(self, rota_recipe="", rota_kind="causal_lm", vocab_size=0, **kwargs):
            self.rota_recipe, self.rota_kind = rota_recipe, rota_kind
            super().__init__(vocab_size=vocab_size, **kwargs)

        def to_rota_config(self):
            config = RotaConfig.from_recipe_text(self.rota_recipe, vocab_size=self.vocab_size,
                                                 source="config.json:rota_recipe")
            if config.kind == "classifier":
                config.num_classes = self.num_labels
            return config.validate()

    class _RotaPreTrained(PreTrainedModel):
        config_class = RotaHfConfig
        base_model_prefix = "rota"
        _keys_to_ignore_on_load_missing = []

        def __init__(self, config):
            super().__init__(config)
            self.rota = build_model(config.to_rota_config())

        # The checkpoint names are Rota's (encoder.…); rota is the only submodule, so map them.
        def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
            for key in list(state_dict):
                if key.startswith(prefix) and not key.startswith(prefix + "rota."):
                    state_dict[prefix + "rota." + key[len(prefix):]] = state_dict.pop(key)
            super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

        def _init_weights(self, module):
            pass  # weights come from model.safetensors

    class RotaForCausalLM(_RotaPreTrained):
        def forward(self, input_ids, attention_mask=None, labels=None, **kwargs):
            logits = self.rota(input_ids)
            loss = None
            if labels is not None:  # HF convention: labels are the inputs; shift here
                loss = torch.nn.functional.cross_entropy(
                    logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(),
                    ignore_index=IGNORE_INDEX)
            return CausalLMOutput(loss=loss, logits=logits)

    class RotaForMaskedLM(_RotaPreTrained):
        def forward(self, input_ids, attention_mask=None, labels=None, **kwargs):
            logits = self.rota(input_ids, attention_mask)
            loss = None
            if labels is not None:
                loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(),
                                                         ignore_index=IGNORE_INDEX)
            return MaskedLMOutput(loss=loss, logits=logits)

    class RotaForSequenceClassification(_RotaPreTrained):
        def forward(self, input_ids, attention_mask=None, labels=None, **kwargs):
            logits = self.rota(input_ids, attention_mask)
            loss = None
            if labels is not None:
                loss = torch.nn.functional.cross_entropy(logits, labels)
            return SequenceClassifierOutput(loss=loss, logits=logits)
