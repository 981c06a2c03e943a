//! Cross-process CPU leases: which of a domain's CPUs no other weft pool
//! of this machine pins a worker onto.
//!
//! A lease is an exclusive `flock` on one file per CPU (`cpu-<n>`) in a
//! lease directory. `flock` belongs to the open file description, so:
//!
//! - a lease is held exactly as long as its [`File`] is open: the pool
//!   keeps its leases and drops them with itself, and a process that dies
//!   (even by `SIGKILL`) leaves no stale lease behind;
//! - a second open of the same file, in another process or in this one,
//!   finds it held: two runtimes of one process avoid each other too.
//!
//! The files themselves are never removed; they are empty and one per
//! CPU.
//!
//! The default directory is per user: `weft-<uid>` in `/dev/shm` (a
//! machine-local tmpfs, emptied at boot), else in [`std::env::temp_dir`].
//! It is created with mode 0700 and used only if it is a directory (not a
//! link) of this user that nobody else may write to, so another user can
//! neither hold a CPU for us nor plant a link where a lease file goes.
//! Processes of different users therefore do not see each other's leases.
//! The uid is read from `/proc/self/status`, which needs no `unsafe`
//! (unlike `getuid`) and, unlike the owner of `/proc/self`, is right for
//! a process that is not dumpable. Leases are taken on Linux only, where
//! pool threads are pinned.

use std::path::PathBuf;

use weft_topology::CpuSet;

/// What a domain's pool found when it leased the CPUs its workers pin onto
/// ([`CpuEngine::leases`](crate::CpuEngine::leases)).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Leases {
    /// No lease was asked for: the pool's threads are not pinned per core
    /// ([`Pinning::PerCore`](crate::Pinning::PerCore)), the pool is the
    /// caller's, or the platform does not pin (not Linux, or
    /// `--cfg weft_loom`).
    #[default]
    NotTaken,
    /// The pool leased CPUs of its domain, in the domain's order, until it
    /// held one per worker or had tried every CPU. Its workers run on the
    /// leased CPUs first; only workers left over once every CPU is leased
    /// or held elsewhere run on held ones, then wrap around as without
    /// leases.
    Taken {
        /// The CPUs the pool holds, until it is dropped.
        leased: CpuSet,
        /// The CPUs another weft pool held (another process's, or another
        /// runtime's of this one). Empty when nothing was in the way.
        contended: CpuSet,
    },
    /// The lease directory could not be used: the workers were pinned in
    /// the domain's order, as if no other process ran, and the build went
    /// on.
    Unavailable {
        /// The directory the leases were to be in.
        dir: PathBuf,
        /// What went wrong.
        reason: String,
    },
}

#[cfg(all(target_os = "linux", not(weft_loom)))]
pub(crate) use take::{take, Lease};

/// Elsewhere than Linux no lease is taken.
#[cfg(all(not(target_os = "linux"), not(weft_loom)))]
#[derive(Debug)]
pub(crate) enum Lease {}

#[cfg(all(target_os = "linux", not(weft_loom)))]
mod take {
    use std::fs::{DirBuilder, File, OpenOptions, TryLockError};
    use std::io;
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
    use std::path::{Path, PathBuf};

    use super::Leases;

    /// One CPU, held until dropped.
    #[derive(Debug)]
    pub(crate) struct Lease {
        _file: File,
    }

    /// Leases CPUs of `cpus` in order until `wanted` are held or every one
    /// was tried, in `dir`, else in the default directory.
    ///
    /// Returns the order the pool's workers take the CPUs in (the leased
    /// ones, then the ones held elsewhere), the leases, and the report. On
    /// an error other than a held lease, no lease is kept and the order is
    /// the domain's own.
    pub(crate) fn take(
        cpus: &[usize],
        wanted: usize,
        dir: Option<&Path>,
    ) -> (Vec<usize>, Vec<Lease>, Leases) {
        let (dir, result) = match dir.map_or_else(default_dir, |dir| Ok(dir.to_path_buf())) {
            Ok(dir) => {
                let result = prepare(&dir).and_then(|()| lease_in(&dir, cpus, wanted));
                (dir, result)
            }
            Err(e) => (PathBuf::new(), Err(e)),
        };
        match result {
            Ok((leases, leased, contended)) => {
                let order = leased.iter().chain(&contended).copied().collect();
                let report = Leases::Taken {
                    leased: leased.into_iter().collect(),
                    contended: contended.into_iter().collect(),
                };
                (order, leases, report)
            }
            Err(e) => {
                let reason = e.to_string();
                (
                    cpus.to_vec(),
                    Vec::new(),
                    Leases::Unavailable { dir, reason },
                )
            }
        }
    }

    /// Tries each CPU in turn; `Err` only for a failure other than "held".
    fn lease_in(
        dir: &Path,
        cpus: &[usize],
        wanted: usize,
    ) -> io::Result<(Vec<Lease>, Vec<usize>, Vec<usize>)> {
        let (mut leases, mut leased, mut contended) = (Vec::new(), Vec::new(), Vec::new());
        for &cpu in cpus {
            if leases.len() == wanted {
                break;
            }
            let file = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(dir.join(format!("cpu-{cpu}")))?;
            match file.try_lock() {
                Ok(()) => {
                    leases.push(Lease { _file: file });
                    leased.push(cpu);
                }
                Err(TryLockError::WouldBlock) => {
                    contended.push(cpu);
                }
                Err(TryLockError::Error(e)) => return Err(e),
            }
        }
        Ok((leases, leased, contended))
    }

    /// `weft-<uid>` in `/dev/shm` if there is one, else in the temporary
    /// directory.
    fn default_dir() -> io::Result<PathBuf> {
        let shm = Path::new("/dev/shm");
        let base = match shm.is_dir() {
            true => shm.to_path_buf(),
            false => std::env::temp_dir(),
        };
        Ok(base.join(format!("weft-{}", effective_uid()?)))
    }

    /// Creates `dir` (mode 0700) if missing and checks that only this
    /// user can change what is in it.
    fn prepare(dir: &Path) -> io::Result<()> {
        match DirBuilder::new().recursive(true).mode(0o700).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let meta = std::fs::symlink_metadata(dir)?;
        let uid = effective_uid()?;
        if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o022 != 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "not a directory of uid {uid} closed to others (owner {}, mode {:o})",
                    meta.uid(),
                    meta.mode() & 0o7777
                ),
            ));
        }
        Ok(())
    }

    /// The process's effective uid, from the `Uid:` line of
    /// `/proc/self/status` (real, effective, saved, filesystem).
    fn effective_uid() -> io::Result<u32> {
        let status = std::fs::read_to_string("/proc/self/status")?;
        status
            .lines()
            .find_map(|line| line.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1))
            .and_then(|id| id.parse().ok())
            .ok_or_else(|| io::Error::other("no Uid line in /proc/self/status"))
    }

    #[cfg(test)]
    mod tests {
        use weft_topology::CpuSet;

        use super::*;

        fn scratch(name: &str) -> PathBuf {
            let dir =
                std::env::temp_dir().join(format!("weft-lease-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            dir
        }

        #[test]
        fn a_second_open_finds_the_lease_held_until_the_first_is_dropped() {
            let dir = scratch("held");
            let (order, first, report) = take(&[0, 1], 1, Some(&dir));
            assert_eq!(order, [0]);
            assert_eq!(
                report,
                Leases::Taken {
                    leased: CpuSet::single(0),
                    contended: CpuSet::new()
                }
            );
            // A new open file description: held, though in this process.
            let (order, second, report) = take(&[0, 1], 1, Some(&dir));
            assert_eq!(order, [1, 0]);
            assert_eq!(
                report,
                Leases::Taken {
                    leased: CpuSet::single(1),
                    contended: CpuSet::single(0)
                }
            );
            // Every CPU held: the order is the domain's, none leased.
            let (order, third, report) = take(&[0, 1], 2, Some(&dir));
            assert_eq!(order, [0, 1]);
            assert!(third.is_empty());
            assert_eq!(
                report,
                Leases::Taken {
                    leased: CpuSet::new(),
                    contended: [0, 1].into_iter().collect()
                }
            );
            drop(first);
            let (order, _again, _) = take(&[0, 1], 2, Some(&dir));
            assert_eq!(order, [0, 1]);
            drop(second);
            std::fs::remove_dir_all(&dir).unwrap();
        }

        #[test]
        fn a_directory_that_cannot_be_made_leaves_the_order_alone() {
            let blocker = scratch("blocked");
            std::fs::write(&blocker, b"a file, not a directory").unwrap();
            let (order, leases, report) = take(&[3, 5], 2, Some(&blocker.join("sub")));
            assert_eq!(order, [3, 5]);
            assert!(leases.is_empty());
            assert!(
                matches!(&report, Leases::Unavailable { dir, .. } if dir == &blocker.join("sub")),
                "{report:?}"
            );
            std::fs::remove_file(&blocker).unwrap();
        }

        #[test]
        fn a_directory_others_may_write_to_is_refused() {
            use std::os::unix::fs::PermissionsExt;
            let dir = scratch("open");
            std::fs::create_dir(&dir).unwrap();
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
            let (order, leases, report) = take(&[2], 1, Some(&dir));
            assert_eq!(order, [2]);
            assert!(leases.is_empty());
            assert!(
                matches!(&report, Leases::Unavailable { reason, .. } if reason.contains("closed to others")),
                "{report:?}"
            );
            std::fs::remove_dir_all(&dir).unwrap();
        }

        #[test]
        fn the_default_directory_is_the_users() {
            let dir = default_dir().unwrap();
            let uid = effective_uid().unwrap();
            assert!(dir.ends_with(format!("weft-{uid}")), "{}", dir.display());
            // The uid is the owner of what this process creates.
            let probe = scratch("uid");
            std::fs::create_dir(&probe).unwrap();
            assert_eq!(std::fs::metadata(&probe).unwrap().uid(), uid);
            std::fs::remove_dir_all(&probe).unwrap();
        }
    }
}
