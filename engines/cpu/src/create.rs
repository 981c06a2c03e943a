//! Creation kernels: constants, identities, ranges, seeded random.

use super::buffer;
use weft_core::ops::Scalar;
use weft_core::{element_count, DType, Data, Element, Tensor, TensorError};

/// `len` copies of `value` (argument `value` of `op`) as element type
/// `dtype`, in a pooled buffer.
///
/// # Errors
///
/// As [`Scalar::check`].
pub(super) fn filled_data(
    op: &'static str,
    value: Scalar,
    dtype: DType,
    len: usize,
) -> Result<Data, TensorError> {
    value.check(op, "value", dtype)?;
    Ok(for_dtype!(dtype, |T| T::wrap(buffer::filled(
        len,
        T::from_scalar(value)
    ))))
}

/// A tensor of `shape` with every element `value`.
///
/// # Errors
///
/// [`TensorError::TooLarge`], or as [`Scalar::check`].
pub(super) fn full(dtype: DType, shape: &[usize], value: Scalar) -> Result<Tensor, TensorError> {
    let n = element_count(shape).ok_or_else(|| TensorError::TooLarge {
        shape: shape.to_vec(),
    })?;
    Tensor::from_data(filled_data("full", value, dtype, n)?, shape)
}

/// The `rows × cols` matrix with ones on the diagonal.
///
/// # Errors
///
/// [`TensorError::TooLarge`].
pub(super) fn eye(dtype: DType, rows: usize, cols: usize) -> Result<Tensor, TensorError> {
    let n = element_count(&[rows, cols]).ok_or(TensorError::TooLarge {
        shape: vec![rows, cols],
    })?;
    fn ones_on_diagonal<T: Element>(v: &mut [T], rows: usize, cols: usize) {
        for k in (0..rows.min(cols)).map(|i| i * cols + i) {
            v[k] = T::ONE;
        }
    }
    let mut data = filled_data("eye", Scalar::Real(0.0), dtype, n)?;
    with_data!(&mut data, |v| ones_on_diagonal(v, rows, cols));
    Tensor::from_data(data, &[rows, cols])
}

/// `[start, start + step, …]`, `len` elements, as a 1-D tensor.
///
/// # Errors
///
/// [`TensorError::Unsupported`] for complex and `bool` types; for an
/// integer type, [`TensorError::Argument`] for a start or step that is not
/// whole or a value out of the type's range.
pub(super) fn arange(
    dtype: DType,
    start: f64,
    step: f64,
    len: usize,
) -> Result<Tensor, TensorError> {
    let data = match dtype {
        DType::F32 => Data::F32((0..len).map(|i| (start + step * i as f64) as f32).collect()),
        DType::F64 => Data::F64((0..len).map(|i| start + step * i as f64).collect()),
        DType::I32 | DType::I64 => {
            // Exact: the range was checked to fit the type.
            let (first, by) = weft_core::ops::integer_range(dtype, start, step, len)?;
            let values = (0..len as i64).map(move |i| first + by * i);
            match dtype {
                DType::I32 => Data::I32(values.map(|v| v as i32).collect()),
                _ => Data::I64(values.collect()),
            }
        }
        _ => {
            return Err(TensorError::Unsupported {
                op: "arange",
                dtype,
            })
        }
    };
    Tensor::from_data(data, &[len])
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_core::{c32, c64};

    #[test]
    fn constants_identity_and_ranges() {
        let t = full(DType::C32, &[2, 2], Scalar::Complex(c64::new(1.0, -1.0))).unwrap();
        assert_eq!(t.as_slice::<c32>().unwrap(), &[c32::new(1.0, -1.0); 4]);
        let err = full(DType::F64, &[1], Scalar::Complex(c64::new(0.0, 1.0))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "full: value is 0+1i, which must be real, for f64 tensors"
        );
        let i = eye(DType::F64, 2, 3).unwrap();
        assert_eq!(
            i.as_slice::<f64>().unwrap(),
            &[1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
        );
        let r = arange(DType::F32, 1.0, 0.5, 4).unwrap();
        assert_eq!(r.as_slice::<f32>().unwrap(), &[1.0, 1.5, 2.0, 2.5]);
        assert!(arange(DType::C64, 0.0, 1.0, 2).is_err());
        assert_eq!(
            full(DType::F32, &[0, 3], Scalar::Real(2.0)).unwrap().len(),
            0
        );
    }
}
