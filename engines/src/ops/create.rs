//! The creation vocabulary: scalar arguments and the distributions of
//! seeded random tensors.

use crate::tensor::{c64, DType, TensorError};

/// A scalar argument of an op, converted to the op's element type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    /// A real value (the imaginary part is 0 for complex types).
    Real(f64),
    /// A complex value (refused for real types unless its imaginary part is 0).
    Complex(c64),
}

impl Scalar {
    /// The value's real and imaginary parts.
    pub fn parts(self) -> (f64, f64) {
        match self {
            Scalar::Real(x) => (x, 0.0),
            Scalar::Complex(z) => (z.re, z.im),
        }
    }

    /// Checks that the value is one of element type `dtype`.
    ///
    /// # Errors
    ///
    /// [`TensorError::Unsupported`] for a complex value with a nonzero
    /// imaginary part and a real `dtype`.
    pub fn check(self, dtype: DType) -> Result<(), TensorError> {
        if !dtype.is_complex() && self.parts().1 != 0.0 {
            return Err(TensorError::Unsupported {
                op: "a complex scalar",
                dtype,
            });
        }
        Ok(())
    }
}

impl From<f64> for Scalar {
    fn from(value: f64) -> Scalar {
        Scalar::Real(value)
    }
}

impl From<c64> for Scalar {
    fn from(value: c64) -> Scalar {
        Scalar::Complex(value)
    }
}

/// A distribution for seeded random tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Distribution {
    /// Uniform on `[0, 1)` (each part, for complex types).
    Uniform,
    /// Standard normal (each part, for complex types).
    Normal,
}
