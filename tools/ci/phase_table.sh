#!/usr/bin/env bash
# Prints CI's phase table (the times tools/ci/timed.sh logged), the CPU and the compiler cache's
# hits, and a warning line when the whole run passes its 40-minute budget.
# Usage: tools/ci/phase_table.sh PHASE_LOG TOTAL_SECONDS
log=$1
total=$2
budget=${ROTA_CI_BUDGET_SECONDS:-2400}
cpu=$(LC_ALL=C lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
isa=$(grep -m1 -o -w -E 'amx_tile|avx512f|avx2' /proc/cpuinfo 2>/dev/null | sort -u | tr '\n' ' ')
echo
echo "== CI phases on ${cpu:-an unknown CPU} ($(nproc) cores; ${isa:-no AVX2})"
if [ -s "$log" ]; then
  awk -F'\t' '{ printf "  %-24s %8.1f s %6.1f min%s\n", $1, $2, $2 / 60, ($3 == 0 ? "" : "  (exit " $3 ")") }' "$log"
fi
awk -v t="$total" 'BEGIN { printf "  %-24s %8.1f s %6.1f min\n", "whole run", t, t / 60 }'
if command -v ccache >/dev/null; then
  ccache --print-stats 2>/dev/null | awk -F'\t' '
    $1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { hits += $2 }
    $1 == "cache_miss" { misses += $2 }
    END { if (hits + misses > 0) printf "  compiler cache: %d hits, %d misses (%.0f %% hits)\n", hits, misses, 100 * hits / (hits + misses) }'
fi
if [ "$total" -gt "$budget" ]; then
  echo "WARNING: CI took $((total / 60)) min, past its budget of $((budget / 60)) min (docs/testing.md \"CI's budget\")"
fi
