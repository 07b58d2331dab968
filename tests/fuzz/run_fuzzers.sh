#!/usr/bin/env bash
# Runs every libFuzzer target of build/fuzz on its seed corpus (tests/fuzz/corpus/<target>), either for
# a number of inputs each (`runs N`: make test), for a time each (`seconds N`: make fuzz), or over the
# corpus alone (`corpus 0`: the seeds plus what earlier runs kept in build/fuzz/corpus; make test-asan), and prints
# one line per target: inputs executed, new corpus size, and the verdict. Any crash, leak, hang
# (-timeout), allocation sized by the input past -malloc_limit_mb, or wrong-type exception (the
# targets abort on those, tests/fuzz/fuzz_common.h) fails the run; the reproducer is left in
# build/fuzz/artifacts/. FUZZ_TIMEOUT (seconds per input, default 20) gives slow inputs more room on a busy machine.
set -uo pipefail
mode=${1:?usage: run_fuzzers.sh runs|seconds|corpus N [target...]}
amount=${2:?usage: run_fuzzers.sh runs|seconds|corpus N [target...]}
shift 2
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build/fuzz"
targets=("$@")
((${#targets[@]})) || targets=(fuzz_config fuzz_tokenizer fuzz_safetensors fuzz_checkpoint fuzz_rows)
case "$mode" in
  runs) limit=(-runs="$amount") ;;
  seconds) limit=(-max_total_time="$amount") ;;
  corpus) limit=(-runs=0) ;;
  *) echo "run_fuzzers.sh: mode must be runs, seconds or corpus, got '$mode'" >&2; exit 2 ;;
esac
mkdir -p "$build/artifacts" "$build/logs"
# LibTorch keeps process-lifetime allocations that LeakSanitizer would report; the torch-free
# targets keep leak checking on.
failed=0
total=0
printf '%-18s %10s %8s  %s\n' target inputs corpus verdict
for t in "${targets[@]}"; do
  leaks=1
  case "$t" in fuzz_safetensors|fuzz_checkpoint|fuzz_rows) leaks=0 ;; esac
  work="$build/corpus/$t"
  mkdir -p "$work"
  log="$build/logs/$t.log"
  # malloc_context_size=0: no stack trace per allocation (a third of the run time); a crash is re-run
  # from its artifact with full traces.
  ASAN_OPTIONS="detect_leaks=$leaks:allocator_may_return_null=1:malloc_context_size=0" UBSAN_OPTIONS=print_stacktrace=1 OMP_NUM_THREADS=1 \
    "$build/$t" "${limit[@]}" -timeout="${FUZZ_TIMEOUT:-20}" -rss_limit_mb=6144 -malloc_limit_mb=2048 -detect_leaks=$leaks \
    -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" "$work" "$root/tests/fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  inputs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  inputs=${inputs:-0}
  total=$((total + inputs))
  corpus=$(find "$work" -type f | wc -l)
  if [ $rc -eq 0 ]; then
    verdict=ok
  else
    verdict="FAILED (exit $rc; log $log)"
    failed=1
  fi
  printf '%-18s %10s %8s  %s\n' "$t" "$inputs" "$corpus" "$verdict"
  if [ $rc -ne 0 ]; then grep -E 'ERROR|wrong-type|not UTF-8|allocation|SUMMARY|Test unit written' "$log" | head -20; fi
done
echo "fuzz: $total inputs in all"
exit $failed
