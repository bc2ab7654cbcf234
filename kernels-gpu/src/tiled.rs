//! Family 2, tiled shared-memory convolution (fp32, FMA only): conv2d as a GEMM whose operand
//! tiles are staged through shared memory and whose outputs are blocked in registers.
//!
//! Both kernels are the GEMM `Y[m][j] = sum_kr A[kr][m] * B[kr][j]` with M = output channels K
//! and the reduction kr = (c, r, s) over input channels and filter taps:
//! - [`hwcn`]: one block per output pixel (p, q) and J = batch N: the input slice
//!   `X[ih][iw][c][n0..]` and the filter slice `W[r][s][c][k0..]` are both contiguous rows, so
//!   they are copied with 16-byte `cp.async` when N % 4 == 0 (K % 4 == 0 for the filter); the
//!   reduction is (c, r, s) visited as `for c0 in (0..C).step_by(BK) { for (r, s) { c0..c0+BK } }`,
//!   skipping taps that fall wholly in the padding;
//! - [`nchw`]: J = N*P*Q (implicit GEMM, im2col on the fly), reduction over the filter's own
//!   order crs = (c*R + r)*S + s in steps of BK; each copy thread owns one column j = (n, p, q),
//!   computes its image position once and tracks (c, r, s) incrementally; padding, edges and
//!   tails are `cp.async` zero-fills (src-size 0), never branches around the copy.
//!
//! # Tile hierarchy (the [`mainloop`], shared by both kernels)
//!
//! ```text
//! block tile    BM x BN outputs (output channels x columns), THREADS = (BM/TM) * (BN/TN) threads
//! warp tile     4 x 8 threads = (4*4) x (8*4) outputs per virtual-thread quadrant
//! thread tile   TM x TN outputs = (TM/4) x (TN/4) virtual threads (quadrants) of 4 x 4,
//!               quadrants BM/(TM/4) rows and BN/(TN/4) columns apart: a warp's 16-byte operand
//!               loads then cover 4 (A) and 8 (B) adjacent 16-byte words, one wavefront each
//! reduction     steps of BK = 8 (or 16) reduction indices; per step the block copies an A slice
//!               [BK][BM + 4] (rows padded by A_PAD = 4 floats) and a B slice [BK][BN] into
//!               shared memory
//! mainloop      STAGES = 3 shared buffers: the copies of steps i+1 and i+2 are in flight while
//!               step i is computed; one barrier per step
//! inner loop    per kk < BK: TM/4 + TN/4 LDS.128 (A row kk, B row kk), then TM*TN FFMAs
//! epilogue      each thread writes its TM x TN outputs straight from registers (predicated;
//!               16-byte stores where 4 adjacent outputs are aligned)
//! ```
//!
//! Every entry fits 128 registers (so 512-thread blocks launch, and 256-thread blocks run two per
//! SM): the copy code re-derives its per-thread coordinates from `%tid.x` each step instead of
//! holding them across the mainloop.
//!
//! Instantiations (listed once in `convrs_spec::tiled_tiles!`, for both kernels;
//! host/src/plan/tiled/hwcn.rs picks one per problem, by the timings in BENCHMARKS.md):
//!
//! | name | BM x BN x BK | TM x TN | threads | FFMA per LDS.128 |
//! | --- | --- | --- | --- | --- |
//! | `128x128` | 128 x 128 x 8 | 8 x 8 | 256 | 16 |
//! | `128x128_k16` | 128 x 128 x 16 | 8 x 8 | 256 | 16 |
//! | `256x128` | 256 x 128 x 8 | 8 x 8 | 512 | 16 |
//! | `128x64` | 128 x 64 x 8 | 8 x 8 | 128 | 16 |
//! | `64x128` | 64 x 128 x 8 | 8 x 8 | 128 | 16 |
//! | `64x64` | 64 x 64 x 8 | 8 x 8 | 64 | 16 |
//! | `128x32` | 128 x 32 x 8 | 8 x 4 | 128 | 10.7 |
//! | `32x128` | 32 x 128 x 8 | 4 x 8 | 128 | 10.7 |
//!
//! `64x64` is the issue's reference schedule (8 x 8 threads, 2 x 2 quadrants of 4 x 4, a 64 x 64
//! tile of output channel x batch per pixel); it is the pick for 64,64,56,56 -> 64 in HWCN;
//! `128x32` serves small batches (32,512,7,7 -> 512). HWCN skips the taps that read only
//! padding (9% of them on 14 x 14), so its nominal FLOP rate overstates its FMA rate.

#![allow(unused_comparisons)]

pub mod hwcn;
pub mod mainloop;
pub mod nchw;
