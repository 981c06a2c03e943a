//! Elementwise kernels: binary ops with NumPy broadcasting, comparisons,
//! select and clamp.

use rayon::prelude::*;

use super::buffer;
use super::exec::PARALLEL_THRESHOLD;
use super::structural::broadcast_to;
use crate::layout::strides_in;
use crate::ops::{check_binary_meta, check_compare, check_select, BinaryOp, CmpOp};
use crate::tensor::{element_count, Element, Tensor, TensorError};

/// Output elements one parallel task computes.
const CHUNK: usize = 1 << 13;

/// Applies `op` to `lhs` and `rhs` with broadcasting; `parallel` spreads
/// the work over the current rayon pool (the caller installs the domain's).
///
/// # Errors
///
/// As [`check_binary_meta`].
pub(super) fn binary(
    op: BinaryOp,
    lhs: &Tensor,
    rhs: &Tensor,
    parallel: bool,
) -> Result<Tensor, TensorError> {
    let out_shape = check_binary_meta(op, lhs.dtype(), lhs.shape(), rhs.dtype(), rhs.shape())?;
    let (a_shape, b_shape, out) = (lhs.shape(), rhs.shape(), &out_shape[..]);
    let refused = || TensorError::Unsupported {
        op: op.name(),
        dtype: lhs.dtype(),
    };
    let data = match op {
        BinaryOp::Maximum | BinaryOp::Minimum => map_real2!(
            lhs.data(),
            rhs.data(),
            |a, b| ordered(op, &Operands { a, a_shape, b, b_shape, out, parallel }),
            else return Err(refused())
        ),
        _ => map_data2!(
            lhs.data(),
            rhs.data(),
            |a, b| field(op, &Operands { a, a_shape, b, b_shape, out, parallel }),
            else return Err(refused())
        ),
    };
    Tensor::from_parts(out_shape, data)
}

/// The operands of one elementwise kernel call.
struct Operands<'a, T> {
    a: &'a [T],
    a_shape: &'a [usize],
    b: &'a [T],
    b_shape: &'a [usize],
    out: &'a [usize],
    parallel: bool,
}

/// The ops every element type has. Each arm passes its own closure, so
/// the kernel is compiled (and vectorized) per op.
fn field<T: Element>(op: BinaryOp, x: &Operands<'_, T>) -> Vec<T> {
    match op {
        BinaryOp::Add => kernel(|a, b| a + b, x),
        BinaryOp::Sub => kernel(|a, b| a - b, x),
        BinaryOp::Mul => kernel(|a, b| a * b, x),
        BinaryOp::Div => kernel(|a, b| a / b, x),
        BinaryOp::Pow => kernel(|a: T, b: T| a.pow(b), x),
        BinaryOp::Maximum | BinaryOp::Minimum => unreachable!("dispatched to `ordered`"),
    }
}

/// Maximum and minimum, of the real types.
fn ordered<T: Element + PartialOrd + num_nan::IsNan>(op: BinaryOp, x: &Operands<'_, T>) -> Vec<T> {
    match op {
        BinaryOp::Maximum => kernel(
            |a: T, b: T| {
                if a.is_nan() || b.is_nan() {
                    T::nan()
                } else if a >= b {
                    a
                } else {
                    b
                }
            },
            x,
        ),
        BinaryOp::Minimum => kernel(
            |a: T, b: T| {
                if a.is_nan() || b.is_nan() {
                    T::nan()
                } else if a <= b {
                    a
                } else {
                    b
                }
            },
            x,
        ),
        _ => unreachable!("dispatched to `field`"),
    }
}

/// NaN for the real element types.
mod num_nan {
    pub(super) trait IsNan: Copy {
        fn is_nan(self) -> bool;
        fn nan() -> Self;
    }

    impl IsNan for f32 {
        fn is_nan(self) -> bool {
            f32::is_nan(self)
        }
        fn nan() -> Self {
            f32::NAN
        }
    }

    impl IsNan for f64 {
        fn is_nan(self) -> bool {
            f64::is_nan(self)
        }
        fn nan() -> Self {
            f64::NAN
        }
    }
}

fn kernel<T: Element, F: Fn(T, T) -> T + Copy + Send + Sync>(f: F, x: &Operands<'_, T>) -> Vec<T> {
    let Operands {
        a,
        b,
        out,
        parallel,
        ..
    } = *x;
    let n = element_count(out).expect("checked: the output shape fits");
    let same = a.len() == n && b.len() == n;
    if same && parallel && n >= PARALLEL_THRESHOLD {
        // Collect in place: no zero-filled buffer to write twice.
        let mut result = buffer::take(n);
        result.par_extend(
            a.par_iter()
                .zip(b)
                .with_min_len(CHUNK)
                .map(|(&x, &y)| f(x, y)),
        );
        return result;
    }
    let mut result = buffer::filled(n, T::ZERO);
    if n == 0 {
        return result;
    }
    let fill = |start: usize, chunk: &mut [T]| {
        if same {
            for ((o, &x), &y) in chunk.iter_mut().zip(&a[start..]).zip(&b[start..]) {
                *o = f(x, y);
            }
        } else if b.len() == 1 {
            let y = b[0];
            if a.len() == n {
                for (o, &x) in chunk.iter_mut().zip(&a[start..]) {
                    *o = f(x, y);
                }
            } else {
                strided(f, x, start, chunk);
            }
        } else if a.len() == 1 && b.len() == n {
            let x = a[0];
            for (o, &y) in chunk.iter_mut().zip(&b[start..]) {
                *o = f(x, y);
            }
        } else {
            strided(f, x, start, chunk);
        }
    };
    if parallel && n >= PARALLEL_THRESHOLD {
        result
            .par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(i, chunk)| fill(i * CHUNK, chunk));
    } else {
        fill(0, &mut result);
    }
    result
}

/// The general broadcast loop over output elements `start..start + len`:
/// an odometer over the output index, with each input's offset advanced by
/// its (possibly zero) strides.
fn strided<T: Element>(f: impl Fn(T, T) -> T, x: &Operands<'_, T>, start: usize, chunk: &mut [T]) {
    let Operands {
        a,
        a_shape,
        b,
        b_shape,
        out,
        ..
    } = *x;
    let rank = out.len();
    let (sa, sb) = (strides_in(a_shape, out), strides_in(b_shape, out));
    let mut index = vec![0; rank];
    let mut rest = start;
    for axis in (0..rank).rev() {
        index[axis] = rest % out[axis];
        rest /= out[axis];
    }
    let mut oa: usize = (0..rank).map(|i| index[i] * sa[i]).sum();
    let mut ob: usize = (0..rank).map(|i| index[i] * sb[i]).sum();
    for o in chunk.iter_mut() {
        *o = f(a[oa], b[ob]);
        for axis in (0..rank).rev() {
            index[axis] += 1;
            // Wrapping, as `View::for_each_offset`: the step past an
            // axis's end is taken back at once.
            oa = oa.wrapping_add(sa[axis]);
            ob = ob.wrapping_add(sb[axis]);
            if index[axis] < out[axis] {
                break;
            }
            oa = oa.wrapping_sub(sa[axis].wrapping_mul(out[axis]));
            ob = ob.wrapping_sub(sb[axis].wrapping_mul(out[axis]));
            index[axis] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::{c64, Tensor};

    /// Reference: index each input by the broadcast rule, one element at a
    /// time, with no shared code.
    fn reference(op: fn(f64, f64) -> f64, a: &Tensor, b: &Tensor) -> (Vec<usize>, Vec<f64>) {
        let (sa, sb) = (a.shape(), b.shape());
        let rank = sa.len().max(sb.len());
        let pad = |s: &[usize]| {
            let mut v = vec![1; rank - s.len()];
            v.extend_from_slice(s);
            v
        };
        let (pa, pb) = (pad(sa), pad(sb));
        let out: Vec<usize> = (0..rank)
            .map(|i| if pa[i] == 1 { pb[i] } else { pa[i] })
            .collect();
        let n: usize = out.iter().product();
        let (va, vb) = (a.as_slice::<f64>().unwrap(), b.as_slice::<f64>().unwrap());
        let flat = |idx: &[usize], shape: &[usize]| {
            idx.iter()
                .zip(shape)
                .fold(0, |acc, (&i, &d)| acc * d + if d == 1 { 0 } else { i })
        };
        let mut values = Vec::with_capacity(n);
        for k in 0..n {
            let mut idx = vec![0; rank];
            let mut r = k;
            for ax in (0..rank).rev() {
                idx[ax] = r % out[ax];
                r /= out[ax];
            }
            values.push(op(va[flat(&idx, &pa)], vb[flat(&idx, &pb)]));
        }
        (out, values)
    }

    fn tensor(shape: &[usize], seed: f64) -> Tensor {
        let n = shape.iter().product();
        let values = (0..n)
            .map(|i| (i as f64 * 0.37 + seed).sin() * 4.0)
            .collect();
        Tensor::from_vec::<f64>(values, shape).unwrap()
    }

    #[test]
    fn broadcasts_like_numpy_on_every_axis() {
        let cases: &[(&[usize], &[usize])] = &[
            (&[], &[]),
            (&[3], &[]),
            (&[], &[2, 3]),
            (&[2, 3], &[2, 3]),
            (&[2, 3], &[3]),
            (&[2, 1], &[1, 4]),
            (&[4, 1, 3], &[5, 1]),
            (&[1], &[0]),
            (&[2, 0, 3], &[1, 3]),
            (&[3, 1, 2, 1], &[4, 1, 5]),
        ];
        type Reference = fn(f64, f64) -> f64;
        let ops: [(BinaryOp, Reference); 6] = [
            (BinaryOp::Add, |a, b| a + b),
            (BinaryOp::Sub, |a, b| a - b),
            (BinaryOp::Mul, |a, b| a * b),
            (BinaryOp::Div, |a, b| a / b),
            (BinaryOp::Maximum, f64::max),
            (BinaryOp::Minimum, f64::min),
        ];
        for (sa, sb) in cases {
            let (a, b) = (tensor(sa, 0.1), tensor(sb, 2.3));
            for (op, f) in ops {
                for parallel in [false, true] {
                    let got = binary(op, &a, &b, parallel).unwrap();
                    let (shape, want) = reference(f, &a, &b);
                    assert_eq!(got.shape(), &shape[..], "{op:?} {sa:?} {sb:?}");
                    assert_eq!(
                        got.as_slice::<f64>().unwrap(),
                        &want[..],
                        "{op:?} {sa:?} {sb:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn large_outputs_split_into_chunks_correctly() {
        let (a, b) = (tensor(&[3, 40_000], 0.5), tensor(&[40_000], 1.5));
        let serial = binary(BinaryOp::Mul, &a, &b, false).unwrap();
        let parallel = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap()
            .install(|| binary(BinaryOp::Mul, &a, &b, true).unwrap());
        assert_eq!(serial, parallel);
        let (_, want) = reference(|x, y| x * y, &a, &b);
        assert_eq!(serial.as_slice::<f64>().unwrap(), &want[..]);
    }

    #[test]
    fn every_dtype_and_nan_rules() {
        let a = Tensor::from_vec(vec![1.0f32, f32::NAN, 3.0], &[3]).unwrap();
        let b = Tensor::from_vec(vec![2.0f32, 0.0, -1.0], &[3]).unwrap();
        let max = binary(BinaryOp::Maximum, &a, &b, false).unwrap();
        let max = max.as_slice::<f32>().unwrap();
        assert_eq!((max[0], max[2]), (2.0, 3.0));
        assert!(max[1].is_nan());
        let z = Tensor::from_vec(vec![c64::new(1.0, 2.0), c64::new(0.0, -1.0)], &[2]).unwrap();
        let w = Tensor::scalar(c64::new(0.0, 1.0));
        let got = binary(BinaryOp::Mul, &z, &w, false).unwrap();
        assert_eq!(
            got.as_slice::<c64>().unwrap(),
            &[c64::new(-2.0, 1.0), c64::new(1.0, 0.0)]
        );
    }

    #[test]
    fn bad_operands_are_named() {
        let a = tensor(&[2, 3], 0.0);
        let err = binary(BinaryOp::Add, &a, &tensor(&[4], 0.0), false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "add: shapes [2, 3] and [4] do not broadcast (axis 0 from the right: 3 vs 4)"
        );
        let f32s = Tensor::from_vec(vec![1.0f32; 6], &[2, 3]).unwrap();
        let err = binary(BinaryOp::Sub, &a, &f32s, false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "sub: operands have different element types f64 and f32"
        );
        let z = Tensor::scalar(c64::new(1.0, 0.0));
        let err = binary(BinaryOp::Maximum, &z, &z, false).unwrap_err();
        assert_eq!(err.to_string(), "maximum is not defined for c64 tensors");
    }
}

/// `lhs op rhs` elementwise with broadcasting, as a 0/1 mask of the
/// operands' real type.
///
/// # Errors
///
/// As [`check_compare`].
pub(super) fn compare(op: CmpOp, lhs: &Tensor, rhs: &Tensor) -> Result<Tensor, TensorError> {
    let out = check_compare(op, lhs.dtype(), lhs.shape(), rhs.dtype(), rhs.shape())?;
    let (a, b) = (broadcast_to(lhs, &out)?, broadcast_to(rhs, &out)?);
    /// Orderings are of real types only (checked), whose value is the real part.
    fn test<T: Element>(op: CmpOp, a: &[T], b: &[T]) -> Vec<bool> {
        a.iter()
            .zip(b)
            .map(|(&x, &y)| match op {
                CmpOp::Eq => x == y,
                CmpOp::Ne => x != y,
                CmpOp::Lt => x.to_parts().0 < y.to_parts().0,
                CmpOp::Le => x.to_parts().0 <= y.to_parts().0,
                CmpOp::Gt => x.to_parts().0 > y.to_parts().0,
                CmpOp::Ge => x.to_parts().0 >= y.to_parts().0,
            })
            .collect()
    }
    let bits = with_data2!(a.data(), b.data(), |x, y| test(op, x, y), else return Err(mixed(op.name(), lhs, rhs)));
    let data = for_dtype!(lhs.dtype().real(), |T| T::wrap(
        bits.iter()
            .map(|&t| T::from_parts(f64::from(u8::from(t)), 0.0))
            .collect()
    ));
    Tensor::from_data(data, &out)
}

/// The error of operands whose element types differ.
fn mixed(op: &'static str, lhs: &Tensor, rhs: &Tensor) -> TensorError {
    TensorError::MixedDTypes {
        op,
        lhs: lhs.dtype(),
        rhs: rhs.dtype(),
    }
}

/// Where `mask` is nonzero, `a`; elsewhere `b` (all three broadcast).
///
/// # Errors
///
/// As [`check_select`].
pub(super) fn select(mask: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor, TensorError> {
    let out = check_select(
        mask.dtype(),
        mask.shape(),
        a.dtype(),
        a.shape(),
        b.dtype(),
        b.shape(),
    )?;
    let m = broadcast_to(mask, &out)?;
    let flags: Vec<bool> = with_data!(m.data(), |v| v
        .iter()
        .map(|x| x.to_parts() != (0.0, 0.0))
        .collect());
    let (x, y) = (broadcast_to(a, &out)?, broadcast_to(b, &out)?);
    fn pick<T: Copy>(flags: &[bool], a: &[T], b: &[T]) -> Vec<T> {
        flags
            .iter()
            .zip(a.iter().zip(b))
            .map(|(&f, (&x, &y))| if f { x } else { y })
            .collect()
    }
    let data = map_data2!(x.data(), y.data(), |x, y| pick(&flags, x, y), else return Err(mixed("select", a, b)));
    Tensor::from_data(data, &out)
}

/// Every element limited to `[lo, hi]` (real types; NaN stays NaN, as in
/// NumPy and JAX).
///
/// # Errors
///
/// [`TensorError::Unsupported`] for complex tensors.
pub(super) fn clamp(input: &Tensor, lo: f64, hi: f64) -> Result<Tensor, TensorError> {
    let data = map_real!(
        input.data(),
        // `max` and `min` drop a NaN operand: NaN is kept explicitly.
        |v| v
            .iter()
            .map(|&x| if x.is_nan() { x } else { x.max(lo as _).min(hi as _) })
            .collect(),
        else return Err(TensorError::Unsupported {
            op: "clamp",
            dtype: input.dtype(),
        })
    );
    Tensor::from_data(data, input.shape())
}

#[cfg(test)]
mod select_tests {
    use super::*;
    use crate::tensor::DType;

    #[test]
    fn compare_select_clamp_pow() {
        let a = Tensor::from_vec(vec![1.0f64, 5.0, 3.0], &[3]).unwrap();
        let b = Tensor::scalar(3.0f64);
        let m = compare(CmpOp::Ge, &a, &b).unwrap();
        assert_eq!(m.as_slice::<f64>().unwrap(), &[0.0, 1.0, 1.0]);
        let s = select(&m, &a, &Tensor::scalar(-1.0f64)).unwrap();
        assert_eq!(s.as_slice::<f64>().unwrap(), &[-1.0, 5.0, 3.0]);
        let c = clamp(&a, 2.0, 4.0).unwrap();
        assert_eq!(c.as_slice::<f64>().unwrap(), &[2.0, 4.0, 3.0]);
        let p = binary(BinaryOp::Pow, &a, &Tensor::scalar(2.0f64), false).unwrap();
        assert_eq!(p.as_slice::<f64>().unwrap(), &[1.0, 25.0, 9.0]);
        let z = Tensor::scalar(crate::c64::new(0.0, 1.0));
        let err = compare(CmpOp::Lt, &z, &z).unwrap_err();
        assert_eq!(err.to_string(), "lt is not defined for c64 tensors");
        let eq = compare(CmpOp::Eq, &z, &z).unwrap();
        assert_eq!(
            (eq.dtype(), eq.as_slice::<f64>().unwrap()),
            (DType::F64, &[1.0][..])
        );
        assert!(clamp(&z, 0.0, 1.0).is_err());
        let err = select(&z, &a, &a).unwrap_err();
        assert!(matches!(err, TensorError::DType { .. }), "{err}");
    }
}
