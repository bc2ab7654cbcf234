//! What the device is, as the planners see it: multiprocessors, shared memory, registers, L2,
//! clock and memory bandwidth. Read from the GPU ([`crate::Gpu::model`]) or taken from a
//! built-in model of a known GPU ([`DeviceModel::named`]) so that `convrs explain` answers on a
//! machine without one. Every planner derives occupancy and waves from these numbers, never
//! from constants of one GPU.
//!
//! ```
//! use convrs::device::DeviceModel;
//! let h100 = DeviceModel::named("h100")?;
//! assert_eq!(h100.sms, 132);
//! assert!(DeviceModel::named("h300").unwrap_err().to_string().contains("h100"));
//! # Ok::<(), convrs::Error>(())
//! ```

use crate::{Error, Result};

/// A device's resources and rates, read from the driver or from a built-in model.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DeviceModel {
    pub name: String,
    pub compute_capability: (i32, i32),
    /// Streaming multiprocessors.
    pub sms: u32,
    /// Shared memory one SM holds for all its resident blocks, bytes.
    pub smem_per_sm: u32,
    /// The most dynamic shared memory one block may opt in to, bytes.
    pub smem_per_block: u32,
    /// 32-bit registers per SM.
    pub regs_per_sm: u32,
    pub max_threads_per_sm: u32,
    pub max_blocks_per_sm: u32,
    pub l2_bytes: u64,
    /// SM clock under load, MHz (the driver reports the maximum boost clock).
    pub clock_mhz: u32,
    /// Device memory bandwidth, GB/s (peak: 2 x memory clock x bus width).
    pub mem_gbps: f64,
    pub max_grid_y: u32,
    pub max_grid_z: u32,
    /// Peak fp32 FMA rate, TFLOP/s.
    pub fp32_tflops: f64,
    /// Peak dense fp16 tensor-core rate with fp32 accumulation, TFLOP/s (Hopper: through wgmma;
    /// `mma.sync` reaches about two thirds of it there).
    pub f16_tflops: f64,
    /// Whether the Hopper-only kernels (`wgmma_*`, sm_90a PTX) can run: compute capability 9.0
    /// and, on a real device, their module loaded.
    pub sm90a: bool,
}

impl DeviceModel {
    /// The built-in models' names (`convrs explain --device-model NAME`).
    pub const KNOWN: &'static [&'static str] = &["h100", "h200", "a100", "l40s", "rtx4090"];

    /// A built-in model: the vendor's figures for the SXM / reference boards. An unknown name is
    /// an error that lists the known ones.
    pub fn named(name: &str) -> Result<DeviceModel> {
        const KIB: u32 = 1024;
        // The vendors' datasheet figures (SXM boards where there are several): leads, not measurements.
        let base = |name: &str, cc, sms, smem_sm_kib: u32, smem_block_kib: u32, max_blocks, l2_mib: u64, clock_mhz, mem_gbps, (fp32_tflops, f16_tflops)| DeviceModel {
            name: name.to_string(),
            compute_capability: cc,
            sms,
            smem_per_sm: smem_sm_kib * KIB,
            smem_per_block: smem_block_kib * KIB,
            regs_per_sm: 65536,
            max_threads_per_sm: if cc == (8, 9) { 1536 } else { 2048 },
            max_blocks_per_sm: max_blocks,
            l2_bytes: l2_mib << 20,
            clock_mhz,
            mem_gbps,
            max_grid_y: 65535,
            max_grid_z: 65535,
            fp32_tflops,
            f16_tflops,
            sm90a: crate::ptx::loads_sm90a(cc),
        };
        Ok(match name.to_ascii_lowercase().as_str() {
            "h100" => base("NVIDIA H100 SXM (model)", (9, 0), 132, 228, 227, 32, 50, 1980, 3350.0, (66.9, 989.0)),
            "h200" => base("NVIDIA H200 SXM (model)", (9, 0), 132, 228, 227, 32, 50, 1980, 4800.0, (66.9, 989.0)),
            "a100" => base("NVIDIA A100 SXM 80GB (model)", (8, 0), 108, 164, 163, 32, 40, 1410, 2039.0, (19.5, 312.0)),
            "l40s" => base("NVIDIA L40S (model)", (8, 9), 142, 100, 99, 24, 96, 2520, 864.0, (91.6, 362.0)),
            "rtx4090" => base("NVIDIA GeForce RTX 4090 (model)", (8, 9), 128, 100, 99, 24, 72, 2520, 1008.0, (82.6, 165.0)),
            _ => return Err(Error::InvalidArgument(format!("unknown device model `{name}`; known models: {}", Self::KNOWN.join(", ")))),
        })
    }

    /// Peak rates of a device the driver describes, from its architecture: fp32 lanes per SM
    /// (64 on sm_80, 128 on sm_86 and later) and dense fp16 tensor FMAs per SM per clock with
    /// fp32 accumulation (1024 on sm_80, 512 on sm_86/sm_89, 2048 on sm_90), 2 FLOP per FMA.
    pub fn peak_tflops(cc: (i32, i32), sms: u32, clock_mhz: u32) -> (f64, f64) {
        let (lanes, tensor) = match cc {
            (8, 0) => (64.0, 1024.0),
            (9, _) => (128.0, 2048.0),
            _ => (128.0, 512.0),
        };
        let per_clk = |x: f64| 2.0 * x * sms as f64 * clock_mhz as f64 * 1e6 / 1e12;
        (per_clk(lanes), per_clk(tensor))
    }

    /// Seconds per SM clock cycle.
    pub fn cycle_s(&self) -> f64 {
        1e-6 / self.clock_mhz.max(1) as f64
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The model the planners' tests plan on.
    pub(crate) fn h100() -> DeviceModel {
        DeviceModel::named("h100").unwrap()
    }

    #[test]
    fn every_known_model_resolves_and_is_plausible() {
        for name in DeviceModel::KNOWN {
            let m = DeviceModel::named(name).unwrap();
            assert!(m.sms >= 100 && m.smem_per_block <= m.smem_per_sm && m.mem_gbps > 500.0, "{m:?}");
        }
        assert_eq!(DeviceModel::named("H100").unwrap().sms, 132);
    }

    #[test]
    fn derived_rates_agree_with_the_datasheets() {
        // A device read from the driver gets its rates from the architecture: they must land near
        // the vendors' figures for the built-in models (clocks differ a little between the two).
        for name in ["h100", "a100", "l40s"] {
            let m = DeviceModel::named(name).unwrap();
            let (fp32, f16) = DeviceModel::peak_tflops(m.compute_capability, m.sms, m.clock_mhz);
            assert!((fp32 / m.fp32_tflops - 1.0).abs() < 0.1, "{name}: fp32 {fp32} vs {}", m.fp32_tflops);
            assert!((f16 / m.f16_tflops - 1.0).abs() < 0.1, "{name}: f16 {f16} vs {}", m.f16_tflops);
        }
    }

    #[test]
    fn unknown_model_lists_the_known_ones() {
        let e = DeviceModel::named("b200").unwrap_err().to_string();
        for name in DeviceModel::KNOWN {
            assert!(e.contains(name), "{e}");
        }
    }
}
