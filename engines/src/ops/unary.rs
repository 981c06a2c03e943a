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
}

impl UnaryOp {
    /// Every unary op, for tests and tables.
    pub const ALL: [UnaryOp; 13] = [
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
        }
    }

    /// The element type of the result for an input of `dtype`.
    ///
    /// # Errors
    ///
    /// None today; kept fallible for ops defined on some types only.
    pub fn output_dtype(self, dtype: DType) -> Result<DType, TensorError> {
        Ok(match (self, dtype) {
            (UnaryOp::Abs, DType::C32) => DType::F32,
            (UnaryOp::Abs, DType::C64) => DType::F64,
            (_, dtype) => dtype,
        })
    }
}
