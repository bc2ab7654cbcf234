//! Hopper warpgroup matrix instructions (sm_90a only): `wgmma.mma_async` m64nNk16 (fp16, bf16)
//! and m64nNk8 (tf32) with both operands in shared memory or (tf32) A in registers, its fences
//! and group waits, the shared-memory matrix descriptor
//! and the generic-to-async proxy fence. notes/hopper.md has the sources (PTX ISA, CUTLASS) for
//! every field and rule used here.
//!
//! A warpgroup is 4 consecutive warps, the first a multiple of 4. Every `.sync.aligned`
//! instruction here must be executed by all 128 threads of the warpgroup together (uniform
//! control flow); callers state this at each use.
//!
//! The accumulators are `[f32; N/2]` per thread ([`Accumulators`]; fragment map in
//! notes/hopper.md §1.4). Between a wgmma and the `wait_group` that retires it the hardware
//! writes them asynchronously, so the compiler must neither read nor move them there: the fence
//! and the waits take the whole array as `inout` operands (named in a PTX comment), which pins
//! every other access of the accumulators before the fence or after the wait (the role of
//! CUTLASS's `warpgroup_fence_operand`).

use core::arch::asm;
use core::ops::IndexMut;

/// Shared-memory matrix descriptor for a K-major operand tile in the canonical 128-byte
/// swizzle layout: rows of 64 16-bit elements (128 bytes) at `start + 128 * row`, 16-byte chunk
/// `c` of row `r` stored in slot `c ^ (r & 7)`, `start` (a `.shared` window address) on a
/// 1024-byte boundary so that the matrix base offset (bits 49-51) is 0.
///
/// Fields: start address >> 4 in bits 0-13; leading byte offset 1 (unused for swizzled
/// K-major, "assumed 1") in bits 16-29; stride byte offset 1024 >> 4 = 64 (eight 128-byte rows
/// to the next 8-row core-matrix group) in bits 32-45; swizzle mode 1 (128B) in bits 62-63.
/// Step along K by adding [`DESC_K16`] per 16 elements: the start moves by the unswizzled 32
/// bytes and the hardware applies the XOR from the address bits.
#[inline(always)]
pub const fn desc_sw128(start: u32) -> u64 {
    ((start as u64 >> 4) & 0x3FFF) | (1 << 16) | (64 << 32) | (1 << 62)
}

/// What to add to a [`desc_sw128`] descriptor to move one wgmma step along K: 32 bytes, 16
/// 16-bit or 8 fp32 elements.
pub const DESC_K16: u64 = 32 >> 4;

/// Shared-memory matrix descriptor for an MN-major 16-bit operand tile in the canonical 128-byte
/// swizzle layout (what a tiled TMA copy with 128B swizzle writes from a tensor whose MN index
/// is contiguous): blocks of 64 MN elements (128 bytes) x 8 K rows (1024 bytes, the swizzle
/// pattern), the next 8 K rows 1024 bytes on (stride byte offset 64), the next 64 MN elements
/// `mn_block` bytes on (leading byte offset; unused when the operand is 64 wide), `start` on a
/// 1024-byte boundary. Read with the wgmma's transpose immediate set. Step along K by adding
/// [`DESC_MN_K16`] per 16 elements.
#[inline(always)]
pub const fn desc_sw128_mn(start: u32, mn_block: u32) -> u64 {
    ((start as u64 >> 4) & 0x3FFF) | (((mn_block as u64 >> 4) & 0x3FFF) << 16) | (64 << 32) | (1 << 62)
}

/// What to add to a [`desc_sw128_mn`] descriptor to move one wgmma step (16 K rows) along K:
/// two 1024-byte groups of 8 rows.
pub const DESC_MN_K16: u64 = 2048 >> 4;

/// The element types `wgmma` reads: [`Accumulators::mma`]'s `TY`.
pub mod ty {
    /// fp16 operands, m64nNk16.
    pub const F16: u32 = 0;
    /// bf16 operands, m64nNk16.
    pub const BF16: u32 = 1;
    /// tf32 operands (fp32 data, of which the upper 19 bits are read), m64nNk8.
    pub const TF32: u32 = 2;
}

/// Keeps the compiler from moving the computation of `v` past this point (a `wgmma.fence` that
/// follows must come after every register write of an A fragment); emits no instruction.
#[inline(always)]
pub fn pin4(v: &mut [u32; 4]) {
    // SAFETY: an empty template; the registers are only named in the comment.
    unsafe { asm!("// pin {0} {1} {2} {3}", inout(reg32) v[0], inout(reg32) v[1], inout(reg32) v[2], inout(reg32) v[3], options(nostack)) };
}

/// `wgmma.commit_group.sync.aligned`: closes the group of wgmmas this warp issued since the
/// last commit (an empty group is allowed).
///
/// # Safety
/// All threads of the warpgroup execute it together.
#[inline(always)]
pub unsafe fn commit_group() {
    // SAFETY: the caller guarantees warpgroup convergence.
    unsafe { asm!("wgmma.commit_group.sync.aligned;", options(nostack)) };
}

/// `fence.proxy.async.shared::cta`: orders this thread's ordinary (generic-proxy) accesses of
/// shared memory, such as its landed `cp.async` copies, with async-proxy accesses (wgmma
/// operand reads) ordered after it, e.g. by a barrier, and the other way round.
#[inline(always)]
pub fn fence_proxy_async_shared() {
    // SAFETY: a fence has no preconditions; no `nomem`, so shared accesses stay on their side.
    unsafe { asm!("fence.proxy.async.shared::cta;", options(nostack)) };
}

/// One thread's wgmma accumulators for an m64nN tile: `[f32; N/2]`. Register `i` holds
/// D[16*warp + lane/4 + 8*((i/2)%2)][8*(i/4) + 2*(lane%4) + i%2] (warp and lane within the
/// warpgroup).
pub trait Accumulators: IndexMut<usize, Output = f32> + Copy {
    /// N, the tile's columns.
    const N: usize;
    /// All zeros.
    const ZERO: Self;
    /// `wgmma.fence.sync.aligned`: orders this warpgroup's earlier register accesses of the
    /// accumulators before the wgmmas that follow (needed before the first wgmma of a batch).
    ///
    /// # Safety
    /// All threads of the warpgroup execute it together.
    unsafe fn fence(&mut self);
    /// `wgmma.wait_group.sync.aligned 1`: at most the newest committed group still runs (so
    /// the accumulators stay untouchable; the shared memory of older groups is free).
    ///
    /// # Safety
    /// All threads of the warpgroup execute it together.
    unsafe fn wait_1(&mut self);
    /// `wgmma.wait_group.sync.aligned 0`: every wgmma of this warp has retired and the
    /// accumulators hold its results.
    ///
    /// # Safety
    /// All threads of the warpgroup execute it together.
    unsafe fn wait_0(&mut self);
    /// `D = A * B + (scale_d != 0 ? D : 0)` on one step of 32 bytes along K (m64nNk16 for
    /// 16-bit types, m64nNk8 for tf32), A (64 rows, K-major) and B from shared-memory
    /// descriptors, B K-major ([`desc_sw128`]: N rows) or, with `B_MN` (16-bit types only),
    /// MN-major ([`desc_sw128_mn`]); operands of type `TY` ([`ty`]).
    ///
    /// # Safety
    /// All threads of the warpgroup execute it together with the same descriptors, which
    /// describe shared memory written and made visible to the async proxy before (see
    /// [`fence_proxy_async_shared`]) and left alone until a wait retires this wgmma; a
    /// [`Accumulators::fence`] precedes it since the accumulators were last touched otherwise.
    unsafe fn mma<const TY: u32, const B_MN: bool>(&mut self, a: u64, b: u64, scale_d: u32);
    /// The same on tf32 with A from registers (m64nNk8): register i of thread (warp, lane)
    /// holds A[16*warp + lane/4 + 8*(i%2)][lane%4 + 4*(i/2)].
    ///
    /// # Safety
    /// As [`Accumulators::mma`] for B; a [`Accumulators::fence`] comes after the last write of
    /// `a`'s registers (see [`pin4`]), which stay unchanged until a wait retires this wgmma.
    unsafe fn mma_tf32_ra(&mut self, a: [u32; 4], b: u64, scale_d: u32);
}

/// `asm!` of `$pre {acc0, ..., acc(R-1)}$post` with the R registers of `$d` as operands 0..R-1,
/// followed by the operands `$rest`.
macro_rules! with_regs {
    ($d:expr, $pre:expr, $post:expr, [$($i:literal)*] $($rest:tt)*) => {
        asm!(concat!($pre, "{{{0}", $(", {", $i, "}",)* "}}", $post), inout(reg32) $d[0], $(inout(reg32) $d[$i],)* $($rest)*)
    };
}

/// Implements [`Accumulators`] for `[f32; $r]` (N = 2 * $r) with register indices 1..$r.
macro_rules! accumulators {
    ($r:literal, $n:literal, [$($i:literal)*]) => {
        impl Accumulators for [f32; $r] {
            const N: usize = $n;
            const ZERO: Self = [0.0; $r];
            #[inline(always)]
            unsafe fn fence(&mut self) {
                // SAFETY: the caller guarantees warpgroup convergence; the registers are only
                // named in the comment, so nothing moves them.
                unsafe { with_regs!(self, "wgmma.fence.sync.aligned; // ", "", [$($i)*] options(nostack)) };
            }
            #[inline(always)]
            unsafe fn wait_1(&mut self) {
                // SAFETY: as for `fence`; no `nomem`: the shared memory the retired wgmmas read
                // may be overwritten after it.
                unsafe { with_regs!(self, "wgmma.wait_group.sync.aligned 1; // ", "", [$($i)*] options(nostack)) };
            }
            #[inline(always)]
            unsafe fn wait_0(&mut self) {
                // SAFETY: as for `wait_1`.
                unsafe { with_regs!(self, "wgmma.wait_group.sync.aligned 0; // ", "", [$($i)*] options(nostack)) };
            }
            #[inline(always)]
            unsafe fn mma<const TY: u32, const B_MN: bool>(&mut self, a: u64, b: u64, scale_d: u32) {
                // tf32 takes K-major operands only.
                const { assert!(!(B_MN && TY == ty::TF32)) };
                // scale-d is a predicate, which Rust's asm has no class for: built inside the
                // block (scoped braces keep the `.reg` local to each expansion).
                // SAFETY: the caller guarantees convergence, uniform descriptors of visible
                // shared memory, and the fence; it only reads shared memory.
                unsafe {
                    match TY {
                        ty::BF16 => with_regs!(self,
                            concat!("{{\n.reg .pred p;\nsetp.ne.b32 p, {s}, 0;\nwgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.bf16.bf16 "),
                            ", {a}, {b}, p, 1, 1, 0, {tb};\n}}", [$($i)*]
                            a = in(reg64) a, b = in(reg64) b, s = in(reg32) scale_d, tb = const B_MN as u32, options(nostack)),
                        // tf32 takes no transpose immediates (K-major only).
                        ty::TF32 => with_regs!(self,
                            concat!("{{\n.reg .pred p;\nsetp.ne.b32 p, {s}, 0;\nwgmma.mma_async.sync.aligned.m64n", $n, "k8.f32.tf32.tf32 "),
                            ", {a}, {b}, p, 1, 1;\n}}", [$($i)*]
                            a = in(reg64) a, b = in(reg64) b, s = in(reg32) scale_d, options(nostack)),
                        _ => with_regs!(self,
                            concat!("{{\n.reg .pred p;\nsetp.ne.b32 p, {s}, 0;\nwgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.f16.f16 "),
                            ", {a}, {b}, p, 1, 1, 0, {tb};\n}}", [$($i)*]
                            a = in(reg64) a, b = in(reg64) b, s = in(reg32) scale_d, tb = const B_MN as u32, options(nostack)),
                    }
                }
            }
            #[inline(always)]
            unsafe fn mma_tf32_ra(&mut self, a: [u32; 4], b: u64, scale_d: u32) {
                // SAFETY: as `mma`; the A registers are the caller's fenced fragment.
                unsafe {
                    with_regs!(self,
                        concat!("{{\n.reg .pred p;\nsetp.ne.b32 p, {s}, 0;\nwgmma.mma_async.sync.aligned.m64n", $n, "k8.f32.tf32.tf32 "),
                        ", {{{a0}, {a1}, {a2}, {a3}}}, {b}, p, 1, 1;\n}}", [$($i)*]
                        a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
                        b = in(reg64) b, s = in(reg32) scale_d, options(nostack))
                }
            }
        }
    };
}

accumulators!(16, 32, [1 2 3 4 5 6 7 8 9 10 11 12 13 14 15]);
accumulators!(32, 64, [1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31]);
accumulators!(64, 128, [1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63]);
accumulators!(128, 256, [1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
    64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95
    96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127]);

/// What to add to a [`desc_sw128`] descriptor to move it 64 rows (8 KiB) further: the second
/// m64 block of a 128-row A tile.
pub const DESC_64_ROWS: u64 = (64 * 128) >> 4;

/// A warpgroup's accumulators for a whole 128-row tile, as two m64 blocks: rows 0-63 in `.0`,
/// rows 64-127 in `.1` (the ping-pong schedule, where one warpgroup computes a tile alone).
/// Each [`Accumulators::mma`] issues both blocks' wgmmas on the same B, the second's A
/// [`DESC_64_ROWS`] further; the fence and the waits are the warpgroup's, issued for each
/// block so that both register sets stay pinned. Indices `0..A::N / 2` are `.0`'s, the next
/// `A::N / 2` `.1`'s. `N` stays the tile's columns. Register-A wgmmas (3xTF32) are not
/// offered: the A fragments of two blocks would double the registers they hold.
#[derive(Clone, Copy)]
pub struct TwoBlocks<A>(pub A, pub A);

impl<A: Accumulators> core::ops::Index<usize> for TwoBlocks<A> {
    type Output = f32;
    #[inline(always)]
    fn index(&self, i: usize) -> &f32 {
        if i < A::N / 2 { &self.0[i] } else { &self.1[i - A::N / 2] }
    }
}

impl<A: Accumulators> IndexMut<usize> for TwoBlocks<A> {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut f32 {
        if i < A::N / 2 { &mut self.0[i] } else { &mut self.1[i - A::N / 2] }
    }
}

impl<A: Accumulators> Accumulators for TwoBlocks<A> {
    const N: usize = A::N;
    const ZERO: Self = TwoBlocks(A::ZERO, A::ZERO);
    #[inline(always)]
    unsafe fn fence(&mut self) {
        // SAFETY: as the caller guarantees (both are the warpgroup's one fence).
        unsafe {
            self.0.fence();
            self.1.fence();
        }
    }
    #[inline(always)]
    unsafe fn wait_1(&mut self) {
        // SAFETY: as the caller guarantees. Both blocks' wgmmas of a step share its commit
        // group, so the first wait retires both; the second pins `.1`'s registers.
        unsafe {
            self.0.wait_1();
            self.1.wait_1();
        }
    }
    #[inline(always)]
    unsafe fn wait_0(&mut self) {
        // SAFETY: as for `wait_1`.
        unsafe {
            self.0.wait_0();
            self.1.wait_0();
        }
    }
    #[inline(always)]
    unsafe fn mma<const TY: u32, const B_MN: bool>(&mut self, a: u64, b: u64, scale_d: u32) {
        // SAFETY: as the caller guarantees, for a 128-row A tile from `a`.
        unsafe {
            self.0.mma::<TY, B_MN>(a, b, scale_d);
            self.1.mma::<TY, B_MN>(a + DESC_64_ROWS, b, scale_d);
        }
    }
    #[inline(always)]
    unsafe fn mma_tf32_ra(&mut self, _a: [u32; 4], _b: u64, _scale_d: u32) {
        // Compiled (the kernel's ping-pong branch is monomorphized for every math) but never
        // run: the ping-pong configurations exclude 3xTF32 (a const check in the kernel).
        super::trap();
    }
}
