//! Elementwise ops of a lane: binary and unary maps, comparisons, selection, casts.

use weft_core::{BinaryOp, DType, Scalar, TensorEngine, TensorOp, UnaryOp};

use crate::error::OpError;
use crate::handle::TensorHandle;
use crate::lane::Lane;
use weft_core::CmpOp;

impl<E: TensorEngine> Lane<E> {
    /// `lhs op rhs`, elementwise with NumPy broadcasting; see [`Lane::apply`].
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn binary(
        &self,
        op: BinaryOp,
        lhs: &TensorHandle,
        rhs: &TensorHandle,
    ) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Binary(op), &[lhs, rhs])
    }

    /// `op(x)` elementwise; see [`Lane::apply`].
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn unary(&self, op: UnaryOp, x: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Unary(op), &[x])
    }

    /// `lhs + rhs`, broadcast; see [`Lane::binary`].
    ///
    /// # Errors
    ///
    /// As [`Lane::binary`].
    pub fn add(&self, lhs: &TensorHandle, rhs: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.binary(BinaryOp::Add, lhs, rhs)
    }

    /// `lhs - rhs`, broadcast; see [`Lane::binary`].
    ///
    /// # Errors
    ///
    /// As [`Lane::binary`].
    pub fn sub(&self, lhs: &TensorHandle, rhs: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.binary(BinaryOp::Sub, lhs, rhs)
    }

    /// `lhs * rhs` elementwise, broadcast; see [`Lane::binary`].
    ///
    /// # Errors
    ///
    /// As [`Lane::binary`].
    pub fn mul(&self, lhs: &TensorHandle, rhs: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.binary(BinaryOp::Mul, lhs, rhs)
    }

    /// `lhs / rhs` elementwise, broadcast; see [`Lane::binary`].
    ///
    /// # Errors
    ///
    /// As [`Lane::binary`].
    pub fn div(&self, lhs: &TensorHandle, rhs: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.binary(BinaryOp::Div, lhs, rhs)
    }

    /// `floor(lhs / rhs)` elementwise, broadcast (real floats, integers);
    /// see [`Lane::binary`].
    ///
    /// # Errors
    ///
    /// As [`Lane::binary`]; an integer divisor with a zero fails the op on
    /// the actor with [`TensorError::DivisionByZero`](crate::error::TensorError).
    pub fn floor_div(
        &self,
        lhs: &TensorHandle,
        rhs: &TensorHandle,
    ) -> Result<TensorHandle, OpError> {
        self.binary(BinaryOp::FloorDiv, lhs, rhs)
    }

    /// `lhs mod rhs` with the divisor's sign (NumPy's `remainder`),
    /// broadcast; see [`Lane::floor_div`].
    ///
    /// # Errors
    ///
    /// As [`Lane::floor_div`].
    pub fn rem(&self, lhs: &TensorHandle, rhs: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.binary(BinaryOp::Rem, lhs, rhs)
    }

    /// Logical (`bool`) or bitwise (integers) `lhs & rhs`, broadcast.
    ///
    /// # Errors
    ///
    /// As [`Lane::binary`].
    pub fn and(&self, lhs: &TensorHandle, rhs: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.binary(BinaryOp::And, lhs, rhs)
    }

    /// Logical (`bool`) or bitwise (integers) `lhs | rhs`, broadcast.
    ///
    /// # Errors
    ///
    /// As [`Lane::binary`].
    pub fn or(&self, lhs: &TensorHandle, rhs: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.binary(BinaryOp::Or, lhs, rhs)
    }

    /// Logical (`bool`) or bitwise (integers) `lhs ^ rhs`, broadcast.
    ///
    /// # Errors
    ///
    /// As [`Lane::binary`].
    pub fn xor(&self, lhs: &TensorHandle, rhs: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.binary(BinaryOp::Xor, lhs, rhs)
    }

    /// Logical (`bool`) or bitwise (integers) not.
    ///
    /// # Errors
    ///
    /// As [`Lane::unary`].
    pub fn not(&self, x: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.unary(UnaryOp::Not, x)
    }

    /// `lhs op rhs` as a `bool` tensor; see [`Lane::apply`].
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: orderings of complex tensors are undefined.
    pub fn compare(
        &self,
        op: CmpOp,
        lhs: &TensorHandle,
        rhs: &TensorHandle,
    ) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Compare(op), &[lhs, rhs])
    }

    /// Where `mask` (a `bool` tensor) is `true` `a`, else `b`, all three
    /// broadcast.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: a mask of another type (cast a 0/1 mask to
    /// [`DType::Bool`] first).
    pub fn select(
        &self,
        mask: &TensorHandle,
        a: &TensorHandle,
        b: &TensorHandle,
    ) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Select, &[mask, a, b])
    }

    /// Every element limited to `[lo, hi]` (real floats; integers, to the
    /// whole numbers in `[lo, hi]`).
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn clamp(&self, x: &TensorHandle, lo: f64, hi: f64) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Clamp { lo, hi }, &[x])
    }

    /// Every element of `x` limited to between `lo`'s and `hi`'s, the
    /// three broadcast (NumPy's `clip` with tensor bounds):
    /// `minimum(maximum(x, lo), hi)`, so NaN in any gives NaN and `hi`
    /// wins where `lo > hi`.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: mixed types, shapes that do not broadcast,
    /// complex or `bool` tensors.
    pub fn clamp_between(
        &self,
        x: &TensorHandle,
        lo: &TensorHandle,
        hi: &TensorHandle,
    ) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::ClampBetween, &[x, lo, hi])
    }

    /// `x op value`, the scalar broadcast; see [`Lane::apply`].
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: a complex value for a real tensor, a value an
    /// integer or `bool` tensor's type cannot hold exactly.
    pub fn binary_scalar(
        &self,
        op: BinaryOp,
        x: &TensorHandle,
        value: Scalar,
    ) -> Result<TensorHandle, OpError> {
        self.apply(
            TensorOp::BinaryScalar {
                op,
                value,
                scalar_first: false,
            },
            &[x],
        )
    }

    /// `x ** exponent` elementwise, broadcast.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn pow(&self, x: &TensorHandle, exponent: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.binary(BinaryOp::Pow, x, exponent)
    }

    /// The elements converted to `dtype`, as Rust's `as` converts: floats
    /// to integers truncate toward zero and saturate (NaN gives 0),
    /// integers to narrower ones wrap, complex to real drops the imaginary
    /// part, numbers to `bool` are whether they are nonzero.
    ///
    /// # Errors
    ///
    /// The handle errors of [`Lane::download`].
    pub fn cast(&self, x: &TensorHandle, dtype: DType) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Cast(dtype), &[x])
    }
}
