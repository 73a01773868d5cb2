#!/usr/bin/env bash
# Run a long profile in one chunk of at most SECONDS, committing the artifacts it finished every
# 10 minutes and at the end, so that no hour of computation is lost when a session stops.
#   scripts/run_in_chunks.sh PROFILE SECONDS [pe-lib run options...]
# The next chunk resumes where this one stopped (found artifacts are read, unfinished pretraining
# runs resume from their checkpoints in the work folder, when it is still there).
set -uo pipefail
cd "$(dirname "$0")/.."
profile=${1:?usage: scripts/run_in_chunks.sh PROFILE SECONDS [options]}; seconds=${2:?seconds}; shift 2
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1

commit() {
    git add -A "results/$profile" 2>/dev/null || return 0
    git diff --cached --quiet -- "results/$profile" && return 0
    local n; n=$(git ls-files "results/$profile" | grep -c '/artifact.json$')
    git commit -q -m "results/$profile: $n artifacts (chunk of pe-lib run --profile $profile)" -- "results/$profile" \
        && echo "committed results/$profile ($n artifacts)"
}

# --stop-after: no model is started whose pretraining and fine-tunings would not finish in the chunk
# (the work folder, where a run keeps its checkpoints and weights, does not outlive a session);
# timeout is the hard stop.
timeout --signal=INT --kill-after=60 "$seconds" .venv/bin/pe-lib run --profile "$profile" --no-progress \
    --stop-after "$seconds" "$@" &
job=$!
while kill -0 "$job" 2>/dev/null; do
    for _ in $(seq 60); do sleep 10; kill -0 "$job" 2>/dev/null || break; done
    commit
done
wait "$job"; status=$?
commit
echo "chunk of $profile ended with status $status"
exit $status
