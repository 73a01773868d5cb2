#!/usr/bin/env bash
# The screen's one accelerator run (issue 36): pretrain none, rpe-learned and ape-learned with the
# cpu-next recipe (8,000 steps of 32 x 64 tokens, fp32; exported by `screen.py export-pretraining`
# into .screen_carry), then fine-tune each on the grid below, all processes side by side on one GPU.
# Everything lands in $OUT (screen.jsonl, pretrain.txt, log.txt, the models). Budget: about 9 minutes.
set -u
D=.screen_carry; S=studies/task_screen/screen.py; L=$OUT/log.txt; R=$OUT/screen.jsonl
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
END=$((SECONDS + ${SCREEN_SECONDS:-540}))
nvidia-smi -L >> "$L" 2>&1; python3 -c "import torch, transformers; print(torch.__version__, transformers.__version__)" >> "$L" 2>&1
VARIANTS=${VARIANTS:-"rpe-learned none ape-learned"}
for v in $VARIANTS; do
  timeout "${PRETRAIN_SECONDS:-300}" python3 $S pretrain --data $D --variant "$v" --out-dir "/tmp/m/$v" >> "$L" 2>&1 &
done
wait
for v in $VARIANTS; do
  { echo "== $v"; cat "/tmp/m/$v/result.json"; grep validation "/tmp/m/$v/curve.jsonl" | tail -4; } >> "$OUT/pretrain.txt" 2>&1
  cp "/tmp/m/$v/model/model.safetensors" "$OUT/$v.safetensors" 2>/dev/null
done
run() {  # variant grid...
  local left=$((END - SECONDS)); [ "$left" -gt 10 ] || return
  timeout "$left" python3 $S run --data $D --out "$R" --model "$1=/tmp/m/$1/model" --grid "${@:2}" >> "$L" 2>&1
}
ALL=99999  # more than any task has: its whole training split
for v in $VARIANTS; do
  run "$v" paws:$ALL:3 paws:$ALL:8 paws:2000:3 &
  run "$v" cloze:$ALL:2 cloze:$ALL:5 cloze:4000:2 &
  run "$v" cloze_v2:$ALL:2 cloze_v2:$ALL:5 cloze_v2:4000:2 &
  run "$v" cloze_c40:$ALL:2 cloze_v2_c40:$ALL:2 cloze_c40:$ALL:5 &
  run "$v" cola:$ALL:10 sst2:10000:2 &
done
wait
echo "done at ${SECONDS}s" >> "$L"
