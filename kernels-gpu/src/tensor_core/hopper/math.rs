//! What the consumers compute on one k-tile (`convrs_spec::hopper::Math`): [`F16`] and [`Bf16`]
//! (both operands from shared-memory descriptors, 4 m64nNk16 steps), [`Tf32`] (the same bytes
//! read as tf32: 4 m64nNk8 steps) and [`Tf32x3`] (fp32 accuracy from three tf32 products a
//! step: the activations split into high and low TF32 parts in registers, the filter's parts
//! already split into two tiles of the stage).
//!
//! Each k-tile is one 128-byte row per GEMM row in the 128B swizzle, whatever the type: a step
//! of 32 bytes is k16 for 16-bit types and k8 for tf32, so the descriptors step alike.

use convrs_spec::hopper::{Math as Spec, PLANE_BOX_PIXELS, PLANE_PIXEL_COPY, ROW_BYTES, WARPGROUP};

use crate::prelude::matrix::{ldmatrix_x4, pack_16x2, tf32_rna};
use crate::prelude::wgmma::{commit_group, desc_sw128, desc_sw128_mn, pin4, ty, Accumulators, DESC_K16, DESC_MN_K16};
use crate::prelude::*;

/// One k-tile's MMAs of a consumer warpgroup.
pub trait Math {
    /// The table's name for it.
    const SPEC: Spec;
    /// bf16 data (for the 16-bit output rounding; false for every other type).
    const BF16: bool;
    /// The descriptor of a stage's B tile at shared address `b` (K-major: [`desc_sw128`]).
    #[inline(always)]
    fn b_desc(b: u32) -> u64 {
        desc_sw128(b)
    }
    /// Issues k-tile `kt`'s wgmmas on a stage `offset` bytes into the ring whose A and B tiles
    /// the descriptors `a_desc`, `b_desc` describe at offset 0 (`a_desc` at this warpgroup's 64
    /// rows; `a_row` the shared address of this thread's `ldmatrix` row there, see [`a_row`]):
    /// a fence, the k-tile's steps (the very first, of k-tile 0, with scale-d 0: the
    /// accumulators start from A * B), one commit group.
    ///
    /// # Safety
    /// All 128 threads of the warpgroup call it together (uniform control flow) with the same
    /// descriptors, which describe a stage written and made visible to the async proxy (and,
    /// for [`Tf32x3`], to this thread), left alone until a wait retires these wgmmas; nothing
    /// else touches the accumulators until then. `spare` (a second set of accumulators) and
    /// `total` (the running sum) are [`Math::finish`]'s, untouched but by [`Tf32x3`]; `ktiles`
    /// the tile's k-tiles, the same for every call of a tile.
    unsafe fn k_tile<Acc: Accumulators>(acc: &mut Acc, spare: &mut Acc, total: &mut Acc, a_desc: u64, b_desc: u64, a_row: u32, offset: u32, kt: i32, ktiles: i32);

    /// The shared address [`Math::k_tile`] takes as `a_row` for thread `tid` of consumer
    /// warpgroup `cw`, the ring starting at `smem`: the thread's `ldmatrix` row ([`a_row`]),
    /// or under NCHW pixel planes its first fragment element ([`plane_a_base`]).
    #[inline(always)]
    fn a_base(smem: u32, cw: u32, tid: u32) -> u32 {
        a_row(smem, cw, tid)
    }

    /// The tile's sums once every wgmma of `acc` retired (`ktiles` as for [`Math::k_tile`]):
    /// the accumulators, where the tensor cores summed the whole reduction; [`Tf32x3`] adds the
    /// last sums into its running `total`.
    ///
    /// # Safety
    /// All threads of the warpgroup call it together, after a wait retired every wgmma.
    #[inline(always)]
    unsafe fn finish<Acc: Accumulators>(acc: Acc, _spare: &mut Acc, _total: &Acc, _ktiles: i32) -> Acc {
        acc
    }
}

/// Two accumulators rounded to `M`'s 16-bit type and packed, `a` in the lower half.
#[inline(always)]
pub(super) fn pack<M: Math>(a: f32, b: f32) -> u32 {
    if M::BF16 { pack_16x2::<true>(a, b) } else { pack_16x2::<false>(a, b) }
}

/// The shared address of the A-tile row whose 16 bytes thread `tid` gives `ldmatrix.x4` in
/// warpgroup `cw`'s rows of a stage at `smem`, before the swizzle: rows 16*warp + lane%8 +
/// 8*((lane/8)%2) (matrices 0 and 1: rows 0-7 and 8-15 of the warp's 16; 2 and 3: the same rows
/// 16 bytes further along K, see [`Tf32x3`]).
#[inline(always)]
pub(super) fn a_row(smem: u32, cw: u32, tid: u32) -> u32 {
    let (warp, lane) = ((tid % WARPGROUP as u32) / 32, tid % 32);
    smem + (cw * 64 + warp * 16 + lane % 8 + 8 * ((lane / 8) % 2)) * ROW_BYTES as u32
}

/// fp16, bf16 or tf32 data with both operands from shared memory (wgmma type `TY`, [`ty`]):
/// four steps of 32 bytes a k-tile. One type for the three, which differ only in `TY`. With
/// `B_MN` (16-bit types) the B tile is MN-major, as `Producer::Planes` lands NCHW planes: 64
/// rows of channels, each `Acc::N` pixels in copies of 64 ([`desc_sw128_mn`]).
pub struct SharedOperands<const TY: u32, const B_MN: bool = false>;
/// fp16 data.
pub type F16 = SharedOperands<{ ty::F16 }>;
/// bf16 data.
pub type Bf16 = SharedOperands<{ ty::BF16 }>;
/// fp32 data as tf32.
pub type Tf32 = SharedOperands<{ ty::TF32 }>;
/// fp16 data, B MN-major (NCHW planes).
pub type F16Planes = SharedOperands<{ ty::F16 }, true>;
/// bf16 data, B MN-major (NCHW planes).
pub type Bf16Planes = SharedOperands<{ ty::BF16 }, true>;

/// Bytes between the 64-pixel blocks of an MN-major B tile: one plane copy, 64 channel rows of
/// 128 bytes.
const PLANE_COPY_BYTES: u32 = (PLANE_BOX_PIXELS * ROW_BYTES) as u32;
/// fp32 data to fp32 accuracy by 3xTF32; with `PLANE`, the A tile is NCHW pixel planes
/// ([`plane_fragment`]) rather than K-major rows.
pub struct Tf32x3<const PLANE: bool = false>;
/// 3xTF32 on NCHW pixel planes (`Producer::PlanePixels`).
pub type Tf32x3Planes = Tf32x3<true>;

/// fp32 data as tf32 with the A tile NCHW pixel planes (`Producer::PlanePixels`): `wgmma .tf32`
/// reads K-major shared tiles only, so the fragments go through registers ([`plane_fragment`]),
/// truncated to TF32 as the tensor cores read a shared tile, one `wgmma` a step.
pub struct Tf32Planes;

impl<const TY: u32, const B_MN: bool> Math for SharedOperands<TY, B_MN> {
    const SPEC: Spec = if TY == ty::TF32 { Spec::Tf32 } else { Spec::Half };
    const BF16: bool = TY == ty::BF16;
    #[inline(always)]
    fn b_desc(b: u32) -> u64 {
        if B_MN { desc_sw128_mn(b, PLANE_COPY_BYTES) } else { desc_sw128(b) }
    }
    #[inline(always)]
    unsafe fn k_tile<Acc: Accumulators>(acc: &mut Acc, _spare: &mut Acc, _total: &mut Acc, a_desc: u64, b_desc: u64, _a_row: u32, offset: u32, kt: i32, _ktiles: i32) {
        // Descriptor start fields count 16-byte units.
        let at = (offset >> 4) as u64;
        // SAFETY (the blocks below): as the caller guarantees; the fence orders the accumulator
        // accesses before.
        unsafe { acc.fence() };
        let b_step = if B_MN { DESC_MN_K16 } else { DESC_K16 };
        unroll!(4: 4, ks => {
            let scale = if ks == 0 { (kt != 0) as u32 } else { 1 };
            unsafe { acc.mma::<TY, B_MN>(a_desc + at + ks as u64 * DESC_K16, b_desc + at + ks as u64 * b_step, scale) };
        });
        unsafe { commit_group() };
    }
}

impl<const PLANE: bool> Math for Tf32x3<PLANE> {
    const SPEC: Spec = Spec::Tf32x3;
    const BF16: bool = false;
    #[inline(always)]
    fn a_base(smem: u32, cw: u32, tid: u32) -> u32 {
        if PLANE { plane_a_base(smem, cw, tid) } else { a_row(smem, cw, tid) }
    }
    /// Per step (8 channels, 32 bytes): `ldmatrix.x4` brings the thread's A fragment (as
    /// [`Accumulators::mma_tf32_ra`] wants it: 8x8 "b16" matrices are 8 rows of 4 fp32, lane l
    /// receiving row l/4, element l%4: [`row_fragment`]; on NCHW pixel planes four 4-byte loads,
    /// [`plane_fragment`]), split into hi = tf32(a) and lo = tf32(a - hi) (a - hi is
    /// exact in fp32); then lo * B_hi, hi * B_lo, hi * B_hi, the small terms first. The B_lo
    /// tile follows the B_hi tile (`Acc::N` rows further).
    ///
    /// The wgmmas read the fragment registers asynchronously, until a wait retires them, but
    /// ptxas counts a register as read at issue and reuses it at once (measured on an H100: the
    /// previous k-tile's fragments overwritten by this one's `ldmatrix` under `wait_group 1`
    /// gave errors of order 1). So the k-tile first waits for every earlier wgmma of the
    /// warpgroup: its fragment work runs while the other consumer warpgroup's wgmmas keep the
    /// tensor cores busy.
    ///
    /// Each k-tile's products are summed by the tensor cores from zero, and the sum added to
    /// `total` in fp32 (round to nearest) after that wait: the tensor cores' own accumulation
    /// truncates, which over a long reduction (measured: C*R*S = 2304) gave 1.5e-5 relative
    /// error, 18 times the FMA kernels'; summed 96 products at a time it stays within fp32's.
    /// On a short reduction ([`Spec::step_sums`]) even the k-tile's 12 truncating MMAs cost more
    /// than FMA's error, so each k-step's three are summed from zero and added. The steps
    /// alternate between `acc` (steps 0 and 2) and `spare` (1 and 3), so that one step's MMAs
    /// run while the thread adds the previous step's sums and splits the next fragment; each
    /// step's fragment registers are kept live ([`pin4`]) until the wait that retires its
    /// wgmmas, so ptxas cannot give them to the next fragment. The last two steps' sums are
    /// added by the next k-tile, or by [`Math::finish`].
    #[inline(always)]
    unsafe fn k_tile<Acc: Accumulators>(acc: &mut Acc, spare: &mut Acc, total: &mut Acc, _a_desc: u64, b_desc: u64, a_row: u32, offset: u32, kt: i32, ktiles: i32) {
        let at = (offset >> 4) as u64;
        let b_lo = b_desc + ((Acc::N * ROW_BYTES) >> 4) as u64;
        // The step's A fragment: hi and lo parts.
        let fragment = |ks: usize| {
            // SAFETY: the whole warp together, on the stage's A tile, which the full barrier
            // made visible.
            let raw = unsafe { if PLANE { plane_fragment(a_row + offset, ks) } else { row_fragment(a_row + offset, ks) } };
            let (mut hi, mut lo) = ([0u32; 4], [0u32; 4]);
            unroll!(4: 4, i => {
                hi[i] = tf32_rna(raw[i]);
                lo[i] = tf32_rna((f32::from_bits(raw[i]) - f32::from_bits(hi[i])).to_bits());
            });
            pin4(&mut hi);
            pin4(&mut lo);
            (hi, lo)
        };
        // SAFETY (every block below): as the caller guarantees; each fence follows every write
        // of the fragments its wgmmas read, and no fragment register is written before the wait
        // that retires the wgmmas reading it.
        let mma3 = |acc: &mut Acc, hi: [u32; 4], lo: [u32; 4], ks: usize, scale: u32| unsafe {
            let step = at + ks as u64 * DESC_K16;
            acc.mma_tf32_ra(lo, b_desc + step, scale);
            acc.mma_tf32_ra(hi, b_lo + step, 1);
            acc.mma_tf32_ra(hi, b_desc + step, 1);
        };
        if Self::SPEC.step_sums(ktiles, Acc::N) {
            unsafe {
                acc.wait_0();
                spare.wait_0();
            }
            // The last k-tile's steps 2 and 3 (none before the tile's first).
            if kt == 0 {
                *total = Acc::ZERO;
            } else {
                add(total, acc);
                add(total, spare);
            }
            let mut frags = [([0u32; 4], [0u32; 4]); 4];
            unroll!(4: 4, ks => {
                // Step ks goes to `acc` (even) or `spare` (odd), once step ks-2's sums there are
                // added: the wait leaves only step ks-1's wgmmas running, and step ks-2's
                // fragments, pinned after it, stayed theirs until then.
                let set = if ks % 2 == 0 { &mut *acc } else { &mut *spare };
                if ks >= 2 {
                    unsafe { set.wait_1() };
                    pin4(&mut frags[ks - 2].0);
                    pin4(&mut frags[ks - 2].1);
                    add(total, set);
                }
                frags[ks] = fragment(ks);
                unsafe { set.fence() };
                mma3(set, frags[ks].0, frags[ks].1, ks, 0);
                unsafe { commit_group() };
            });
            return;
        }
        unsafe { acc.wait_0() };
        // The last k-tile's sums (none before the tile's first).
        if kt == 0 {
            *total = Acc::ZERO;
        } else {
            add(total, acc);
        }
        let mut hi = [[0u32; 4]; 4];
        let mut lo = [[0u32; 4]; 4];
        unroll!(4: 4, ks => {
            (hi[ks], lo[ks]) = fragment(ks);
        });
        unsafe { acc.fence() };
        unroll!(4: 4, ks => {
            // Each k-tile's sums start from zero (they go into `total` above).
            mma3(acc, hi[ks], lo[ks], ks, (ks != 0) as u32);
        });
        unsafe { commit_group() };
    }

    #[inline(always)]
    unsafe fn finish<Acc: Accumulators>(acc: Acc, spare: &mut Acc, total: &Acc, ktiles: i32) -> Acc {
        let mut sum = *total;
        add(&mut sum, &acc);
        if Self::SPEC.step_sums(ktiles, Acc::N) {
            // SAFETY: the whole warpgroup, as the caller guarantees; it names the spare
            // accumulators, whose last wgmmas the caller's wait retired, so that nothing reads
            // them before it.
            unsafe { spare.wait_0() };
            add(&mut sum, spare);
        }
        sum
    }
}

impl Math for Tf32Planes {
    const SPEC: Spec = Spec::Tf32;
    const BF16: bool = false;
    #[inline(always)]
    fn a_base(smem: u32, cw: u32, tid: u32) -> u32 {
        plane_a_base(smem, cw, tid)
    }
    /// Per step: the thread's fragment from the plane copies ([`plane_fragment`]), its low 13
    /// bits cleared (what the tensor cores do to a shared tf32 operand: the same results as
    /// [`Tf32`]), one `wgmma` with A from registers. As under [`Tf32x3`], the k-tile first waits
    /// for the warpgroup's earlier wgmmas, which may still read the fragment registers.
    #[inline(always)]
    unsafe fn k_tile<Acc: Accumulators>(acc: &mut Acc, _spare: &mut Acc, _total: &mut Acc, _a_desc: u64, b_desc: u64, a_row: u32, offset: u32, kt: i32, _ktiles: i32) {
        // SAFETY: the whole warpgroup, as the caller guarantees.
        unsafe { acc.wait_0() };
        let at = (offset >> 4) as u64;
        let mut a = [[0u32; 4]; 4];
        unroll!(4: 4, ks => {
            // SAFETY: as in `Tf32x3::k_tile`.
            let raw = unsafe { plane_fragment(a_row + offset, ks) };
            unroll!(4: 4, i => {
                a[ks][i] = raw[i] & TF32_MASK;
            });
            pin4(&mut a[ks]);
        });
        // SAFETY (the blocks below): as the caller guarantees; the fence follows every write of
        // the fragments and precedes the wgmmas that read them.
        unsafe { acc.fence() };
        unroll!(4: 4, ks => {
            let scale = if ks == 0 { (kt != 0) as u32 } else { 1 };
            unsafe { acc.mma_tf32_ra(a[ks], b_desc + at + ks as u64 * DESC_K16, scale) };
        });
        unsafe { commit_group() };
    }
}

/// The bits of an fp32 value the tensor cores read as tf32: sign, exponent, 10 mantissa bits.
const TF32_MASK: u32 = 0xffff_e000;

/// A thread's tf32 A fragment of step `ks` (8 channels) from a K-major A tile at `a` (this
/// thread's `ldmatrix` row, [`a_row`], in the stage): `ldmatrix.x4` on fp32 rows gives it
/// exactly (8x8 "b16" matrices are 8 rows of 4 fp32, lane l receiving row l/4, element l%4).
/// The thread's row sits at lane%8 within its 8-row swizzle group; its 16-byte chunk of step
/// ks is 2ks (matrices 0, 1) or 2ks + 1 (2, 3).
///
/// # Safety
/// The whole warp together; `a` as described, the tile visible to this thread.
#[inline(always)]
unsafe fn row_fragment(a: u32, ks: usize) -> [u32; 4] {
    let lane = thread_x() as u32 % 32;
    let (r7, half) = (lane % 8, lane / 16);
    let chunk = 2 * ks as u32 + half;
    // SAFETY: a 16-byte aligned row chunk of the stage's A tile, as the caller guarantees.
    unsafe { ldmatrix_x4(a + ((chunk ^ r7) << 4)) }
}

/// Bytes of one NCHW plane copy under `Producer::PlanePixels`: 32 channel rows of 32 fp32
/// pixels, 128B-swizzled (a block tile's A tile is four, pixels 0-31, 32-63, ...).
const PIXEL_COPY_BYTES: u32 = (PLANE_PIXEL_COPY * ROW_BYTES) as u32;

/// The shared address of a thread's first A element under `Producer::PlanePixels`
/// ([`plane_fragment`]), the ring at `smem`: GEMM row (pixel) m = 64cw + 16warp + lane/4 lies
/// in copy m / 32, channel row lane%4, its 4-byte word (m % 4) of whichever 16-byte chunk the
/// swizzle gives.
#[inline(always)]
fn plane_a_base(smem: u32, cw: u32, tid: u32) -> u32 {
    let (warp, lane) = ((tid % WARPGROUP as u32) / 32, tid % 32);
    smem + (2 * cw + warp / 2) * PIXEL_COPY_BYTES + (lane % 4) * ROW_BYTES as u32 + (lane / 4 % 4) * 4
}

/// A thread's tf32 A fragment of step `ks` under `Producer::PlanePixels`: four 4-byte loads
/// from the pixel-major copies (`a`: [`plane_a_base`] in the stage). Register i holds GEMM row
/// m + 8(i%2) (m = this thread's, [`plane_a_base`]) and channel 8ks + lane%4 + 4(i/2), the tf32
/// A layout of `wgmma` m64nNk8. Channel row k of a copy holds its 32 pixels in 16-byte chunks,
/// chunk c at c ^ (k % 8) (128B swizzle), so the element is at row k, chunk (p/4) ^ (k%8), word
/// p%4 of the pixel p in the copy; p/4 = 4(warp%2) + lane/16 + 2(i%2) and k%8 = lane%4 + 4(i/2),
/// whose XOR is the thread's `s` XOR the register's own bits. (A warp's load reads 8 chunks
/// of 4 channel rows, each twice: 2-way bank conflicts, which the layout's contiguous output
/// columns are worth: the alternative orders of rows split each stored column in halves.)
///
/// # Safety
/// The whole warp together; `a` as described, the tile visible to this thread.
#[inline(always)]
unsafe fn plane_fragment(a: u32, ks: usize) -> [u32; 4] {
    let tid = thread_x() as u32;
    let (warp, lane) = ((tid % WARPGROUP as u32) / 32, tid % 32);
    let s = (4 * (warp % 2) + lane / 16) ^ (lane % 4);
    let mut v = [0u32; 4];
    unroll!(4: 4, i => {
        let own = (2 * (i as u32 % 2)) | (4 * (i as u32 / 2));
        // SAFETY: a 4-byte word of the stage's A tile: channel row 8ks + lane%4 + 4(i/2) of the
        // thread's copy, as the caller guarantees.
        v[i] = unsafe { ld_shared_u32(a + ks as u32 * 8 * ROW_BYTES as u32 + (i as u32 / 2) * 4 * ROW_BYTES as u32 + ((s ^ own) << 4)) };
    });
    v
}

/// `total += acc`, element by element in fp32.
#[inline(always)]
fn add<Acc: Accumulators>(total: &mut Acc, acc: &Acc) {
    unroll!(32: Acc::N / 8, j => {
        unroll!(4: 4, e => {
            total[4 * j + e] += acc[4 * j + e];
        });
    });
}
