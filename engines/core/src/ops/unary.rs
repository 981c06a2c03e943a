//! The unary vocabulary: elementwise functions of one tensor.

use crate::tensor::{DType, TensorError};

/// An elementwise unary op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `-x`
    Neg,
    /// `|x|`; of a complex tensor, a real one.
    Abs,
    /// `x / |x|`, and 0 at 0.
    Sign,
    /// The complex conjugate (the identity on real tensors).
    Conj,
    /// `e^x`
    Exp,
    /// The natural logarithm.
    Log,
    /// `e^x - 1`
    Expm1,
    /// `ln(1 + x)`
    Log1p,
    /// The square root (principal branch).
    Sqrt,
    /// `1 / sqrt(x)`
    Rsqrt,
    /// Sine.
    Sin,
    /// Cosine.
    Cos,
    /// Hyperbolic tangent.
    Tanh,
    /// Logical (`bool`) or bitwise (integers) not.
    Not,
}

impl UnaryOp {
    /// Every unary op, for tests and tables.
    pub const ALL: [UnaryOp; 14] = [
        UnaryOp::Neg,
        UnaryOp::Abs,
        UnaryOp::Sign,
        UnaryOp::Conj,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Expm1,
        UnaryOp::Log1p,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tanh,
        UnaryOp::Not,
    ];

    /// The op's name in errors and traces.
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Abs => "abs",
            UnaryOp::Sign => "sign",
            UnaryOp::Conj => "conj",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Expm1 => "expm1",
            UnaryOp::Log1p => "log1p",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Not => "not",
        }
    }

    /// Whether the op is defined for `dtype`: `neg`, `abs`, `sign` and
    /// `conj` for numbers (integers wrapping: `-i32::MIN` is `i32::MIN`,
    /// as in NumPy), `not` for integers and `bool`, the functions for the
    /// floats and complexes (cast an integer tensor first).
    pub fn supports(self, dtype: DType) -> bool {
        match self {
            UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Sign | UnaryOp::Conj => {
                dtype.is_field() || dtype.is_integer()
            }
            UnaryOp::Not => dtype.is_integer() || dtype == DType::Bool,
            _ => dtype.is_field(),
        }
    }

    /// The element type of the result for an input of `dtype`.
    ///
    /// # Errors
    ///
    /// [`TensorError::Unsupported`] where the op is not defined.
    pub fn output_dtype(self, dtype: DType) -> Result<DType, TensorError> {
        if !self.supports(dtype) {
            return Err(TensorError::Unsupported {
                op: self.name(),
                dtype,
            });
        }
        Ok(match self {
            UnaryOp::Abs => dtype.real(),
            _ => dtype,
        })
    }
}
