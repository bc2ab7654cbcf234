//! The occupancy and wave model every planner shares, read off the device: how many blocks of a
//! kernel an SM holds at once, and how long a grid takes when the SMs work through it in waves.

use crate::device::DeviceModel;

/// Shared memory the driver reserves per resident block (sm_80 and later).
const SMEM_RESERVED_PER_BLOCK: usize = 1024;

/// Blocks of `threads` threads with `regs` registers each and `smem_bytes` of shared memory that
/// one SM holds at once: the least of the register file (allocated per warp, 8 registers a thread
/// at a time), shared memory, the thread limit and the block limit; at least 1 (a block that does
/// not fit at all is refused by the plan before it gets here).
pub fn blocks_per_sm(d: &DeviceModel, threads: usize, regs: usize, smem_bytes: usize) -> usize {
    let warps = threads.div_ceil(32).max(1);
    let by_regs = d.regs_per_sm as usize / (regs.div_ceil(8) * 8 * 32 * warps).max(1);
    let by_smem = d.smem_per_sm as usize / (smem_bytes + SMEM_RESERVED_PER_BLOCK);
    let by_threads = d.max_threads_per_sm as usize / (warps * 32);
    by_regs.min(by_smem).min(by_threads).min(d.max_blocks_per_sm as usize).max(1)
}

/// Time of a grid of `blocks` blocks, `per_block_sm` of which an SM runs together: full waves of
/// every SM holding that many, then a tail wave in which each SM holds `ceil(rest / SMs)`.
/// `per_sm(resident)` is the time an SM takes for `resident` blocks running together (any unit).
pub fn waves(d: &DeviceModel, blocks: f64, per_block_sm: f64, per_sm: impl Fn(f64) -> f64) -> f64 {
    let sms = d.sms.max(1) as f64;
    let full = (blocks / (sms * per_block_sm)).floor();
    let rest = blocks - full * sms * per_block_sm;
    full * per_sm(per_block_sm) + if rest > 0.0 { per_sm((rest / sms).ceil()) } else { 0.0 }
}

/// What every launch costs besides its work (launch latency, ramp-up and drain), microseconds:
/// the floor under every prediction, so that tiny problems compare by it.
pub const LAUNCH_US: f64 = 3.0;

/// Microseconds of `cycles` SM clock cycles on `d`.
pub fn cycles_us(d: &DeviceModel, cycles: f64) -> f64 {
    cycles / d.clock_mhz.max(1) as f64
}

/// Microseconds to move `bytes` through device memory at its peak bandwidth.
pub fn memory_us(d: &DeviceModel, bytes: f64) -> f64 {
    bytes / (d.mem_gbps * 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::device::tests::h100;

    #[test]
    fn residency_is_limited_by_the_scarcest_resource() {
        let d = h100();
        // 256 threads x 232 registers (232 is a multiple of 8): 59392 of 65536 registers: one block.
        assert_eq!(blocks_per_sm(&d, 256, 232, 100 * 1024), 1);
        // 128 threads x 88 registers: 5 by registers (65536 / 11264); 4 stages of 64x64x32 fp16 =
        // 32 KiB + 1 KiB: 6 by shared memory (228 / 33); 16 by threads: 5.
        assert_eq!(blocks_per_sm(&d, 128, 88, 32 * 1024), 5);
        // Shared memory binds: 100 KiB blocks, two fit in 228 KiB.
        assert_eq!(blocks_per_sm(&d, 64, 32, 100 * 1024), 2);
        // Tiny blocks: the 32-block limit.
        assert_eq!(blocks_per_sm(&d, 32, 16, 0), 32);
        // A 40-thread block occupies two warps' registers and threads.
        assert_eq!(blocks_per_sm(&d, 40, 255, 0), 4);
    }

    #[test]
    fn waves_charge_the_tail() {
        let d = h100();
        // 264 blocks, 1 per SM: exactly 2 waves. 265: a third wave of one block on one SM.
        assert_eq!(waves(&d, 264.0, 1.0, |b| b * 10.0), 20.0);
        assert_eq!(waves(&d, 265.0, 1.0, |b| b * 10.0), 30.0);
        // 2 per SM: 300 blocks = one full wave of 264, then 36 over 132 SMs: one each.
        assert_eq!(waves(&d, 300.0, 2.0, |b| b * 10.0), 30.0);
    }

    #[test]
    fn unit_conversions() {
        let d = h100();
        assert!((cycles_us(&d, 1980.0) - 1.0).abs() < 1e-12);
        // 3350 GB/s: 3.35 MB per microsecond.
        assert!((memory_us(&d, 3.35e6) - 1.0).abs() < 1e-12);
    }
}
