//! Structural kernels: copies of strided views (permutations, slices,
//! reversals, broadcasts, diagonals), and the ops that are not one view
//! (diagonal embedding, triangles, joins, padding, casts).

use super::buffer;
use super::create::filled_data;
use weft_core::layout::{row_major, View};
use weft_core::ops::{
    broadcast_view, concat_meta, diag_embed_view, diagonal_view, permute_view, reshape_meta,
    reverse_view, slice_view, Scalar, SliceAxis,
};
use weft_core::{element_count, DType, Element, Tensor, TensorError};

/// `input` with shape `to` (same elements, same order).
///
/// # Errors
///
/// As [`reshape_meta`].
pub(super) fn reshape(input: &Tensor, to: &[usize]) -> Result<Tensor, TensorError> {
    let shape = reshape_meta(input.shape(), to)?;
    Tensor::from_data(input.data().clone(), &shape)
}

/// `input` with its axes permuted.
///
/// # Errors
///
/// As [`permute_meta`].
pub(super) fn permute(
    input: &Tensor,
    perm: &[usize],
    parallel: bool,
) -> Result<Tensor, TensorError> {
    let v = permute_view(input.shape(), perm)?;
    if v.shape.contains(&0) {
        return view(input, &v);
    }
    let data = map_data!(input.data(), |s| super::permute::permuted(s, &v, parallel));
    Tensor::from_data(data, &v.shape)
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
            let got = permute(&t, &perm, false).unwrap();
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

    /// Every permutation of `shape`, in index order.
    fn permutations(rank: usize) -> Vec<Vec<usize>> {
        if rank == 0 {
            return vec![vec![]];
        }
        let mut all = Vec::new();
        for rest in permutations(rank - 1) {
            for at in 0..rank {
                let mut p = rest.clone();
                p.insert(at, rank - 1);
                all.push(p);
            }
        }
        all
    }

    #[test]
    fn tiled_and_row_copies_match_the_element_walk() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        // Odd extents around the tile, extents of 1, and a size past the
        // parallel threshold; every permutation of each.
        let shapes: [&[usize]; 7] = [
            &[1, 1],
            &[5, 1, 3],
            &[33, 65],
            &[1, 70, 3],
            &[3, 17, 2, 40],
            &[2, 300, 129],
            &[64, 1, 31, 33],
        ];
        for shape in shapes {
            let n: usize = shape.iter().product();
            let t = Tensor::from_vec((0..n).map(|i| i as f64).collect::<Vec<_>>(), shape).unwrap();
            for perm in permutations(shape.len()) {
                let want = view(&t, &permute_view(shape, &perm).unwrap()).unwrap();
                for parallel in [false, true] {
                    let got = pool.install(|| permute(&t, &perm, parallel)).unwrap();
                    assert_eq!(got.shape(), want.shape(), "{shape:?} {perm:?}");
                    assert_eq!(
                        got.as_slice::<f64>().unwrap(),
                        want.as_slice::<f64>().unwrap(),
                        "{shape:?} {perm:?} parallel {parallel}"
                    );
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
        let err = permute(&t, &[0, 0], false).unwrap_err();
        assert_eq!(err.to_string(), "[0, 0] is not a permutation of the 2 axes");
        let e = Tensor::from_vec(Vec::<f32>::new(), &[0, 3]).unwrap();
        assert_eq!(permute(&e, &[1, 0], false).unwrap().shape(), &[3, 0]);
    }
}

/// Copies a view out of `input`.
pub(super) fn view(input: &Tensor, v: &View) -> Result<Tensor, TensorError> {
    Tensor::from_data(map_data!(input.data(), |s| gather_view(s, v)), &v.shape)
}

/// The elements of `v` of `src`, one by one in row-major order.
fn gather_view<T: Element>(src: &[T], v: &View) -> Vec<T> {
    let mut out = buffer::take(v.shape.iter().product());
    v.for_each_offset(|o| out.push(src[o]));
    out
}

/// `input[start..stop:step, …]`.
///
/// # Errors
///
/// As [`slice_meta`].
pub(super) fn slice(input: &Tensor, axes: &[SliceAxis]) -> Result<Tensor, TensorError> {
    view(input, &slice_view(input.shape(), axes)?)
}

/// `input` with the order of `axes` reversed.
///
/// # Errors
///
/// [`TensorError::Axis`] for an axis out of range or given twice.
pub(super) fn reverse(input: &Tensor, axes: &[usize]) -> Result<Tensor, TensorError> {
    view(input, &reverse_view(input.shape(), axes)?)
}

/// `input` repeated along broadcast axes to `shape`.
///
/// # Errors
///
/// As [`broadcast_to_meta`].
pub(super) fn broadcast_to(input: &Tensor, shape: &[usize]) -> Result<Tensor, TensorError> {
    view(input, &broadcast_view(input.shape(), shape)?)
}

/// The diagonals of `axes`: those two axes removed, the diagonal last.
///
/// # Errors
///
/// As [`diagonal_view`].
pub(super) fn diagonal(input: &Tensor, axes: [usize; 2]) -> Result<Tensor, TensorError> {
    view(input, &diagonal_view(input.shape(), axes)?)
}

/// The last axis of `input` on the diagonals of output axes `axes`, zeros
/// elsewhere (`[..., n]` → `[..., n, n]` for the last two).
///
/// # Errors
///
/// As [`diag_embed_view`].
pub(super) fn diag_embed(input: &Tensor, axes: [usize; 2]) -> Result<Tensor, TensorError> {
    let (out, placed) = diag_embed_view(input.shape(), axes)?;
    let len = element_count(&out).ok_or_else(|| TensorError::TooLarge { shape: out.clone() })?;
    fn embed<T: Element>(v: &[T], len: usize, placed: &View) -> Vec<T> {
        let mut out = buffer::filled(len, T::ZERO);
        let mut values = v.iter();
        // The input, row-major, walks the output offsets it lands on.
        placed.for_each_offset(|o| out[o] = *values.next().expect("one value per offset"));
        out
    }
    Tensor::from_data(map_data!(input.data(), |v| embed(v, len, &placed)), &out)
}

/// Keeps the lower (`upper = false`: `j ≤ i + k`) or upper (`j ≥ i + k`)
/// triangle of the last two axes, zeroing the rest.
///
/// # Errors
///
/// [`TensorError::NotMatrix`] for fewer than two axes.
pub(super) fn triangle(input: &Tensor, k: isize, upper: bool) -> Result<Tensor, TensorError> {
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
    Tensor::from_data(map_data!(input.data(), |v| keep(v, m, n, k, upper)), shape)
}

/// The inputs joined along `axis`.
///
/// # Errors
///
/// As [`concat_meta`]; [`TensorError::MixedDTypes`].
pub(super) fn concatenate(inputs: &[&Tensor], axis: usize) -> Result<Tensor, TensorError> {
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
    let data = for_dtype!(inputs[0].dtype(), |T| {
        let parts = inputs
            .iter()
            .map(|t| Ok((t.as_slice::<T>()?, block(t))))
            .collect::<Result<Vec<(&[T], usize)>, TensorError>>()?;
        T::wrap(join(&parts, outer))
    });
    Tensor::from_data(data, &out)
}

/// `input` padded with `value`: `widths[i] = (before, after)` on axis `i`.
///
/// # Errors
///
/// [`TensorError::Slice`] for a rank mismatch; as [`Scalar::check`].
pub(super) fn pad(
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
    let mut result = filled_data("pad", value, input.dtype(), n)?;
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
    with_data2!(&mut result, input.data(), |d, s| scatter(d, s, &inner), else unreachable!("filled with the input's type"));
    Tensor::from_data(result, &out)
}

/// `input` converted to `dtype` as Rust's `as` converts each element (see
/// [`Element::from_scalar`]): real to complex with zero imaginary parts,
/// complex to real by taking the real parts, floats to integers
/// truncating toward zero and saturating (NaN to 0), integers to narrower
/// ones wrapping, numbers to `bool` by whether they are nonzero.
pub(super) fn cast(input: &Tensor, dtype: DType) -> Tensor {
    let data = with_data!(input.data(), |v| for_dtype!(dtype, |T| T::wrap(
        v.iter().map(|&x| T::from_scalar(x.to_scalar())).collect()
    )));
    Tensor::from_data(data, input.shape()).expect("same element count")
}

#[cfg(test)]
mod view_tests {
    use super::*;
    use weft_core::c32;

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
        let d = diagonal(&iota(&[2, 3, 3]), [1, 2]).unwrap();
        assert_eq!(values(&d), vec![0.0, 4.0, 8.0, 9.0, 13.0, 17.0]);
        let back = diag_embed(&d, [1, 2]).unwrap();
        assert_eq!(back.shape(), &[2, 3, 3]);
        assert_eq!(values(&diagonal(&back, [1, 2]).unwrap()), values(&d));
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
