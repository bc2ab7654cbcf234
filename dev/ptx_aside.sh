#!/usr/bin/env bash
# Dev (this machine): the device's `run` copies the working tree (64 MiB at most), and the
# tracked tree (64 MiB by the thirty-third session) plus a bundle is over. The PTX the crate
# ships (47 MiB) is not needed there (a bundle carries its own), so it steps out of the tree for
# a run and back after it:
#     bash dev/ptx_aside.sh out   # before `run`
#     bash dev/ptx_aside.sh back  # after; `status` says whether they are out
set -euo pipefail
cd "$(dirname "$0")/.."
keep=/tmp/ptx-aside
files="host/ptx/convrs_sm_80.ptx host/ptx/convrs_sm_90.ptx host/ptx/convrs_sm_90a.ptx"
case "${1:-status}" in
  out) mkdir -p $keep; for f in $files; do [ -f $f ] && mv $f $keep/; done; echo "out: $(ls $keep)";;
  back) for f in $files; do [ -f $keep/$(basename $f) ] && mv $keep/$(basename $f) $f; done; git status --short host/ptx; echo back;;
  status) for f in $files; do [ -f $f ] && echo "in: $f" || echo "OUT: $f (bash dev/ptx_aside.sh back)"; done;;
  *) echo "usage: $0 out|back|status" >&2; exit 2;;
esac
