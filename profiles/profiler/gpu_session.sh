#!/usr/bin/env bash
# One device session (issue 25): profile Llama-3-8B and its drafter qwama-0.5b on the GPU with the
# engine-grade kernels, then `--check` whole forwards against that profile. Each part is guarded (a failing
# part does not stop the next), bounded by its own timeout, and logs to $OUT/log.txt as it goes.
#
#   profiles/profiler/gpu_session.sh cuda     # on the GPU machine ($OUT given there)
#   profiles/profiler/gpu_session.sh cpu      # dry run here: the same commands and code paths on tiny
#                                             # shapes (--quick, engine kernel set on the CPU, no graphs)
# Timeouts (seconds) from the environment: PROFILE_S (default 300), CHECK_S (default 150), GAPS_S (default
# 120: profiles.profiler.graph_gaps, CUDA only), BUSY_AB_S (default 150: profiles.profiler.busy_ab, CUDA only).
# On CUDA the GPU's clocks, utilisation and power are logged every 200 ms to $OUT/prof/clocks.csv.
set -u -o pipefail
DEV=${1:-cuda}
OUT=${OUT:-/tmp/gpu_session_out}
mkdir -p "$OUT/prof"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
LOG=$OUT/log.txt
PY=${PY:-python3}
MODELS=llama-3-8b,qwama-0.5b
EXTRA=()
if [ "$DEV" = cpu ]; then
  MODELS=llama-68m,smollm2-135m
  EXTRA=(--quick --kernels engine)
fi
say() { echo "== $* ($(date -u +%H:%M:%S))" | tee -a "$LOG"; }

say "environment"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.limit,temperature.gpu,memory.used --format=csv 2>&1 | head -3
  $PY -c "import torch, sys; print(sys.version.split()[0], torch.__version__, torch.version.cuda, torch.cuda.is_available())"
  nproc; uptime; } 2>&1 | tee -a "$LOG"

if [ "$DEV" = cuda ]; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,utilization.gpu,power.draw,temperature.gpu \
    --format=csv,nounits -lms 200 > "$OUT/prof/clocks.csv" 2>&1 &
  CLOCKS_PID=$!
  say "small points timed with and without a spin before each replay"
  SECONDS=0
  timeout "${BUSY_AB_S:-150}" $PY -m profiles.profiler.busy_ab --out "$OUT/prof" 2>&1 | tee -a "$LOG"
  say "busy_ab exit ${PIPESTATUS[0]} after ${SECONDS} s"
fi

say "profile $MODELS on $DEV"
SECONDS=0
timeout "${PROFILE_S:-300}" $PY -m profiles.profiler --device "$DEV" --models "$MODELS" --no-collectives \
  --out "$OUT/prof" "${EXTRA[@]}" 2>&1 | tee -a "$LOG"
say "profile exit ${PIPESTATUS[0]} after ${SECONDS} s"

if [ -f "$OUT/prof/ops.csv" ]; then
  say "check $MODELS on $DEV"
  SECONDS=0
  timeout "${CHECK_S:-150}" $PY -m profiles.profiler --check-only --device "$DEV" --models "$MODELS" \
    --out "$OUT/prof" --check-out "$OUT/prof/check.json" "${EXTRA[@]}" 2>&1 | tee -a "$LOG"
  say "check exit ${PIPESTATUS[0]} after ${SECONDS} s"
else
  say "no profile written: check skipped"
fi
if [ "$DEV" = cuda ]; then
  say "idle time between a CUDA graph's kernels"
  SECONDS=0
  timeout "${GAPS_S:-120}" $PY -m profiles.profiler.graph_gaps --out "$OUT/prof" 2>&1 | tee -a "$LOG"
  say "graph_gaps exit ${PIPESTATUS[0]} after ${SECONDS} s"
fi
[ -n "${CLOCKS_PID:-}" ] && kill "$CLOCKS_PID" 2>/dev/null
ls -la "$OUT" "$OUT/prof" 2>&1 | tee -a "$LOG"
