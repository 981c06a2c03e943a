//! NUMA nodes read from sysfs (`devices/system/node/node*/cpulist`).

use std::fs;
use std::io;
use std::path::Path;

use crate::error::TopologyError;
use crate::CpuSet;

/// A NUMA node as sysfs lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NumaNode {
    pub(crate) id: usize,
    pub(crate) cpus: CpuSet,
}

/// The NUMA nodes under `sysfs_root` (normally `/sys`), sorted by id.
/// Returns `Ok(None)` when the tree has no NUMA information at all.
pub(crate) fn read_nodes(sysfs_root: &Path) -> Result<Option<Vec<NumaNode>>, TopologyError> {
    let dir = sysfs_root.join("devices/system/node");
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(TopologyError::Io { path: dir, source }),
    };
    let mut nodes = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| TopologyError::Io {
            path: dir.clone(),
            source,
        })?;
        let name = entry.file_name();
        let Some(id) = name
            .to_str()
            .and_then(|n| n.strip_prefix("node"))
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let path = entry.path().join("cpulist");
        let Some(cpus) = read_cpulist(&path)? else {
            continue;
        };
        nodes.push(NumaNode { id, cpus });
    }
    if nodes.is_empty() {
        return Ok(None);
    }
    nodes.sort_by_key(|n| n.id);
    Ok(Some(nodes))
}

/// The online CPUs under `sysfs_root`, if the tree says.
pub(crate) fn read_online(sysfs_root: &Path) -> Result<Option<CpuSet>, TopologyError> {
    read_cpulist(&sysfs_root.join("devices/system/cpu/online"))
}

fn read_cpulist(path: &Path) -> Result<Option<CpuSet>, TopologyError> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(TopologyError::Io {
                path: path.to_owned(),
                source,
            })
        }
    };
    CpuSet::parse(&text)
        .map(Some)
        .map_err(|source| TopologyError::BadCpuList {
            origin: path.display().to_string(),
            source,
        })
}
