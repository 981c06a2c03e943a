//! The product vocabulary: the shape rule of batched matrix products, and
//! how an accumulating product reads its operands.

use crate::layout::broadcast_shapes;
use crate::tensor::{element_count, TensorError};

/// The output shape of `lhs @ rhs`: both at least 2-D, `lhs[..., m, k]`
/// times `rhs[..., k, n]` gives `[batch..., m, n]` with the batch axes
/// broadcast.
///
/// # Errors
///
/// [`TensorError::MatmulShapes`] naming both shapes; [`TensorError::Broadcast`]
/// for batch axes that do not broadcast.
pub fn matmul_shape(lhs: &[usize], rhs: &[usize]) -> Result<Vec<usize>, TensorError> {
    let bad = |reason| TensorError::MatmulShapes {
        lhs: lhs.to_vec(),
        rhs: rhs.to_vec(),
        reason,
    };
    if lhs.len() < 2 || rhs.len() < 2 {
        return Err(bad("both operands need at least 2 axes"));
    }
    let (lb, lm) = lhs.split_at(lhs.len() - 2);
    let (rb, rm) = rhs.split_at(rhs.len() - 2);
    if lm[1] != rm[0] {
        return Err(bad("the inner extents differ"));
    }
    let mut out = broadcast_shapes("matmul", lb, rb)?;
    out.extend([lm[0], rm[1]]);
    if element_count(&out).is_none() {
        return Err(TensorError::TooLarge { shape: out });
    }
    Ok(out)
}

/// How an accumulating product reads an operand: as it is, transposed
/// (its last two axes swapped), conjugated, or both (the adjoint).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MatOp {
    /// Swap the last two axes.
    pub transpose: bool,
    /// Conjugate each element (nothing for real types).
    pub conjugate: bool,
}

impl MatOp {
    /// The operand as it is.
    pub const NONE: MatOp = MatOp {
        transpose: false,
        conjugate: false,
    };
    /// The operand transposed.
    pub const T: MatOp = MatOp {
        transpose: true,
        conjugate: false,
    };
    /// The operand's adjoint (conjugate transpose).
    pub const H: MatOp = MatOp {
        transpose: true,
        conjugate: true,
    };

    /// The shape the product sees: `shape` with its last two axes
    /// swapped when transposed.
    pub fn shape(self, shape: &[usize]) -> Vec<usize> {
        let mut s = shape.to_vec();
        let r = s.len();
        if self.transpose && r >= 2 {
            s.swap(r - 2, r - 1);
        }
        s
    }
}
