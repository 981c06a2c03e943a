//! CUDA devices: what the driver says about each one, and where it sits —
//! the NUMA node and CPUs sysfs gives for its PCI address, and so the CPU
//! domain nearest to it.
//!
//! Every driver call goes through `sys::cuda`, which first checks that the
//! driver library can be loaded at all: without it cudarc panics, and a
//! machine without a GPU must get a typed reason instead.

use std::fmt;
use std::fs;
use std::path::Path;

use crate::cpuset::CpuSet;
use crate::error::CudaUnavailable;
use crate::layout::Topology;
use crate::sys;

/// A CUDA device as the driver and sysfs describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaDevice {
    /// The driver's ordinal (`CUDA_VISIBLE_DEVICES` order).
    pub ordinal: usize,
    /// The product name.
    pub name: String,
    /// Device memory in bytes.
    pub total_memory: usize,
    /// Compute capability, `(major, minor)`.
    pub compute_capability: (u32, u32),
    /// The PCI address, `dddd:bb:dd.0`, as sysfs names the device.
    pub pci_bus_id: String,
    /// The NUMA node sysfs gives the device (`None`: not said, or `-1`).
    pub numa_node: Option<usize>,
    /// The CPUs sysfs lists as local to the device (empty: not said).
    pub local_cpus: CpuSet,
}

impl CudaDevice {
    /// The CPU domain of `topology` nearest to the device: the one on its
    /// NUMA node, else the one holding most of its local CPUs, else none.
    pub fn nearest_domain(&self, topology: &Topology) -> Option<usize> {
        let domains = topology.domains();
        if let Some(node) = self.numa_node {
            if let Some(d) = domains.iter().find(|d| d.numa_node() == Some(node)) {
                return Some(d.index());
            }
        }
        domains
            .iter()
            .map(|d| (d.cpus().intersection(&self.local_cpus).len(), d.index()))
            .filter(|&(shared, _)| shared > 0)
            .max_by_key(|&(shared, index)| (shared, std::cmp::Reverse(index)))
            .map(|(_, index)| index)
    }
}

impl fmt::Display for CudaDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cuda:{} {} ({} MiB, compute {}.{}, PCI {}",
            self.ordinal,
            self.name,
            self.total_memory >> 20,
            self.compute_capability.0,
            self.compute_capability.1,
            self.pci_bus_id
        )?;
        match self.numa_node {
            Some(node) => write!(f, ", NUMA node {node})"),
            None => write!(f, ")"),
        }
    }
}

/// The CUDA devices of this machine, located through `/sys`.
///
/// # Errors
///
/// [`CudaUnavailable`] with the reason: no driver library, a driver
/// failure, or no device. Never panics.
pub fn cuda_devices() -> Result<Vec<CudaDevice>, CudaUnavailable> {
    cuda_devices_in(Path::new("/sys"))
}

/// [`cuda_devices`], reading PCI locations under `sysfs_root`.
///
/// # Errors
///
/// As [`cuda_devices`].
pub fn cuda_devices_in(sysfs_root: &Path) -> Result<Vec<CudaDevice>, CudaUnavailable> {
    let found = sys::cuda::devices()?;
    if found.is_empty() {
        return Err(CudaUnavailable::NoDevice);
    }
    Ok(found
        .into_iter()
        .map(|d| {
            let (numa_node, local_cpus) = pci_location(sysfs_root, &d.pci_bus_id);
            CudaDevice {
                ordinal: d.ordinal,
                name: d.name,
                total_memory: d.total_memory,
                compute_capability: d.compute_capability,
                pci_bus_id: d.pci_bus_id,
                numa_node,
                local_cpus,
            }
        })
        .collect())
}

/// The NUMA node and local CPUs sysfs gives the PCI device `bus_id`
/// (`bus/pci/devices/<bus_id>/{numa_node,local_cpulist}`); unknowns are
/// `None` and empty.
pub fn pci_location(sysfs_root: &Path, bus_id: &str) -> (Option<usize>, CpuSet) {
    let dir = sysfs_root
        .join("bus/pci/devices")
        .join(bus_id.to_ascii_lowercase());
    let node = fs::read_to_string(dir.join("numa_node"))
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .and_then(|n| usize::try_from(n).ok());
    let cpus = fs::read_to_string(dir.join("local_cpulist"))
        .ok()
        .and_then(|s| CpuSet::parse(s.trim()).ok())
        .unwrap_or_default();
    (node, cpus)
}
