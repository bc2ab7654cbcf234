#!/usr/bin/env bash
# Builds what the GPU machine runs of convrs-candle into DEST (default target/candle-gpu): the
# test binary `layers`; the examples `conv_transpose`, `conv1d_depthwise` and `vae_decoder`;
# the example `resnet50` twice (candle's convolution by im2col + cuBLAS, and by cuDNN:
# `resnet50-candle-cudnn`) and PyTorch's side of it. Needs the toolkit that toolkit.sh makes
# (it is run here). `cargo xtask gpu-bundle --candle` calls this.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dest="${1:-$here/../target/candle-gpu}"
eval "$(bash "$here/toolkit.sh")"
cd "$here"
mkdir -p "$dest"
json=$(cargo test --release --no-run --message-format=json --test layers)
exe=$(printf '%s\n' "$json" | grep '"reason":"compiler-artifact"' | grep -o '"executable":"[^"]*"' | tail -1 | cut -d'"' -f4)
cp "$exe" "$dest/layers"
cargo build --release --example resnet50 --example conv_transpose --example conv1d_depthwise --example vae_decoder
cp ../target/candle/release/examples/resnet50 "$dest/resnet50"
cp ../target/candle/release/examples/{conv_transpose,conv1d_depthwise,vae_decoder} "$dest/"
cargo build --release --example resnet50 --features candle-cudnn
cp ../target/candle/release/examples/resnet50 "$dest/resnet50-candle-cudnn"
cp examples/resnet50_torch.py "$dest/"
echo "convrs-candle GPU binaries in $dest"
