#!/usr/bin/env bash
# Runs one build or test phase and, when ROTA_PHASE_LOG names a file, appends its wall time to it.
# Usage: tools/ci/timed.sh PHASE COMMAND [ARG...]; exits with the command's status.
phase=$1
shift
start=$(date +%s.%N)
"$@"
status=$?
if [ -n "${ROTA_PHASE_LOG:-}" ]; then
  end=$(date +%s.%N)
  awk -v p="$phase" -v a="$start" -v b="$end" -v s="$status" \
    'BEGIN { printf "%s\t%.1f\t%s\n", p, b - a, s }' >>"$ROTA_PHASE_LOG"
fi
exit $status
