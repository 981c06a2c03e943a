//! The indexing ops on the device: gather, scatter, dynamic slices and
//! compression. Their index operand (indices, starts or mask) is read back
//! to the host first — one synchronous copy of that operand — and checked
//! there by the same rules as the CPU's (`ops::positions`,
//! `ops::clamped_starts`, `ops::mask_positions`), so an index out of range
//! is the same typed error before any element is written. The kernels then
//! take host-checked positions: a gather (and a compression) is one `take`
//! at the positions; a scatter is a copy of `x` and one `put`, with the
//! updates grouped by target on the host so that no two threads write one
//! element and an add sums duplicates in the index tensor's order, as the
//! CPU does (the same result, bit for bit); dynamic slices are the strided
//! copies of static ones at the clamped starts.

use super::exec::Exec;
use super::kernels::{Dims, Targets};
use super::DeviceTensor;
use weft_core::layout::row_major;
use weft_core::ops::{slice_view, split_at_axis, window_axes, ScatterMode};
use weft_core::ExecError;

/// What an indexing op read and checked on the host.
#[derive(Debug)]
pub(super) enum HostIndex {
    /// Not an indexing op.
    None,
    /// Gather and compress: the positions taken.
    Positions(Vec<usize>),
    /// Scatter: the updates by target.
    Targets(Targets),
    /// Dynamic slices: the clamped starts.
    Starts(Vec<usize>),
}

impl HostIndex {
    // The dispatch reads what `host_index` made for the same op: another
    // variant there is a bug of this file, not bad input.

    pub(super) fn positions(&self) -> &[usize] {
        match self {
            HostIndex::Positions(at) => at,
            other => unreachable!("positions read from {other:?}"),
        }
    }

    pub(super) fn targets(&self) -> &Targets {
        match self {
            HostIndex::Targets(t) => t,
            other => unreachable!("targets read from {other:?}"),
        }
    }

    pub(super) fn starts(&self) -> &[usize] {
        match self {
            HostIndex::Starts(s) => s,
            other => unreachable!("starts read from {other:?}"),
        }
    }
}

impl Exec<'_> {
    /// `x` taken along `axis` at the checked `positions` (a gather); with
    /// `axis` `None`, from the flattened `x` (a compression).
    pub(super) fn take(
        &mut self,
        x: &DeviceTensor,
        positions: &[usize],
        axis: Option<usize>,
        out_shape: &[usize],
    ) -> Result<DeviceTensor, ExecError> {
        let (pre, extent, post) = match axis {
            Some(axis) => split_at_axis(&x.shape, axis),
            None => (1, x.len(), 1),
        };
        let mut out = self.alloc(x.dtype, out_shape)?;
        self.launch
            .take(&mut out, x, positions, [pre, post, extent])?;
        Ok(out)
    }

    /// A copy of `x` with `updates` set or added at `targets` along `axis`.
    pub(super) fn scatter(
        &mut self,
        x: &DeviceTensor,
        updates: &DeviceTensor,
        targets: &Targets,
        axis: usize,
        mode: ScatterMode,
    ) -> Result<DeviceTensor, ExecError> {
        let (pre, extent, post) = split_at_axis(&x.shape, axis);
        let mut out = self.duplicate(x, &x.shape)?;
        let add = mode == ScatterMode::Add;
        self.launch
            .put(&mut out, updates, targets, [pre, post, extent], add)?;
        Ok(out)
    }

    /// The window of `sizes` at the clamped `starts`.
    pub(super) fn window(
        &mut self,
        x: &DeviceTensor,
        starts: &[usize],
        sizes: &[usize],
    ) -> Result<DeviceTensor, ExecError> {
        self.gather(x, &slice_view(&x.shape, &window_axes(starts, sizes))?)
    }

    /// A copy of `x` with `update` written at the clamped `starts`: one
    /// device copy, then one strided copy into the window.
    pub(super) fn update_window(
        &mut self,
        x: &DeviceTensor,
        update: &DeviceTensor,
        starts: &[usize],
    ) -> Result<DeviceTensor, ExecError> {
        let mut out = self.duplicate(x, &x.shape)?;
        let dst = row_major(&x.shape);
        let base: isize = starts
            .iter()
            .zip(&dst)
            .map(|(&start, &stride)| start as isize * stride)
            .sum();
        let own = row_major(&update.shape);
        let dims = Dims::new(&update.shape, &[(&own, 0), (&dst, base)])
            .ok_or_else(|| self.too_many_axes("dynamic_update_slice", x.dtype))?;
        self.launch.strided_copy(&mut out, update, &dims)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_cpu::HostRun;

    #[test]
    fn duplicates_share_a_target_in_the_indices_order() {
        let t = Targets::group(&[3, 1, 3, 0, 3, 1]);
        assert_eq!(t.dst, [3, 1, 0]);
        assert_eq!(t.start, [0, 3, 5, 6]);
        assert_eq!(t.src, [0, 2, 4, 1, 5, 3]);
        assert!(t.is_sound(4));
        assert!(!t.is_sound(3), "target 3 is past an axis of 3");
        // A set takes each target's last update: 4, 5, 3.
        let last: Vec<usize> = (0..t.dst.len())
            .map(|u| t.src[t.start[u + 1] - 1])
            .collect();
        assert_eq!(last, [4, 5, 3]);
    }

    /// The `put` kernel's loop, on the host, for one element type.
    fn put(out: &mut [f64], upd: &[f64], t: &Targets, [pre, post, extent]: [usize; 3], add: bool) {
        let (u, n) = (t.dst.len(), t.src.len());
        for i in 0..pre * u * post {
            let (q, r) = (i % post, i / post);
            let (k, p) = (r % u, r / u);
            let o = (p * extent + t.dst[k]) * post + q;
            let from = |j: usize| upd[(p * n + t.src[j]) * post + q];
            if add {
                let mut acc = out[o];
                for j in t.start[k]..t.start[k + 1] {
                    acc += from(j);
                }
                out[o] = acc;
            } else {
                out[o] = from(t.start[k + 1] - 1);
            }
        }
    }

    #[test]
    fn the_kernels_plan_gives_the_cpus_scatter_bit_for_bit() {
        use weft_core::ops::{positions, TensorOp};
        use weft_core::Tensor;
        // Values whose sums depend on their order, duplicates on a middle
        // axis, negative indices.
        let x: Vec<f64> = (0..24).map(|i| 1e16 * f64::from(i % 3)).collect();
        let upd: Vec<f64> = (0..32).map(|i| 1.0 + f64::from(i) * 0.37).collect();
        let (xs, us) = (
            Tensor::from_vec(x.clone(), &[2, 3, 4]).unwrap(),
            Tensor::from_vec(upd.clone(), &[2, 4, 4]).unwrap(),
        );
        let indices = Tensor::from_vec(vec![1i64, -2, 0, 1], &[4]).unwrap();
        let at = positions("scatter", &indices, 1, 3).unwrap();
        let targets = Targets::group(&at);
        for mode in [ScatterMode::Set, ScatterMode::Add] {
            let op = TensorOp::Scatter { axis: 1, mode };
            let want = op.run(&[&xs, &indices, &us], 1).unwrap().remove(0);
            let mut got = x.clone();
            put(
                &mut got,
                &upd,
                &targets,
                [2, 4, 3],
                mode == ScatterMode::Add,
            );
            let bits = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(&got),
                bits(want.as_slice::<f64>().unwrap()),
                "{mode:?}"
            );
        }
    }

    #[test]
    fn a_plan_the_kernel_cannot_trust_is_refused() {
        let good = Targets::group(&[0, 1]);
        assert!(good.is_sound(2));
        let mut empty_target = good.clone();
        empty_target.start = vec![0, 0, 2];
        assert!(!empty_target.is_sound(2));
        let mut past = good.clone();
        past.src = vec![0, 2];
        assert!(!past.is_sound(2));
        let mut short = good;
        short.start.pop();
        assert!(!short.is_sound(2));
        assert!(Targets::group(&[]).is_sound(0));
    }
}
