//! CUDA discovery (feature `cuda`). Its own harness, so that a check that
//! needs a GPU on a machine without one prints `skipped: <reason>` and is
//! counted as skipped, never as passed:
//!
//! `cargo test --release -p weft-tests --features cuda --test cuda_discovery`

use std::process::ExitCode;

use weft_tests::{check, run_checks, Check, FakeSysfs, Outcome};
use weft_topology::{cuda_devices, cuda_devices_in, pci_location, CudaUnavailable, Topology};

/// Sysfs gives a PCI device's NUMA node and local CPUs; `-1` and missing
/// files mean unknown; the nearest domain follows the node, else the CPUs.
fn pci_location_and_nearest_domain() -> Result<Outcome, String> {
    let fake = FakeSysfs::new("cuda-pci").node(0, "0-3").node(1, "4-7");
    let pci = |id: &str, node: &str, cpus: &str| {
        let dir = fake.path().join("bus/pci/devices").join(id);
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("numa_node"), format!("{node}\n")).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("local_cpulist"), format!("{cpus}\n")).map_err(|e| e.to_string())
    };
    pci("0000:17:00.0", "1", "4-7")?;
    pci("0000:65:00.0", "-1", "2-5")?;
    let (node, cpus) = pci_location(fake.path(), "0000:17:00.0");
    check(
        node == Some(1) && cpus.to_string() == "4-7",
        format!("{node:?} {cpus}"),
    )?;
    // Upper-case bus ids (as some tools print them) name the same device.
    check(
        pci_location(fake.path(), "0000:17:00.0".to_uppercase().as_str()).0 == Some(1),
        "case",
    )?;
    let (node, cpus) = pci_location(fake.path(), "0000:65:00.0");
    check(
        node.is_none() && cpus.len() == 4,
        format!("{node:?} {cpus}"),
    )?;
    let (node, cpus) = pci_location(fake.path(), "0000:99:00.0");
    check(
        node.is_none() && cpus.is_empty(),
        "a device sysfs does not list",
    )?;

    let topology = Topology::builder()
        .sysfs_root(fake.path())
        .allowed("0-7".parse().map_err(|e| format!("{e}"))?)
        .ignore_env()
        .build()
        .map_err(|e| e.to_string())?;
    let device = |bus: &str| {
        let (numa_node, local_cpus) = pci_location(fake.path(), bus);
        weft_topology::CudaDevice {
            ordinal: 0,
            name: "test".into(),
            total_memory: 1 << 30,
            compute_capability: (9, 0),
            pci_bus_id: bus.into(),
            numa_node,
            local_cpus,
        }
    };
    check(
        device("0000:17:00.0").nearest_domain(&topology) == Some(1),
        "by node",
    )?;
    // No node: the domain holding most local CPUs (2-3 in 0, 4-5 in 1: a
    // tie goes to the lower index).
    check(
        device("0000:65:00.0").nearest_domain(&topology) == Some(0),
        "by CPUs",
    )?;
    check(
        device("0000:99:00.0").nearest_domain(&topology).is_none(),
        "unknown",
    )?;
    Ok(Outcome::Passed)
}

/// Discovery never panics: devices with sane facts, or a typed reason.
fn discovery_reports_devices_or_a_reason() -> Result<Outcome, String> {
    match cuda_devices() {
        Ok(devices) => {
            for d in &devices {
                check(!d.name.is_empty(), format!("{d}: no name"))?;
                check(d.total_memory > 0, format!("{d}: no memory"))?;
                check(
                    d.compute_capability.0 >= 3,
                    format!("{d}: compute capability"),
                )?;
                check(d.pci_bus_id.len() == 12, format!("{d}: PCI id"))?;
            }
            println!(
                "  found: {}",
                devices
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join("; ")
            );
            Ok(Outcome::Passed)
        }
        Err(reason) => {
            check(
                reason.to_string().starts_with("CUDA unavailable"),
                reason.to_string(),
            )?;
            let typed = matches!(
                reason,
                CudaUnavailable::NoDriver
                    | CudaUnavailable::NoDevice
                    | CudaUnavailable::Driver { .. }
            );
            check(typed, format!("{reason:?}"))?;
            // The same answer with another sysfs root: the driver decides.
            check(
                cuda_devices_in(std::path::Path::new("/nonexistent")).is_err(),
                "root",
            )?;
            Ok(Outcome::Passed)
        }
    }
}

/// On a GPU: the facts the driver gives are stable between calls.
fn devices_are_stable_between_calls() -> Result<Outcome, String> {
    let first = match cuda_devices() {
        Ok(devices) => devices,
        Err(reason) => return Ok(Outcome::Skipped(reason.to_string())),
    };
    let second = cuda_devices().map_err(|e| e.to_string())?;
    check(first == second, "two discoveries differ")?;
    Ok(Outcome::Passed)
}

fn main() -> ExitCode {
    let checks: [(&str, Check); 3] = [
        (
            "pci_location_and_nearest_domain",
            pci_location_and_nearest_domain,
        ),
        (
            "discovery_reports_devices_or_a_reason",
            discovery_reports_devices_or_a_reason,
        ),
        (
            "devices_are_stable_between_calls",
            devices_are_stable_between_calls,
        ),
    ];
    run_checks(&checks)
}
