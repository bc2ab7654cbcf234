//! Grouped convolutions (1 < G < C, [`Conv2d::groups`]) as the Hopper im2col kernels run them.
//!
//! A kernel tile computes a block of output channels over whole k-tiles of input channels (64
//! 16-bit or 32 fp32 channels a copy) and is at least 32 channels wide. ResNeXt's groups are
//! far narrower (C/G = K/G = 4 to 64), so the kernels run a problem of fewer, wider groups: `m`
//! neighbouring groups merged into one of `m * C/G` input and `m * K/G` output channels, whose
//! filter is block diagonal (each original group's rows are zero outside its own channels).
//! The output is the same; the tensor cores multiply the zeros too, `m` times the useful work,
//! in exchange for whole k-tiles and tiles that never straddle two groups.
//!
//! - [`run_groups`]: the merge, the smallest `m` that gives whole k-tiles and whole tiles.
//! - [`expand_filter`] (host tensors) and [`expand_filter_on_device`] (the device path of
//!   [`crate::device_conv::DeviceConv`]): the merged problem's filter from the caller's.
//!
//! A non-finite input value (an fp16 overflow) reaches every output channel of its merged
//! group, not only its own group's: its products with the filter's zeros are NaN.
//!
//! ```
//! use convrs::groups::run_groups;
//! use convrs::Conv2d;
//! // ResNeXt-50 32x4d, stage 1: 32 groups of 4 channels run as 2 groups of 64 (16 merged).
//! let p = Conv2d::new(32, 128, 56, 56, 128, 3, 3).with_pad(1).with_groups(32);
//! assert_eq!(run_groups(&p, 64, 32), 2);
//! // Stage 4 (groups of 32 channels) in TF32, whose k-tiles are 32 channels: unmerged.
//! assert_eq!(run_groups(&Conv2d { c: 1024, k: 1024, ..p }, 32, 32), 32);
//! // On a kernel whose tiles are at least 128 wide, 4 of them.
//! assert_eq!(run_groups(&Conv2d { c: 1024, k: 1024, ..p }, 32, 128), 8);
//! ```

use cudarc::driver::CudaSlice;

use crate::device_tensor::{expand_groups_into, relayout_into};
use crate::{Conv2d, Error, Gpu, Layout, Result, Tensor};

/// Input channels a merged group's filter row must be a multiple of when no merge gives whole
/// k-tiles: its tensor map steps from row to row in 16-byte multiples (8 16-bit channels).
const ROW_CHANNELS: usize = 8;

/// The groups a Hopper im2col kernel with k-tiles of `k_tile` channels and tiles at least
/// `tile` wide (its narrowest configuration) runs `p` in: `G / m` for the smallest `m` dividing
/// G whose merged groups hold whole k-tiles of input channels and a multiple of `tile` output
/// channels; failing that, whole 8-channel rows (the last k-tile of each group part empty);
/// failing that 1 (a dense convolution, block diagonal over all its groups). `p.groups` itself
/// for dense and depthwise problems.
pub fn run_groups(p: &Conv2d, k_tile: usize, tile: usize) -> usize {
    let g = p.groups;
    if g <= 1 || p.is_depthwise() {
        return g;
    }
    let (cg, kg) = (p.group_c(), p.k / g);
    let merges = || (1..=g).filter(move |m| g % m == 0);
    let fits = |m: usize, channels: usize| (m * cg) % channels == 0 && (m * kg) % tile == 0;
    merges().find(|&m| fits(m, k_tile)).or_else(|| merges().find(|&m| fits(m, ROW_CHANNELS))).map_or(1, |m| g / m)
}

/// The dims of `run`'s filter before any zero padding of C and K: `p`'s output channels by the
/// merged groups' input channels.
fn expanded_dims(p: &Conv2d, run: &Conv2d) -> [usize; 4] {
    [p.k, p.c / run.groups, p.r, p.s]
}

/// The filter of `run` (`p` in fewer groups, [`run_groups`]; N, C and K maybe zero-padded
/// after) from `p`'s filter `w` (`[K, C/G, R, S]`), in `layout`: each row's values at its
/// group's place in the merged row, zeros elsewhere, then zero-padded to `run`'s filter dims.
pub fn expand_filter<T: Copy + Default>(w: &Tensor<T>, p: &Conv2d, run: &Conv2d, layout: Layout) -> Result<Tensor<T>> {
    if run.groups == p.groups {
        return w.zero_padded(run.filter_shape(), layout);
    }
    check_merge(p, run)?;
    let (merge, cg, kg) = (p.groups / run.groups, p.group_c(), p.k / p.groups);
    let wide = Tensor::from_fn(expanded_dims(p, run), layout, |k, c, y, x| if c / cg == (k / kg) % merge { w.get(k, c % cg, y, x) } else { T::default() })?;
    wide.zero_padded(run.filter_shape(), layout)
}

/// [`expand_filter`] on the device, enqueued on the GPU's stream: `filter` (`p`'s, in
/// `layout`) into `dst` (`run`'s filter in KRSC, the Hopper kernels' layout), through
/// temporary buffers.
pub fn expand_filter_on_device<T: crate::Element>(gpu: &Gpu, filter: &CudaSlice<T>, layout: Layout, p: &Conv2d, run: &Conv2d, dst: &mut CudaSlice<T>) -> Result<()> {
    check_merge(p, run)?;
    let mut grouped = gpu.alloc_zeros::<T>(p.filter_len())?;
    relayout_into(gpu, filter, p.filter_shape(), layout, &mut grouped, p.filter_shape(), Layout::Nhwc)?;
    let dims = expanded_dims(p, run);
    if dims == run.filter_shape() {
        return expand_groups_into(gpu, &grouped, p, run.groups, dst);
    }
    let mut wide = gpu.alloc_zeros::<T>(dims.iter().product())?;
    expand_groups_into(gpu, &grouped, p, run.groups, &mut wide)?;
    relayout_into(gpu, &wide, dims, Layout::Nhwc, dst, run.filter_shape(), Layout::Nhwc)
}

/// `run` is `p` in fewer groups, each a whole number of `p`'s.
fn check_merge(p: &Conv2d, run: &Conv2d) -> Result<()> {
    let same = Conv2d { groups: p.groups, n: p.n, c: p.c, k: p.k, ..*run } == *p;
    if !same || run.groups == 0 || p.groups % run.groups != 0 || run.n < p.n || run.c < p.c || run.k < p.k {
        return Err(Error::InvalidArgument(format!("{run} is not {p} in fewer groups")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grouped(c: usize, g: usize) -> Conv2d {
        Conv2d::new(2, c, 9, 9, c, 3, 3).with_pad(1).with_groups(g)
    }

    #[test]
    fn groups_merge_into_whole_k_tiles_and_tiles() {
        // ResNeXt-50 32x4d's four stages: 4, 8, 16 and 32 channels a group.
        for (c, want16, want32) in [(128, 2, 4), (256, 4, 8), (512, 8, 16), (1024, 16, 32)] {
            assert_eq!(run_groups(&grouped(c, 32), 64, 32), want16, "C = {c}");
            assert_eq!(run_groups(&grouped(c, 32), 32, 32), want32, "C = {c}");
            assert_eq!(run_groups(&grouped(c, 32), 64, 128), c / 128, "C = {c}");
        }
        // 64-channel groups stay, wider ones too; dense and depthwise problems are not merged.
        assert_eq!(run_groups(&grouped(256, 4), 64, 32), 4);
        assert_eq!(run_groups(&grouped(64, 1), 64, 32), 1);
        assert_eq!(run_groups(&grouped(64, 64), 64, 32), 64);
        // C/G = 24: no merge of the 4 groups holds whole k-tiles; pairs hold 48-channel rows
        // and 48 outputs, not a tile width; all four hold 96 channels and outputs.
        assert_eq!(run_groups(&grouped(96, 4), 64, 32), 1);
        // C/G = 12, K/G = 32 in 8 groups: no merge holds whole k-tiles (16 groups would); pairs
        // hold 24-channel rows and 64 outputs.
        assert_eq!(run_groups(&Conv2d { k: 256, ..grouped(96, 8) }, 64, 32), 4);
    }

    #[test]
    fn the_expanded_filter_is_block_diagonal_and_gives_the_same_output() {
        // 4 groups of 2 -> 3 channels, merged in pairs; the reference convolves both.
        let p = Conv2d::new(1, 8, 5, 5, 12, 3, 3).with_pad(1).with_groups(4);
        let run = p.with_groups(2);
        let x = Tensor::<f32>::random(p.input_shape(), Layout::Nchw, 1).unwrap();
        let w = Tensor::<f32>::random(p.filter_shape(), Layout::Nchw, 2).unwrap();
        let wide = expand_filter(&w, &p, &run, Layout::Nhwc).unwrap();
        assert_eq!(wide.dims(), [12, 4, 3, 3]);
        // Output 4 (group 1: the second of the first pair) keeps its channels at 2..4.
        assert_eq!(wide.get(4, 2, 1, 0), w.get(4, 0, 1, 0));
        assert_eq!(wide.get(4, 3, 2, 2), w.get(4, 1, 2, 2));
        assert_eq!(wide.get(4, 0, 1, 0), 0.0);
        let (a, b) = (crate::conv2d_cpu(&p, &x, &w).unwrap(), crate::conv2d_cpu(&run, &x, &wide.to_layout(Layout::Nchw).unwrap()).unwrap());
        assert_eq!(a.data(), b.data());
        // Merged all the way to a dense problem, then padded to K = 16.
        let dense = Conv2d { k: 16, ..p.with_groups(1) };
        let padded = expand_filter(&w, &p, &dense, Layout::Nchw).unwrap();
        assert_eq!(padded.dims(), [16, 8, 3, 3]);
        assert_eq!((padded.get(11, 7, 0, 0), padded.get(11, 0, 0, 0), padded.get(15, 7, 0, 0)), (w.get(11, 1, 0, 0), 0.0, 0.0));
        // Anything but a merge is refused.
        assert!(expand_filter(&w, &p, &p.with_groups(3), Layout::Nhwc).is_err());
        assert!(expand_filter(&w, &p, &Conv2d { r: 1, ..run }, Layout::Nhwc).is_err());
    }
}
