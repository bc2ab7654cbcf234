# Dev, on the GPU machine: split-K (wgmma_ws_tma_splitk) on SHAPES with every forced (tile width, split)
# (CONVRS_SPLIT_K), beside the cost model's own pick and step 7's, fp16, graph-timed. One line each.
set -u
b=$(mktemp -d); tar -C $b -xJf target/gpu-bundle/payload.tar.xz
t() { grep -E '^time' | awk '{print $2}'; }
while read -r s; do
  [ -z "$s" ] && continue
  line="$s | step7 $($b/convrs run --dtype fp16 --algo wgmma_ws_tma_persistent --shape $s --runs 20 2>/dev/null | t) | model $($b/convrs run --dtype fp16 --algo wgmma_ws_tma_splitk --shape $s --runs 20 2>/dev/null | grep -E '^time|grid' | sed -E 's/.*: (wgmma[^ ]*) grid \(([0-9]+), 1, ([0-9]+)\).*/\1 z\3/; s/^time *//; s/ ms.*//' | tr '\n' ' ')"
  for bn in 32 64 128; do for z in 2 3 4 6 8; do
    v=$(CONVRS_SPLIT_K=$bn,$z $b/convrs run --dtype fp16 --algo wgmma_ws_tma_splitk --shape $s --runs 20 2>/dev/null | t)
    [ -n "$v" ] && line="$line | $bn,$z $v"
  done; done
  echo "$line"
done <<< "${SHAPES:-16,2048,7,7,512,1,1
8,2048,7,7,512,1,1
8,64,56,56,256,1,1
16,832,7,7,256,1,1
8,512,7,7,2048,1,1
16,256,14,14,1024,1,1
8,1024,14,14,256,1,1
16,512,7,7,512,3,3 --pad 1
8,256,14,14,1024,1,1
16,128,28,28,512,1,1
16,512,28,28,128,1,1
8,256,7,7,512,3,3 --pad 1
16,512,7,7,2048,1,1
16,1024,14,14,256,1,1}" | tee $OUT/splits.txt
