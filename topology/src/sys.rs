//! The affinity system calls, the huge-page advice, and (feature `cuda`) the CUDA driver's device
//! queries: the only `unsafe` code of this crate.
//!
//! The kernel's CPU mask is a bitmap of `c_ulong` words whose size the kernel
//! chooses (`nr_cpu_ids`), so the buffer is grown until the kernel accepts it
//! instead of using glibc's fixed 1024-bit `cpu_set_t`.
#![allow(unsafe_code)]

use std::io;
use std::mem::size_of;

use crate::cpuset::{CpuSet, MAX_CPU_ID};

const WORD_BITS: usize = libc::c_ulong::BITS as usize;

/// The affinity mask of thread `tid` (0 is the calling thread; a process id
/// names that process's main thread).
pub(crate) fn get_affinity(tid: libc::pid_t) -> io::Result<CpuSet> {
    let mut words = 1024 / WORD_BITS;
    loop {
        let mut mask: Vec<libc::c_ulong> = vec![0; words];
        let bytes = words * size_of::<libc::c_ulong>();
        // SAFETY: `mask` is a live, writable buffer of exactly `bytes` bytes,
        // and the kernel writes at most `cpusetsize` bytes into it. The cast
        // to `cpu_set_t` only names the type the prototype wants; the kernel
        // treats it as a plain bitmap of `cpusetsize` bytes.
        let rc = unsafe {
            libc::sched_getaffinity(tid, bytes, mask.as_mut_ptr().cast::<libc::cpu_set_t>())
        };
        if rc == 0 {
            return Ok(from_mask(&mask));
        }
        let err = io::Error::last_os_error();
        // EINVAL: the buffer is smaller than the kernel's mask; grow it.
        if err.raw_os_error() == Some(libc::EINVAL) && words * WORD_BITS <= MAX_CPU_ID {
            words *= 2;
            continue;
        }
        return Err(err);
    }
}

/// Sets the calling thread's affinity mask to `set`.
pub(crate) fn set_current_affinity(set: &CpuSet) -> io::Result<()> {
    let top = set.last().unwrap_or(0);
    let mut mask: Vec<libc::c_ulong> = vec![0; top / WORD_BITS + 1];
    for cpu in set {
        mask[cpu / WORD_BITS] |= 1 << (cpu % WORD_BITS);
    }
    let bytes = mask.len() * size_of::<libc::c_ulong>();
    // SAFETY: `mask` is a live buffer of exactly `bytes` bytes that the
    // kernel only reads; pid 0 names the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, bytes, mask.as_ptr().cast::<libc::cpu_set_t>()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The CPU the calling thread runs on now, if the kernel says.
pub(crate) fn current_cpu() -> Option<usize> {
    // SAFETY: `sched_getcpu` has no arguments and no preconditions; it
    // returns -1 on failure.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

/// Advises the kernel to back `[start, start + len)` with transparent
/// huge pages; `start` and `len` are multiples of the huge page size. An
/// error (huge pages not built into the kernel) is ignored: it is advice.
pub(crate) fn advise_huge_pages(start: usize, len: usize) {
    // SAFETY: `MADV_HUGEPAGE` changes only how the kernel backs the range
    // with physical pages: no mapping is added or removed and no byte of it
    // changes, so no Rust reference into the range can observe it. The
    // caller passes a range inside one live allocation of its own; an
    // invalid range is refused by the kernel with an error, not acted on.
    let _ = unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE) };
}

/// The process id.
pub(crate) fn process_id() -> libc::pid_t {
    // SAFETY: `getpid` has no preconditions and cannot fail.
    unsafe { libc::getpid() }
}

fn from_mask(mask: &[libc::c_ulong]) -> CpuSet {
    let mut set = CpuSet::new();
    for (i, &word) in mask.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            let bit = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            set.insert(i * WORD_BITS + bit);
        }
    }
    set
}

/// The CUDA driver's device queries. Each call is made only after the
/// driver library was found loadable: without it, cudarc panics.
#[cfg(feature = "cuda")]
pub(crate) mod cuda {
    use cudarc::driver::{result, sys};

    use crate::error::CudaUnavailable;

    /// What the driver says about one device, before sysfs is read.
    #[derive(Debug)]
    pub(crate) struct DriverDevice {
        pub(crate) ordinal: usize,
        pub(crate) name: String,
        pub(crate) total_memory: usize,
        pub(crate) compute_capability: (u32, u32),
        pub(crate) pci_bus_id: String,
    }

    fn failed(call: &'static str) -> impl Fn(result::DriverError) -> CudaUnavailable {
        move |e| CudaUnavailable::Driver {
            call,
            message: format!("{e:?}"),
        }
    }

    /// Every device the driver lists, or why there is none to ask.
    pub(crate) fn devices() -> Result<Vec<DriverDevice>, CudaUnavailable> {
        // SAFETY: this only tries to open the driver library by its known
        // names and closes it again; it touches no CUDA state.
        if !unsafe { sys::is_culib_present() } {
            return Err(CudaUnavailable::NoDriver);
        }
        result::init().map_err(failed("cuInit"))?;
        let count = result::device::get_count().map_err(failed("cuDeviceGetCount"))?;
        (0..count.max(0))
            .map(|ordinal| {
                let dev = result::device::get(ordinal).map_err(failed("cuDeviceGet"))?;
                let attribute = |attr: sys::CUdevice_attribute, call| {
                    // SAFETY: `dev` is a device handle the driver just gave
                    // for an ordinal below its count; the query only reads.
                    unsafe { result::device::get_attribute(dev, attr) }
                        .map_err(failed(call))
                        .map(|v| u32::try_from(v).unwrap_or(0))
                };
                use sys::CUdevice_attribute::*;
                let major = attribute(
                    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                    "cuDeviceGetAttribute",
                )?;
                let minor = attribute(
                    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                    "cuDeviceGetAttribute",
                )?;
                let domain = attribute(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, "cuDeviceGetAttribute")?;
                let bus = attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, "cuDeviceGetAttribute")?;
                let device = attribute(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, "cuDeviceGetAttribute")?;
                // SAFETY: as above: a valid handle, a read-only query.
                let total_memory = unsafe { result::device::total_mem(dev) }
                    .map_err(failed("cuDeviceTotalMem"))?;
                Ok(DriverDevice {
                    ordinal: usize::try_from(ordinal).unwrap_or(0),
                    name: result::device::get_name(dev).map_err(failed("cuDeviceGetName"))?,
                    total_memory,
                    compute_capability: (major, minor),
                    pci_bus_id: format!("{domain:04x}:{bus:02x}:{device:02x}.0"),
                })
            })
            .collect()
    }
}
