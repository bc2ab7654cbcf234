//! Layout transforms on the device: the tensor copies that bring device tensors to a kernel's
//! layout (zero-padded to its channel multiples) and its output back to the caller's layout.
//! 1. `relayout`: any plain layout pair, one thread per destination element; the index math is
//!    `convrs_spec::transform::source_offset`, which the host's tests replay.
//! 2. `transpose`: the pairs that are a batched transpose (NCHW <-> NHWC), through a padded
//!    shared-memory tile so that both sides are read and written a warp-wide run at a time;
//!    the index math is `convrs_spec::transform::Transpose`. `transpose_sampled` reads NCHW
//!    planes on a stride's grid as it goes (a strided 1x1 layer's input for an NHWC kernel).
//! 3. `pad_channels`: NCHW -> NHWC for at most 8 channels padded to 8 (16-bit), one thread and
//!    one 16-byte store per pixel; `convrs_spec::transform::PadChannels`.
//! 4. `split_tf32`: an fp32 filter into the TF32 high parts and remainders the 3xTF32 kernels
//!    read; `convrs_spec::transform::SplitTf32`.
//! 5. `expand_groups`: a grouped KRSC filter as the filter of fewer, wider groups, block
//!    diagonal; `convrs_spec::transform::ExpandGroups`.
//! 6. `sample`: NCHW planes sampled on a stride's grid (a strided 1x1 layer's input for the
//!    stride-1 plane kernels), loads coalesced along a warp's elements, 16-byte stores of a
//!    `SAMPLE_RUN` elements a lane through shared memory, divisions by multiplication;
//!    `convrs_spec::transform::Sample`.

use convrs_spec::transform::{
    source_offset, transpose_smem_bytes, ExpandGroups, PadChannels, Relayout, Sample, SplitTf32, Transpose, BLOCK_THREADS, PAD_BLOCK_THREADS, PAD_CHANNELS, SAMPLE_RUN,
    TRANSPOSE_BLOCK, TRANSPOSE_TILE,
};

use crate::prelude::matrix::{store_global_v4, tf32_rna};
use crate::prelude::*;

/// Copies destination element `blockIdx.x * BLOCK_THREADS + threadIdx.x` from its source
/// element, or writes zero where it is padding.
///
/// # Safety
/// `dst` holds `r.total` elements; every source offset `source_offset` yields for them lies in
/// `src`; the two do not overlap.
#[inline(always)]
unsafe fn relayout<T: Copy + Default>(dst: *mut T, src: *const T, r: Relayout) {
    let o = block_x() * BLOCK_THREADS as i32 + thread_x();
    if o >= r.total {
        return;
    }
    // SAFETY: o < total, and the source offset is in `src`, as the caller guarantees.
    unsafe { *dst.add(o as usize) = source_offset(&r, o).map_or(T::default(), |s| *src.add(s as usize)) };
}


/// An element the transpose moves through shared memory.
trait Word: Copy + Default {
    /// # Safety
    /// As [`st_shared_u16`] for this size.
    unsafe fn st_shared(addr: u32, v: Self);
    /// # Safety
    /// As [`ld_shared_u16`] for this size.
    unsafe fn ld_shared(addr: u32) -> Self;
    /// Copies `SAMPLE_RUN` elements from shared memory at `addr` to `p`, in 16-byte vectors.
    ///
    /// # Safety
    /// `addr` is 16-byte aligned shared memory holding them; `p` is 16-byte aligned, and its
    /// `SAMPLE_RUN` elements are valid and this thread's alone.
    unsafe fn copy_run(p: *mut Self, addr: u32);
}

impl Word for u16 {
    unsafe fn st_shared(addr: u32, v: Self) {
        // SAFETY: the caller's guarantee, passed on.
        unsafe { st_shared_u16(addr, v as u32) }
    }
    unsafe fn ld_shared(addr: u32) -> Self {
        // SAFETY: the caller's guarantee, passed on.
        unsafe { ld_shared_u16(addr) as u16 }
    }
    unsafe fn copy_run(p: *mut Self, addr: u32) {
        // SAFETY: the caller's guarantee: 8 elements of 2 bytes, one aligned 16-byte vector.
        unsafe { store_global_v4(p as *mut u32, ld_shared_u32x4(addr)) }
    }
}

impl Word for u32 {
    unsafe fn st_shared(addr: u32, v: Self) {
        // SAFETY: the caller's guarantee, passed on.
        unsafe { st_shared_u32(addr, v) }
    }
    unsafe fn ld_shared(addr: u32) -> Self {
        // SAFETY: the caller's guarantee, passed on.
        unsafe { ld_shared_u32(addr) }
    }
    unsafe fn copy_run(p: *mut Self, addr: u32) {
        // SAFETY: the caller's guarantee: 8 elements of 4 bytes, two aligned 16-byte vectors.
        unsafe {
            store_global_v4(p, ld_shared_u32x4(addr));
            store_global_v4(p.add(4), ld_shared_u32x4(addr + 16));
        }
    }
}

/// Rows of the tile one thread moves, and columns (a warp covers 32 at a time).
const ROWS_PER_THREAD: usize = (TRANSPOSE_TILE / TRANSPOSE_BLOCK.1) as usize;
const COLS_PER_THREAD: usize = (TRANSPOSE_TILE / TRANSPOSE_BLOCK.0) as usize;
const PER_THREAD: usize = ROWS_PER_THREAD * COLS_PER_THREAD;

/// Moves the destination tile at (x: `blockIdx.x`, y: `blockIdx.y`) of batch `blockIdx.z`:
/// reads the source's rows x0.. along their columns y0.. (coalesced), stores them as tile rows,
/// then writes tile columns as destination rows (coalesced). Each phase first gathers all of
/// the thread's values, so its loads are in flight together.
///
/// # Safety
/// Launched with `TRANSPOSE_BLOCK` threads and `transpose_smem_bytes(size_of::<T>())` bytes of
/// dynamic shared memory, a grid covering `t.cols` x `t.rows` by `TRANSPOSE_TILE` and the
/// batches in z; `dst` holds every offset `t.dest` gives inside that, `src` every one
/// `t.source` gives; the two do not overlap.
#[inline(always)]
unsafe fn transpose<T: Word>(dst: *mut T, src: *const T, t: Transpose) {
    // SAFETY: the caller's guarantee, passed on.
    unsafe { transpose_tile::<T, false>(dst, src, t) }
}

/// [`transpose`] reading source rows on the sampling grid (`Transpose::source_sampled`).
///
/// # Safety
/// As [`transpose`], with every offset `t.source_sampled` gives inside `src`.
#[inline(always)]
unsafe fn transpose_sampled<T: Word>(dst: *mut T, src: *const T, t: Transpose) {
    // SAFETY: the caller's guarantee, passed on.
    unsafe { transpose_tile::<T, true>(dst, src, t) }
}

/// The transpose's tile, its source rows read as they are or, `SAMPLED`, on the grid.
///
/// # Safety
/// As [`transpose`] (`SAMPLED`: [`transpose_sampled`]).
#[inline(always)]
unsafe fn transpose_tile<T: Word, const SAMPLED: bool>(dst: *mut T, src: *const T, t: Transpose) {
    let size = core::mem::size_of::<T>() as u32;
    let row_bytes = transpose_smem_bytes(size) / TRANSPOSE_TILE;
    let tile = TRANSPOSE_TILE as i32;
    let (tx, ty) = (thread_x(), thread_y());
    let (x0, y0, b) = (block_x() * tile, block_y() * tile, block_z());
    let smem = dynamic_smem_u32();
    let at = |row: i32, col: i32| smem + row as u32 * row_bytes + col as u32 * size;
    // Tile (r, c) holds destination (y0 + c, x0 + r), i.e. source row x0 + r, column y0 + c.
    let mut v = [T::default(); PER_THREAD];
    for i in 0..ROWS_PER_THREAD {
        for j in 0..COLS_PER_THREAD {
            let (r, c) = (ty + (i as i32) * TRANSPOSE_BLOCK.1 as i32, tx + (j as i32) * 32);
            let s = if SAMPLED { t.source_sampled(b, y0 + c, x0 + r) } else { t.source(b, y0 + c, x0 + r) };
            if let Some(s) = s {
                // SAFETY: `t.source` gives offsets inside `src`, as the caller guarantees.
                v[i * COLS_PER_THREAD + j] = unsafe { *src.add(s as usize) };
            }
        }
    }
    for i in 0..ROWS_PER_THREAD {
        for j in 0..COLS_PER_THREAD {
            let (r, c) = (ty + (i as i32) * TRANSPOSE_BLOCK.1 as i32, tx + (j as i32) * 32);
            // SAFETY: r, c < TILE: inside the tile; each (r, c) is this thread's alone.
            unsafe { T::st_shared(at(r, c), v[i * COLS_PER_THREAD + j]) };
        }
    }
    sync_threads();
    for i in 0..ROWS_PER_THREAD {
        for j in 0..COLS_PER_THREAD {
            let (r, c) = (ty + (i as i32) * TRANSPOSE_BLOCK.1 as i32, tx + (j as i32) * 32);
            // SAFETY: inside the tile, written by the block before the barrier.
            v[i * COLS_PER_THREAD + j] = unsafe { T::ld_shared(at(c, r)) };
        }
    }
    for i in 0..ROWS_PER_THREAD {
        for j in 0..COLS_PER_THREAD {
            let (y, x) = (y0 + ty + (i as i32) * TRANSPOSE_BLOCK.1 as i32, x0 + tx + (j as i32) * 32);
            if y < t.rows && x < t.cols {
                // SAFETY: (b, y, x) is inside the destination, as the caller guarantees.
                unsafe { *dst.add(t.dest(b, y, x) as usize) = v[i * COLS_PER_THREAD + j] };
            }
        }
    }
}


/// Writes destination pixel `blockIdx.x * PAD_BLOCK_THREADS + threadIdx.x` of image `blockIdx.y`:
/// its (up to) 8 channels gathered from the channel planes (consecutive threads read consecutive
/// pixels of a plane), the rest zeros, stored as one 16-byte vector.
///
/// # Safety
/// Launched with `PAD_BLOCK_THREADS` threads, a grid covering `t.pixels` in x and the destination
/// images in y; `dst` is 16-byte aligned and holds `PAD_CHANNELS` elements per pixel of every
/// image, `src` every offset `t.source` gives; the two do not overlap.
#[inline(always)]
unsafe fn pad_channels(dst: *mut u16, src: *const u16, t: PadChannels) {
    let p = block_x() * PAD_BLOCK_THREADS as i32 + thread_x();
    if p >= t.pixels {
        return;
    }
    let b = block_y();
    let mut v = [0u16; PAD_CHANNELS as usize];
    for (c, e) in v.iter_mut().enumerate() {
        if let Some(s) = t.source(b, p, c as i32) {
            // SAFETY: `t.source` gives offsets inside `src`, as the caller guarantees.
            *e = unsafe { *src.add(s as usize) };
        }
    }
    let word = |i: usize| f32::from_bits(v[2 * i] as u32 | (v[2 * i + 1] as u32) << 16);
    // SAFETY: the pixel's 8 elements start 16-byte aligned (dst is, and each pixel is 16 bytes)
    // and are this thread's alone.
    unsafe { store_global_f32x4(dst.add(t.dest(b, p) as usize) as *mut f32, F32x4([word(0), word(1), word(2), word(3)])) };
}

/// Declares entry `$name` for elements of type `$t`: destination and source pointers, then the
/// `i32` fields `convrs_spec::$fields!` lists, gathered into `$args` for the body `$body`.
macro_rules! transform_entry {
    ($fields:ident, $name:ident, $t:ty, $args:ident, $body:ident) => {
        convrs_spec::$fields!(transform_entry, [@params $name, $t, $args, $body]);
    };
    ([@params $name:ident, $t:ty, $args:ident, $body:ident] $($field:ident $doc:literal),*) => {
        /// A layout transform of elements of this size (see the module docs).
        ///
        /// # Safety
        #[doc = concat!("As [`", stringify!($body), "`], with the arguments of `convrs_spec::transform::", stringify!($args), "::to_args`.")]
        #[unsafe(no_mangle)]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "ptx-kernel" fn $name(dst: *mut $t, src: *const $t, $($field: i32),*) {
            crate::prelude::entry_wait();
            // SAFETY: the host launches this with buffers, shape and arguments as documented.
            unsafe { $body(dst, src, $args { $($field),* }) }
        }
    };
}

/// Splits source element `blockIdx.x * BLOCK_THREADS + threadIdx.x` into its TF32 high part
/// (`dst[i]`) and remainder (`dst[n + i]`); `x - hi` is exact in fp32.
///
/// # Safety
/// `src` holds `a.n` elements and `dst` 2 `a.n`, not overlapping.
#[inline(always)]
unsafe fn split(dst: *mut u32, src: *const u32, a: SplitTf32) {
    let i = block_x() * BLOCK_THREADS as i32 + thread_x();
    if i >= a.n {
        return;
    }
    // SAFETY: i < n, as the caller guarantees the buffers.
    unsafe {
        let v = *src.add(i as usize);
        let hi = tf32_rna(v);
        *dst.add(i as usize) = hi;
        *dst.add((a.n + i) as usize) = tf32_rna((f32::from_bits(v) - f32::from_bits(hi)).to_bits());
    }
}

/// Copies destination element `blockIdx.x * BLOCK_THREADS + threadIdx.x` of the expanded filter
/// from its source element, or writes zero outside its row's group.
///
/// # Safety
/// `dst` holds `e.total` elements and `src` the grouped filter (`e.total / e.merge`), not
/// overlapping.
#[inline(always)]
unsafe fn expand_groups<T: Copy + Default>(dst: *mut T, src: *const T, e: ExpandGroups) {
    let o = block_x() * BLOCK_THREADS as i32 + thread_x();
    if o >= e.total {
        return;
    }
    // SAFETY: o < total; the source offset lies in the grouped filter, as the caller guarantees.
    unsafe { *dst.add(o as usize) = e.source(o).map_or(T::default(), |s| *src.add(s as usize)) };
}

/// Copies the `32 * SAMPLE_RUN` destination elements of each warp from the sampling grid: load
/// `i` of lane `L` reads element `32 i + L` of the warp's (consecutive lanes consecutive
/// elements, the run's loads all in flight together), each lands in the warp's slice of shared
/// memory, and lane `L` stores elements `SAMPLE_RUN L ..` as 16-byte vectors (element by
/// element in a last partial run). One element a thread kept too few bytes in flight to reach
/// the memory's rate; a run of consecutive elements a thread made each load a warp-wide gather.
///
/// # Safety
/// Launched with `BLOCK_THREADS` threads and `sample_smem_bytes(size_of::<T>())` bytes of
/// dynamic shared memory; `dst` is 16-byte aligned and holds `a.total` elements, `src` every
/// source element they sample; the two do not overlap.
#[inline(always)]
unsafe fn sample<T: Word>(dst: *mut T, src: *const T, a: Sample) {
    let (run, size) = (SAMPLE_RUN as i32, core::mem::size_of::<T>() as u32);
    let (lane, warp) = (thread_x() % 32, thread_x() / 32);
    let base = (block_x() * BLOCK_THREADS as i32 + warp * 32) * run;
    let slice = dynamic_smem_u32() + (warp * 32 * run) as u32 * size;
    if base >= a.total {
        return;
    }
    let mut v = [T::default(); SAMPLE_RUN as usize];
    for (i, e) in v.iter_mut().enumerate() {
        if let Some(s) = a.source(base + i as i32 * 32 + lane) {
            // SAFETY: the element is below total and s in `src`, as the caller guarantees.
            *e = unsafe { *src.add(s as usize) };
        }
    }
    for (i, &e) in v.iter().enumerate() {
        // SAFETY: inside the warp's slice (32 * SAMPLE_RUN elements); each slot this lane's.
        unsafe { T::st_shared(slice + (i as u32 * 32 + lane as u32) * size, e) };
    }
    sync_warp();
    let o0 = base + lane * run;
    let mine = slice + (lane * run) as u32 * size;
    if o0 + run <= a.total {
        // SAFETY: the run lies in `dst` and is this lane's; o0 is a multiple of SAMPLE_RUN, so
        // its address is 16-byte aligned (dst is, and a run is 16 or 32 bytes), and so is
        // `mine` (the dynamic shared memory is, and each lane's run is 16 or 32 bytes).
        unsafe { T::copy_run(dst.add(o0 as usize), mine) };
    } else {
        for i in 0..run {
            if o0 + i < a.total {
                // SAFETY: o0 + i < total: inside `dst`, this lane's alone; its slot was
                // written before the warp's barrier.
                unsafe { *dst.add((o0 + i) as usize) = T::ld_shared(mine + i as u32 * size) };
            }
        }
    }
}

transform_entry!(relayout_fields, relayout_b16, u16, Relayout, relayout);
transform_entry!(expand_groups_fields, expand_groups_b16, u16, ExpandGroups, expand_groups);
transform_entry!(expand_groups_fields, expand_groups_b32, u32, ExpandGroups, expand_groups);
transform_entry!(relayout_fields, relayout_b32, u32, Relayout, relayout);
transform_entry!(transpose_fields, transpose_b16, u16, Transpose, transpose);
transform_entry!(transpose_fields, transpose_b32, u32, Transpose, transpose);
transform_entry!(transpose_fields, transpose_sampled_b16, u16, Transpose, transpose_sampled);
transform_entry!(transpose_fields, transpose_sampled_b32, u32, Transpose, transpose_sampled);
transform_entry!(pad_channels_fields, pad_channels_b16, u16, PadChannels, pad_channels);
transform_entry!(split_tf32_fields, split_tf32, u32, SplitTf32, split);
transform_entry!(sample_fields, sample_b16, u16, Sample, sample);
transform_entry!(sample_fields, sample_b32, u32, Sample, sample);
