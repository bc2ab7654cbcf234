//! One convrs [`Gpu`] per candle CUDA stream, made at first use and shared: loading the kernels
//! into the context costs milliseconds, a lookup nanoseconds.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use candle_core::cuda_backend::CudaDevice;
use convrs::Gpu;

/// The convrs handle that enqueues on `device`'s stream (`CudaDevice::cuda_stream`), in
/// `device`'s context.
pub fn gpu_for(device: &CudaDevice) -> candle_core::Result<Arc<Gpu>> {
    static GPUS: OnceLock<Mutex<HashMap<usize, Arc<Gpu>>>> = OnceLock::new();
    let stream = device.cuda_stream();
    // Keyed by the stream's handle: candle's default device runs on its context's per-thread
    // stream, `new_with_stream` devices on streams of their own. A handle cannot be reused by
    // another stream while it is a key: the `Gpu` holds its stream alive.
    let key = stream.cu_stream() as usize;
    let mut gpus = GPUS.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    if let Some(gpu) = gpus.get(&key) {
        return Ok(gpu.clone());
    }
    let gpu = Arc::new(Gpu::from_stream(stream).map_err(crate::to_candle)?);
    gpus.insert(key, gpu.clone());
    Ok(gpu)
}
