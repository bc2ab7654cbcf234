#!/usr/bin/env python3
"""GPU smoke test of the warp-specialized sm_90a kernels (wgmma_ws_cpasync_*, dev-only), no Rust needed.

    python3 hopper_ws_smoke.py convrs_sm_90a.ptx

Needs an H100/H200 (compute capability 9.0), CuPy, PyTorch, numpy, and cuda-bindings for the
tensor map (`cuda.bindings.driver.cuTensorMapEncodeTiled`; if that import or call fails, the
driver's own cuTensorMapEncodeTiled is called through ctypes instead, and when both work their
128 bytes are compared). Modelled on dev/hopper_smoke.py: every entry on ~25 problems (tiny,
edge cases, 20 random with C, K multiples of 8, padding, stride, dilation, and the seed shape),
both output types (y_bits 32: fp32; 16: the input's 16-bit type), against torch's float64
conv2d on the same rounded inputs; then the seed shape timed against step 1's
wgmma_multistage_128x256k64 and cuDNN fp16 channels-last. Faults and hangs run in child processes.

Kernel contract (kernels-gpu/src/tensor_core/hopper/kernel.rs, spec/src/hopper.rs `hopper_configs!`):
  args   x (u64, NHWC fp16/bf16), w (u64, KRSC; not read), y (u64, NHWK), wmap (u64: 128-byte
         tensor map of w in device memory), then 16 i32:
         n c h w k r s p q pad_h pad_w stride_h stride_w dil_h dil_w y_bits
  map    3-D {C, R*S, K} (innermost first), byte strides {C*2, R*S*C*2}, box {64, 1, BN},
         element strides 1, interleave NONE, swizzle 128B, L2 promotion 128B, OOB fill NONE (zeros)
  launch 384 threads, 1-D grid ceil(N*P*Q / 128) * ceil(K / BN),
         dynamic shared memory STAGES * (128 + BN) * 128 + 1024 + 128 bytes; C % 8 == 0, K % 8 == 0.
"""
import ctypes
import os
import re
import sys
import time

from smoke_common import SEED, TINY, describe, out_size, pair, random_cases, supervise  # dev/ is the script's folder, first on sys.path

# name -> (BN, STAGES, dtype); keep in step with the WsCpAsync Tile rows of convrs_spec::hopper_configs!.
KERNELS = {
    "wgmma_ws_cpasync_128x256k64": (256, 4, "fp16"),
    "wgmma_ws_cpasync_128x128k64": (128, 6, "fp16"),
    "wgmma_ws_cpasync_bf16_128x256k64": (256, 4, "bf16"),
    "wgmma_ws_cpasync_bf16_128x128k64": (128, 6, "bf16"),
}
STEP1 = ("wgmma_multistage_128x256k64", 256, 4)  # timed beside them (256 threads, no map)
BM = 128
THREADS = 384
TOL = {32: {"fp16": 1e-4, "bf16": 1e-4}, 16: {"fp16": 2e-3, "bf16": 1e-2}}  # rel L2 vs float64

# Driver enum values (cuda.h; notes/hopper.md §3.1), used by the ctypes path and checked against
# cuda.bindings' named enums when that is present.
DT = {"fp16": 6, "bf16": 9}
INTERLEAVE_NONE, SWIZZLE_128B, L2_128B, OOB_NONE = 0, 3, 2, 0


def smem_bytes(bn, stages):
    return stages * (BM + bn) * 128 + 1024 + 128


def step1_smem(bn, stages):
    return stages * (BM + bn) * 128 + 1024


def all_cases():
    fixed = [
        TINY,
        (1, 8, 5, 5, 8, 1, 1, 0, 1, 1),        # C = 8 < box 64, K = 8 < BN: TMA zero-fill on both
        (2, 128, 16, 16, 256, 1, 1, 0, 1, 1),  # whole tiles, 2 k-tiles (fewer than the ring)
        (1, 72, 9, 9, 136, 3, 3, 1, 1, 1),     # C tail past 64, K tail past 128; 18 k-tiles (ring wraps)
        (4, 256, 8, 8, 264, 3, 3, 1, 1, 1),    # 36 k-tiles, many ring rounds, K tail
    ]
    return fixed + random_cases(20, 4321, 24, 40) + [SEED]


def diagnose(got, want, m_total, k_total, c, r, s):
    """Wrong (m, k) with values and where the value occurs in the reference, wrong 8x8 blocks
    for small problems, counts by (m % 16, k % 8) (fragment map) and by k % BN row groups
    (a TMA box / swizzle bug shows in the B rows, i.e. columns k)."""
    import numpy as np

    g = got.reshape(m_total, k_total)
    wv = want.reshape(m_total, k_total)
    scale = float(np.abs(wv).max()) or 1.0
    bad = ~(np.abs(g - wv) <= 1e-2 * scale)
    nan = np.isnan(g)
    idx = np.argwhere(bad)
    print(f"    {len(idx)} of {g.size} elements wrong (|err| > 1e-2 * max|ref|), {int(nan.sum())} NaN (never written); zero where ref is not: {int(((g == 0) & (wv != 0)).sum())}")
    idx = np.concatenate([np.argwhere(bad & ~nan)[:6], np.argwhere(nan)[:2]])
    for m, kk in idx[:8]:
        line = f"      (m={m:5d}, k={kk:4d}) got {g[m, kk]: .6f} want {wv[m, kk]: .6f}"
        if np.isfinite(g[m, kk]) and g.size <= 1 << 16:
            hits = np.argwhere(np.abs(wv - g[m, kk]) <= 1e-4 * scale)
            if len(hits):
                line += "  = ref at " + ", ".join(f"(m={a}, k={b})" for a, b in hits[:3])
        print(line)
    if m_total <= 256 and k_total <= 512:
        print("    wrong 8x8 blocks (rows m/8, columns k/8):")
        for mb in range(-(-m_total // 8)):
            print(f"      m {8 * mb:4d}: " + "".join("X" if bad[8 * mb:8 * mb + 8, 8 * kb:8 * kb + 8].any() else "." for kb in range(-(-k_total // 8))))
    rm, rk = bad.nonzero()
    if len(rm):
        pat = np.zeros((16, 8), dtype=np.int64)
        np.add.at(pat, (rm % 16, rk % 8), 1)
        print("    wrong counts by (m % 16) x (k % 8):")
        for i in range(16):
            print("      " + " ".join(f"{v:5d}" for v in pat[i]))
        print(f"    wrong counts by k % 64 (B row within a swizzle span): {np.bincount(rk % 64, minlength=64).tolist()}")


# --------------------------------------------------------------------------------------------
# Tensor maps.
# --------------------------------------------------------------------------------------------

def encode_bindings(dtype, ptr, dims, strides, box):
    """cuTensorMapEncodeTiled through cuda-bindings; returns 128 bytes or raises."""
    try:
        from cuda.bindings import driver
    except ImportError:
        from cuda import cuda as driver  # cuda-python < 12.6
    (err,) = driver.cuInit(0)
    dt = driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16 if dtype == "fp16" else driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
    sw = driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B
    il = driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE
    l2 = driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B
    oob = driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
    for name, e, want in (("dtype", dt, DT[dtype]), ("swizzle", sw, SWIZZLE_128B), ("interleave", il, INTERLEAVE_NONE), ("l2", l2, L2_128B), ("oob", oob, OOB_NONE)):
        if int(e) != want:
            raise RuntimeError(f"cuda-bindings enum {name} = {int(e)}, this script assumed {want}")
    try:  # cuda-bindings 13.5 refuses plain ints for the cuuint32_t arrays (checked without a GPU)
        res = driver.cuTensorMapEncodeTiled(dt, 3, ptr, [driver.cuuint64_t(v) for v in dims], [driver.cuuint64_t(v) for v in strides],
                                            [driver.cuuint32_t(v) for v in box], [driver.cuuint32_t(1)] * 3, il, sw, l2, oob)
    except TypeError:  # in case some version wants plain ints
        res = driver.cuTensorMapEncodeTiled(dt, 3, ptr, dims, strides, box, [1, 1, 1], il, sw, l2, oob)
    err, tmap = res
    if int(err) != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled (cuda-bindings) returned {err}")
    try:
        words = [int(v) for v in tmap.opaque]
        return b"".join(w.to_bytes(8, "little") for w in words)
    except Exception:
        return ctypes.string_at(tmap.getPtr(), 128)


def encode_ctypes(dtype, ptr, dims, strides, box):
    """cuTensorMapEncodeTiled straight from libcuda; returns 128 bytes or raises."""
    lib = ctypes.CDLL("libcuda.so.1")
    f = lib.cuTensorMapEncodeTiled
    f.restype = ctypes.c_int
    raw = ctypes.create_string_buffer(128 + 64)  # the map must be 64-byte aligned
    base = (ctypes.addressof(raw) + 63) & ~63
    u64 = ctypes.c_uint64
    u32 = ctypes.c_uint32
    err = f(ctypes.c_void_p(base), ctypes.c_int(DT[dtype]), u32(3), ctypes.c_void_p(ptr), (u64 * 3)(*dims), (u64 * 2)(*strides),
            (u32 * 3)(*box), (u32 * 3)(1, 1, 1), ctypes.c_int(INTERLEAVE_NONE), ctypes.c_int(SWIZZLE_128B), ctypes.c_int(L2_128B),
            ctypes.c_int(OOB_NONE))
    if err != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled (ctypes) returned CUresult {err}")
    return ctypes.string_at(base, 128)


_SAID = set()


def filter_map(wt, dtype, bn, clear_bit21=False):
    """The kernel's filter map as a 128-byte uint8 CUDA tensor (64-byte aligned)."""
    import torch

    k, r, s, c = wt.shape
    dims, strides, box = [c, r * s, k], [c * 2, r * s * c * 2], [64, 1, bn]
    blobs, errors = {}, {}
    for how, enc in (("cuda-bindings", encode_bindings), ("ctypes", encode_ctypes)):
        try:
            blobs[how] = enc(dtype, wt.data_ptr(), dims, strides, box)
        except Exception as e:
            errors[how] = f"{type(e).__name__}: {e}"
    for how, e in errors.items():
        if how not in _SAID:
            _SAID.add(how)
            print(f"NOTE tensor map via {how} failed: {e}", flush=True)
    if not blobs:
        raise RuntimeError(f"no tensor map: {errors}")
    if len(blobs) == 2 and blobs["cuda-bindings"] != blobs["ctypes"] and "differ" not in _SAID:
        _SAID.add("differ")
        print("NOTE the cuda-bindings and ctypes tensor maps differ; using cuda-bindings'", flush=True)
    blob = bytearray(blobs.get("cuda-bindings") or blobs["ctypes"])
    if clear_bit21:  # CUTLASS's undocumented workaround for small tensors on drivers <= 13010 (notes §3.3)
        blob[8 + 2] &= ~(1 << 5) & 0xFF
    t = torch.frombuffer(blob, dtype=torch.uint8).to("cuda")
    assert t.data_ptr() % 64 == 0
    return t


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
            f = mod.get_function(name)
            f.max_dynamic_shared_size_bytes = smem_bytes(bn, stages)
            funcs[name] = f
        f = mod.get_function(STEP1[0])
        f.max_dynamic_shared_size_bytes = step1_smem(STEP1[1], STEP1[2])
        funcs[STEP1[0]] = f
    except Exception as e:
        print(f"FAIL module load (JIT of the PTX or the shared-memory attribute): {type(e).__name__}: {e}", flush=True)
        sys.exit(4)
    try:
        print(f"INFO wgmma_ws_cpasync_128x256k64: {funcs['wgmma_ws_cpasync_128x256k64'].num_regs} registers (entry count), "
              f"max threads {funcs['wgmma_ws_cpasync_128x256k64'].max_threads_per_block}", flush=True)
    except Exception:
        pass

    def launcher(name, x, wt, y, wmap, shape):
        bn, stages, _ = KERNELS[name]
        n, c, h, w, k, r, s, p, q = shape[:9]
        grid = ((-(-(n * p * q) // BM)) * (-(-k // bn)),)
        args = (np.uint64(x.data_ptr()), np.uint64(wt.data_ptr()), np.uint64(y.data_ptr()), np.uint64(wmap.data_ptr())) + tuple(np.int32(v) for v in shape)
        f, smem = funcs[name], smem_bytes(bn, stages)
        return lambda: f(grid, (THREADS,), args, shared_mem=smem)

    def step1_launcher(x, wt, y, shape):
        name, bn, stages = STEP1
        n, c, h, w, k, r, s, p, q = shape[:9]
        grid = ((-(-(n * p * q) // BM)) * (-(-k // bn)),)
        args = (np.uint64(x.data_ptr()), np.uint64(wt.data_ptr()), np.uint64(y.data_ptr())) + tuple(np.int32(v) for v in shape)
        return lambda: funcs[name](grid, (256,), args, shared_mem=step1_smem(bn, stages))

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
        return ref.permute(0, 2, 3, 1).contiguous()

    def shape_args(case, y_bits):
        n, c, h, w, k, r, s, pad, stride, dil = case
        (ph, pw), (sh, sw), (dh, dw) = pair(pad), pair(stride), pair(dil)
        p, q = out_size(h, r, ph, sh, dh), out_size(w, s, pw, sw, dw)
        return (n, c, h, w, k, r, s, p, q, ph, pw, sh, sw, dh, dw, y_bits)

    def run_once(name, x, wt, case, dtype, y_bits, wmap):
        n, c, h, w, k = case[:5]
        shape = shape_args(case, y_bits)
        p, q = shape[7], shape[8]
        ydt = torch.float32 if y_bits == 32 else (torch.float16 if dtype == "fp16" else torch.bfloat16)
        y = torch.full((n, p, q, k), float("nan"), dtype=ydt, device="cuda")
        launcher(name, x, wt, y, wmap, shape)()
        torch.cuda.synchronize()
        return y.double().cpu().numpy()

    cases = all_cases()
    diagnosed = {}
    gen = torch.Generator(device="cuda")
    for ci in range(start, len(cases)):
        case = cases[ci]
        n, c, h, w, k, r, s, pad, stride, dil = case
        p, q = shape_args(case, 32)[7:9]
        m_total = n * p * q
        for dtype in ("fp16", "bf16"):
            gen.manual_seed(1000 + ci)
            x, wt = inputs(case, dtype, gen)
            want = reference(case, x, wt).cpu().numpy()
            for name, (bn, stages, kd) in KERNELS.items():
                if kd != dtype:
                    continue
                for y_bits in (32, 16):
                    tag = f"case {ci:2d} {name:30s} y{y_bits} {describe(case)}"
                    print(f"RUN {ci} {name}", flush=True)
                    try:
                        wmap = filter_map(wt, dtype, bn)
                        got = run_once(name, x, wt, case, dtype, y_bits, wmap)
                    except Exception as e:
                        print(f"FAIL {tag}: launch error: {type(e).__name__}: {e}", flush=True)
                        if not context_alive():
                            print(f"CONTEXT_LOST {ci}", flush=True)
                            sys.exit(3)
                        continue
                    nan = int(np.isnan(got).sum())
                    denom = float(np.linalg.norm(want)) or 1.0
                    err = float(np.linalg.norm(np.nan_to_num(got, nan=0.0) - want)) / denom
                    ok = nan == 0 and err < TOL[y_bits][dtype]
                    print(f"{'PASS' if ok else 'FAIL'} {tag}: rel L2 {err:.2e}, NaN {nan}", flush=True)
                    if not ok:
                        diagnosed[name] = diagnosed.get(name, 0) + 1
                        if diagnosed[name] <= 3:
                            diagnose(got, want, m_total, k, c, r, s)
                            # Does CUTLASS's small-tensor workaround change the result? (a diagnosis only)
                            try:
                                got2 = run_once(name, x, wt, case, dtype, y_bits, filter_map(wt, dtype, bn, clear_bit21=True))
                                err2 = float(np.linalg.norm(np.nan_to_num(got2, nan=0.0) - want)) / denom
                                print(f"    with bit 21 of the map's word 1 cleared: rel L2 {err2:.2e}, NaN {int(np.isnan(got2).sum())}", flush=True)
                            except Exception as e:
                                print(f"    retry with bit 21 cleared: {type(e).__name__}: {e}", flush=True)
        del x, wt

    # Timing: the seed shape, fp16, fp32 out (as step 1's figures).
    n, c, h, w, k, r, s, pad, stride, dil = SEED
    shape = shape_args(SEED, 32)
    p, q = shape[7], shape[8]
    flops = 2.0 * n * k * p * q * c * r * s
    gen.manual_seed(7)
    x, wt = inputs(SEED, "fp16", gen)
    y = torch.empty((n, p, q, k), dtype=torch.float32, device="cuda")

    def median_ms(run, stream_events):
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
    runs = [(name, lambda name=name, bn=bn: launcher(name, x, wt, y, filter_map(wt, "fp16", bn), shape)) for name, (bn, _, kd) in KERNELS.items() if kd == "fp16"]
    runs.append((STEP1[0] + " (step 1)", lambda: step1_launcher(x, wt, y, shape)))
    for name, make in runs:
        try:
            ms = median_ms(make(), cp_events)
            print(f"TIME {name:36s} {ms:8.4f} ms {flops / ms / 1e9:8.1f} TFLOP/s (fp32 out)", flush=True)
        except Exception as e:
            print(f"TIME {name}: error {type(e).__name__}: {e}", flush=True)
            if not context_alive():
                sys.exit(3)
    try:
        torch.backends.cudnn.benchmark = True
        xt = x.permute(0, 3, 1, 2)
        wtt = wt.permute(0, 3, 1, 2)
        assert xt.is_contiguous(memory_format=torch.channels_last)
        ms = median_ms(lambda: F.conv2d(xt, wtt, padding=pair(pad)), torch_events)
        print(f"TIME {'cudnn fp16 channels_last':36s} {ms:8.4f} ms {flops / ms / 1e9:8.1f} TFLOP/s (fp16 out; cuDNN {torch.backends.cudnn.version()})", flush=True)
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
    print(f"  wgmma_ws entries: {', '.join(e for e in entries if e.startswith('wgmma_ws_'))}")
    maxntid = len(re.findall(r"^\.maxntid 384", text, re.M))
    print(f"  .maxntid 384 directives: {maxntid}")
    missing = [k for k in list(KERNELS) + [STEP1[0]] if k not in entries]
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
    try:
        import importlib.metadata as md
        print(f"cuda-bindings {md.version('cuda-bindings')}")
    except Exception as e:
        print(f"cuda-bindings: not found ({type(e).__name__}); the ctypes path will be used")

    n_cases = len(all_cases())
    supervise(__file__, ptx, n_cases, t0)


if __name__ == "__main__":
    main()
