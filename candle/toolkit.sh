#!/usr/bin/env bash
# Makes the CUDA 13 build environment candle's CUDA backend needs, on a machine with no CUDA
# toolkit and no GPU, in $CONVRS_CANDLE_TOOLKIT (default: target/cuda-toolkit at the repository
# root), and prints the `export` lines to use it:
#   eval "$(bash candle/toolkit.sh)"
# - nvcc, its headers, CCCL and cudart from NVIDIA's pip wheels (candle-kernels compiles its
#   kernels to PTX and links a small static library with them; about 300 MB, seconds to fetch);
# - for the libraries cudarc links (libcuda, libcudnn, cuBLAS, cuBLASLt, cuRAND, NVRTC): stub
#   shared objects that carry the real sonames and every symbol cudarc's bindings name, so the
#   link succeeds here and the loader binds the real libraries on the GPU machine. Every stub
#   function returns 999 (CUDA_ERROR_UNKNOWN; an error status in each library): with
#   LD_LIBRARY_PATH=$CONVRS_CANDLE_STUBS a test binary starts on a machine with no driver,
#   finds no device and runs its CPU tests. Never put the stubs on the GPU machine's path.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${CONVRS_CANDLE_TOOLKIT:-$root/target/cuda-toolkit}"
py="${PYTHON:-python3}"
site="$dest/site"
if [ ! -x "$site/nvidia/cu13/bin/nvcc" ]; then
  "$py" -m pip install --quiet --disable-pip-version-check --target "$site" \
    nvidia-cuda-nvcc==13.0.88 "nvidia-cuda-runtime==13.0.*" "nvidia-nvvm==13.0.*" \
    "nvidia-cuda-crt==13.0.*" "nvidia-cuda-cccl==13.0.*" >&2
fi
cu="$site/nvidia/cu13"
mkdir -p "$dest/lib64"
# The linker looks for the unversioned names.
ln -sf "$cu/lib/libcudart.so.13" "$dest/lib64/libcudart.so"
cudarc="$(cd "$root/candle" && cargo metadata --format-version 1 2>/dev/null | "$py" -c '
import json, sys
m = json.load(sys.stdin)
print(next(p["manifest_path"] for p in m["packages"] if p["name"] == "cudarc").rsplit("/", 1)[0])')"
stub() { # stub NAME SONAME BINDINGS
  local c="$dest/stub-$1.c"
  grep -o '^pub unsafe fn [A-Za-z0-9_]*' "$cudarc/src/$3/sys/mod.rs" | awk '{print "int " $4 "(void) { return 999; }"}' | sort -u > "$c"
  gcc -shared -fPIC -o "$dest/lib64/lib$1.so" -Wl,-soname,"$2" "$c"
  ln -sf "lib$1.so" "$dest/lib64/$2"
}
stub cuda libcuda.so.1 driver
stub cudnn libcudnn.so.9 cudnn
stub cublas libcublas.so.13 cublas
stub cublasLt libcublasLt.so.13 cublaslt
stub curand libcurand.so.10 curand
stub nvrtc libnvrtc.so.13 nvrtc
cat <<EOT
export CUDA_PATH="$dest" CUDA_ROOT="$dest" CUDA_HOME="$cu" NVCC="$cu/bin/nvcc"
export PATH="$cu/bin:\$PATH" CUDA_COMPUTE_CAP=90 LIBRARY_PATH="$dest/lib64\${LIBRARY_PATH:+:\$LIBRARY_PATH}"
export CONVRS_CANDLE_STUBS="$dest/lib64:$cu/lib"
EOT
