//! `einsum` with NumPy subscripts, lowered to diagonals, sums, permutations
//! and batched GEMM, with a greedy pairwise contraction order.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::marker::PhantomData;

use crate::gemm;
use crate::op::Meta;
use crate::reduce::{self, ReduceOp};
use crate::structural::{self, View};
use crate::tensor::{element_count, Tensor, TensorError};

/// A parsed einsum specification: one label list per operand and the
/// output's labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    inputs: Vec<Vec<char>>,
    output: Vec<char>,
    text: String,
}

impl Spec {
    /// Parses `"ij,jk->ik"`; without `->`, the output is every label that
    /// appears once, in alphabetical order (NumPy's implicit mode).
    ///
    /// # Errors
    ///
    /// [`TensorError::Einsum`] naming the bad part of the string.
    pub fn parse(text: &str) -> Result<Spec, TensorError> {
        let bad = |reason: String| TensorError::Einsum {
            spec: text.to_owned(),
            reason,
        };
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let (lhs, rhs) = match compact.split_once("->") {
            Some((l, r)) => (l, Some(r)),
            None => (&compact[..], None),
        };
        let label_list = |s: &str| -> Result<Vec<char>, TensorError> {
            if s.contains("...") {
                return Err(bad("ellipsis (`...`) is not supported".into()));
            }
            s.chars()
                .map(|c| {
                    if c.is_ascii_alphabetic() {
                        Ok(c)
                    } else {
                        Err(bad(format!("`{c}` is not a label (labels are a-z, A-Z)")))
                    }
                })
                .collect()
        };
        let inputs = lhs
            .split(',')
            .map(label_list)
            .collect::<Result<Vec<_>, _>>()?;
        let mut count: BTreeMap<char, usize> = BTreeMap::new();
        for labels in &inputs {
            for &c in labels {
                *count.entry(c).or_default() += 1;
            }
        }
        let output = match rhs {
            Some(r) => {
                let out = label_list(r)?;
                for (i, c) in out.iter().enumerate() {
                    if out[..i].contains(c) {
                        return Err(bad(format!("output label `{c}` appears twice")));
                    }
                    if !count.contains_key(c) {
                        return Err(bad(format!("output label `{c}` is in no operand")));
                    }
                }
                out
            }
            None => count
                .iter()
                .filter(|&(_, &n)| n == 1)
                .map(|(&c, _)| c)
                .collect(),
        };
        Ok(Spec {
            inputs,
            output,
            text: text.to_owned(),
        })
    }

    /// Number of operands.
    pub fn arity(&self) -> usize {
        self.inputs.len()
    }

    /// The output's type and shape for operands of these types and shapes.
    ///
    /// # Errors
    ///
    /// [`TensorError::Einsum`] for a subscript whose length is not its
    /// operand's rank, or a label with two extents;
    /// [`TensorError::MixedDTypes`].
    pub fn infer(&self, inputs: &[Meta]) -> Result<Meta, TensorError> {
        let extents = self.extents(inputs.iter().map(|m| &m.shape[..]))?;
        for m in &inputs[1..] {
            if m.dtype != inputs[0].dtype {
                return Err(TensorError::MixedDTypes {
                    op: "einsum",
                    lhs: inputs[0].dtype,
                    rhs: m.dtype,
                });
            }
        }
        let shape: Vec<usize> = self.output.iter().map(|c| extents[c]).collect();
        if element_count(&shape).is_none() {
            return Err(TensorError::TooLarge { shape });
        }
        Ok(Meta {
            dtype: inputs[0].dtype,
            shape,
        })
    }

    fn extents<'a>(
        &self,
        shapes: impl Iterator<Item = &'a [usize]>,
    ) -> Result<BTreeMap<char, usize>, TensorError> {
        let mut extents = BTreeMap::new();
        for (i, shape) in shapes.enumerate() {
            let labels = &self.inputs[i];
            if labels.len() != shape.len() {
                return Err(TensorError::Einsum {
                    spec: self.text.clone(),
                    reason: format!(
                        "operand {i} has {} axes but subscript `{}`",
                        shape.len(),
                        labels.iter().collect::<String>()
                    ),
                });
            }
            for (&c, &d) in labels.iter().zip(shape) {
                if let Some(&e) = extents.get(&c) {
                    if e != d {
                        return Err(TensorError::Einsum {
                            spec: self.text.clone(),
                            reason: format!("label `{c}` has extents {e} and {d}"),
                        });
                    }
                }
                extents.insert(c, d);
            }
        }
        Ok(extents)
    }

    /// Evaluates the contraction on the CPU.
    ///
    /// # Errors
    ///
    /// As [`Spec::infer`].
    pub fn run(&self, inputs: &[&Tensor], threads: usize) -> Result<Tensor, TensorError> {
        let metas: Vec<Meta> = inputs.iter().map(|t| Meta::of(t)).collect();
        self.infer(&metas)?;
        let values = inputs.iter().map(|&t| Cow::Borrowed(t)).collect();
        Ok(self
            .contract(
                &mut CpuContraction {
                    threads,
                    borrows: PhantomData,
                },
                values,
            )?
            .into_owned())
    }

    /// Evaluates the contraction with `backend`'s primitives: the one
    /// lowering (diagonals, sums, permutations, batched GEMM in a greedy
    /// pairwise order) that every engine shares. `inputs` must fit
    /// [`Spec::infer`].
    ///
    /// # Errors
    ///
    /// As [`Spec::infer`], and whatever `backend` fails with.
    pub fn contract<B: Contraction>(
        &self,
        backend: &mut B,
        inputs: Vec<B::Value>,
    ) -> Result<B::Value, B::Error> {
        let extents = self.extents(inputs.iter().map(|v| B::shape(v)))?;
        let mut terms: Vec<Term<B>> = Vec::new();
        for (labels, v) in self.inputs.iter().zip(inputs) {
            terms.push(Term::diagonal(backend, labels, v)?);
        }
        while terms.len() > 1 {
            let (i, j) = self.cheapest_pair(&terms, &extents);
            let b = terms.remove(j);
            let a = terms.remove(i);
            let keep = self.needed(&terms, &a, &b);
            terms.push(Term::contract(backend, a, b, &keep)?);
        }
        let last = terms.pop().expect("at least one operand");
        last.finish(backend, &self.output)
    }

    /// Labels still needed after contracting `a` with `b`: in the output or
    /// in another remaining term.
    fn needed<B: Contraction>(&self, rest: &[Term<B>], a: &Term<B>, b: &Term<B>) -> Vec<char> {
        a.labels
            .iter()
            .chain(&b.labels)
            .copied()
            .filter(|c| self.output.contains(c) || rest.iter().any(|t| t.labels.contains(c)))
            .collect()
    }

    /// The pair whose result is smallest (greedy order).
    fn cheapest_pair<B: Contraction>(
        &self,
        terms: &[Term<B>],
        extents: &BTreeMap<char, usize>,
    ) -> (usize, usize) {
        let mut best = (0, 1, usize::MAX);
        for i in 0..terms.len() {
            for j in i + 1..terms.len() {
                let others: Vec<&Term<B>> = terms
                    .iter()
                    .enumerate()
                    .filter(|&(k, _)| k != i && k != j)
                    .map(|(_, t)| t)
                    .collect();
                let mut size: usize = 1;
                let mut seen = Vec::new();
                for &c in terms[i].labels.iter().chain(&terms[j].labels) {
                    if seen.contains(&c) {
                        continue;
                    }
                    seen.push(c);
                    let needed =
                        self.output.contains(&c) || others.iter().any(|t| t.labels.contains(&c));
                    if needed {
                        size = size.saturating_mul(extents[&c]);
                    }
                }
                if size < best.2 {
                    best = (i, j, size);
                }
            }
        }
        (best.0, best.1)
    }
}

/// The primitives an engine lends [`Spec::contract`]. `Value` is the
/// engine's tensor (or a borrow of a resident one).
pub trait Contraction {
    /// A tensor of the engine.
    type Value;
    /// What the engine's primitives fail with.
    type Error: From<TensorError>;
    /// The value's shape.
    fn shape(value: &Self::Value) -> &[usize];
    /// Copies out a strided view of `value` (a diagonal over repeated labels).
    fn view(&mut self, value: Self::Value, view: &View) -> Result<Self::Value, Self::Error>;
    /// Sums `value` over `axes`, dropping them.
    fn sum(&mut self, value: Self::Value, axes: &[usize]) -> Result<Self::Value, Self::Error>;
    /// Reorders axes: output axis `i` is input axis `perm[i]`.
    fn permute(&mut self, value: Self::Value, perm: &[usize]) -> Result<Self::Value, Self::Error>;
    /// `[nb, m, k] @ [nb, k, n]`, reading `a` and `b` (row-major, of those
    /// element counts) as such, giving a value of shape `out` (`nb·m·n`
    /// elements).
    fn batched_matmul(
        &mut self,
        a: &Self::Value,
        b: &Self::Value,
        dims: [usize; 4],
        out: Vec<usize>,
    ) -> Result<Self::Value, Self::Error>;
}

/// The CPU engine's primitives: operands used as they are stay borrowed.
struct CpuContraction<'a> {
    threads: usize,
    borrows: PhantomData<&'a Tensor>,
}

impl<'a> Contraction for CpuContraction<'a> {
    type Value = Cow<'a, Tensor>;
    type Error = TensorError;

    fn shape(value: &Self::Value) -> &[usize] {
        value.shape()
    }

    fn view(&mut self, value: Self::Value, view: &View) -> Result<Self::Value, TensorError> {
        Ok(Cow::Owned(structural::view(&value, view)?))
    }

    fn sum(&mut self, value: Self::Value, axes: &[usize]) -> Result<Self::Value, TensorError> {
        Ok(Cow::Owned(reduce::reduce(
            ReduceOp::Sum,
            &value,
            axes,
            false,
            false,
        )?))
    }

    fn permute(&mut self, value: Self::Value, perm: &[usize]) -> Result<Self::Value, TensorError> {
        Ok(Cow::Owned(structural::permute(&value, perm)?))
    }

    fn batched_matmul(
        &mut self,
        a: &Self::Value,
        b: &Self::Value,
        [nb, m, k, n]: [usize; 4],
        out: Vec<usize>,
    ) -> Result<Self::Value, TensorError> {
        let c = gemm::matmul_as(a, &[nb, m, k], b, &[nb, k, n], self.threads)?;
        Ok(Cow::Owned(Tensor::from_parts(out, c.into_parts().1)?))
    }
}

/// An intermediate: a value and one label per axis, all distinct.
struct Term<B: Contraction> {
    labels: Vec<char>,
    value: B::Value,
}

impl<B: Contraction> Term<B> {
    fn extent(&self, c: &char) -> usize {
        B::shape(&self.value)[self.labels.iter().position(|l| l == c).expect("label")]
    }

    /// Takes the diagonal over repeated labels (`ii` → `i`).
    fn diagonal(backend: &mut B, labels: &[char], value: B::Value) -> Result<Self, B::Error> {
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
        let own = structural::row_major(shape);
        let mut walk = View {
            shape: Vec::new(),
            strides: Vec::new(),
            base: 0,
        };
        for c in &unique {
            let positions: Vec<usize> = (0..labels.len()).filter(|&i| labels[i] == *c).collect();
            walk.shape.push(shape[positions[0]]);
            walk.strides.push(positions.iter().map(|&i| own[i]).sum());
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

    /// Reorders axes to `order` (a permutation of the labels).
    fn permute(self, backend: &mut B, order: &[char]) -> Result<Self, B::Error> {
        let perm: Vec<usize> = order
            .iter()
            .map(|c| {
                self.labels
                    .iter()
                    .position(|l| l == c)
                    .expect("a label of the term")
            })
            .collect();
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return Ok(self);
        }
        Ok(Term {
            labels: order.to_vec(),
            value: backend.permute(self.value, &perm)?,
        })
    }

    /// Contracts two terms into one with labels `batch, a-only, b-only`,
    /// summing labels not in `keep`, through one batched GEMM.
    fn contract(backend: &mut B, a: Self, b: Self, keep: &[char]) -> Result<Self, B::Error> {
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
        let size = |t: &Self, ls: &[char]| ls.iter().map(|c| t.extent(c)).product::<usize>();
        let dims = [
            size(&a, &batch),
            size(&a, &a_only),
            size(&a, &inner),
            size(&b, &b_only),
        ];
        let a = a.permute(backend, &[&batch[..], &a_only, &inner].concat())?;
        let b = b.permute(backend, &[&batch[..], &inner, &b_only].concat())?;
        let shape: Vec<usize> = batch
            .iter()
            .chain(&a_only)
            .map(|c| a.extent(c))
            .chain(b_only.iter().map(|c| b.extent(c)))
            .collect();
        Ok(Term {
            labels: [&batch[..], &a_only, &b_only].concat(),
            value: backend.batched_matmul(&a.value, &b.value, dims, shape)?,
        })
    }

    /// Sums what the output does not name and orders the rest like it.
    fn finish(self, backend: &mut B, output: &[char]) -> Result<B::Value, B::Error> {
        Ok(self
            .sum_out(backend, output)?
            .permute(backend, output)?
            .value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::{c64, DType};

    fn tensor(shape: &[usize], seed: f64) -> Tensor {
        let n = shape.iter().product();
        Tensor::from_vec::<f64>(
            (0..n).map(|i| ((i as f64) * 0.83 + seed).sin()).collect(),
            shape,
        )
        .unwrap()
    }

    /// Reference: loop over every assignment of every label, multiply the
    /// operands' elements, add into the output element.
    fn reference(spec: &str, inputs: &[&Tensor]) -> Vec<f64> {
        let s = Spec::parse(spec).unwrap();
        let ext = s.extents(inputs.iter().map(|t| t.shape())).unwrap();
        let labels: Vec<char> = ext.keys().copied().collect();
        let out_shape: Vec<usize> = s.output.iter().map(|c| ext[c]).collect();
        let mut out = vec![0.0; out_shape.iter().product()];
        let total: usize = labels.iter().map(|c| ext[c]).product();
        for k in 0..total {
            let mut val = BTreeMap::new();
            let mut r = k;
            for c in labels.iter().rev() {
                val.insert(*c, r % ext[c]);
                r /= ext[c];
            }
            let flat = |ls: &[char], shape: &[usize]| {
                ls.iter()
                    .zip(shape)
                    .fold(0, |acc, (c, &d)| acc * d + val[c])
            };
            let prod: f64 = inputs
                .iter()
                .zip(&s.inputs)
                .map(|(t, ls)| t.as_slice::<f64>().unwrap()[flat(ls, t.shape())])
                .product();
            out[flat(&s.output, &out_shape)] += prod;
        }
        out
    }

    fn check(spec: &str, inputs: &[&Tensor]) {
        let s = Spec::parse(spec).unwrap();
        let metas: Vec<Meta> = inputs.iter().map(|t| Meta::of(t)).collect();
        let meta = s.infer(&metas).unwrap();
        let got = s.run(inputs, 1).unwrap();
        assert_eq!(got.shape(), &meta.shape[..], "{spec}");
        let want = reference(spec, inputs);
        for (g, w) in got.as_slice::<f64>().unwrap().iter().zip(&want) {
            assert!(
                (g - w).abs() <= 1e-10 * (1.0 + w.abs()),
                "{spec}: {g} vs {w}"
            );
        }
    }

    #[test]
    fn matches_the_label_loop() {
        let (a, b, c, d) = (
            tensor(&[3, 4], 0.1),
            tensor(&[4, 5], 0.2),
            tensor(&[5, 2], 0.3),
            tensor(&[2, 3], 0.4),
        );
        check("ij,jk->ik", &[&a, &b]);
        check("ij,jk", &[&a, &b]);
        check("ij->ji", &[&a]);
        check("ij->", &[&a]);
        check("ij,ij->ij", &[&a, &a]);
        check("i,j->ij", &[&tensor(&[3], 0.5), &tensor(&[4], 0.6)]);
        let sq = tensor(&[4, 4], 0.7);
        check("ii->", &[&sq]);
        check("ii->i", &[&sq]);
        check(
            "bij,bjk->bik",
            &[&tensor(&[2, 3, 4], 0.8), &tensor(&[2, 4, 5], 0.9)],
        );
        check("ij,jk,kl->il", &[&a, &b, &c]);
        check("ij,jk,kl,li->", &[&a, &b, &c, &d]);
        check("iij,jk->ik", &[&tensor(&[3, 3, 4], 1.0), &b]);
        // An MPS-style chain: site tensors (l, p, r), contracted with a copy.
        let site = tensor(&[2, 3, 2], 1.1);
        check("apb,cpd,bqe,dqf->acef", &[&site, &site, &site, &site]);
    }

    #[test]
    fn complex_operands() {
        let a = Tensor::from_vec(vec![c64::new(0.0, 1.0), c64::new(1.0, 0.0)], &[2]).unwrap();
        let s = Spec::parse("i,i->").unwrap();
        let got = s.run(&[&a, &a], 1).unwrap();
        assert_eq!(got.as_slice::<c64>().unwrap(), &[c64::new(0.0, 0.0)]);
        assert_eq!(got.dtype(), DType::C64);
    }

    #[test]
    fn bad_specs_are_named() {
        let meta = |shape: &[usize]| Meta {
            dtype: DType::F64,
            shape: shape.to_vec(),
        };
        let err = Spec::parse("ij,j1->i").unwrap_err();
        assert!(err.to_string().contains("`1` is not a label"), "{err}");
        let err = Spec::parse("ij->ii").unwrap_err();
        assert!(err.to_string().contains("appears twice"), "{err}");
        let err = Spec::parse("ij->k").unwrap_err();
        assert!(err.to_string().contains("`k` is in no operand"), "{err}");
        let err = Spec::parse("...ij->ij").unwrap_err();
        assert!(err.to_string().contains("ellipsis"), "{err}");
        let s = Spec::parse("ij,jk->ik").unwrap();
        let err = s.infer(&[meta(&[2, 3]), meta(&[4, 5])]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "einsum `ij,jk->ik`: label `j` has extents 3 and 4"
        );
        let err = s.infer(&[meta(&[2, 3, 1]), meta(&[3, 5])]).unwrap_err();
        assert!(
            err.to_string()
                .contains("operand 0 has 3 axes but subscript `ij`"),
            "{err}"
        );
    }
}
