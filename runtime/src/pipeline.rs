//! `Pipeline`: items flowing through stages bound to domains, results in input order.
//!
//! The bound on items in flight is the backpressure.

use std::collections::VecDeque;
use std::fmt;
use std::time::{Duration, Instant};

use weft_actors::{Ticket, TicketError};
use weft_engines::Tensor;

use crate::error::{OpError, RuntimeError};
use crate::handle::TensorHandle;
use crate::lane::Lane;
use crate::runtime::Runtime;

type Source = Box<dyn Fn(&Lane, usize) -> Result<TensorHandle, OpError> + Send + Sync>;
type StageFn = Box<dyn Fn(&Lane, &TensorHandle) -> Result<TensorHandle, OpError> + Send + Sync>;

struct Stage {
    name: String,
    domain: usize,
    run: StageFn,
}

/// Stages, each bound to a CPU domain; each item is produced by the source
/// on the first stage's domain, moved to each stage's domain (a transfer
/// when it differs) and handed to the stage, which submits ops and returns
/// the item's next handle. Nothing waits but the caller, and only when
/// `in_flight` items are unfinished: the bound is the backpressure.
///
/// ```
/// use weft::{DType, Pipeline, Runtime, Scalar};
///
/// let rt = Runtime::builder().split(1).build()?;
/// let results = Pipeline::new(&rt, "ones", 0, |lane, i| {
///         lane.full(DType::F64, &[4], Scalar::Real(i as f64))
///     })
///     .stage("sum", 0, |lane, x| lane.sum_all(x))
///     .in_flight(8)
///     .run(5)?;
/// let sums: Vec<f64> = results
///     .outputs
///     .into_iter()
///     .map(|r| r.expect("ran").as_slice::<f64>().expect("f64")[0])
///     .collect();
/// assert_eq!(sums, [0.0, 4.0, 8.0, 12.0, 16.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Pipeline {
    runtime: Runtime,
    source_name: String,
    source_domain: usize,
    source: Source,
    stages: Vec<Stage>,
    in_flight: usize,
}

/// What a pipeline run produced.
#[derive(Debug)]
pub struct PipelineRun {
    /// Each item's result, in input order.
    pub outputs: Vec<Result<Tensor, TicketError<OpError>>>,
    /// Wall time from the first submission to the last result.
    pub elapsed: Duration,
    /// The most items that were in flight at once.
    pub peak_in_flight: usize,
}

impl Pipeline {
    /// A pipeline whose items are made by `source` (given the item's index)
    /// on CPU domain `domain`.
    pub fn new(
        runtime: &Runtime,
        name: impl Into<String>,
        domain: usize,
        source: impl Fn(&Lane, usize) -> Result<TensorHandle, OpError> + Send + Sync + 'static,
    ) -> Pipeline {
        Pipeline {
            runtime: runtime.clone(),
            source_name: name.into(),
            source_domain: domain,
            source: Box::new(source),
            stages: Vec::new(),
            in_flight: 4,
        }
    }

    /// Appends a stage that runs on CPU domain `domain`.
    pub fn stage(
        mut self,
        name: impl Into<String>,
        domain: usize,
        run: impl Fn(&Lane, &TensorHandle) -> Result<TensorHandle, OpError> + Send + Sync + 'static,
    ) -> Pipeline {
        self.stages.push(Stage {
            name: name.into(),
            domain,
            run: Box::new(run),
        });
        self
    }

    /// The most items unfinished at once (at least 1; default 4).
    pub fn in_flight(mut self, items: usize) -> Pipeline {
        self.in_flight = items.max(1);
        self
    }

    /// The stages as `(name, domain)`, the source first.
    pub fn layout(&self) -> Vec<(&str, usize)> {
        std::iter::once((self.source_name.as_str(), self.source_domain))
            .chain(self.stages.iter().map(|s| (s.name.as_str(), s.domain)))
            .collect()
    }

    /// Runs `items` items through the stages and returns their results in
    /// input order. An item whose op fails yields its error; the others go
    /// on.
    ///
    /// # Errors
    ///
    /// [`RuntimeError`] for a stage bound to a domain that does not exist or
    /// is shut down; [`OpError`] from a stage's call-site checks, as
    /// [`RuntimeError::Op`].
    pub fn run(&self, items: usize) -> Result<PipelineRun, RuntimeError> {
        let source_lane = self.runtime.lane(self.source_domain)?;
        let lanes = self
            .stages
            .iter()
            .map(|s| self.runtime.lane(s.domain))
            .collect::<Result<Vec<_>, _>>()?;
        let start = Instant::now();
        let mut pending: VecDeque<Ticket<Tensor, OpError>> = VecDeque::new();
        let mut outputs = Vec::with_capacity(items);
        let mut peak = 0;
        for i in 0..items {
            if pending.len() == self.in_flight {
                let oldest = pending.pop_front().expect("in flight");
                outputs.push(oldest.wait());
            }
            let mut item = (self.source)(&source_lane, i)?;
            let mut at = &source_lane;
            for (stage, lane) in self.stages.iter().zip(&lanes) {
                if item.domain() != stage.domain {
                    item = at.transfer(&item, stage.domain)?;
                }
                item = (stage.run)(lane, &item)?;
                at = lane;
            }
            pending.push_back(at.download(&item)?);
            peak = peak.max(pending.len());
        }
        outputs.extend(pending.into_iter().map(Ticket::wait));
        Ok(PipelineRun {
            outputs,
            elapsed: start.elapsed(),
            peak_in_flight: peak,
        })
    }
}

impl fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pipeline")
            .field("stages", &self.layout())
            .field("in_flight", &self.in_flight)
            .finish()
    }
}
