//! The elementwise vocabulary: binary ops, comparisons, select, and the
//! type and shape rules they are checked by.

use crate::layout::broadcast_shapes;
use crate::tensor::{DType, Tensor, TensorError};

/// A binary elementwise op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b`
    Div,
    /// The larger of `a` and `b`; NaN if either is (real types only).
    Maximum,
    /// The smaller of `a` and `b`; NaN if either is (real types only).
    Minimum,
    /// `a` to the power `b` (principal branch for complex types; a
    /// non-negative integer exponent for integer types, wrapping).
    Pow,
    /// `floor(a / b)` (real floats and integers; NumPy's `floor_divide`).
    FloorDiv,
    /// `a - b·floor(a / b)`: the remainder with the divisor's sign
    /// (real floats and integers; NumPy's `remainder`, Python's `%`).
    Rem,
    /// Logical (`bool`) or bitwise (integers) and.
    And,
    /// Logical (`bool`) or bitwise (integers) or.
    Or,
    /// Logical (`bool`) or bitwise (integers) exclusive or.
    Xor,
}

impl BinaryOp {
    /// Every binary op, for tests and tables.
    pub const ALL: [BinaryOp; 12] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Maximum,
        BinaryOp::Minimum,
        BinaryOp::Pow,
        BinaryOp::FloorDiv,
        BinaryOp::Rem,
        BinaryOp::And,
        BinaryOp::Or,
        BinaryOp::Xor,
    ];

    /// The op's name in errors and traces.
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Maximum => "maximum",
            BinaryOp::Minimum => "minimum",
            BinaryOp::Pow => "pow",
            BinaryOp::FloorDiv => "floor_div",
            BinaryOp::Rem => "rem",
            BinaryOp::And => "and",
            BinaryOp::Or => "or",
            BinaryOp::Xor => "xor",
        }
    }

    /// Whether the op is defined for `dtype`. Integer arithmetic wraps on
    /// overflow, as NumPy's does; `div` of integers is not defined (NumPy
    /// gives floats: cast first, or use `floor_div`); `bool` has the
    /// logical ops only.
    pub fn supports(self, dtype: DType) -> bool {
        match self {
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Pow => {
                dtype.is_field() || dtype.is_integer()
            }
            BinaryOp::Div => dtype.is_field(),
            BinaryOp::Maximum | BinaryOp::Minimum | BinaryOp::FloorDiv | BinaryOp::Rem => {
                dtype.is_float() || dtype.is_integer()
            }
            BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => {
                dtype.is_integer() || dtype == DType::Bool
            }
        }
    }
}

/// Checks a binary op on operands of these types and shapes; returns the
/// output shape.
///
/// # Errors
///
/// [`TensorError::MixedDTypes`], [`TensorError::Broadcast`],
/// [`TensorError::Unsupported`] (maximum/minimum of complex tensors).
pub fn check_binary_meta(
    op: BinaryOp,
    lhs_dtype: DType,
    lhs: &[usize],
    rhs_dtype: DType,
    rhs: &[usize],
) -> Result<Vec<usize>, TensorError> {
    if lhs_dtype != rhs_dtype {
        return Err(TensorError::MixedDTypes {
            op: op.name(),
            lhs: lhs_dtype,
            rhs: rhs_dtype,
        });
    }
    if !op.supports(lhs_dtype) {
        return Err(TensorError::Unsupported {
            op: op.name(),
            dtype: lhs_dtype,
        });
    }
    broadcast_shapes(op.name(), lhs, rhs)
}

/// A comparison direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `a == b`
    Eq,
    /// `a != b`
    Ne,
    /// `a < b` (types that are not complex; `false < true`)
    Lt,
    /// `a <= b` (types that are not complex)
    Le,
    /// `a > b` (types that are not complex)
    Gt,
    /// `a >= b` (types that are not complex)
    Ge,
}

impl CmpOp {
    /// Every comparison, for tests and tables.
    pub const ALL: [CmpOp; 6] = [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
    ];

    /// The op's name in errors and traces.
    pub fn name(self) -> &'static str {
        match self {
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
        }
    }
}

/// Checks a comparison; returns the shape of its `bool` result.
///
/// # Errors
///
/// [`TensorError::MixedDTypes`], [`TensorError::Broadcast`], and
/// [`TensorError::Unsupported`] for an ordering of complex tensors.
pub fn check_compare(
    op: CmpOp,
    lhs: DType,
    lhs_shape: &[usize],
    rhs: DType,
    rhs_shape: &[usize],
) -> Result<Vec<usize>, TensorError> {
    if lhs != rhs {
        return Err(TensorError::MixedDTypes {
            op: op.name(),
            lhs,
            rhs,
        });
    }
    if lhs.is_complex() && !matches!(op, CmpOp::Eq | CmpOp::Ne) {
        return Err(TensorError::Unsupported {
            op: op.name(),
            dtype: lhs,
        });
    }
    broadcast_shapes(op.name(), lhs_shape, rhs_shape)
}

/// Checks a select; returns the output's shape.
///
/// # Errors
///
/// [`TensorError::DType`] for a mask that is not `bool` (a comparison
/// gives one; a 0/1 mask of numbers casts to one),
/// [`TensorError::MixedDTypes`] for branches of different types,
/// [`TensorError::Broadcast`].
pub fn check_select(
    mask: DType,
    mask_shape: &[usize],
    a: DType,
    a_shape: &[usize],
    b: DType,
    b_shape: &[usize],
) -> Result<Vec<usize>, TensorError> {
    if mask != DType::Bool {
        return Err(TensorError::DType {
            expected: DType::Bool,
            got: mask,
        });
    }
    if a != b {
        return Err(TensorError::MixedDTypes {
            op: "select",
            lhs: a,
            rhs: b,
        });
    }
    let ab = broadcast_shapes("select", a_shape, b_shape)?;
    broadcast_shapes("select", mask_shape, &ab)
}

/// Refuses, before any element is computed (by either engine), what an
/// integer op cannot compute: a zero divisor of `floor_div` or `rem`, a negative exponent.
pub fn check_integer_operands(op: BinaryOp, rhs: &Tensor) -> Result<(), TensorError> {
    if !matches!(op, BinaryOp::FloorDiv | BinaryOp::Rem | BinaryOp::Pow) {
        return Ok(());
    }
    let Some(values) = rhs.data().integers() else {
        return Ok(());
    };
    let index = |flat: usize| crate::layout::unravel(flat, rhs.shape());
    match op {
        BinaryOp::Pow => match values.iter().position(|&e| e < 0) {
            Some(at) => Err(TensorError::Argument {
                op: "pow",
                argument: "exponent",
                value: format!("{} (element {:?})", values[at], index(at)),
                must: "non-negative for integer tensors (cast to a float type for negative powers)",
            }),
            None => Ok(()),
        },
        _ => match values.iter().position(|&d| d == 0) {
            Some(at) => Err(TensorError::DivisionByZero {
                op: op.name(),
                index: index(at),
                shape: rhs.shape().to_vec(),
            }),
            None => Ok(()),
        },
    }
}
