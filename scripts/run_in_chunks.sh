#!/usr/bin/env bash
# Run a long profile in one chunk of at most SECONDS, committing the artifacts it finished every
# 10 minutes and at the end, so that no hour of computation is lost when a session stops.
#   scripts/run_in_chunks.sh PROFILE SECONDS [--tail] [pe-book run options...]
# The next chunk resumes where this one stopped (found artifacts are read, unfinished pretraining
# runs resume from their checkpoints in the work folder, when it is still there).
#
# --stop-after: no model is started whose pretraining and fine-tunings would not finish in the chunk
# (the work folder, where a run keeps its checkpoints and weights, may not outlive a session);
# timeout is the hard stop. --tail: when that rule ends the run with more than 5 minutes left, the
# rest of the chunk starts the next model anyway. If the work folder survives the session, the next
# chunk resumes it from its last checkpoint; if not, the tail cost only time the machine would have
# idled. A tail cut by the chunk's end is not an error.
set -uo pipefail
cd "$(dirname "$0")/.."
profile=${1:?usage: scripts/run_in_chunks.sh PROFILE SECONDS [--tail] [options]}; seconds=${2:?seconds}; shift 2
with_tail=0
if [[ ${1:-} == --tail ]]; then with_tail=1; shift; fi
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
end=$(( $(date +%s) + seconds ))

# commit: the artifacts written so far, in the profile's folder of results/ (its name, unless the
# profile keeps the folder it was computed in under another name: Profile.folder). Only finished
# ones: never a hidden path, such as a writer's temporary (.NAME.*.part, .NAME.old-PID) or the lock.
commit() {
    git add -A -- results ':(exclude,glob)results/**/.*' ':(exclude,glob)results/**/.*/**' 2>/dev/null \
        || return 0
    git diff --cached --quiet -- results && return 0
    local folder n
    folder=$(git diff --cached --name-only -- results | cut -d/ -f2 | sort -u | paste -sd, -)
    n=$(git ls-files "results/${folder%%,*}" | grep -c '/artifact.json$')
    git commit -q -m "results/$folder: $n artifacts (chunk of pe-book run --profile $profile)" -- results \
        && echo "committed results/$folder ($n artifacts)"
}

# run_until ARGS...: pe-book run ARGS until the chunk's end, committing every 10 minutes.
run_until() {
    timeout --signal=INT --kill-after=60 "$(( end - $(date +%s) ))" .venv/bin/pe-book run --profile "$profile" \
        --no-progress "$@" &
    local job=$! poll=${CHUNK_POLL_SECONDS:-10}
    while kill -0 "$job" 2>/dev/null; do
        for _ in $(seq $(( 600 / poll ))); do sleep "$poll"; kill -0 "$job" 2>/dev/null || break; done
        commit
    done
    wait "$job"
}

run_until --stop-after "$seconds" "$@"; status=$?
left=$(( end - $(date +%s) ))
if (( with_tail && status == 0 && left > 300 )); then
    echo "the stop rule ended the run with ${left} s left: the tail starts the next model anyway"
    run_until "$@" --stop-after 100000000; tail_status=$?
    (( tail_status == 0 || tail_status == 124 )) || status=$tail_status
fi
commit
echo "chunk of $profile ended with status $status"
exit $status
