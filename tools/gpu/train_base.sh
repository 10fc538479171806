#!/usr/bin/env bash
# The paper's base model, both directions at once on one GPU (two processes), for a fixed wall-clock
# budget; then the first direction's files are copied to $OUT, the folder whose files come back.
# The other direction's shards stay in the work folder for a second command, started at once:
#
#   OUT=... tools/gpu/train_base.sh [--minutes 8] [--batch-tokens 25000] [--preset base]
#       [--first de-en] [--data gpu-data] [--work gpu-out] [--compile de-en|en-de|both]
#       [-- gpu_run train flags]
#   OUT=... tools/gpu/train_base.sh --send en-de
#
# Or one direction with the whole GPU (one process, 90 % of its memory), its files sent at once;
# --init-from goes on from that direction's returned shards and manifest (a later session):
#
#   OUT=... tools/gpu/train_base.sh --directions de-en [--init-from gpu-init/de-en] [--minutes 8.5]
#
# --compile names the directions whose updates run under torch.compile (gpu_run train --compile):
# one of the two compares the compiled with the eager loop in the same command.
#
# $PYTHON (default python3) runs transformer_viz.training.gpu_run; tools/gpu/README.md has the plan.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python3}
MINUTES=8
BATCH=25000
PRESET=base
FIRST=de-en
DATA=gpu-data
WORK=gpu-out
SEND=""
DIRECTIONS=both
INIT=""
COMPILE=""
EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) MINUTES=$2; shift 2 ;;
    --batch-tokens) BATCH=$2; shift 2 ;;
    --preset) PRESET=$2; shift 2 ;;
    --first) FIRST=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --send) SEND=$2; shift 2 ;;
    --directions) DIRECTIONS=$2; shift 2 ;;
    --init-from) INIT=$2; shift 2 ;;
    --compile) COMPILE=$2; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) echo "unknown flag $1 (see the head of $0)" >&2; exit 2 ;;
  esac
done
: "${OUT:?set OUT to the folder whose files come back}"
mkdir -p "$OUT"
# What this copy of the working tree holds (about 17 MiB expected: tools/gpu/README.md).
echo "working tree received: $(du -sh --exclude=.git . | cut -f1)" \
  "($DATA: $(du -sh "$DATA" 2>/dev/null | cut -f1))" || true

send() {  # one direction's shards and manifest
  cp "$WORK/$1/$1".weights-*.safetensors "$WORK/$1/$1.manifest.json" "$OUT/"
}

if [ -n "$SEND" ]; then
  send "$SEND"
  ls -l "$OUT"
  exit 0
fi

ONE=()  # gpu_run train flags for the one-direction run, before EXTRA so that EXTRA overrides them
case "$DIRECTIONS" in
  both) RUN=("$FIRST") ;;
  de-en|en-de) RUN=("$DIRECTIONS"); FIRST=$DIRECTIONS; ONE=(--memory-fraction 0.9) ;;
  *) echo "--directions must be de-en, en-de or both" >&2; exit 2 ;;
esac
case "$FIRST" in
  de-en) OTHER=en-de ;;
  en-de) OTHER=de-en ;;
  *) echo "--first must be de-en or en-de" >&2; exit 2 ;;
esac
[ "$DIRECTIONS" = both ] && RUN+=("$OTHER")
case "$COMPILE" in
  ""|de-en|en-de|both) ;;
  *) echo "--compile must be de-en, en-de or both" >&2; exit 2 ;;
esac
if [ -n "$INIT" ]; then
  if [ "$DIRECTIONS" = both ]; then
    echo "--init-from holds one direction: name it with --directions" >&2
    exit 2
  fi
  ONE+=(--init-from "$INIT")
  ls -l "$INIT" || true
fi
if [ ! -f "$DATA/corpora.safetensors" ] && [ ! -f "$DATA/corpora.safetensors.xz" ]; then
  echo "$DATA/corpora.safetensors(.xz) is missing: run gpu_run prepare here first" >&2
  exit 2
fi
(cd "$DATA" && sha256sum corpora.safetensors* dev.json tokenizer/tokenizer.json) || true
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || true
echo "start $(date -u +%H:%M:%S): $PRESET, ${RUN[*]}, $MINUTES minutes, batches of $BATCH tokens" \
  "${COMPILE:+(compiled: $COMPILE)}"

PIDS=()
LOGS=()
for direction in "${RUN[@]}"; do
  mkdir -p "$WORK/$direction"
  COMPILED=()
  if [ "$COMPILE" = both ] || [ "$COMPILE" = "$direction" ]; then COMPILED=(--compile); fi
  "$PYTHON" -u -m transformer_viz.training.gpu_run train --data "$DATA" --out "$WORK/$direction" \
    --direction "$direction" --preset "$PRESET" --minutes "$MINUTES" --batch-tokens "$BATCH" \
    ${ONE[@]+"${ONE[@]}"} ${COMPILED[@]+"${COMPILED[@]}"} ${EXTRA[@]+"${EXTRA[@]}"} \
    > "$WORK/$direction/train.log" 2>&1 &
  PIDS+=($!)
  LOGS+=("$WORK/$direction/train.log")
done
tail -n +1 -F "${LOGS[@]}" 2>/dev/null &
TAIL=$!
STATUS=0
for pid in "${PIDS[@]}"; do
  wait "$pid" || STATUS=1
done
sleep 1
kill "$TAIL" 2>/dev/null || true
echo "end $(date -u +%H:%M:%S), status $STATUS"

# What comes back now: the first direction whole, the other's manifest (its scores, should its
# shards never come back) and the logs.
send "$FIRST" || STATUS=1
if [ "$DIRECTIONS" = both ]; then
  cp "$WORK/$OTHER/$OTHER.manifest.json" "$OUT/" 2>/dev/null || STATUS=1
fi
cat "${LOGS[@]}" > "$OUT/train.log"
ls -l "$OUT"
exit $STATUS
