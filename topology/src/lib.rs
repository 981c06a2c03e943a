//! CPU sets, NUMA domains, thread affinity and memory advice: the only
//! part of weft that speaks to the kernel about CPUs and pages.
//!
//! - [`CpuSet`] parses and prints the kernel's cpulist format.
//! - [`Topology`] lists the CPU domains: one per NUMA node of the allowed
//!   CPUs, or an explicit layout ([`TopologyBuilder`], [`DOMAINS_ENV`]).
//! - [`pin_current_thread`] pins with read-back.
//! - [`advise_huge_pages`] asks for huge pages under a fresh buffer.
//! - With the `cuda` feature, `cuda_devices` lists the CUDA devices with
//!   their PCI location and nearest CPU domain, or says why there are none.
//!
//! All `unsafe` code of this crate is in the private `sys` module.
#![deny(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

mod affinity;
mod cpuset;
#[cfg(all(feature = "cuda", target_os = "linux"))]
mod cuda;
mod error;
mod layout;
mod memory;
mod numa;
#[cfg(target_os = "linux")]
mod sys;

pub use affinity::{
    current_cpu, current_thread_cpus, pin_current_thread, pin_current_thread_to,
    process_allowed_cpus,
};
pub use cpuset::{CpuListError, CpuSet, Iter, MAX_CPU_ID};
#[cfg(all(feature = "cuda", target_os = "linux"))]
pub use cuda::{cuda_devices, cuda_devices_in, pci_location, CudaDevice};
#[cfg(all(feature = "cuda", target_os = "linux"))]
pub use error::CudaUnavailable;
pub use error::{AffinityError, TopologyError};
pub use layout::{CpuDomain, LayoutSource, Share, Topology, TopologyBuilder, DOMAINS_ENV};
pub use memory::{advise_huge_pages, HUGE_PAGE_BYTES};
