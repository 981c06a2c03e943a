//! Reading the allowed CPUs and pinning threads, with read-back. One CPU
//! below 1024 is pinned through `core_affinity`; sets, higher CPU ids and
//! every read go through the growable mask of `sys`.

use crate::cpuset::CpuSet;
use crate::error::AffinityError;

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

/// The CPU the calling thread runs on at this moment (it may move right
/// after, unless pinned to one CPU); `None` where the platform cannot say.
/// Cheap: a vDSO call on Linux.
pub fn current_cpu() -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        crate::sys::current_cpu()
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
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
        set_current(cpus).map_err(|source| AffinityError::Syscall {
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

/// CPU ids `core_affinity` can name: it sets the bit in glibc's fixed
/// 1024-bit `cpu_set_t`, and an id past it indexes out of that array, which
/// takes the process down. Larger ids never reach it.
#[cfg(target_os = "linux")]
const CORE_AFFINITY_CPUS: usize = libc::CPU_SETSIZE as usize;

/// Sets the calling thread's mask to `cpus`: one CPU below
/// [`CORE_AFFINITY_CPUS`] through `core_affinity::set_for_current`; sets,
/// and CPU ids the fixed mask cannot hold, through the growable mask of
/// `sys`. The caller reads the mask back either way.
#[cfg(target_os = "linux")]
fn set_current(cpus: &CpuSet) -> std::io::Result<()> {
    match cpus.first() {
        Some(id) if cpus.len() == 1 && id < CORE_AFFINITY_CPUS => {
            if core_affinity::set_for_current(core_affinity::CoreId { id }) {
                return Ok(());
            }
            // `set_for_current` returns right after `sched_setaffinity`, so
            // errno is still that call's.
            let error = std::io::Error::last_os_error();
            Err(match error.raw_os_error() {
                Some(code) if code != 0 => error,
                _ => std::io::Error::other(format!("the kernel refused CPU {id}")),
            })
        }
        _ => crate::sys::set_current_affinity(cpus),
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

    #[test]
    fn pin_to_one_missing_cpu_below_1024_is_a_syscall_error() {
        // The single-CPU path (`core_affinity`) reports the kernel's refusal
        // as the set path does. A CPU past the possible ones, not merely
        // outside the process's mask: a thread may widen its own mask.
        let cpu = highest_possible_cpu(&process_allowed_cpus().unwrap()) + 1;
        if cpu >= CORE_AFFINITY_CPUS {
            println!("skipped: no CPU id below {CORE_AFFINITY_CPUS} is missing");
            return;
        }
        let err = std::thread::spawn(move || pin_current_thread_to(cpu))
            .join()
            .unwrap()
            .unwrap_err();
        match err {
            AffinityError::Syscall { call, source } => {
                assert_eq!(call, "sched_setaffinity");
                assert_eq!(source.raw_os_error(), Some(libc::EINVAL), "{source}");
            }
            other => panic!("expected a syscall error, got {other}"),
        }
    }

    /// The highest CPU id the kernel may ever name: `cpu/possible` in sysfs,
    /// else the allowed set's.
    fn highest_possible_cpu(allowed: &CpuSet) -> usize {
        std::fs::read_to_string("/sys/devices/system/cpu/possible")
            .ok()
            .and_then(|text| CpuSet::parse(text.trim()).ok())
            .and_then(|set| set.last())
            .or(allowed.last())
            .unwrap_or(0)
    }

    #[test]
    fn core_affinity_sees_the_cpus_weft_sees() {
        let allowed = process_allowed_cpus().unwrap();
        let highest = highest_possible_cpu(&allowed);
        if highest >= CORE_AFFINITY_CPUS {
            println!(
                "skipped: CPU ids reach {highest}, past the {CORE_AFFINITY_CPUS} that \
                 core_affinity's fixed mask holds"
            );
            return;
        }
        // Both read the calling thread's mask: a fresh thread, never pinned.
        let (theirs, ours) = std::thread::spawn(|| {
            let theirs = core_affinity::get_core_ids().expect("core_affinity reads the mask");
            (theirs, current_thread_cpus().unwrap())
        })
        .join()
        .unwrap();
        let theirs: CpuSet = theirs.into_iter().map(|core| core.id).collect();
        println!(
            "core_affinity: {theirs}; weft, this thread: {ours}; weft, the process: {allowed}"
        );
        assert_eq!(theirs, allowed);
        assert_eq!(theirs, ours);
    }
}
