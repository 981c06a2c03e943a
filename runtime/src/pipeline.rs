//! `Pipeline`: items flowing through stages bound to domains, results in input order.
//!
//! The bound on items in flight is the backpressure.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use weft_actors::{Failure, Ticket, TicketError};
use weft_core::{Place, Tensor};

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

/// Results set aside before a run starts, at most.
const RESERVED_RESULTS: usize = 1024;

/// Stages, each bound to a CPU domain; each item is produced by the source
/// on the first stage's domain, moved to each stage's domain (a transfer
/// when it differs) and handed to the stage, which submits ops and returns
/// the item's next handle. Nothing waits but the caller, and only when
/// `in_flight` items are unfinished: the bound is the backpressure.
///
/// ```
/// use weft::{prelude::*, runtime::Pipeline};
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
    /// Each item's result, in input order: the tensor, or why the item has
    /// none. One item's failure leaves the others' results intact.
    pub outputs: Vec<Result<Tensor, ItemError>>,
    /// Wall time from the first submission to the last result.
    pub elapsed: Duration,
    /// The most items that were in flight at once.
    pub peak_in_flight: usize,
}

/// Why one item of a pipeline has no result.
#[derive(Debug)]
pub struct ItemError {
    /// The item's index.
    pub item: usize,
    /// The source or stage whose call refused the item at the call site
    /// (a bad shape, say); `None` when an op of the item failed while
    /// running, which the error names.
    pub stage: Option<String>,
    /// What failed.
    pub error: TicketError<OpError>,
}

impl ItemError {
    /// The first failed op, when the item failed because an op it depended
    /// on did.
    pub fn dependency(&self) -> Option<&Arc<Failure>> {
        self.error.dependency()
    }
}

impl fmt::Display for ItemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.stage {
            Some(stage) => write!(f, "item {}, stage `{stage}`: {}", self.item, self.error),
            None => write!(f, "item {}: {}", self.item, self.error),
        }
    }
}

impl std::error::Error for ItemError {}

/// An item on its way: its download's ticket, or why it has none.
enum InFlight {
    Running(usize, Ticket<Tensor, OpError>),
    Refused(ItemError),
}

impl InFlight {
    fn finish(self) -> Result<Tensor, ItemError> {
        match self {
            InFlight::Running(item, ticket) => ticket.wait().map_err(|error| ItemError {
                item,
                stage: None,
                error,
            }),
            InFlight::Refused(error) => Err(error),
        }
    }
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
    /// input order. An item that a stage refuses at the call site, or whose
    /// op fails, yields an [`ItemError`] naming the item (and the stage, for
    /// a refusal); the others go on. A stage may hand on a tensor of any
    /// CPU domain: it is moved to the next stage's domain from wherever it
    /// is.
    ///
    /// # Errors
    ///
    /// [`RuntimeError`] for a stage bound to a domain that does not exist or
    /// is shut down, before any item starts.
    pub fn run(&self, items: usize) -> Result<PipelineRun, RuntimeError> {
        let mut lanes: BTreeMap<usize, Lane> = BTreeMap::new();
        for domain in
            std::iter::once(self.source_domain).chain(self.stages.iter().map(|s| s.domain))
        {
            if let Entry::Vacant(e) = lanes.entry(domain) {
                e.insert(self.runtime.lane(domain)?);
            }
        }
        let start = Instant::now();
        let mut pending: VecDeque<InFlight> = VecDeque::new();
        // The results grow as items finish, never reserved for all
        // `items` at once: a count past what memory holds is a long run,
        // not an abort.
        let mut outputs = Vec::with_capacity(items.min(RESERVED_RESULTS));
        let mut peak = 0;
        for i in 0..items {
            if pending.len() == self.in_flight {
                let oldest = pending.pop_front().expect("in flight");
                outputs.push(oldest.finish());
            }
            let next = match self.submit(i, &mut lanes) {
                Ok(ticket) => InFlight::Running(i, ticket),
                Err((stage, error)) => InFlight::Refused(ItemError {
                    item: i,
                    stage: Some(stage.to_owned()),
                    error: TicketError::Op(error),
                }),
            };
            pending.push_back(next);
            peak = peak.max(pending.len());
        }
        outputs.extend(pending.into_iter().map(InFlight::finish));
        Ok(PipelineRun {
            outputs,
            elapsed: start.elapsed(),
            peak_in_flight: peak,
        })
    }

    /// Submits item `i` through every stage; the ticket of its download, or
    /// the name of the step that refused it and why.
    fn submit<'p>(
        &'p self,
        i: usize,
        lanes: &mut BTreeMap<usize, Lane>,
    ) -> Result<Ticket<Tensor, OpError>, (&'p str, OpError)> {
        let source = self.source_name.as_str();
        let mut item = (self.source)(&lanes[&self.source_domain], i).map_err(|e| (source, e))?;
        let mut step = source;
        for stage in &self.stages {
            let from = self
                .lane_of(&item, stage.domain, lanes)
                .map_err(|e| (step, e))?;
            if item.domain() != stage.domain {
                item = from.transfer(&item, stage.domain).map_err(|e| (step, e))?;
            }
            item =
                (stage.run)(&lanes[&stage.domain], &item).map_err(|e| (stage.name.as_str(), e))?;
            step = stage.name.as_str();
        }
        let to = self
            .lane_of(&item, item.domain(), lanes)
            .map_err(|e| (step, e))?;
        to.download(&item).map_err(|e| (step, e))
    }

    /// A lane into the CPU domain `item` lives in (opened on first use), to
    /// move it on towards `next`.
    fn lane_of<'l>(
        &self,
        item: &TensorHandle,
        next: usize,
        lanes: &'l mut BTreeMap<usize, Lane>,
    ) -> Result<&'l Lane, OpError> {
        let Place::Cpu(domain) = item.place() else {
            return Err(OpError::WrongDomain {
                op: "pipeline",
                handle: item.place(),
                lane: Place::Cpu(next),
            });
        };
        if let Entry::Vacant(e) = lanes.entry(domain) {
            e.insert(self.runtime.op_lane(domain)?);
        }
        Ok(&lanes[&domain])
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
