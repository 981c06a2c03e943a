//! Element types: the seven [`DType`]s, their elements by type ([`Data`]),
//! the [`Element`] and [`Field`] traits a kernel is generic over, and
//! [`Scalar`], one value of any of them.

use std::fmt;

use super::{c32, c64, TensorError};

/// The element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit float.
    F32,
    /// 64-bit float.
    F64,
    /// Complex of two 32-bit floats.
    C32,
    /// Complex of two 64-bit floats.
    C64,
    /// 32-bit signed integer.
    I32,
    /// 64-bit signed integer.
    I64,
    /// `true` or `false` (one byte, 0 or 1).
    Bool,
}

impl DType {
    /// Every element type, floats first.
    pub const ALL: [DType; 7] = [
        DType::F32,
        DType::F64,
        DType::C32,
        DType::C64,
        DType::I32,
        DType::I64,
        DType::Bool,
    ];

    /// Whether the type is complex.
    pub fn is_complex(self) -> bool {
        matches!(self, DType::C32 | DType::C64)
    }

    /// Whether the type is a float or a complex: the types with field
    /// arithmetic, products and decompositions (see [`Field`]).
    pub fn is_field(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::C32 | DType::C64)
    }

    /// Whether the type is a real float.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    /// Whether the type is an integer.
    pub fn is_integer(self) -> bool {
        matches!(self, DType::I32 | DType::I64)
    }

    /// The real type of this type's parts: itself for a type that is not
    /// complex.
    pub fn real(self) -> DType {
        match self {
            DType::C32 => DType::F32,
            DType::C64 => DType::F64,
            other => other,
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::Bool => 1,
            DType::F32 | DType::I32 => 4,
            DType::F64 | DType::C32 | DType::I64 => 8,
            DType::C64 => 16,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::C32 => "c32",
            DType::C64 => "c64",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::Bool => "bool",
        })
    }
}

/// The elements of a tensor, by type.
#[derive(Clone, PartialEq)]
pub enum Data {
    /// `f32` elements.
    F32(Vec<f32>),
    /// `f64` elements.
    F64(Vec<f64>),
    /// `c32` elements.
    C32(Vec<c32>),
    /// `c64` elements.
    C64(Vec<c64>),
    /// `i32` elements.
    I32(Vec<i32>),
    /// `i64` elements.
    I64(Vec<i64>),
    /// `bool` elements.
    Bool(Vec<bool>),
}

impl Data {
    /// The element type.
    pub fn dtype(&self) -> DType {
        with_data!(self, |v| element_dtype(v))
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        with_data!(self, |v| v.len())
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements widened to `i64`, if they are integers.
    pub fn integers(&self) -> Option<Vec<i64>> {
        match self {
            Data::I32(v) => Some(v.iter().map(|&i| i64::from(i)).collect()),
            Data::I64(v) => Some(v.clone()),
            _ => None,
        }
    }

    /// `len` zeros (`false` for `Bool`) of element type `dtype`.
    pub fn zeros(dtype: DType, len: usize) -> Data {
        for_dtype!(dtype, |T| T::wrap(vec![T::ZERO; len]))
    }
}

/// The element type of a slice's elements.
fn element_dtype<T: Element>(_: &[T]) -> DType {
    T::DTYPE
}

impl fmt::Debug for Data {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Data::{}[{}]", self.dtype(), self.len())
    }
}

mod sealed {
    pub trait Sealed {}
}

/// An element type a tensor holds: `f32`, `f64`, [`c32`], [`c64`], `i32`,
/// `i64`, `bool`. Sealed: the seven are [`DType`]'s.
pub trait Element: sealed::Sealed + Copy + PartialEq + fmt::Debug + Send + Sync + 'static {
    /// The tag of this type.
    const DTYPE: DType;
    /// Zero (`false`).
    const ZERO: Self;
    /// One (`true`).
    const ONE: Self;

    /// The element as a scalar, exactly.
    fn to_scalar(self) -> Scalar;
    /// The scalar converted to this type as Rust's `as` converts: a float
    /// to an integer truncates toward zero and saturates (NaN gives 0);
    /// an integer to a narrower one wraps; a complex value to a type that
    /// is not complex drops its imaginary part; a number to `bool` is
    /// whether it is nonzero, and `bool` to a number 0 or 1.
    fn from_scalar(value: Scalar) -> Self;
    /// Wraps elements of this type.
    fn wrap(values: Vec<Self>) -> Data;
    /// The elements, if `data` holds this type.
    fn slice(data: &Data) -> Option<&[Self]>;
    /// The elements, if `data` holds this type.
    fn unwrap(data: Data) -> Result<Vec<Self>, Data>;
}

/// A float or complex element type: the types of field arithmetic,
/// transcendental functions, products and decompositions (through faer).
pub trait Field:
    Element
    + faer::traits::ComplexField
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
    + std::ops::AddAssign
    + std::ops::MulAssign
{
    /// The real type of its parts (itself for a real type).
    type Re: Field;

    /// The element with these real and imaginary parts; a real type
    /// drops the imaginary part. Narrower types round as `as` does.
    fn from_parts(re: f64, im: f64) -> Self;
    /// The real and imaginary parts (0 for a real type), widened to f64.
    fn to_parts(self) -> (f64, f64);
    /// The real part.
    fn re(self) -> Self::Re;
    /// `self` to the power `exponent` (principal branch for complex).
    fn pow(self, exponent: Self) -> Self;
}

macro_rules! storage {
    ($t:ty, $variant:ident, $zero:expr, $one:expr,
     |$s:ident| $to:expr, |$v:ident| $from:expr) => {
        impl sealed::Sealed for $t {}

        impl Element for $t {
            const DTYPE: DType = DType::$variant;
            const ZERO: Self = $zero;
            const ONE: Self = $one;

            fn to_scalar(self) -> Scalar {
                let $s = self;
                $to
            }

            fn from_scalar($v: Scalar) -> Self {
                $from
            }

            fn wrap(values: Vec<Self>) -> Data {
                Data::$variant(values)
            }

            fn slice(data: &Data) -> Option<&[Self]> {
                match data {
                    Data::$variant(v) => Some(v),
                    _ => None,
                }
            }

            fn unwrap(data: Data) -> Result<Vec<Self>, Data> {
                match data {
                    Data::$variant(v) => Ok(v),
                    other => Err(other),
                }
            }
        }
    };
}

/// `value` as an integer type, as `as` converts it.
macro_rules! integer_from {
    ($t:ty, $value:expr) => {
        match $value {
            Scalar::Int(i) => i as $t,
            Scalar::Bool(b) => <$t>::from(b),
            Scalar::Real(x) => x as $t,
            Scalar::Complex(z) => z.re as $t,
        }
    };
}

/// `value` as a real float type, as `as` converts it.
macro_rules! float_from {
    ($t:ty, $value:expr) => {
        match $value {
            Scalar::Int(i) => i as $t,
            Scalar::Bool(b) => <$t>::from(u8::from(b)),
            Scalar::Real(x) => x as $t,
            Scalar::Complex(z) => z.re as $t,
        }
    };
}

storage!(
    f32,
    F32,
    0.0,
    1.0,
    |x| Scalar::Real(f64::from(x)),
    |v| float_from!(f32, v)
);
storage!(f64, F64, 0.0, 1.0, |x| Scalar::Real(x), |v| float_from!(
    f64, v
));
storage!(
    c32,
    C32,
    c32::new(0.0, 0.0),
    c32::new(1.0, 0.0),
    |z| Scalar::Complex(c64::new(f64::from(z.re), f64::from(z.im))),
    |v| match v {
        Scalar::Complex(z) => c32::new(z.re as f32, z.im as f32),
        other => c32::new(float_from!(f32, other), 0.0),
    }
);
storage!(
    c64,
    C64,
    c64::new(0.0, 0.0),
    c64::new(1.0, 0.0),
    |z| Scalar::Complex(z),
    |v| match v {
        Scalar::Complex(z) => z,
        other => c64::new(float_from!(f64, other), 0.0),
    }
);
storage!(
    i32,
    I32,
    0,
    1,
    |i| Scalar::Int(i64::from(i)),
    |v| integer_from!(i32, v)
);
storage!(i64, I64, 0, 1, |i| Scalar::Int(i), |v| integer_from!(
    i64, v
));
storage!(bool, Bool, false, true, |b| Scalar::Bool(b), |v| match v {
    Scalar::Bool(b) => b,
    Scalar::Int(i) => i != 0,
    Scalar::Real(x) => x != 0.0,
    Scalar::Complex(z) => z.re != 0.0 || z.im != 0.0,
});

macro_rules! field {
    ($t:ty, $pow:ident, $re:ty, |$x:ident| $parts:expr, |$a:ident, $b:ident| $from:expr, |$y:ident| $real:expr) => {
        impl Field for $t {
            type Re = $re;

            fn from_parts($a: f64, $b: f64) -> Self {
                $from
            }

            fn to_parts(self) -> (f64, f64) {
                let $x = self;
                $parts
            }

            fn re(self) -> $re {
                let $y = self;
                $real
            }

            fn pow(self, exponent: Self) -> Self {
                self.$pow(exponent)
            }
        }
    };
}

field!(
    f32,
    powf,
    f32,
    |x| (f64::from(x), 0.0),
    |re, _im| re as f32,
    |x| x
);
field!(f64, powf, f64, |x| (x, 0.0), |re, _im| re, |x| x);
field!(
    c32,
    powc,
    f32,
    |z| (f64::from(z.re), f64::from(z.im)),
    |re, im| c32::new(re as f32, im as f32),
    |z| z.re
);
field!(
    c64,
    powc,
    f64,
    |z| (z.re, z.im),
    |re, im| c64::new(re, im),
    |z| z.re
);

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

    /// Whether the value is zero (either sign): a `beta` of zero means its
    /// operand is not read.
    pub fn is_zero(self) -> bool {
        self.parts() == (0.0, 0.0)
    }

    /// Checks that the value is one of element type `dtype`, exactly, as
    /// `argument` of `op` (the names its error gives): an argument is never
    /// rounded, wrapped or truncated into its type.
    ///
    /// # Errors
    ///
    /// [`TensorError::Argument`], naming the op, the argument and the
    /// value, for a complex value with a nonzero imaginary part and a type
    /// that is not complex, a value an integer type cannot hold (not a
    /// whole number, or out of its range) and a `bool` of another value
    /// than 0 or 1.
    pub fn check(
        self,
        op: &'static str,
        argument: &'static str,
        dtype: DType,
    ) -> Result<(), TensorError> {
        let (re, im) = self.parts();
        let refuse = |must: &'static str| {
            Err(TensorError::Argument {
                op,
                argument,
                value: self.to_string(),
                must,
            })
        };
        // An imaginary part only a complex type holds: for the others, the
        // value fits as its real part would, if there is no imaginary part.
        let real = im == 0.0;
        match dtype {
            DType::F32 if !real => return refuse("real, for f32 tensors"),
            DType::F64 if !real => return refuse("real, for f64 tensors"),
            _ => {}
        }
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
                    _ if real
                        && re.fract() == 0.0
                        && re >= -(2f64.powi(63))
                        && re < 2f64.powi(63) =>
                    {
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
                _ if real && (re == 0.0 || re == 1.0) => Ok(()),
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
