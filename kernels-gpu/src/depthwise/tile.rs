//! Depthwise convolution on NHWC data, step 3: a block stages an input tile in shared memory and
//! its threads compute from there. Step 2 ([`super::strip`]) reads each thread's rows from global
//! memory, the rows and columns its neighbours also read coming again through L1 and L2, one row
//! at a time; here a block's `cp.async` copies bring the tile's pixels once, zero-filled outside
//! the image (the padding costs no test), and a persistent block starts copying its next tile
//! into the second stage before it computes this one, so the copies of one tile run under the
//! arithmetic of the other.
//!
//! The block is `blockDim` = (channel groups, column groups, strips), chosen by the host
//! (`convrs_spec::depthwise::TileShape`): a thread computes [`CHANNELS`] channels of a `ROWS` x
//! `COLS` block of outputs through the strip's sums ([`super::strip::sums`]), its rows read from
//! the stage. A stage holds the tile's pixels row-major, each `pitch` bytes (the block's
//! channels), in the slots `convrs_spec::depthwise::tile_slot` gives (at 64-byte pixels,
//! neighbouring threads' pixels would share a half of the banks).

use convrs_spec::depthwise::{tile_pitch, tile_slot, tile_slots, tile_span, NHWC_VEC};

use crate::prelude::elem::{widen16, Elem};
use crate::prelude::*;

use super::strip::{store, sums};

/// Channels a thread computes: one vector access.
const CHANNELS: usize = NHWC_VEC as usize;

/// Tile `t` (of `n * channel blocks * tiles_p * tiles_q`, columns fastest) computes outputs (n,
/// p0..p0 + rows * ROWS, q0..q0 + cols * COLS, c0..c0 + groups * 4) from an R = S = `TAPS` filter
/// at stride `STRIDE` in both axes (dilation 1); block b takes tiles b, b + gridDim.x, ...
///
/// # Safety
/// `x`, `w`, `y` hold N*H*W*C, R*S*K and N*P*Q*K elements (y of `sh.y_bits` bits), K = C is a
/// multiple of 16 bytes of elements, R = S = `TAPS`, the strides are `STRIDE` and the dilations
/// 1, the buffers are 16-byte aligned, `y` does not alias the inputs, and the launch gives
/// `convrs_spec::depthwise::tile_smem_bytes` of dynamic shared memory for its `blockDim`.
#[inline(always)]
pub unsafe fn conv<E: Elem, const TAPS: usize, const STRIDE: usize, const ROWS: usize, const COLS: usize>(x: *const E::Raw, w: *const E::Raw, y: *mut f32, sh: ConvShape) {
    let g = Geometry::new::<E, TAPS, STRIDE, ROWS, COLS>(&sh);
    let base = dynamic_smem_u32();
    let mut tile = block_x();
    // Every block runs the same trip count of barriers: the tile index is the block's.
    let mut here = g.place::<ROWS, COLS>(tile);
    if tile < g.tiles {
        // SAFETY: stage 0 of the launch's shared memory; tile < tiles.
        unsafe { g.issue::<E, STRIDE, COLS>(x, &sh, here, base) };
    }
    let mut stage = 0;
    while tile < g.tiles {
        let next = tile + grid_dim_x();
        let there = g.place::<ROWS, COLS>(next);
        if next < g.tiles {
            // SAFETY: the other stage, whose last readers passed the barrier that ended the
            // previous iteration; next < tiles.
            unsafe { g.issue::<E, STRIDE, COLS>(x, &sh, there, base + (stage ^ 1) * g.stage_bytes) };
        } else {
            // An empty group, so that waiting for all but the newest group waits for this tile.
            cp_async_commit();
        }
        cp_async_wait_group(1);
        sync_threads();
        // SAFETY: this tile's stage has landed (the wait and the barrier); the caller's buffers.
        unsafe { g.compute::<E, TAPS, STRIDE, ROWS, COLS>(w, y, &sh, here, base + stage * g.stage_bytes) };
        sync_threads();
        (tile, here) = (next, there);
        stage ^= 1;
    }
}

/// A tile's image, channel block, and first output row and column: computed once a tile, when
/// its copies are issued, and kept for its arithmetic.
#[derive(Clone, Copy)]
struct Place {
    n: i32,
    cb: i32,
    p0: i32,
    q0: i32,
}

/// The launch's tiling, from the shape and `blockDim`.
struct Geometry {
    /// Channel groups, column groups, strips of a block (`blockDim`).
    groups: i32,
    cols: i32,
    rows: i32,
    /// This thread's index in the block.
    tid: i32,
    /// The tile's input span (pixels) and a pixel's bytes in a stage.
    span_y: i32,
    span_x: i32,
    pitch: u32,
    stage_bytes: u32,
    /// Channel blocks, tiles along P and Q, tiles in all.
    channel_blocks: i32,
    tiles_p: i32,
    tiles_q: i32,
    tiles: i32,
}

impl Geometry {
    #[inline(always)]
    fn new<E: Elem, const TAPS: usize, const STRIDE: usize, const ROWS: usize, const COLS: usize>(sh: &ConvShape) -> Self {
        let (groups, cols, rows) = (block_dim_x(), block_dim_y(), block_dim_z());
        let elem = core::mem::size_of::<E::Raw>() as u32;
        let (span_y, span_x) = (tile_span(rows as u32, ROWS as u32, STRIDE as u32, TAPS as u32), tile_span(cols as u32, COLS as u32, STRIDE as u32, TAPS as u32));
        let pitch = tile_pitch(groups as u32, elem);
        let channel_blocks = convrs_spec::depthwise_tiles!(sh.c, groups * CHANNELS as i32);
        let tiles_p = convrs_spec::depthwise_tiles!(sh.p, rows * ROWS as i32);
        let tiles_q = convrs_spec::depthwise_tiles!(sh.q, cols * COLS as i32);
        Geometry {
            groups,
            cols,
            rows,
            tid: (thread_z() * cols + thread_y()) * groups + thread_x(),
            span_y: span_y as i32,
            span_x: span_x as i32,
            pitch,
            stage_bytes: tile_slots(span_y, span_x) * pitch,
            channel_blocks,
            tiles_p,
            tiles_q,
            tiles: sh.n * channel_blocks * tiles_p * tiles_q,
        }
    }

    /// Tile `t`'s place (meaningless past the last tile, and never used there).
    #[inline(always)]
    fn place<const ROWS: usize, const COLS: usize>(&self, t: i32) -> Place {
        // SAFETY (divmods): the tile counts are at least 1.
        let (rest, tq) = unsafe { divmod(t, self.tiles_q) };
        let (rest, tp) = unsafe { divmod(rest, self.tiles_p) };
        let (n, cb) = unsafe { divmod(rest, self.channel_blocks) };
        Place { n, cb, p0: tp * self.rows * ROWS as i32, q0: tq * self.cols * COLS as i32 }
    }

    /// Starts the copies of the input of the tile `at` into the stage at `stage` and commits them
    /// as one group: 16-byte chunks, zero-filled outside the image and past C. A pixel's chunks
    /// (a power of two) divide the block's threads (a multiple of the channel groups), so each
    /// thread copies one chunk of every `threads / chunks`-th pixel, its row and column stepped
    /// without a division.
    ///
    /// # Safety
    /// `stage` is a stage of this launch's shared memory that no thread reads until the group has
    /// landed and a barrier followed; `at` is a tile's; `x` holds the N*H*W*C input, 16-byte
    /// aligned, C a multiple of 16 bytes of elements.
    #[inline(always)]
    unsafe fn issue<E: Elem, const STRIDE: usize, const COLS: usize>(&self, x: *const E::Raw, sh: &ConvShape, at: Place, stage: u32) {
        let Place { n, cb, p0, q0 } = at;
        let (iy0, ix0) = (p0 * STRIDE as i32 - sh.pad_h, q0 * STRIDE as i32 - sh.pad_w);
        let chunk_elems = 16 / core::mem::size_of::<E::Raw>() as i32;
        // Chunks a pixel (the groups are a power of two, so are these), and pixels a pass.
        let shift = (self.pitch / 16).trailing_zeros();
        let chunk = self.tid & ((1 << shift) - 1);
        let c = cb * self.groups * CHANNELS as i32 + chunk * chunk_elems;
        let per_pass = (self.groups * self.cols * self.rows) >> shift;
        // SAFETY: the span is at least 1.
        let (pass_rows, pass_cols) = unsafe { divmod(per_pass, self.span_x) };
        let mut px = self.tid >> shift;
        // SAFETY: as above.
        let (mut row, mut col) = unsafe { divmod(px, self.span_x) };
        let image = x.wrapping_add((n * sh.h * sh.w * sh.c) as usize);
        let step = (COLS * STRIDE) as u32;
        let pixels = self.span_y * self.span_x;
        while px < pixels {
            let (iy, ix) = (iy0 + row, ix0 + col);
            let inside = (iy as u32) < sh.h as u32 && (ix as u32) < sh.w as u32 && c < sh.c;
            let src = if inside { image.wrapping_add(((iy * sh.w + ix) * sh.c + c) as usize) } else { x };
            let dst = stage + tile_slot(px as u32, self.pitch, step) * self.pitch + chunk as u32 * 16;
            // SAFETY: `dst` is a 16-byte chunk of the stage (a slot below `tile_slots`, pitch a
            // multiple of 64); inside the image the chunk is 16 aligned bytes of the input (C a
            // multiple of the chunk), else nothing is read and the chunk is zero-filled.
            unsafe { cp_async_16(dst, src as *const f32, if inside { 16 } else { 0 }) };
            px += per_pass;
            row += pass_rows;
            col += pass_cols;
            if col >= self.span_x {
                col -= self.span_x;
                row += 1;
            }
        }
        cp_async_commit();
    }

    /// Computes this thread's outputs of the tile `at` from the stage at `stage` and stores those
    /// inside the output. Every thread of the block computes (a group past C or a block past P
    /// or Q from zeros or pixels it does not store), so that the warps stay converged through
    /// the row loop's warp barriers.
    ///
    /// # Safety
    /// The stage holds that tile's input, landed and made visible by a barrier; the caller's
    /// buffers as [`conv`] requires; the whole warp calls it.
    #[inline(always)]
    unsafe fn compute<E: Elem, const TAPS: usize, const STRIDE: usize, const ROWS: usize, const COLS: usize>(&self, w: *const E::Raw, y: *mut f32, sh: &ConvShape, at: Place, stage: u32) {
        let Place { n, cb, p0, q0 } = at;
        let (group, cq, strip) = (thread_x(), thread_y(), thread_z());
        let k0 = (cb * self.groups + group) * CHANNELS as i32;
        let (p0, q0) = (p0 + strip * ROWS as i32, q0 + cq * COLS as i32);
        let step = (COLS * STRIDE) as u32;
        let (ty0, tx0) = (strip * (ROWS * STRIDE) as i32, cq * (COLS * STRIDE) as i32);
        let lane_bytes = group as u32 * (CHANNELS * core::mem::size_of::<E::Raw>()) as u32;
        let row = |i: usize| {
            // The warp barrier keeps each row's shared loads after the previous row's (with
            // `settle`, the 3x3 entries fit the launch bounds' 128 registers without spilling).
            sync_warp();
            let first = (ty0 + i as i32) * self.span_x + tx0;
            let mut px = [[0.0f32; CHANNELS]; 16];
            unroll!(16: (COLS - 1) * STRIDE + TAPS, c => {
                let at = stage + tile_slot((first + c as i32) as u32, self.pitch, step) * self.pitch + lane_bytes;
                // SAFETY: pixel (ty0 + i, tx0 + c) of the tile is inside its span (every thread
                // block's window lies in the tile's), and the group's channels are aligned in
                // its slot.
                px[c] = unsafe { load_shared4::<E>(at) };
            });
            px
        };
        // A group past C computes with group 0's filter and stores nothing.
        let k_taps = if k0 < sh.k { k0 } else { 0 };
        // SAFETY: channels k_taps..k_taps + 4 of the RSK filter, 8- or 16-byte aligned as K is a
        // multiple of 4; the outputs as `sums` computed them, those of channels below K stored.
        unsafe {
            let mut acc = sums::<E, TAPS, STRIDE, ROWS, COLS, CHANNELS>(w.wrapping_add(k_taps as usize), sh.k as usize, row);
            settle(&mut acc);
            if k0 < sh.k {
                store::<E, ROWS, COLS>(y, sh, acc, n, p0, q0, k0);
            }
        }
    }
}

/// Makes every sum a value the thread has computed here, whatever follows: LLVM otherwise sinks
/// each output's FMAs into its store's branch (taken only inside P x Q), which needs every row's
/// window loaded first (all 24 loads of a 3x3 entry's rows live at once: 211 registers).
#[inline(always)]
fn settle<const ROWS: usize, const COLS: usize>(acc: &mut [[[f32; CHANNELS]; COLS]; ROWS]) {
    unroll!(4: ROWS, j => {
        unroll!(8: COLS, c => {
            unroll!(4: CHANNELS, v => {
                // SAFETY: an empty asm statement with a register operand: it reads and writes no
                // memory; not `pure`, so it stays where it is and its operand is computed first.
                unsafe { core::arch::asm!("// {v}", v = inout(reg32) acc[j][c][v], options(nomem, nostack, preserves_flags)) };
            });
        });
    });
}

/// Four consecutive elements of a stage, widened: one 16-byte (fp32) or 8-byte (16-bit) access.
///
/// # Safety
/// `at` is shared memory of this block holding four elements, aligned to the access, landed and
/// made visible by a barrier.
#[inline(always)]
unsafe fn load_shared4<E: Elem>(at: u32) -> [f32; 4] {
    if core::mem::size_of::<E::Raw>() == 4 {
        // SAFETY: the caller's guarantee, 16 bytes.
        unsafe { ld_shared_f32x4(at) }.0
    } else {
        // SAFETY: the caller's guarantee, 8 bytes.
        let [a, b] = unsafe { ld_shared_u32x2(at) };
        let h = [a as u16, (a >> 16) as u16, b as u16, (b >> 16) as u16];
        h.map(|v| if E::BF16 { widen16::<true>(v) } else { widen16::<false>(v) })
    }
}
