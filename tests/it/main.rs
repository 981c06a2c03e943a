//! The integration tests that can share one process: one module per
//! former test file, named by area (`actor_*`, `lane_*`, `ticket_*`,
//! `runtime_*`, `tensor_*`, `topology_*`). One binary links weft once
//! instead of once per file.
//!
//! Tests here run on parallel threads of one process, so none of them may
//! assert on what belongs to the whole process (its thread count, its RSS,
//! its environment, its global runtime, the ledger's refusals): those live
//! in binaries of their own (see `tests/Cargo.toml`). Every runtime built
//! here overlaps others (the default, `Overlap::Allow`, builds them side by
//! side), and the thread counts taken here count only threads of names no
//! other test uses.
//!
//! Run one area or one file's tests by filter:
//! `cargo test -p weft-tests --test it -- tensor_lanes::`.

mod actor_events;
mod actor_faults;
mod actor_isolation;
mod actor_panic;
mod actor_reentry;
mod actor_shutdown;
mod lane_backpressure;
mod lane_fairness;
mod lane_order;
mod runtime_bad_input;
mod runtime_callbacks;
mod runtime_smoke;
mod runtime_stress;
mod runtime_trace;
mod tensor_autodiff;
mod tensor_differential;
mod tensor_donation;
mod tensor_dtypes;
mod tensor_einsum_broadcast;
mod tensor_errors;
mod tensor_functions;
mod tensor_indexing;
mod tensor_lanes;
mod tensor_programs;
mod tensor_scalars;
mod ticket_combinations;
mod topology_discovery;
