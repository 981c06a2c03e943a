//! The creation vocabulary: scalar arguments and the distributions of
//! seeded random tensors.

use crate::tensor::{c64, DType, TensorError};

/// A scalar argument of an op, converted to the op's element type, or
/// an element read back ([`Element::to_scalar`](crate::Element::to_scalar)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    /// A real value (the imaginary part is 0 for complex types).
    Real(f64),
    /// A complex value (refused for a type that is not complex unless its
    /// imaginary part is 0).
    Complex(c64),
    /// An integer, exact for the integer types (`i64` beyond 2^53 rounds
    /// for the float types).
    Int(i64),
    /// A truth value (0 or 1 for the number types).
    Bool(bool),
}

impl Scalar {
    /// The value's real and imaginary parts (`i64` widened as `as` does,
    /// `bool` as 0 or 1).
    pub fn parts(self) -> (f64, f64) {
        match self {
            Scalar::Real(x) => (x, 0.0),
            Scalar::Complex(z) => (z.re, z.im),
            Scalar::Int(i) => (i as f64, 0.0),
            Scalar::Bool(b) => (f64::from(u8::from(b)), 0.0),
        }
    }

    /// Checks that the value is one of element type `dtype`, exactly: an
    /// argument is never rounded, wrapped or truncated into its type.
    ///
    /// # Errors
    ///
    /// [`TensorError::Unsupported`] for a complex value with a nonzero
    /// imaginary part and a type that is not complex;
    /// [`TensorError::Argument`] for a value an integer type cannot hold
    /// (not a whole number, or out of its range) and for a `bool` of
    /// another value than 0 or 1.
    pub fn check(self, dtype: DType) -> Result<(), TensorError> {
        let (re, im) = self.parts();
        if !dtype.is_complex() && im != 0.0 {
            return Err(TensorError::Unsupported {
                op: "a complex scalar",
                dtype,
            });
        }
        let refuse = |must: &'static str| {
            Err(TensorError::Argument {
                op: "a scalar",
                argument: "value",
                value: self.to_string(),
                must,
            })
        };
        match dtype {
            DType::I32 | DType::I64 => {
                let (lo, hi) = if dtype == DType::I32 {
                    (i64::from(i32::MIN), i64::from(i32::MAX))
                } else {
                    (i64::MIN, i64::MAX)
                };
                let whole = match self {
                    Scalar::Int(i) => Some(i),
                    Scalar::Bool(b) => Some(i64::from(b)),
                    // 2^63 is the first float past i64: below it, a whole
                    // float converts exactly.
                    _ if re.fract() == 0.0 && re >= -(2f64.powi(63)) && re < 2f64.powi(63) => {
                        Some(re as i64)
                    }
                    _ => None,
                };
                match whole {
                    Some(i) if (lo..=hi).contains(&i) => Ok(()),
                    _ if dtype == DType::I32 => refuse("a whole number in i32's range"),
                    _ => refuse("a whole number in i64's range"),
                }
            }
            DType::Bool => match self {
                Scalar::Bool(_) => Ok(()),
                _ if re == 0.0 || re == 1.0 => Ok(()),
                _ => refuse("true, false, 0 or 1"),
            },
            _ => Ok(()),
        }
    }
}

impl std::fmt::Display for Scalar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scalar::Real(x) => write!(f, "{x}"),
            Scalar::Complex(z) => write!(f, "{}{:+}i", z.re, z.im),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Bool(b) => write!(f, "{b}"),
        }
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

impl From<i64> for Scalar {
    fn from(value: i64) -> Scalar {
        Scalar::Int(value)
    }
}

impl From<i32> for Scalar {
    fn from(value: i32) -> Scalar {
        Scalar::Int(value.into())
    }
}

impl From<bool> for Scalar {
    fn from(value: bool) -> Scalar {
        Scalar::Bool(value)
    }
}

/// A distribution for seeded random tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Distribution {
    /// Uniform on `[0, 1)` (each part, for complex types; float types).
    Uniform,
    /// Standard normal (each part, for complex types; float types).
    Normal,
    /// Integers uniform on `[low, high)` (integer types; `low < high`,
    /// both in the type's range).
    Integers {
        /// The smallest value drawn.
        low: i64,
        /// One past the largest value drawn.
        high: i64,
    },
    /// `true` with probability 1/2 (`bool`).
    Bits,
}

impl Distribution {
    /// Checks that the distribution draws elements of type `dtype`.
    ///
    /// # Errors
    ///
    /// [`TensorError::Unsupported`] for a distribution of another family
    /// of types; [`TensorError::Argument`] for an empty or out-of-range
    /// integer interval.
    pub fn check(self, dtype: DType) -> Result<(), TensorError> {
        let fits = match self {
            Distribution::Uniform | Distribution::Normal => dtype.is_field(),
            Distribution::Integers { .. } => dtype.is_integer(),
            Distribution::Bits => dtype == DType::Bool,
        };
        if !fits {
            return Err(TensorError::Unsupported {
                op: self.name(),
                dtype,
            });
        }
        if let Distribution::Integers { low, high } = self {
            if low >= high {
                return Err(TensorError::Argument {
                    op: "random",
                    argument: "low..high",
                    value: format!("{low}..{high}"),
                    must: "a nonempty interval (low < high)",
                });
            }
            if dtype == DType::I32
                && (i32::try_from(low).is_err() || i32::try_from(high - 1).is_err())
            {
                return Err(TensorError::Argument {
                    op: "random",
                    argument: "low..high",
                    value: format!("{low}..{high}"),
                    must: "within i32's range",
                });
            }
        }
        Ok(())
    }

    /// The distribution's name in errors.
    pub fn name(self) -> &'static str {
        match self {
            Distribution::Uniform => "uniform random",
            Distribution::Normal => "normal random",
            Distribution::Integers { .. } => "random integers",
            Distribution::Bits => "random bits",
        }
    }
}
