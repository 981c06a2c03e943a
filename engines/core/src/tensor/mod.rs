//! Tensors: dense, row-major, of one of seven element types.

mod dtype;
mod error;

use std::fmt;

pub use dtype::{DType, Data, Element, Field, Scalar};
pub use error::TensorError;
pub use faer::{c32, c64};

/// Elements a shape holds, or `None` on overflow. A shape with an extent 0
/// holds no element, whatever its other extents and their order: it is
/// never too large.
pub fn element_count(shape: &[usize]) -> Option<usize> {
    if shape.contains(&0) {
        return Some(0);
    }
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

/// A dense, row-major tensor of any rank (rank 0 is a scalar).
#[derive(Clone, PartialEq)]
pub struct Tensor {
    shape: Vec<usize>,
    data: Data,
}

impl Tensor {
    /// A tensor of `shape` holding `values` in row-major order.
    ///
    /// # Errors
    ///
    /// [`TensorError::ElementCount`] when `values` does not fit `shape`;
    /// [`TensorError::TooLarge`] when the shape's element count overflows.
    pub fn from_vec<T: Element>(values: Vec<T>, shape: &[usize]) -> Result<Tensor, TensorError> {
        Tensor::from_data(T::wrap(values), shape)
    }

    /// A tensor of `shape` holding `data` in row-major order.
    ///
    /// # Errors
    ///
    /// As [`Tensor::from_vec`].
    pub fn from_data(data: Data, shape: &[usize]) -> Result<Tensor, TensorError> {
        Tensor::from_parts(shape.to_vec(), data)
    }

    /// A tensor of `shape` holding `data`; [`Tensor::into_parts`] undone.
    ///
    /// # Errors
    ///
    /// As [`Tensor::from_vec`].
    pub fn from_parts(shape: Vec<usize>, data: Data) -> Result<Tensor, TensorError> {
        let Some(expected) = element_count(&shape) else {
            return Err(TensorError::TooLarge { shape });
        };
        if data.len() != expected {
            return Err(TensorError::ElementCount {
                shape,
                expected,
                got: data.len(),
            });
        }
        Ok(Tensor { shape, data })
    }

    /// A rank-0 tensor holding `value`.
    pub fn scalar<T: Element>(value: T) -> Tensor {
        Tensor {
            shape: Vec::new(),
            data: T::wrap(vec![value]),
        }
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether the tensor has no element (some axis is 0).
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The elements, typed.
    ///
    /// # Errors
    ///
    /// [`TensorError::DType`] if the tensor holds another type.
    pub fn as_slice<T: Element>(&self) -> Result<&[T], TensorError> {
        T::slice(&self.data).ok_or(TensorError::DType {
            expected: T::DTYPE,
            got: self.dtype(),
        })
    }

    /// The elements, untyped.
    pub fn data(&self) -> &Data {
        &self.data
    }

    /// Takes the elements out, typed.
    ///
    /// # Errors
    ///
    /// [`TensorError::DType`] if the tensor holds another type.
    pub fn into_vec<T: Element>(self) -> Result<Vec<T>, TensorError> {
        T::unwrap(self.data).map_err(|data| TensorError::DType {
            expected: T::DTYPE,
            got: data.dtype(),
        })
    }

    /// Takes the shape and elements apart.
    pub fn into_parts(self) -> (Vec<usize>, Data) {
        (self.shape, self.data)
    }

    /// A 2-D tensor as a faer matrix view.
    ///
    /// # Errors
    ///
    /// [`TensorError::DType`] for another element type;
    /// [`TensorError::MatmulShapes`] if the tensor is not 2-D.
    pub fn as_mat<T: Field>(&self) -> Result<faer::MatRef<'_, T>, TensorError> {
        let values = self.as_slice::<T>()?;
        match self.shape[..] {
            [rows, cols] => Ok(faer::MatRef::from_row_major_slice(values, rows, cols)),
            _ => Err(TensorError::MatmulShapes {
                lhs: self.shape.clone(),
                rhs: Vec::new(),
                reason: "a matrix view needs a 2-D tensor",
            }),
        }
    }

    /// A 2-D tensor copied from a faer matrix.
    pub fn from_mat<T: Field>(mat: faer::MatRef<'_, T>) -> Tensor {
        let (rows, cols) = (mat.nrows(), mat.ncols());
        let values = (0..rows)
            .flat_map(|i| (0..cols).map(move |j| mat[(i, j)]))
            .collect();
        Tensor {
            shape: vec![rows, cols],
            data: T::wrap(values),
        }
    }
}

/// Layouts other than row-major, in and out.
impl Tensor {
    /// A tensor of `shape` holding `values` in column-major (Fortran)
    /// order: the first index varies fastest. No copy when the orders
    /// agree (at most one axis longer than 1).
    ///
    /// # Errors
    ///
    /// As [`Tensor::from_vec`].
    pub fn from_vec_col_major<T: Element>(
        values: Vec<T>,
        shape: &[usize],
    ) -> Result<Tensor, TensorError> {
        let strides = col_major(shape).ok_or_else(|| TensorError::TooLarge {
            shape: shape.to_vec(),
        })?;
        let expected = element_count(shape).unwrap_or(usize::MAX);
        if values.len() != expected {
            return Err(TensorError::ElementCount {
                shape: shape.to_vec(),
                expected,
                got: values.len(),
            });
        }
        Tensor::from_strided(values, shape, &strides)
    }

    /// A tensor of `shape` whose element `[i, j, …]` is
    /// `values[i·strides[0] + j·strides[1] + …]` (strides in elements; a
    /// stride of 0 repeats, as a broadcast). No copy when the strides are
    /// row-major's over exactly `values`.
    ///
    /// # Errors
    ///
    /// [`TensorError::Strides`] for a stride per axis missing or an offset
    /// past the buffer; [`TensorError::TooLarge`] for a shape that
    /// overflows.
    pub fn from_strided<T: Element>(
        values: Vec<T>,
        shape: &[usize],
        strides: &[usize],
    ) -> Result<Tensor, TensorError> {
        let bad = |reason| TensorError::Strides {
            shape: shape.to_vec(),
            strides: strides.to_vec(),
            len: values.len(),
            reason,
        };
        let n = element_count(shape).ok_or_else(|| TensorError::TooLarge {
            shape: shape.to_vec(),
        })?;
        if strides.len() != shape.len() {
            return Err(bad("one stride per axis is needed"));
        }
        if n == 0 {
            return Tensor::from_vec(Vec::<T>::new(), shape);
        }
        let last = shape.iter().zip(strides).try_fold(0usize, |acc, (&d, &s)| {
            (d - 1).checked_mul(s)?.checked_add(acc)
        });
        match last {
            Some(last) if last < values.len() => {}
            _ => return Err(bad("an element's offset is past the buffer")),
        }
        if values.len() == n && is_row_major(shape, strides) {
            return Tensor::from_vec(values, shape);
        }
        let mut out = Vec::with_capacity(n);
        for_each_offset(shape, strides, |o| out.push(values[o]));
        Tensor::from_vec(out, shape)
    }

    /// The elements in column-major (Fortran) order.
    ///
    /// # Errors
    ///
    /// [`TensorError::DType`] if the tensor holds another type.
    pub fn to_vec_col_major<T: Element>(&self) -> Result<Vec<T>, TensorError> {
        let strides = col_major(&self.shape).expect("a tensor's shape fits");
        self.to_strided(&strides)
    }

    /// The elements written at `strides` (in elements) into a buffer just
    /// long enough for the last offset; positions no element reaches are
    /// zero. Strides that make two elements share an offset keep the later
    /// one in row-major order.
    ///
    /// # Errors
    ///
    /// [`TensorError::DType`]; [`TensorError::Strides`] for a stride per
    /// axis missing or an offset that overflows.
    pub fn to_strided<T: Element>(&self, strides: &[usize]) -> Result<Vec<T>, TensorError> {
        let values = self.as_slice::<T>()?;
        let bad = |reason| TensorError::Strides {
            shape: self.shape.clone(),
            strides: strides.to_vec(),
            len: values.len(),
            reason,
        };
        if strides.len() != self.shape.len() {
            return Err(bad("one stride per axis is needed"));
        }
        if values.is_empty() {
            return Ok(Vec::new());
        }
        if is_row_major(&self.shape, strides) {
            return Ok(values.to_vec());
        }
        let last = self
            .shape
            .iter()
            .zip(strides)
            .try_fold(0usize, |acc, (&d, &s)| {
                (d - 1).checked_mul(s)?.checked_add(acc)
            })
            .filter(|last| last.checked_add(1).is_some())
            .ok_or_else(|| bad("an element's offset overflows"))?;
        let mut out = vec![T::ZERO; last + 1];
        let mut next = values.iter();
        for_each_offset(&self.shape, strides, |o| {
            out[o] = *next.next().expect("one value per offset");
        });
        Ok(out)
    }
}

/// Column-major strides of `shape`, if its element count fits.
fn col_major(shape: &[usize]) -> Option<Vec<usize>> {
    let mut strides = Vec::with_capacity(shape.len());
    let mut step = 1usize;
    for &d in shape {
        strides.push(step);
        step = step.checked_mul(d.max(1))?;
    }
    Some(strides)
}

/// Whether `strides` walk `shape` in row-major order over a dense buffer
/// (axes of extent 1 may have any stride).
fn is_row_major(shape: &[usize], strides: &[usize]) -> bool {
    let mut step = 1usize;
    for (&d, &s) in shape.iter().zip(strides).rev() {
        if d != 1 && s != step {
            return false;
        }
        step = step.saturating_mul(d);
    }
    true
}

/// Calls `f` with the offset of every element of `shape` at `strides`, in
/// row-major order (the offsets were checked to fit).
fn for_each_offset(shape: &[usize], strides: &[usize], mut f: impl FnMut(usize)) {
    let rank = shape.len();
    let mut index = vec![0usize; rank];
    let mut offset = 0usize;
    loop {
        f(offset);
        let mut axis = rank;
        loop {
            if axis == 0 {
                return;
            }
            axis -= 1;
            // Never a step past an axis's end: an extent-1 axis may have
            // any stride, which no offset can add.
            if index[axis] + 1 < shape[axis] {
                index[axis] += 1;
                offset += strides[axis];
                break;
            }
            offset -= strides[axis] * index[axis];
            index[axis] = 0;
        }
    }
}

#[cfg(feature = "ndarray")]
impl Tensor {
    /// A tensor holding `array`'s elements (in row-major order, whatever
    /// the array's layout).
    pub fn from_ndarray<T: Element>(array: ndarray::ArrayD<T>) -> Tensor {
        let shape = array.shape().to_vec();
        let values: Vec<T> = array.iter().copied().collect();
        Tensor {
            shape,
            data: T::wrap(values),
        }
    }

    /// The tensor as an `ndarray` array.
    ///
    /// # Errors
    ///
    /// [`TensorError::DType`] if the tensor holds another type.
    pub fn to_ndarray<T: Element>(&self) -> Result<ndarray::ArrayD<T>, TensorError> {
        let values = self.as_slice::<T>()?.to_vec();
        Ok(
            ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&self.shape), values)
                .expect("a tensor's elements fit its shape"),
        )
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tensor<{}>{:?}", self.dtype(), self.shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn construction_checks_the_element_count() {
        let t = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
        assert_eq!(
            (t.shape(), t.dtype(), t.len()),
            (&[2, 3][..], DType::F64, 6)
        );
        assert_eq!(t.as_slice::<f64>().unwrap()[4], 5.0);
        let err = Tensor::from_vec(vec![1.0f32; 5], &[2, 3]).unwrap_err();
        assert_eq!(err.to_string(), "shape [2, 3] holds 6 elements, got 5");
        let err = t.as_slice::<c32>().unwrap_err();
        assert_eq!(err.to_string(), "expected a c32 tensor, got f64");
        let err = Tensor::from_vec(Vec::<f32>::new(), &[usize::MAX, 2]).unwrap_err();
        assert!(matches!(err, TensorError::TooLarge { .. }));
    }

    #[test]
    fn scalars_and_empty_tensors() {
        let s = Tensor::scalar(c64::new(1.0, -2.0));
        assert_eq!((s.shape(), s.len()), (&[][..], 1));
        let e = Tensor::from_vec(Vec::<f32>::new(), &[3, 0, 2]).unwrap();
        assert!(e.is_empty());
    }

    #[cfg(feature = "ndarray")]
    #[test]
    fn ndarray_round_trip() {
        let a = ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&[2, 3, 2]), |i| {
            (i[0] * 100 + i[1] * 10 + i[2]) as f64
        });
        let t = Tensor::from_ndarray(a.clone());
        assert_eq!(t.shape(), &[2, 3, 2]);
        assert_eq!(t.as_slice::<f64>().unwrap()[3], 11.0);
        assert_eq!(t.to_ndarray::<f64>().unwrap(), a);
        // A transposed (non-standard layout) array converts by its logical order.
        let tt = Tensor::from_ndarray(a.t().to_owned());
        assert_eq!(tt.shape(), &[2, 3, 2]);
        assert_eq!(tt.as_slice::<f64>().unwrap()[1], 100.0);
        assert!(t.to_ndarray::<f32>().is_err());
    }

    #[test]
    fn column_major_and_strided_layouts_in_and_out() {
        // [2, 3, 4]: element [i, j, k] is 100i + 10j + k.
        let (a, b, c) = (2, 3, 4);
        let value = |i: usize, j: usize, k: usize| (100 * i + 10 * j + k) as i64;
        let mut fortran = Vec::new();
        for k in 0..c {
            for j in 0..b {
                for i in 0..a {
                    fortran.push(value(i, j, k));
                }
            }
        }
        let t = Tensor::from_vec_col_major(fortran.clone(), &[a, b, c]).unwrap();
        let row: Vec<i64> = (0..a * b * c)
            .map(|n| value(n / (b * c), (n / c) % b, n % c))
            .collect();
        assert_eq!(t.as_slice::<i64>().unwrap(), &row[..]);
        assert_eq!(t.to_vec_col_major::<i64>().unwrap(), fortran);
        // A transposed view of a [4, 6] buffer with a row pitch of 8.
        let buffer: Vec<f64> = (0..32).map(f64::from).collect();
        let s = Tensor::from_strided(buffer.clone(), &[6, 4], &[1, 8]).unwrap();
        for i in 0..6 {
            for j in 0..4 {
                assert_eq!(s.as_slice::<f64>().unwrap()[i * 4 + j], buffer[i + 8 * j]);
            }
        }
        let back = s.to_strided::<f64>(&[1, 8]).unwrap();
        assert_eq!(back.len(), 30);
        for i in 0..6 {
            for j in 0..4 {
                assert_eq!(back[i + 8 * j], buffer[i + 8 * j]);
            }
        }
        assert_eq!(back[6], 0.0, "gaps are zero");
        // A stride of 0 repeats; row-major strides keep the buffer (no copy).
        let r = Tensor::from_strided(vec![true, false], &[3, 2], &[0, 1]).unwrap();
        assert_eq!(
            r.as_slice::<bool>().unwrap(),
            &[true, false, true, false, true, false]
        );
        let values = vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        let at = values.as_ptr();
        let same = Tensor::from_strided(values, &[2, 3], &[3, 1]).unwrap();
        assert_eq!(same.as_slice::<f32>().unwrap().as_ptr(), at);
        // Refusals name the strides.
        let err = Tensor::from_strided(vec![0i32; 5], &[2, 3], &[3, 1]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "strides [3, 1] of shape [2, 3] over 5 elements: an element's offset is past the buffer"
        );
        let err = Tensor::from_strided(vec![0i32; 6], &[2, 3], &[1]).unwrap_err();
        assert!(matches!(err, TensorError::Strides { .. }), "{err}");
        let err = Tensor::from_strided(vec![0i32; 6], &[2, 3], &[usize::MAX, 1]).unwrap_err();
        assert!(matches!(err, TensorError::Strides { .. }), "{err}");
        let err = Tensor::from_vec_col_major(vec![0i32; 5], &[2, 3]).unwrap_err();
        assert!(matches!(err, TensorError::ElementCount { .. }), "{err}");
        // An extent-1 axis may have any stride, however large.
        let odd = Tensor::from_strided(vec![1.0f64, 2.0], &[2, 1], &[1, usize::MAX]).unwrap();
        assert_eq!(odd.as_slice::<f64>().unwrap(), [1.0, 2.0]);
        let odd = Tensor::from_strided(vec![1.0f64, 2.0, 3.0], &[1, 3], &[usize::MAX, 1]).unwrap();
        assert_eq!(odd.as_slice::<f64>().unwrap(), [1.0, 2.0, 3.0]);
        let t = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 1, 2]).unwrap();
        let strides = [1, usize::MAX, 2];
        assert_eq!(t.to_strided::<f64>(&strides).unwrap(), [1.0, 3.0, 2.0, 4.0]);
        assert!(Tensor::from_strided(Vec::<f64>::new(), &[0, 3], &[7, 7])
            .unwrap()
            .is_empty());
        assert_eq!(Tensor::scalar(5i32).to_vec_col_major::<i32>().unwrap(), [5]);
    }

    #[test]
    fn faer_round_trip() {
        let t = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
        let m = t.as_mat::<f64>().unwrap();
        assert_eq!((m.nrows(), m.ncols(), m[(1, 0)]), (2, 3, 4.0));
        assert_eq!(Tensor::from_mat(m), t);
        assert!(Tensor::scalar(1.0f64).as_mat::<f64>().is_err());
    }
}
