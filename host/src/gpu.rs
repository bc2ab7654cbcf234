//! The GPU handle: driver context, stream, and the embedded kernel module.
//!
//! cudarc loads libcuda at run time, so a machine without a driver or GPU gets
//! [`Error::NoGpu`] from [`Gpu::new`] instead of a failed process start.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtrMut, DeviceRepr, ValidAsZeroBits};

use crate::device::DeviceModel;
use crate::dtype::Element;
use crate::{Error, Result};

/// What `convrs info` prints about the device.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DeviceInfo {
    pub ordinal: usize,
    pub name: String,
    pub compute_capability: (i32, i32),
    pub multiprocessors: i32,
    pub total_memory_bytes: u64,
    pub free_memory_bytes: u64,
    pub l2_cache_bytes: i32,
    pub max_shared_bytes_per_block_optin: i32,
    /// The CUDA version the driver supports, as 1000*major + 10*minor.
    pub driver_cuda_version: i32,
    /// Which embedded PTX was loaded.
    pub ptx_arch: &'static str,
}

/// An open GPU with convrs's kernels loaded. Cheap to share by reference; launches go to one stream.
///
/// `Gpu` is `Send + Sync`: threads may share one, and their launches are enqueued on its one
/// stream in the order they are made (each thread keeps its own plans, e.g. a
/// [`crate::device_conv::DeviceConv`], which `run` needs mutably). For concurrency on the device,
/// make one `Gpu` per stream ([`Gpu::from_stream`]). `tests/tests/gpu_caller_stream.rs` runs
/// both: two threads on one `Gpu`, and two `Gpu`s on two streams.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    module: Arc<CudaModule>,
    /// The Hopper-only entries (`wgmma_*`), on compute capability 9.0.
    sm90a: Option<Arc<CudaModule>>,
    functions: Mutex<HashMap<&'static str, (CudaFunction, u32)>>,
    info: DeviceInfo,
    model: DeviceModel,
    /// Autotuning's winners (loaded from the user's cache file at first use).
    tune_cache: Mutex<Option<crate::tune::TuneCache>>,
    /// The TMA tensor maps (filters', inputs') uploaded so far.
    tensor_maps: Mutex<crate::tensor_map::TensorMaps>,
    /// Whether [`Gpu::launch`] lets each kernel's launch overlap the previous kernel's end
    /// ([`Gpu::programmatic_launch`]).
    programmatic: bool,
}

// The slots hand the driver a value's low bytes as the value itself (CUDA hosts are
// little-endian; this keeps it from being assumed silently).
const _: () = assert!(cfg!(target_endian = "little"), "kernel parameter slots assume a little-endian host");

/// A kernel's parameters for [`Gpu::launch`], in order: device buffers (their addresses, with
/// cudarc's stream-ordering guards kept until the launch is enqueued) and plain values.
#[derive(Default)]
pub(crate) struct KernelArgs<'a> {
    slots: Vec<u64>,
    guards: Vec<cudarc::driver::SyncOnDrop<'a>>,
}

/// A plain kernel parameter, held in the low bytes of an 8-byte slot.
pub(crate) trait Param: Copy {
    /// The slot: the value's bytes first, as the driver reads a parameter of its size.
    fn slot(self) -> u64;
}
impl Param for u64 {
    fn slot(self) -> u64 {
        self
    }
}
impl Param for u32 {
    fn slot(self) -> u64 {
        u64::from(self)
    }
}
impl Param for i32 {
    fn slot(self) -> u64 {
        u64::from(self as u32)
    }
}

impl<'a> KernelArgs<'a> {
    /// A buffer the kernel reads.
    pub(crate) fn input<T>(&mut self, gpu: &'a Gpu, buf: &'a CudaSlice<T>) -> &mut Self {
        use cudarc::driver::DevicePtr;
        let (address, guard) = buf.device_ptr(&gpu.stream);
        self.slots.push(address);
        self.guards.push(guard);
        self
    }
    /// A buffer the kernel writes.
    pub(crate) fn output<T>(&mut self, gpu: &'a Gpu, buf: &'a mut CudaSlice<T>) -> &mut Self {
        let (address, guard) = buf.device_ptr_mut(&gpu.stream);
        self.slots.push(address);
        self.guards.push(guard);
        self
    }
    /// A value (a size, a device address already resolved, an fp32 bit pattern).
    pub(crate) fn value(&mut self, v: impl Param) -> &mut Self {
        self.slots.push(v.slot());
        self
    }
}

pub(crate) fn cuda_err(what: &str) -> impl FnOnce(cudarc::driver::DriverError) -> Error + '_ {
    move |e| Error::Cuda(format!("{what}: {e}"))
}

impl Gpu {
    /// Opens GPU `ordinal` and loads the kernels compiled for its architecture.
    ///
    /// ```no_run
    /// let gpu = convrs::Gpu::new(0)?;
    /// println!("{}", gpu.info().name);
    /// # Ok::<(), convrs::Error>(())
    /// ```
    pub fn new(ordinal: usize) -> Result<Gpu> {
        #[cfg(feature = "dynamic-loading")]
        // SAFETY: only tries to dlopen the driver library; nothing from it is called yet.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(Error::NoGpu("the CUDA driver library (libcuda.so) was not found: is an NVIDIA driver installed?".into()));
        }
        let count = CudaContext::device_count().map_err(|e| Error::NoGpu(format!("the CUDA driver did not initialise: {e}")))?;
        if count <= 0 {
            return Err(Error::NoGpu("the driver reports no CUDA device".into()));
        }
        if ordinal >= count as usize {
            return Err(Error::NoGpu(format!("device {ordinal} requested but only {count} present")));
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| Error::NoGpu(format!("cannot open device {ordinal}: {e}")))?;
        // One stream, used in order: cudarc's per-buffer event tracking would only add launch overhead.
        // SAFETY: convrs issues all work on a single stream, so no cross-stream ordering is needed.
        unsafe { ctx.disable_event_tracking() };
        // A stream of our own, not the legacy default stream: only such a stream can be captured
        // into a CUDA graph (the bench's timing method).
        let stream = ctx.new_stream().map_err(cuda_err("stream"))?;
        Self::open(ctx, stream, ordinal)
    }

    /// convrs on a stream the caller owns (a framework's: candle's `CudaDevice::cuda_stream()`,
    /// or any cudarc stream): every launch, copy and allocation of this `Gpu` is enqueued on
    /// `stream`, in the caller's order, and nothing here synchronizes it except
    /// [`Gpu::synchronize`] and the host copies ([`Gpu::download`]). The stream's context keeps
    /// its settings: cudarc's event tracking, if the caller has it on, stays on (convrs's own
    /// buffers then carry events too), so the caller's other tensors keep their cross-stream
    /// ordering.
    ///
    /// The kernels are loaded into the stream's context once per `Gpu`: keep one per stream and
    /// share it (`Gpu` is `Send + Sync`; launches from several threads go to the one stream in
    /// the order they are made).
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// let ctx = cudarc::driver::CudaContext::new(0).expect("a GPU");
    /// let stream = ctx.new_stream().expect("a stream"); // the caller's
    /// let gpu = convrs::Gpu::from_stream(stream.clone())?;
    /// assert!(Arc::ptr_eq(gpu.stream(), &stream));
    /// # Ok::<(), convrs::Error>(())
    /// ```
    pub fn from_stream(stream: Arc<CudaStream>) -> Result<Gpu> {
        let ctx = stream.context().clone();
        let ordinal = ctx.ordinal();
        Self::open(ctx, stream, ordinal)
    }

    /// Reads the device and loads the kernels into `ctx`, launching on `stream`.
    fn open(ctx: Arc<CudaContext>, stream: Arc<CudaStream>, ordinal: usize) -> Result<Gpu> {
        ctx.bind_to_thread().map_err(cuda_err("binding the context"))?;
        let cc = ctx.compute_capability().map_err(cuda_err("compute capability"))?;
        let ptx_arch = crate::ptx::arch_for(cc).ok_or_else(|| {
            Error::NoGpu(format!("device has compute capability {}.{}; convrs needs 8.0 (Ampere) or newer", cc.0, cc.1))
        })?;
        let attr = |a: CUdevice_attribute| ctx.attribute(a).map_err(cuda_err("device attribute"));
        let (free, total) = ctx.mem_get_info().map_err(cuda_err("memory info"))?;
        let mut driver_version = 0;
        // SAFETY: writes one int through a valid pointer.
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver_version) };
        let info = DeviceInfo {
            ordinal,
            name: ctx.name().map_err(cuda_err("device name"))?,
            compute_capability: cc,
            multiprocessors: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            total_memory_bytes: total as u64,
            free_memory_bytes: free as u64,
            l2_cache_bytes: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
            max_shared_bytes_per_block_optin: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
            driver_cuda_version: driver_version,
            ptx_arch,
        };
        let clock_mhz = (attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? / 1000) as u32;
        let sms = info.multiprocessors as u32;
        let (fp32_tflops, f16_tflops) = DeviceModel::peak_tflops(cc, sms, clock_mhz);
        let mem_khz = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)? as f64;
        let bus_bits = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)? as f64;
        let mut model = DeviceModel {
            name: info.name.clone(),
            compute_capability: cc,
            sms,
            smem_per_sm: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)? as u32,
            smem_per_block: info.max_shared_bytes_per_block_optin as u32,
            regs_per_sm: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)? as u32,
            max_threads_per_sm: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)? as u32,
            max_blocks_per_sm: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)? as u32,
            l2_bytes: info.l2_cache_bytes as u64,
            clock_mhz,
            // Double data rate: two transfers per memory clock over the bus.
            mem_gbps: 2.0 * mem_khz * 1e3 * bus_bits / 8.0 / 1e9,
            max_grid_y: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)? as u32,
            max_grid_z: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)? as u32,
            fp32_tflops,
            f16_tflops,
            sm90a: false,
        };
        let module = ctx
            .load_module(cudarc::nvrtc::Ptx::from_src(crate::ptx::source(ptx_arch)))
            .map_err(cuda_err("loading the embedded PTX"))?;
        // Without it the device still runs every other kernel: the wgmma plans refuse (model.sm90a).
        let sm90a = if crate::ptx::loads_sm90a(cc) {
            match ctx.load_module(cudarc::nvrtc::Ptx::from_src(crate::ptx::SM90A)) {
                Ok(m) => Some(m),
                Err(e) => {
                    eprintln!("convrs: warning: the sm_90a PTX did not load ({e}); the wgmma kernels are unavailable");
                    None
                }
            }
        } else {
            None
        };
        model.sm90a = sm90a.is_some();
        // The sm_90 and sm_90a builds' entries all execute `griddepcontrol.wait` (kernels-gpu's
        // `entry_wait`) before touching global memory, most at entry, the Hopper ones after
        // their set-up (tests/ptxas_sm90a.rs checks it); the sm_80 build has no such
        // instruction. The driver needs `cuLaunchKernelEx` (CUDA 12.0) and captures such
        // launches into graphs from 12.3.
        let programmatic = ptx_arch == "sm_90" && driver_version >= 12030 && std::env::var("CONVRS_PDL").map_or(true, |v| v != "0");
        Ok(Gpu { ctx, stream, module, sm90a, functions: Mutex::new(HashMap::new()), info, model, tune_cache: Mutex::new(None), tensor_maps: Mutex::default(), programmatic })
    }

    /// Whether kernels are launched with programmatic stream serialization (programmatic
    /// dependent launch): on compute capability 9.0 and newer (with a driver of CUDA 12.3 or
    /// newer), where every convrs kernel waits
    /// (`griddepcontrol.wait`) for the previous kernel in the stream before it touches memory,
    /// its blocks may be scheduled as that kernel's blocks exit, before the whole grid is
    /// retired, so back-to-back launches do not pay the whole launch latency each (0.2-0.4 us
    /// a launch on an H200). Results are the same either way; the environment variable
    /// `CONVRS_PDL=0` turns it off (to compare times).
    pub fn programmatic_launch(&self) -> bool {
        self.programmatic
    }

    /// Enqueues `f` on the stream with `args`: by `cuLaunchKernelEx`, with programmatic stream
    /// serialization where [`Gpu::programmatic_launch`] says so (by `cuLaunchKernel` on drivers
    /// older than CUDA 12.0, which lack the former).
    ///
    /// # Safety
    /// `args` are `f`'s parameters in order, each of its type, and `f`, launched with `cfg`,
    /// stays inside the buffers they address.
    pub(crate) unsafe fn launch(&self, f: &CudaFunction, cfg: cudarc::driver::LaunchConfig, args: KernelArgs<'_>) -> std::result::Result<(), cudarc::driver::DriverError> {
        use cudarc::driver::sys;
        self.ctx.bind_to_thread()?;
        let KernelArgs { mut slots, guards } = args;
        let mut params: Vec<*mut std::ffi::c_void> = slots.iter_mut().map(|s| (s as *mut u64).cast()).collect();
        let (grid, block) = (cfg.grid_dim, cfg.block_dim);
        if self.info.driver_cuda_version < 12000 {
            // No `cuLaunchKernelEx` before CUDA 12.0 (so no programmatic launch either).
            // SAFETY: as below, without the attribute.
            let r = unsafe { sys::cuLaunchKernel(f.cu_function(), grid.0, grid.1, grid.2, block.0, block.1, block.2, cfg.shared_mem_bytes, self.stream.cu_stream(), params.as_mut_ptr(), std::ptr::null_mut()) }.result();
            drop(guards);
            return r;
        }
        let mut attr = sys::CUlaunchAttribute {
            id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
            pad: [0; 4],
            value: sys::CUlaunchAttributeValue { programmaticStreamSerializationAllowed: 1 },
        };
        let config = sys::CUlaunchConfig {
            gridDimX: grid.0,
            gridDimY: grid.1,
            gridDimZ: grid.2,
            blockDimX: block.0,
            blockDimY: block.1,
            blockDimZ: block.2,
            sharedMemBytes: cfg.shared_mem_bytes,
            hStream: self.stream.cu_stream(),
            attrs: &mut attr,
            numAttrs: u32::from(self.programmatic),
        };
        // SAFETY: the config and the parameter array live across the call, which copies them;
        // each parameter points at an 8-byte slot holding the value in its low bytes (the
        // driver reads the parameter's own size; x86-64 and aarch64 hosts are little-endian),
        // and the caller vouches for the parameters and the kernel.
        let r = unsafe { sys::cuLaunchKernelEx(&config, f.cu_function(), params.as_mut_ptr(), std::ptr::null_mut()) }.result();
        // Recorded after the launch, as cudarc's own launches do (where the context tracks events).
        drop(guards);
        r
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The device as the planners see it (SMs, shared memory, registers, clock, bandwidth).
    pub fn model(&self) -> &DeviceModel {
        &self.model
    }

    /// The tuning cache of this process, loaded from [`crate::tune::TuneCache::default_path`]
    /// at first use (its load warnings are printed to stderr once, then dropped).
    pub(crate) fn tune_cache(&self) -> std::sync::MutexGuard<'_, Option<crate::tune::TuneCache>> {
        let mut guard = self.tune_cache.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            let mut cache = crate::tune::TuneCache::load(crate::tune::TuneCache::default_path());
            for w in cache.warnings.drain(..) {
                eprintln!("convrs: warning: {w}");
            }
            *guard = Some(cache);
        }
        guard
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The kernel `name`, with its dynamic shared memory limit raised to at least `shared_bytes`.
    pub(crate) fn function(&self, name: &'static str, shared_bytes: u32) -> Result<CudaFunction> {
        let mut cache = self.functions.lock().unwrap_or_else(|p| p.into_inner());
        if !cache.contains_key(name) {
            // The Hopper-only entries live in the sm_90a module, loaded on compute capability 9.0.
            let module = match &self.sm90a {
                Some(m) if name.starts_with("wgmma_") => m,
                _ => &self.module,
            };
            let f = module.load_function(name).map_err(cuda_err(name))?;
            cache.insert(name, (f, 48 * 1024));
        }
        let (f, limit) = cache.get_mut(name).expect("inserted above");
        if shared_bytes > *limit {
            f.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared_bytes as i32)
                .map_err(cuda_err("raising the dynamic shared memory limit"))?;
            *limit = shared_bytes;
        }
        Ok(f.clone())
    }

    /// The device address of the TMA tensor map of `filter` (KRSC, `problem`'s sizes) with boxes
    /// of `rows` output channels, encoded and uploaded at the first request for it.
    pub(crate) fn filter_map<T: Element>(&self, filter: &CudaSlice<T>, problem: &crate::Conv2d, rows: u32) -> Result<u64> {
        use cudarc::driver::DevicePtr;
        let (address, _sync) = filter.device_ptr(&self.stream);
        let key = crate::tensor_map::FilterMapKey::new(address, problem, rows, T::DTYPE);
        self.tensor_map(crate::tensor_map::MapKey::Filter(key))
    }

    /// The device address of the TMA tensor map of `input` of the given kind (im2col: NHWC,
    /// `problem`'s sizes and geometry, or with `fold_w` its folded problem's on the same bytes;
    /// planes: NCHW), encoded and uploaded at the first request for it.
    pub(crate) fn input_map<T: Element>(&self, input: &CudaSlice<T>, problem: &crate::Conv2d, kind: crate::plan::InputMap, fold_w: bool) -> Result<u64> {
        use crate::tensor_map::{InputMapKey, MapKey, PlaneMapKey, RowMapKey};
        use cudarc::driver::DevicePtr;
        let (address, _sync) = input.device_ptr(&self.stream);
        let key = match kind {
            crate::plan::InputMap::Im2col { pixels } => MapKey::Input(InputMapKey::new(address, problem, T::DTYPE, pixels, fold_w).map_err(Error::InvalidArgument)?),
            crate::plan::InputMap::Planes => MapKey::Planes(PlaneMapKey::new(address, problem, T::DTYPE)),
            crate::plan::InputMap::Rows => MapKey::Rows(RowMapKey::new(address, problem, T::DTYPE)),
        };
        self.tensor_map(key)
    }

    /// The device address of the TMA tensor map of the 16-bit NHWK residual at `address`
    /// (`outputs` elements, `k` channels a pixel) with boxes of `rows` pixels, encoded and
    /// uploaded at the first request for it.
    pub(crate) fn residual_map(&self, address: u64, k: usize, outputs: usize, rows: u32, dtype: crate::DType) -> Result<u64> {
        self.tensor_map(crate::tensor_map::MapKey::Residual(crate::tensor_map::ResidualMapKey::new(address, k, outputs, rows, dtype)))
    }

    fn tensor_map(&self, key: crate::tensor_map::MapKey) -> Result<u64> {
        let mut maps = self.tensor_maps.lock().unwrap_or_else(|p| p.into_inner());
        maps.address(key, |bytes| {
            // An upload inside a CUDA graph capture would be recorded, not done: the graph would
            // copy from a host buffer long gone, and the kernel read a map of garbage.
            let capturing = self.stream.capture_status().map_err(cuda_err("querying the stream's capture status"))?;
            if capturing != cudarc::driver::sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
                return Err(Error::InvalidArgument(
                    "a TMA tensor map for a buffer not run on before cannot be made while the stream is captured into a CUDA graph: run once on this buffer before capturing".into(),
                ));
            }
            self.upload(bytes)
        })
    }

    /// Copies `data` to a new device buffer.
    pub fn upload<T: DeviceRepr>(&self, data: &[T]) -> Result<CudaSlice<T>> {
        self.stream.clone_htod(data).map_err(cuda_err("copy to device"))
    }

    /// Copies a device buffer back to the host (waits for the stream).
    pub fn download<T: DeviceRepr + Default + Clone>(&self, buf: &CudaSlice<T>) -> Result<Vec<T>> {
        self.stream.clone_dtoh(buf).map_err(cuda_err("copy to host"))
    }

    /// A new device buffer of `len` elements, zeroed.
    pub fn alloc_zeros<T: DeviceRepr + ValidAsZeroBits>(&self, len: usize) -> Result<CudaSlice<T>> {
        self.stream.alloc_zeros(len).map_err(cuda_err("device allocation"))
    }

    /// Fills a buffer with a quiet-NaN bit pattern, so any element a kernel fails to write shows
    /// up as NaN in the comparison instead of a plausible stale value.
    pub fn poison<T>(&self, buf: &mut CudaSlice<T>) -> Result<()> {
        let n_bytes = buf.num_bytes();
        let (ptr, _sync) = buf.device_ptr_mut(&self.stream);
        // 0x7FC0 repeated is a quiet NaN in both f32 (0x7FC07FC0) and f16 (0x7FC0).
        // SAFETY: `ptr` addresses `n_bytes` bytes of the buffer, which stays alive until the stream is synchronized.
        let r = unsafe { cudarc::driver::sys::cuMemsetD16Async(ptr, 0x7FC0, n_bytes / 2, self.stream.cu_stream()) };
        r.result().map_err(cuda_err("poisoning the output"))
    }

    /// Waits for all work on the stream and reports any kernel failure.
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(cuda_err("kernel execution"))
    }
}

// The docs above promise these; a field that broke them would fail here, at compile time.
const _: fn() = || {
    fn shared<T: Send + Sync>() {}
    fn movable<T: Send>() {}
    shared::<Gpu>();
    movable::<crate::device_conv::DeviceConv<half::f16>>();
};

#[cfg(test)]
mod tests {
    use super::{KernelArgs, Param};

    /// The driver copies each parameter's own size from its slot's first bytes: the low bytes
    /// of the slot must be the value's bytes as the kernel reads them (little-endian hosts).
    #[test]
    fn parameter_slots_hold_the_values_bytes_first() {
        for v in [0i32, 1, -1, i32::MIN, i32::MAX, 123_456] {
            assert_eq!(v.slot().to_le_bytes()[..4], v.to_le_bytes(), "{v}");
            assert_eq!(v.slot() >> 32, 0, "{v}: the high half stays zero");
        }
        for v in [0u32, 1, u32::MAX, 0x3f80_0000] {
            assert_eq!(v.slot().to_le_bytes()[..4], v.to_le_bytes(), "{v}");
        }
        assert_eq!(0x0123_4567_89ab_cdefu64.slot(), 0x0123_4567_89ab_cdef);
        let mut args = KernelArgs::default();
        args.value(7i32).value(0xdead_beef_u64).value(2u32);
        assert_eq!(args.slots, [7, 0xdead_beef, 2], "in the order pushed");
    }
}
