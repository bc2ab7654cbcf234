//! Tensors that live on the device, in the layout the caller holds them (NCHW, NHWC or HWCN),
//! and [`conv2d_device`], which runs a kernel on them without a trip through the host: the
//! operands are brought to the kernel's layout (zero-padded to its channel multiples) and the
//! output back to the caller's by the transform kernels, written in Rust like the rest: a tiled
//! transpose for NCHW <-> NHWC (the pairs a PyTorch-layout caller of the NHWC kernels needs), the
//! one-thread-per-element `relayout` for every other pair of plain layouts. [`conv2d_device`]
//! plans and transforms the filter on every call; a caller running a layer many times keeps a
//! [`DeviceConv`] instead, which transforms the filter once.
//!
//! ```no_run
//! use convrs::device_tensor::{conv2d_device, conv2d_device_to, DeviceTensor};
//! use convrs::{Algorithm, Conv2d, Gpu, Layout, Tensor};
//! let gpu = Gpu::new(0)?;
//! let p = Conv2d::new(8, 3, 224, 224, 64, 7, 7).with_pad(3).with_stride(2);
//! let x = DeviceTensor::upload(&gpu, &Tensor::random(p.input_shape(), Layout::Nchw, 1)?.map(half::f16::from_f32))?;
//! let w = DeviceTensor::upload(&gpu, &Tensor::random(p.filter_shape(), Layout::Nchw, 2)?.map(half::f16::from_f32))?;
//! let y = conv2d_device(&gpu, Algorithm::Auto, &p, &x, &w, Layout::Nchw)?; // fp16, NCHW, on the device
//! assert_eq!(y.dims(), p.output_shape());
//! let y32: DeviceTensor<f32> = conv2d_device_to(&gpu, Algorithm::Auto, &p, &x, &w, Layout::Nhwc)?; // fp32 on request
//! # Ok::<(), convrs::Error>(())
//! ```

use cudarc::driver::{CudaSlice, DevicePtr, DeviceRepr, LaunchConfig, ValidAsZeroBits};
use convrs_spec::transform::{sample_smem_bytes, transpose_smem_bytes, ExpandGroups, PadChannels, Relayout, Sample, SplitTf32, Transpose, BLOCK_THREADS, PAD_BLOCK_THREADS, PAD_CHANNELS, SAMPLE_RUN, TRANSPOSE_BLOCK, TRANSPOSE_TILE};

use crate::gpu::{cuda_err, KernelArgs};
use crate::device_conv::DeviceConv;
use crate::{Algorithm, Conv2d, Element, Error, Gpu, Layout, Result, Tensor};

/// A tensor on the device: logical dims `[N, C, H, W]` (`[K, C, R, S]` for filters) in `layout`.
pub struct DeviceTensor<T> {
    data: CudaSlice<T>,
    dims: [usize; 4],
    layout: Layout,
}

impl<T: DeviceRepr + ValidAsZeroBits + Copy + Default> DeviceTensor<T> {
    /// Copies a host tensor to the device, in its layout.
    pub fn upload(gpu: &Gpu, t: &Tensor<T>) -> Result<Self> {
        Ok(DeviceTensor { data: gpu.upload(t.data())?, dims: t.dims(), layout: t.layout() })
    }

    /// Wraps a device buffer holding `dims` in `layout`.
    pub fn from_slice(data: CudaSlice<T>, dims: [usize; 4], layout: Layout) -> Result<Self> {
        layout.check_dims(dims)?;
        let len = dims.iter().product::<usize>();
        if data.len() != len {
            return Err(Error::BufferSize { tensor: "device tensor", expected: len, got: data.len() });
        }
        Ok(DeviceTensor { data, dims, layout })
    }

    /// Copies it back to the host (waits for the stream).
    pub fn download(&self, gpu: &Gpu) -> Result<Tensor<T>> {
        Tensor::new(self.dims, self.layout, gpu.download(&self.data)?)
    }

    pub fn dims(&self) -> [usize; 4] {
        self.dims
    }

    /// The device buffer, to write (its length and meaning stay).
    pub fn data_mut(&mut self) -> &mut CudaSlice<T> {
        &mut self.data
    }

    pub fn layout(&self) -> Layout {
        self.layout
    }

    pub fn data(&self) -> &CudaSlice<T> {
        &self.data
    }

    pub fn into_data(self) -> CudaSlice<T> {
        self.data
    }

    /// The same tensor in `layout` with dims `dims` (the first two may grow, zero-filled, or
    /// shrink, cropped; the last two must stay), copied on the device.
    pub fn relayout(&self, gpu: &Gpu, dims: [usize; 4], layout: Layout) -> Result<DeviceTensor<T>> {
        let mut out = gpu.alloc_zeros::<T>(dims.iter().product())?;
        relayout_into(gpu, &self.data, self.dims, self.layout, &mut out, dims, layout)?;
        Ok(DeviceTensor { data: out, dims, layout })
    }
}

/// Enqueues the copy of `src` (`src_dims` in `src_layout`) into `dst` (`dst_dims` in
/// `dst_layout`, zero-filled or cropped along the first two dims), on the device: 16-bit NCHW of
/// at most 8 channels into NHWC of 8 by `pad_channels_b16` ([`pad_channels_args`]), other pairs
/// that are a transpose by the tiled transpose ([`transpose_args`]), the rest by the element-wise
/// `relayout`.
pub fn relayout_into<T: DeviceRepr>(gpu: &Gpu, src: &CudaSlice<T>, src_dims: [usize; 4], src_layout: Layout, dst: &mut CudaSlice<T>, dst_dims: [usize; 4], dst_layout: Layout) -> Result<()> {
    // The padding kernel stores 16 bytes per pixel: 16-bit elements and a 16-byte aligned
    // destination (device allocations are; the check keeps that an observation, not a guess).
    if std::mem::size_of::<T>() == 2 {
        if let Some(t) = pad_channels_args(src_dims, src_layout, dst_dims, dst_layout)? {
            if dst.device_ptr(gpu.stream()).0 % 16 == 0 {
                return pad_channels_into(gpu, src, dst, &t, dst_dims[0]);
            }
        }
    }
    match transpose_args(src_dims, src_layout, dst_dims, dst_layout)? {
        Some(t) => transpose_into(gpu, src, dst, &t, dst_dims[0], false),
        None => relayout_elementwise_into(gpu, src, src_dims, src_layout, dst, dst_dims, dst_layout),
    }
}

/// [`relayout_into`] by the element-wise `relayout` kernel whatever the pair (the transpose's
/// fallback, and its yardstick in the transform timing test).
pub fn relayout_elementwise_into<T: DeviceRepr>(gpu: &Gpu, src: &CudaSlice<T>, src_dims: [usize; 4], src_layout: Layout, dst: &mut CudaSlice<T>, dst_dims: [usize; 4], dst_layout: Layout) -> Result<()> {
    relayout_sampled_into(gpu, src, src_dims, src_layout, dst, dst_dims, dst_layout, (1, 1))
}

/// [`relayout_elementwise_into`] of the source sampled on a `(sh, sw)` grid
/// ([`relayout_sampled_args`]): the input of a [`crate::Conv2d::subsampled`] problem.
#[allow(clippy::too_many_arguments)]
pub fn relayout_sampled_into<T: DeviceRepr>(gpu: &Gpu, src: &CudaSlice<T>, src_dims: [usize; 4], src_layout: Layout, dst: &mut CudaSlice<T>, dst_dims: [usize; 4], dst_layout: Layout, sampling: (usize, usize)) -> Result<()> {
    let args = relayout_sampled_args(src_dims, src_layout, dst_dims, dst_layout, sampling)?;
    // The sample kernel stores 16-byte vectors: a 16-byte aligned destination (device
    // allocations are; the check keeps that an observation).
    if let Some(a) = sample_args(src_dims, src_layout, dst_dims, dst_layout, sampling).filter(|_| dst.device_ptr(gpu.stream()).0 % 16 == 0) {
        return sample_into(gpu, src, dst, &a);
    }
    if sampling != (1, 1) {
        if let Some(t) = transpose_sampled_args(src_dims, src_layout, dst_dims, dst_layout, sampling)? {
            return transpose_into(gpu, src, dst, &t, dst_dims[0], true);
        }
    }
    let entry = match std::mem::size_of::<T>() {
        2 => "relayout_b16",
        4 => "relayout_b32",
        n => return Err(Error::InvalidArgument(format!("no layout transform for {n}-byte elements"))),
    };
    if src.len() != src_dims.iter().product::<usize>() || dst.len() != args.total as usize {
        return Err(Error::BufferSize { tensor: "layout transform", expected: args.total as usize, got: dst.len() });
    }
    if args.total == 0 {
        return Ok(());
    }
    let cfg = LaunchConfig { grid_dim: ((args.total as u32).div_ceil(BLOCK_THREADS), 1, 1), block_dim: (BLOCK_THREADS, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: `dst` holds `total` elements and `src` the source's (checked above), and every
    // source offset lies in `src` (the limits are its extents).
    unsafe { launch_transform(gpu, entry, cfg, dst, src, &args.to_args()) }
}

/// The `sample` transform's arguments where it does the copy: NCHW to NCHW, N and C kept, a
/// grid other than (1, 1); `None` otherwise (the element-wise relayout does it). The sizes
/// are checked by [`relayout_sampled_args`] first.
fn sample_args(src_dims: [usize; 4], src: Layout, dst_dims: [usize; 4], dst: Layout, (sh, sw): (usize, usize)) -> Option<Sample> {
    if (src, dst) != (Layout::Nchw, Layout::Nchw) || src_dims[..2] != dst_dims[..2] || (sh, sw) == (1, 1) {
        return None;
    }
    let total = dst_dims.iter().product::<usize>();
    let i = |v: usize| v as i32;
    // relayout_sampled_args checked every size against i32 first.
    (total <= i32::MAX as usize).then(|| Sample::new(i(total), i(dst_dims[2]), i(dst_dims[3]), i(src_dims[2]), i(src_dims[3]), i(sh), i(sw)))
}

/// Enqueues the `sample` transform `a` from `src` into `dst` (16-byte aligned: the caller checks).
fn sample_into<T: DeviceRepr>(gpu: &Gpu, src: &CudaSlice<T>, dst: &mut CudaSlice<T>, a: &Sample) -> Result<()> {
    let entry = match std::mem::size_of::<T>() {
        2 => "sample_b16",
        4 => "sample_b32",
        n => return Err(Error::InvalidArgument(format!("no layout transform for {n}-byte elements"))),
    };
    let planes = a.total as usize / (a.p * a.q).max(1) as usize;
    if dst.len() != a.total as usize || src.len() != planes * (a.h * a.w) as usize {
        return Err(Error::BufferSize { tensor: "sampled transform", expected: a.total as usize, got: dst.len() });
    }
    if a.total == 0 {
        return Ok(());
    }
    let smem = sample_smem_bytes(std::mem::size_of::<T>() as u32);
    let cfg = LaunchConfig { grid_dim: ((a.total as u32).div_ceil(BLOCK_THREADS * SAMPLE_RUN), 1, 1), block_dim: (BLOCK_THREADS, 1, 1), shared_mem_bytes: smem };
    // SAFETY: `dst` holds `total` elements, 16-byte aligned (the caller's check), and `src` the
    // planes' h * w each (checked above); every sampled row y * sh and column x * sw lies inside
    // its plane (the grid's extent).
    unsafe { launch_transform(gpu, entry, cfg, dst, src, &a.to_args()) }
}

/// Enqueues transform `entry` on `dst` and `src` (its first two parameters) and `args` (the
/// `i32`s after them).
///
/// # Safety
/// `entry`, launched with `cfg` and these arguments, writes only inside `dst` and reads only
/// inside `src` (and needs no more than `cfg`'s shared memory).
unsafe fn launch_transform<T: DeviceRepr>(gpu: &Gpu, entry: &'static str, cfg: LaunchConfig, dst: &mut CudaSlice<T>, src: &CudaSlice<T>, args: &[i32]) -> Result<()> {
    let f = gpu.function(entry, cfg.shared_mem_bytes)?;
    let mut b = KernelArgs::default();
    b.output(gpu, dst).input(gpu, src);
    for &v in args {
        b.value(v);
    }
    // SAFETY: the caller guarantees the kernel stays inside the buffers; `&mut dst` cannot
    // alias `src`.
    unsafe { gpu.launch(&f, cfg, b) }.map_err(cuda_err(entry))?;
    Ok(())
}

/// Enqueues the expansion of `src`, the KRSC filter of grouped problem `p`, into `dst`, the
/// KRSC filter of `p` in `run_groups` groups (`crate::groups`: `p.groups / run_groups` merged
/// into each, block diagonal), by `expand_groups`.
pub fn expand_groups_into<T: DeviceRepr>(gpu: &Gpu, src: &CudaSlice<T>, p: &crate::Conv2d, run_groups: usize, dst: &mut CudaSlice<T>) -> Result<()> {
    if run_groups == 0 || p.groups % run_groups != 0 {
        return Err(Error::InvalidArgument(format!("{run_groups} groups do not merge the {} of {p}", p.groups)));
    }
    let merge = p.groups / run_groups;
    let total = p.filter_len() * merge;
    if src.len() != p.filter_len() || dst.len() != total {
        return Err(Error::BufferSize { tensor: "expanded filter", expected: total, got: dst.len() });
    }
    let entry = match std::mem::size_of::<T>() {
        2 => "expand_groups_b16",
        4 => "expand_groups_b32",
        n => return Err(Error::InvalidArgument(format!("no filter expansion for {n}-byte elements"))),
    };
    let i = |v: usize| i32::try_from(v).map_err(|_| Error::InvalidArgument(format!("an expanded filter of {total} elements exceeds the kernel's i32 indices")));
    let args = ExpandGroups { total: i(total)?, taps: i(p.r * p.s)?, group_c: i(p.group_c())?, group_k: i(p.k / p.groups)?, merge: i(merge)? };
    if total == 0 {
        return Ok(());
    }
    let cfg = LaunchConfig { grid_dim: ((total as u32).div_ceil(BLOCK_THREADS), 1, 1), block_dim: (BLOCK_THREADS, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: one thread per destination element (`total`, dst's length, checked); each reads
    // a source offset below `total / merge`, src's length (checked); &mut dst cannot alias src.
    unsafe { launch_transform(gpu, entry, cfg, dst, src, &args.to_args()) }
}

/// Splits the fp32 tensor `src` for the 3xTF32 kernels ([`LaunchPlan::split_filter`]): `dst`
/// (twice `src`'s length) gets each element's TF32 high part, then each remainder, both
/// rounded to nearest, so that hi + lo is within 2^-22 of the element (relative) and the
/// tensor cores read both exactly.
///
/// [`LaunchPlan::split_filter`]: crate::plan::LaunchPlan::split_filter
pub fn split_tf32<T: Element>(gpu: &Gpu, src: &CudaSlice<T>, dst: &mut CudaSlice<T>) -> Result<()> {
    if T::DTYPE != crate::DType::F32 {
        return Err(Error::InvalidArgument(format!("a 3xTF32 split is of fp32 data, not {}", T::DTYPE)));
    }
    let n = src.len();
    if dst.len() != 2 * n {
        return Err(Error::BufferSize { tensor: "split filter", expected: 2 * n, got: dst.len() });
    }
    if n == 0 {
        return Ok(());
    }
    if 2 * n > i32::MAX as usize {
        return Err(Error::InvalidArgument(format!("a split of {n} elements exceeds the kernel's i32 indices")));
    }
    let args = SplitTf32 { n: n as i32 };
    let cfg = LaunchConfig { grid_dim: ((n as u32).div_ceil(BLOCK_THREADS), 1, 1), block_dim: (BLOCK_THREADS, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: n threads each read src[i] and write dst[i], dst[n + i]: inside the buffers
    // (lengths checked above); dst is a distinct buffer (&mut).
    unsafe { launch_transform(gpu, "split_tf32", cfg, dst, src, &args.to_args()) }
}

/// The transpose kernel's arguments where copying a `src_dims` tensor in `src` layout into a
/// `dst_dims` one in `dst` layout is a batched transpose (NCHW -> NHWC or NHWC -> NCHW, N and C
/// zero-filled or cropped) whose grid fits the launch limits; `None` for other pairs (checked as
/// [`relayout_args`] checks them, so an error here is one there too).
pub fn transpose_args(src_dims: [usize; 4], src: Layout, dst_dims: [usize; 4], dst: Layout) -> Result<Option<Transpose>> {
    relayout_args(src_dims, src, dst_dims, dst)?; // the same checks: sizes within i32, H and W kept
    let ([ns, cs, h, w], [nd, cd, _, _]) = (src_dims, dst_dims);
    let hw = h * w;
    let i = |v: usize| v as i32; // every value below is at most a tensor's length: within i32
    let t = match (src, dst) {
        (Layout::Nchw, Layout::Nhwc) => Transpose {
            rows: i(hw), cols: i(cd), src_batches: i(ns.min(nd)), valid_rows: i(hw), valid_cols: i(cs.min(cd)),
            src_ld: i(hw), src_bs: i(cs * hw), dst_ld: i(cd), dst_bs: i(hw * cd), ..Transpose::UNSAMPLED
        },
        (Layout::Nhwc, Layout::Nchw) => Transpose {
            rows: i(cd), cols: i(hw), src_batches: i(ns.min(nd)), valid_rows: i(cs.min(cd)), valid_cols: i(hw),
            src_ld: i(cs), src_bs: i(hw * cs), dst_ld: i(hw), dst_bs: i(cd * hw), ..Transpose::UNSAMPLED
        },
        _ => return Ok(None),
    };
    Ok(tiled_transpose(t, nd))
}

/// `transpose_sampled_b16/b32`'s arguments where the copy is NCHW into NHWC sampled on a
/// `(sh, sw)` grid (`dst_dims[2..]` its extent; N and C may grow or shrink as in
/// [`transpose_args`]); `None` for any other pair or where the tile does not fit. Checked as
/// [`relayout_sampled_args`] checks.
pub fn transpose_sampled_args(src_dims: [usize; 4], src: Layout, dst_dims: [usize; 4], dst: Layout, (sh, sw): (usize, usize)) -> Result<Option<Transpose>> {
    relayout_sampled_args(src_dims, src, dst_dims, dst, (sh, sw))?; // sizes within i32, the grid's extent
    if (src, dst) != (Layout::Nchw, Layout::Nhwc) {
        return Ok(None);
    }
    let ([ns, cs, h, w], [nd, cd, p, q]) = (src_dims, dst_dims);
    let i = |v: usize| v as i32; // every value below is at most a tensor's length: within i32
    let t = Transpose {
        rows: i(p * q), cols: i(cd), src_batches: i(ns.min(nd)), valid_rows: i(p * q), valid_cols: i(cs.min(cd)),
        src_ld: i(h * w), src_bs: i(cs * h * w), dst_ld: i(cd), dst_bs: i(p * q * cd), ..Transpose::UNSAMPLED
    }
    .with_sampling(i(q), i(sh * w), i(sw));
    Ok(tiled_transpose(t, nd))
}

/// `t` where the tiled transpose takes it over `nd` destination batches: the grid fits and the
/// tile is worth it.
fn tiled_transpose(t: Transpose, nd: usize) -> Option<Transpose> {
    let grid_yz_fits = (t.rows as u32).div_ceil(TRANSPOSE_TILE) <= 65535 && nd <= 65535;
    // Fewer than 4 rows or columns (a 1x1 filter's KCRS -> KRSC has one row per output channel)
    // would leave at least 15/16 of each 64x64 tile idle; the element-wise kernel's reads are
    // nearly contiguous there (an NCHW caller's transforms on 1,2048,7,7 -> 512 1x1 took 4x
    // longer with the tile on the H100: BENCHMARKS.md, 2026-11-25).
    let worth_tiling = t.rows >= 4 && t.cols >= 4;
    (grid_yz_fits && worth_tiling && nd > 0).then_some(t)
}

/// `pad_channels_b16`'s arguments where the copy is NCHW of at most 8 channels into NHWC of
/// exactly 8 with the same pixels and a grid that fits the launch limits (the caller checks the
/// element size: 16-bit); `None` otherwise. Checked as [`relayout_args`] checks.
pub fn pad_channels_args(src_dims: [usize; 4], src: Layout, dst_dims: [usize; 4], dst: Layout) -> Result<Option<PadChannels>> {
    relayout_args(src_dims, src, dst_dims, dst)?;
    let ([ns, cs, h, w], [nd, cd, _, _]) = (src_dims, dst_dims);
    let pixels = h * w;
    let fits = pixels > 0 && (pixels as u32).div_ceil(PAD_BLOCK_THREADS) <= i32::MAX as u32 && (1..=65535).contains(&nd);
    if (src, dst) != (Layout::Nchw, Layout::Nhwc) || cd != PAD_CHANNELS as usize || !fits {
        return Ok(None);
    }
    // Every value is at most a tensor's length, which relayout_args kept within i32.
    Ok(Some(PadChannels { pixels: pixels as i32, src_batches: ns.min(nd) as i32, channels: cs.min(cd) as i32, src_bs: (cs * pixels) as i32 }))
}

/// Enqueues `pad_channels_b16` over `batches` destination images.
fn pad_channels_into<T: DeviceRepr>(gpu: &Gpu, src: &CudaSlice<T>, dst: &mut CudaSlice<T>, t: &PadChannels, batches: usize) -> Result<()> {
    let need_src = if t.src_batches == 0 || t.channels == 0 { 0 } else { (t.src_batches as usize - 1) * t.src_bs as usize + (t.channels as usize - 1) * t.pixels as usize + t.pixels as usize };
    let need_dst = batches * t.pixels as usize * PAD_CHANNELS as usize;
    if src.len() < need_src {
        return Err(Error::BufferSize { tensor: "layout transform source", expected: need_src, got: src.len() });
    }
    if dst.len() != need_dst {
        return Err(Error::BufferSize { tensor: "layout transform", expected: need_dst, got: dst.len() });
    }
    let cfg = LaunchConfig { grid_dim: ((t.pixels as u32).div_ceil(PAD_BLOCK_THREADS), batches as u32, 1), block_dim: (PAD_BLOCK_THREADS, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: 2-byte elements (the caller's check); the grid covers every destination pixel of
    // `batches` images, each 8 elements below need_dst = dst.len(), 16-byte aligned because the
    // buffer is (checked by the caller) and a pixel is 16 bytes; every source offset is below
    // need_src <= src.len().
    unsafe { launch_transform(gpu, "pad_channels_b16", cfg, dst, src, &t.to_args()) }
}

/// Enqueues the transpose `t` over `batches` destination batches (`sampled`: its source rows
/// read on the grid, `transpose_sampled_*`).
fn transpose_into<T: DeviceRepr>(gpu: &Gpu, src: &CudaSlice<T>, dst: &mut CudaSlice<T>, t: &Transpose, batches: usize, sampled: bool) -> Result<()> {
    let bytes = std::mem::size_of::<T>();
    let entry = match (bytes, sampled) {
        (2, false) => "transpose_b16",
        (4, false) => "transpose_b32",
        (2, true) => "transpose_sampled_b16",
        (4, true) => "transpose_sampled_b32",
        (n, _) => return Err(Error::InvalidArgument(format!("no layout transform for {n}-byte elements"))),
    };
    let last = |b: usize, rows: usize, cols: usize, ld: usize, bs: usize| if b == 0 || rows == 0 || cols == 0 { 0 } else { (b - 1) * bs + (rows - 1) * ld + cols };
    // A sampled source row ends at its last pixel's source pixel, plus one.
    let row_len = if sampled && t.valid_rows > 0 { t.sampled_pixel(t.valid_rows - 1) as usize + 1 } else { t.valid_rows as usize };
    let need_src = last(t.src_batches as usize, t.valid_cols as usize, row_len, t.src_ld as usize, t.src_bs as usize);
    let need_dst = last(batches, t.rows as usize, t.cols as usize, t.dst_ld as usize, t.dst_bs as usize);
    if src.len() < need_src {
        return Err(Error::BufferSize { tensor: "layout transform source", expected: need_src, got: src.len() });
    }
    if dst.len() != need_dst {
        return Err(Error::BufferSize { tensor: "layout transform", expected: need_dst, got: dst.len() });
    }
    let cfg = LaunchConfig {
        grid_dim: ((t.cols as u32).div_ceil(TRANSPOSE_TILE), (t.rows as u32).div_ceil(TRANSPOSE_TILE), batches as u32),
        block_dim: (TRANSPOSE_BLOCK.0, TRANSPOSE_BLOCK.1, 1),
        shared_mem_bytes: transpose_smem_bytes(bytes as u32),
    };
    // SAFETY: the grid covers the destination's rows, columns and batches; every offset
    // `Transpose::dest` gives there is below `need_dst` = dst.len() and every one `source` gives
    // below `need_src` <= src.len() (checked above).
    unsafe { launch_transform(gpu, entry, cfg, dst, src, &t.to_args()) }
}

/// The transform kernels' arguments for copying a `src_dims` tensor in `src` layout into a
/// `dst_dims` one in `dst` layout (only the first two dims may differ: zero-filled where the
/// destination is larger, cropped where smaller).
pub fn relayout_args(src_dims: [usize; 4], src: Layout, dst_dims: [usize; 4], dst: Layout) -> Result<Relayout> {
    relayout_sampled_args(src_dims, src, dst_dims, dst, (1, 1))
}

/// [`relayout_args`] of the source sampled on a `(sh, sw)` grid: destination pixel `(y, x)`
/// is the source's `(y * sh, x * sw)`, and `dst_dims[2..]` must be the grid's extent
/// (`ceil(H / sh)`, `ceil(W / sw)`); what a [`crate::Conv2d::subsampled`] problem reads.
pub fn relayout_sampled_args(src_dims: [usize; 4], src: Layout, dst_dims: [usize; 4], dst: Layout, (sh, sw): (usize, usize)) -> Result<Relayout> {
    let plain = |l: Layout, d| l.strides(d).ok_or_else(|| Error::InvalidArgument(format!("device layout transforms take NCHW, NHWC or HWCN, not {l}")));
    let (_, mut src_strides) = plain(src, src_dims)?;
    let (order, _) = plain(dst, dst_dims)?;
    src.check_dims(src_dims)?;
    dst.check_dims(dst_dims)?;
    if sh == 0 || sw == 0 || dst_dims[2] != src_dims[2].div_ceil(sh) || dst_dims[3] != src_dims[3].div_ceil(sw) {
        return Err(Error::InvalidArgument(format!("a layout transform keeps the last two dims (sampled every ({sh}, {sw})): {src_dims:?} -> {dst_dims:?}")));
    }
    src_strides[2] *= sh;
    src_strides[3] *= sw;
    let total = dst_dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).filter(|&t| t <= i32::MAX as usize);
    // The whole source (not only its sampled pixels): every offset into it must fit in i32.
    let src_len = src_dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).filter(|&t| t <= i32::MAX as usize);
    // Every sampled pixel is in the source; only N and C may run past it.
    let src_dims = [src_dims[0], src_dims[1], dst_dims[2], dst_dims[3]];
    let (Some(total), Some(_)) = (total, src_len) else {
        return Err(Error::IndexOverflow { tensor: "device tensor", elements: dst_dims.iter().map(|&d| d as u128).product() });
    };
    let [e0, e1, e2, e3] = order.map(|axis| dst_dims[axis] as i32);
    let [s0, s1, s2, s3] = order.map(|axis| src_strides[axis] as i32);
    let [l0, l1, l2, l3] = order.map(|axis| src_dims[axis] as i32);
    Ok(Relayout { total: total as i32, e0, e1, e2, e3, s0, s1, s2, s3, l0, l1, l2, l3 })
}

/// Runs `algo` on device tensors: input and filter in the layout the caller holds (the same one
/// for both), output in `out_layout` and in the input's element type (a tensor-core kernel rounds
/// its fp32 accumulators to it). [`Algorithm::Auto`] picks among the kernels whose layouts the
/// transforms reach (not the blocked NHWC16n16c ones yet), conversions priced.
pub fn conv2d_device<T: Element>(gpu: &Gpu, algo: Algorithm, problem: &Conv2d, input: &DeviceTensor<T>, filter: &DeviceTensor<T>, out_layout: Layout) -> Result<DeviceTensor<T>> {
    conv2d_device_to::<T, T>(gpu, algo, problem, input, filter, out_layout)
}

/// [`conv2d_device`] with the output in element type `O`: the input's type or `f32` (the
/// accumulators unrounded); any other `O` is an error.
pub fn conv2d_device_to<T: Element, O: Element>(gpu: &Gpu, algo: Algorithm, problem: &Conv2d, input: &DeviceTensor<T>, filter: &DeviceTensor<T>, out_layout: Layout) -> Result<DeviceTensor<O>> {
    // DeviceConv validates the problem and checks both tensors against it.
    let mut conv = DeviceConv::<T, O>::new(gpu, algo, problem, filter, input.layout, out_layout)?;
    let mut y = conv.new_output(gpu)?;
    conv.run(gpu, input, &mut y)?;
    Ok(y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use convrs_spec::transform::source_offset;

    /// The transform's copy replayed on the CPU with the kernel's own index function.
    fn relayout_cpu(t: &Tensor<f32>, dims: [usize; 4], layout: Layout) -> Tensor<f32> {
        let a = relayout_args(t.dims(), t.layout(), dims, layout).unwrap();
        let data = (0..a.total).map(|o| source_offset(&a, o).map_or(0.0, |s| t.data()[s as usize])).collect();
        Tensor::new(dims, layout, data).unwrap()
    }

    #[test]
    fn sampled_transforms_match_the_host_sampling() {
        let t = Tensor::from_fn([2, 3, 5, 7], Layout::Nchw, |n, c, h, w| (((n * 10 + c) * 10 + h) * 10 + w) as f32).unwrap();
        for from in [Layout::Nchw, Layout::Nhwc] {
            let src = t.to_layout(from).unwrap();
            for to in [Layout::Nchw, Layout::Nhwc] {
                for (stride, dims) in [((2, 2), [2, 4, 3, 4]), ((3, 2), [3, 3, 2, 4]), ((1, 3), [2, 3, 5, 3])] {
                    let a = relayout_sampled_args(src.dims(), from, dims, to, stride).unwrap();
                    let data: Vec<f32> = (0..a.total).map(|o| source_offset(&a, o).map_or(0.0, |s| src.data()[s as usize])).collect();
                    assert_eq!(data, t.sampled_padded(dims, to, stride).unwrap().data(), "{from} -> {to} every {stride:?}");
                }
            }
        }
        // The destination must be the grid's extent.
        assert!(relayout_sampled_args([1, 3, 5, 7], Layout::Nchw, [1, 3, 2, 4], Layout::Nchw, (2, 2)).is_err());
        // The `sample` kernel's runs (NCHW, N and C kept), replayed: the host's sampling.
        for (stride, dims) in [((2, 2), [2, 3, 3, 4]), ((3, 2), [2, 3, 2, 4]), ((1, 3), [2, 3, 5, 3]), ((2, 1), [2, 3, 3, 7])] {
            let a = sample_args(t.dims(), Layout::Nchw, dims, Layout::Nchw, stride).unwrap();
            assert_eq!(a.source(a.total), None);
            let data: Vec<f32> = (0..a.total).map(|o| t.data()[a.source(o).unwrap() as usize]).collect();
            assert_eq!(data, t.sampled_padded(dims, Layout::Nchw, stride).unwrap().data(), "every {stride:?}");
        }
        assert!(sample_args(t.dims(), Layout::Nchw, [2, 4, 3, 4], Layout::Nchw, (2, 2)).is_none()); // C padded
        assert!(sample_args(t.dims(), Layout::Nhwc, [2, 3, 3, 4], Layout::Nchw, (2, 2)).is_none());
        // The sampled transpose's tile (NCHW -> NHWC), replayed element by element: the host's
        // sampling, with N and C grown (zeros) or cropped. The source is 4 channels of 6 x 9
        // pixels, so the grid's rows skip whole rows and its columns whole pixels.
        let t = Tensor::from_fn([2, 4, 6, 9], Layout::Nchw, |n, c, h, w| (((n * 10 + c) * 10 + h) * 10 + w) as f32).unwrap();
        for (stride, dims) in [((2, 2), [2, 4, 3, 5]), ((2, 3), [3, 8, 3, 3]), ((3, 1), [2, 4, 2, 9]), ((1, 2), [2, 6, 6, 5])] {
            let a = transpose_sampled_args(t.dims(), Layout::Nchw, dims, Layout::Nhwc, stride).unwrap().unwrap();
            let mut data = vec![f32::NAN; dims.iter().product()];
            for b in 0..dims[0] as i32 {
                for y in 0..a.rows {
                    for x in 0..a.cols {
                        data[a.dest(b, y, x) as usize] = a.source_sampled(b, y, x).map_or(0.0, |s| t.data()[s as usize]);
                    }
                }
            }
            assert_eq!(data, t.sampled_padded(dims, Layout::Nhwc, stride).unwrap().data(), "every {stride:?} into {dims:?}");
        }
        // Only NCHW -> NHWC; the destination must be the grid's extent.
        assert!(transpose_sampled_args(t.dims(), Layout::Nhwc, [2, 4, 3, 5], Layout::Nchw, (2, 2)).unwrap().is_none());
        assert!(transpose_sampled_args(t.dims(), Layout::Nchw, [2, 4, 3, 4], Layout::Nhwc, (2, 2)).is_err());
    }

    #[test]
    fn transforms_match_the_host_conversions() {
        let t = Tensor::from_fn([2, 3, 4, 5], Layout::Nchw, |n, c, h, w| (((n * 10 + c) * 10 + h) * 10 + w) as f32).unwrap();
        for from in [Layout::Nchw, Layout::Nhwc, Layout::Hwcn] {
            let src = t.to_layout(from).unwrap();
            for to in [Layout::Nchw, Layout::Nhwc, Layout::Hwcn] {
                assert_eq!(relayout_cpu(&src, [2, 3, 4, 5], to).data(), t.to_layout(to).unwrap().data(), "{from} -> {to}");
                // Padding to N = 4, C = 8 and cropping back.
                let padded = relayout_cpu(&src, [4, 8, 4, 5], to);
                assert_eq!(padded.data(), t.zero_padded([4, 8, 4, 5], to).unwrap().data(), "{from} -> {to} padded");
                assert_eq!(relayout_cpu(&padded, [2, 3, 4, 5], from).data(), src.data(), "{to} -> {from} cropped");
            }
        }
    }

    /// The transpose replayed on the CPU with the kernel's own index functions, over its grid
    /// of tiles (so a destination element no tile reaches stays NaN and fails the comparison).
    fn transpose_cpu(t: &Tensor<f32>, dims: [usize; 4], layout: Layout) -> Tensor<f32> {
        let a = transpose_args(t.dims(), t.layout(), dims, layout).unwrap().expect("a transpose pair");
        let mut data = vec![f32::NAN; dims.iter().product()];
        let tile = TRANSPOSE_TILE as i32;
        for b in 0..dims[0] as i32 {
            for y in 0..(a.rows + tile - 1) / tile * tile {
                for x in 0..(a.cols + tile - 1) / tile * tile {
                    if y < a.rows && x < a.cols {
                        data[a.dest(b, y, x) as usize] = a.source(b, y, x).map_or(0.0, |s| t.data()[s as usize]);
                    }
                }
            }
        }
        Tensor::new(dims, layout, data).unwrap()
    }

    #[test]
    fn transposes_match_the_host_conversions() {
        // H*W = 135 and C = 70: several tiles each way, ragged at both edges.
        let t = Tensor::from_fn([2, 70, 9, 15], Layout::Nchw, |n, c, h, w| (((n * 100 + c) * 10 + h) * 20 + w) as f32).unwrap();
        for (from, to) in [(Layout::Nchw, Layout::Nhwc), (Layout::Nhwc, Layout::Nchw)] {
            let src = t.to_layout(from).unwrap();
            assert_eq!(transpose_cpu(&src, [2, 70, 9, 15], to).data(), t.to_layout(to).unwrap().data(), "{from} -> {to}");
            let padded = transpose_cpu(&src, [3, 72, 9, 15], to);
            assert_eq!(padded.data(), t.zero_padded([3, 72, 9, 15], to).unwrap().data(), "{from} -> {to} padded");
            assert_eq!(transpose_cpu(&padded, [2, 70, 9, 15], from).data(), src.data(), "{to} -> {from} cropped");
        }
        // Every other plain pair is the element-wise kernel's, and so are 1x1 filters (one row).
        for (from, to) in [(Layout::Nchw, Layout::Nchw), (Layout::Nhwc, Layout::Hwcn), (Layout::Hwcn, Layout::Nchw)] {
            assert_eq!(transpose_args([1, 4, 3, 4], from, [1, 4, 3, 4], to).unwrap(), None, "{from} -> {to}");
        }
        assert_eq!(transpose_args([512, 2048, 1, 1], Layout::Nchw, [512, 2048, 1, 1], Layout::Nhwc).unwrap(), None);
        assert!(transpose_args([512, 2048, 3, 3], Layout::Nchw, [512, 2048, 3, 3], Layout::Nhwc).unwrap().is_some());
    }

    #[test]
    fn channel_padding_matches_the_host_conversion() {
        // C = 3 -> 8 and N = 2 -> 3, replayed with the kernel's index functions per pixel.
        let t = Tensor::from_fn([2, 3, 5, 7], Layout::Nchw, |n, c, h, w| (((n * 10 + c) * 10 + h) * 10 + w) as f32).unwrap();
        let a = pad_channels_args([2, 3, 5, 7], Layout::Nchw, [3, 8, 5, 7], Layout::Nhwc).unwrap().expect("a padding pair");
        let mut data = vec![f32::NAN; 3 * 8 * 35];
        for b in 0..3 {
            for p in 0..a.pixels {
                for c in 0..8 {
                    data[(a.dest(b, p) + c) as usize] = a.source(b, p, c).map_or(0.0, |s| t.data()[s as usize]);
                }
            }
        }
        assert_eq!(data, t.zero_padded([3, 8, 5, 7], Layout::Nhwc).unwrap().data());
        // Other targets are the transpose's or the element-wise kernel's.
        assert_eq!(pad_channels_args([2, 3, 5, 7], Layout::Nchw, [2, 16, 5, 7], Layout::Nhwc).unwrap(), None);
        assert_eq!(pad_channels_args([2, 8, 5, 7], Layout::Nhwc, [2, 8, 5, 7], Layout::Nchw).unwrap(), None);
    }

    #[test]
    fn transforms_refuse_what_they_cannot_do() {
        assert!(transpose_args([1, 3, 4, 4], Layout::Nchw, [1, 3, 4, 5], Layout::Nhwc).is_err());
        assert!(relayout_args([16, 16, 4, 4], Layout::Nhwc16n16c, [16, 16, 4, 4], Layout::Nchw).is_err());
        assert!(relayout_args([1, 3, 4, 4], Layout::Nchw, [1, 3, 4, 5], Layout::Nhwc).is_err());
        assert!(relayout_args([1, 3, 4, 4], Layout::Nchw, [1 << 20, 1 << 12, 4, 4], Layout::Nhwc).is_err());
    }
}
