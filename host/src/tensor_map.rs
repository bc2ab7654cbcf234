//! TMA tensor maps of filters, for the kernels whose plans set
//! [`LaunchPlan::filter_map_rows`](crate::plan::LaunchPlan::filter_map_rows) (the
//! warp-specialized Hopper kernels), and of inputs, for those that set
//! [`LaunchPlan::input_map`](crate::plan::LaunchPlan::input_map): in im2col mode (NHWC, step 7
//! on) or as NCHW planes (steps 9 and 15, `wgmma_nchw1x1_persistent` and `_pingpong_m64`), and
//! of a fused epilogue's residual, for those that set
//! [`LaunchPlan::residual_map_rows`](crate::plan::LaunchPlan::residual_map_rows).
//!
//! A map is 128 opaque bytes that the driver encodes (`cuTensorMapEncodeTiled`,
//! `cuTensorMapEncodeIm2col`) from the tensor's address, sizes and strides and the box one copy
//! brings in. The kernels read it from global memory, so it is uploaded once and kept by the
//! [`crate::Gpu`] keyed by everything it encodes: a map found in the cache is exactly the one a
//! fresh encoding would give, even for a new buffer at a freed buffer's address.

use std::collections::HashMap;

use cudarc::driver::sys::{
    cuTensorMapEncodeIm2col, cuTensorMapEncodeTiled, CUtensorMap, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave, CUtensorMapL2promotion,
    CUtensorMapSwizzle,
};
use cudarc::driver::CudaSlice;

use crate::dtype::DType;
use crate::{Conv2d, Error, Result};

/// Bytes per box row: one 128-byte swizzle row (64 16-bit or 32 fp32 channels).
const BOX_ROW_BYTES: u32 = convrs_spec::hopper::ROW_BYTES as u32;

/// Channels of `dtype` per box row.
fn box_channels(dtype: DType) -> u32 {
    BOX_ROW_BYTES / dtype.size() as u32
}

/// What a filter map encodes; equal keys give equal maps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct FilterMapKey {
    /// The KRSC filter's device address.
    pub address: u64,
    /// Channels a filter row holds: C/G (C for a dense problem).
    pub c: u64,
    pub taps: u64,
    pub k: u64,
    /// Output channels per box.
    pub rows: u32,
    pub dtype: DType,
}

impl FilterMapKey {
    pub fn new(address: u64, problem: &Conv2d, rows: u32, dtype: DType) -> Self {
        let p = problem;
        FilterMapKey { address, c: p.group_c() as u64, taps: (p.r * p.s) as u64, k: p.k as u64, rows, dtype }
    }

    /// The driver's encoding: a 3-D tensor {C, R*S, K} (innermost first), boxes of {128 bytes
    /// of channels, 1, rows}, 128-byte swizzle (the layout the kernels' wgmma descriptors
    /// read), zeros for elements outside the tensor (channel and output-channel tails).
    pub fn encode(&self) -> Result<[u8; 128]> {
        // Bytes from one index of dimensions 1 and 2 to the next (dimension 0 is contiguous);
        // the driver wants multiples of 16: C/G is a multiple of 8 in every plan that asks for a map.
        let size = self.dtype.size() as u64;
        let strides = [size * self.c, size * self.c * self.taps];
        encode_tiled(self.dtype, self.address, [self.c, self.taps, self.k], strides, [box_channels(self.dtype), 1, self.rows], false)
            .map_err(|e| Error::Cuda(format!("encoding the filter's tensor map ({self:?}): {e}")))
    }
}

/// The driver's tiled encoding of a `RANK`-D tensor of `dtype` at `address`: `dims` innermost
/// first, byte `strides` of dimensions 1.. (`RANK - 1` of them: `S`), boxes of `boxes` elements,
/// element strides 1, 128-byte swizzle (the layout the kernels' wgmma descriptors read) or
/// under `unswizzled` none, zeros for elements outside the tensor.
fn encode_tiled<const RANK: usize, const S: usize>(
    dtype: DType,
    address: u64,
    dims: [u64; RANK],
    strides: [u64; S],
    boxes: [u32; RANK],
    unswizzled: bool,
) -> std::result::Result<[u8; 128], cudarc::driver::DriverError> {
    const { assert!(S + 1 == RANK && RANK >= 2 && RANK <= 5) };
    let element_strides = [1u32; RANK];
    let mut map = CUtensorMap { opaque: [0; 16] };
    // SAFETY: every pointer addresses an array of the rank (RANK, or RANK - 1 for the strides)
    // the call is given; `map` is a 64-byte aligned CUtensorMap the driver writes and nothing else.
    let r = unsafe {
        cuTensorMapEncodeTiled(
            &mut map,
            data_type(dtype),
            RANK as u32,
            address as *mut core::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            element_strides.as_ptr(),
            CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            if unswizzled { CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE } else { CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B },
            CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    r.result()?;
    Ok(bytes_of(map))
}

/// The driver's name for an element type (fp32 copied as it is: the tensor cores read TF32
/// from it).
fn data_type(dtype: DType) -> CUtensorMapDataType {
    match dtype {
        DType::F16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        DType::BF16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        DType::F32 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
    }
}

/// The map's 128 bytes as the kernels read them.
fn bytes_of(map: CUtensorMap) -> [u8; 128] {
    let mut bytes = [0u8; 128];
    for (chunk, word) in bytes.chunks_exact_mut(8).zip(map.opaque) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    bytes
}

/// What an input map encodes: an NHWC input read in im2col mode for one convolution geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct InputMapKey {
    /// The NHWC input's device address.
    pub address: u64,
    /// N, H, W, C.
    pub dims: [u64; 4],
    /// The bounding box of the filter window's first tap, per axis W then H: from
    /// `-pad` to `pad - (taps - 1) * dilation` past the last pixel.
    pub lower: [i32; 2],
    pub upper: [i32; 2],
    /// The convolution's strides, W then H.
    pub strides: [u32; 2],
    pub dtype: DType,
    /// Output pixels (GEMM rows) a copy brings: the kernel's block tile rows.
    pub pixels: u32,
    /// Elements from one input row to the next: W*C, also where the column stride is folded
    /// into the channels (`dims` the folded problem's, W/f pixels of f*C channels: the
    /// last `W mod f` columns are never read).
    pub row_pitch: u64,
}

/// For a 4-D tensor the im2col bounding box's corners are signed 8-bit numbers (CUDA driver
/// API, `cuTensorMapEncodeIm2col`) and the copy's tap offsets unsigned 8-bit ones (PTX ISA,
/// im2col mode); the traversal strides are at most 8.
pub(crate) const IM2COL_CORNER: std::ops::RangeInclusive<i64> = -128..=127;
pub(crate) const IM2COL_MAX_OFFSET: usize = 255;
pub(crate) const IM2COL_MAX_STRIDE: usize = 8;

impl InputMapKey {
    /// The key of `problem`'s input at `address` read `pixels` output pixels a copy (with
    /// `fold_w`, as its folded problem's input: [`Conv2d::folded_w`]), or why im2col mode
    /// cannot describe it.
    pub fn new(address: u64, problem: &Conv2d, dtype: DType, pixels: u32, fold_w: bool) -> std::result::Result<Self, String> {
        let row_pitch = (problem.w * problem.c) as u64;
        let folded = if fold_w { Some(problem.folded_w().ok_or_else(|| format!("{problem} has no column stride to fold into its channels"))?) } else { None };
        let p = folded.as_ref().unwrap_or(problem);
        let corner = |pad: usize, taps: usize, dil: usize| -> std::result::Result<(i32, i32), String> {
            let (lo, hi) = (-(pad as i64), pad as i64 - ((taps - 1) * dil) as i64);
            if IM2COL_CORNER.contains(&lo) && IM2COL_CORNER.contains(&hi) {
                Ok((lo as i32, hi as i32))
            } else {
                Err(format!("the im2col box's corners ({lo}, {hi}: padding, and padding less the dilated filter extent) must lie in -128..=127"))
            }
        };
        if p.stride.0 > IM2COL_MAX_STRIDE || p.stride.1 > IM2COL_MAX_STRIDE {
            return Err(format!("strides above {IM2COL_MAX_STRIDE} do not fit the im2col copy's traversal stride"));
        }
        if (p.r - 1) * p.dilation.0 > IM2COL_MAX_OFFSET || (p.s - 1) * p.dilation.1 > IM2COL_MAX_OFFSET {
            return Err(format!("dilated filter extents past {IM2COL_MAX_OFFSET} do not fit the im2col copy's tap offsets"));
        }
        let (w_lo, w_hi) = corner(p.pad.1, p.s, p.dilation.1)?;
        let (h_lo, h_hi) = corner(p.pad.0, p.r, p.dilation.0)?;
        Ok(InputMapKey {
            address,
            dims: [p.n as u64, p.h as u64, p.w as u64, p.c as u64],
            lower: [w_lo, h_lo],
            upper: [w_hi, h_hi],
            strides: [p.stride.1 as u32, p.stride.0 as u32],
            dtype,
            pixels,
            row_pitch,
        })
    }

    /// The driver's encoding: a 4-D tensor {C, W, H, N} (innermost first) read in im2col mode,
    /// `pixels` pixels of 128 bytes of channels a copy, 128-byte swizzle (as the filter's boxes),
    /// zeros outside the tensor (padding, channel tails, rows past the last image).
    pub fn encode(&self) -> Result<[u8; 128]> {
        let data_type = data_type(self.dtype);
        let [n, h, w, c] = self.dims;
        let dims = [c, w, h, n];
        let size = self.dtype.size() as u64;
        let strides = [size * c, size * self.row_pitch, size * self.row_pitch * h];
        let element_strides = [1, self.strides[0], self.strides[1], 1];
        let mut map = CUtensorMap { opaque: [0; 16] };
        // SAFETY: every pointer addresses an array of the length the rank-4 call reads (4; 3 for
        // the strides; 2 for the corners); `map` is a 64-byte aligned CUtensorMap the driver
        // writes and nothing else.
        let r = unsafe {
            cuTensorMapEncodeIm2col(
                &mut map,
                data_type,
                4,
                self.address as *mut core::ffi::c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                self.lower.as_ptr(),
                self.upper.as_ptr(),
                box_channels(self.dtype),
                self.pixels,
                element_strides.as_ptr(),
                CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
                CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        };
        r.result().map_err(|e| Error::Cuda(format!("encoding the input's im2col tensor map ({self:?}): {e}")))?;
        Ok(bytes_of(map))
    }
}

/// What a plane map encodes: an NCHW input read as C x H*W planes
/// (`convrs_spec::hopper::Producer::Planes` and `PlanePixels`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct PlaneMapKey {
    /// The NCHW input's device address.
    pub address: u64,
    /// H*W, C, N (g H*W, C/g, N where `groups` = g channel planes make a row).
    pub dims: [u64; 3],
    /// Channel planes a row of the map.
    pub groups: u32,
    pub dtype: DType,
}

impl PlaneMapKey {
    /// For 16-bit data whose H*W is not a multiple of 8 (only `Producer::Planes` plans ask for
    /// those), the rows are `g` channel planes end to end
    /// (`convrs_spec::hopper::plane_channel_groups`): {g H*W, C/g, N}, a valid map the kernel
    /// takes but whose boxes it never copies (it copies those planes by `cp.async`,
    /// `convrs_spec::hopper::plane_copies_direct`).
    pub fn new(address: u64, problem: &Conv2d, dtype: DType) -> Self {
        let p = problem;
        let g = if dtype.size() == 2 { convrs_spec::hopper::plane_channel_groups(p.h * p.w) } else { 1 };
        PlaneMapKey { address, dims: [(g * p.h * p.w) as u64, (p.c / g) as u64, p.n as u64], groups: g as u32, dtype }
    }

    /// The driver's encoding: a 3-D tensor {H*W, C, N} (innermost first), boxes of {128 bytes
    /// of pixels, 128 bytes' worth of channels, 1 image}, 128-byte swizzle (the MN-major layout
    /// the kernels' B descriptors read), zeros outside the tensor (pixel and channel tails,
    /// images past N). The byte strides must be multiples of 16: the row, H*W pixels (fp32: a
    /// multiple of 4 in every plan that asks for this map) or g channel planes of them.
    pub fn encode(&self) -> Result<[u8; 128]> {
        let size = self.dtype.size() as u64;
        let [row, rows, _] = self.dims;
        // The kernels' copy: one 128-byte row of pixels (PLANE_BOX_PIXELS of 16-bit data, 32
        // of fp32) by one k-tile of channels, in `groups` boxes of 64 / groups rows.
        let boxes = [box_channels(self.dtype), box_channels(self.dtype) / self.groups, 1];
        encode_tiled(self.dtype, self.address, self.dims, [size * row, size * row * rows], boxes, false)
            .map_err(|e| Error::Cuda(format!("encoding the input's plane tensor map ({self:?}): {e}")))
    }
}

/// What a row map encodes: an NCHW input read as rows of its channel planes
/// (`convrs_spec::hopper::Producer::PlaneRows`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RowMapKey {
    /// The NCHW input's device address.
    pub address: u64,
    /// W, H, C, N.
    pub dims: [u64; 4],
    pub dtype: DType,
}

impl RowMapKey {
    pub fn new(address: u64, problem: &Conv2d, dtype: DType) -> Self {
        let p = problem;
        RowMapKey { address, dims: [p.w as u64, p.h as u64, p.c as u64, p.n as u64], dtype }
    }

    /// The driver's encoding: a 4-D tensor {W, H, C, N} (innermost first), boxes of {72 pixels
    /// of one row (`convrs_spec::hopper::PLANE_ROW_LANDED_PIXELS`: a copy starts on the 16-byte
    /// boundary at or before its first column), 1 row, 128 bytes' worth of channels, 1 image},
    /// unswizzled (the producer shifts each channel row into the B tile's swizzled layout), zeros
    /// outside the tensor (the padding, pixel and channel tails). The byte strides must be
    /// multiples of 16: W is a multiple of 8 in every plan that asks for this map.
    pub fn encode(&self) -> Result<[u8; 128]> {
        let size = self.dtype.size() as u64;
        let [w, h, c, _] = self.dims;
        let boxes = [convrs_spec::hopper::PLANE_ROW_LANDED_PIXELS as u32, 1, box_channels(self.dtype), 1];
        encode_tiled(self.dtype, self.address, self.dims, [size * w, size * w * h, size * w * h * c], boxes, true)
            .map_err(|e| Error::Cuda(format!("encoding the input's row tensor map ({self:?}): {e}")))
    }
}

/// What a residual map encodes: a fused epilogue's 16-bit residual in the NHWK output layout,
/// read as a tile of the GEMM output a copy (`convrs_spec::hopper::Config::takes_residual_map`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ResidualMapKey {
    /// The residual's device address.
    pub address: u64,
    /// K, N*P*Q.
    pub dims: [u64; 2],
    /// Pixels (GEMM rows) a box: the kernel's block tile rows.
    pub rows: u32,
    pub dtype: DType,
}

impl ResidualMapKey {
    /// The key of a residual of `outputs` elements, `k` channels a pixel, at `address`.
    pub fn new(address: u64, k: usize, outputs: usize, rows: u32, dtype: DType) -> Self {
        ResidualMapKey { address, dims: [k as u64, (outputs / k.max(1)) as u64], rows, dtype }
    }

    /// The driver's encoding: a 2-D tensor {K, N*P*Q} (innermost first), boxes of {128 bytes of
    /// channels, `rows` pixels}, 128-byte swizzle (the kernels read it back in that pattern),
    /// zeros outside the tensor (channel and pixel tails, never stored). The byte stride K*2
    /// must be a multiple of 16: K is a multiple of 8 in every plan that takes this map.
    pub fn encode(&self) -> Result<[u8; 128]> {
        let size = self.dtype.size() as u64;
        encode_tiled(self.dtype, self.address, self.dims, [size * self.dims[0]], [box_channels(self.dtype), self.rows], false)
            .map_err(|e| Error::Cuda(format!("encoding the residual's tensor map ({self:?}): {e}")))
    }
}

/// Any map's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum MapKey {
    Filter(FilterMapKey),
    Input(InputMapKey),
    Planes(PlaneMapKey),
    Rows(RowMapKey),
    Residual(ResidualMapKey),
}

impl MapKey {
    fn encode(&self) -> Result<[u8; 128]> {
        match self {
            MapKey::Filter(k) => k.encode(),
            MapKey::Input(k) => k.encode(),
            MapKey::Planes(k) => k.encode(),
            MapKey::Rows(k) => k.encode(),
            MapKey::Residual(k) => k.encode(),
        }
    }
}

/// The uploaded maps of one GPU.
#[derive(Default)]
pub(crate) struct TensorMaps {
    maps: HashMap<MapKey, CudaSlice<u8>>,
}

impl TensorMaps {
    /// Past this many maps (128 bytes each) the cache starts over: a long-running process that
    /// keeps allocating filters would otherwise grow it without end. Freeing is stream-ordered,
    /// so launches already enqueued keep their maps.
    const LIMIT: usize = 4096;

    /// The device address of `key`'s map, encoded and uploaded by `upload` the first time.
    pub fn address(&mut self, key: MapKey, upload: impl FnOnce(&[u8; 128]) -> Result<CudaSlice<u8>>) -> Result<u64> {
        use cudarc::driver::DevicePtr;
        if !self.maps.contains_key(&key) {
            if self.maps.len() >= Self::LIMIT {
                self.maps.clear();
            }
            let map = upload(&key.encode()?)?;
            self.maps.insert(key, map);
        }
        let map = &self.maps[&key];
        let (address, _sync) = map.device_ptr(map.stream());
        // The driver's allocations are 256-byte aligned; TMA needs the map on 64 bytes.
        if address % 64 != 0 {
            return Err(Error::Cuda(format!("a tensor map landed at {address:#x}, not 64-byte aligned")));
        }
        Ok(address)
    }
}
