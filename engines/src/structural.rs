//! Structural ops: reshape and axis permutation.

use crate::buffer;
use crate::create::Scalar;
use crate::tensor::{c32, c64, element_count, DType, Data, Element, Tensor, TensorError};

/// Checks a reshape of `shape` to `to`.
///
/// # Errors
///
/// [`TensorError::Reshape`] if the element counts differ.
pub fn reshape_meta(shape: &[usize], to: &[usize]) -> Result<Vec<usize>, TensorError> {
    match (element_count(shape), element_count(to)) {
        (Some(a), Some(b)) if a == b => Ok(to.to_vec()),
        _ => Err(TensorError::Reshape {
            from: shape.to_vec(),
            to: to.to_vec(),
        }),
    }
}

/// Checks a permutation of the axes of `shape`: `perm[i]` is the input axis
/// that becomes output axis `i`.
///
/// # Errors
///
/// [`TensorError::Permutation`] unless `perm` is a permutation of the axes.
pub fn permute_meta(shape: &[usize], perm: &[usize]) -> Result<Vec<usize>, TensorError> {
    let mut seen = vec![false; shape.len()];
    let ok = perm.len() == shape.len()
        && perm
            .iter()
            .all(|&p| p < shape.len() && !std::mem::replace(&mut seen[p], true));
    if !ok {
        return Err(TensorError::Permutation {
            perm: perm.to_vec(),
            rank: shape.len(),
        });
    }
    Ok(perm.iter().map(|&p| shape[p]).collect())
}

/// `input` with shape `to` (same elements, same order).
///
/// # Errors
///
/// As [`reshape_meta`].
pub fn reshape(input: &Tensor, to: &[usize]) -> Result<Tensor, TensorError> {
    let shape = reshape_meta(input.shape(), to)?;
    Tensor::from_data(input.data().clone(), &shape)
}

/// `input` with its axes permuted.
///
/// # Errors
///
/// As [`permute_meta`].
pub fn permute(input: &Tensor, perm: &[usize]) -> Result<Tensor, TensorError> {
    view(input, &permute_view(input.shape(), perm)?)
}

/// The view that [`permute`] copies out.
pub(crate) fn permute_view(shape: &[usize], perm: &[usize]) -> Result<View, TensorError> {
    let out = permute_meta(shape, perm)?;
    let own = row_major(shape);
    // Output axis i walks input axis perm[i].
    Ok(View {
        shape: out,
        strides: perm.iter().map(|&p| own[p]).collect(),
        base: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permute_matches_index_arithmetic() {
        let shape = [2, 3, 4];
        let t = Tensor::from_vec((0..24).map(f64::from).collect::<Vec<_>>(), &shape).unwrap();
        for perm in [
            [0, 1, 2],
            [2, 1, 0],
            [1, 0, 2],
            [0, 2, 1],
            [2, 0, 1],
            [1, 2, 0],
        ] {
            let got = permute(&t, &perm).unwrap();
            let out: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
            assert_eq!(got.shape(), &out[..]);
            let v = got.as_slice::<f64>().unwrap();
            for i in 0..out[0] {
                for j in 0..out[1] {
                    for k in 0..out[2] {
                        let mut src = [0; 3];
                        src[perm[0]] = i;
                        src[perm[1]] = j;
                        src[perm[2]] = k;
                        let want = (src[0] * 12 + src[1] * 4 + src[2]) as f64;
                        assert_eq!(v[(i * out[1] + j) * out[2] + k], want, "{perm:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn reshape_keeps_order_and_checks_counts() {
        let t = Tensor::from_vec((0..6).map(f64::from).collect::<Vec<_>>(), &[2, 3]).unwrap();
        let r = reshape(&t, &[3, 1, 2]).unwrap();
        assert_eq!(r.as_slice::<f64>().unwrap(), t.as_slice::<f64>().unwrap());
        let err = reshape(&t, &[4, 2]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot reshape [2, 3] (6 elements) to [4, 2] (8 elements)"
        );
        let err = permute(&t, &[0, 0]).unwrap_err();
        assert_eq!(err.to_string(), "[0, 0] is not a permutation of the 2 axes");
        let e = Tensor::from_vec(Vec::<f32>::new(), &[0, 3]).unwrap();
        assert_eq!(permute(&e, &[1, 0]).unwrap().shape(), &[3, 0]);
    }
}

/// A strided view of a tensor: element `index` of the output is input
/// element `base + Σ index[i] · strides[i]`. Slices, reversals, broadcasts
/// and diagonals are all such views. The CPU engine copies one out with
/// `view`; the CUDA engine, with one kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// The view's shape.
    pub shape: Vec<usize>,
    /// Input elements between neighbours along each axis (negative walks back).
    pub strides: Vec<isize>,
    /// The input offset of the view's first element.
    pub base: isize,
}

impl View {
    /// A view of the axes of `shape` picked by `keep`, in order, with the
    /// row-major strides they have in `shape`.
    pub(crate) fn axes_of(shape: &[usize], keep: impl Fn(usize) -> bool) -> View {
        let strides = row_major(shape);
        let picked: Vec<usize> = (0..shape.len()).filter(|&i| keep(i)).collect();
        View {
            shape: picked.iter().map(|&i| shape[i]).collect(),
            strides: picked.iter().map(|&i| strides[i]).collect(),
            base: 0,
        }
    }

    /// Calls `f` with the input offset of every element of the view, last
    /// axis fastest: the one odometer every strided walk here uses.
    pub(crate) fn for_each_offset(&self, mut f: impl FnMut(usize)) {
        if self.shape.contains(&0) {
            return;
        }
        let mut index = vec![0usize; self.shape.len()];
        let mut offset = self.base;
        loop {
            f(usize::try_from(offset).expect("views stay inside their tensor"));
            let mut axis = self.shape.len();
            loop {
                if axis == 0 {
                    return;
                }
                axis -= 1;
                index[axis] += 1;
                offset += self.strides[axis];
                if index[axis] < self.shape[axis] {
                    break;
                }
                offset -= self.strides[axis] * self.shape[axis] as isize;
                index[axis] = 0;
            }
        }
    }
}

pub(crate) fn row_major(shape: &[usize]) -> Vec<isize> {
    let mut strides = vec![1isize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1] as isize;
    }
    strides
}

/// Copies a view out of `input`.
pub(crate) fn view(input: &Tensor, v: &View) -> Result<Tensor, TensorError> {
    fn gather<T: Element>(src: &[T], v: &View) -> Vec<T> {
        let mut out = buffer::take(v.shape.iter().product());
        v.for_each_offset(|o| out.push(src[o]));
        out
    }
    let data = match input.data() {
        Data::F32(s) => Data::F32(gather(s, v)),
        Data::F64(s) => Data::F64(gather(s, v)),
        Data::C32(s) => Data::C32(gather(s, v)),
        Data::C64(s) => Data::C64(gather(s, v)),
    };
    Tensor::from_data(data, &v.shape)
}

/// One axis of a slice: `start..stop` by `step` (`step ≥ 1`), clamped to the
/// axis like Python's slices of non-negative bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SliceAxis {
    /// First index.
    pub start: usize,
    /// One past the last index (clamped to the extent).
    pub stop: usize,
    /// Distance between taken indices, at least 1.
    pub step: usize,
}

impl SliceAxis {
    /// The whole axis.
    pub const ALL: SliceAxis = SliceAxis {
        start: 0,
        stop: usize::MAX,
        step: 1,
    };
}

pub(crate) fn slice_view(shape: &[usize], axes: &[SliceAxis]) -> Result<View, TensorError> {
    if axes.len() != shape.len() {
        return Err(TensorError::Slice {
            op: "slice",
            shape: shape.to_vec(),
            reason: format!(
                "{} axis ranges for a rank-{} tensor",
                axes.len(),
                shape.len()
            ),
        });
    }
    let strides = row_major(shape);
    let mut v = View {
        shape: Vec::new(),
        strides: Vec::new(),
        base: 0,
    };
    for (i, (a, &n)) in axes.iter().zip(shape).enumerate() {
        if a.step == 0 {
            return Err(TensorError::Slice {
                op: "slice",
                shape: shape.to_vec(),
                reason: format!("axis {i}: step 0"),
            });
        }
        if a.start > n {
            return Err(TensorError::Slice {
                op: "slice",
                shape: shape.to_vec(),
                reason: format!("axis {i}: start {} is past the extent {n}", a.start),
            });
        }
        let stop = a.stop.min(n).max(a.start);
        v.shape.push((stop - a.start).div_ceil(a.step));
        v.strides.push(strides[i] * a.step as isize);
        v.base += strides[i] * a.start as isize;
    }
    Ok(v)
}

/// The shape of a slice; see [`slice()`].
///
/// # Errors
///
/// [`TensorError::Slice`] for a rank mismatch, a zero step or a start past
/// the extent.
pub fn slice_meta(shape: &[usize], axes: &[SliceAxis]) -> Result<Vec<usize>, TensorError> {
    Ok(slice_view(shape, axes)?.shape)
}

/// `input[start..stop:step, …]`.
///
/// # Errors
///
/// As [`slice_meta`].
pub fn slice(input: &Tensor, axes: &[SliceAxis]) -> Result<Tensor, TensorError> {
    view(input, &slice_view(input.shape(), axes)?)
}

/// `input` with the order of `axes` reversed.
///
/// # Errors
///
/// [`TensorError::Axis`] for an axis out of range or given twice.
pub fn reverse(input: &Tensor, axes: &[usize]) -> Result<Tensor, TensorError> {
    view(input, &reverse_view(input.shape(), axes)?)
}

/// The view that [`reverse`] copies out.
pub(crate) fn reverse_view(shape: &[usize], axes: &[usize]) -> Result<View, TensorError> {
    check_axes("reverse", shape.len(), axes)?;
    let mut v = View {
        shape: shape.to_vec(),
        strides: row_major(shape),
        base: 0,
    };
    for &a in axes {
        if shape[a] > 0 {
            v.base += v.strides[a] * (shape[a] as isize - 1);
        }
        v.strides[a] = -v.strides[a];
    }
    Ok(v)
}

/// Checks a list of distinct axes of a rank-`rank` tensor.
///
/// # Errors
///
/// [`TensorError::Axis`].
pub fn check_axes(op: &'static str, rank: usize, axes: &[usize]) -> Result<(), TensorError> {
    for (i, &a) in axes.iter().enumerate() {
        let reason = if a >= rank {
            "out of range"
        } else if axes[..i].contains(&a) {
            "given twice"
        } else {
            continue;
        };
        return Err(TensorError::Axis {
            op,
            axis: a,
            rank,
            reason,
        });
    }
    Ok(())
}

/// The shape `input` broadcasts to `shape` in, checked.
///
/// # Errors
///
/// [`TensorError::Broadcast`] if it does not broadcast to exactly `shape`.
pub fn broadcast_to_meta(from: &[usize], to: &[usize]) -> Result<Vec<usize>, TensorError> {
    let out = crate::elementwise::broadcast_shapes("broadcast_to", from, to)?;
    if out != to {
        // Axes counted from the right; one that `to` lacks (the input has
        // more axes than the target) counts as extent 1 and is refused.
        let extent = |s: &[usize], k: usize| s.len().checked_sub(k + 1).map_or(1, |i| s[i]);
        let axis = (0..out.len())
            .find(|&k| k >= to.len() || extent(&out, k) != extent(to, k))
            .unwrap_or(0);
        return Err(TensorError::Broadcast {
            op: "broadcast_to",
            lhs: from.to_vec(),
            rhs: to.to_vec(),
            axis,
            l: extent(from, axis),
            r: extent(to, axis),
        });
    }
    Ok(out)
}

/// `input` repeated along broadcast axes to `shape`.
///
/// # Errors
///
/// As [`broadcast_to_meta`].
pub fn broadcast_to(input: &Tensor, shape: &[usize]) -> Result<Tensor, TensorError> {
    view(input, &broadcast_view(input.shape(), shape)?)
}

/// The view that [`broadcast_to`] copies out: stride 0 on broadcast axes.
pub(crate) fn broadcast_view(from: &[usize], shape: &[usize]) -> Result<View, TensorError> {
    broadcast_to_meta(from, shape)?;
    let lead = shape.len() - from.len();
    let own = row_major(from);
    let strides = (0..shape.len())
        .map(|i| {
            if i < lead || from[i - lead] == 1 {
                0
            } else {
                own[i - lead]
            }
        })
        .collect();
    Ok(View {
        shape: shape.to_vec(),
        strides,
        base: 0,
    })
}

/// The main diagonals of the last two axes: `[..., m, n]` → `[..., min(m, n)]`.
///
/// # Errors
///
/// [`TensorError::NotMatrix`] for fewer than two axes.
pub fn diagonal(input: &Tensor) -> Result<Tensor, TensorError> {
    view(input, &diagonal_view(input.shape())?)
}

/// The view that [`diagonal`] copies out.
pub(crate) fn diagonal_view(shape: &[usize]) -> Result<View, TensorError> {
    let r = shape.len();
    if r < 2 {
        return Err(TensorError::NotMatrix {
            op: "diagonal",
            shape: shape.to_vec(),
        });
    }
    let strides = row_major(shape);
    let mut v = View {
        shape: shape[..r - 2].to_vec(),
        strides: strides[..r - 2].to_vec(),
        base: 0,
    };
    v.shape.push(shape[r - 2].min(shape[r - 1]));
    v.strides.push(strides[r - 2] + strides[r - 1]);
    Ok(v)
}

/// Matrices with `[..., n]` on their diagonals: `[..., n]` → `[..., n, n]`.
///
/// # Errors
///
/// [`TensorError::NotMatrix`] for a scalar input.
pub fn diag_embed(input: &Tensor) -> Result<Tensor, TensorError> {
    let shape = input.shape();
    let Some(&n) = shape.last() else {
        return Err(TensorError::NotMatrix {
            op: "diag_embed",
            shape: Vec::new(),
        });
    };
    let mut out = shape.to_vec();
    out.push(n);
    fn embed<T: Element>(v: &[T], n: usize) -> Vec<T> {
        let mut out = vec![T::ZERO; v.len() * n];
        for (k, &x) in v.iter().enumerate() {
            let (batch, i) = (k / n.max(1), k % n.max(1));
            out[batch * n * n + i * n + i] = x;
        }
        out
    }
    let data = match input.data() {
        Data::F32(v) => Data::F32(embed(v, n)),
        Data::F64(v) => Data::F64(embed(v, n)),
        Data::C32(v) => Data::C32(embed(v, n)),
        Data::C64(v) => Data::C64(embed(v, n)),
    };
    Tensor::from_data(data, &out)
}

/// Keeps the lower (`upper = false`: `j ≤ i + k`) or upper (`j ≥ i + k`)
/// triangle of the last two axes, zeroing the rest.
///
/// # Errors
///
/// [`TensorError::NotMatrix`] for fewer than two axes.
pub fn triangle(input: &Tensor, k: isize, upper: bool) -> Result<Tensor, TensorError> {
    let shape = input.shape();
    let r = shape.len();
    if r < 2 {
        return Err(TensorError::NotMatrix {
            op: if upper { "triu" } else { "tril" },
            shape: shape.to_vec(),
        });
    }
    let (m, n) = (shape[r - 2], shape[r - 1]);
    fn keep<T: Element>(v: &[T], m: usize, n: usize, k: isize, upper: bool) -> Vec<T> {
        v.iter()
            .enumerate()
            .map(|(idx, &x)| {
                let (i, j) = ((idx / n.max(1)) % m.max(1), idx % n.max(1));
                let d = j as isize - i as isize;
                if (upper && d >= k) || (!upper && d <= k) {
                    x
                } else {
                    T::ZERO
                }
            })
            .collect()
    }
    let data = match input.data() {
        Data::F32(v) => Data::F32(keep(v, m, n, k, upper)),
        Data::F64(v) => Data::F64(keep(v, m, n, k, upper)),
        Data::C32(v) => Data::C32(keep(v, m, n, k, upper)),
        Data::C64(v) => Data::C64(keep(v, m, n, k, upper)),
    };
    Tensor::from_data(data, shape)
}

/// The shape of the concatenation of `shapes` along `axis`.
///
/// # Errors
///
/// [`TensorError::Concat`] for no input, ranks that differ, or extents that
/// differ off `axis`; [`TensorError::Axis`] for `axis` out of range.
pub fn concat_meta(shapes: &[&[usize]], axis: usize) -> Result<Vec<usize>, TensorError> {
    let first = shapes.first().ok_or_else(|| TensorError::Concat {
        reason: "no input".into(),
    })?;
    check_axes("concatenate", first.len(), &[axis])?;
    let mut out = first.to_vec();
    for (i, s) in shapes.iter().enumerate().skip(1) {
        if s.len() != first.len() || (0..s.len()).any(|a| a != axis && s[a] != first[a]) {
            return Err(TensorError::Concat {
                reason: format!("input {i} has shape {s:?}, input 0 {first:?}, along axis {axis}"),
            });
        }
        out[axis] += s[axis];
    }
    Ok(out)
}

/// The inputs joined along `axis`.
///
/// # Errors
///
/// As [`concat_meta`]; [`TensorError::MixedDTypes`].
pub fn concatenate(inputs: &[&Tensor], axis: usize) -> Result<Tensor, TensorError> {
    let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
    let out = concat_meta(&shapes, axis)?;
    for t in &inputs[1..] {
        if t.dtype() != inputs[0].dtype() {
            return Err(TensorError::MixedDTypes {
                op: "concatenate",
                lhs: inputs[0].dtype(),
                rhs: t.dtype(),
            });
        }
    }
    let outer: usize = out[..axis].iter().product();
    fn join<T: Element>(parts: &[(&[T], usize)], outer: usize) -> Vec<T> {
        // Each part contributes `block` contiguous elements per outer index.
        let mut v = Vec::with_capacity(parts.iter().map(|(p, _)| p.len()).sum());
        for o in 0..outer {
            for &(p, block) in parts {
                v.extend_from_slice(&p[o * block..(o + 1) * block]);
            }
        }
        v
    }
    let block = |t: &Tensor| t.shape()[axis..].iter().product::<usize>();
    macro_rules! typed {
        ($t:ty, $variant:ident) => {{
            let parts: Vec<(&[$t], usize)> = inputs
                .iter()
                .map(|t| (t.as_slice::<$t>().expect("checked dtype"), block(t)))
                .collect();
            Data::$variant(join(&parts, outer))
        }};
    }
    let data = match inputs[0].dtype() {
        DType::F32 => typed!(f32, F32),
        DType::F64 => typed!(f64, F64),
        DType::C32 => typed!(c32, C32),
        DType::C64 => typed!(c64, C64),
    };
    Tensor::from_data(data, &out)
}

/// `input` padded with `value`: `widths[i] = (before, after)` on axis `i`.
///
/// # Errors
///
/// [`TensorError::Slice`] for a rank mismatch; as [`Scalar::to_data`].
pub fn pad(
    input: &Tensor,
    widths: &[(usize, usize)],
    value: Scalar,
) -> Result<Tensor, TensorError> {
    let shape = input.shape();
    if widths.len() != shape.len() {
        return Err(TensorError::Slice {
            op: "pad",
            shape: shape.to_vec(),
            reason: format!(
                "{} pad widths for a rank-{} tensor",
                widths.len(),
                shape.len()
            ),
        });
    }
    let out: Vec<usize> = shape
        .iter()
        .zip(widths)
        .map(|(&n, &(b, a))| n + b + a)
        .collect();
    let n = element_count(&out).ok_or(TensorError::TooLarge { shape: out.clone() })?;
    let mut result = value.to_data(input.dtype(), n)?;
    let out_strides = row_major(&out);
    let offset: isize = widths
        .iter()
        .zip(&out_strides)
        .map(|(&(b, _), &s)| b as isize * s)
        .sum();
    // Scatter the input through the view of the padded tensor it fills.
    let inner = View {
        shape: shape.to_vec(),
        strides: out_strides,
        base: offset,
    };
    fn scatter<T: Copy>(dst: &mut [T], src: &[T], v: &View) {
        let mut values = src.iter();
        v.for_each_offset(|o| dst[o] = *values.next().expect("one value per offset"));
    }
    match (&mut result, input.data()) {
        (Data::F32(d), Data::F32(s)) => scatter(d, s, &inner),
        (Data::F64(d), Data::F64(s)) => scatter(d, s, &inner),
        (Data::C32(d), Data::C32(s)) => scatter(d, s, &inner),
        (Data::C64(d), Data::C64(s)) => scatter(d, s, &inner),
        _ => unreachable!("same dtype"),
    }
    Tensor::from_data(result, &out)
}

/// `input` converted to `dtype`: real to complex with zero imaginary parts,
/// complex to real by taking the real parts, widths as `as` converts.
pub fn cast(input: &Tensor, dtype: DType) -> Tensor {
    let parts: Vec<(f64, f64)> = match input.data() {
        Data::F32(v) => v.iter().map(|&x| (f64::from(x), 0.0)).collect(),
        Data::F64(v) => v.iter().map(|&x| (x, 0.0)).collect(),
        Data::C32(v) => v
            .iter()
            .map(|z| (f64::from(z.re), f64::from(z.im)))
            .collect(),
        Data::C64(v) => v.iter().map(|z| (z.re, z.im)).collect(),
    };
    let data = match dtype {
        DType::F32 => Data::F32(parts.iter().map(|&(r, _)| r as f32).collect()),
        DType::F64 => Data::F64(parts.iter().map(|&(r, _)| r).collect()),
        DType::C32 => Data::C32(
            parts
                .iter()
                .map(|&(r, i)| c32::new(r as f32, i as f32))
                .collect(),
        ),
        DType::C64 => Data::C64(parts.iter().map(|&(r, i)| c64::new(r, i)).collect()),
    };
    Tensor::from_data(data, input.shape()).expect("same element count")
}

#[cfg(test)]
mod view_tests {
    use super::*;

    fn iota(shape: &[usize]) -> Tensor {
        let n = shape.iter().product();
        Tensor::from_vec((0..n).map(|i| i as f64).collect::<Vec<_>>(), shape).unwrap()
    }

    fn values(t: &Tensor) -> Vec<f64> {
        t.as_slice::<f64>().unwrap().to_vec()
    }

    #[test]
    fn slices_reversals_broadcasts_diagonals() {
        let t = iota(&[3, 4]);
        let s = slice(
            &t,
            &[
                SliceAxis {
                    start: 1,
                    stop: 3,
                    step: 1,
                },
                SliceAxis {
                    start: 0,
                    stop: 9,
                    step: 2,
                },
            ],
        )
        .unwrap();
        assert_eq!(
            (s.shape(), values(&s)),
            (&[2, 2][..], vec![4.0, 6.0, 8.0, 10.0])
        );
        let e = slice(
            &t,
            &[
                SliceAxis {
                    start: 3,
                    stop: 3,
                    step: 1,
                },
                SliceAxis::ALL,
            ],
        )
        .unwrap();
        assert_eq!(e.shape(), &[0, 4]);
        assert!(slice(
            &t,
            &[
                SliceAxis {
                    start: 4,
                    stop: 5,
                    step: 1
                },
                SliceAxis::ALL
            ]
        )
        .is_err());
        let err = slice(
            &t,
            &[
                SliceAxis {
                    start: 0,
                    stop: 1,
                    step: 0,
                },
                SliceAxis::ALL,
            ],
        )
        .unwrap_err();
        assert!(err.to_string().contains("axis 0: step 0"), "{err}");
        let r = reverse(&t, &[1]).unwrap();
        assert_eq!(&values(&r)[..4], &[3.0, 2.0, 1.0, 0.0]);
        let rr = reverse(&t, &[0, 1]).unwrap();
        assert_eq!(
            values(&rr),
            (0..12).rev().map(f64::from).collect::<Vec<_>>()
        );
        let b = broadcast_to(&iota(&[3, 1]), &[2, 3, 2]).unwrap();
        assert_eq!(
            values(&b),
            vec![0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 0.0, 0.0, 1.0, 1.0, 2.0, 2.0]
        );
        assert!(broadcast_to(&iota(&[3]), &[3, 2]).is_err());
        let d = diagonal(&iota(&[2, 3, 3])).unwrap();
        assert_eq!(values(&d), vec![0.0, 4.0, 8.0, 9.0, 13.0, 17.0]);
        let back = diag_embed(&d).unwrap();
        assert_eq!(back.shape(), &[2, 3, 3]);
        assert_eq!(values(&diagonal(&back).unwrap()), values(&d));
    }

    #[test]
    fn triangles_concat_pad_cast() {
        let t = iota(&[3, 3]);
        assert_eq!(
            values(&triangle(&t, 0, false).unwrap()),
            vec![0.0, 0.0, 0.0, 3.0, 4.0, 0.0, 6.0, 7.0, 8.0]
        );
        assert_eq!(
            values(&triangle(&t, 1, true).unwrap()),
            vec![0.0, 1.0, 2.0, 0.0, 0.0, 5.0, 0.0, 0.0, 0.0]
        );
        let c = concatenate(&[&iota(&[2, 2]), &iota(&[2, 1])], 1).unwrap();
        assert_eq!(
            (c.shape(), values(&c)),
            (&[2, 3][..], vec![0.0, 1.0, 0.0, 2.0, 3.0, 1.0])
        );
        let err = concatenate(&[&iota(&[2, 2]), &iota(&[3, 1])], 1).unwrap_err();
        assert!(
            err.to_string().contains("input 1 has shape [3, 1]"),
            "{err}"
        );
        let p = pad(&iota(&[2]), &[(1, 2)], Scalar::Real(-1.0)).unwrap();
        assert_eq!(values(&p), vec![-1.0, 0.0, 1.0, -1.0, -1.0]);
        let p2 = pad(&iota(&[1, 2]), &[(1, 0), (0, 1)], Scalar::Real(9.0)).unwrap();
        assert_eq!(values(&p2), vec![9.0, 9.0, 9.0, 0.0, 1.0, 9.0]);
        let z = cast(&iota(&[2]), DType::C32);
        assert_eq!(
            z.as_slice::<c32>().unwrap(),
            &[c32::new(0.0, 0.0), c32::new(1.0, 0.0)]
        );
        assert_eq!(values(&cast(&z, DType::F64)), vec![0.0, 1.0]);
    }
}
