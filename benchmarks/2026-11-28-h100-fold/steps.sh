# Sourced by call2.sh to call4.sh from the repository root, BUNDLE set: `step NAME VAR=value...`
# runs gpu.sh with those variables into $OUT/w/NAME, compresses its JSON and adds it to
# $OUT/all.tar (the device returns at most 8 files).
G=benchmarks/2026-11-28-h100-fold/gpu.sh
R=$OUT; mkdir -p $R/w
pack() { (cd $R/w && tar rf $R/all.tar --remove-files $(ls) 2>/dev/null); }
step() { local name=$1; shift; mkdir -p $R/w/$name; echo "=== $name"; OUT=$R/w/$name env "$@" bash $G 2>&1 | tee $R/w/$name.txt; (cd $R/w/$name && for f in *.json; do [ -e "$f" ] && xz "$f"; done); pack; }
