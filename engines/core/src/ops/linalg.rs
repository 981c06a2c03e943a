//! The linear-algebra vocabulary: decompositions and solves, and the types
//! and shapes of their outputs (thin Q and R; thin U, real S, Vᴴ; ascending
//! eigenvalues and their vectors; the lower Cholesky factor; X of AX = B).

use crate::ops::Meta;
use crate::tensor::TensorError;

/// A matrix decomposition or solve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Linalg {
    /// `A = Q R`, thin: `Q` is `m × k`, `R` is `k × n`, `k = min(m, n)`;
    /// `R`'s diagonal is real and non-negative (so the QR of a matrix of
    /// full rank is unique).
    Qr,
    /// `A = U diag(S) Vᴴ`, thin; `S` is real, descending.
    Svd,
    /// `A = V diag(W) Vᴴ` for Hermitian `A` (its lower triangle is read);
    /// `W` is real, ascending.
    Eigh,
    /// `A = L Lᴴ` for Hermitian positive definite `A`.
    Cholesky,
    /// `X` with `A X = B` (`B` a vector or a matrix), by LU with partial
    /// pivoting.
    Solve,
}

impl Linalg {
    /// Every decomposition, for tests and tables.
    pub const ALL: [Linalg; 5] = [
        Linalg::Qr,
        Linalg::Svd,
        Linalg::Eigh,
        Linalg::Cholesky,
        Linalg::Solve,
    ];

    /// The op's name in errors and traces.
    pub fn name(self) -> &'static str {
        match self {
            Linalg::Qr => "qr",
            Linalg::Svd => "svd",
            Linalg::Eigh => "eigh",
            Linalg::Cholesky => "cholesky",
            Linalg::Solve => "solve",
        }
    }

    /// Number of inputs.
    pub fn arity(self) -> usize {
        if self == Linalg::Solve {
            2
        } else {
            1
        }
    }

    /// The outputs' types and shapes.
    ///
    /// # Errors
    ///
    /// [`TensorError::NotMatrix`], [`TensorError::NotSquare`],
    /// [`TensorError::MixedDTypes`], [`TensorError::MatmulShapes`] (solve).
    pub fn infer(self, inputs: &[Meta]) -> Result<Vec<Meta>, TensorError> {
        let a = &inputs[0];
        let [m, n] = a.shape[..] else {
            return Err(TensorError::NotMatrix {
                op: self.name(),
                shape: a.shape.clone(),
            });
        };
        let square = || {
            if m == n {
                Ok(())
            } else {
                Err(TensorError::NotSquare {
                    op: self.name(),
                    shape: a.shape.clone(),
                })
            }
        };
        let meta = |dtype, shape: Vec<usize>| Meta { dtype, shape };
        let real = a.dtype.real();
        let k = m.min(n);
        Ok(match self {
            Linalg::Qr => vec![meta(a.dtype, vec![m, k]), meta(a.dtype, vec![k, n])],
            Linalg::Svd => vec![
                meta(a.dtype, vec![m, k]),
                meta(real, vec![k]),
                meta(a.dtype, vec![k, n]),
            ],
            Linalg::Eigh => {
                square()?;
                vec![meta(real, vec![n]), meta(a.dtype, vec![n, n])]
            }
            Linalg::Cholesky => {
                square()?;
                vec![meta(a.dtype, vec![n, n])]
            }
            Linalg::Solve => {
                square()?;
                let b = &inputs[1];
                if b.dtype != a.dtype {
                    return Err(TensorError::MixedDTypes {
                        op: "solve",
                        lhs: a.dtype,
                        rhs: b.dtype,
                    });
                }
                if !matches!(b.shape.len(), 1 | 2) || b.shape[0] != n {
                    return Err(TensorError::MatmulShapes {
                        lhs: a.shape.clone(),
                        rhs: b.shape.clone(),
                        reason: "solve needs B with as many rows as A",
                    });
                }
                vec![meta(a.dtype, b.shape.clone())]
            }
        })
    }
}
