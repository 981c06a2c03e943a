//! Reading the allowed CPUs and pinning threads, with read-back.

use crate::error::AffinityError;
use crate::CpuSet;

/// The CPUs this process may run on: the affinity mask of the process (its
/// main thread), not of the calling thread, so a pinned worker that asks still
/// sees the whole set. Elsewhere than Linux: CPUs `0..available_parallelism`.
///
/// # Errors
///
/// [`AffinityError::Syscall`] if the kernel refuses the query.
pub fn process_allowed_cpus() -> Result<CpuSet, AffinityError> {
    #[cfg(target_os = "linux")]
    {
        crate::sys::get_affinity(crate::sys::process_id()).map_err(|source| {
            AffinityError::Syscall {
                call: "sched_getaffinity",
                source,
            }
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        Ok(CpuSet::range(0..n))
    }
}

/// The calling thread's current affinity mask.
///
/// # Errors
///
/// [`AffinityError::Unsupported`] off Linux; [`AffinityError::Syscall`] if
/// the kernel refuses the query.
pub fn current_thread_cpus() -> Result<CpuSet, AffinityError> {
    #[cfg(target_os = "linux")]
    {
        crate::sys::get_affinity(0).map_err(|source| AffinityError::Syscall {
            call: "sched_getaffinity",
            source,
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(AffinityError::Unsupported)
    }
}

/// Pins the calling thread to `cpus`, then reads the mask back.
///
/// Returns the mask the kernel kept, which equals `cpus`.
///
/// # Errors
///
/// - [`AffinityError::EmptySet`] for an empty `cpus`;
/// - [`AffinityError::Syscall`] if the kernel refuses (for example, none of
///   the CPUs is allowed);
/// - [`AffinityError::Narrowed`] if the kernel kept fewer CPUs than asked;
/// - [`AffinityError::Unsupported`] off Linux.
pub fn pin_current_thread(cpus: &CpuSet) -> Result<CpuSet, AffinityError> {
    if cpus.is_empty() {
        return Err(AffinityError::EmptySet);
    }
    #[cfg(target_os = "linux")]
    {
        crate::sys::set_current_affinity(cpus).map_err(|source| AffinityError::Syscall {
            call: "sched_setaffinity",
            source,
        })?;
        let kept = current_thread_cpus()?;
        if &kept != cpus {
            return Err(AffinityError::Narrowed {
                requested: cpus.clone(),
                kept,
            });
        }
        Ok(kept)
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(AffinityError::Unsupported)
    }
}

/// Pins the calling thread to the single CPU `cpu`; see [`pin_current_thread`].
///
/// # Errors
///
/// As [`pin_current_thread`].
pub fn pin_current_thread_to(cpu: usize) -> Result<CpuSet, AffinityError> {
    pin_current_thread(&CpuSet::single(cpu))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn pin_reads_back_and_process_set_is_unchanged() {
        let allowed = process_allowed_cpus().unwrap();
        assert!(!allowed.is_empty());
        let cpu = allowed.last().unwrap();
        let handle = std::thread::spawn(move || {
            let kept = pin_current_thread_to(cpu).unwrap();
            assert_eq!(kept, CpuSet::single(cpu));
            assert_eq!(current_thread_cpus().unwrap(), CpuSet::single(cpu));
            // The process's set is read from the main thread, not from us.
            process_allowed_cpus().unwrap()
        });
        assert_eq!(handle.join().unwrap(), allowed);
    }

    #[test]
    fn pin_errors_are_typed() {
        assert!(matches!(
            pin_current_thread(&CpuSet::new()),
            Err(AffinityError::EmptySet)
        ));
        // A CPU id far beyond any machine: the kernel rejects the mask.
        let err = std::thread::spawn(|| pin_current_thread_to(60_000))
            .join()
            .unwrap()
            .unwrap_err();
        assert!(matches!(err, AffinityError::Syscall { .. }), "{err}");
    }
}
