//! `WEFT_CPU_DOMAINS` overrides discovery (alone in its binary: it sets an
//! environment variable).

use weft::{
    error::TopologyError,
    topology::{CpuSet, LayoutSource, Topology, DOMAINS_ENV},
    Runtime,
};

#[test]
fn env_layout_overrides_discovery() {
    let allowed = weft_topology::process_allowed_cpus().expect("allowed");
    let first = allowed.first().expect("a CPU");
    std::env::set_var(DOMAINS_ENV, first.to_string());
    let t = Topology::discover().expect("env layout");
    assert_eq!(t.source(), LayoutSource::Environment);
    assert_eq!(t.domains()[0].cpus(), &CpuSet::single(first));
    let rt = Runtime::builder().build().expect("runtime from env layout");
    assert_eq!(rt.domains().len(), 1);
    drop(rt);

    std::env::set_var(DOMAINS_ENV, "0-3;oops");
    let err = Topology::discover().unwrap_err();
    assert!(matches!(err, TopologyError::BadCpuList { .. }));
    let text = err.to_string();
    assert!(
        text.contains(DOMAINS_ENV) && text.contains("`oops`"),
        "{text}"
    );

    std::env::set_var(DOMAINS_ENV, "60000");
    let err = Topology::discover().unwrap_err();
    assert!(
        matches!(err, TopologyError::CpuNotAllowed { cpu: 60000, .. }),
        "{err}"
    );

    // An explicit layout in code wins over the variable.
    let t = Topology::builder().split(1).build().expect("split");
    assert_eq!(t.source(), LayoutSource::Split);
    std::env::remove_var(DOMAINS_ENV);
}
