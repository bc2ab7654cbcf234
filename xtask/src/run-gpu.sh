#!/usr/bin/env bash
# Runs on the GPU machine (made by `cargo xtask gpu-bundle`; no Rust toolchain needed there).
# Steps (env STEPS, default all): tests    - every test binary, GPU tests required to run;
#                                 sanitize - each kernel (or SANITIZE_ALGOS) on 8 shapes under compute-sanitizer
#                                            memcheck, racecheck and synccheck (SANITIZE_TOOLS), both output types;
#                                 bench    - `convrs bench` (BENCH_SUITES, default "seed deepbench") against
#                                            cuDNN (graph + legacy API) and PyTorch: tables, JSON, SVG per suite;
#                                 examples - the crate's examples (quickstart, resnet_block, explain);
#                                 candle   - where the bundle has it (gpu-bundle --candle): convrs-candle's
#                                            GPU tests, its ResNet-50 example (candle's convolution, by
#                                            cuBLAS and by cuDNN, against convrs's; PyTorch eager beside)
#                                            its transposed and depthwise 1-D convolution examples and the
#                                            Stable Diffusion VAE decoder.
# One device command may run 10 minutes: run the steps in separate calls (STEPS="tests sanitize",
# then STEPS=bench BENCH_SUITES=seed, then BENCH_SUITES=deepbench BENCH_DTYPES=fp32 (and fp16,
# bf16 in their own calls), then STEPS=examples).
# The binaries travel compressed (payload.tar.xz: the embedded PTX repeats in every binary) and
# are unpacked into a temporary folder first.
# cuDNN: the newest on the machine is loaded: PyTorch's (site-packages/nvidia/cudnn/lib) when it is
# newer than the system's, through LD_LIBRARY_PATH; `convrs info` and every table say which ran.
# Logs and results go to $OUT/results.tgz (the device tool's output folder) or ./gpu-out. Any failure fails the script.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$(mktemp -d)
if ! tar -C "$bin" -xJf "$here/payload.tar.xz" 2>/dev/null; then
  python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$here/payload.tar.xz" "$bin" \
    || { echo "run-gpu.sh: cannot unpack $here/payload.tar.xz"; exit 1; }
fi
# Logs and results are written to a scratch folder and packed into one results.tgz at the end:
# the device tool returns at most 8 files from $OUT.
dest=${OUT:-$PWD/gpu-out}
mkdir -p "$dest"
out=$(mktemp -d)
default_steps="tests sanitize bench examples"
[ -d "$bin/candle" ] && default_steps="$default_steps candle"
steps=${STEPS:-$default_steps}
export CONVRS_REQUIRE_GPU=1
# On a Hopper (compute capability 9.0) the wgmma tests must run, not skip.
if [ "$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)" = "9.0" ]; then
  export CONVRS_REQUIRE_HOPPER=1
fi
export CONVRS_COMMIT=$(cat "$here/commit.txt" 2>/dev/null || echo unknown)
failed=()

# The newest cuDNN: PyTorch's wheel ships libcudnn.so.9 (+ its engine libraries) beside torch.
# cudarc dlopens "libcudnn.so" first, which the system's copy would answer: a folder with that
# name linked to PyTorch's copy goes first on the path, its own folder second (engine libraries).
torch_cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
torch_ver=$(python3 -c "import torch; v = torch.backends.cudnn.version(); print(f'{v // 10000}.{v % 10000 // 100}.{v % 100}')" 2>/dev/null)
sys_lib=$(ldconfig -p 2>/dev/null | awk '/libcudnn\.so\.9 /{print $NF; exit}')
sys_ver=$( [ -n "$sys_lib" ] && readlink -f "$sys_lib" | grep -o '[0-9]*\.[0-9]*\.[0-9]*$')
echo "cuDNN on this machine: system ${sys_ver:-none} (${sys_lib:-}), PyTorch's ${torch_ver:-none} (${torch_cudnn:-})"
newest=$(printf '%s\n%s\n' "${sys_ver:-0}" "${torch_ver:-0}" | sort -V | tail -1)
if [ -n "$torch_cudnn" ] && [ -e "$torch_cudnn/libcudnn.so.9" ] && [ "$newest" = "${torch_ver:-0}" ]; then
  link_dir=$(mktemp -d)
  ln -s "$torch_cudnn/libcudnn.so.9" "$link_dir/libcudnn.so"
  export LD_LIBRARY_PATH="$link_dir:$torch_cudnn${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "cuDNN: using PyTorch's $torch_ver (the newest)"
else
  echo "cuDNN: using the system's ${sys_ver:-(none found)}"
fi

"$bin/convrs" info | tee "$out/info.txt" || failed+=("info")

if [[ " $steps " == *" tests "* ]]; then
  for t in "$bin"/tests/*; do
    name=$(basename "$t")
    echo "=== test binary $name" | tee -a "$out/tests.log"
    "$t" ${TEST_FILTER:-} 2>&1 | tee -a "$out/tests.log" | grep -E "^test result|SKIPPED|FAILED|panicked|random problems checked" 
    [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=("tests:$name")
  done
fi

if [[ " $steps " == *" sanitize "* ]]; then
  san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  if [ -z "$san" ]; then
    echo "compute-sanitizer NOT FOUND: sanitizer step failed"; failed+=("sanitize:missing")
  else
    # Odd sizes with padding (edge tiles, predication, 4-byte copies); a W%4==0 3x3 (16-byte copies);
    # the 6x6 speed-target geometry; stride 2 with a 7x7 filter; dilation 2 (generic filter path);
    # then shapes with N, C, K multiples of 16 (and ragged spatial sizes) for the tensor-core kernels;
    shapes=("2,5,23,37,6,3,3 --pad 2" "1,3,32,64,16,3,3 --pad 1" "1,6,70,64,6,6,6" "2,3,33,35,9,7,7 --pad 3 --stride 2"
            "1,4,29,31,20,3,3 --pad 2 --dilation 2" "16,32,15,13,48,3,3 --pad 1" "32,16,9,11,16,1,1 --stride 2"
            "16,48,12,10,48,5,5 --pad 2 --dilation 2"
            # 1x1 stride 1 on H*W multiples of 8, what the NCHW plane kernel takes: pixels ragged
            # against its copies and tiles, C and K ragged against its k-tile and row tile.
            "3,72,12,10,40,1,1" "20,40,8,9,264,1,1" "2,136,14,16,200,1,1"
            # Depthwise (groups = C): each compiled filter size on ragged images, stride 2,
            # dilation, the generic 9x9, and a multiplier of 2 with C not a multiple of 4.
            "2,32,23,37,32,3,3 --pad 1 --groups 32" "3,30,17,19,60,5,5 --pad 2 --stride 2 --groups 30"
            "2,48,14,13,48,7,7 --pad 3 --groups 48" "1,12,9,11,12,9,9 --pad 4 --groups 12"
            "2,16,20,21,16,3,3 --pad 2 --dilation 2 --groups 16" "4,64,8,9,64,3,3 --pad 1 --stride 2 --groups 64"
            # Grouped, 1 < G < C (the Hopper im2col kernels, in merged groups): ResNeXt's 4
            # channels a group on a ragged image, and 24 a group at stride 2 (merged to one).
            "2,128,23,21,128,3,3 --pad 1 --groups 32" "3,96,15,13,96,3,3 --pad 1 --stride 2 --groups 4")
    log="$out/sanitize.log"
    # Every kernel in every element type it reads (`convrs list`: name, family, types as
    # fp16/bf16); SANITIZE_ALGOS (space-separated NAME or NAME:TYPE) narrows the sweep to the
    # kernels a change touched, a bare NAME in each of its types.
    kinds=$("$bin/convrs" list | awk '{n = split($3, t, "/"); for (i = 1; i <= n; i++) print $1 ":" t[i]}')
    wanted=${SANITIZE_ALGOS:-$(echo "$kinds" | cut -d: -f1 | uniq)}
    for want in $wanted; do
      case "$want" in *:*) echo "$want" ;; *) echo "$kinds" | grep "^$want:" ;; esac
    done > "$out/sanitize-kinds.txt"
    [ -s "$out/sanitize-kinds.txt" ] || failed+=("sanitize:no-kernel-matches:${SANITIZE_ALGOS:-}")
    for kind in $(cat "$out/sanitize-kinds.txt"); do
      algo=${kind%%:*}
      dtype=${kind#*:}
      ran=0
      for i in "${!shapes[@]}"; do
        # SANITIZE_TOOLS narrows the tools (synccheck matters for the kernels with barriers
        # beyond __syncthreads: the Hopper kernels' mbarriers and named warpgroup syncs).
        for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
          echo "### $algo $dtype shape $i ${shapes[$i]} $tool" >>"$log"
          # shellcheck disable=SC2086
          # Odd shapes write the kernel's fp32 output (--f32-out), even ones its default (the input's type).
          out_flag=$([ $((i % 2)) -eq 1 ] && echo --f32-out)
          "$san" --tool "$tool" --error-exitcode 99 "$bin/convrs" run --algo "$algo" --dtype "$dtype" --shape ${shapes[$i]} --runs 1 --timing events $out_flag >>"$log" 2>&1
          rc=$?
          if [ "$rc" -eq 3 ]; then
            echo "sanitize $algo $dtype [${shapes[$i]}]: kernel does not take this shape (exit 3), skipped"
            break
          fi
          ran=$((ran + 1))
          summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|SYNCCHECK SUMMARY" "$log" | tail -1)
          echo "sanitize $algo $dtype [${shapes[$i]}] $tool: exit $rc ${summary}"
          [ "$rc" -eq 0 ] || failed+=("sanitize:$algo:$dtype:$i:$tool")
        done
      done
      # Every kernel must have been checked on several shapes, not skipped everywhere.
      [ "$ran" -ge 6 ] || failed+=("sanitize:$algo:$dtype:only-$ran-runs")
    done
  fi
fi

if [[ " $steps " == *" bench "* ]]; then
  for suite in ${BENCH_SUITES:-seed deepbench}; do
    # A long suite must fit one 10-minute command: fewer timed runs, a shorter engine search,
    # and one element type per command (BENCH_DTYPES, default all three in turn).
    case "$suite" in
      deepbench|resnet50|mobilenet) suite_args="--runs 20 --warmup 3 --search-seconds 1" ;;
      *) suite_args="" ;;
    esac
    for dtype in ${BENCH_DTYPES:-fp32 fp16 bf16}; do
      tag="$suite-$dtype"
      # BENCH_PART=I/N times part I of N of each suite (`convrs bench --part`).
      part_args=""
      if [ -n "${BENCH_PART:-}" ]; then
        part_args="--part $BENCH_PART"
        tag="$tag-part${BENCH_PART%/*}of${BENCH_PART#*/}"
      fi
      # shellcheck disable=SC2086
      "$bin/convrs" bench --suite "$suite" --dtype "$dtype" $suite_args $part_args ${BENCH_ARGS:-} \
        --json "$out/bench-$tag.json" --plot "$out/bench-$tag.svg" | tee "$out/bench-$tag.md"
      [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=("bench:$tag")
    done
  done
fi

if [[ " $steps " == *" examples "* ]]; then
  for ex in quickstart resnet_block explain; do
    echo "=== example $ex" | tee -a "$out/examples.log"
    "$bin/examples/$ex" 2>&1 | tee -a "$out/examples.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=("example:$ex")
  done
fi

if [[ " $steps " == *" candle "* ]]; then
  if [ ! -d "$bin/candle" ]; then
    echo "candle step: this bundle was made without --candle"; failed+=("candle:missing")
  else
    # candle links the CUDA 13 libraries: PyTorch's copies (cuBLAS, cuRAND, NVRTC, cudart, cuDNN).
    cu13=$(python3 -c "import nvidia.cu13, os; print(os.path.join(list(nvidia.cu13.__path__)[0], 'lib'))" 2>/dev/null)
    candle_libs="${torch_cudnn:+$torch_cudnn:}${cu13}"
    echo "candle: LD_LIBRARY_PATH adds $candle_libs" | tee "$out/candle.log"
    LD_LIBRARY_PATH="$candle_libs:${LD_LIBRARY_PATH:-}" "$bin/candle/layers" --test-threads 1 2>&1 | tee -a "$out/candle.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=("candle:tests")
    for ex in resnet50 resnet50-candle-cudnn; do
      LD_LIBRARY_PATH="$candle_libs:${LD_LIBRARY_PATH:-}" "$bin/candle/$ex" ${CANDLE_ARGS:-} --json "$out/candle-$ex.json" 2>&1 | tee "$out/candle-$ex.md"
      [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=("candle:$ex")
    done
    for ex in conv_transpose conv1d_depthwise vae_decoder; do
      LD_LIBRARY_PATH="$candle_libs:${LD_LIBRARY_PATH:-}" "$bin/candle/$ex" 2>&1 | tee "$out/candle-$ex.md"
      [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=("candle:$ex")
    done
    # shellcheck disable=SC2086
    python3 "$bin/candle/resnet50_torch.py" ${CANDLE_ARGS:-} --json "$out/candle-pytorch.json" 2>&1 | tee "$out/candle-pytorch.md"
    [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=("candle:pytorch")
  fi
fi

tar -czf "$dest/results.tgz" -C "$out" . && echo "results: $dest/results.tgz ($(ls "$out" | tr '\n' ' '))"

if [ ${#failed[@]} -gt 0 ]; then
  echo "run-gpu.sh: FAILED: ${failed[*]}"
  exit 1
fi
echo "run-gpu.sh: all steps passed ($steps)"
