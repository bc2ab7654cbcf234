//! Hopper asynchronous-copy plumbing (sm_90a build only): shared-memory mbarriers with
//! transaction counts, `cp.async` arrivals on them, tiled TMA loads from a tensor map in global
//! memory, and `setmaxnreg`. notes/hopper.md §3-§5 has the sources (PTX ISA, CUTLASS).
//!
//! Barriers are addressed by their 32-bit `.shared` window address (8-byte aligned). A phase
//! completes when its pending arrivals reach 0 and its transaction count is 0; waits name the
//! parity of the phase they wait for (the current phase's parity blocks, the previous one's
//! returns at once).

use core::arch::asm;

/// `mbarrier.init.shared::cta.b64`: phase 0, `count` expected arrivals, no transactions.
///
/// # Safety
/// `bar` is an 8-byte aligned shared address of this block that no thread uses as a live
/// barrier yet; other threads may use it only after [`fence_mbarrier_init`] and a barrier.
#[inline(always)]
pub unsafe fn mbar_init(bar: u32, count: u32) {
    // SAFETY: the caller guarantees the address and that the barrier is not live.
    unsafe { asm!("mbarrier.init.shared::cta.b64 [{b}], {n};", b = in(reg32) bar, n = in(reg32) count, options(nostack)) };
}

/// `fence.mbarrier_init.release.cluster` then `fence.proxy.async.shared::cta`: makes this
/// thread's barrier initialisations visible to the other threads (after a CTA barrier) and to
/// the async proxy (TMA completions, `cp.async` arrivals). CUTLASS uses the first, the CUDA
/// guide's TMA example the second; both are cheap and run once.
#[inline(always)]
pub fn fence_mbarrier_init() {
    // SAFETY: fences have no preconditions; no `nomem`, so the inits stay before them.
    unsafe { asm!("fence.mbarrier_init.release.cluster;", "fence.proxy.async.shared::cta;", options(nostack)) };
}

/// `mbarrier.arrive.shared::cta.b64`: one arrival (release semantics, CTA scope).
///
/// # Safety
/// `bar` is an initialised barrier of this block whose current phase still expects arrivals.
#[inline(always)]
pub unsafe fn mbar_arrive(bar: u32) {
    // SAFETY: as the caller guarantees; the state result goes to the sink `_`.
    unsafe { asm!("mbarrier.arrive.shared::cta.b64 _, [{b}];", b = in(reg32) bar, options(nostack)) };
}

/// `mbarrier.arrive.expect_tx.shared::cta.b64`: adds `bytes` to the current phase's
/// transaction count, then arrives once. Issue it before the copies that complete the bytes.
///
/// # Safety
/// As [`mbar_arrive`]; `bytes` < 2^20.
#[inline(always)]
pub unsafe fn mbar_arrive_expect_tx(bar: u32, bytes: u32) {
    // SAFETY: as the caller guarantees.
    unsafe {
        asm!("mbarrier.arrive.expect_tx.shared::cta.b64 _, [{b}], {n};", b = in(reg32) bar, n = in(reg32) bytes, options(nostack))
    };
}

/// Blocks until the phase of parity `parity` of `bar` has completed (`mbarrier.try_wait.parity`
/// in a loop; each try may suspend the thread for a while). Acquire semantics at CTA scope: the
/// arrivers' writes and the completed TMA bytes are visible afterwards.
///
/// # Safety
/// `bar` is an initialised barrier of this block, and the phase waited for is the current or
/// the previous one (parity waits cannot tell older phases apart).
#[inline(always)]
pub unsafe fn mbar_wait(bar: u32, parity: u32) {
    loop {
        let done: u32;
        // SAFETY: as the caller guarantees; the predicate is scoped inside the braces. No
        // `nomem`: shared loads after the wait must not move before it.
        unsafe {
            asm!("{{", ".reg .pred p;", "mbarrier.try_wait.parity.shared::cta.b64 p, [{b}], {par};", "selp.u32 {d}, 1, 0, p;", "}}",
                b = in(reg32) bar, par = in(reg32) parity, d = out(reg32) done, options(nostack))
        };
        if done != 0 {
            return;
        }
    }
}

/// `cp.async.mbarrier.arrive.noinc.shared::cta.b64`: when every `cp.async` this thread issued
/// before has landed, arrives once on `bar`. `.noinc`: the arrival is one of the `count` the
/// barrier was initialised with (no pending-count increment now).
///
/// # Safety
/// As [`mbar_arrive`], counting this arrival in the phase it will land in.
#[inline(always)]
pub unsafe fn cp_async_mbar_arrive_noinc(bar: u32) {
    // SAFETY: as the caller guarantees.
    unsafe { asm!("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [{b}];", b = in(reg32) bar, options(nostack)) };
}

/// `prefetch.tensormap`: brings the 128-byte tensor map at generic address `map` (in global
/// memory) into the TMA unit's descriptor cache ahead of its first use.
///
/// # Safety
/// `map` points to a valid tensor map in global memory, unchanged during the launch.
#[inline(always)]
pub unsafe fn prefetch_tensormap(map: *const u8) {
    // SAFETY: a prefetch only reads the map, which the caller guarantees valid.
    unsafe { asm!("prefetch.tensormap [{m}];", m = in(reg64) map, options(nostack, readonly)) };
}

/// Tiled 2-D TMA load: as [`tma_load_3d`], the box starting at (`c0`, `c1`).
///
/// # Safety
/// As [`tma_load_3d`], with `map` a valid 2-D tiled tensor map.
#[inline(always)]
pub unsafe fn tma_load_2d(dst: u32, map: *const u8, c0: i32, c1: i32, bar: u32) {
    // SAFETY: as the caller guarantees; the copy writes only the box at dst.
    unsafe {
        asm!("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{c0}, {c1}}}], [{b}];",
            d = in(reg32) dst, m = in(reg64) map, c0 = in(reg32) c0, c1 = in(reg32) c1, b = in(reg32) bar,
            options(nostack))
    };
}

/// Tiled 3-D TMA load: the box of the tensor map at `map` starting at element coordinates
/// (`c0`, `c1`, `c2`) (innermost first; out-of-range elements read as zero) lands at shared
/// address `dst` in the map's swizzled layout, then completes its byte count on barrier `bar`.
/// `.shared::cluster` destination: valid without a cluster launch, the CTA being its own cluster.
///
/// # Safety
/// `map` is a valid 3-D tensor map in global memory (see [`prefetch_tensormap`]); `dst` is
/// shared memory of this block, aligned as the map's swizzle requires (1024 bytes for 128B),
/// with room for the whole box, that nothing else accesses until `bar`'s phase completes; the
/// box's bytes were announced on `bar` with [`mbar_arrive_expect_tx`].
#[inline(always)]
pub unsafe fn tma_load_3d(dst: u32, map: *const u8, c0: i32, c1: i32, c2: i32, bar: u32) {
    // SAFETY: as the caller guarantees; the copy writes only the box at dst.
    unsafe {
        asm!("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{c0}, {c1}, {c2}}}], [{b}];",
            d = in(reg32) dst, m = in(reg64) map, c0 = in(reg32) c0, c1 = in(reg32) c1, c2 = in(reg32) c2, b = in(reg32) bar,
            options(nostack))
    };
}

/// Tiled 4-D TMA load: as [`tma_load_3d`], the box starting at (`c0`, `c1`, `c2`, `c3`).
///
/// # Safety
/// As [`tma_load_3d`], with `map` a valid 4-D tiled tensor map.
#[inline(always)]
pub unsafe fn tma_load_4d(dst: u32, map: *const u8, c0: i32, c1: i32, c2: i32, c3: i32, bar: u32) {
    // SAFETY: as the caller guarantees; the copy writes only the box at dst.
    unsafe {
        asm!("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{c0}, {c1}, {c2}, {c3}}}], [{b}];",
            d = in(reg32) dst, m = in(reg64) map, c0 = in(reg32) c0, c1 = in(reg32) c1, c2 = in(reg32) c2, c3 = in(reg32) c3, b = in(reg32) bar,
            options(nostack))
    };
}

/// Im2col 4-D TMA load of an NHWC tensor ({C, W, H, N} innermost first): the map's
/// pixels-per-column im2col rows, the first for the filter window whose first tap is at
/// (`w`, `h`) of image `n` (the window origin, maybe in the padding), the next ones the windows
/// after it in the map's bounding box, each row the map's channels-per-pixel from channel `c` of
/// the pixel at tap offset (`dw`, `dh`) from its window's origin (zeros outside the tensor);
/// lands at `dst` in the map's swizzled layout and completes its byte count on `bar`.
///
/// # Safety
/// As [`tma_load_3d`], with `map` a valid 4-D im2col tensor map.
#[inline(always)]
pub unsafe fn tma_load_im2col_4d(dst: u32, map: *const u8, c: i32, w: i32, h: i32, n: i32, dw: u16, dh: u16, bar: u32) {
    // SAFETY: as the caller guarantees; the copy writes only the box at dst.
    unsafe {
        asm!("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [{d}], [{m}, {{{c}, {w}, {h}, {n}}}], [{b}], {{{dw}, {dh}}};",
            d = in(reg32) dst, m = in(reg64) map, c = in(reg32) c, w = in(reg32) w, h = in(reg32) h, n = in(reg32) n, b = in(reg32) bar,
            dw = in(reg16) dw, dh = in(reg16) dh, options(nostack))
    };
}

/// `setmaxnreg.dec.sync.aligned.u32 56`: this warpgroup gives registers back to the block's
/// pool down to 56 a thread (the data-moving warpgroup needs few).
///
/// # Safety
/// All 128 threads of the warpgroup execute it together, the kernel was compiled with a
/// register count at entry of at least 56 (`.maxntid` and `.minnctapersm`), and no live value
/// needs more registers afterwards (ptxas allocates accordingly).
#[inline(always)]
pub unsafe fn setmaxnreg_dec_56() {
    // SAFETY: as the caller guarantees.
    unsafe { asm!("setmaxnreg.dec.sync.aligned.u32 56;", options(nostack, nomem)) };
}

/// `setmaxnreg.inc.sync.aligned.u32 224`: this warpgroup takes registers from the pool up to
/// 224 a thread (blocks until the pool has them; the new registers hold garbage).
///
/// # Safety
/// As [`setmaxnreg_dec_56`]; the block's warpgroups together ask for at most 64K registers
/// (1 producer x 128 x 56 + 2 consumers x 128 x 224 = 64512).
#[inline(always)]
pub unsafe fn setmaxnreg_inc_224() {
    // SAFETY: as the caller guarantees.
    unsafe { asm!("setmaxnreg.inc.sync.aligned.u32 224;", options(nostack, nomem)) };
}

/// This CTA's rank in its cluster (`%cluster_ctarank`).
#[inline(always)]
pub fn cluster_ctarank() -> u32 {
    let r: u32;
    // SAFETY: reading a special register has no preconditions.
    unsafe { asm!("mov.u32 {r}, %cluster_ctarank;", r = out(reg32) r, options(pure, nomem, nostack)) };
    r
}

/// `mapa.shared::cluster`: the cluster-window address of the shared variable at this CTA's
/// address `addr` in the CTA of rank `rank` (the same offset in that CTA's shared memory).
#[inline(always)]
pub fn mapa_shared(addr: u32, rank: u32) -> u32 {
    let a: u32;
    // SAFETY: address arithmetic only; nothing is accessed.
    unsafe { asm!("mapa.shared::cluster.u32 {a}, {x}, {r};", a = out(reg32) a, x = in(reg32) addr, r = in(reg32) rank, options(pure, nomem, nostack)) };
    a
}

/// One arrival on the barrier at cluster-window address `bar` (from [`mapa_shared`]; maybe in
/// another CTA of the cluster). The default semantics (release at CTA scope), as CUTLASS's
/// `ClusterBarrier::arrive`: `.release.cluster` costs a `MEMBAR.ALL.GPU` per arrival in the SASS,
/// and what the arrival publishes (wgmma reads retired) is async-proxy work the barrier itself
/// orders.
///
/// # Safety
/// `bar` is an initialised barrier of a CTA of this cluster that is still running, whose current
/// phase still expects arrivals.
#[inline(always)]
pub unsafe fn mbar_arrive_cluster(bar: u32) {
    // SAFETY: as the caller guarantees.
    unsafe { asm!("mbarrier.arrive.shared::cluster.b64 _, [{b}];", b = in(reg32) bar, options(nostack)) };
}

/// `barrier.cluster.arrive.release.aligned`: this thread arrived at the cluster barrier (its
/// earlier memory accesses released to the cluster); pair with [`cluster_wait`].
///
/// # Safety
/// Every thread of the warp executes it together, once per barrier phase.
#[inline(always)]
pub unsafe fn cluster_arrive() {
    // SAFETY: as the caller guarantees.
    unsafe { asm!("barrier.cluster.arrive.release.aligned;", options(nostack)) };
}

/// `barrier.cluster.wait.acquire.aligned`: waits until every non-exited thread of the cluster
/// has arrived (see [`cluster_arrive`]).
///
/// # Safety
/// As [`cluster_arrive`], after this thread's arrival.
#[inline(always)]
pub unsafe fn cluster_wait() {
    // SAFETY: as the caller guarantees.
    unsafe { asm!("barrier.cluster.wait.acquire.aligned;", options(nostack)) };
}

/// [`tma_load_3d`] multicast: the box lands at shared offset `dst` of every CTA of the cluster
/// whose rank bit is set in `mask`, and completes its bytes on the barrier at offset `bar` of
/// each of them.
///
/// # Safety
/// As [`tma_load_3d`], in every destination CTA: each has announced the box's bytes on its
/// barrier's phase (or will, before that phase can complete) and leaves `dst` alone until then.
#[inline(always)]
pub unsafe fn tma_load_3d_multicast(dst: u32, map: *const u8, c0: i32, c1: i32, c2: i32, bar: u32, mask: u16) {
    // SAFETY: as the caller guarantees.
    unsafe {
        asm!("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [{d}], [{m}, {{{c0}, {c1}, {c2}}}], [{b}], {k};",
            d = in(reg32) dst, m = in(reg64) map, c0 = in(reg32) c0, c1 = in(reg32) c1, c2 = in(reg32) c2, b = in(reg32) bar,
            k = in(reg16) mask, options(nostack))
    };
}

/// `bar.sync id, threads`: waits until `threads` threads (this one included) have arrived at
/// named barrier `id`, by this or by [`named_arrive`].
///
/// # Safety
/// Every thread of each participating warp executes it together; `id` is 1-15 (0 is the
/// block's `__syncthreads`), `threads` a multiple of 32 that the arrivals of each phase match
/// exactly.
#[inline(always)]
pub unsafe fn named_sync(id: u32, threads: u32) {
    // SAFETY: as the caller guarantees; no `nomem`: memory accesses stay on their side.
    unsafe { asm!("bar.sync {i}, {n};", i = in(reg32) id, n = in(reg32) threads, options(nostack)) };
}

/// `bar.arrive id, threads`: counts this thread at named barrier `id` without waiting (the
/// producer side of a [`named_sync`]).
///
/// # Safety
/// As [`named_sync`].
#[inline(always)]
pub unsafe fn named_arrive(id: u32, threads: u32) {
    // SAFETY: as the caller guarantees.
    unsafe { asm!("bar.arrive {i}, {n};", i = in(reg32) id, n = in(reg32) threads, options(nostack)) };
}
