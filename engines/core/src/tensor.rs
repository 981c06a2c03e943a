//! Tensors: dense, row-major, of one of seven element types.

use std::fmt;

pub use faer::{c32, c64};

use crate::ops::Scalar;

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

/// A bad tensor, shape or argument, named in the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TensorError {
    /// The number of elements does not fit the shape.
    #[error("shape {shape:?} holds {expected} elements, got {got}")]
    ElementCount {
        /// The shape.
        shape: Vec<usize>,
        /// Elements the shape holds.
        expected: usize,
        /// Elements given.
        got: usize,
    },
    /// A tensor has another element type than expected.
    #[error("expected a {expected} tensor, got {got}")]
    DType {
        /// Expected type.
        expected: DType,
        /// The tensor's type.
        got: DType,
    },
    /// Two operands of an op have different element types.
    #[error("{op}: operands have different element types {lhs} and {rhs}")]
    MixedDTypes {
        /// The op.
        op: &'static str,
        /// Left operand type.
        lhs: DType,
        /// Right operand type.
        rhs: DType,
    },
    /// Shapes that do not broadcast together.
    #[error("{op}: shapes {lhs:?} and {rhs:?} do not broadcast (axis {axis} from the right: {l} vs {r})")]
    Broadcast {
        /// The op.
        op: &'static str,
        /// Left shape.
        lhs: Vec<usize>,
        /// Right shape.
        rhs: Vec<usize>,
        /// The mismatching axis, counted from the last.
        axis: usize,
        /// Its extent on the left.
        l: usize,
        /// Its extent on the right.
        r: usize,
    },
    /// Shapes that do not multiply as matrices.
    #[error("matmul: shapes {lhs:?} and {rhs:?} do not multiply ({reason})")]
    MatmulShapes {
        /// Left shape.
        lhs: Vec<usize>,
        /// Right shape.
        rhs: Vec<usize>,
        /// Which rule they break.
        reason: &'static str,
    },
    /// The op is not defined for this element type.
    #[error("{op} is not defined for {dtype} tensors")]
    Unsupported {
        /// The op.
        op: &'static str,
        /// The element type.
        dtype: DType,
    },
    /// An axis argument that does not fit the tensor.
    #[error("{op}: axis {axis} of a rank-{rank} tensor is {reason}")]
    Axis {
        /// The op.
        op: &'static str,
        /// The axis given.
        axis: usize,
        /// The tensor's rank.
        rank: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A reduction with no identity over no elements.
    #[error("{op} over no elements (shape {shape:?}) is undefined")]
    EmptyReduction {
        /// The op.
        op: &'static str,
        /// The input's shape.
        shape: Vec<usize>,
    },
    /// A reshape to a shape with another element count.
    #[error("cannot reshape {from:?} ({} elements) to {to:?} ({} elements)",
        element_count(from).map_or("too many".to_owned(), |n| n.to_string()),
        element_count(to).map_or("too many".to_owned(), |n| n.to_string()))]
    Reshape {
        /// The input's shape.
        from: Vec<usize>,
        /// The shape asked for.
        to: Vec<usize>,
    },
    /// An axis order that is not a permutation of the axes.
    #[error("{perm:?} is not a permutation of the {rank} axes")]
    Permutation {
        /// The order given.
        perm: Vec<usize>,
        /// The tensor's rank.
        rank: usize,
    },
    /// An op that needs a matrix got another rank.
    #[error("{op} needs a 2-D tensor, got shape {shape:?}")]
    NotMatrix {
        /// The op.
        op: &'static str,
        /// The shape given.
        shape: Vec<usize>,
    },
    /// An op that needs a square matrix got another.
    #[error("{op} needs a square matrix, got shape {shape:?}")]
    NotSquare {
        /// The op.
        op: &'static str,
        /// The shape given.
        shape: Vec<usize>,
    },
    /// A matrix that does not admit the factorization.
    #[error("{op} failed: {reason}")]
    Factorization {
        /// The op.
        op: &'static str,
        /// Why, as the factorization reports it.
        reason: String,
    },
    /// A slice or pad that does not fit the tensor.
    #[error("{op} of shape {shape:?}: {reason}")]
    Slice {
        /// `slice` or `pad`.
        op: &'static str,
        /// The tensor's shape.
        shape: Vec<usize>,
        /// What is wrong.
        reason: String,
    },
    /// Inputs that cannot be concatenated.
    #[error("concatenate: {reason}")]
    Concat {
        /// What is wrong.
        reason: String,
    },
    /// An einsum specification that is malformed or does not fit its operands.
    #[error("einsum `{spec}`: {reason}")]
    Einsum {
        /// The specification.
        spec: String,
        /// What is wrong.
        reason: String,
    },
    /// A tensor given to an op to write its result into is not of the
    /// result's type and shape.
    #[error("{op} into a {into_dtype} tensor of shape {into_shape:?}: its result is {dtype} of shape {shape:?}")]
    Into {
        /// The op.
        op: &'static str,
        /// The result's element type.
        dtype: DType,
        /// The result's shape.
        shape: Vec<usize>,
        /// The given tensor's element type.
        into_dtype: DType,
        /// The given tensor's shape.
        into_shape: Vec<usize>,
    },
    /// An op with several outputs was submitted where one was expected.
    #[error("{op} has {outputs} outputs; submit it with apply_many")]
    Outputs {
        /// The op.
        op: &'static str,
        /// How many outputs it has.
        outputs: usize,
    },
    /// An op was given the wrong number of inputs.
    #[error("{op} takes {expected} input(s), got {got}")]
    Arity {
        /// The op.
        op: &'static str,
        /// Inputs it takes.
        expected: usize,
        /// Inputs given.
        got: usize,
    },
    /// A `dot_general` whose axes do not pair up, in the caller's terms.
    #[error("dot_general of {lhs:?} and {rhs:?}: {reason}")]
    DotGeneral {
        /// The left operand's shape.
        lhs: Vec<usize>,
        /// The right operand's shape.
        rhs: Vec<usize>,
        /// What does not pair up.
        reason: String,
    },
    /// A scalar argument that must be finite (or a number) is not.
    #[error("{op}: {argument} is {value}, which must be {must}")]
    Argument {
        /// The op.
        op: &'static str,
        /// Which argument.
        argument: &'static str,
        /// Its value, as written (`inf`, `NaN`).
        value: String,
        /// What it must be.
        must: &'static str,
    },
    /// An index outside its axis (`-extent..extent`): the op fails, and
    /// no output exists.
    #[error("{op}: index {index} (element {position:?} of the indices) is out of range for axis {axis} of extent {extent}")]
    Index {
        /// `gather` or `scatter`.
        op: &'static str,
        /// The index.
        index: i64,
        /// Its place in the index tensor.
        position: Vec<usize>,
        /// The axis indexed.
        axis: usize,
        /// The axis's extent.
        extent: usize,
    },
    /// A mask with another number of `true` elements than a compression
    /// asked for.
    #[error("compress: the mask has {got} true elements, the op was made for {expected}")]
    MaskCount {
        /// The length the op was made for.
        expected: usize,
        /// The mask's true elements.
        got: usize,
    },
    /// Strides that do not fit a shape and a buffer.
    #[error("strides {strides:?} of shape {shape:?} over {len} elements: {reason}")]
    Strides {
        /// The shape.
        shape: Vec<usize>,
        /// The strides given, in elements.
        strides: Vec<usize>,
        /// Elements of the buffer.
        len: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// An integer division or remainder by zero: the op fails, and no
    /// output exists.
    #[error("{op}: integer division by zero (element {index:?} of the divisor {shape:?} is 0)")]
    DivisionByZero {
        /// `floor_div` or `rem`.
        op: &'static str,
        /// The zero's index in the divisor.
        index: Vec<usize>,
        /// The divisor's shape.
        shape: Vec<usize>,
    },
    /// A shape too large to hold: its element or byte count overflows, or
    /// the allocator cannot provide its bytes.
    #[error("shape {shape:?} has more elements than fit in memory")]
    TooLarge {
        /// The shape.
        shape: Vec<usize>,
    },
}

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
            index[axis] += 1;
            offset += strides[axis];
            if index[axis] < shape[axis] {
                break;
            }
            offset -= strides[axis] * shape[axis];
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
