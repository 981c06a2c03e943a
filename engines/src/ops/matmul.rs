//! The product vocabulary: the shape rule of batched matrix products.

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
