//! `Topology`: the CPU domains weft runs on, discovered or laid out by hand.

use std::fmt;
use std::path::PathBuf;

use crate::affinity::process_allowed_cpus;
use crate::error::TopologyError;
use crate::numa;
use crate::CpuSet;

/// The environment variable that overrides NUMA discovery with an explicit
/// layout: domains separated by `;`, each a cpulist (`"0-3;4-7"`).
pub const DOMAINS_ENV: &str = "WEFT_CPU_DOMAINS";

/// Where a [`Topology`]'s layout came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutSource {
    /// One domain per NUMA node with allowed CPUs.
    Numa,
    /// No NUMA information: one domain holding every allowed CPU.
    Flat,
    /// Sets given to [`TopologyBuilder::domains`] or [`TopologyBuilder::cpulists`].
    Explicit,
    /// The [`DOMAINS_ENV`] environment variable.
    Environment,
    /// The allowed CPUs split evenly by [`TopologyBuilder::split`].
    Split,
}

/// One CPU domain: the CPUs one actor and its pool own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuDomain {
    index: usize,
    cpus: CpuSet,
    numa_node: Option<usize>,
}

impl CpuDomain {
    /// Position of the domain in its topology, from 0.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The domain's CPUs; never empty.
    pub fn cpus(&self) -> &CpuSet {
        &self.cpus
    }

    /// The NUMA node the domain's CPUs belong to: the node it was
    /// discovered from, or, for an explicit layout, the node whose CPUs
    /// hold all of the domain's (`None` when they span nodes or the
    /// machine does not say).
    pub fn numa_node(&self) -> Option<usize> {
        self.numa_node
    }
}

/// The CPU domains of this process: disjoint, non-empty sets of allowed CPUs.
///
/// ```
/// use weft_topology::{CpuSet, Topology};
///
/// let topology = Topology::discover()?;
/// assert!(!topology.domains().is_empty());
/// for domain in topology.domains() {
///     assert!(domain.cpus().is_subset(topology.allowed()));
/// }
/// # Ok::<(), weft_topology::TopologyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    allowed: CpuSet,
    domains: Vec<CpuDomain>,
    source: LayoutSource,
    share: Option<Share>,
}

/// The part of its CPUs a process took because other processes were given
/// the same ones ([`TopologyBuilder::share`]): MPI ranks of one node that
/// their launcher did not bind apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Share {
    /// This process's part, from 0.
    pub part: usize,
    /// How many processes were given the same CPUs.
    pub parts: usize,
    /// The CPUs they were given (the process's affinity mask); this
    /// process's part of them is [`Topology::allowed`].
    pub of: CpuSet,
}

impl Topology {
    /// Discovers this machine's domains: the [`DOMAINS_ENV`] layout if that
    /// variable is set, else one domain per NUMA node of the allowed CPUs.
    ///
    /// # Errors
    ///
    /// See [`TopologyBuilder::build`].
    pub fn discover() -> Result<Topology, TopologyError> {
        Topology::builder().build()
    }

    /// A builder for an explicit or test layout.
    pub fn builder() -> TopologyBuilder {
        TopologyBuilder::default()
    }

    /// The domains, in index order.
    pub fn domains(&self) -> &[CpuDomain] {
        &self.domains
    }

    /// Domain `index`, if it exists.
    pub fn domain(&self, index: usize) -> Option<&CpuDomain> {
        self.domains.get(index)
    }

    /// The CPUs this process may run on.
    pub fn allowed(&self) -> &CpuSet {
        &self.allowed
    }

    /// Where the layout came from.
    pub fn source(&self) -> LayoutSource {
        self.source
    }

    /// The part of its CPUs this process took, when others were given the
    /// same ones ([`TopologyBuilder::share`]); `None` when it took them all.
    pub fn share(&self) -> Option<&Share> {
        self.share.as_ref()
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} CPU domain(s) over allowed CPUs {} ({:?})",
            self.domains.len(),
            self.allowed,
            self.source
        )?;
        if let Some(share) = &self.share {
            write!(
                f,
                ", part {} of {} of CPUs {}",
                share.part, share.parts, share.of
            )?;
        }
        for d in &self.domains {
            write!(
                f,
                "\n  domain {}: CPUs {} ({} CPUs)",
                d.index,
                d.cpus,
                d.cpus.len()
            )?;
            if let Some(node) = d.numa_node {
                write!(f, ", NUMA node {node}")?;
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone)]
enum Layout {
    Discover,
    Sets(Vec<CpuSet>),
    Text(String),
    Split(usize),
}

/// Builds a [`Topology`] from discovery, explicit sets, a layout string, or a
/// split of the allowed CPUs.
///
/// ```
/// use weft_topology::{CpuSet, Topology};
///
/// let allowed = CpuSet::range(0..8);
/// let topology = Topology::builder().allowed(allowed).cpulists("0-3;4-7").build()?;
/// assert_eq!(topology.domains()[1].cpus().to_string(), "4-7");
///
/// let err = Topology::builder()
///     .allowed(CpuSet::range(0..8))
///     .cpulists("0-3;3-7")
///     .build()
///     .unwrap_err();
/// assert_eq!(err.to_string(), "CPU 3 is in both domain 0 and domain 1");
/// # Ok::<(), weft_topology::TopologyError>(())
/// ```
#[derive(Debug, Clone)]
pub struct TopologyBuilder {
    sysfs_root: PathBuf,
    allowed: Option<CpuSet>,
    layout: Layout,
    read_env: bool,
    share: Option<(usize, usize)>,
}

impl Default for TopologyBuilder {
    fn default() -> Self {
        TopologyBuilder {
            sysfs_root: PathBuf::from("/sys"),
            allowed: None,
            layout: Layout::Discover,
            read_env: true,
            share: None,
        }
    }
}

impl TopologyBuilder {
    /// Reads NUMA information under `root` instead of `/sys` (tests use a
    /// fake tree).
    pub fn sysfs_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.sysfs_root = root.into();
        self
    }

    /// Uses `allowed` instead of the process's affinity mask.
    pub fn allowed(mut self, allowed: CpuSet) -> Self {
        self.allowed = Some(allowed);
        self
    }

    /// One domain per set, in order.
    pub fn domains(mut self, sets: impl IntoIterator<Item = CpuSet>) -> Self {
        self.layout = Layout::Sets(sets.into_iter().collect());
        self
    }

    /// Domains from a layout string in the [`DOMAINS_ENV`] format (`"0-3;4-7"`).
    pub fn cpulists(mut self, layout: &str) -> Self {
        self.layout = Layout::Text(layout.to_owned());
        self
    }

    /// Splits the allowed CPUs, in order, into `n` domains of nearly equal
    /// size, so multi-domain behaviour can be tried on a small machine.
    pub fn split(mut self, n: usize) -> Self {
        self.layout = Layout::Split(n);
        self
    }

    /// Takes part `part` of `parts` of the allowed CPUs, for a discovered
    /// or split layout: the share of one of `parts` processes given the
    /// same CPUs (MPI ranks of one node that their launcher did not bind
    /// apart), so that their domains do not pin onto the same cores. The
    /// parts are nearly equal runs of the CPUs in order; with more parts
    /// than CPUs, part `p` is CPU `p mod n`, each CPU shared as evenly as
    /// it can be. An explicit layout ([`TopologyBuilder::domains`],
    /// [`TopologyBuilder::cpulists`], [`DOMAINS_ENV`]) is kept as given;
    /// `parts` of 0 or 1, or a `part` not below `parts`, shares nothing.
    pub fn share(mut self, part: usize, parts: usize) -> Self {
        self.share = (parts > 1 && part < parts).then_some((part, parts));
        self
    }

    /// Ignores [`DOMAINS_ENV`] during discovery.
    pub fn ignore_env(mut self) -> Self {
        self.read_env = false;
        self
    }

    /// Builds and validates the layout.
    ///
    /// # Errors
    ///
    /// - [`TopologyError::NoDomains`], [`TopologyError::EmptyDomain`],
    ///   [`TopologyError::CpuNotAllowed`], [`TopologyError::CpuInTwoDomains`]
    ///   for an explicit layout that cannot be used;
    /// - [`TopologyError::BadCpuList`] for a layout string or sysfs file that
    ///   does not parse; [`TopologyError::BadSplit`] for a split into zero or
    ///   more domains than CPUs;
    /// - [`TopologyError::NoAllowedCpus`], [`TopologyError::Affinity`] and
    ///   [`TopologyError::Io`] when the machine cannot be read.
    pub fn build(self) -> Result<Topology, TopologyError> {
        let allowed = match self.allowed {
            Some(set) => set,
            None => process_allowed_cpus()?,
        };
        if allowed.is_empty() {
            return Err(TopologyError::NoAllowedCpus);
        }
        let explicit = |allowed, sets, source| {
            let mut topology = explicit(allowed, sets, source)?;
            annotate_nodes(&mut topology, &self.sysfs_root);
            Ok(topology)
        };
        let env = match (&self.layout, self.read_env) {
            (Layout::Discover, true) => std::env::var(DOMAINS_ENV)
                .ok()
                .filter(|v| !v.trim().is_empty()),
            _ => None,
        };
        // A share narrows what discovery or a split lays out.
        let (allowed, share) = match (&self.layout, &env, self.share) {
            (Layout::Discover | Layout::Split(_), None, Some((part, parts))) => {
                let mine = part_of(&allowed, part, parts);
                let share = Share {
                    part,
                    parts,
                    of: allowed,
                };
                (mine, Some(share))
            }
            _ => (allowed, None),
        };
        let mut topology = match (self.layout, env) {
            (Layout::Sets(sets), _) => explicit(allowed, sets, LayoutSource::Explicit),
            (Layout::Text(text), _) => {
                let sets = parse_layout(&text, "layout string")?;
                explicit(allowed, sets, LayoutSource::Explicit)
            }
            (Layout::Split(n), _) => {
                let sets = split_sets(&allowed, n)?;
                explicit(allowed, sets, LayoutSource::Split)
            }
            (Layout::Discover, Some(text)) => {
                let sets = parse_layout(&text, DOMAINS_ENV)?;
                explicit(allowed, sets, LayoutSource::Environment)
            }
            (Layout::Discover, None) => discover(allowed, &self.sysfs_root),
        }?;
        topology.share = share;
        Ok(topology)
    }
}

/// Parses `"0-3;4-7"` into one set per `;`-separated item.
fn parse_layout(text: &str, origin: &str) -> Result<Vec<CpuSet>, TopologyError> {
    text.trim()
        .split(';')
        .map(|item| {
            CpuSet::parse(item).map_err(|source| TopologyError::BadCpuList {
                origin: format!("{origin} `{text}`"),
                source,
            })
        })
        .collect()
}

fn explicit(
    allowed: CpuSet,
    sets: Vec<CpuSet>,
    source: LayoutSource,
) -> Result<Topology, TopologyError> {
    if sets.is_empty() {
        return Err(TopologyError::NoDomains);
    }
    let mut owner: Vec<(usize, usize)> = Vec::new();
    for (index, set) in sets.iter().enumerate() {
        if set.is_empty() {
            return Err(TopologyError::EmptyDomain { index });
        }
        if let Some(cpu) = set.difference(&allowed).first() {
            return Err(TopologyError::CpuNotAllowed {
                cpu,
                domain: index,
                allowed: allowed.clone(),
            });
        }
        for cpu in set {
            if let Some(&(_, first)) = owner.iter().find(|(c, _)| *c == cpu) {
                return Err(TopologyError::CpuInTwoDomains {
                    cpu,
                    first,
                    second: index,
                });
            }
            owner.push((cpu, index));
        }
    }
    let domains = sets
        .into_iter()
        .enumerate()
        .map(|(index, cpus)| CpuDomain {
            index,
            cpus,
            numa_node: None,
        })
        .collect();
    Ok(Topology {
        allowed,
        domains,
        source,
        share: None,
    })
}

/// Gives each domain of an explicit layout the NUMA node that holds all its
/// CPUs, where sysfs says. Best effort: a layout the caller chose does not
/// fail over what sysfs lacks.
fn annotate_nodes(topology: &mut Topology, sysfs_root: &std::path::Path) {
    let Ok(Some(nodes)) = numa::read_nodes(sysfs_root) else {
        return;
    };
    for domain in &mut topology.domains {
        domain.numa_node = nodes
            .iter()
            .find(|node| domain.cpus.difference(&node.cpus).is_empty())
            .map(|node| node.id);
    }
}

/// Part `part` of `parts` of `allowed` ([`TopologyBuilder::share`]).
fn part_of(allowed: &CpuSet, part: usize, parts: usize) -> CpuSet {
    let n = allowed.len();
    match split_sets(allowed, parts) {
        Ok(mut sets) => sets.swap_remove(part),
        // More parts than CPUs: one CPU each, in turn.
        Err(_) => allowed.iter().nth(part % n.max(1)).into_iter().collect(),
    }
}

fn split_sets(allowed: &CpuSet, n: usize) -> Result<Vec<CpuSet>, TopologyError> {
    let cpus: Vec<usize> = allowed.iter().collect();
    if n == 0 || n > cpus.len() {
        return Err(TopologyError::BadSplit {
            requested: n,
            available: cpus.len(),
        });
    }
    let (base, extra) = (cpus.len() / n, cpus.len() % n);
    let mut rest = &cpus[..];
    let mut sets = Vec::with_capacity(n);
    for i in 0..n {
        let (head, tail) = rest.split_at(base + usize::from(i < extra));
        sets.push(head.iter().copied().collect());
        rest = tail;
    }
    Ok(sets)
}

fn discover(allowed: CpuSet, sysfs_root: &std::path::Path) -> Result<Topology, TopologyError> {
    let usable = match numa::read_online(sysfs_root)? {
        Some(online) if !online.is_disjoint(&allowed) => allowed.intersection(&online),
        _ => allowed.clone(),
    };
    let mut domains = Vec::new();
    for node in numa::read_nodes(sysfs_root)?.unwrap_or_default() {
        let cpus = node.cpus.intersection(&usable);
        if !cpus.is_empty() {
            domains.push(CpuDomain {
                index: domains.len(),
                cpus,
                numa_node: Some(node.id),
            });
        }
    }
    let source = if domains.is_empty() {
        domains.push(CpuDomain {
            index: 0,
            cpus: usable,
            numa_node: None,
        });
        LayoutSource::Flat
    } else {
        LayoutSource::Numa
    };
    Ok(Topology {
        allowed,
        domains,
        source,
        share: None,
    })
}
