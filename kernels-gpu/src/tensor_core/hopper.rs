//! Family 3 on Hopper (sm_90a PTX only): the implicit GEMM of [`super::implicit_gemm`] on plain
//! NHWC / KRSC / NHWK data with the warpgroup instruction `wgmma.mma_async`, as a progression of
//! policies (`convrs_spec::hopper::Policy`). Every entry comes from one row of
//! `convrs_spec::hopper_configs!`, in the fp16 and the bf16 type:
//!
//! | step | policy | what changes |
//! | --- | --- | --- |
//! | 3 | `wgmma_multistage` ([`multistage`]) | `mma.sync` -> `wgmma`; every thread copies (`cp.async`) and computes |
//! | 4 | `wgmma_ws_cpasync` ([`kernel`]) | warp-specialized: a producer warpgroup (filters by TMA) and two consumers on an mbarrier ring |
//! | 5 | `wgmma_ws_cpasync_cluster2` | clusters of 2 CTAs along M share each filter tile by TMA multicast |
//! | 6 | `wgmma_ws_cpasync_persistent[_cluster2]` | a persistent grid: the next tile's loads under the epilogue |
//! | 7 | `wgmma_ws_tma_persistent[_cluster2]` | activations by im2col TMA too: one producer thread, no proxy fence |
//! | 8 | `wgmma_ws_tma_splitk` | split-K: the grid's z slices share each tile's reduction, meeting in a workspace |
//! | 9 | `wgmma_nchw1x1_persistent` ([`planes`]) | NCHW data, 1x1: a GEMM per image, the filter as A, the pixels as an MN-major B; no transform |
//! | 10 | `wgmma_ws_tma_pingpong[_tf32]` ([`kernel`]) | ping-pong: each consumer warpgroup a whole tile, one's epilogue under the other's mainloop |
//! | 12 | `wgmma_ws_tma_pingpong_m64[_tf32]` | ping-pong on 64-row tiles, one m64 block a warpgroup: twice the tiles, epilogues of step 7's size |
//! | 13 | `wgmma_nchw1x1_persistent_[3x]tf32` ([`planes`]) | step 9 on fp32 data, the other way round: the pixels as A through registers (tf32 takes K-major shared operands only), the filter as B |
//! | 14 | `wgmma_nchw_rows_persistent` ([`plane_rows`]) | step 9 for any filter at column stride 1: the columns output rows, one tiled copy of an input row a (tap, chunk) from a 16-byte boundary, shifted into the B tile by the producer warpgroup; no transform of the activations |
//! | 15 | `wgmma_nchw1x1_pingpong_m64` ([`planes`]) | step 9 on step 12's 64-row ping-pong tiles: K rounded up to 64 rows an image, not 128; one warpgroup's stores under the other's mainloop |
//! | 16 | `wgmma_ws_tma_{persistent,pingpong,pingpong_m64}_to_nchw` ([`nchw_out`]) | steps 7, 10 and 12 storing the output NCHW: an NCHW caller's output transpose goes; the bare 16-bit store on whole 8-pixel runs staged transposed by `stmatrix.trans` |
//! | 17 | `wgmma_nchw_patch_persistent` ([`nchw_patch`]) | NCHW data, any filter at stride 1: a chunk's input rows land once, the producer warpgroup transposes them into a K-major patch, and each tap's A operand is the patch from a row offset; NCHW out as step 16; no transform |
//! | 18 | `wgmma_nchw1x1_pingpong` ([`planes`]) | step 9 on step 10's ping-pong tiles: 128 output channels a warpgroup's tile, its stores under the other's mainloop |
//!
//! The pieces of the warp-specialized kernel, each written once: [`producer`], [`consumer`],
//! [`epilogue`] (with its residual by TMA, [`residual`]), the tile [`scheduler`], the
//! [`split_k`] meeting, and the ring (`prelude::pipeline`).

pub mod consumer;
pub mod epilogue;
pub mod kernel;
pub mod math;
pub mod multistage;
pub mod nchw_out;
pub mod nchw_patch;
pub mod nchw_residual;
pub mod plane_rows;
pub mod planes;
pub mod producer;
pub mod residual;
pub mod scheduler;
pub mod split_k;

/// Declares the fp16 and the bf16 entry of every row of `convrs_spec::hopper_configs!`, on
/// operands `$ops`, with the argument list of its policy (`convrs_spec::hopper::Producer`,
/// `Schedule`).
macro_rules! entries {
    ($ops:ident $(($producer:ident, $schedule:ident, $cluster:tt, $bm:tt, $bn:tt, $stages:tt, $fp16:ident, $bf16:ident))*) => {
        $(
            entries!(@one $ops $producer $schedule $cluster $bm $bn $stages $fp16 F16 F16Planes);
            entries!(@one $ops $producer $schedule $cluster $bm $bn $stages $bf16 Bf16 Bf16Planes);
        )*
    };
    (@one $ops:ident Planes Persistent 1 128 $bn:tt $stages:tt $name:ident $math:ident $planes:ident) => {
        $crate::conv_kernel!(
            set_up_first fn $name(x: *const u16, w: *const u16, y: *mut f32, wmap: *const u8, xmap: *const u8) => $crate::tensor_core::hopper::kernel::conv_tma::<
                planes::Planes<128>, [f32; $bn / 2], $stages, 1, true, false, math::$planes, 128>
        );
    };
    (@one $ops:ident Planes PingPong 1 $bm:tt $bn:tt $stages:tt $name:ident $math:ident $planes:ident) => {
        $crate::conv_kernel!(
            set_up_first fn $name(x: *const u16, w: *const u16, y: *mut f32, wmap: *const u8, xmap: *const u8) => $crate::tensor_core::hopper::kernel::conv_tma::<
                planes::Planes<$bm>, [f32; $bn / 2], $stages, 1, true, true, math::$planes, $bm>
        );
    };
    (@one $ops:ident NchwPatch Persistent 1 128 $bn:tt $stages:tt $name:ident $math:ident $planes:ident) => {
        $crate::conv_kernel!(
            set_up_first fn $name(x: *const u16, w: *const u16, y: *mut f32, wmap: *const u8, xmap: *const u8) => $crate::tensor_core::hopper::nchw_patch::conv_patch::<
                [f32; $bn / 2], $stages, math::$math>
        );
    };
    (@one $ops:ident PlaneRows Persistent 1 128 $bn:tt $stages:tt $name:ident $math:ident $planes:ident) => {
        $crate::conv_kernel!(
            set_up_first fn $name(x: *const u16, w: *const u16, y: *mut f32, wmap: *const u8, xmap: *const u8) => $crate::tensor_core::hopper::kernel::conv_tma::<
                plane_rows::PlaneRows, [f32; $bn / 2], $stages, 1, true, false, math::$planes, 128>
        );
    };
    (@one $ops:ident Multistage Tile 1 128 $bn:tt $stages:tt $name:ident $math:ident $planes:ident) => {
        $crate::conv_kernel!(
            fn $name(x: *const u16, w: *const u16, y: *mut f32) => $crate::tensor_core::hopper::multistage::conv::<$ops, [f32; $bn / 2], $stages, math::$math>
        );
    };
    (@one $ops:ident WsCpAsync $schedule:ident $cluster:tt 128 $bn:tt $stages:tt $name:ident $math:ident $planes:ident) => {
        $crate::conv_kernel!(
            set_up_first fn $name(x: *const u16, w: *const u16, y: *mut f32, wmap: *const u8) => $crate::tensor_core::hopper::kernel::conv_cp_async::<
                $ops, [f32; $bn / 2], $stages, $cluster, { matches!(convrs_spec::hopper::Schedule::$schedule, convrs_spec::hopper::Schedule::Persistent) }, math::$math>
        );
    };
    (@one $ops:ident WsTma SplitK 1 128 $bn:tt $stages:tt $name:ident $math:ident $planes:ident) => {
        $crate::conv_kernel!(
            set_up_first fn $name(x: *const u16, w: *const u16, y: *mut f32, wmap: *const u8, xmap: *const u8, ws: *mut u32) => $crate::tensor_core::hopper::kernel::conv_split_k::<
                $ops, [f32; $bn / 2], $stages, math::$math>
        );
    };
    (@one $ops:ident WsTmaNchw PingPong 1 $bm:tt $bn:tt $stages:tt $name:ident $math:ident $planes:ident) => {
        $crate::conv_kernel!(
            set_up_first fn $name(x: *const u16, w: *const u16, y: *mut f32, wmap: *const u8, xmap: *const u8) => $crate::tensor_core::hopper::kernel::conv_tma::<
                nchw_out::NhwcToNchw, [f32; $bn / 2], $stages, 1, true, true, math::$math, $bm>
        );
    };
    (@one $ops:ident WsTmaNchw Persistent 1 128 $bn:tt $stages:tt $name:ident $math:ident $planes:ident) => {
        $crate::conv_kernel!(
            set_up_first fn $name(x: *const u16, w: *const u16, y: *mut f32, wmap: *const u8, xmap: *const u8) => $crate::tensor_core::hopper::kernel::conv_tma::<
                nchw_out::NhwcToNchw, [f32; $bn / 2], $stages, 1, true, false, math::$math, 128>
        );
    };
    (@one $ops:ident WsTma PingPong 1 $bm:tt $bn:tt $stages:tt $name:ident $math:ident $planes:ident) => {
        $crate::conv_kernel!(
            set_up_first fn $name(x: *const u16, w: *const u16, y: *mut f32, wmap: *const u8, xmap: *const u8) => $crate::tensor_core::hopper::kernel::conv_tma::<
                $ops, [f32; $bn / 2], $stages, 1, true, true, math::$math, $bm>
        );
    };
    (@one $ops:ident WsTma $schedule:ident $cluster:tt 128 $bn:tt $stages:tt $name:ident $math:ident $planes:ident) => {
        $crate::conv_kernel!(
            set_up_first fn $name(x: *const u16, w: *const u16, y: *mut f32, wmap: *const u8, xmap: *const u8) => $crate::tensor_core::hopper::kernel::conv_tma::<
                $ops, [f32; $bn / 2], $stages, $cluster, { matches!(convrs_spec::hopper::Schedule::$schedule, convrs_spec::hopper::Schedule::Persistent) }, false, math::$math, 128>
        );
    };
}

/// Declares the entry of every row of `convrs_spec::hopper_f32_configs!` on operands `$ops`:
/// the im2col TMA producer on a persistent grid, fp32 data, the reduction whole or split; or
/// (`PlanePixels`) NCHW planes with the pixels as the rows.
macro_rules! f32_entries {
    ($ops:ident $(($math:ident, $producer:ident, $schedule:ident, 1, $bm:tt, $bn:tt, $stages:tt, $name:ident))*) => {
        $(
            f32_entries!(@one $ops $producer $math $schedule $bm $bn $stages $name);
        )*
    };
    (@one $ops:ident PlanePixels $math:ident Persistent 128 $bn:tt $stages:tt $name:ident) => {
        $crate::conv_kernel!(
            set_up_first fn $name(x: *const f32, w: *const f32, y: *mut f32, wmap: *const u8, xmap: *const u8) => $crate::tensor_core::hopper::kernel::conv_tma_f32::<
                planes::PlanePixels, [f32; $bn / 2], $stages, false, plane_math!($math), 128>
        );
    };
    (@one $ops:ident WsTma $math:ident $schedule:ident $bm:tt $bn:tt $stages:tt $name:ident) => {
        f32_entries!(@one $ops $math $schedule $bm $bn $stages $name);
    };
    (@one $ops:ident $math:ident Persistent 128 $bn:tt $stages:tt $name:ident) => {
        $crate::conv_kernel!(
            set_up_first fn $name(x: *const f32, w: *const f32, y: *mut f32, wmap: *const u8, xmap: *const u8) => $crate::tensor_core::hopper::kernel::conv_tma_f32::<
                $ops, [f32; $bn / 2], $stages, false, math::$math, 128>
        );
    };
    (@one $ops:ident $math:ident PingPong $bm:tt $bn:tt $stages:tt $name:ident) => {
        $crate::conv_kernel!(
            set_up_first fn $name(x: *const f32, w: *const f32, y: *mut f32, wmap: *const u8, xmap: *const u8) => $crate::tensor_core::hopper::kernel::conv_tma_f32::<
                $ops, [f32; $bn / 2], $stages, true, math::$math, $bm>
        );
    };
    (@one $ops:ident $math:ident SplitK 128 $bn:tt $stages:tt $name:ident) => {
        $crate::conv_kernel!(
            set_up_first fn $name(x: *const f32, w: *const f32, y: *mut f32, wmap: *const u8, xmap: *const u8, ws: *mut u32) => $crate::tensor_core::hopper::kernel::conv_split_k_f32::<
                $ops, [f32; $bn / 2], $stages, math::$math>
        );
    };
}

/// The [`math`] type of an fp32 row's `Math` on NCHW pixel planes.
macro_rules! plane_math {
    (Tf32) => { math::Tf32Planes };
    (Tf32x3) => { math::Tf32x3Planes };
}

use super::nhwc::Nhwc;
convrs_spec::hopper_configs!(entries, Nhwc);
convrs_spec::hopper_f32_configs!(f32_entries, Nhwc);
