#!/usr/bin/env bash
# Runs each fuzz target for FUZZ_SECONDS from its seed corpus (fuzz/corpus/<target>, plus the
# inputs earlier runs found, kept in <build>/fuzz-work/<target>); fails on any crash, leak,
# timeout or OOM. Usage: [FUZZ_JOBS=N] fuzz/run.sh BUILD_DIR SECONDS [TARGET...] (default: every
# target; N targets at a time, default 1).
set -uo pipefail
cd "$(dirname "$0")/.."
build=$1
seconds=$2
shift 2
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in fuzz/*_fuzzer.cpp; do targets+=("$(basename "$f" .cpp)"); done
fi

jobs=${FUZZ_JOBS:-1}

# Fuzzes one target; its summary line goes to $work/summary, the details to stdout.
fuzz_target() {
  local target=$1 work=$build/fuzz-work/$1 dict=() status runs rate line
  mkdir -p "$work/corpus" "$work/artifacts"
  [ -f "fuzz/$target.dict" ] && dict=("-dict=fuzz/$target.dict")
  # One worker per process; new inputs go to the work corpus, the seed corpus in the
  # repository is only read.
  "$build/fuzz/$target" "$work/corpus" "fuzz/corpus/$target" "${dict[@]}" \
    -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/" >"$work/log" 2>&1
  status=$?
  runs=$(awk '/^stat::number_of_executed_units:/ {n = $2} END {print n}' "$work/log")
  rate=$(awk '/^stat::average_exec_per_sec:/ {n = $2} END {print n}' "$work/log")
  {
    echo "== $target (${seconds}s)"
    if [ $status -ne 0 ]; then
      echo "   FAILED (exit $status): $(grep -m1 -E 'ERROR: |runtime error|==ERROR|deadly signal' "$work/log")"
      grep -E '^    #[0-9]+ .* in rota::|runtime error|Test unit written' "$work/log" | head -12
    fi
  }
  line=$(printf '%-28s %12s executions %8s/s  %s' "$target" "${runs:-?}" "${rate:-?}" \
           "$([ $status -eq 0 ] && echo ok || echo FAILED)")
  echo "   $line"
  echo "$line" >"$work/summary"
}

# FUZZ_JOBS targets at a time (CI: one per core; by hand on a shared machine, one).
for target in "${targets[@]}"; do
  rm -f "$build/fuzz-work/$target/summary"
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  fuzz_target "$target" &
done
wait

failed=()
summary=""
for target in "${targets[@]}"; do
  line=$(cat "$build/fuzz-work/$target/summary" 2>/dev/null || printf '%-28s did not finish' "$target")
  summary+="$line"$'\n'
  case $line in *" ok") ;; *) failed+=("$target") ;; esac
done
echo
echo "fuzzing summary (${seconds}s per target, $jobs at a time; logs in $build/fuzz-work/<target>/log):"
printf '%s' "$summary"
if [ ${#failed[@]} -ne 0 ]; then
  echo "failed: ${failed[*]} (crash inputs in $build/fuzz-work/<target>/artifacts/)"
  exit 1
fi
