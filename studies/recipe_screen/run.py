"""Recipe pilot: pretrain `none` and `ape-learned` with the SAME recipe, report val MLM loss,
unigram loss on the same masked validation tokens, APE P P^T indicators and neighbour cosines.
Own loop (reuses pe_lib's masking/batching/seeding) so that schedule, per-group lr and pre-LN can vary."""
import os
os.environ.setdefault("OMP_NUM_THREADS", "1")
import argparse, json, math, time
from pathlib import Path
import numpy as np
import torch
torch.set_num_threads(1)
from pe_book.experiments.profiles import get_profile
from pe_book.experiments.runner import Runner
from pe_lib.config import PEBertConfig
from pe_lib.model import Layer, PEBertForMaskedLM, quiet_transformers
from pe_lib.training.mlm import batch_rows, mask_tokens, step_seed
from pe_lib.training.optim import NO_DECAY, autocast, use_bf16
from pe_lib.properties import indicators

p = argparse.ArgumentParser()
p.add_argument("--name", required=True)
p.add_argument("--variants", default="none,ape-learned")
p.add_argument("--tokens", type=float, default=1e6)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--seq", type=int, default=128)
p.add_argument("--vocab", type=int, default=8192)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--warmup", type=float, default=0.1, help="fraction of steps (<1) or steps")
p.add_argument("--sched", default="linear", choices=["linear", "cosine", "const", "trapezoid"])
p.add_argument("--final_lr", type=float, default=0.0, help="final lr as fraction of peak")
p.add_argument("--pe_lr_mult", type=float, default=1.0)
p.add_argument("--emb_lr_mult", type=float, default=1.0)
p.add_argument("--wd", type=float, default=0.01)
p.add_argument("--hidden", type=int, default=128)
p.add_argument("--layers", type=int, default=4)
p.add_argument("--heads", type=int, default=2)
p.add_argument("--inter", type=int, default=0)
p.add_argument("--dropout", type=float, default=0.1)
p.add_argument("--init", type=float, default=0.02)
p.add_argument("--pe_init", type=float, default=None)
p.add_argument("--mask", type=float, default=0.15)
p.add_argument("--preln", action="store_true")
p.add_argument("--sin_scale", type=float, default=None)
p.add_argument("--beta2", type=float, default=0.999)
p.add_argument("--clip", type=float, default=1.0)
p.add_argument("--eval_tokens", type=int, default=65536)
p.add_argument("--evals", type=int, default=5)
p.add_argument("--save", action="store_true")
p.add_argument("--seed", type=int, default=0)
a = p.parse_args()

OUT = Path("/work/scratch/recipe/out") / a.name
OUT.mkdir(parents=True, exist_ok=True)

if a.preln:
    def preln_forward(self, x, mask, relative, output_attentions=False):
        """pre-LN: x + Attn(LN(x)); then + FFN(LN(h)). Embedding LN kept; MLM head has its own LN."""
        att, probs = self.attention(self.attention_norm(x), mask, relative, output_attentions)
        h = x + self.dropout(att)
        f = self.ffn_out(self.act(self.ffn_in(self.ffn_norm(h))))
        return h + self.dropout(f), probs
    Layer.forward = preln_forward

prof = get_profile("cpu-glue")  # its tokenizer and data (the recipe is the screen's own)
prof = prof.with_overrides(seq_len=a.seq, tokenizer={"kind": "wordpiece", "vocab_size": a.vocab}, data_source="packaged")
runner = Runner(prof, results="/work/scratch/recipe/results", work="/work/scratch/recipe/work", progress=False)
t0 = time.time()
data = runner.mlm_data()
tok = runner.tokenizer
print(f"data {data.train.shape} val {data.validation.shape} vocab {data.vocab_size} ({time.time()-t0:.0f}s)", flush=True)

# fixed validation set & masks; unigram baseline from training frequencies (add-0.5 smoothing)
n_val_rows = min(len(data.validation), a.eval_tokens // a.seq)
val_batches = []
EB = 64
for i in range(math.ceil(n_val_rows / EB)):
    ids = torch.as_tensor(data.validation[i * EB: min((i + 1) * EB, n_val_rows)], dtype=torch.long)
    inputs, labels = mask_tokens(ids, data, a.mask, torch.Generator().manual_seed(step_seed(0, i, 0, 2)))
    val_batches.append((inputs, labels))
counts = np.bincount(data.train.ravel(), minlength=data.vocab_size).astype(np.float64)
counts[list(data.special_ids)] = 0
logp = np.log((counts + 0.5) / (counts + 0.5).sum())
all_labels = torch.cat([l[l != -100] for _, l in val_batches]).numpy()
unigram = float(-logp[all_labels].mean())
print(f"unigram loss on the same masked validation tokens: {unigram:.3f} ({len(all_labels)} targets)", flush=True)

bf16 = use_bf16("auto", torch.device("cpu"))
steps = max(1, int(round(a.tokens / (a.batch * a.seq))))
warm = int(a.warmup * steps) if a.warmup < 1 else int(a.warmup)

def lr_factor(s):
    if s < warm:
        return (s + 1) / warm
    if a.sched == "const":
        return 1.0
    frac = (s - warm) / max(1, steps - warm)
    if a.sched == "linear":
        return 1 - (1 - a.final_lr) * frac
    if a.sched == "cosine":
        return a.final_lr + (1 - a.final_lr) * 0.5 * (1 + math.cos(math.pi * frac))
    if a.sched == "trapezoid":  # constant then linear decay over the last 20%
        return 1.0 if frac < 0.8 else 1 - (1 - a.final_lr) * (frac - 0.8) / 0.2

@torch.no_grad()
def evaluate(model):
    model.eval(); tot = cnt = 0
    for inputs, labels in val_batches:
        with autocast(torch.device("cpu"), bf16):
            loss = model(input_ids=inputs, labels=labels).loss
        n = int((labels != -100).sum()); tot += float(loss) * n; cnt += n
    model.train(); return tot / cnt

def pe_stats(model):
    ape = model.bert.embeddings.position
    if ape is None:
        return {}
    with torch.no_grad():
        P = ape.vectors(torch.arange(a.seq)).double()
    G = (P @ P.T).numpy()
    ind = indicators(G, window=8)
    Pn = torch.nn.functional.normalize(P, dim=1)
    cos = {}
    for d in (1, 2, 4, 8, 16, 32, 64):
        if d < a.seq:
            cos[d] = float((Pn[:-d] * Pn[d:]).sum(1).mean())
    # cosine after removing the mean position vector (the shared component)
    Pc = torch.nn.functional.normalize(P - P.mean(0), dim=1)
    cosc = {d: float((Pc[:-d] * Pc[d:]).sum(1).mean()) for d in (1, 4, 16, 64) if d < a.seq}
    return {"mono": ind["monotonicity"], "mono_local": ind["monotonicity_local"], "ti": ind["translation_invariance"],
            "cos": cos, "cos_centered": cosc, "pe_norm": float(P.norm(dim=1).mean())}

results = {"args": vars(a), "steps": steps, "unigram": unigram, "variants": {}}
for variant in a.variants.split(","):
    cfg = PEBertConfig(vocab_size=data.vocab_size, position_embedding=variant, pad_token_id=tok.pad_token_id,
                       hidden_size=a.hidden, num_hidden_layers=a.layers, num_attention_heads=a.heads,
                       intermediate_size=a.inter or 4 * a.hidden, max_position_embeddings=max(256, a.seq), rpe_max_distance=64,
                       hidden_dropout_prob=a.dropout, attention_probs_dropout_prob=a.dropout, initializer_range=a.init, ape_sin_scale=a.sin_scale)
    torch.manual_seed(a.seed)
    model = PEBertForMaskedLM(cfg).train()
    if a.pe_init is not None and model.bert.embeddings.position is not None:
        with torch.no_grad():
            model.bert.embeddings.position.weight.normal_(0, a.pe_init)
    groups = {"decay": [], "nodecay": [], "pe": [], "emb": []}
    for n, q in model.named_parameters():
        if "embeddings.position" in n:
            groups["pe"].append(q)
        elif "embeddings.word" in n or "embeddings.token_type" in n:
            groups["emb"].append(q)
        elif n.endswith(NO_DECAY) or q.ndim < 2:
            groups["nodecay"].append(q)
        else:
            groups["decay"].append(q)
    pg = [{"params": groups["decay"], "weight_decay": a.wd, "mult": 1.0},
          {"params": groups["nodecay"], "weight_decay": 0.0, "mult": 1.0},
          {"params": groups["pe"], "weight_decay": a.wd, "mult": a.pe_lr_mult},
          {"params": groups["emb"], "weight_decay": a.wd, "mult": a.emb_lr_mult}]
    pg = [g for g in pg if g["params"]]
    opt = torch.optim.AdamW(pg, lr=a.lr, betas=(0.9, a.beta2), eps=1e-6)
    curve = []
    eval_at = set(int(round(steps * k / a.evals)) for k in range(1, a.evals + 1))
    t_train = 0.0
    for s in range(steps):
        t1 = time.perf_counter()
        for g in opt.param_groups:
            g["lr"] = a.lr * g["mult"] * lr_factor(s)
        rows = batch_rows(len(data.train), a.batch, s, a.seed)
        ids = torch.as_tensor(data.train[rows], dtype=torch.long)
        inputs, labels = mask_tokens(ids, data, a.mask, torch.Generator().manual_seed(step_seed(a.seed, s, 0, 0)))
        torch.manual_seed(step_seed(a.seed, s, 0, 1))
        with autocast(torch.device("cpu"), bf16):
            loss = model(input_ids=inputs, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        opt.step(); opt.zero_grad(set_to_none=True)
        t_train += time.perf_counter() - t1
        if (s + 1) in eval_at:
            rec = {"step": s + 1, "tokens": (s + 1) * a.batch * a.seq, "train_loss": float(loss), "val": evaluate(model), **pe_stats(model)}
            curve.append(rec)
            print(variant, json.dumps(rec), flush=True)
    tps = steps * a.batch * a.seq / t_train
    results["variants"][variant] = {"curve": curve, "final": curve[-1], "tokens_per_s": tps, "train_s": t_train}
    print(f"== {variant} val {curve[-1]['val']:.3f} tok/s {tps:.0f}", flush=True)
    if a.save:
        with quiet_transformers():
            model.save_pretrained(OUT / f"model-{variant}")
(OUT / "result.json").write_text(json.dumps(results, indent=1))
print("RESULT", a.name, {v: round(r["final"]["val"], 3) for v, r in results["variants"].items()}, "unigram", round(unigram, 3))
