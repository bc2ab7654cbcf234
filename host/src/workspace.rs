//! Device memory a plan needs beside its operands: the split-K schedule's counters and partial
//! sums (`convrs_spec::split_k`). Whoever runs a plan owns its workspace: [`crate::prepared::Prepared`]
//! allocates one with its operands, a caller of [`crate::launch`] passes one in. It is allocated
//! zeroed once and never moved or grown under a launch, so a CUDA graph that captured a launch
//! replays against memory that is still there (the plan's owner keeps it alive); every launch
//! leaves the counters at zero again, so consecutive launches on one stream may share it.
//!
//! ```no_run
//! use convrs::workspace::Workspace;
//! use convrs::{Algorithm, Conv2d, DType, Gpu};
//! let gpu = Gpu::new(0)?;
//! let p = Conv2d::new(16, 832, 7, 7, 128, 5, 5).with_pad(2);
//! let plan = "wgmma_ws_tma_splitk".parse::<Algorithm>()?.plan(&p, DType::F16, gpu.model())?;
//! let ws = Workspace::for_plan(&gpu, &plan)?;
//! assert!(ws.bytes() >= plan.workspace_bytes);
//! # Ok::<(), convrs::Error>(())
//! ```

use cudarc::driver::CudaSlice;

use crate::plan::LaunchPlan;
use crate::{Gpu, Result};

/// A zeroed device buffer for one plan's launches (or none, for plans that take none).
pub struct Workspace {
    buf: Option<CudaSlice<u8>>,
}

impl Workspace {
    /// No workspace: for plans whose [`LaunchPlan::workspace_bytes`] is 0.
    pub fn none() -> Self {
        Workspace { buf: None }
    }

    /// A zeroed workspace of the size `plan` needs (none if it needs none).
    pub fn for_plan(gpu: &Gpu, plan: &LaunchPlan) -> Result<Self> {
        Self::zeroed(gpu, plan.workspace_bytes)
    }

    /// A zeroed workspace of `bytes` (none for 0).
    pub fn zeroed(gpu: &Gpu, bytes: usize) -> Result<Self> {
        Ok(Workspace { buf: if bytes == 0 { None } else { Some(gpu.alloc_zeros::<u8>(bytes)?) } })
    }

    /// Its size in bytes.
    pub fn bytes(&self) -> usize {
        self.buf.as_ref().map_or(0, CudaSlice::len)
    }

    /// The buffer, if any.
    pub(crate) fn slice(&self) -> Option<&CudaSlice<u8>> {
        self.buf.as_ref()
    }
}
