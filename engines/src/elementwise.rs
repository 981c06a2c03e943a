//! Elementwise binary ops with NumPy broadcasting.

use rayon::prelude::*;

use crate::buffer;
use crate::tensor::{element_count, DType, Data, Element, Tensor, TensorError};

/// Below this many output elements an elementwise op runs inline on the
/// actor thread; above it, in parallel over the domain's pool.
pub const PARALLEL_THRESHOLD: usize = 1 << 15;

/// Output elements one parallel task computes.
const CHUNK: usize = 1 << 13;

/// A binary elementwise op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b`
    Div,
    /// The larger of `a` and `b`; NaN if either is (real types only).
    Maximum,
    /// The smaller of `a` and `b`; NaN if either is (real types only).
    Minimum,
    /// `a` to the power `b` (principal branch for complex types).
    Pow,
}

impl BinaryOp {
    /// The op's name in errors and traces.
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Maximum => "maximum",
            BinaryOp::Minimum => "minimum",
            BinaryOp::Pow => "pow",
        }
    }

    /// Whether the op is defined for `dtype`.
    pub fn supports(self, dtype: DType) -> bool {
        !matches!(self, BinaryOp::Maximum | BinaryOp::Minimum) || !dtype.is_complex()
    }
}

/// The shape `lhs` and `rhs` broadcast to, by NumPy's rules: align on the
/// last axis; each pair of extents is equal or one of them is 1.
///
/// # Errors
///
/// [`TensorError::Broadcast`] naming both shapes and the first axis (from
/// the right) that does not match.
pub fn broadcast_shapes(
    op: &'static str,
    lhs: &[usize],
    rhs: &[usize],
) -> Result<Vec<usize>, TensorError> {
    let rank = lhs.len().max(rhs.len());
    let extent = |shape: &[usize], from_right: usize| {
        shape
            .len()
            .checked_sub(from_right + 1)
            .map_or(1, |i| shape[i])
    };
    let mut out = vec![0; rank];
    for axis in 0..rank {
        let (l, r) = (extent(lhs, axis), extent(rhs, axis));
        out[rank - 1 - axis] = match (l, r) {
            _ if l == r => l,
            (1, r) => r,
            (l, 1) => l,
            _ => {
                return Err(TensorError::Broadcast {
                    op,
                    lhs: lhs.to_vec(),
                    rhs: rhs.to_vec(),
                    axis,
                    l,
                    r,
                })
            }
        };
    }
    if element_count(&out).is_none() {
        return Err(TensorError::TooLarge { shape: out });
    }
    Ok(out)
}

/// Row-major strides of `shape` as seen from an output of shape `out`:
/// 0 on broadcast axes.
fn strides_in(shape: &[usize], out: &[usize]) -> Vec<usize> {
    let lead = out.len() - shape.len();
    let mut strides = vec![0; out.len()];
    let mut step = 1;
    for i in (0..shape.len()).rev() {
        if shape[i] != 1 {
            strides[lead + i] = step;
        }
        step *= shape[i];
    }
    strides
}

/// Applies `op` to `lhs` and `rhs` with broadcasting; `parallel` spreads
/// the work over the current rayon pool (the caller installs the domain's).
///
/// # Errors
///
/// [`TensorError::MixedDTypes`], [`TensorError::Broadcast`],
/// [`TensorError::Unsupported`] (maximum/minimum of complex tensors).
pub fn binary(
    op: BinaryOp,
    lhs: &Tensor,
    rhs: &Tensor,
    parallel: bool,
) -> Result<Tensor, TensorError> {
    let out_shape = check_binary(op, lhs, rhs)?;
    let (a_shape, b_shape, out) = (lhs.shape(), rhs.shape(), &out_shape[..]);
    let data = match (lhs.data(), rhs.data()) {
        (Data::F32(a), Data::F32(b)) => Data::F32(real(
            op,
            &Operands {
                a,
                a_shape,
                b,
                b_shape,
                out,
                parallel,
            },
        )),
        (Data::F64(a), Data::F64(b)) => Data::F64(real(
            op,
            &Operands {
                a,
                a_shape,
                b,
                b_shape,
                out,
                parallel,
            },
        )),
        (Data::C32(a), Data::C32(b)) => Data::C32(field(
            op,
            &Operands {
                a,
                a_shape,
                b,
                b_shape,
                out,
                parallel,
            },
        )),
        (Data::C64(a), Data::C64(b)) => Data::C64(field(
            op,
            &Operands {
                a,
                a_shape,
                b,
                b_shape,
                out,
                parallel,
            },
        )),
        _ => unreachable!("checked: both operands have one element type"),
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

/// Checks operand types and shapes; returns the output shape.
///
/// # Errors
///
/// As [`binary`].
pub fn check_binary(op: BinaryOp, lhs: &Tensor, rhs: &Tensor) -> Result<Vec<usize>, TensorError> {
    check_binary_meta(op, lhs.dtype(), lhs.shape(), rhs.dtype(), rhs.shape())
}

/// [`check_binary`] on types and shapes alone, for checking at submission.
///
/// # Errors
///
/// As [`binary`].
pub fn check_binary_meta(
    op: BinaryOp,
    lhs_dtype: DType,
    lhs: &[usize],
    rhs_dtype: DType,
    rhs: &[usize],
) -> Result<Vec<usize>, TensorError> {
    if lhs_dtype != rhs_dtype {
        return Err(TensorError::MixedDTypes {
            op: op.name(),
            lhs: lhs_dtype,
            rhs: rhs_dtype,
        });
    }
    if !op.supports(lhs_dtype) {
        return Err(TensorError::Unsupported {
            op: op.name(),
            dtype: lhs_dtype,
        });
    }
    broadcast_shapes(op.name(), lhs, rhs)
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
        BinaryOp::Maximum | BinaryOp::Minimum => unreachable!("checked: real types only"),
    }
}

fn real<T: Element + PartialOrd + num_nan::IsNan>(op: BinaryOp, x: &Operands<'_, T>) -> Vec<T> {
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
        _ => field(op, x),
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
            oa += sa[axis];
            ob += sb[axis];
            if index[axis] < out[axis] {
                break;
            }
            oa -= sa[axis] * out[axis];
            ob -= sb[axis] * out[axis];
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

/// A comparison direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `a == b`
    Eq,
    /// `a != b`
    Ne,
    /// `a < b` (real types)
    Lt,
    /// `a <= b` (real types)
    Le,
    /// `a > b` (real types)
    Gt,
    /// `a >= b` (real types)
    Ge,
}

impl CmpOp {
    /// The op's name in errors and traces.
    pub fn name(self) -> &'static str {
        match self {
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
        }
    }
}

/// The real type masks of `dtype` tensors use (1 for true, 0 for false).
pub fn mask_dtype(dtype: DType) -> DType {
    match dtype {
        DType::C32 | DType::F32 => DType::F32,
        DType::C64 | DType::F64 => DType::F64,
    }
}

/// Checks a comparison; returns the mask's shape.
///
/// # Errors
///
/// [`TensorError::MixedDTypes`], [`TensorError::Broadcast`], and
/// [`TensorError::Unsupported`] for an ordering of complex tensors.
pub fn check_compare(
    op: CmpOp,
    lhs: DType,
    lhs_shape: &[usize],
    rhs: DType,
    rhs_shape: &[usize],
) -> Result<Vec<usize>, TensorError> {
    if lhs != rhs {
        return Err(TensorError::MixedDTypes {
            op: op.name(),
            lhs,
            rhs,
        });
    }
    if lhs.is_complex() && !matches!(op, CmpOp::Eq | CmpOp::Ne) {
        return Err(TensorError::Unsupported {
            op: op.name(),
            dtype: lhs,
        });
    }
    broadcast_shapes(op.name(), lhs_shape, rhs_shape)
}

/// `lhs op rhs` elementwise with broadcasting, as a 0/1 mask.
///
/// # Errors
///
/// As [`check_compare`].
pub fn compare(op: CmpOp, lhs: &Tensor, rhs: &Tensor) -> Result<Tensor, TensorError> {
    let out = check_compare(op, lhs.dtype(), lhs.shape(), rhs.dtype(), rhs.shape())?;
    let (a, b) = (
        crate::structural::broadcast_to(lhs, &out)?,
        crate::structural::broadcast_to(rhs, &out)?,
    );
    fn test<T: PartialEq + PartialOrd + Copy>(op: CmpOp, a: &[T], b: &[T]) -> Vec<bool> {
        a.iter()
            .zip(b)
            .map(|(x, y)| match op {
                CmpOp::Eq => x == y,
                CmpOp::Ne => x != y,
                CmpOp::Lt => x < y,
                CmpOp::Le => x <= y,
                CmpOp::Gt => x > y,
                CmpOp::Ge => x >= y,
            })
            .collect()
    }
    fn eq_only<T: PartialEq + Copy>(op: CmpOp, a: &[T], b: &[T]) -> Vec<bool> {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x == y) == (op == CmpOp::Eq))
            .collect()
    }
    let bits = match (a.data(), b.data()) {
        (Data::F32(x), Data::F32(y)) => test(op, x, y),
        (Data::F64(x), Data::F64(y)) => test(op, x, y),
        (Data::C32(x), Data::C32(y)) => eq_only(op, x, y),
        (Data::C64(x), Data::C64(y)) => eq_only(op, x, y),
        _ => unreachable!("checked dtypes"),
    };
    let data = match mask_dtype(lhs.dtype()) {
        DType::F32 => Data::F32(bits.iter().map(|&t| f32::from(u8::from(t))).collect()),
        _ => Data::F64(bits.iter().map(|&t| f64::from(u8::from(t))).collect()),
    };
    Tensor::from_data(data, &out)
}

/// Checks a select; returns the output's shape.
///
/// # Errors
///
/// [`TensorError::DType`] for a complex mask, [`TensorError::MixedDTypes`]
/// for branches of different types, [`TensorError::Broadcast`].
pub fn check_select(
    mask: DType,
    mask_shape: &[usize],
    a: DType,
    a_shape: &[usize],
    b: DType,
    b_shape: &[usize],
) -> Result<Vec<usize>, TensorError> {
    if mask.is_complex() {
        return Err(TensorError::DType {
            expected: mask_dtype(mask),
            got: mask,
        });
    }
    if a != b {
        return Err(TensorError::MixedDTypes {
            op: "select",
            lhs: a,
            rhs: b,
        });
    }
    let ab = broadcast_shapes("select", a_shape, b_shape)?;
    broadcast_shapes("select", mask_shape, &ab)
}

/// Where `mask` is nonzero, `a`; elsewhere `b` (all three broadcast).
///
/// # Errors
///
/// As [`check_select`].
pub fn select(mask: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor, TensorError> {
    let out = check_select(
        mask.dtype(),
        mask.shape(),
        a.dtype(),
        a.shape(),
        b.dtype(),
        b.shape(),
    )?;
    let m = crate::structural::broadcast_to(mask, &out)?;
    let flags: Vec<bool> = match m.data() {
        Data::F32(v) => v.iter().map(|&x| x != 0.0).collect(),
        Data::F64(v) => v.iter().map(|&x| x != 0.0).collect(),
        _ => unreachable!("checked: real mask"),
    };
    let (a, b) = (
        crate::structural::broadcast_to(a, &out)?,
        crate::structural::broadcast_to(b, &out)?,
    );
    fn pick<T: Copy>(flags: &[bool], a: &[T], b: &[T]) -> Vec<T> {
        flags
            .iter()
            .zip(a.iter().zip(b))
            .map(|(&f, (&x, &y))| if f { x } else { y })
            .collect()
    }
    let data = match (a.data(), b.data()) {
        (Data::F32(x), Data::F32(y)) => Data::F32(pick(&flags, x, y)),
        (Data::F64(x), Data::F64(y)) => Data::F64(pick(&flags, x, y)),
        (Data::C32(x), Data::C32(y)) => Data::C32(pick(&flags, x, y)),
        (Data::C64(x), Data::C64(y)) => Data::C64(pick(&flags, x, y)),
        _ => unreachable!("checked dtypes"),
    };
    Tensor::from_data(data, &out)
}

/// Every element limited to `[lo, hi]` (real types; NaN stays NaN).
///
/// # Errors
///
/// [`TensorError::Unsupported`] for complex tensors.
pub fn clamp(input: &Tensor, lo: f64, hi: f64) -> Result<Tensor, TensorError> {
    let data = match input.data() {
        Data::F32(v) => Data::F32(v.iter().map(|&x| x.max(lo as f32).min(hi as f32)).collect()),
        Data::F64(v) => Data::F64(v.iter().map(|&x| x.max(lo).min(hi)).collect()),
        _ => {
            return Err(TensorError::Unsupported {
                op: "clamp",
                dtype: input.dtype(),
            })
        }
    };
    Tensor::from_data(data, input.shape())
}

#[cfg(test)]
mod select_tests {
    use super::*;

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
