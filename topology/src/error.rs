//! Error types of topology discovery, layout validation, pinning and (feature
//! `cuda`) CUDA device discovery. The cpulist parser's own error is beside it
//! in `cpuset.rs`.

use std::io;
use std::path::PathBuf;

use crate::cpuset::{CpuListError, CpuSet};

/// A CPU domain layout that cannot be used, or a machine that cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TopologyError {
    /// The layout has no domain at all.
    #[error("a layout needs at least one CPU domain, got zero")]
    NoDomains,
    /// Domain `index` of an explicit layout has no CPU.
    #[error("CPU domain {index} is empty")]
    EmptyDomain {
        /// Position of the domain in the layout.
        index: usize,
    },
    /// A domain names a CPU that this process may not run on.
    #[error("CPU {cpu} of domain {domain} is not in the process's allowed set {allowed}")]
    CpuNotAllowed {
        /// The CPU id.
        cpu: usize,
        /// Position of the domain in the layout.
        domain: usize,
        /// The allowed set it was checked against.
        allowed: CpuSet,
    },
    /// Two domains share a CPU.
    #[error("CPU {cpu} is in both domain {first} and domain {second}")]
    CpuInTwoDomains {
        /// The CPU id.
        cpu: usize,
        /// The first domain holding it.
        first: usize,
        /// The second domain holding it.
        second: usize,
    },
    /// A split into more domains than there are allowed CPUs, or into zero.
    #[error("cannot split {available} allowed CPUs into {requested} domains")]
    BadSplit {
        /// Domains asked for.
        requested: usize,
        /// Allowed CPUs available.
        available: usize,
    },
    /// The process has no allowed CPU (an empty affinity mask).
    #[error("the process has no allowed CPU")]
    NoAllowedCpus,
    /// A cpulist in a layout string or a sysfs file did not parse.
    #[error("bad cpulist in {origin}: {source}")]
    BadCpuList {
        /// Where the text came from: `WEFT_CPU_DOMAINS`, a file path, an argument.
        origin: String,
        /// The parse error.
        source: CpuListError,
    },
    /// A sysfs file exists but could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// Reading the process's affinity mask failed.
    #[error(transparent)]
    Affinity(#[from] AffinityError),
}

/// Reading or setting a thread's CPU affinity failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AffinityError {
    /// This platform has no affinity support in weft (only Linux has).
    #[error("CPU pinning is not supported on this platform")]
    Unsupported,
    /// Pinning to an empty set was asked for.
    #[error("cannot pin a thread to an empty CPU set")]
    EmptySet,
    /// The system call failed.
    #[error("{call} failed: {source}")]
    Syscall {
        /// `sched_getaffinity` or `sched_setaffinity`.
        call: &'static str,
        /// The OS error.
        source: io::Error,
    },
    /// The kernel accepted the mask but kept fewer CPUs than asked (a cgroup
    /// or cpuset can narrow it silently).
    #[error("asked to pin to CPUs {requested}, the kernel kept {kept}")]
    Narrowed {
        /// The set asked for.
        requested: CpuSet,
        /// The set read back.
        kept: CpuSet,
    },
}

/// Why there is no CUDA device to use.
#[cfg(all(feature = "cuda", target_os = "linux"))]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CudaUnavailable {
    /// The driver library (`libcuda.so`) cannot be loaded: no NVIDIA driver.
    #[error("CUDA unavailable: the driver library (libcuda.so) cannot be loaded")]
    NoDriver,
    /// The driver is there but failed.
    #[error("CUDA unavailable: the driver failed in {call}: {message}")]
    Driver {
        /// The driver call.
        call: &'static str,
        /// The driver's error.
        message: String,
    },
    /// The driver works and reports no device.
    #[error("CUDA unavailable: the driver reports no device")]
    NoDevice,
    /// A device ordinal past the devices there are.
    #[error("CUDA unavailable: no device {ordinal}: the machine has {count}")]
    NoSuchDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices there are.
        count: usize,
    },
}
