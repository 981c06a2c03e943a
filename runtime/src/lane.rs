//! `Lane`: an ordered stream of ops into one CPU domain, with tensor ops.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use weft_engines::CpuEngine;

use crate::runtime::WeakRuntime;
use crate::tensor::DomainTensors;

/// An ordered, bounded stream of ops into one CPU domain's actor.
///
/// It is the generic actor lane ([`weft_actors::Lane`], reached through
/// `Deref`: `run`, `try_run`, `submit`, `try_submit`, `submit_timeout`) plus
/// the tensor ops of the domain (`upload`, `add`, `matmul`, `download`, …).
/// Clones share the same stream.
///
/// ```
/// use weft::{DType, Runtime, Tensor};
///
/// let rt = Runtime::builder().split(2).build()?;
/// let (a, b) = (rt.lane(0)?, rt.lane(1)?);
/// // Submitted without waiting: each call returns a handle at once.
/// let x = a.upload(Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?)?;
/// let y = a.matmul(&x, &a.eye(DType::F64, 2, 2)?)?;
/// let z = a.transfer(&y, 1)?; // to domain 1, ordered after `y` by its event
/// let total = b.sum_all(&b.mul(&z, &z)?)?;
/// assert_eq!(b.download(&total)?.wait()?.as_slice::<f64>()?, [30.0]);
/// // A bad shape fails at the call site, naming both shapes.
/// let bad = a.upload(Tensor::from_vec(vec![1.0f64; 3], &[3])?)?;
/// assert!(a.matmul(&x, &bad).unwrap_err().to_string().contains("[2, 2]"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Lane {
    lane: weft_actors::Lane<CpuEngine>,
    tensors: Arc<DomainTensors>,
    runtime: WeakRuntime,
}

impl Lane {
    pub(crate) fn new(
        lane: weft_actors::Lane<CpuEngine>,
        tensors: Arc<DomainTensors>,
        runtime: WeakRuntime,
    ) -> Lane {
        Lane {
            lane,
            tensors,
            runtime,
        }
    }

    pub(crate) fn runtime(&self) -> &WeakRuntime {
        &self.runtime
    }

    /// The CPU domain this lane feeds.
    pub fn domain(&self) -> usize {
        self.tensors.domain
    }

    /// The generic actor lane underneath.
    pub fn actor_lane(&self) -> &weft_actors::Lane<CpuEngine> {
        &self.lane
    }

    pub(crate) fn tensors(&self) -> &Arc<DomainTensors> {
        &self.tensors
    }
}

impl Deref for Lane {
    type Target = weft_actors::Lane<CpuEngine>;

    fn deref(&self) -> &Self::Target {
        &self.lane
    }
}

impl fmt::Debug for Lane {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lane")
            .field("domain", &self.tensors.domain)
            .field("lane", &self.lane.id())
            .finish()
    }
}
