//! Engines: the single-owner state an actor runs ops against.
//!
//! An engine is plain state with methods that take `&mut self`; it knows
//! nothing about threads or channels. It is built by a factory on its actor
//! thread and never leaves it.
//!
//! - [`CpuEngine`]: a CPU domain's engine, a rayon pool whose workers are
//!   pinned to the domain's CPUs, with the actor thread itself as worker 0.
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

mod cpu;

pub use cpu::{CpuEngine, CpuEngineConfig, DomainInfo, EngineError, Pinning};
