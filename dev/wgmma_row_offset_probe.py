"""Dev probe (GPU machine): can a wgmma K-major A operand in the canonical 128-byte-swizzle layout
start at an arbitrary ROW (128 bytes) inside a 1024-byte-aligned swizzled tile? One warpgroup
fills a 96x64 fp16 A tile and a 64x64 fp16 B tile in shared memory (both 1024-aligned, 16-byte
chunk c of row r in slot c ^ (r & 7), as TMA 128B swizzle and our desc_sw128 assume), then runs
4 x wgmma m64n64k16 (f32 += f16 * f16, both operands from descriptors) with the A descriptor
starting at A_base + 128*r0 and compares D against numpy's A[r0:r0+64] @ B.T (exact: small
integers). Per r0 = 0..15 it tries the descriptor's matrix base offset (bits 49-51) = 0 and
= (start >> 7) & 7 (the PTX ISA formula); a control pass reads r0 = 0, 8, 16, 24, 32 (on the
1024-byte pattern boundary) with base offset 0, which must match or the probe itself is wrong.
Where neither variant matches an r0, a "sweep" line lists which of the 8 field values do (not
counted). Prints one line per case, a verdict line per variant, then "ALL OK" or "FAILURES n" (a
BAD line of the variant that does not apply counts; the verdict lines are the answer); exits 1
only when a control case fails or a launch faults (one process: a fault ends the context).

    python3 dev/wgmma_row_offset_probe.py

Why: an NCHW-native kernel design where the producer transposes an NCHW tile into a K-major
patch in shared memory and each filter tap reads that patch at a row offset (r0 = the tap's
shift), so the wgmma A operand must start at any row of a swizzled tile, not only at the
8-row (1024-byte) pattern boundary. Needs CuPy + numpy, an sm_90a GPU (NVRTC)."""
import sys
import numpy as np
import cupy as cp

ROWS_A = 96  # A tile rows: r0 + 64 <= 96 for every r0 tried

# Operand list / placeholders for the 32 accumulators of m64n64 f32 (one thread's fragment).
ACC_OPS = ", ".join(f'"+f"(d[{i}])' for i in range(32))
ACC_REGS = ", ".join(f"%{i}" for i in range(32))

src = r'''
extern "C" __global__ void row_offset_mma(const unsigned short* a, const unsigned short* b, float* out,
                                          unsigned long long* desc_out, int r0, int bo_mode) {
    // bo_mode < 0: base offset (start >> 7) & 7 (the PTX ISA formula); else the field value bo_mode & 7.
    extern __shared__ __align__(1024) unsigned char smem[];
    // Both tiles on 1024-byte boundaries of the shared window (the 128B pattern's repeat).
    unsigned raw = (unsigned)__cvta_generic_to_shared(smem);
    unsigned sa = (raw + 1023) & ~1023u;       // A: ROWS_A x 64 fp16, 128 bytes a row
    unsigned sb = sa + @ROWS_A@ * 128;         // B: 64 x 64 fp16 (ROWS_A * 128 is a multiple of 1024)
    unsigned char* pa = smem + (sa - raw);
    unsigned char* pb = smem + (sb - raw);
    int t = threadIdx.x;
    // Element (r, k) at byte 128*r + 16*((k/8) ^ (r&7)) + 2*(k%8): chunk k/8 of row r in slot
    // (k/8) ^ (r & 7), r counted from the 1024-aligned base.
    for (int i = t; i < @ROWS_A@ * 64; i += 128) {
        int r = i / 64, k = i % 64;
        *(unsigned short*)(pa + 128 * r + 16 * ((k / 8) ^ (r & 7)) + 2 * (k % 8)) = a[i];
    }
    for (int i = t; i < 64 * 64; i += 128) {
        int r = i / 64, k = i % 64;
        *(unsigned short*)(pb + 128 * r + 16 * ((k / 8) ^ (r & 7)) + 2 * (k % 8)) = b[i];
    }
    // Make this thread's generic-proxy smem writes visible to the async proxy (wgmma), then
    // let every thread's writes land before any wgmma reads.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();

    unsigned start_a = sa + 128u * (unsigned)r0;
    unsigned long long bo = bo_mode < 0 ? (unsigned long long)((start_a >> 7) & 7u) : (unsigned long long)(bo_mode & 7);
    // desc_sw128: start >> 4 in bits 0-13, LBO 1 (bits 16-29), SBO 1024 >> 4 = 64 (bits 32-45),
    // 128B swizzle = 1 in bits 62-63; base offset in bits 49-51.
    unsigned long long da = (unsigned long long)((start_a >> 4) & 0x3FFFu) | (1ull << 16) | (64ull << 32)
                          | (1ull << 62) | ((bo & 7ull) << 49);
    unsigned long long db = (unsigned long long)((sb >> 4) & 0x3FFFu) | (1ull << 16) | (64ull << 32)
                          | (1ull << 62);
    if (t == 0) { desc_out[0] = da; desc_out[1] = db; }

    float d[32];
#pragma unroll
    for (int i = 0; i < 32; ++i) d[i] = 0.0f;
    // The accumulators are named as operands so the compiler keeps their writes before the
    // fence and their reads after the wait (CUTLASS's warpgroup_fence_operand role).
    asm volatile("wgmma.fence.sync.aligned;" : @ACC_OPS@ :: "memory");
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
        // +2 in the start field = +32 bytes = 16 fp16 along K (unswizzled offset; the hardware
        // applies the XOR). scale-d = 0 on the first step (D = A*B), then 1 (D += A*B).
        unsigned long long dak = da + 2ull * ks;
        unsigned long long dbk = db + 2ull * ks;
        int scale_d = ks > 0;
        asm volatile(
            "{\n"
            ".reg .pred p;\n"
            "setp.ne.b32 p, %34, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
            "{@ACC_REGS@}, %32, %33, p, 1, 1, 0, 0;\n"
            "}\n"
            : @ACC_OPS@
            : "l"(dak), "l"(dbk), "r"(scale_d)
            : "memory");
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" : @ACC_OPS@ :: "memory");

    // m64nN f32 fragment: register 4j+e (e = 0, 1) holds D[16*warp + lane/4][8j + 2*(lane%4) + e],
    // register 4j+2+e the same columns 8 rows further.
    int warp = t / 32, lane = t % 32;
    int row = 16 * warp + lane / 4;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            int col = 8 * j + 2 * (lane % 4) + e;
            out[row * 64 + col] = d[4 * j + e];
            out[(row + 8) * 64 + col] = d[4 * j + 2 + e];
        }
    }
}
'''.replace("@ACC_OPS@", ACC_OPS).replace("@ACC_REGS@", ACC_REGS).replace("@ROWS_A@", str(ROWS_A))

mod = cp.RawModule(code=src, options=("-arch=sm_90a", "-std=c++17"))
k = mod.get_function("row_offset_mma")
SMEM = (ROWS_A + 64) * 128 + 1024  # both tiles + slack for the 1024-byte round-up

rng = np.random.default_rng(7)
a_h = rng.integers(-4, 5, size=(ROWS_A, 64)).astype(np.float16)
b_h = rng.integers(-4, 5, size=(64, 64)).astype(np.float16)
a_d = cp.asarray(a_h.view(np.uint16))
b_d = cp.asarray(b_h.view(np.uint16))
a64, b64 = a_h.astype(np.float64), b_h.astype(np.float64)


FORMULA = -1  # bo_mode for base offset = (start >> 7) & 7


def run(r0, bo_mode):
    """One launch; returns (ok, max error, base-offset field, descA of the first K step, detail)."""
    out = cp.full(64 * 64, np.nan, dtype=cp.float32)  # unwritten elements show as NaN
    desc = cp.zeros(2, dtype=cp.uint64)
    try:
        k((1,), (128,), (a_d, b_d, out, desc, np.int32(r0), np.int32(bo_mode)), shared_mem=SMEM)
        cp.cuda.runtime.deviceSynchronize()
    except Exception as e:  # a fault poisons the context: report and stop
        print(f"r0 {r0:2d} bo_mode {bo_mode}: launch failed: {e}")
        print("FAILURES (context lost)")
        sys.exit(1)
    got = cp.asnumpy(out).reshape(64, 64).astype(np.float64)
    want = a64[r0:r0 + 64] @ b64.T
    da = int(cp.asnumpy(desc)[0])
    err = np.abs(got - want)
    maxerr = float("nan") if np.isnan(err).any() else float(err.max())
    ok = bool(maxerr < 1e-3)  # False for NaN
    detail = ""
    if not ok:
        bad = [m for m in range(64) if not np.abs(got[m] - want[m]).max() < 1e-3]
        # Which row of the whole A tile each bad D row equals, if any (-1: none, e.g. K chunks
        # permuted within the row): tells a row shift from a wrong swizzle phase.
        full = a64 @ b64.T
        src = [next((r for r in range(ROWS_A) if np.array_equal(got[m], full[r])), -1) for m in bad[:8]]
        detail = f" ({len(bad)} of 64 rows wrong; D rows {bad[:8]} equal A@B.T rows {src})"
    return ok, maxerr, (da >> 49) & 7, da, detail


def case(label, r0, bo_mode):
    ok, maxerr, field, da, detail = run(r0, bo_mode)
    name = "(start>>7)&7" if bo_mode == FORMULA else f"{bo_mode:<12d}"
    print(f"{label} r0 {r0:2d} base_offset {name} (field {field}, descA 0x{da:016x}): "
          f"max err {maxerr:g} {'OK' if ok else 'BAD'}{detail}")
    return ok


failures = 0
control_bad = 0
works = {0: [], FORMULA: []}
for r0 in range(16):
    for bo_mode in (0, FORMULA):
        ok = case("probe  ", r0, bo_mode)
        failures += not ok
        if ok:
            works[bo_mode].append(r0)
for r0 in (0, 8, 16, 24, 32):
    ok = case("control", r0, 0)
    failures += not ok
    control_bad += not ok
# Where neither variant matched: which of the 8 field values (if any) does (not counted as failures).
for r0 in range(16):
    if r0 not in works[0] and r0 not in works[FORMULA]:
        fits = [v for v in range(8) if run(r0, v)[0]]
        print(f"sweep   r0 {r0:2d}: base_offset field values that match: {fits}")

print(f"verdict: base_offset 0            matches for r0 in {works[0]}")
print(f"verdict: base_offset (start>>7)&7 matches for r0 in {works[FORMULA]}")
if control_bad:
    print(f"control: {control_bad} aligned case(s) BAD: the probe's layout/descriptor/fragment map is wrong, "
          "so the verdicts mean nothing")
print("ALL OK" if failures == 0 else f"FAILURES {failures}")
sys.exit(1 if control_bad else 0)
