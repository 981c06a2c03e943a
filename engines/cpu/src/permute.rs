//! Permutations at the copy rate, whatever the rank: the axes are fused
//! first (extent-1 axes dropped, neighbours that stay neighbours in the
//! same order merged), then the output is written block by block, each
//! block small enough that the input lines it reads stay in cache while it
//! is written (HPTT's plan, in safe Rust):
//!
//! - **rows**: the output's last axis is the input's contiguous one, and
//!   long: whole rows are copied;
//! - **tiles**: the output's last axis and the input's contiguous one are
//!   both long enough: square tiles over the two, each copied as small
//!   square blocks of [`BLOCK_BYTES`] a side, whose input lines are read
//!   whole and whose output rows are written whole (the loads and stores a
//!   copy makes, where an element-by-element gather reads each input line
//!   once per element and, at power-of-two strides, from L2);
//! - **blocks**: otherwise (short axes: a rank-24 permutation of extent-2
//!   axes is made of them): the output's trailing axes and the input's
//!   fastest ones are grouped until each group holds enough elements, and
//!   each block of the two groups is copied through tables of offsets.
//!
//! Every other axis is walked by an odometer that carries, O(1) per block.
//! The output is cut into slabs along its leading axes that no block
//! spans; slabs are written in parallel when the pool may be used (a
//! transpose's rows are cut into bands to make slabs of them, and a
//! block leaves the first output axis out to make slabs of it). The
//! slabs' last few leading axes are walked by input stride, not output
//! order, so that consecutive slabs read neighbouring input.

use rayon::prelude::*;

use super::buffer;
use super::parallel::PARALLEL_THRESHOLD;
use weft_core::layout::View;
use weft_core::Element;

/// Side of the square tiles, in bytes of one tile row: the tile's input
/// lines and output rows stay in L2 while it is written.
const TILE_BYTES: usize = 1024;

/// Side of the blocks a tile is copied by, in bytes of one block row: a
/// block is read as whole runs of its input lines into registers and
/// written as whole runs of its output rows.
const BLOCK_BYTES: usize = 32;

/// The shortest axes the tiles take: below, blocks of short axes.
const TILE_MIN: usize = 8;

/// Elements a block's group of short axes gathers at least: the output's
/// trailing axes (so each block writes runs of at least this many) and the
/// input's fastest (so each input line is read whole across a block).
const GROUP: usize = 32;

/// Output elements one parallel task writes, at least.
const TASK: usize = 1 << 14;

/// Output elements, at most, over which the slabs are walked in the
/// input's order rather than the output's (see [`Plan::walked`]).
const REORDER: usize = 1 << 18;

/// The elements of `v`, a permutation's view of `src` (strides not
/// negative, no extent 0), in row-major order.
pub(super) fn permuted<T: Element>(src: &[T], v: &View, parallel: bool) -> Vec<T> {
    let n: usize = v.shape.iter().product();
    let axes = fuse(&v.shape, &v.strides);
    let mut out = buffer::overwritten(n);
    if n == 0 {
        return out;
    }
    let base = usize::try_from(v.base).expect("a permutation's view starts at 0");
    let parallel = parallel && n >= PARALLEL_THRESHOLD;
    if let [Axis { stride: 1, .. }] = axes[..] {
        // One run (an identity, or extent-1 axes moved): a copy, shared
        // over the pool in chunks.
        let src = &src[base..base + n];
        if parallel {
            out.par_chunks_mut(TASK)
                .zip(src.par_chunks(TASK))
                .for_each(|(dst, src)| dst.copy_from_slice(src));
        } else {
            out.copy_from_slice(src);
        }
        return out;
    }
    let plan = Plan::new(&axes, parallel, std::mem::size_of::<T>());
    // The slabs: the output along its leading axes that no block spans.
    let slab = plan.slab();
    let slabs_per_task = TASK.div_ceil(slab).next_multiple_of(plan.group());
    let run = |first_slab: usize, chunk: &mut [T]| plan.copy(src, base, first_slab, chunk);
    if parallel && n > slab {
        out.par_chunks_mut(slabs_per_task * slab)
            .enumerate()
            .for_each(|(t, chunk)| run(t * slabs_per_task, chunk));
    } else {
        run(0, &mut out);
    }
    out
}

/// One axis of a permutation's output: its extent and its stride in the
/// input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Axis {
    extent: usize,
    stride: usize,
}

/// The axes of the view, output order, with extent-1 axes dropped and each
/// axis merged into the one before it where the two are adjacent in the
/// input in the same order (`stride[a] = stride[a + 1] · extent[a + 1]`):
/// the same copy over fewer, longer axes. At least one axis.
fn fuse(shape: &[usize], strides: &[isize]) -> Vec<Axis> {
    let mut axes: Vec<Axis> = Vec::with_capacity(shape.len());
    for (&extent, &stride) in shape.iter().zip(strides) {
        if extent == 1 {
            continue;
        }
        let stride = usize::try_from(stride).expect("a permutation's strides are not negative");
        match axes.last_mut() {
            Some(last) if last.stride == stride * extent => {
                last.extent *= extent;
                last.stride = stride;
            }
            _ => axes.push(Axis { extent, stride }),
        }
    }
    if axes.is_empty() {
        axes.push(Axis {
            extent: 1,
            stride: 1,
        });
    }
    axes
}

/// How each slab is copied.
#[derive(Debug)]
struct Plan {
    /// The fused axes, output order.
    axes: Vec<Axis>,
    /// Each axis's stride in the (row-major) output.
    dst: Vec<usize>,
    /// The leading axes that no block spans: the slabs.
    lead: usize,
    /// The order the odometer walks the leading axes in, the last fastest:
    /// the output's, but for the last few, which go by their input strides
    /// (the smallest fastest), so that consecutive slabs read neighbouring
    /// input where the output's order would jump (a 6-D rotation's slabs
    /// read 256 bytes 128 MiB apart, then their neighbours only 16 slabs
    /// later). Those are the leading axes from `regrouped` on; their slabs
    /// are a group, which no parallel task starts inside of.
    walked: Vec<usize>,
    regrouped: usize,
    /// The axes walked by the odometer within a slab (output order).
    outer: Vec<usize>,
    walk: Walk,
}

#[derive(Debug)]
enum Walk {
    /// Each position copies `len` contiguous elements.
    Rows { len: usize },
    /// Each position copies the `rows × cols` matrix of output axes `c`
    /// (the input's contiguous one) and the last, in square tiles of
    /// `tile` elements a side.
    Tiles { c: usize, tile: usize },
    /// Each position copies a block: for each `(src, dst)` of `inner` (the
    /// input's fastest axes), `out_src.len()` contiguous output elements
    /// (the output's trailing axes) read at `src + out_src[j]`.
    Blocks {
        out_src: Vec<usize>,
        inner: Vec<(usize, usize)>,
    },
}

impl Plan {
    /// The plan for the fused `axes` of elements of `size` bytes; `split`:
    /// the work will be shared over the pool, so the output must have
    /// slabs to share.
    fn new(axes: &[Axis], split: bool, size: usize) -> Plan {
        let rank = axes.len();
        let dst = out_strides(axes);
        let last = rank - 1;
        // The input's contiguous axis, if any is (fused axes have distinct
        // strides, so at most one has stride 1).
        let contiguous = (0..rank).find(|&a| axes[a].stride == 1);
        let (walk, inner_axes): (Walk, Vec<usize>) = match contiguous {
            Some(c) if c == last && axes[last].extent >= GROUP => (
                Walk::Rows {
                    len: axes[last].extent,
                },
                vec![last],
            ),
            Some(c) if c != last && axes[c].extent >= TILE_MIN && axes[last].extent >= TILE_MIN => {
                let tile = (TILE_BYTES / size.max(1)).max(TILE_MIN);
                (Walk::Tiles { c, tile }, vec![c, last])
            }
            _ => {
                // The output's trailing axes, then the input's fastest of
                // the rest, each group until it holds GROUP elements.
                let mut trailing = Vec::new();
                let mut size = 1;
                for a in (0..rank).rev() {
                    if size >= GROUP {
                        break;
                    }
                    trailing.push(a);
                    size *= axes[a].extent;
                }
                trailing.reverse();
                // To share the work, the first output axis stays out of
                // the blocks (it cuts the output into slabs), though its
                // input lines are then read in parts by each slab.
                let first = usize::from(split && rank > 2);
                let mut rest: Vec<usize> =
                    (first..rank).filter(|a| !trailing.contains(a)).collect();
                rest.sort_by_key(|&a| axes[a].stride);
                let mut fastest = Vec::new();
                let mut size = 1;
                for a in rest {
                    if size >= GROUP {
                        break;
                    }
                    fastest.push(a);
                    size *= axes[a].extent;
                }
                let out_src = offsets(axes, &trailing, |a| axes[a].stride)
                    .into_iter()
                    .map(|(s, _)| s)
                    .collect();
                let inner = offsets(axes, &fastest, |a| dst[a]);
                let mut both = trailing;
                both.extend(fastest);
                (Walk::Blocks { out_src, inner }, both)
            }
        };
        match walk {
            Walk::Tiles { c, tile } => Plan::tiles(axes.to_vec(), c, tile),
            walk => Plan::build(axes.to_vec(), walk, &inner_axes),
        }
    }

    /// The output elements of one slab.
    fn slab(&self) -> usize {
        self.axes[self.lead..].iter().map(|a| a.extent).product()
    }

    /// The slabs of one group (see [`Plan::walked`]).
    fn group(&self) -> usize {
        let regrouped = &self.axes[self.regrouped..self.lead];
        regrouped.iter().map(|a| a.extent).product()
    }

    /// The plan of `walk`, whose blocks span `inner` axes.
    fn build(axes: Vec<Axis>, walk: Walk, inner: &[usize]) -> Plan {
        let rank = axes.len();
        let dst = out_strides(&axes);
        let lead = inner.iter().copied().min().unwrap_or(0);
        let outer = (lead..rank).filter(|a| !inner.contains(a)).collect();
        // The trailing leading axes whose slabs together hold at most
        // REORDER elements, and a sixteenth of the output (tasks enough
        // to share): walked by input stride.
        let n: usize = axes.iter().map(|a| a.extent).product();
        let slab: usize = axes[lead..].iter().map(|a| a.extent).product();
        let (mut k, mut group) = (lead, 1usize);
        while k > 0 && slab * group * axes[k - 1].extent <= REORDER.min(n / 16) {
            k -= 1;
            group *= axes[k].extent;
        }
        let mut walked: Vec<usize> = (0..lead).collect();
        walked[k..].sort_by_key(|&a| std::cmp::Reverse(axes[a].stride));
        Plan {
            axes,
            dst,
            lead,
            walked,
            regrouped: k,
            outer,
            walk,
        }
    }

    /// The plan of square tiles of side `tile` over output axes `c` and
    /// the last. Their slabs are the axes before `c`, none for a matrix
    /// transpose: so `c` is cut into an axis of bands and the bands' rows
    /// (a divisor of its extent near `tile`), and the bands are slabs the
    /// pool shares.
    fn tiles(mut axes: Vec<Axis>, c: usize, tile: usize) -> Plan {
        let last = axes.len() - 1;
        let extent = axes[c].extent;
        let rows = (tile / 2..=tile * 2)
            .filter(|d| extent.is_multiple_of(*d) && extent > *d)
            .min_by_key(|d| d.abs_diff(tile));
        let Some(rows) = rows else {
            return Plan::build(axes, Walk::Tiles { c, tile }, &[c, last]);
        };
        let stride = axes[c].stride;
        axes[c].extent = rows;
        axes.insert(
            c,
            Axis {
                extent: extent / rows,
                stride: stride * rows,
            },
        );
        Plan::build(axes, Walk::Tiles { c: c + 1, tile }, &[c + 1, last + 1])
    }

    /// Copies the slabs from `first` on into `out` (whole slabs, every
    /// element written), the input read from offset `base`.
    fn copy<T: Copy>(&self, src: &[T], base: usize, first: usize, out: &mut [T]) {
        let axes = &self.axes;
        // The odometer: the leading axes, then the outer axes within a
        // slab; the input and output offsets of its position (`out` starts
        // at output offset `start`).
        let walked: Vec<usize> = self.walked.iter().chain(&self.outer).copied().collect();
        let mut index = vec![0usize; walked.len()];
        let slab = self.slab();
        let start = first * slab;
        let (mut s, mut d) = (base, start);
        // `first` starts a group: the axes before the group's (walked in
        // output order) give its position; the group's own start at 0.
        let group = self.group();
        debug_assert!(first.is_multiple_of(group));
        let mut rest = first / group;
        for p in (0..self.regrouped).rev() {
            index[p] = rest % axes[p].extent;
            rest /= axes[p].extent;
            s += index[p] * axes[p].stride;
        }
        let per_slab: usize = self.outer.iter().map(|&a| axes[a].extent).product();
        for _ in 0..out.len() / slab * per_slab {
            let at = d - start;
            match &self.walk {
                Walk::Rows { len } => {
                    out[at..at + len].copy_from_slice(&src[s..s + len]);
                }
                &Walk::Tiles { c, tile } => {
                    let last = axes.len() - 1;
                    let matrix = Matrix {
                        rows: axes[c].extent,
                        cols: axes[last].extent,
                        row_step: self.dst[c],
                        col_step: axes[last].stride,
                    };
                    transpose(src, s, &mut out[at..], &matrix, tile);
                }
                Walk::Blocks { out_src, inner } => {
                    // GROUP output columns at a time, so that the input
                    // lines they read stay in cache across every row.
                    for (j0, cols) in (0..).step_by(GROUP).zip(out_src.chunks(GROUP)) {
                        for &(fs, fd) in inner {
                            let at = at + fd + j0;
                            let row = &mut out[at..at + cols.len()];
                            let from = s + fs;
                            for (x, &o) in row.iter_mut().zip(cols) {
                                *x = src[from + o];
                            }
                        }
                    }
                }
            }
            // The next position, the last walked axis fastest (past the
            // last one, the carry runs out at the first axis).
            let mut k = walked.len();
            while k > 0 {
                k -= 1;
                let a = walked[k];
                index[k] += 1;
                s += axes[a].stride;
                d += self.dst[a];
                if index[k] < axes[a].extent {
                    break;
                }
                s -= axes[a].stride * axes[a].extent;
                d -= self.dst[a] * axes[a].extent;
                index[k] = 0;
            }
        }
    }
}

/// A matrix a tile walk copies: output element `(i, j)`, at
/// `i · row_step + j`, is input element `i + j · col_step`.
struct Matrix {
    rows: usize,
    cols: usize,
    row_step: usize,
    col_step: usize,
}

/// Copies `m` from `src` at `s` into `out` in square tiles of side
/// `tile`, each by blocks of [`BLOCK_BYTES`] a side (the block's side a
/// compile-time constant, so that its loads and stores are whole runs).
fn transpose<T: Copy>(src: &[T], s: usize, out: &mut [T], m: &Matrix, tile: usize) {
    match BLOCK_BYTES / std::mem::size_of::<T>().max(1) {
        0 | 1 => transpose_by::<T, 1>(src, s, out, m, tile),
        2 | 3 => transpose_by::<T, 2>(src, s, out, m, tile),
        4..=7 => transpose_by::<T, 4>(src, s, out, m, tile),
        8..=15 => transpose_by::<T, 8>(src, s, out, m, tile),
        _ => transpose_by::<T, 16>(src, s, out, m, tile),
    }
}

/// [`transpose`] by blocks of `B × B`; what is left at the matrix's
/// edges (rows or columns past the last whole block) element by element.
fn transpose_by<T: Copy, const B: usize>(
    src: &[T],
    s: usize,
    out: &mut [T],
    m: &Matrix,
    tile: usize,
) {
    let tile = tile.next_multiple_of(B);
    let (whole_rows, whole_cols) = (m.rows - m.rows % B, m.cols - m.cols % B);
    let one =
        |out: &mut [T], i: usize, j: usize| out[i * m.row_step + j] = src[s + i + j * m.col_step];
    let block_at = |out: &mut [T], i: usize, j: usize| {
        let (from, to) = (s + i + j * m.col_step, i * m.row_step + j);
        block::<T, B>(src, from, m.col_step, out, to, m.row_step);
    };
    // A block reads half of each input line it touches (or a part) and
    // writes part of each output row: the next block along the side whose
    // lines lie further apart (more of them in one cache set) takes the
    // rest of its lines at once, the other side's stay in cache meanwhile.
    let rows_inside = m.col_step > m.row_step;
    for i0 in (0..m.rows).step_by(tile) {
        let i1 = m.rows.min(i0 + tile);
        let ie = i1.min(whole_rows).max(i0);
        for j0 in (0..m.cols).step_by(tile) {
            let j1 = m.cols.min(j0 + tile);
            let je = j1.min(whole_cols).max(j0);
            if rows_inside {
                for j in (j0..je).step_by(B) {
                    for i in (i0..ie).step_by(B) {
                        block_at(out, i, j);
                    }
                }
            } else {
                for i in (i0..ie).step_by(B) {
                    for j in (j0..je).step_by(B) {
                        block_at(out, i, j);
                    }
                }
            }
            // The edges, element by element: the columns past the last
            // whole block, then the rows.
            for i in i0..ie {
                for j in je..j1 {
                    one(out, i, j);
                }
            }
            for i in ie..i1 {
                for j in j0..j1 {
                    one(out, i, j);
                }
            }
        }
    }
}

/// Copies one `B × B` block: `B` input lines of `B` elements from `s`,
/// `col_step` apart, into `B` output rows of `B` elements from `o`,
/// `row_step` apart, transposed.
#[inline(always)]
fn block<T: Copy, const B: usize>(
    src: &[T],
    s: usize,
    col_step: usize,
    out: &mut [T],
    o: usize,
    row_step: usize,
) {
    let mut lines = [[src[s]; B]; B];
    for (j, line) in lines.iter_mut().enumerate() {
        let at = s + j * col_step;
        line.copy_from_slice(&src[at..at + B]);
    }
    for i in 0..B {
        let at = o + i * row_step;
        let row: &mut [T; B] = (&mut out[at..at + B])
            .try_into()
            .expect("a block row is B elements");
        for (x, line) in row.iter_mut().zip(&lines) {
            *x = line[i];
        }
    }
}

/// Each axis's stride in the row-major output.
fn out_strides(axes: &[Axis]) -> Vec<usize> {
    let mut dst = vec![1usize; axes.len()];
    for a in (0..axes.len().saturating_sub(1)).rev() {
        dst[a] = dst[a + 1] * axes[a + 1].extent;
    }
    dst
}

/// The offsets of every index of `group` (axes in the order given, the
/// last fastest): `(input offset, value of weight)` for each.
fn offsets(axes: &[Axis], group: &[usize], weight: impl Fn(usize) -> usize) -> Vec<(usize, usize)> {
    let mut all = vec![(0usize, 0usize)];
    for &a in group {
        let mut next = Vec::with_capacity(all.len() * axes[a].extent);
        for &(s, w) in &all {
            for i in 0..axes[a].extent {
                next.push((s + i * axes[a].stride, w + i * weight(a)));
            }
        }
        all = next;
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_core::c64;
    use weft_core::layout::row_major;
    use weft_core::ops::permute_view;

    /// The permutation by the element walk, for reference.
    fn walk<T: Element>(src: &[T], v: &View) -> Vec<T> {
        let mut out = Vec::new();
        v.for_each_offset(|o| out.push(src[o]));
        out
    }

    #[test]
    fn fusing_merges_what_stays_adjacent_and_drops_extents_of_one() {
        let v = permute_view(&[2, 3, 1, 4, 5], &[3, 4, 0, 2, 1]).unwrap();
        assert_eq!(
            fuse(&v.shape, &v.strides),
            [
                Axis {
                    extent: 20,
                    stride: 1
                },
                Axis {
                    extent: 6,
                    stride: 20
                },
            ]
        );
        let v = permute_view(&[1, 1], &[1, 0]).unwrap();
        assert_eq!(
            fuse(&v.shape, &v.strides),
            [Axis {
                extent: 1,
                stride: 1
            }]
        );
        let identity = permute_view(&[3, 4, 5], &[0, 1, 2]).unwrap();
        assert_eq!(fuse(&identity.shape, &identity.strides).len(), 1);
    }

    #[test]
    fn every_walk_matches_the_element_walk() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let reversed: Vec<usize> = (0..16).rev().collect();
        let shuffled = [3, 14, 0, 9, 5, 12, 1, 15, 7, 10, 2, 13, 6, 11, 4, 8];
        let cases: Vec<(Vec<usize>, Vec<usize>)> = vec![
            // Rank 16, extent 2: blocks of short axes.
            (vec![2; 16], reversed.clone()),
            (vec![2; 16], shuffled.to_vec()),
            // Long rows, long tiles, and each mixed with short axes.
            (vec![3, 200, 2], vec![1, 0, 2]),
            (vec![64, 48, 2, 3], vec![3, 1, 2, 0]),
            (vec![100, 3, 70], vec![2, 1, 0]),
            (vec![5, 2, 300, 1, 3], vec![2, 4, 3, 0, 1]),
            (vec![2, 3, 4, 5, 6, 7], vec![5, 3, 1, 4, 2, 0]),
            // One run: an extent-1 axis moved, long enough to share.
            (vec![4, 1, 9000], vec![1, 0, 2]),
            // Tiles with edges: neither side a whole number of blocks or
            // tiles, short sides, and a batch of them.
            (vec![300, 131], vec![1, 0]),
            (vec![9, 517], vec![1, 0]),
            (vec![3, 37, 70], vec![0, 2, 1]),
            (vec![16, 32, 16, 32], vec![2, 0, 3, 1]),
            // A rotation whose slabs are walked in the input's order.
            (vec![8, 6, 8, 8, 8, 16], vec![3, 2, 4, 1, 5, 0]),
        ];
        for (shape, perm) in cases {
            let n: usize = shape.iter().product();
            let v = permute_view(&shape, &perm).unwrap();
            assert_eq!(v.strides.len(), row_major(&shape).len());
            let check = |label: &str, run: &dyn Fn(bool) -> bool| {
                for parallel in [false, true] {
                    assert!(
                        run(parallel),
                        "{label} {shape:?} {perm:?} parallel {parallel}"
                    );
                }
            };
            // Each element size: the blocks' side is 32 bytes.
            let ints: Vec<i32> = (0..n as i32).collect();
            let want = walk(&ints, &v);
            check("i32", &|p| pool.install(|| permuted(&ints, &v, p)) == want);
            let floats: Vec<f64> = (0..n).map(|i| i as f64).collect();
            let want = walk(&floats, &v);
            check("f64", &|p| {
                pool.install(|| permuted(&floats, &v, p)) == want
            });
            let complexes: Vec<c64> = (0..n).map(|i| c64::new(i as f64, -(i as f64))).collect();
            let want = walk(&complexes, &v);
            check("c64", &|p| {
                pool.install(|| permuted(&complexes, &v, p)) == want
            });
            let bools: Vec<bool> = (0..n).map(|i| (i * 7 + i / 3) % 5 < 2).collect();
            let want = walk(&bools, &v);
            check("bool", &|p| {
                pool.install(|| permuted(&bools, &v, p)) == want
            });
        }
    }

    #[test]
    fn plans_pick_the_walk_the_axes_call_for() {
        let plan = |shape: &[usize], perm: &[usize]| {
            let v = permute_view(shape, perm).unwrap();
            Plan::new(&fuse(&v.shape, &v.strides), false, 8).walk
        };
        assert!(matches!(plan(&[8, 300], &[0, 1]), Walk::Rows { len: 2400 }));
        // A transpose: its rows cut into blocks of 32 (the blocks, axis 0, are
        // the slabs).
        assert!(matches!(
            plan(&[512, 512], &[1, 0]),
            Walk::Tiles { c: 1, tile: 128 }
        ));
        assert!(matches!(
            plan(&[64, 67], &[1, 0]),
            Walk::Tiles { c: 0, tile: 128 }
        ));
        // The rotation above: tiles of 16 × 8; its last two leading axes
        // (input strides 8 192 and 16) walked the smallest stride fastest.
        let v = permute_view(&[8, 6, 8, 8, 8, 16], &[3, 2, 4, 1, 5, 0]).unwrap();
        let rotation = Plan::new(&fuse(&v.shape, &v.strides), true, 8);
        assert!(matches!(rotation.walk, Walk::Tiles { c: 4, .. }));
        assert_eq!((rotation.walked, rotation.regrouped), (vec![0, 1, 3, 2], 2));
        let reversed: Vec<usize> = (0..24).rev().collect();
        match plan(&[2; 24], &reversed) {
            Walk::Blocks { out_src, inner } => assert_eq!((out_src.len(), inner.len()), (32, 32)),
            other => panic!("{other:?}"),
        }
    }
}
