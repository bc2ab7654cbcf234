# A small device bundle (the CLI and the named GPU test binaries, already built in release):
# `bash dev/mini_bundle.sh target/gpu-X gpu_wgmma gpu_epilogue`. `cargo xtask gpu-bundle`
# builds and packs every test binary; this packs what a restricted run needs (4 MiB, not 13).
set -e
B=$1; shift
rm -rf $B && mkdir -p $B/stage/tests
cp target/release/convrs $B/stage/
for t in "$@"; do
  f=$(ls -t target/release/deps/$t-* | grep -v '\.d$' | head -1)
  cp $f $B/stage/tests/$t
done
strip $B/stage/convrs $B/stage/tests/*
(cd $B && XZ_OPT=-9 tar -C stage -cJf payload.tar.xz . && rm -rf stage)
cp xtask/src/run-gpu.sh $B/
git describe --always --dirty --abbrev=12 > $B/commit.txt
ls -la $B; cat $B/commit.txt
