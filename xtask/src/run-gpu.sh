#!/usr/bin/env bash
# Runs on the GPU machine (made by `cargo xtask gpu-bundle`; no Rust toolchain needed there).
# Steps (env STEPS, default all): tests    - every test binary, GPU tests required to run;
#                                 sanitize - each kernel once under compute-sanitizer memcheck and racecheck;
#                                 bench    - `convrs bench` against cuDNN, table + JSON.
# Logs and results go to $OUT (the device tool's output folder) or ./gpu-out. Any failure fails the script.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
steps=${STEPS:-tests sanitize bench}
export CONVRS_REQUIRE_GPU=1
failed=()

"$here/convrs" info | tee "$out/info.txt" || failed+=("info")

if [[ " $steps " == *" tests "* ]]; then
  for t in "$here"/tests/*; do
    name=$(basename "$t")
    echo "=== test binary $name"
    "$t" ${TEST_FILTER:-} 2>&1 | tee "$out/test-$name.log" | grep -E "^test result|SKIPPED|FAILED|panicked|random problems checked" 
    [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=("tests:$name")
  done
fi

if [[ " $steps " == *" sanitize "* ]]; then
  san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  if [ -z "$san" ]; then
    echo "compute-sanitizer NOT FOUND: sanitizer step failed"; failed+=("sanitize:missing")
  else
    for algo in $("$here/convrs" list); do
      for tool in memcheck racecheck; do
        # Odd sizes, padding and stride so edge tiles and predication are exercised.
        "$san" --tool "$tool" --error-exitcode 99 "$here/convrs" run --algo "$algo" --shape 2,5,23,37,6,3,3 --pad 2 --stride 1 --runs 1 \
          >"$out/sanitize-$algo-$tool.log" 2>&1
        rc=$?
        summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out/sanitize-$algo-$tool.log" | tail -1)
        echo "sanitize $algo $tool: exit $rc ${summary}"
        [ "$rc" -eq 0 ] || failed+=("sanitize:$algo:$tool")
      done
    done
  fi
fi

if [[ " $steps " == *" bench "* ]]; then
  "$here/convrs" bench ${BENCH_ARGS:-} --json "$out/bench.json" | tee "$out/bench.md"
  [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=("bench")
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "run-gpu.sh: FAILED: ${failed[*]}"
  exit 1
fi
echo "run-gpu.sh: all steps passed ($steps)"
