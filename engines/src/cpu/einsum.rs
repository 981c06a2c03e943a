//! einsum on the CPU: the shared lowering ([`Spec::contract`]) over the
//! CPU kernels, with operands used as they are left borrowed.

use std::borrow::Cow;
use std::marker::PhantomData;

use super::{gemm, reduce, structural};
use crate::layout::View;
use crate::ops::{Contraction, EinsumSpec as Spec, Meta, ReduceOp};
use crate::tensor::{Tensor, TensorError};

/// Evaluates the contraction `spec` of `inputs` on the CPU.
///
/// # Errors
///
/// As [`Spec::infer`].
pub(super) fn run(spec: &Spec, inputs: &[&Tensor], threads: usize) -> Result<Tensor, TensorError> {
    let metas: Vec<Meta> = inputs.iter().map(|t| Meta::of(t)).collect();
    spec.infer(&metas)?;
    let values = inputs.iter().map(|&t| Cow::Borrowed(t)).collect();
    Ok(spec
        .contract(
            &mut CpuContraction {
                threads,
                borrows: PhantomData,
            },
            values,
        )?
        .into_owned())
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

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
        let got = run(&s, inputs, 1).unwrap();
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
        let got = run(&s, &[&a, &a], 1).unwrap();
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
