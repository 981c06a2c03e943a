//! `CpuSet`: a sorted set of CPU ids, and the kernel's cpulist format with
//! its parse error.

use std::fmt;
use std::str::FromStr;

/// The largest CPU id weft accepts. Linux caps `NR_CPUS` at 8192; the margin
/// keeps a typo such as `0-99999999` from allocating megabytes.
pub const MAX_CPU_ID: usize = 1 << 16;

const BITS: usize = u64::BITS as usize;

/// A sorted set of CPU ids.
///
/// Prints and parses the kernel's cpulist format (`0-3,8,10-11`), the format
/// of `/sys/devices/system/node/node0/cpulist` and of `taskset -c`.
///
/// ```
/// use weft_topology::CpuSet;
///
/// let set: CpuSet = "0-3,8,10-11".parse()?;
/// assert_eq!(set.len(), 7);
/// assert!(set.contains(10));
/// assert_eq!(set.to_string(), "0-3,8,10-11");
/// # Ok::<(), weft_topology::CpuListError>(())
/// ```
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct CpuSet {
    /// Bit `i % 64` of word `i / 64` is CPU `i`. No trailing zero words, so
    /// the derived equality is set equality.
    words: Vec<u64>,
}

impl CpuSet {
    /// The empty set.
    pub const fn new() -> Self {
        CpuSet { words: Vec::new() }
    }

    /// The set `{cpu}`.
    pub fn single(cpu: usize) -> Self {
        let mut set = CpuSet::new();
        set.insert(cpu);
        set
    }

    /// The CPUs `start..end`.
    pub fn range(range: std::ops::Range<usize>) -> Self {
        range.collect()
    }

    /// Parses a cpulist such as `0-3,8,10-11` or `0-15:2` (every second CPU).
    ///
    /// Whitespace around items is ignored; the empty string is the empty set.
    ///
    /// # Errors
    ///
    /// [`CpuListError`] naming the item that is not a CPU id, a range, or a
    /// strided range, or a CPU id above [`MAX_CPU_ID`].
    pub fn parse(text: &str) -> Result<Self, CpuListError> {
        let mut set = CpuSet::new();
        let text = text.trim();
        if text.is_empty() {
            return Ok(set);
        }
        for item in text.split(',') {
            let item = item.trim();
            let bad = |reason: &'static str| CpuListError {
                item: item.to_owned(),
                reason,
            };
            let (range, stride) = match item.split_once(':') {
                Some((range, stride)) => {
                    let stride = parse_id(stride).ok_or_else(|| bad("stride is not a number"))?;
                    if stride == 0 {
                        return Err(bad("stride is zero"));
                    }
                    (range, stride)
                }
                None => (item, 1),
            };
            let (first, last) = match range.split_once('-') {
                Some((a, b)) => (parse_id(a), parse_id(b)),
                None => (parse_id(range), parse_id(range)),
            };
            let (Some(first), Some(last)) = (first, last) else {
                return Err(bad("expected a CPU id or a range `a-b`"));
            };
            if first > last {
                return Err(bad("range runs backwards"));
            }
            if last > MAX_CPU_ID {
                return Err(bad("CPU id is above the supported maximum"));
            }
            for cpu in (first..=last).step_by(stride) {
                set.insert(cpu);
            }
        }
        Ok(set)
    }

    /// Adds `cpu`; returns whether it was new.
    pub fn insert(&mut self, cpu: usize) -> bool {
        let (word, bit) = (cpu / BITS, cpu % BITS);
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        let was = self.words[word] & (1 << bit) != 0;
        self.words[word] |= 1 << bit;
        !was
    }

    /// Removes `cpu`; returns whether it was present.
    pub fn remove(&mut self, cpu: usize) -> bool {
        let present = self.contains(cpu);
        if present {
            self.words[cpu / BITS] &= !(1 << (cpu % BITS));
            self.trim();
        }
        present
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: usize) -> bool {
        self.words
            .get(cpu / BITS)
            .is_some_and(|w| w & (1 << (cpu % BITS)) != 0)
    }

    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set has no CPU.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The lowest CPU id, if any.
    pub fn first(&self) -> Option<usize> {
        self.iter().next()
    }

    /// The highest CPU id, if any.
    pub fn last(&self) -> Option<usize> {
        let word = self.words.len().checked_sub(1)?;
        let top = BITS - 1 - self.words[word].leading_zeros() as usize;
        Some(word * BITS + top)
    }

    /// The CPU ids in increasing order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            words: &self.words,
            word: 0,
            bits: self.words.first().copied().unwrap_or(0),
        }
    }

    /// CPUs in either set.
    pub fn union(&self, other: &CpuSet) -> CpuSet {
        self.zip(other, |a, b| a | b)
    }

    /// CPUs in both sets.
    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        self.zip(other, |a, b| a & b)
    }

    /// CPUs in `self` but not in `other`.
    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        self.zip(other, |a, b| a & !b)
    }

    /// Whether every CPU of `self` is in `other`.
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.difference(other).is_empty()
    }

    /// Whether the sets share no CPU.
    pub fn is_disjoint(&self, other: &CpuSet) -> bool {
        self.intersection(other).is_empty()
    }

    /// The set as 64-bit mask words, CPU `i` at bit `i % 64` of word `i / 64`.
    pub fn as_words(&self) -> &[u64] {
        &self.words
    }

    /// Builds a set from 64-bit mask words laid out as [`CpuSet::as_words`].
    pub fn from_words(words: &[u64]) -> CpuSet {
        let mut set = CpuSet {
            words: words.to_vec(),
        };
        set.trim();
        set
    }

    fn zip(&self, other: &CpuSet, f: impl Fn(u64, u64) -> u64) -> CpuSet {
        let n = self.words.len().max(other.words.len());
        let word = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
        let mut set = CpuSet {
            words: (0..n)
                .map(|i| f(word(&self.words, i), word(&other.words, i)))
                .collect(),
        };
        set.trim();
        set
    }

    fn trim(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }
}

fn parse_id(text: &str) -> Option<usize> {
    let text = text.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// An item of a cpulist that is not a CPU id, a range or a strided range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad cpulist item `{item}`: {reason}")]
pub struct CpuListError {
    /// The offending item, trimmed.
    pub item: String,
    /// Why it was rejected.
    pub reason: &'static str,
}

impl FromStr for CpuSet {
    type Err = CpuListError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CpuSet::parse(s)
    }
}

impl FromIterator<usize> for CpuSet {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        let mut set = CpuSet::new();
        for cpu in iter {
            set.insert(cpu);
        }
        set
    }
}

impl<'a> IntoIterator for &'a CpuSet {
    type Item = usize;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// Prints the cpulist format: maximal runs as `a-b`, single CPUs alone.
impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut cpus = self.iter().peekable();
        let mut first = true;
        while let Some(start) = cpus.next() {
            let mut end = start;
            while cpus.peek() == Some(&(end + 1)) {
                end += 1;
                cpus.next();
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({self})")
    }
}

/// Iterator over the CPU ids of a [`CpuSet`], in increasing order.
#[derive(Debug, Clone)]
pub struct Iter<'a> {
    words: &'a [u64],
    word: usize,
    bits: u64,
}

impl Iterator for Iter<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        loop {
            if self.bits != 0 {
                let bit = self.bits.trailing_zeros() as usize;
                self.bits &= self.bits - 1;
                return Some(self.word * BITS + bit);
            }
            self.word += 1;
            self.bits = *self.words.get(self.word)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_print_round_trip() {
        for text in [
            "",
            "0",
            "0-3",
            "0-3,8,10-11",
            "1,3,5",
            "63-65",
            "0,1023-1025",
        ] {
            let set = CpuSet::parse(text).unwrap();
            assert_eq!(set.to_string(), text);
            assert_eq!(CpuSet::parse(&set.to_string()).unwrap(), set);
        }
    }

    #[test]
    fn parse_normalises() {
        let set = CpuSet::parse(" 3, 0-2 ,2,7-7").unwrap();
        assert_eq!(set.to_string(), "0-3,7");
        assert_eq!(CpuSet::parse("0-7:2").unwrap().to_string(), "0,2,4,6");
        assert_eq!(CpuSet::parse("0-3\n").unwrap().len(), 4);
    }

    #[test]
    fn parse_rejects_with_item() {
        for (text, item) in [
            ("0-", "0-"),
            ("a", "a"),
            ("3-1", "3-1"),
            ("1,,2", ""),
            ("-1", "-1"),
            ("0-3:0", "0-3:0"),
            ("99999999", "99999999"),
            ("+1", "+1"),
        ] {
            let err = CpuSet::parse(text).unwrap_err();
            assert_eq!(err.item, item, "{text}");
            assert!(err.to_string().contains(&format!("`{item}`")), "{err}");
        }
    }

    #[test]
    fn set_operations() {
        let a = CpuSet::range(0..8);
        let b: CpuSet = "4-11".parse().unwrap();
        assert_eq!(a.union(&b).to_string(), "0-11");
        assert_eq!(a.intersection(&b).to_string(), "4-7");
        assert_eq!(a.difference(&b).to_string(), "0-3");
        assert_eq!(b.difference(&a).to_string(), "8-11");
        assert!(CpuSet::range(2..4).is_subset(&a));
        assert!(!b.is_subset(&a));
        assert!(CpuSet::range(0..4).is_disjoint(&b));
        assert_eq!(a.first(), Some(0));
        assert_eq!(b.last(), Some(11));
        assert!(CpuSet::new().first().is_none() && CpuSet::new().last().is_none());
    }

    #[test]
    fn equality_ignores_trailing_words() {
        let mut a = CpuSet::single(200);
        a.remove(200);
        assert_eq!(a, CpuSet::new());
        assert!(a.is_empty());
        let diff = CpuSet::range(0..130).difference(&CpuSet::range(64..130));
        assert_eq!(diff, CpuSet::range(0..64));
        assert_eq!(CpuSet::from_words(&[0b101, 0, 0]), "0,2".parse().unwrap());
    }
}
