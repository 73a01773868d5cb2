"""The models behave like HuggingFace's: resizing, activation checkpointing, attention
implementations, ``inputs_embeds``, ``return_dict``, config defaults, loading without ``pe_lib``."""
import copy
import math
import os
import subprocess
import sys
import warnings

import pytest
import torch
import torch.nn.functional as F
from transformers import AutoModelForMaskedLM
from transformers.modeling_outputs import MaskedLMOutput

from pe_lib import PEBertForMaskedLM, PEBertForQuestionAnswering, PEBertForSequenceClassification, PEBertModel, all_variants
from pe_lib.model import dropout_

#: one variant per way position enters: input, content score bias (+ untied [CLS]), static bias, rotation
KINDS = ["ape-learned", "rpe-learned+untie-cls", "t5-bias", "ape-sin+rope"]


def batch(n=10, b=2, vocab=64):
    ids = torch.randint(5, vocab, (b, n))
    mask = torch.ones(b, n, dtype=torch.long)
    mask[1, 7:] = 0
    return ids, mask


# ----------------------------------------------------------------------------- resizing


@pytest.mark.parametrize("new_size", [70, 60])
def test_resize_token_embeddings_resizes_the_mlm_bias(new_size, make_config, tmp_path):
    model = PEBertForMaskedLM(make_config("ape-learned")).eval()
    with torch.no_grad():
        model.head.bias.normal_()
    old_bias = model.head.bias.detach().clone()
    model.resize_token_embeddings(new_size, mean_resizing=False)
    kept = min(64, new_size)
    assert model.head.bias.shape == (new_size,) and model.config.vocab_size == new_size
    assert torch.equal(model.head.bias[:kept], old_bias[:kept]) and not model.head.bias[kept:].any()
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight  # still tied
    ids, mask = batch(vocab=new_size)
    logits = model(ids, attention_mask=mask).logits
    assert logits.shape == (2, 10, new_size)
    labels = torch.where(torch.rand(ids.shape) < 0.5, ids, -100)
    labels[0, 0] = ids[0, 0]
    model(ids, attention_mask=mask, labels=labels).loss.backward()
    assert model.head.bias.grad.shape == (new_size,)
    model.save_pretrained(tmp_path)
    loaded = AutoModelForMaskedLM.from_pretrained(tmp_path).eval()
    assert torch.equal(loaded(ids, attention_mask=mask).logits, logits)


# ----------------------------------------------------------------------------- activation checkpointing


def gradients(model, ids, mask, labels) -> dict[str, torch.Tensor]:
    model.zero_grad(set_to_none=True)
    torch.manual_seed(3)  # the same dropout masks in both runs
    model(ids, attention_mask=mask, labels=labels).loss.backward()
    return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("variant", KINDS)
def test_activation_checkpointing_gives_the_same_gradients(variant, make_config):
    model = PEBertForMaskedLM(make_config(variant, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)).train()
    ids, mask = batch()
    labels = torch.where(torch.rand(ids.shape) < 0.3, ids, -100)
    labels[0, 1] = ids[0, 1]
    plain = gradients(model, ids, mask, labels)
    calls = []
    model.bert.layers[0].attention.register_forward_hook(lambda *_: calls.append(1))
    model.activation_checkpointing_enable()
    assert model.is_activation_checkpointing
    checkpointed = gradients(model, ids, mask, labels)
    assert len(calls) == 2, "the checkpointed layer must be recomputed in the backward pass"
    assert checkpointed.keys() == plain.keys()
    for name in plain:
        torch.testing.assert_close(checkpointed[name], plain[name], msg=name)


def test_training_with_activation_checkpointing_lowers_the_loss(make_config):
    model = PEBertForMaskedLM(make_config("rpe-learned", hidden_dropout_prob=0.1)).train()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # the deprecated alias still works
        model.gradient_checkpointing_enable()
    ids, mask = batch()
    labels = torch.where(torch.rand(ids.shape) < 0.3, ids, -100)
    labels[0, 1] = ids[0, 1]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(8):
        loss = model(ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 0.5


# ----------------------------------------------------------------------------- attention implementations


def reference_hidden(bert: PEBertModel, ids, mask) -> torch.Tensor:
    """The encoder's arithmetic as it was before ``attn_implementation`` existed, written out with
    the unchanged building blocks: fused SDPA with one additive mask, or (attention dropout while
    training) the explicit softmax with the model's own dropout."""
    x = bert.embeddings(ids)
    additive = bert.additive_mask(mask, ids.shape[1], torch.float32)
    for i, layer in enumerate(bert.layers):
        att, relative, m = layer.attention, bert.relative_for(i), additive
        B, n, H = x.shape
        q, k, v = att.qkv(x).view(B, n, 3, att.n_heads, att.head_dim).permute(2, 0, 3, 1, 4)
        if relative is not None:
            q, k = relative.rotate(q, k)
            bias = relative.bias(q, k)
            if bias is not None:
                bias = relative.untied(bias)
                m = bias if m is None else m + bias
        p = att.dropout_p if att.training else 0.0
        if p > 0:
            scores = (q * (1 / math.sqrt(att.head_dim))) @ k.transpose(-1, -2)
            if m is not None:
                scores = scores.add_(m)
            y = dropout_(scores.softmax(-1), p) @ v
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
        a = att.out(y.transpose(1, 2).reshape(B, n, H))
        h = layer.attention_norm(x + layer.dropout(a))
        x = layer.ffn_norm(h + layer.dropout(layer.ffn_out(layer.act(layer.ffn_in(h)))))
    return x


@pytest.mark.parametrize("variant", KINDS + ["alibi+untie-cls"])
@pytest.mark.parametrize("training", [False, True])
def test_default_forward_is_bit_identical_to_the_reference(variant, training, make_config):
    bert = PEBertModel(make_config(variant, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)).train(training)
    ids, mask = batch()
    torch.manual_seed(5)
    expected = reference_hidden(bert, ids, mask)
    torch.manual_seed(5)
    assert torch.equal(bert(ids, attention_mask=mask).last_hidden_state, expected)


def count_sdpa(monkeypatch) -> list:
    calls = []
    fused = F.scaled_dot_product_attention

    def counted(*args, **kwargs):
        calls.append(1)
        return fused(*args, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", counted)
    return calls


def test_attn_implementation_reports_what_runs(make_config, monkeypatch):
    calls = count_sdpa(monkeypatch)
    ids, mask = batch()
    model = PEBertModel(make_config("alibi")).eval()
    assert model.config._attn_implementation == "sdpa"
    fused = model(ids, attention_mask=mask).last_hidden_state
    assert len(calls) == 2  # one per layer
    model.set_attn_implementation("eager")
    assert model.config._attn_implementation == "eager"
    explicit = model(ids, attention_mask=mask).last_hidden_state
    assert len(calls) == 2  # no fused call under eager
    torch.testing.assert_close(explicit, fused, atol=1e-5, rtol=1e-5)
    eager = PEBertForMaskedLM(make_config("rope", attn_implementation="eager")).eval()
    assert eager.config._attn_implementation == "eager"
    eager(ids, attention_mask=mask)
    assert len(calls) == 2


@pytest.mark.parametrize("name", ["flash_attention_2", "flex_attention", "fast"])
def test_unsupported_attn_implementation_is_refused(name, make_config):
    with pytest.raises(ValueError, match="valid: sdpa, eager"):
        PEBertModel(make_config("alibi", attn_implementation=name))


# ----------------------------------------------------------------------------- inputs and outputs


@pytest.mark.parametrize("variant", KINDS)
def test_inputs_embeds_equal_input_ids(variant, make_config):
    model = PEBertForMaskedLM(make_config(variant)).eval()
    ids, mask = batch()
    embeds = model.get_input_embeddings()(ids)
    torch.testing.assert_close(model(inputs_embeds=embeds, attention_mask=mask).logits,
                               model(ids, attention_mask=mask).logits, rtol=0, atol=0)
    with pytest.raises(ValueError, match="exactly one of input_ids and inputs_embeds"):
        model(ids, inputs_embeds=embeds)
    with pytest.raises(ValueError, match="exactly one of input_ids and inputs_embeds"):
        model(attention_mask=mask)


def test_return_dict_false_returns_tuples(make_config):
    ids, mask = batch()
    mlm = PEBertForMaskedLM(make_config("alibi")).eval()
    labels = torch.full_like(ids, -100)
    labels[0, 2] = ids[0, 2]
    out = mlm(ids, attention_mask=mask, labels=labels)
    as_tuple = mlm(ids, attention_mask=mask, labels=labels, return_dict=False)
    assert isinstance(out, MaskedLMOutput) and type(as_tuple) is tuple and len(as_tuple) == 2
    assert torch.equal(as_tuple[0], out.loss) and torch.equal(as_tuple[1], out.logits)
    clf = PEBertForSequenceClassification(make_config("rope", num_labels=3, return_dict=False)).eval()
    (logits,) = clf(ids, attention_mask=mask)  # the config's return_dict is the default
    assert logits.shape == (2, 3)
    assert clf(ids, attention_mask=mask, return_dict=True).logits.shape == (2, 3)
    qa = PEBertForQuestionAnswering(make_config("t5-bias")).eval()
    start, end = qa(ids, attention_mask=mask, return_dict=False)
    assert start.shape == end.shape == (2, 10)
    hidden, pooled = PEBertModel(make_config("ape-learned")).eval()(ids, return_dict=False)
    assert hidden.shape == (2, 10, 32) and pooled.shape == (2, 32)


def test_config_output_flags_are_the_defaults(make_config):
    ids, mask = batch()
    model = PEBertForSequenceClassification(make_config("alibi", output_attentions=True, output_hidden_states=True,
                                                        num_labels=2)).eval()
    out = model(ids, attention_mask=mask)
    assert len(out.attentions) == 2 and out.attentions[0].shape == (2, 4, 10, 10)
    torch.testing.assert_close(out.attentions[0].sum(-1), torch.ones(2, 4, 10))
    assert len(out.hidden_states) == 3
    quiet = model(ids, attention_mask=mask, output_attentions=False, output_hidden_states=False)
    assert quiet.attentions is None and quiet.hidden_states is None
    torch.testing.assert_close(quiet.logits, out.logits, atol=1e-5, rtol=1e-5)


# ----------------------------------------------------------------------------- loading without pe_lib


def test_saved_folder_has_a_model_card_and_needs_pe_lib(make_config, tmp_path):
    PEBertForMaskedLM(make_config("rope")).save_pretrained(tmp_path)
    card = (tmp_path / "README.md").read_text()
    assert "`rope`" in card and "import pe_lib" in card
    script = "import sys; from transformers import AutoConfig; AutoConfig.from_pretrained(sys.argv[1])"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    plain = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, env=env)
    # transformers has no hook for an unknown model_type: its own message, which the card explains
    assert plain.returncode != 0 and "model type `pe-bert`" in plain.stderr
    imported = subprocess.run([sys.executable, "-c", "import pe_lib; " + script, str(tmp_path)], capture_output=True,
                              text=True, env=env)
    assert imported.returncode == 0, imported.stderr
    (tmp_path / "README.md").write_text("mine")
    PEBertForMaskedLM(make_config("rope")).save_pretrained(tmp_path)
    assert (tmp_path / "README.md").read_text() == "mine"  # an existing card is kept


# ----------------------------------------------------------------------------- Trainer, dtypes, problem types, export

#: every variant, as the model tests of issue 37 run them
EVERY_VARIANT = all_variants() + ["rpe-learned+untie-cls", "rpe-sin+untie-cls", "alibi+untie-cls",
                                  "t5-bias+untie-cls", "ape-learned+rpe-sin-learned+untie-cls"]


def test_trainer_predict_aligns_mlm_predictions_with_label_ids(make_config, tmp_path):
    """``Trainer.predict`` with run_mlm.py's ``preprocess_logits_for_metrics`` / ``compute_metrics``:
    predictions (N, n) against label_ids (N, n), a partial last batch included."""
    from transformers import Trainer, TrainingArguments

    model = PEBertForMaskedLM(make_config("ape-learned+rpe-learned")).eval()
    ids = torch.randint(5, 64, (5, 10))  # 5 rows, batches of 2: the last one is partial
    labels = torch.where(torch.rand(ids.shape) < 0.3, ids, -100)  # (5, 10)
    labels[:, 0] = ids[:, 0]
    rows = [{"input_ids": i, "attention_mask": torch.ones(10, dtype=torch.long), "labels": l} for i, l in zip(ids, labels)]

    def accuracy(prediction):  # run_mlm.py's compute_metrics
        predictions, label_ids = prediction.predictions, prediction.label_ids
        keep = label_ids != -100
        return {"accuracy": float((predictions[keep] == label_ids[keep]).mean())}

    args = TrainingArguments(output_dir=str(tmp_path), per_device_eval_batch_size=2, report_to=[], use_cpu=True)
    trainer = Trainer(model=model, args=args, compute_metrics=accuracy,
                      preprocess_logits_for_metrics=lambda logits, labels: logits.argmax(-1))
    result = trainer.predict(rows)
    assert result.predictions.shape == result.label_ids.shape == (5, 10)
    with torch.no_grad():
        expected = model(ids).logits.argmax(-1)  # (5, 10)
    assert (result.predictions == expected.numpy()).all()
    keep = labels != -100
    assert result.metrics["test_accuracy"] == pytest.approx(float((expected[keep] == labels[keep]).float().mean()))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("variant", EVERY_VARIANT)
def test_every_variant_runs_in_half_precision(variant, dtype, make_config, tmp_path):
    """``model.to(dtype)`` and ``from_pretrained(..., dtype=dtype)``: logits in that dtype, a finite
    loss, and close to fp32's."""
    model = PEBertForMaskedLM(make_config(variant)).eval()
    ids, mask = batch()
    labels = torch.where(torch.rand(ids.shape) < 0.3, ids, -100)
    labels[0, 1] = ids[0, 1]
    with torch.no_grad():
        full = model(ids, attention_mask=mask).logits  # (B, n, V)
    model.save_pretrained(tmp_path)
    loaded = AutoModelForMaskedLM.from_pretrained(tmp_path, dtype=dtype).eval()
    for half in (copy.deepcopy(model).to(dtype), loaded):
        assert half.dtype == dtype
        with torch.no_grad():
            out = half(ids, attention_mask=mask, labels=labels)
        assert out.logits.dtype == dtype and torch.isfinite(out.loss)
        torch.testing.assert_close(out.logits.float(), full, atol=0.1, rtol=0.05)


@pytest.mark.parametrize("problem_type, num_labels, labels", [
    ("multi_label_classification", 3, torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]])),
    ("regression", 2, torch.tensor([[0.5, -1.0], [2.0, 0.25]])),
    ("regression", 1, torch.tensor([0.5, -1.0])),
    ("single_label_classification", 3, torch.tensor([0, 2])),
    (None, 3, torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])),  # float targets: chosen as multi-label, as HF does
    (None, 3, torch.tensor([2, 1])),
    (None, 1, torch.tensor([0.5, -1.0])),
])
def test_problem_types_give_hf_berts_loss(problem_type, num_labels, labels, make_config):
    """The loss of HF's ``BertForSequenceClassification`` on the same logits, and the same
    ``problem_type`` recorded in the config when it was unset."""
    from transformers import BertConfig, BertForSequenceClassification

    ids, mask = batch()
    fields = dict(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
                  num_labels=num_labels, problem_type=problem_type)
    hf = BertForSequenceClassification(BertConfig(**fields)).eval()
    expected = hf(ids, attention_mask=mask, labels=labels)
    ours = PEBertForSequenceClassification(make_config("rpe-sin", num_labels=num_labels, problem_type=problem_type))
    out = ours.eval()(ids, attention_mask=mask, labels=labels)
    assert out.logits.shape == (2, num_labels) and out.loss.ndim == 0
    assert ours.config.problem_type == hf.config.problem_type
    torch.testing.assert_close(ours.loss(expected.logits, labels), expected.loss)
    out.loss.backward()


@pytest.mark.parametrize("variant", EVERY_VARIANT)
def test_export_with_an_attention_mask_matches_eager(variant, make_config):
    """``torch.export`` of the encoder with a padding mask (no data-dependent branch left), and the
    exported program equals eager."""
    model = PEBertModel(make_config(variant, num_hidden_layers=1)).eval()
    ids, mask = batch()
    program = torch.export.export(model, (ids,), {"attention_mask": mask})
    exported = program.module()
    with torch.no_grad():
        for m in (mask, torch.ones_like(mask)):  # padded, and unpadded (eager then drops the mask)
            torch.testing.assert_close(exported(ids, attention_mask=m).last_hidden_state,
                                       model(ids, attention_mask=m).last_hidden_state)


def test_compile_has_no_graph_break(make_config):
    """An absolute table, a static bias and a padding mask: one graph under ``torch.compile``."""
    model = PEBertForMaskedLM(make_config("ape-learned+t5-bias")).eval()
    ids, mask = batch()
    compiled = torch.compile(model, backend="eager", fullgraph=True)  # fullgraph: a graph break is an error
    with torch.no_grad():
        torch.testing.assert_close(compiled(ids, attention_mask=mask).logits, model(ids, attention_mask=mask).logits)
