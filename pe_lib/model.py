"""BERT with a pluggable position embedding, as HuggingFace ``PreTrainedModel`` classes (their
configuration is :class:`pe_lib.config.PEBertConfig`).

The encoder is BERT's (post-LayerNorm, GELU, learned token-type embeddings, tanh pooler); the
only thing a variant changes is where position enters (see ``pe_lib.positions``):

    x^0_i = LN(WE(w_i) + TE(t_i) [+ p_i])                                   input (APE)
    s_ij  = rot(q_i) . rot(k_j) / sqrt(d) [+ b_ij]                          rotation / score bias
    x^l   = LN(h + FFN(h)),  h = LN(x^{l-1} + Attn(x^{l-1}))                 every layer (post-LN)

``layer_norm="pre"`` departs from BERT with the pre-LN layer of Xiong et al. (2020), which trains
stably at the larger learning rates a tiny budget needs: x^l = h + FFN(LN(h)),
h = x^{l-1} + Attn(LN(x^{l-1})), and one LN after the last layer.

Attention runs through ``torch.nn.functional.scaled_dot_product_attention`` with the padding mask
and every relative term folded into one additive float mask (``attn_implementation="sdpa"``, the
default), except where the probabilities themselves are needed: attentions requested, or attention
dropout while training (drawn by :func:`dropout_`, which SDPA cannot do); those, and every forward
under ``attn_implementation="eager"``, take the explicit softmax path.
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForMaskedLM,
    AutoModelForQuestionAnswering,
    AutoModelForSequenceClassification,
    PreTrainedModel,
)
from transformers import initialization as init
from transformers.activations import ACT2FN
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.utils import logging as hf_logging
from transformers.modeling_outputs import (
    BaseModelOutputWithPooling,
    MaskedLMOutput,
    QuestionAnsweringModelOutput,
    SequenceClassifierOutput,
)

from pe_lib.config import PEBertConfig
from pe_lib.io import atomic_write_text
from pe_lib.positions import AbsolutePE, PositionEmbedding, RelativePE, build_absolute, build_relative, parse_variant

#: The ``attn_implementation`` values this model runs (HF's names); the first is the default.
ATTENTION_IMPLEMENTATIONS = ("sdpa", "eager")


# ----------------------------------------------------------------------------- building blocks


def dropout_(x: torch.Tensor, p: float) -> torch.Tensor:
    """Inverted dropout, x * m / (1 - p') with m ~ Bernoulli(1 - p'), from torch's global generator.

    The mask is drawn as 16-bit uniform integers u, two from every random 32-bit word, and m =
    [u >= t] with t = round(p 2^16), so the drop rate is p' = t / 2^16 (|p' - p| <= 2^-17) and the
    expectation is kept exactly. Half as many random draws as ``F.dropout``'s one float per unit,
    which makes the mask over twice as fast on CPUs."""
    if p == 0:
        return x
    threshold = round(p * 2**16)  # drop u < threshold
    if threshold >= 2**16:
        return x * 0
    words = torch.randint(-(2**31), 2**31 - 1, ((x.numel() + 1) // 2,), dtype=torch.int32, device=x.device)  # (N/2,)
    u = words.view(torch.int16)[: x.numel()].view(x.shape)  # (..., ) like x, uniform in [-2^15, 2^15)
    keep = (u >= threshold - 2**15).to(x.dtype).mul_(2**16 / (2**16 - threshold))  # (..., ) 0 or 1 / (1 - p')
    return x * keep


class Dropout(nn.Dropout):
    """``nn.Dropout`` computed with :func:`dropout_`."""

    def forward(self, x):
        return dropout_(x, self.p) if self.training else x


class Embeddings(nn.Module):
    """x^0 = dropout(LN(WE(w) + TE(t) [+ APE(x)]))."""

    def __init__(self, config: PEBertConfig):
        super().__init__()
        self.word = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.token_type = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.position: AbsolutePE | None = build_absolute(parse_variant(config.position_embedding), config)
        self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids=None, token_type_ids=None, position_ids=None, inputs_embeds=None):
        """Exactly one of ``input_ids`` (B, n) and ``inputs_embeds`` (B, n, H), as in HF's BERT."""
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("give exactly one of input_ids and inputs_embeds")
        x = self.word(input_ids) if inputs_embeds is None else inputs_embeds  # (B, n, H)
        B, n = x.shape[:2]
        if token_type_ids is None:
            x = x + self.token_type.weight[0]  # (B, n, H)
        else:
            x = x + self.token_type(token_type_ids)  # (B, n, H)
        if self.position is not None:
            if position_ids is None:  # every row at positions 0..n-1
                # One lookup per position, broadcast over the batch: the table's gradient is then a
                # sum over the batch (a deterministic reduction) instead of B*n rows scattered into n
                # with index_put(accumulate=True), whose order, and so whose bits, vary with two threads.
                p = self.position.first(n, x.device).expand(B, n, -1)  # (B, n, H)
            else:
                p = self.position(position_ids)  # (B, n, H)
            x = x + p.to(x.dtype)  # (B, n, H); a sinusoid is computed in fp32, the model may be bf16/fp16
        return self.dropout(self.norm(x))  # (B, n, H)


class SelfAttention(nn.Module):
    """Multi-head self-attention with the relative hooks: rotate q/k, then add the score bias.

    Reads ``config._attn_implementation`` at every call, so ``set_attn_implementation`` takes effect
    at once: ``"sdpa"`` runs the fused kernel unless the probabilities are needed (returned, or
    dropped out in training), ``"eager"`` always the explicit softmax."""

    def __init__(self, config: PEBertConfig):
        super().__init__()
        self.config = config
        self.n_heads = config.num_attention_heads
        self.head_dim = config.head_dim
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size)
        self.out = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout_p = config.attention_probs_dropout_prob

    def forward(self, x, mask, relative: RelativePE | None, output_attentions: bool = False):
        B, n, H = x.shape
        q, k, v = self.qkv(x).view(B, n, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)  # (B, h, n, d) each
        if relative is not None:
            q, k = relative.rotate(q, k)  # (B, h, n, d) each
            bias = relative.bias(q, k)  # (B, h, n, n) or None
            if bias is not None:
                bias = relative.untied(bias)  # (B, h, n, n)
                mask = bias if mask is None else mask + bias  # (B, h, n, n)
        if mask is not None:
            mask = mask.to(q.dtype)
        dropout = self.dropout_p if self.training else 0.0
        probs = None
        if output_attentions or dropout > 0 or self.config._attn_implementation == "eager":  # explicit softmax
            scores = (q * (1 / math.sqrt(self.head_dim))) @ k.transpose(-1, -2)  # (B, h, n, n), scaled on the smaller q
            if mask is not None:
                scores = scores.add_(mask)  # (B, h, n, n)
            probs = scores.softmax(-1)  # (B, h, n, n)
            y = dropout_(probs, dropout) @ v  # (B, h, n, d)
        else:  # fused kernel (flash attention where the backend has it)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, h, n, d)
        y = y.transpose(1, 2).reshape(B, n, H)  # (B, n, H)
        return self.out(y), probs if output_attentions else None


class Layer(GradientCheckpointingLayer):
    """One BERT layer, post-LN: h = LN(x + Attn(x)), y = LN(h + FFN(h)); or pre-LN:
    h = x + Attn(LN(x)), y = h + FFN(LN(h)) (``config.layer_norm``). Under activation
    checkpointing the layer is recomputed in the backward pass (its inputs are positional, as
    ``GradientCheckpointingLayer`` needs); torch's checkpoint restores the RNG state, so the
    recomputation draws the same dropout masks."""

    def __init__(self, config: PEBertConfig):
        super().__init__()
        self.attention = SelfAttention(config)
        self.attention_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.ffn_in = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act = ACT2FN[config.hidden_act]
        self.ffn_out = nn.Linear(config.intermediate_size, config.hidden_size)
        self.ffn_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)
        self.pre_norm = config.layer_norm == "pre"

    def forward(self, x, mask, relative, output_attentions=False):
        if self.pre_norm:
            a, probs = self.attention(self.attention_norm(x), mask, relative, output_attentions)  # (B, n, H)
            h = x + self.dropout(a)  # (B, n, H)
            return h + self.dropout(self.ffn(self.ffn_norm(h))), probs  # (B, n, H)
        a, probs = self.attention(x, mask, relative, output_attentions)  # (B, n, H)
        h = self.attention_norm(x + self.dropout(a))  # (B, n, H)
        return self.ffn_norm(h + self.dropout(self.ffn(h))), probs  # (B, n, H)

    def ffn(self, h):  # (B, n, H) -> (B, n, H)
        return self.ffn_out(self.act(self.ffn_in(h)))


# ----------------------------------------------------------------------------- HF classes


class PEBertPreTrainedModel(PreTrainedModel):
    config_class = PEBertConfig
    base_model_prefix = "bert"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _no_split_modules = ["Layer"]

    def get_correct_attn_implementation(self, requested_attention: str | None, is_init_check: bool = False) -> str:
        """HF's check, narrowed to what :class:`SelfAttention` runs: ``sdpa`` (default) or ``eager``."""
        if requested_attention is not None and requested_attention not in ATTENTION_IMPLEMENTATIONS:
            raise ValueError(f"attn_implementation {requested_attention!r} is not supported by pe-bert; "
                             f"valid: {', '.join(ATTENTION_IMPLEMENTATIONS)}")
        return super().get_correct_attn_implementation(requested_attention, is_init_check)

    @classmethod
    def _can_set_attn_implementation(cls) -> bool:
        """True: the attention reads the implementation from the config at every call (HF's own test
        is a heuristic on the source, looking for its ``AttentionInterface``, which is not used here)."""
        return True

    def save_pretrained(self, save_directory, is_main_process: bool = True, **kwargs):
        """HF's ``save_pretrained``, plus a model card (``README.md``, unless the folder has one)
        that says how to load the folder. ``pe-bert`` is not a transformers model type and
        transformers 5 has no hook to name the package that provides an unknown one: without
        ``import pe_lib`` it fails with "does not recognize this architecture" and advises
        upgrading transformers, so the card is where a user learns to import the package."""
        super().save_pretrained(save_directory, is_main_process=is_main_process, **kwargs)
        card = Path(save_directory) / "README.md"
        if is_main_process and not card.exists():
            atomic_write_text(card, model_card(self.config, type(self).__name__))

    def returned(self, output, return_dict: bool | None):
        """``output``, or (``return_dict`` False, or None with ``config.return_dict`` False) its
        fields that are not None as a tuple, as HF models return."""
        return_dict = self.config.return_dict if return_dict is None else return_dict
        return output if return_dict else output.to_tuple()

    def _init_weights(self, module):
        """BERT's init: N(0, initializer_range) weights, zero biases, unit LayerNorm; PE modules reset
        their own tensors. ``transformers.initialization`` skips tensors loaded from a checkpoint."""
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            init.normal_(module.weight, std=std)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weight, std=std)
            if module.padding_idx is not None and not getattr(module.weight, "_is_hf_initialized", False):
                init.zeros_(module.weight[module.padding_idx])
        elif isinstance(module, nn.LayerNorm):
            init.ones_(module.weight)
            init.zeros_(module.bias)
        elif isinstance(module, MLMHead):
            init.zeros_(module.bias)
        elif isinstance(module, PositionEmbedding):
            module.reset_tensors()


class PEBertModel(PEBertPreTrainedModel):
    """The encoder: embeddings, ``num_hidden_layers`` layers, optional pooler (tanh on [CLS])."""

    def __init__(self, config: PEBertConfig, add_pooling_layer: bool = True):
        super().__init__(config)
        self.embeddings = Embeddings(config)
        self.relative = build_relative(parse_variant(config.position_embedding), config)
        self.layers = nn.ModuleList(Layer(config) for _ in range(config.num_hidden_layers))
        # pre-LN: the residual stream is normalised once after the last layer
        self.final_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps) if config.layer_norm == "pre" else None
        self.pooler = nn.Linear(config.hidden_size, config.hidden_size) if add_pooling_layer else None
        self.post_init()

    def get_input_embeddings(self):
        return self.embeddings.word

    def set_input_embeddings(self, value):
        self.embeddings.word = value

    def relative_for(self, layer: int) -> RelativePE | None:
        """The relative PE module that layer ``layer`` uses (its own, or the shared one)."""
        if isinstance(self.relative, nn.ModuleList):
            return self.relative[layer]
        return self.relative

    def additive_mask(self, attention_mask, n: int, dtype) -> torch.Tensor | None:
        """Padding mask and any content-independent bias (ALiBi, T5), once per forward:
        (B, 1, 1, n), (h, n, n) or (B, h, n, n), or None when there is neither.

        An ``attention_mask`` without padding is dropped in eager mode, as HF's BERT does: SDPA
        then runs without a mask, or with the (h, n, n) bias alone, whose bits differ from those of
        its (B, h, n, n) sum with a zero mask. Under ``torch.compile``/``torch.export`` that
        test on the mask's values would be a data-dependent branch, so there the mask is always
        applied: the traced model equals eager up to float rounding."""
        mask = None
        padded = attention_mask is not None and (torch.compiler.is_compiling() or not bool(attention_mask.all()))
        if padded:
            keep = attention_mask[:, None, None, :].bool()  # (B, 1, 1, n)
            mask = torch.zeros(keep.shape, dtype=dtype, device=keep.device).masked_fill(~keep, torch.finfo(dtype).min)
        static = self.relative.static_bias(n, n, self.device) if isinstance(self.relative, RelativePE) else None
        if static is not None:
            static = self.relative.untied(static)  # (h, n, n)
            mask = static if mask is None else mask + static  # (B, h, n, n)
        return mask

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> BaseModelOutputWithPooling | tuple:
        """HF's BertModel arguments; ``output_*`` and ``return_dict`` default to the config's."""
        if output_attentions is None:
            output_attentions = self.config.output_attentions
        if output_hidden_states is None:
            output_hidden_states = self.config.output_hidden_states
        x = self.embeddings(input_ids, token_type_ids, position_ids, inputs_embeds)  # (B, n, H)
        mask = self.additive_mask(attention_mask, x.shape[1], torch.float32)
        hidden, attentions = (x,), ()
        for i, layer in enumerate(self.layers):
            x, probs = layer(x, mask, self.relative_for(i), output_attentions)  # (B, n, H)
            hidden += (x,)
            attentions += (probs,)
        if self.final_norm is not None:
            x = self.final_norm(x)  # (B, n, H)
            hidden = hidden[:-1] + (x,)
        pooled = torch.tanh(self.pooler(x[:, 0])) if self.pooler is not None else None  # (B, H)
        return self.returned(BaseModelOutputWithPooling(
            last_hidden_state=x,
            pooler_output=pooled,
            hidden_states=hidden if output_hidden_states else None,
            attentions=attentions if output_attentions else None,
        ), return_dict)


class MLMHead(nn.Module):
    """BERT's MLM head: logits = LN(gelu(W h)) E^T + b, E the (tied) word embeddings."""

    def __init__(self, config: PEBertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = ACT2FN[config.hidden_act]
        self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, h):  # (..., H) -> (..., V)
        return self.decoder(self.norm(self.act(self.dense(h)))) + self.bias


class PEBertForMaskedLM(PEBertPreTrainedModel):
    """Masked language model, as HF's ``BertForMaskedLM``: ``logits`` (B, n, V) and, with ``labels``,
    the mean cross-entropy over the labelled positions (labels != -100).

    ``masked_only=True`` (with labels) is the pretraining loop's route: the vocabulary projection
    runs only at the labelled positions (about 15% of the tokens, and the largest matrix product
    of a small model), so ``logits`` then has shape (n_masked, V), in the order of
    ``labels[labels != -100]``; the loss is the same up to float rounding."""

    _tied_weights_keys = {"head.decoder.weight": "bert.embeddings.word.weight"}

    def __init__(self, config: PEBertConfig):
        super().__init__(config)
        self.bert = PEBertModel(config, add_pooling_layer=False)
        self.head = MLMHead(config)
        self.post_init()

    def get_output_embeddings(self):
        return self.head.decoder

    def set_output_embeddings(self, new_embeddings):
        """Also resizes the output bias to the new vocabulary (kept rows keep their values, new rows
        start at 0), as HF's BertForMaskedLM's bias follows its decoder's: ``resize_token_embeddings``
        calls this with the resized decoder."""
        self.head.decoder = new_embeddings
        old = self.head.bias
        if old.shape[0] != new_embeddings.out_features:
            bias = torch.zeros(new_embeddings.out_features, dtype=old.dtype, device=old.device)  # (V',)
            kept = min(old.shape[0], bias.shape[0])
            bias[:kept] = old.detach()[:kept]
            self.head.bias = nn.Parameter(bias, requires_grad=old.requires_grad)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None, inputs_embeds=None,
                labels=None, output_attentions=None, output_hidden_states=None, return_dict=None,
                masked_only: bool = False, **kwargs):
        out = self.bert(input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds, output_attentions,
                        output_hidden_states, return_dict=True)
        h = out.last_hidden_state  # (B, n, H)
        loss = None
        if labels is not None and masked_only:
            selected = labels != -100  # (B, n)
            logits = self.head(h[selected])  # (n_masked, V)
            loss = F.cross_entropy(logits.float(), labels[selected])
        else:
            logits = self.head(h)  # (B, n, V)
            if labels is not None:  # -100: not a target (cross_entropy's ignore_index)
                loss = F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.view(-1))
        output = MaskedLMOutput(loss=loss, logits=logits, hidden_states=out.hidden_states, attentions=out.attentions)
        return self.returned(output, return_dict)


class PEBertForSequenceClassification(PEBertPreTrainedModel):
    """Pooled [CLS] -> dropout -> linear, with HF's ``config.problem_type``: ``regression`` (MSE),
    ``single_label_classification`` (cross-entropy on class ids) or ``multi_label_classification``
    (binary cross-entropy with logits on 0/1 targets of shape (B, num_labels)). Unset, it is
    chosen and recorded in the config at the first loss as HF's BERT does: regression for one
    label, single-label for integer labels, else multi-label."""

    def __init__(self, config: PEBertConfig):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.bert = PEBertModel(config)
        p = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
        self.dropout = Dropout(p)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None, inputs_embeds=None,
                labels=None, output_attentions=None, output_hidden_states=None, return_dict=None, **kwargs):
        out = self.bert(input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds, output_attentions,
                        output_hidden_states, return_dict=True)
        logits = self.classifier(self.dropout(out.pooler_output))  # (B, num_labels)
        loss = None if labels is None else self.loss(logits.float(), labels)
        output = SequenceClassifierOutput(loss=loss, logits=logits, hidden_states=out.hidden_states,
                                          attentions=out.attentions)
        return self.returned(output, return_dict)

    def loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The loss of ``config.problem_type`` (set here when unset, as HF's BERT does)."""
        if self.config.problem_type is None:
            if self.num_labels == 1:
                self.config.problem_type = "regression"
            elif labels.dtype in (torch.long, torch.int):
                self.config.problem_type = "single_label_classification"
            else:
                self.config.problem_type = "multi_label_classification"
        if self.config.problem_type == "regression":
            if self.num_labels == 1:
                return F.mse_loss(logits.reshape(-1), labels.float().reshape(-1))  # (B,) against (B,)
            return F.mse_loss(logits, labels.float())  # (B, num_labels)
        if self.config.problem_type == "single_label_classification":
            return F.cross_entropy(logits.view(-1, self.num_labels), labels.long().view(-1))
        return F.binary_cross_entropy_with_logits(logits, labels.float())  # (B, num_labels)


class PEBertForQuestionAnswering(PEBertPreTrainedModel):
    """Extractive QA (SQuAD): a linear layer gives start and end logits per token; the loss is the
    mean of the start and end cross-entropies (positions outside the input are ignored, as in HF)."""

    def __init__(self, config: PEBertConfig):
        super().__init__(config)
        self.bert = PEBertModel(config, add_pooling_layer=False)
        self.qa_outputs = nn.Linear(config.hidden_size, 2)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None, inputs_embeds=None,
                start_positions=None, end_positions=None, output_attentions=None, output_hidden_states=None,
                return_dict=None, **kwargs):
        out = self.bert(input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds, output_attentions,
                        output_hidden_states, return_dict=True)
        start, end = self.qa_outputs(out.last_hidden_state).float().unbind(-1)  # (B, n) each
        loss = None
        if start_positions is not None and end_positions is not None:
            n = start.shape[1]
            ignored = n  # out-of-range targets are clamped to n and ignored
            s, e = start_positions.clamp(0, ignored), end_positions.clamp(0, ignored)
            loss = (F.cross_entropy(start, s, ignore_index=ignored) + F.cross_entropy(end, e, ignore_index=ignored)) / 2
        output = QuestionAnsweringModelOutput(
            loss=loss, start_logits=start, end_logits=end, hidden_states=out.hidden_states, attentions=out.attentions
        )
        return self.returned(output, return_dict)


def model_card(config: PEBertConfig, class_name: str, training: Mapping[str, Any] | None = None) -> str:
    """The model card of a saved pe-bert folder: what the model is, how it was trained (``training``:
    label -> value, e.g. the profile, data and steps), and how to load it."""
    rows = "".join(f"| {label} | {value} |\n" for label, value in (training or {}).items())
    trained = f"\n## Training\n\n| | |\n|---|---|\n{rows}" if rows else ""
    return f"""---
library_name: transformers
tags: [pe-lib, bert, position-embeddings]
---
# pe-bert `{config.position_embedding}` ({class_name})

A BERT encoder ({config.num_hidden_layers} layers, hidden size {config.hidden_size}, \
{config.num_attention_heads} heads, vocabulary {config.vocab_size}) whose position embedding is \
`{config.position_embedding}`, from pe-book's `pe_lib` (a reproduction of "On Position Embeddings in BERT", \
ICLR 2021).
{trained}
## How to load

`pe-bert` is not a model type that transformers knows: the `pe_lib` package registers it with the \
Auto classes when it is imported (no `trust_remote_code`). Install the `pe-lib` package (from a clone \
of the pe-book repository: `pip install .`), import it, then load as usual:

```python
import pe_lib  # registers model_type "pe-bert"
from transformers import AutoModelForMaskedLM

model = AutoModelForMaskedLM.from_pretrained("path/to/this/folder")
```

Without `import pe_lib`, transformers stops with "The checkpoint you are trying to load has model type \
`pe-bert` but Transformers does not recognize this architecture" and suggests upgrading transformers; \
upgrading does not help, importing `pe_lib` does.
"""


@contextmanager
def quiet_transformers():
    """Silence transformers' loading/saving progress bars and its "newly initialised weights"
    notices (expected when a fine-tuning head is added to a pretrained encoder)."""
    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


AutoConfig.register(PEBertConfig.model_type, PEBertConfig)
AutoModel.register(PEBertConfig, PEBertModel)
AutoModelForMaskedLM.register(PEBertConfig, PEBertForMaskedLM)
AutoModelForSequenceClassification.register(PEBertConfig, PEBertForSequenceClassification)
AutoModelForQuestionAnswering.register(PEBertConfig, PEBertForQuestionAnswering)
