//! One binary step of the lowering: a [`Term`] (a value and its labels),
//! and how two terms are contracted through one batched GEMM
//! ([`Arrangement`]: the order the product lays its result out in).

use super::Contraction;
use crate::layout::{matrix_strides, row_major, View};

impl<B: Contraction> AsRef<[char]> for Term<B> {
    fn as_ref(&self) -> &[char] {
        &self.labels
    }
}

/// An intermediate: a value and one label per axis, all distinct.
pub(super) struct Term<B: Contraction> {
    pub(super) labels: Vec<char>,
    value: B::Value,
}

impl<B: Contraction> Term<B> {
    fn extent(&self, c: &char) -> usize {
        B::shape(&self.value)[self.labels.iter().position(|l| l == c).expect("label")]
    }

    /// Takes the diagonal over repeated labels (`ii` → `i`).
    pub(super) fn diagonal(
        backend: &mut B,
        labels: &[char],
        value: B::Value,
    ) -> Result<Self, B::Error> {
        let mut unique: Vec<char> = Vec::new();
        for &c in labels {
            if !unique.contains(&c) {
                unique.push(c);
            }
        }
        if unique.len() == labels.len() {
            return Ok(Term {
                labels: unique,
                value,
            });
        }
        // A strided view: each unique label walks the sum of the strides
        // of the positions it labels.
        let shape = B::shape(&value);
        let own = row_major(shape);
        let mut walk = View {
            shape: Vec::new(),
            strides: Vec::new(),
            base: 0,
        };
        for c in &unique {
            let positions: Vec<usize> = (0..labels.len()).filter(|&i| labels[i] == *c).collect();
            walk.shape.push(shape[positions[0]]);
            walk.strides.push(
                positions
                    .iter()
                    .fold(0isize, |s, &i| s.saturating_add(own[i])),
            );
        }
        Ok(Term {
            labels: unique,
            value: backend.view(value, &walk)?,
        })
    }

    /// Sums out the labels not in `keep`.
    fn sum_out(self, backend: &mut B, keep: &[char]) -> Result<Self, B::Error> {
        let axes: Vec<usize> = (0..self.labels.len())
            .filter(|&i| !keep.contains(&self.labels[i]))
            .collect();
        if axes.is_empty() {
            return Ok(self);
        }
        let labels = self
            .labels
            .iter()
            .copied()
            .filter(|c| keep.contains(c))
            .collect();
        Ok(Term {
            labels,
            value: backend.sum(self.value, &axes)?,
        })
    }

    /// Where each label of `order` (a permutation of the labels) is now:
    /// the permutation to it, `None` when it is the term's own order.
    fn places(&self, order: &[char]) -> Option<Vec<usize>> {
        let place: Vec<usize> = order
            .iter()
            .map(|c| {
                self.labels
                    .iter()
                    .position(|l| l == c)
                    .expect("a label of the term")
            })
            .collect();
        (!place.iter().enumerate().all(|(i, &p)| i == p)).then_some(place)
    }

    /// Reorders axes to `order` (a permutation of the labels).
    fn permute(self, backend: &mut B, order: &[char]) -> Result<Self, B::Error> {
        let Some(perm) = self.places(order) else {
            return Ok(self);
        };
        Ok(Term {
            labels: order.to_vec(),
            value: backend.permute(self.value, &perm)?,
        })
    }

    /// Contracts two terms into one through one batched GEMM, summing
    /// labels not in `keep`. The result's labels are `batch, a-only,
    /// b-only` (each in its operand's order), except for the last product
    /// (`output` given), which lays its result out as the output where one
    /// product can ([`Arrangement::fit`]), so no permutation follows it.
    pub(super) fn contract(
        backend: &mut B,
        a: Self,
        b: Self,
        keep: &[char],
        output: Option<&[char]>,
    ) -> Result<Self, B::Error> {
        // Labels only one side has and nobody needs are summed first.
        let a = a.sum_out(backend, &[keep, &b.labels[..]].concat())?;
        let b = b.sum_out(backend, &[keep, &a.labels[..]].concat())?;
        let shared: Vec<char> = a
            .labels
            .iter()
            .copied()
            .filter(|c| b.labels.contains(c))
            .collect();
        let (batch, inner): (Vec<char>, Vec<char>) =
            shared.iter().copied().partition(|c| keep.contains(c));
        let only = |t: &Self| -> Vec<char> {
            t.labels
                .iter()
                .copied()
                .filter(|c| !shared.contains(c))
                .collect()
        };
        let (a_only, b_only) = (only(&a), only(&b));
        let extent = |c: &char| {
            if a.labels.contains(c) {
                a.extent(c)
            } else {
                b.extent(c)
            }
        };
        // Saturating: an intermediate past `usize` is refused by the
        // backend (`TooLarge`), not here.
        let size = |ls: &[char]| ls.iter().map(extent).fold(1usize, usize::saturating_mul);
        let plain = Arrangement {
            batch,
            rows: a_only,
            cols: b_only,
            swapped: false,
        };
        // Elements an arrangement's permutations copy: each operand's,
        // unless the product reads it in place, and the result's, unless it
        // is the output already.
        let copies = |arr: &Arrangement| {
            let [left, right] = arr.operands(&a, &b);
            let [l_order, r_order] = arr.orders(&inner, [left, right]);
            let nb = size(&arr.batch);
            let own = |t: &Self| if t.holds(&arr.batch) { nb } else { 1 };
            let labels = [&arr.batch[..], &arr.rows, &arr.cols].concat();
            let result = match output {
                Some(out) if out != labels => nb
                    .saturating_mul(size(&arr.rows))
                    .saturating_mul(size(&arr.cols)),
                _ => 0,
            };
            left.copied(&l_order, [own(left), size(&arr.rows), size(&inner)])
                .saturating_add(right.copied(&r_order, [own(right), size(&inner), size(&arr.cols)]))
                .saturating_add(result)
        };
        let arrangement = output
            .and_then(|out| Arrangement::fit(out, &plain))
            .filter(|fit| {
                fit.batch == plain.batch
                    || size(&fit.rows).saturating_mul(size(&fit.cols)) >= BROADCAST_MIN
            })
            .filter(|fit| copies(fit) < copies(&plain))
            .unwrap_or(plain);
        let dims = [
            size(&arrangement.batch),
            size(&arrangement.rows),
            size(&inner),
            size(&arrangement.cols),
        ];
        let shape: Vec<usize> = [&arrangement.batch[..], &arrangement.rows, &arrangement.cols]
            .concat()
            .iter()
            .map(extent)
            .collect();
        let (left, right) = if arrangement.swapped { (b, a) } else { (a, b) };
        let [l_order, r_order] = arrangement.orders(&inner, [&left, &right]);
        let batched = [
            left.holds(&arrangement.batch),
            right.holds(&arrangement.batch),
        ];
        let left = left.permute(backend, &l_order)?;
        let right = right.permute(backend, &r_order)?;
        let Arrangement {
            batch, rows, cols, ..
        } = arrangement;
        Ok(Term {
            labels: [&batch[..], &rows, &cols].concat(),
            value: backend.batched_matmul(&left.value, &right.value, dims, batched, shape)?,
        })
    }

    /// Whether the term has every one of `batch`'s labels (else it has
    /// none of them and is broadcast over them).
    fn holds(&self, batch: &[char]) -> bool {
        batch.iter().all(|c| self.labels.contains(c))
    }

    /// Elements that permuting the term into `order` copies: none when
    /// the order is its own, or when a product reads it so in place as a
    /// batch of matrices of `groups` ([`matrix_strides`]).
    fn copied(&self, order: &[char], groups: [usize; 3]) -> usize {
        let Some(place) = self.places(order) else {
            return 0;
        };
        let shape = B::shape(&self.value);
        let own = row_major(shape);
        let extents: Vec<usize> = place.iter().map(|&p| shape[p]).collect();
        let strides: Vec<isize> = place.iter().map(|&p| own[p]).collect();
        if matrix_strides(&extents, &strides, groups).is_some() {
            0
        } else {
            shape.iter().fold(1, |n, &e| n.saturating_mul(e))
        }
    }

    /// Sums what the output does not name and orders the rest like it.
    pub(super) fn finish(self, backend: &mut B, output: &[char]) -> Result<B::Value, B::Error> {
        Ok(self
            .sum_out(backend, output)?
            .permute(backend, output)?
            .value)
    }
}

/// A broadcast product (one operand read by every batch) is chosen for the
/// last step only when each of its products makes at least this many
/// elements: below that, the calls cost more than the permutation of the
/// result they save.
const BROADCAST_MIN: usize = 256;

/// How one binary product lays out its result: `[batch, rows, cols]`, the
/// GEMM's left operand giving `rows` (the first term's own labels, or the
/// second's when `swapped`) and its right operand `cols`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Arrangement {
    /// Labels both terms keep; or, in a broadcast product, the right
    /// operand's own leading labels, the left operand being read once per
    /// batch.
    pub(super) batch: Vec<char>,
    pub(super) rows: Vec<char>,
    pub(super) cols: Vec<char>,
    pub(super) swapped: bool,
}

impl Arrangement {
    /// The GEMM's left and right operands.
    fn operands<'t, T>(&self, a: &'t T, b: &'t T) -> [&'t T; 2] {
        if self.swapped {
            [b, a]
        } else {
            [a, b]
        }
    }

    /// The orders the left and right operands are permuted into:
    /// `[batch, rows, inner]` and `[batch, inner, cols]`, without the batch
    /// labels on an operand broadcast over them.
    fn orders<B: Contraction>(
        &self,
        inner: &[char],
        [left, right]: [&Term<B>; 2],
    ) -> [Vec<char>; 2] {
        let lead = |t: &Term<B>| {
            if t.holds(&self.batch) {
                &self.batch[..]
            } else {
                &[][..]
            }
        };
        [
            [lead(left), &self.rows, inner].concat(),
            [lead(right), inner, &self.cols].concat(),
        ]
    }

    /// The arrangement whose result is `output` itself, for the last
    /// product, whose `plain` arrangement holds its batch labels and each
    /// term's own labels (all of them in `output`). The output must read as
    /// the batch labels, then one term's own labels, then the other's
    /// (either run may be empty); or, with no shared label kept, as one
    /// term's own labels, the other's, and the first's again — the first
    /// run then becomes a batch over which the other term is broadcast.
    /// `None` when the output interleaves them otherwise.
    pub(super) fn fit(output: &[char], plain: &Arrangement) -> Option<Arrangement> {
        // Which of batch (0), the first term (1) or the second (2) each
        // output label belongs to, and the output cut into runs of one.
        let side = |c: &char| {
            if plain.rows.contains(c) {
                1
            } else if plain.cols.contains(c) {
                2
            } else {
                0
            }
        };
        let mut runs: Vec<(u8, &[char])> = Vec::new();
        let mut start = 0;
        for k in 1..=output.len() {
            if k == output.len() || side(&output[k]) != side(&output[start]) {
                runs.push((side(&output[start]), &output[start..k]));
                start = k;
            }
        }
        let (batch, rest): (&[char], &[(u8, &[char])]) = match runs.as_slice() {
            [(0, batch), rest @ ..] if batch.len() == plain.batch.len() && rest.len() <= 2 => {
                (batch, rest)
            }
            _ if !plain.batch.is_empty() => return None,
            rest if rest.len() <= 2 => (&[], rest),
            // Runs alternate, so the third is the first's term again.
            [(_, batch), rest @ ..] if rest.len() == 2 => (batch, rest),
            _ => return None,
        };
        let run = |s: u8| rest.iter().find(|r| r.0 == s).map_or(&[][..], |r| r.1);
        let swapped = rest.len() == 2 && rest[0].0 == 2;
        let (rows, cols) = if swapped {
            (run(2), run(1))
        } else {
            (run(1), run(2))
        };
        Some(Arrangement {
            batch: batch.to_vec(),
            rows: rows.to_vec(),
            cols: cols.to_vec(),
            swapped,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Arrangement;

    fn labels(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    fn plain(batch: &str, a_only: &str, b_only: &str) -> Arrangement {
        Arrangement {
            batch: labels(batch),
            rows: labels(a_only),
            cols: labels(b_only),
            swapped: false,
        }
    }

    fn fit(output: &str, plain: &Arrangement) -> Option<(String, String, String, bool)> {
        Arrangement::fit(&labels(output), plain).map(|f| {
            let s = |v: Vec<char>| v.into_iter().collect::<String>();
            (s(f.batch), s(f.rows), s(f.cols), f.swapped)
        })
    }

    fn some(
        batch: &str,
        rows: &str,
        cols: &str,
        swapped: bool,
    ) -> Option<(String, String, String, bool)> {
        Some((batch.into(), rows.into(), cols.into(), swapped))
    }

    #[test]
    fn the_last_product_takes_the_output_order_where_one_product_can() {
        // Each side's own labels in the output's order, the second's first
        // when the output starts with them.
        assert_eq!(fit("ik", &plain("", "i", "k")), some("", "i", "k", false));
        assert_eq!(fit("ki", &plain("", "i", "k")), some("", "k", "i", true));
        assert_eq!(
            fit("jiba", &plain("", "ij", "ab")),
            some("", "ji", "ba", false)
        );
        assert_eq!(fit("b", &plain("", "", "b")), some("", "", "b", false));
        assert_eq!(fit("", &plain("", "", "")), some("", "", "", false));
        // Shared labels kept lead, in the output's order.
        assert_eq!(
            fit("cbki", &plain("bc", "i", "k")),
            some("cb", "k", "i", true)
        );
        // A batch label not leading, or the sides interleaved: no fit.
        assert_eq!(fit("bki", &plain("bc", "i", "k")), None);
        assert_eq!(fit("kbi", &plain("b", "i", "k")), None);
        assert_eq!(fit("ajbk", &plain("", "ab", "jk")), None);
        // One side's labels around the other's, no shared label kept: the
        // leading run is a batch, the other operand broadcast over it.
        assert_eq!(
            fit("asnuz", &plain("", "auz", "ns")),
            some("a", "sn", "uz", true)
        );
        assert_eq!(fit("acb", &plain("", "ab", "c")), some("a", "c", "b", true));
        assert_eq!(
            fit("kab", &plain("", "a", "kb")),
            some("k", "a", "b", false)
        );
        // … but not beside a shared batch.
        assert_eq!(fit("basnuz", &plain("b", "auz", "ns")), None);
    }
}
