//! Elementwise ops: binary and unary maps, comparisons, selection, casts.

use super::vocabulary::Apply;
use weft_core::{BinaryOp, DType, Scalar, TensorOp, UnaryOp};

use crate::error::OpError;
use weft_core::CmpOp;

/// Elementwise ops: binary and unary maps, comparisons, selection, casts.
///
/// Provided for every [`Apply`]: a [`crate::Lane`] runs them, a
/// [`weft_core::Recorder`] records them.
pub trait ElementwiseOps: Apply {
    /// `lhs op rhs`, elementwise with NumPy broadcasting; see [`Apply::apply`].
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`].
    fn binary(
        &self,
        op: BinaryOp,
        lhs: &Self::Tensor,
        rhs: &Self::Tensor,
    ) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::Binary(op), &[lhs, rhs])
    }

    /// `op(x)` elementwise; see [`Apply::apply`].
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`].
    fn unary(&self, op: UnaryOp, x: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::Unary(op), &[x])
    }

    /// `lhs + rhs`, broadcast; see [`ElementwiseOps::binary`].
    ///
    /// # Errors
    ///
    /// As [`ElementwiseOps::binary`].
    fn add(&self, lhs: &Self::Tensor, rhs: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        self.binary(BinaryOp::Add, lhs, rhs)
    }

    /// `lhs - rhs`, broadcast; see [`ElementwiseOps::binary`].
    ///
    /// # Errors
    ///
    /// As [`ElementwiseOps::binary`].
    fn sub(&self, lhs: &Self::Tensor, rhs: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        self.binary(BinaryOp::Sub, lhs, rhs)
    }

    /// `lhs * rhs` elementwise, broadcast; see [`ElementwiseOps::binary`].
    ///
    /// # Errors
    ///
    /// As [`ElementwiseOps::binary`].
    fn mul(&self, lhs: &Self::Tensor, rhs: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        self.binary(BinaryOp::Mul, lhs, rhs)
    }

    /// `lhs / rhs` elementwise, broadcast; see [`ElementwiseOps::binary`].
    ///
    /// # Errors
    ///
    /// As [`ElementwiseOps::binary`].
    fn div(&self, lhs: &Self::Tensor, rhs: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        self.binary(BinaryOp::Div, lhs, rhs)
    }

    /// `floor(lhs / rhs)` elementwise, broadcast (real floats, integers);
    /// see [`ElementwiseOps::binary`].
    ///
    /// # Errors
    ///
    /// As [`ElementwiseOps::binary`]; an integer divisor with a zero fails the op on
    /// the actor with [`TensorError::DivisionByZero`](crate::error::TensorError).
    fn floor_div(&self, lhs: &Self::Tensor, rhs: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        self.binary(BinaryOp::FloorDiv, lhs, rhs)
    }

    /// `lhs mod rhs` with the divisor's sign (NumPy's `remainder`),
    /// broadcast; see [`ElementwiseOps::floor_div`].
    ///
    /// # Errors
    ///
    /// As [`ElementwiseOps::floor_div`].
    fn rem(&self, lhs: &Self::Tensor, rhs: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        self.binary(BinaryOp::Rem, lhs, rhs)
    }

    /// Logical (`bool`) or bitwise (integers) `lhs & rhs`, broadcast.
    ///
    /// # Errors
    ///
    /// As [`ElementwiseOps::binary`].
    fn and(&self, lhs: &Self::Tensor, rhs: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        self.binary(BinaryOp::And, lhs, rhs)
    }

    /// Logical (`bool`) or bitwise (integers) `lhs | rhs`, broadcast.
    ///
    /// # Errors
    ///
    /// As [`ElementwiseOps::binary`].
    fn or(&self, lhs: &Self::Tensor, rhs: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        self.binary(BinaryOp::Or, lhs, rhs)
    }

    /// Logical (`bool`) or bitwise (integers) `lhs ^ rhs`, broadcast.
    ///
    /// # Errors
    ///
    /// As [`ElementwiseOps::binary`].
    fn xor(&self, lhs: &Self::Tensor, rhs: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        self.binary(BinaryOp::Xor, lhs, rhs)
    }

    /// Logical (`bool`) or bitwise (integers) not.
    ///
    /// # Errors
    ///
    /// As [`ElementwiseOps::unary`].
    fn not(&self, x: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        self.unary(UnaryOp::Not, x)
    }

    /// `lhs op rhs` as a `bool` tensor; see [`Apply::apply`].
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: orderings of complex tensors are undefined.
    fn compare(
        &self,
        op: CmpOp,
        lhs: &Self::Tensor,
        rhs: &Self::Tensor,
    ) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::Compare(op), &[lhs, rhs])
    }

    /// Where `mask` (a `bool` tensor) is `true` `a`, else `b`, all three
    /// broadcast.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: a mask of another type (cast a 0/1 mask to
    /// [`DType::Bool`] first).
    fn select(
        &self,
        mask: &Self::Tensor,
        a: &Self::Tensor,
        b: &Self::Tensor,
    ) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::Select, &[mask, a, b])
    }

    /// Every element limited to `[lo, hi]` (real floats; integers, to the
    /// whole numbers in `[lo, hi]`).
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`].
    fn clamp(&self, x: &Self::Tensor, lo: f64, hi: f64) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::Clamp { lo, hi }, &[x])
    }

    /// Every element of `x` limited to between `lo`'s and `hi`'s, the
    /// three broadcast (NumPy's `clip` with tensor bounds):
    /// `minimum(maximum(x, lo), hi)`, so NaN in any gives NaN and `hi`
    /// wins where `lo > hi`.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: mixed types, shapes that do not broadcast,
    /// complex or `bool` tensors.
    fn clamp_between(
        &self,
        x: &Self::Tensor,
        lo: &Self::Tensor,
        hi: &Self::Tensor,
    ) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::ClampBetween, &[x, lo, hi])
    }

    /// `x op value`, the scalar broadcast; see [`Apply::apply`].
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: a complex value for a real tensor, a value an
    /// integer or `bool` tensor's type cannot hold exactly.
    fn binary_scalar(
        &self,
        op: BinaryOp,
        x: &Self::Tensor,
        value: Scalar,
    ) -> Result<Self::Tensor, OpError> {
        self.apply(
            TensorOp::BinaryScalar {
                op,
                value,
                scalar_first: false,
            },
            &[x],
        )
    }

    /// `value · x`: [`ElementwiseOps::binary_scalar`] with
    /// [`BinaryOp::Mul`]. The value is part of the op (and of a recorded
    /// program's plan): a factor that changes from run to run is a rank-0
    /// input instead (see `Lane::run_program_with`).
    ///
    /// # Errors
    ///
    /// As [`ElementwiseOps::binary_scalar`].
    fn scale(&self, x: &Self::Tensor, value: impl Into<Scalar>) -> Result<Self::Tensor, OpError> {
        self.binary_scalar(BinaryOp::Mul, x, value.into())
    }

    /// `x ** exponent` elementwise, broadcast.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`].
    fn pow(&self, x: &Self::Tensor, exponent: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        self.binary(BinaryOp::Pow, x, exponent)
    }

    /// The elements converted to `dtype`, as Rust's `as` converts: floats
    /// to integers truncate toward zero and saturate (NaN gives 0),
    /// integers to narrower ones wrap, complex to real drops the imaginary
    /// part, numbers to `bool` are whether they are nonzero.
    ///
    /// # Errors
    ///
    /// The handle errors of [`crate::Lane::download`].
    fn cast(&self, x: &Self::Tensor, dtype: DType) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::Cast(dtype), &[x])
    }
}

impl<T: Apply + ?Sized> ElementwiseOps for T {}
