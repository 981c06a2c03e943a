//! Elementwise kernels: binary ops with NumPy broadcasting, comparisons,
//! select and clamp.

use rayon::prelude::*;

use super::buffer;
use super::parallel::PARALLEL_THRESHOLD;
use super::structural::broadcast_to;
use weft_core::layout::strides_in;
use weft_core::ops::{check_binary_meta, check_compare, check_select, BinaryOp, CmpOp, Scalar};
use weft_core::{element_count, DType, Data, Element, Field, Tensor, TensorError};

/// Output elements one parallel task computes.
const CHUNK: usize = 1 << 13;

/// Applies `op` to `lhs` and `rhs` with broadcasting; `parallel` spreads
/// the work over the current rayon pool (the caller installs the domain's).
///
/// # Errors
///
/// As [`check_binary_meta`]; for integers, [`TensorError::DivisionByZero`]
/// for a zero divisor of `floor_div` or `rem` and
/// [`TensorError::Argument`] for a negative exponent of `pow`, found
/// before any element is computed.
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
    macro_rules! operands {
        ($a:ident, $b:ident) => {
            &Operands {
                a: $a,
                a_shape,
                b: $b,
                b_shape,
                out,
                parallel,
            }
        };
    }
    let dtype = lhs.dtype();
    let data = if dtype.is_integer() {
        weft_core::ops::check_integer_operands(op, rhs)?;
        map_int2!(lhs.data(), rhs.data(), |a, b| integer(op, operands!(a, b)), else return Err(refused()))
    } else if dtype == DType::Bool {
        let (Data::Bool(a), Data::Bool(b)) = (lhs.data(), rhs.data()) else {
            return Err(refused());
        };
        Data::Bool(logical(op, operands!(a, b)))
    } else if matches!(
        op,
        BinaryOp::Maximum | BinaryOp::Minimum | BinaryOp::FloorDiv | BinaryOp::Rem
    ) {
        map_real2!(lhs.data(), rhs.data(), |a, b| ordered(op, operands!(a, b)), else return Err(refused()))
    } else {
        map_field2!(lhs.data(), rhs.data(), |a, b| field(op, operands!(a, b)), else return Err(refused()))
    };
    Tensor::from_parts(out_shape, data)
}

/// `x op value` (or `value op x` when `scalar_first`), the scalar made a
/// rank-0 tensor of `x`'s type and broadcast.
///
/// # Errors
///
/// As [`binary`], and as [`Scalar::check`].
pub(super) fn with_scalar(
    op: BinaryOp,
    x: &Tensor,
    value: Scalar,
    scalar_first: bool,
    parallel: bool,
) -> Result<Tensor, TensorError> {
    let s = super::create::full(x.dtype(), &[], value)?;
    if scalar_first {
        binary(op, &s, x, parallel)
    } else {
        binary(op, x, &s, parallel)
    }
}

/// `y ← x · alpha + y · beta` in `y`'s own buffer (`y` has the result's
/// shape; `x` broadcasts to it): each element as the fresh `axpby`
/// computes it, bit for bit.
///
/// # Errors
///
/// [`TensorError::MixedDTypes`], [`TensorError::Unsupported`] for a type
/// that is not a field, and as [`Scalar::check`] (the caller has checked
/// the operands against the op).
pub(super) fn axpby_in_place(
    y: Tensor,
    x: &Tensor,
    [alpha, beta]: [Scalar; 2],
) -> Result<Tensor, TensorError> {
    fn typed<T: Field>(
        y: &mut [T],
        x: &Tensor,
        out: &[usize],
        [alpha, beta]: [Scalar; 2],
    ) -> Result<(), TensorError> {
        let xs = x.as_slice::<T>()?;
        // β = 0 does not read `y` (its NaNs stay out), as BLAS.
        let reads_y = !beta.is_zero();
        let (alpha, beta) = (T::from_scalar(alpha), T::from_scalar(beta));
        let f = |u: T, v: T| {
            if reads_y {
                u * alpha + v * beta
            } else {
                u * alpha
            }
        };
        if xs.len() == y.len() {
            for (v, &u) in y.iter_mut().zip(xs) {
                *v = f(u, *v);
            }
        } else {
            let mut at = y.iter_mut();
            weft_core::ops::broadcast_view(x.shape(), out)?.for_each_offset(|o| {
                let v = at.next().expect("one output element per offset");
                *v = f(xs[o], *v);
            });
        }
        Ok(())
    }
    alpha.check("axpby", "alpha", y.dtype())?;
    beta.check("axpby", "beta", y.dtype())?;
    let refused = TensorError::Unsupported {
        op: "axpby",
        dtype: y.dtype(),
    };
    let (shape, mut data) = y.into_parts();
    with_field!(&mut data, |v| typed(v, x, &shape, [alpha, beta])?, else return Err(refused));
    Tensor::from_parts(shape, data)
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

/// The field ops, of floats and complexes. Each arm passes its own
/// closure, so the kernel is compiled (and vectorized) per op.
fn field<T: Field>(op: BinaryOp, x: &Operands<'_, T>) -> Vec<T> {
    match op {
        BinaryOp::Add => kernel(|a, b| a + b, x),
        BinaryOp::Sub => kernel(|a, b| a - b, x),
        BinaryOp::Mul => kernel(|a, b| a * b, x),
        BinaryOp::Div => kernel(|a, b| a / b, x),
        BinaryOp::Pow => kernel(|a: T, b: T| a.pow(b), x),
        _ => unreachable!("checked: dispatched to its own family"),
    }
}

/// The ops of an order: maximum, minimum, floor division and remainder
/// of the real floats.
fn ordered<T: Real>(op: BinaryOp, x: &Operands<'_, T>) -> Vec<T> {
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
        BinaryOp::FloorDiv => kernel(|a: T, b: T| floor_divmod(a, b).0, x),
        BinaryOp::Rem => kernel(|a: T, b: T| floor_divmod(a, b).1, x),
        _ => unreachable!("checked: dispatched to its own family"),
    }
}

/// `(floor(a / b), a - b·floor(a / b))` as NumPy's `divmod` computes them
/// (CPython's float algorithm): the remainder from `fmod`, moved to the
/// divisor's sign, and the quotient from it, so that the two agree. A
/// zero divisor gives `a / b` and NaN, as NumPy.
pub(crate) fn floor_divmod<T: Real>(a: T, b: T) -> (T, T) {
    if b == T::ZERO {
        return (a / b, T::nan());
    }
    let mut rem = a.fmod(b);
    let mut div = (a - rem) / b;
    if rem != T::ZERO {
        if (b < T::ZERO) != (rem < T::ZERO) {
            rem += b;
            div -= T::ONE;
        }
    } else {
        rem = T::ZERO.copysign(b);
    }
    let quotient = if div != T::ZERO {
        let floor = div.floor();
        if div - floor > T::half() {
            floor + T::ONE
        } else {
            floor
        }
    } else {
        T::ZERO.copysign(a / b)
    };
    (quotient, rem)
}

/// The real floats' own functions, for the ordered ops.
pub(crate) trait Real: Field + PartialOrd + std::ops::SubAssign {
    fn is_nan(self) -> bool;
    fn nan() -> Self;
    fn floor(self) -> Self;
    fn copysign(self, sign: Self) -> Self;
    /// The C `fmod`: the remainder with the dividend's sign.
    fn fmod(self, divisor: Self) -> Self;
    fn half() -> Self;
}

macro_rules! real {
    ($t:ty) => {
        impl Real for $t {
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            fn nan() -> Self {
                <$t>::NAN
            }
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
            fn copysign(self, sign: Self) -> Self {
                <$t>::copysign(self, sign)
            }
            fn fmod(self, divisor: Self) -> Self {
                self % divisor
            }
            fn half() -> Self {
                0.5
            }
        }
    };
}

real!(f32);
real!(f64);

/// Integer arithmetic, wrapping on overflow as NumPy's does.
pub(crate) trait Integer:
    Element
    + Ord
    + std::ops::BitAnd<Output = Self>
    + std::ops::BitOr<Output = Self>
    + std::ops::BitXor<Output = Self>
{
    fn wrapping_add(self, other: Self) -> Self;
    fn wrapping_sub(self, other: Self) -> Self;
    fn wrapping_mul(self, other: Self) -> Self;
    fn wrapping_div(self, other: Self) -> Self;
    fn wrapping_rem(self, other: Self) -> Self;
    fn widen(self) -> i64;
}

macro_rules! integer {
    ($t:ty) => {
        impl Integer for $t {
            fn wrapping_add(self, other: Self) -> Self {
                <$t>::wrapping_add(self, other)
            }
            fn wrapping_sub(self, other: Self) -> Self {
                <$t>::wrapping_sub(self, other)
            }
            fn wrapping_mul(self, other: Self) -> Self {
                <$t>::wrapping_mul(self, other)
            }
            fn wrapping_div(self, other: Self) -> Self {
                <$t>::wrapping_div(self, other)
            }
            fn wrapping_rem(self, other: Self) -> Self {
                <$t>::wrapping_rem(self, other)
            }
            fn widen(self) -> i64 {
                i64::from(self)
            }
        }
    };
}

integer!(i32);
integer!(i64);

/// `floor(a / b)` of integers, `b` nonzero (checked); `MIN / -1` wraps to
/// `MIN`, as NumPy's.
pub(crate) fn floor_div<T: Integer>(a: T, b: T) -> T {
    let q = a.wrapping_div(b);
    if a.wrapping_rem(b) != T::ZERO && ((a < T::ZERO) != (b < T::ZERO)) {
        q.wrapping_sub(T::ONE)
    } else {
        q
    }
}

/// `a - b·floor(a / b)` of integers, `b` nonzero (checked): the remainder
/// with the divisor's sign.
pub(crate) fn floor_rem<T: Integer>(a: T, b: T) -> T {
    let r = a.wrapping_rem(b);
    if r != T::ZERO && ((r < T::ZERO) != (b < T::ZERO)) {
        r.wrapping_add(b)
    } else {
        r
    }
}

/// `base^exponent` by squaring, wrapping; `exponent ≥ 0` (checked).
pub(crate) fn wrapping_pow<T: Integer>(base: T, exponent: T) -> T {
    let (mut result, mut base, mut e) = (T::ONE, base, exponent.widen() as u64);
    while e > 0 {
        if e & 1 == 1 {
            result = result.wrapping_mul(base);
        }
        base = base.wrapping_mul(base);
        e >>= 1;
    }
    result
}

/// The integer ops, divisors and exponents checked.
fn integer<T: Integer>(op: BinaryOp, x: &Operands<'_, T>) -> Vec<T> {
    match op {
        BinaryOp::Add => kernel(T::wrapping_add, x),
        BinaryOp::Sub => kernel(T::wrapping_sub, x),
        BinaryOp::Mul => kernel(T::wrapping_mul, x),
        BinaryOp::Maximum => kernel(Ord::max, x),
        BinaryOp::Minimum => kernel(Ord::min, x),
        BinaryOp::Pow => kernel(wrapping_pow, x),
        BinaryOp::FloorDiv => kernel(floor_div, x),
        BinaryOp::Rem => kernel(floor_rem, x),
        BinaryOp::And => kernel(|a, b| a & b, x),
        BinaryOp::Or => kernel(|a, b| a | b, x),
        BinaryOp::Xor => kernel(|a, b| a ^ b, x),
        BinaryOp::Div => unreachable!("checked: div is not of integers"),
    }
}

/// The logical ops of `bool`.
fn logical(op: BinaryOp, x: &Operands<'_, bool>) -> Vec<bool> {
    match op {
        BinaryOp::And => kernel(|a, b| a & b, x),
        BinaryOp::Or => kernel(|a, b| a | b, x),
        BinaryOp::Xor => kernel(|a, b| a ^ b, x),
        _ => unreachable!("checked: bool has the logical ops only"),
    }
}

fn kernel<T: Element, U: Element, F: Fn(T, T) -> U + Copy + Send + Sync>(
    f: F,
    x: &Operands<'_, T>,
) -> Vec<U> {
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
    let mut result = buffer::filled(n, U::ZERO);
    if n == 0 {
        return result;
    }
    let fill = |start: usize, chunk: &mut [U]| {
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
fn strided<T: Element, U>(
    f: impl Fn(T, T) -> U,
    x: &Operands<'_, T>,
    start: usize,
    chunk: &mut [U],
) {
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
    use weft_core::{c64, Tensor};

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

/// `lhs op rhs` elementwise with broadcasting, as a `bool` tensor.
///
/// # Errors
///
/// As [`check_compare`].
pub(super) fn compare(
    op: CmpOp,
    lhs: &Tensor,
    rhs: &Tensor,
    parallel: bool,
) -> Result<Tensor, TensorError> {
    let out = check_compare(op, lhs.dtype(), lhs.shape(), rhs.dtype(), rhs.shape())?;
    let (a_shape, b_shape) = (lhs.shape(), rhs.shape());
    /// Orderings are of types that are not complex (checked): of a complex
    /// tensor only `eq` and `ne` run, and they compare both parts.
    fn equal<T: Element>(op: CmpOp, x: &Operands<'_, T>) -> Vec<bool> {
        match op {
            CmpOp::Eq => kernel(|a: T, b: T| a == b, x),
            CmpOp::Ne => kernel(|a: T, b: T| a != b, x),
            _ => unreachable!("checked: complexes have no order"),
        }
    }
    fn test<T: Element + PartialOrd>(op: CmpOp, x: &Operands<'_, T>) -> Vec<bool> {
        match op {
            CmpOp::Eq | CmpOp::Ne => equal(op, x),
            CmpOp::Lt => kernel(|a: T, b: T| a < b, x),
            CmpOp::Le => kernel(|a: T, b: T| a <= b, x),
            CmpOp::Gt => kernel(|a: T, b: T| a > b, x),
            CmpOp::Ge => kernel(|a: T, b: T| a >= b, x),
        }
    }
    macro_rules! run {
        ($f:ident, $a:ident, $b:ident) => {
            $f(
                op,
                &Operands {
                    a: $a,
                    a_shape,
                    b: $b,
                    b_shape,
                    out: &out,
                    parallel,
                },
            )
        };
    }
    let bits = match (lhs.data(), rhs.data()) {
        (Data::F32(a), Data::F32(b)) => run!(test, a, b),
        (Data::F64(a), Data::F64(b)) => run!(test, a, b),
        (Data::I32(a), Data::I32(b)) => run!(test, a, b),
        (Data::I64(a), Data::I64(b)) => run!(test, a, b),
        (Data::Bool(a), Data::Bool(b)) => run!(test, a, b),
        (Data::C32(a), Data::C32(b)) => run!(equal, a, b),
        (Data::C64(a), Data::C64(b)) => run!(equal, a, b),
        _ => return Err(mixed(op.name(), lhs, rhs)),
    };
    Tensor::from_data(Data::Bool(bits), &out)
}

/// The error of operands whose element types differ.
fn mixed(op: &'static str, lhs: &Tensor, rhs: &Tensor) -> TensorError {
    TensorError::MixedDTypes {
        op,
        lhs: lhs.dtype(),
        rhs: rhs.dtype(),
    }
}

/// Where `mask` is `true`, `a`; elsewhere `b` (all three broadcast).
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
    let flags = m.as_slice::<bool>()?;
    let (x, y) = (broadcast_to(a, &out)?, broadcast_to(b, &out)?);
    fn pick<T: Copy>(flags: &[bool], a: &[T], b: &[T]) -> Vec<T> {
        flags
            .iter()
            .zip(a.iter().zip(b))
            .map(|(&f, (&x, &y))| if f { x } else { y })
            .collect()
    }
    let data = map_data2!(x.data(), y.data(), |x, y| pick(flags, x, y), else return Err(mixed("select", a, b)));
    Tensor::from_data(data, &out)
}

/// `minimum(maximum(x, lo), hi)`, the three broadcast: NaN in any gives
/// NaN, and `hi` wins where `lo > hi` (NumPy's `clip`).
///
/// # Errors
///
/// As [`binary`] of `maximum`: mixed types, shapes that do not broadcast,
/// complex and `bool` tensors.
pub(super) fn clamp_between(
    x: &Tensor,
    lo: &Tensor,
    hi: &Tensor,
    parallel: bool,
) -> Result<Tensor, TensorError> {
    let raised = binary(BinaryOp::Maximum, x, lo, parallel)?;
    let clamped = binary(BinaryOp::Minimum, &raised, hi, parallel);
    buffer::recycle(raised);
    clamped
}

/// Every element limited to `[lo, hi]` (real floats: NaN stays NaN, as in
/// NumPy and JAX; integers: to the whole numbers in `[lo, hi]`, so the
/// bounds round inward and saturate to the type's range).
///
/// # Errors
///
/// [`TensorError::Unsupported`] for complex and `bool` tensors.
pub(super) fn clamp(input: &Tensor, lo: f64, hi: f64) -> Result<Tensor, TensorError> {
    let refused = || TensorError::Unsupported {
        op: "clamp",
        dtype: input.dtype(),
    };
    let data = if input.dtype().is_integer() {
        fn limit<T: Integer>(v: &[T], lo: f64, hi: f64) -> Vec<T> {
            // `as` saturates: the bounds rounded inward, in the type's range.
            let lo = T::from_scalar(Scalar::Real(lo.ceil()));
            let hi = T::from_scalar(Scalar::Real(hi.floor()));
            // An empty interval (lo > hi) gives `hi`, as `max` then `min`
            // does for the floats.
            v.iter().map(|&x| x.max(lo).min(hi)).collect()
        }
        map_int!(input.data(), |v| limit(v, lo, hi), else return Err(refused()))
    } else {
        map_real!(
            input.data(),
            // `max` and `min` drop a NaN operand: NaN is kept explicitly.
            |v| v
                .iter()
                .map(|&x| if x.is_nan() { x } else { x.max(lo as _).min(hi as _) })
                .collect(),
            else return Err(refused())
        )
    };
    Tensor::from_data(data, input.shape())
}

#[cfg(test)]
mod select_tests {
    use super::*;
    use weft_core::DType;

    #[test]
    fn compare_select_clamp_pow() {
        let a = Tensor::from_vec(vec![1.0f64, 5.0, 3.0], &[3]).unwrap();
        let b = Tensor::scalar(3.0f64);
        let m = compare(CmpOp::Ge, &a, &b, false).unwrap();
        assert_eq!(m.as_slice::<bool>().unwrap(), &[false, true, true]);
        let s = select(&m, &a, &Tensor::scalar(-1.0f64)).unwrap();
        assert_eq!(s.as_slice::<f64>().unwrap(), &[-1.0, 5.0, 3.0]);
        let c = clamp(&a, 2.0, 4.0).unwrap();
        assert_eq!(c.as_slice::<f64>().unwrap(), &[2.0, 4.0, 3.0]);
        let p = binary(BinaryOp::Pow, &a, &Tensor::scalar(2.0f64), false).unwrap();
        assert_eq!(p.as_slice::<f64>().unwrap(), &[1.0, 25.0, 9.0]);
        let z = Tensor::scalar(weft_core::c64::new(0.0, 1.0));
        let err = compare(CmpOp::Lt, &z, &z, false).unwrap_err();
        assert_eq!(err.to_string(), "lt is not defined for c64 tensors");
        let eq = compare(CmpOp::Eq, &z, &z, false).unwrap();
        assert_eq!(
            (eq.dtype(), eq.as_slice::<bool>().unwrap()),
            (DType::Bool, &[true][..])
        );
        assert!(clamp(&z, 0.0, 1.0).is_err());
        let err = select(&z, &a, &a).unwrap_err();
        assert!(matches!(err, TensorError::DType { .. }), "{err}");
        // A 0/1 mask of numbers is a mask once cast.
        let ones = Tensor::from_vec(vec![1.0f64, 0.0, 1.0], &[3]).unwrap();
        let err = select(&ones, &a, &a).unwrap_err();
        assert_eq!(err.to_string(), "expected a bool tensor, got f64");
        let mask = super::super::structural::cast(&ones, DType::Bool);
        let s = select(&mask, &a, &Tensor::scalar(0.0f64)).unwrap();
        assert_eq!(s.as_slice::<f64>().unwrap(), &[1.0, 0.0, 3.0]);
    }
}
