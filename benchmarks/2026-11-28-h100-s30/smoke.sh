# Sourced by call4.sh and call6.sh from the repository root, after the fold directory's
# steps.sh (R set), BUNDLE set: unpacks the bundle into $b, runs a known kernel first (time
# for the modules' JIT on a fresh machine: call 2's 30-second smoke runs timed out there), then
# step 17 once on 2,64,56,56->64; exits the call if that fails. P is step 17's name.
b=$(mktemp -d); tar -C $b -xJf $BUNDLE/payload.tar.xz
mkdir -p $R/w/smoke
P=wgmma_nchw_patch_persistent
CONVRS_REQUIRE_GPU=1 timeout 150 $b/convrs run --algo wgmma_ws_tma_persistent --dtype fp16 --layout nhwc --shape 2,64,56,56,64,3,3 --pad 1 --runs 5 > $R/w/smoke/warm.txt 2>&1; echo "warm-up rc=$?"
CONVRS_REQUIRE_GPU=1 timeout 30 $b/convrs run --algo $P --dtype fp16 --layout nchw --shape 2,64,56,56,64,3,3 --pad 1 --runs 5 > $R/w/smoke/run.txt 2>&1; rc=$?
echo "smoke rc=$rc"; grep -E "^time|^check|rror" $R/w/smoke/run.txt | head -3; pack
[ $rc = 0 ] || exit 1
