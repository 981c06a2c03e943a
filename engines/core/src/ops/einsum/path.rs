//! The contraction order of an einsum: the path a caller gives, or the
//! one weft plans (the cheaper of two greedy orders over a heap of the
//! pairs of terms that share a label), and a path's cost as opt_einsum
//! counts it.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};

use super::Spec;
use crate::tensor::TensorError;

impl Spec {
    /// The contraction order: the given path, or the greedy one.
    pub(super) fn order(&self, extents: &BTreeMap<char, usize>) -> Cow<'_, [(usize, usize)]> {
        match &self.path {
            Some(path) => Cow::Borrowed(path),
            None => Cow::Owned(self.planned(extents)),
        }
    }

    /// The cheaper (in FLOPs, as [`Spec::path_cost`] counts them) of the
    /// two greedy orders: by memory removed (opt_einsum's) and by the
    /// smallest result. Neither is the better on every network (on the
    /// einsum benchmark's language models each wins one of three).
    fn planned(&self, extents: &BTreeMap<char, usize>) -> Vec<(usize, usize)> {
        // Two operands have one order (one, none): nothing to plan.
        if self.inputs.len() < 3 {
            return (self.inputs.len() == 2)
                .then_some((0, 1))
                .into_iter()
                .collect();
        }
        let removed = self.greedy(extents, false);
        let smallest = self.greedy(extents, true);
        if self.cost_along(extents, &smallest).0 < self.cost_along(extents, &removed).0 {
            smallest
        } else {
            removed
        }
    }

    /// The contraction order weft plans for operands of `shapes` when no
    /// path is given, as a path ([`Spec::with_path`]'s form): the cheaper
    /// of two greedy orders (by memory removed, as opt_einsum's `greedy`,
    /// and by the smallest result).
    ///
    /// # Errors
    ///
    /// As [`Spec::extents`].
    pub fn greedy_path(&self, shapes: &[&[usize]]) -> Result<Vec<(usize, usize)>, TensorError> {
        Ok(self.planned(&self.extents(shapes.iter().copied())?))
    }

    /// The cost of contracting operands of `shapes` along `path`, counted
    /// as opt_einsum counts it: per step, the product of the extents of
    /// every label of the two terms, twice when a label is summed; and the
    /// largest term made, in elements. Saturating.
    ///
    /// # Errors
    ///
    /// As [`Spec::extents`] and [`Spec::with_path`].
    pub fn path_cost(
        &self,
        shapes: &[&[usize]],
        path: &[(usize, usize)],
    ) -> Result<(u128, u128), TensorError> {
        let extents = self.extents(shapes.iter().copied())?;
        let path = self.with_path(path)?.path.unwrap_or_default();
        Ok(self.cost_along(&extents, &path))
    }

    /// [`Spec::path_cost`] of a path known to fit.
    fn cost_along(&self, extents: &BTreeMap<char, usize>, path: &[(usize, usize)]) -> (u128, u128) {
        let size = |labels: &[char]| {
            labels
                .iter()
                .fold(1u128, |n, c| n.saturating_mul(extents[c] as u128))
        };
        let mut terms: Vec<Vec<char>> = self.inputs.to_vec();
        let (mut flops, mut largest) = (0u128, 0u128);
        for &(i, j) in path.iter() {
            let b = terms.remove(j);
            let a = terms.remove(i);
            let mut keep = self.needed(&terms, &a, &b);
            dedup(&mut keep);
            let mut all = a.clone();
            all.extend(b.iter().filter(|c| !a.contains(c)));
            dedup(&mut all);
            let summed = all.iter().any(|c| !keep.contains(c));
            let step = size(&all).saturating_mul(1 + u128::from(summed));
            flops = flops.saturating_add(step);
            largest = largest.max(size(&keep));
            terms.push(keep);
        }
        (flops, largest)
    }

    /// A greedy order: repeatedly the pair of terms that share a label
    /// whose contraction removes the most memory (its result's size less
    /// its two terms', the smaller result on a tie, then the earlier pair:
    /// opt_einsum's `greedy`), or, `by_size`, whose result is smallest
    /// (the more memory removed on a tie); then, once no two terms share a label,
    /// outer products, the two smallest terms first. Pairs are kept in a
    /// heap, each refreshed when it comes up (a pair's cost only falls as
    /// other contractions end its labels' other uses), so a network of
    /// hundreds of terms plans in milliseconds.
    fn greedy(&self, extents: &BTreeMap<char, usize>, by_size: bool) -> Vec<(usize, usize)> {
        let n = self.inputs.len();
        let size = |labels: &[char]| {
            labels
                .iter()
                .fold(1u128, |n, c| n.saturating_mul(extents[c] as u128))
        };
        // Terms by id (operands, then results), whether each is alive, how
        // many live terms hold each label, and which live terms do.
        let mut terms: Vec<Vec<char>> = self.inputs.to_vec();
        let mut alive = vec![true; n];
        let mut holders: HashMap<char, Vec<usize>> = HashMap::new();
        for (id, labels) in terms.iter().enumerate() {
            for &c in labels {
                let list = holders.entry(c).or_default();
                if list.last() != Some(&id) {
                    list.push(id);
                }
            }
        }
        // The labels `a` and `b` keep: in the output or in a third term.
        let kept =
            |terms: &[Vec<char>], holders: &HashMap<char, Vec<usize>>, a: usize, b: usize| {
                let mut keep: Vec<char> = Vec::new();
                for &c in terms[a].iter().chain(&terms[b]) {
                    if keep.contains(&c) {
                        continue;
                    }
                    let others = holders[&c].iter().any(|&t| t != a && t != b);
                    if others || self.output.contains(&c) {
                        keep.push(c);
                    }
                }
                keep
            };
        // (cost, result size, a, b): the least first.
        type Candidate = Reverse<(i128, u128, usize, usize)>;
        let cost =
            |terms: &[Vec<char>], holders: &HashMap<char, Vec<usize>>, a: usize, b: usize| {
                let out = size(&kept(terms, holders, a, b));
                let wide = |n: u128| i128::try_from(n).unwrap_or(i128::MAX);
                let removed = wide(out)
                    .saturating_sub(wide(size(&terms[a])))
                    .saturating_sub(wide(size(&terms[b])));
                if by_size {
                    (
                        wide(out),
                        u128::try_from(removed.saturating_add(i128::MAX / 2)).unwrap_or(0),
                    )
                } else {
                    (removed, out)
                }
            };
        let mut heap: BinaryHeap<Candidate> = BinaryHeap::new();
        let mut seen: std::collections::HashSet<(usize, usize)> = Default::default();
        let push_pairs_of =
            |id: usize,
             terms: &[Vec<char>],
             holders: &HashMap<char, Vec<usize>>,
             heap: &mut BinaryHeap<Candidate>,
             seen: &mut std::collections::HashSet<(usize, usize)>| {
                for c in &terms[id] {
                    for &other in &holders[c] {
                        let pair = (other.min(id), other.max(id));
                        if other != id && seen.insert(pair) {
                            let (removed, out) = cost(terms, holders, pair.0, pair.1);
                            heap.push(Reverse((removed, out, pair.0, pair.1)));
                        }
                    }
                }
            };
        for id in 0..n {
            push_pairs_of(id, &terms, &holders, &mut heap, &mut seen);
        }
        // The live ids in list order: a pair's places in the path.
        let mut list: Vec<usize> = (0..n).collect();
        let mut path = Vec::with_capacity(n.saturating_sub(1));
        let mut contract = |a: usize,
                            b: usize,
                            terms: &mut Vec<Vec<char>>,
                            alive: &mut Vec<bool>,
                            holders: &mut HashMap<char, Vec<usize>>|
         -> usize {
            let keep = kept(terms, holders, a, b);
            let i = list.iter().position(|&t| t == a).expect("a live term");
            let j = list.iter().position(|&t| t == b).expect("a live term");
            path.push((i.min(j), i.max(j)));
            list.remove(i.max(j));
            list.remove(i.min(j));
            let id = terms.len();
            list.push(id);
            for t in [a, b] {
                alive[t] = false;
                for c in terms[t].clone() {
                    if let Some(h) = holders.get_mut(&c) {
                        h.retain(|&x| x != t);
                    }
                }
            }
            for &c in &keep {
                holders.entry(c).or_default().push(id);
            }
            terms.push(keep);
            alive.push(true);
            id
        };
        while let Some(Reverse((removed, out, a, b))) = heap.pop() {
            if !(alive[a] && alive[b]) {
                continue;
            }
            let now = cost(&terms, &holders, a, b);
            if now != (removed, out) {
                heap.push(Reverse((now.0, now.1, a, b)));
                continue;
            }
            let id = contract(a, b, &mut terms, &mut alive, &mut holders);
            push_pairs_of(id, &terms, &holders, &mut heap, &mut seen);
        }
        // What shares no label: outer products, the smallest first.
        loop {
            let mut live: Vec<usize> = (0..terms.len()).filter(|&t| alive[t]).collect();
            if live.len() < 2 {
                break;
            }
            live.sort_by_key(|&t| (size(&terms[t]), t));
            contract(live[0], live[1], &mut terms, &mut alive, &mut holders);
        }
        path
    }
}

/// `labels` with each label once, first places kept.
pub(super) fn dedup(labels: &mut Vec<char>) {
    let mut seen = Vec::with_capacity(labels.len());
    labels.retain(|c| {
        let new = !seen.contains(c);
        seen.push(*c);
        new
    });
}
