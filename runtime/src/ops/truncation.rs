//! The truncated SVD: a rank that depends on the singular values, read
//! back in one round trip and chosen on the calling thread, and the kept
//! factors sliced by ops submitted after it.

use weft_actors::TicketError;
use weft_core::{DType, SliceAxis, TensorEngine, TensorError};

use crate::error::OpError;
use crate::handle::TensorHandle;
use crate::lane::Lane;
use crate::ops::{LinalgOps, StructuralOps};

/// Which singular values a truncated SVD keeps ([`Lane::svd_truncated`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Truncation {
    /// At most this many values (at least 1).
    pub max_rank: usize,
    /// The smallest values are dropped while the weight dropped — their
    /// Σ s² over the Σ s² of all — stays at or below this. In `[0, 1)`: 0
    /// drops only values that are exactly zero.
    pub cutoff: f64,
}

impl Truncation {
    /// At most `max_rank` values, and none dropped by weight but zeros.
    pub fn rank(max_rank: usize) -> Truncation {
        Truncation {
            max_rank,
            cutoff: 0.0,
        }
    }
}

/// A truncated SVD, `A ≈ U diag(S) Vᴴ` with the kept values.
#[derive(Debug, Clone)]
pub struct TruncatedSvd {
    /// The kept left singular vectors, `[m, rank]`.
    pub u: TensorHandle,
    /// The kept singular values, descending, `[rank]` (real).
    pub s: TensorHandle,
    /// The kept right singular vectors, `[rank, n]`.
    pub vh: TensorHandle,
    /// Values kept.
    pub rank: usize,
    /// The weight dropped: Σ s² of the dropped values over Σ s² of all
    /// (0 when nothing was dropped, or `A` is zero).
    pub discarded: f64,
}

impl<E: TensorEngine> Lane<E> {
    /// A thin SVD of 2-D `a` truncated by `truncation`: the rank is chosen
    /// from the singular values, then the kept columns of `U`, values of
    /// `S` and rows of `Vᴴ` are sliced. It blocks for one round trip (the
    /// values must be read to know the rank); the slices are submitted
    /// after it and their handles returned at once, so they are computed
    /// while the caller goes on. What a tape records is the SVD and the
    /// slices, so a gradient flows through it as through them.
    ///
    /// ```
    /// use weft::ops::Truncation;
    /// let rt = weft::Runtime::builder().split(1).build()?;
    /// let lane = rt.lane(0)?;
    /// // Rank 1: the outer product of [1, 2] and [3, 4].
    /// let a = lane.upload(weft::Tensor::from_vec(vec![3.0f64, 4.0, 6.0, 8.0], &[2, 2])?)?;
    /// let t = lane.svd_truncated(&a, Truncation { max_rank: 2, cutoff: 1e-12 })?;
    /// assert_eq!((t.rank, t.u.shape(), t.vh.shape()), (1, &[2, 1][..], &[1, 2][..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`TicketError::Op`] with the call's refusals: [`TensorError::Argument`]
    /// for a `max_rank` of 0 or a `cutoff` outside `[0, 1)`, and those of
    /// [`LinalgOps::svd`]; the SVD's own failure (no convergence, a failed
    /// producer of `a`) as its ticket's error.
    pub fn svd_truncated(
        &self,
        a: &TensorHandle,
        truncation: Truncation,
    ) -> Result<TruncatedSvd, TicketError<OpError>> {
        let Truncation { max_rank, cutoff } = truncation;
        let refuse = |argument, value: String, must| {
            TicketError::Op(OpError::from(TensorError::Argument {
                op: "svd_truncated",
                argument,
                value,
                must,
            }))
        };
        if max_rank == 0 {
            return Err(refuse("max_rank", "0".into(), "at least 1"));
        }
        if !(0.0..1.0).contains(&cutoff) {
            return Err(refuse("cutoff", cutoff.to_string(), "in [0, 1)"));
        }
        let (u, s, vh) = self.svd(a).map_err(TicketError::Op)?;
        let values = self.download(&s).map_err(TicketError::Op)?.wait()?;
        let values: Vec<f64> = match values.dtype() {
            DType::F32 => {
                (values.into_vec::<f32>()).map(|v| v.into_iter().map(f64::from).collect())
            }
            _ => values.into_vec::<f64>(),
        }
        .map_err(|e| TicketError::Op(e.into()))?;
        let (rank, discarded) = kept(&values, max_rank, cutoff);
        if rank == values.len() {
            return Ok(TruncatedSvd {
                u,
                s,
                vh,
                rank,
                discarded,
            });
        }
        let first = SliceAxis {
            start: 0,
            stop: rank,
            step: 1,
        };
        let sliced = (|| {
            Ok(TruncatedSvd {
                u: self.slice(&u, &[SliceAxis::ALL, first])?,
                s: self.slice(&s, &[first])?,
                vh: self.slice(&vh, &[first, SliceAxis::ALL])?,
                rank,
                discarded,
            })
        })();
        sliced.map_err(TicketError::Op)
    }
}

/// The rank to keep of singular `values` (descending) and the weight it
/// drops: the smallest go while the dropped weight stays at or below
/// `cutoff`, then at most `max_rank` stay, and never fewer than one.
fn kept(values: &[f64], max_rank: usize, cutoff: f64) -> (usize, f64) {
    let total: f64 = values.iter().map(|s| s * s).sum();
    if values.is_empty() || total == 0.0 || !total.is_finite() {
        return (values.len().min(1), 0.0);
    }
    let mut rank = values.len();
    let mut dropped = 0.0;
    while rank > 1 {
        let next = dropped + values[rank - 1] * values[rank - 1];
        if next / total > cutoff {
            break;
        }
        dropped = next;
        rank -= 1;
    }
    let rank = rank.min(max_rank);
    let dropped: f64 = values[rank..].iter().map(|s| s * s).sum();
    (rank, dropped / total)
}

#[cfg(test)]
mod tests {
    use super::kept;

    #[test]
    fn the_rank_follows_the_bound_and_the_cutoff() {
        let s = [4.0, 2.0, 1.0, 0.0];
        // Σ s² = 21: zeros go at a cutoff of 0.
        assert_eq!(kept(&s, 10, 0.0), (3, 0.0));
        assert_eq!(kept(&s, 2, 0.0), (2, 1.0 / 21.0));
        // 1/21 ≈ 0.048 may go at 0.05; 5/21 may not.
        assert_eq!(kept(&s, 10, 0.05), (2, 1.0 / 21.0));
        assert_eq!(kept(&s, 10, 0.9), (1, 5.0 / 21.0));
        // At least one value stays, even of a zero matrix.
        assert_eq!(kept(&[0.0, 0.0], 3, 0.5), (1, 0.0));
        assert_eq!(kept(&[], 3, 0.5), (0, 0.0));
    }
}
