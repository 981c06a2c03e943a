//! Elementwise ops of a lane: binary and unary maps, comparisons, selection, casts.

use weft_engines::{BinaryOp, DType, Scalar, TensorEngine, TensorOp, UnaryOp};

use crate::error::OpError;
use crate::handle::TensorHandle;
use crate::lane::Lane;
use crate::CmpOp;

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

    /// `lhs op rhs` as a 0/1 mask of the real type; see [`Lane::apply`].
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

    /// Where `mask` is nonzero `a`, else `b`, all three broadcast.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn select(
        &self,
        mask: &TensorHandle,
        a: &TensorHandle,
        b: &TensorHandle,
    ) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Select, &[mask, a, b])
    }

    /// Every element limited to `[lo, hi]` (real types).
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn clamp(&self, x: &TensorHandle, lo: f64, hi: f64) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Clamp { lo, hi }, &[x])
    }

    /// `x op value`, the scalar broadcast; see [`Lane::apply`].
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: a complex value for a real tensor.
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

    /// The elements converted to `dtype`.
    ///
    /// # Errors
    ///
    /// The handle errors of [`Lane::download`].
    pub fn cast(&self, x: &TensorHandle, dtype: DType) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Cast(dtype), &[x])
    }
}
