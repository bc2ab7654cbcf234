"""Dev probe (GPU machine): does a tiled 4-D TMA copy with the row map's encoding
({W, H, C, N}, box {64, 1, 64, 1}, 128B swizzle) land what it should? Encodes with the driver
(ctypes), copies one box per launch with inline PTX (CuPy/NVRTC, sm_90a), and compares against
numpy with the 128B swizzle undone. Prints one line per case."""
import ctypes, sys
import numpy as np
import cupy as cp

cuda = ctypes.CDLL("libcuda.so.1")
enc = cuda.cuTensorMapEncodeTiled
enc.restype = ctypes.c_int

def encode(ptr, dims, strides, box, dtype_code=6, swizzle=3):
    rank = len(dims)
    m = (ctypes.c_uint64 * 16)()
    D = (ctypes.c_uint64 * rank)(*dims)
    S = (ctypes.c_uint64 * (rank - 1))(*strides)
    B = (ctypes.c_uint32 * rank)(*box)
    E = (ctypes.c_uint32 * rank)(*([1] * rank))
    r = enc(ctypes.byref(m), ctypes.c_int(dtype_code), ctypes.c_uint32(rank), ctypes.c_void_p(ptr), D, S, B, E,
            ctypes.c_int(0), ctypes.c_int(swizzle), ctypes.c_int(2), ctypes.c_int(0))
    return r, bytes(m)

src = r'''
extern "C" __global__ void copy4(const void* map, int c0, int c1, int c2, int c3, unsigned short* out, int n) {
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ __align__(8) unsigned long long bar;
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    s = (s + 1023) & ~1023u;
    unsigned b = (unsigned)__cvta_generic_to_shared(&bar);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b));
        asm volatile("fence.mbarrier_init.release.cluster;");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(b), "r"(n * 2));
        asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
            :: "r"(s), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(b) : "memory");
        asm volatile("{ .reg .pred p; W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0; @!p bra W; }" :: "r"(b));
    }
    __syncthreads();
    unsigned short* sm = (unsigned short*)(smem + (s - (unsigned)__cvta_generic_to_shared(smem)));
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = sm[i];
}
'''
mod = cp.RawModule(code=src, options=("-arch=sm_90a", "-std=c++17"))
k = mod.get_function("copy4")

def unswizzle(raw, rows):
    # 128B swizzle: 16-byte chunk j of 128-byte row r sits at chunk j ^ (r % 8).
    out = np.empty_like(raw).reshape(rows, 64)
    raw = raw.reshape(rows, 8, 8)
    for r in range(rows):
        for j in range(8):
            out[r, j * 8:(j + 1) * 8] = raw[r, j ^ (r % 8)]
    return out

def case(N, C, H, W, c0, c1, c2, c3):
    x = (np.arange(N * C * H * W) % 30011).astype(np.uint16).reshape(N, C, H, W)
    d = cp.asarray(x)
    r, m = encode(d.data.ptr, [W, H, C, N], [W * 2, W * H * 2, W * H * C * 2], [64, 1, 64, 1])
    if r != 0:
        print(f"N{N} C{C} H{H} W{W}: encode error {r}"); return
    dm = cp.asarray(np.frombuffer(m, dtype=np.uint8))
    out = cp.zeros(64 * 64, dtype=cp.uint16)
    try:
        k((1,), (128,), (dm, np.int32(c0), np.int32(c1), np.int32(c2), np.int32(c3), out, np.int32(4096)), shared_mem=8192 + 1024)
        cp.cuda.runtime.deviceSynchronize()
    except Exception as e:
        print(f"N{N} C{C} H{H} W{W} at {(c0, c1, c2, c3)}: {e}"); sys.exit(0)
    got = unswizzle(cp.asnumpy(out), 64)
    want = np.zeros((64, 64), dtype=np.uint16)
    for ci in range(64):
        for wi in range(64):
            cc, ww = c2 + ci, c0 + wi
            if 0 <= cc < C and 0 <= ww < W and 0 <= c1 < H and 0 <= c3 < N:
                want[ci, wi] = x[c3, cc, c1, ww]
    print(f"N{N} C{C} H{H} W{W} at {(c0, c1, c2, c3)}: {'OK' if np.array_equal(got, want) else 'MISMATCH'}")

# One case per process (an illegal instruction ends the context): N C H W c0 c1 c2 c3.
case(*[int(v) for v in sys.argv[1:9]])
