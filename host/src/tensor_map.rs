//! TMA tensor maps of filters, for the kernels whose plans set
//! [`LaunchPlan::filter_map_rows`](crate::plan::LaunchPlan::filter_map_rows) (the
//! warp-specialized Hopper kernels, `wgmma_ws_nhwc*`).
//!
//! A map is 128 opaque bytes that the driver encodes (`cuTensorMapEncodeTiled`) from the
//! filter's address, sizes and strides and the box one copy brings in. The kernels read it from
//! global memory, so it is uploaded once and kept by the [`crate::Gpu`] keyed by everything it
//! encodes: a map found in the cache is exactly the one a fresh encoding would give, even for a
//! new buffer at a freed buffer's address.

use std::collections::HashMap;

use cudarc::driver::sys::{
    cuTensorMapEncodeTiled, CUtensorMap, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave, CUtensorMapL2promotion,
    CUtensorMapSwizzle,
};
use cudarc::driver::CudaSlice;

use crate::dtype::DType;
use crate::{Conv2d, Error, Result};

/// Channels per box row: one 128-byte swizzle row of 16-bit elements.
const BOX_CHANNELS: u32 = 64;

/// What a filter map encodes; equal keys give equal maps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct FilterMapKey {
    /// The KRSC filter's device address.
    pub address: u64,
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
        FilterMapKey { address, c: p.c as u64, taps: (p.r * p.s) as u64, k: p.k as u64, rows, dtype }
    }

    /// The driver's encoding: a 3-D tensor {C, R*S, K} (innermost first) of 16-bit elements,
    /// boxes of {64, 1, rows}, 128-byte swizzle (the layout the kernels' wgmma descriptors
    /// read), zeros for elements outside the tensor (channel and output-channel tails).
    pub fn encode(&self) -> Result<[u8; 128]> {
        let data_type = match self.dtype {
            DType::F16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            DType::BF16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            DType::F32 => return Err(Error::InvalidArgument("filter tensor maps are for 16-bit filters".into())),
        };
        let dims = [self.c, self.taps, self.k];
        // Bytes from one index of dimensions 1 and 2 to the next (dimension 0 is contiguous);
        // the driver wants multiples of 16: C is a multiple of 8 in every plan that asks for a map.
        let strides = [2 * self.c, 2 * self.c * self.taps];
        let boxes = [BOX_CHANNELS, 1, self.rows];
        let element_strides = [1u32; 3];
        let mut map = CUtensorMap { opaque: [0; 16] };
        // SAFETY: every pointer addresses an array of the rank (3, or 2 for the strides) the call
        // is given; `map` is a 64-byte aligned CUtensorMap the driver writes and nothing else.
        let r = unsafe {
            cuTensorMapEncodeTiled(
                &mut map,
                data_type,
                3,
                self.address as *mut core::ffi::c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                boxes.as_ptr(),
                element_strides.as_ptr(),
                CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
                CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        };
        r.result().map_err(|e| Error::Cuda(format!("encoding the filter's tensor map ({self:?}): {e}")))?;
        let mut bytes = [0u8; 128];
        for (chunk, word) in bytes.chunks_exact_mut(8).zip(map.opaque) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        Ok(bytes)
    }
}

/// The uploaded maps of one GPU.
#[derive(Default)]
pub(crate) struct FilterMaps {
    maps: HashMap<FilterMapKey, CudaSlice<u8>>,
}

impl FilterMaps {
    /// Past this many maps (128 bytes each) the cache starts over: a long-running process that
    /// keeps allocating filters would otherwise grow it without end. Freeing is stream-ordered,
    /// so launches already enqueued keep their maps.
    const LIMIT: usize = 4096;

    /// The device address of `key`'s map, encoded and uploaded by `upload` the first time.
    pub fn address(&mut self, key: FilterMapKey, upload: impl FnOnce(&[u8; 128]) -> Result<CudaSlice<u8>>) -> Result<u64> {
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
            return Err(Error::Cuda(format!("the filter's tensor map landed at {address:#x}, not 64-byte aligned")));
        }
        Ok(address)
    }
}
