#!/usr/bin/env python3
"""GPU smoke test of the sm_90a wgmma conv kernels (wgmma_multistage_*), with no Rust on the machine.

    python3 hopper_smoke.py convrs_sm_90a.ptx

Needs an H100/H200 (compute capability 9.0: sm_90a PTX runs nowhere else), CuPy, PyTorch, numpy.
Loads the PTX with cupy.RawModule, checks every wgmma entry on a tiny problem, ~20 random ones and
the seed shape against torch's float64 conv2d on the same rounded inputs (relative L2 error < 1e-4,
no NaN: the output is filled with NaN first, so unwritten elements show), then times the seed shape
against cuDNN fp16 channels-last through torch.

A kernel fault (trap, illegal address) poisons the CUDA context, so the cases run in a child
process; when one dies the parent reports the case and starts a new child at the next case.

Kernel contract (kernels-gpu/src/tensor_core/hopper/multistage.rs, spec/src/hopper.rs):
  args   x (u64, NHWC fp16/bf16), w (u64, KRSC), y (u64, NHWK fp32), then 16 i32:
         n c h w k r s p q pad_h pad_w stride_h stride_w dil_h dil_w y_bits  (spec/src/args.rs order;
         y_bits = 32: the wgmma kernel writes fp32 only so far)
  launch 256 threads, 1-D grid ceil(N*P*Q / 128) * ceil(K / BN),
         dynamic shared memory STAGES * (128 + BN) * 128 + 1024 bytes; C % 8 == 0, K % 8 == 0.
"""
import os
import re
import sys
import time

from smoke_common import SEED, TINY, describe, out_size, pair, random_cases, supervise  # dev/ is the script's folder, first on sys.path

# name -> (BN, STAGES, dtype); keep in step with the Multistage rows of convrs_spec::hopper_configs!.
KERNELS = {
    "wgmma_multistage_128x256k64": (256, 4, "fp16"),
    "wgmma_multistage_128x128k64": (128, 5, "fp16"),
    "wgmma_multistage_bf16_128x256k64": (256, 4, "bf16"),
    "wgmma_multistage_bf16_128x128k64": (128, 5, "bf16"),
}
BM = 128
THREADS = 256
TOL = 1e-4



def smem_bytes(bn, stages):
    return stages * (BM + bn) * 128 + 1024


def all_cases():
    fixed = [
        TINY,
        (1, 64, 8, 8, 256, 1, 1, 0, 1, 1),     # one full 256-column tile, half the rows
        (2, 128, 16, 16, 256, 1, 1, 0, 1, 1),  # M = 512: whole tiles, 2 k-tiles
        (1, 72, 9, 9, 136, 3, 3, 1, 1, 1),     # C tail past 64 (zero-filled), K tail past 128
    ]
    return fixed + random_cases(20, 1234, 16, 16) + [SEED]


def diagnose(got, want, m_total, k_total):
    """A few wrong (m, k) with values, where in the reference a wrong value is found, and a
    map of wrong 8x8 blocks for small problems: enough to tell a fragment-map bug (values
    at permuted positions) from a descriptor/swizzle bug (values from wrong k)."""
    import numpy as np

    g = got.reshape(m_total, k_total)
    wv = want.reshape(m_total, k_total)
    scale = float(np.abs(wv).max()) or 1.0
    bad = ~(np.abs(g - wv) <= 1e-3 * scale)
    idx = np.argwhere(bad)
    nan = np.isnan(g)
    print(f"    {len(idx)} of {g.size} elements wrong (|err| > 1e-3 * max|ref| = {1e-3 * scale:.3g}), {int(nan.sum())} of them NaN (never written); first few finite ones, then NaN ones:")
    idx = np.concatenate([np.argwhere(bad & ~nan)[:6], np.argwhere(nan)[:2]])
    for m, kk in idx[:8]:
        line = f"      (m={m:5d}, k={kk:4d}) got {g[m, kk]: .6f} want {wv[m, kk]: .6f}"
        if np.isfinite(g[m, kk]) and g.size <= 1 << 16:
            hits = np.argwhere(np.abs(wv - g[m, kk]) <= 1e-5 * scale)
            if len(hits):
                line += "  = ref at " + ", ".join(f"(m={a}, k={b})" for a, b in hits[:3])
        print(line)
    if m_total <= 256 and k_total <= 512:
        rows = []
        for mb in range(-(-m_total // 8)):
            rows.append("".join("X" if bad[8 * mb:8 * mb + 8, 8 * kb:8 * kb + 8].any() else "." for kb in range(-(-k_total // 8))))
        print("    wrong 8x8 blocks (rows m/8, columns k/8):")
        for mb, row in enumerate(rows):
            print(f"      m {8 * mb:4d}: {row}")
    # Per position inside the 64-row warpgroup tile: which (row % 16, col % 8) fail.
    rm, rk = bad.nonzero()
    if len(rm):
        pat = np.zeros((16, 8), dtype=np.int64)
        np.add.at(pat, (rm % 16, rk % 8), 1)
        print("    wrong counts by (m % 16) x (k % 8):")
        for i in range(16):
            print("      " + " ".join(f"{v:5d}" for v in pat[i]))


# --------------------------------------------------------------------------------------------
# Child: runs cases start.. and prints one line per result.
# --------------------------------------------------------------------------------------------

def child(ptx, start):
    import numpy as np
    import cupy as cp
    import torch
    import torch.nn.functional as F

    funcs = {}
    try:
        mod = cp.RawModule(path=ptx)
        for name, (bn, stages, _) in KERNELS.items():
            f = mod.get_function(name)  # the driver JIT-compiles the module on first use
            f.max_dynamic_shared_size_bytes = smem_bytes(bn, stages)
            funcs[name] = f
    except Exception as e:
        print(f"FAIL module load (JIT of the PTX or the shared-memory attribute): {type(e).__name__}: {e}", flush=True)
        sys.exit(4)

    def launcher(name, x, wt, y, shape):
        """A no-argument function that launches `name` on these buffers (arguments built once)."""
        bn, stages, _ = KERNELS[name]
        n, c, h, w, k, r, s, p, q, ph, pw, sh, sw, dh, dw = shape
        grid = ((-(-(n * p * q) // BM)) * (-(-k // bn)),)
        args = (np.uint64(x.data_ptr()), np.uint64(wt.data_ptr()), np.uint64(y.data_ptr())) + tuple(np.int32(v) for v in shape)
        f, smem = funcs[name], smem_bytes(bn, stages)
        return lambda: f(grid, (THREADS,), args, shared_mem=smem)

    def launch(name, x, wt, y, shape):
        launcher(name, x, wt, y, shape)()

    def context_alive():
        try:
            torch.cuda.synchronize()
            (cp.ones(4) + 1).get()
            return True
        except Exception:
            return False

    def inputs(case, dtype, gen):
        n, c, h, w, k, r, s, pad, stride, dil = case
        tdt = torch.float16 if dtype == "fp16" else torch.bfloat16
        x = torch.randn(n, h, w, c, generator=gen, device="cuda").to(tdt).contiguous()
        wt = (torch.randn(k, r, s, c, generator=gen, device="cuda") / (r * s * c) ** 0.5).to(tdt).contiguous()
        return x, wt

    def reference(case, x, wt):
        n, c, h, w, k, r, s, pad, stride, dil = case
        ref = F.conv2d(x.double().permute(0, 3, 1, 2), wt.double().permute(0, 3, 1, 2), stride=pair(stride), padding=pair(pad), dilation=pair(dil))
        return ref.permute(0, 2, 3, 1).contiguous()  # NHWK = row-major M x K

    def shape_args(case):
        n, c, h, w, k, r, s, pad, stride, dil = case
        (ph, pw), (sh, sw), (dh, dw) = pair(pad), pair(stride), pair(dil)
        p, q = out_size(h, r, ph, sh, dh), out_size(w, s, pw, sw, dw)
        return (n, c, h, w, k, r, s, p, q, ph, pw, sh, sw, dh, dw, 32)

    cases = all_cases()
    diagnosed = {}
    gen = torch.Generator(device="cuda")
    for ci in range(start, len(cases)):
        case = cases[ci]
        n, c, h, w, k, r, s, pad, stride, dil = case
        shape = shape_args(case)
        p, q = shape[7], shape[8]
        m_total = n * p * q
        for dtype in ("fp16", "bf16"):
            gen.manual_seed(1000 + ci)
            x, wt = inputs(case, dtype, gen)
            want = reference(case, x, wt).cpu().numpy()
            for name, (bn, stages, kd) in KERNELS.items():
                if kd != dtype:
                    continue
                tag = f"case {ci:2d} {name:28s} {describe(case)}"
                print(f"RUN {ci} {name}", flush=True)
                try:
                    y = torch.full((n, p, q, k), float("nan"), dtype=torch.float32, device="cuda")
                    launch(name, x, wt, y, shape)
                    torch.cuda.synchronize()
                    got = y.cpu().numpy().astype(np.float64)
                except Exception as e:  # launch error or fault
                    print(f"FAIL {tag}: launch error: {type(e).__name__}: {e}", flush=True)
                    if not context_alive():
                        print(f"CONTEXT_LOST {ci}", flush=True)
                        sys.exit(3)
                    continue
                nan = int(np.isnan(got).sum())
                denom = float(np.linalg.norm(want)) or 1.0
                err = float(np.linalg.norm(np.nan_to_num(got, nan=0.0) - want)) / denom
                ok = nan == 0 and err < TOL
                print(f"{'PASS' if ok else 'FAIL'} {tag}: rel L2 {err:.2e}, NaN {nan}", flush=True)
                if not ok:
                    diagnosed[name] = diagnosed.get(name, 0) + 1
                    if diagnosed[name] <= 3:  # the first failures tell the story; keep the log short
                        diagnose(got, want, m_total, k)
        del x, wt
    # Timing: the seed shape, fp16.
    n, c, h, w, k, r, s, pad, stride, dil = SEED
    shape = shape_args(SEED)
    p, q = shape[7], shape[8]
    flops = 2.0 * n * k * p * q * c * r * s
    gen.manual_seed(7)
    x, wt = inputs(SEED, "fp16", gen)
    y = torch.empty((n, p, q, k), dtype=torch.float32, device="cuda")

    def median_ms(run, stream_events):
        """Median of 50 runs, each between its own pair of events. The runs are queued back to
        back with no host synchronization in between, so the GPU never waits for the Python
        launch overhead inside a measured interval (after the first few)."""
        for _ in range(10):
            run()
        torch.cuda.synchronize()
        pairs = [stream_events() for _ in range(50)]
        for a, b in pairs:
            a.record()
            run()
            b.record()
        torch.cuda.synchronize()
        times = sorted(a.elapsed_time(b) if isinstance(a, torch.cuda.Event) else cp.cuda.get_elapsed_time(a, b) for a, b in pairs)
        return times[len(times) // 2]

    def cp_events():
        return cp.cuda.Event(), cp.cuda.Event()

    def torch_events():
        return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    print(f"TIMING seed shape {describe(SEED)} ({flops / 1e9:.1f} GFLOP), median of 50 after 10 warm-up", flush=True)
    for name, (bn, stages, kd) in KERNELS.items():
        if kd != "fp16":
            continue
        try:
            ms = median_ms(launcher(name, x, wt, y, shape), cp_events)
            print(f"TIME {name:28s} {ms:8.4f} ms {flops / ms / 1e9:8.1f} TFLOP/s (fp32 out)", flush=True)
        except Exception as e:
            print(f"TIME {name}: error {type(e).__name__}: {e}", flush=True)
    try:
        torch.backends.cudnn.benchmark = True
        xt = x.permute(0, 3, 1, 2)   # NCHW view of NHWC data = channels_last
        wtt = wt.permute(0, 3, 1, 2)  # KCRS view of KRSC = channels_last
        assert xt.is_contiguous(memory_format=torch.channels_last)
        ms = median_ms(lambda: F.conv2d(xt, wtt, padding=pair(pad)), torch_events)
        print(f"TIME {'cudnn fp16 channels_last':28s} {ms:8.4f} ms {flops / ms / 1e9:8.1f} TFLOP/s (fp16 out; cuDNN {torch.backends.cudnn.version()})", flush=True)
    except Exception as e:
        print(f"TIME cudnn: error {type(e).__name__}: {e}", flush=True)


# --------------------------------------------------------------------------------------------
# Parent: prints the PTX's kernels, runs children, summarizes.
# --------------------------------------------------------------------------------------------

def main():
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    ptx = os.path.abspath(sys.argv[1])
    if len(sys.argv) >= 4 and sys.argv[2] == "--child":
        child(ptx, int(sys.argv[3]))
        return
    t0 = time.time()
    text = open(ptx).read()
    version = re.search(r"^\.version\s+(\S+)", text, re.M)
    target = re.search(r"^\.target\s+(\S+)", text, re.M)
    entries = re.findall(r"\.entry\s+(\w+)\s*\(", text)
    print(f"PTX {ptx}: .version {version.group(1) if version else '?'}, .target {target.group(1) if target else '?'}, {len(entries)} entries")
    wg = [e for e in entries if e.startswith("wgmma_")]
    print(f"  wgmma entries ({len(wg)}): {', '.join(wg)}")
    print(f"  and {len(entries) - len(wg)} others (wmma_*, tiled_*, direct_*, relayout_*)")
    missing = [k for k in KERNELS if k not in entries]
    if missing:
        print(f"SUMMARY: FAIL: the PTX lacks {missing}")
        sys.exit(1)
    try:
        import torch
        print(f"device: {torch.cuda.get_device_name(0)}, capability {torch.cuda.get_device_capability(0)}, torch {torch.__version__}")
        if torch.cuda.get_device_capability(0) != (9, 0):
            print("SUMMARY: SKIP: sm_90a PTX needs compute capability 9.0")
            sys.exit(1)
    except ImportError as e:
        print(f"SUMMARY: FAIL: {e}")
        sys.exit(1)

    n_cases = len(all_cases())
    supervise(__file__, ptx, n_cases, t0)


if __name__ == "__main__":
    main()
