//! einsum on the CPU: the shared lowering ([`Spec::contract`]) recorded
//! once per operand shapes into an [`EinsumPlan`] of CPU primitives, and
//! replayed. A permutation whose only reader is a product is folded into
//! the product as a strided operand when its axes allow, so the common
//! contractions of tensor networks copy nothing but their result. A
//! product that sums no label (an elementwise, outer or broadcast product)
//! is a multiplication per output element, run as that at memory speed.

use std::borrow::Cow;
use std::hash::{Hash, Hasher};

use faer::MatRef;
use rayon::prelude::*;

use super::gemm::{self, Compute};
use super::parallel::PARALLEL_THRESHOLD;
use super::{buffer, reduce, structural};
use weft_core::layout::{matrix_strides, row_major, View};
use weft_core::ops::{Contraction, EinsumSpec as Spec, Meta, ReduceOp};
use weft_core::{DType, Element, Field, Tensor, TensorError};

/// Evaluates the contraction `spec` of `inputs` on the CPU, planning it
/// first (the engine keeps plans in its cache instead; see
/// [`EinsumPlan::key_hash`]).
///
/// # Errors
///
/// As [`Spec::infer`].
pub(super) fn run(
    spec: &Spec,
    inputs: &[&Tensor],
    compute: Compute,
) -> Result<Tensor, TensorError> {
    let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
    EinsumPlan::compile(
        spec,
        &shapes,
        inputs.first().map_or(DType::F64, |t| t.dtype()),
    )?
    .run(inputs, compute)
}

/// One contraction, lowered for its operands' shapes and element type.
#[derive(Debug)]
pub(crate) struct EinsumPlan {
    spec: Spec,
    shapes: Vec<Vec<usize>>,
    dtype: DType,
    prims: Vec<Prim>,
    /// For each value (operands, then each primitive's result), the
    /// number of the last primitive that reads it.
    last_use: Vec<Option<usize>>,
    /// The value that is the result.
    result: usize,
}

/// One primitive step of a plan; `src` and operands name earlier values.
#[derive(Debug)]
enum Prim {
    /// A strided copy (a diagonal over repeated labels).
    View { src: usize, view: View },
    /// A sum over axes, dropping them.
    Sum { src: usize, axes: Vec<usize> },
    /// Axes reordered; `folded`: not run, its reader reads `src` strided.
    Permute {
        src: usize,
        perm: Vec<usize>,
        folded: bool,
    },
    /// `[nb, m, k] @ [nb, k, n]`, giving a value of shape `out`.
    Gemm {
        a: Operand,
        b: Operand,
        dims: [usize; 4],
        out: Vec<usize>,
    },
}

/// How a product reads one operand: value `src` as `[batch, rows, cols]`.
#[derive(Debug, Clone, Copy)]
struct Operand {
    src: usize,
    layout: Layout,
}

/// Element strides of a product's operand: one of rows or columns is
/// contiguous (what faer's safe views take).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Layout {
    /// Columns contiguous; rows `row` apart.
    Rows { batch: usize, row: usize },
    /// Rows contiguous; columns `col` apart.
    Cols { batch: usize, col: usize },
}

impl Layout {
    /// The element stride from one batch's matrix to the next (0: the
    /// same matrix for every batch).
    fn batch(self) -> usize {
        match self {
            Layout::Rows { batch, .. } | Layout::Cols { batch, .. } => batch,
        }
    }
}

/// The recording backend: every value is its number and shape.
struct Recording {
    prims: Vec<Prim>,
    shapes: Vec<Vec<usize>>,
}

#[derive(Debug)]
struct Sym {
    id: usize,
    shape: Vec<usize>,
}

impl Recording {
    fn push(&mut self, prim: Prim, shape: Vec<usize>) -> Sym {
        self.prims.push(prim);
        self.shapes.push(shape.clone());
        Sym {
            id: self.shapes.len() - 1,
            shape,
        }
    }
}

impl Contraction for Recording {
    type Value = Sym;
    type Error = TensorError;

    fn shape(value: &Sym) -> &[usize] {
        &value.shape
    }

    fn view(&mut self, value: Sym, view: &View) -> Result<Sym, TensorError> {
        let shape = view.shape.clone();
        Ok(self.push(
            Prim::View {
                src: value.id,
                view: view.clone(),
            },
            shape,
        ))
    }

    fn sum(&mut self, value: Sym, axes: &[usize]) -> Result<Sym, TensorError> {
        let shape = (0..value.shape.len())
            .filter(|i| !axes.contains(i))
            .map(|i| value.shape[i])
            .collect();
        Ok(self.push(
            Prim::Sum {
                src: value.id,
                axes: axes.to_vec(),
            },
            shape,
        ))
    }

    fn permute(&mut self, value: Sym, perm: &[usize]) -> Result<Sym, TensorError> {
        let shape = perm.iter().map(|&p| value.shape[p]).collect();
        Ok(self.push(
            Prim::Permute {
                src: value.id,
                perm: perm.to_vec(),
                folded: false,
            },
            shape,
        ))
    }

    fn batched_matmul(
        &mut self,
        a: &Sym,
        b: &Sym,
        dims: [usize; 4],
        [a_batched, b_batched]: [bool; 2],
        out: Vec<usize>,
    ) -> Result<Sym, TensorError> {
        let [_, m, k, n] = dims;
        // A broadcast operand is one matrix: batch stride 0.
        let operand = |src: usize, rows: usize, cols: usize, batched: bool| Operand {
            src,
            layout: Layout::Rows {
                batch: if batched { rows * cols } else { 0 },
                row: cols,
            },
        };
        Ok(self.push(
            Prim::Gemm {
                a: operand(a.id, m, k, a_batched),
                b: operand(b.id, k, n, b_batched),
                dims,
                out: out.clone(),
            },
            out,
        ))
    }
}

impl EinsumPlan {
    /// Lowers `spec` for operands of these shapes and this element type.
    ///
    /// # Errors
    ///
    /// As [`Spec::infer`]; [`TensorError::TooLarge`] for an intermediate
    /// the allocator cannot provide.
    pub(crate) fn compile(
        spec: &Spec,
        shapes: &[&[usize]],
        dtype: DType,
    ) -> Result<EinsumPlan, TensorError> {
        let metas: Vec<Meta> = shapes
            .iter()
            .map(|s| Meta {
                dtype,
                shape: s.to_vec(),
            })
            .collect();
        spec.infer(&metas)?;
        let mut recording = Recording {
            prims: Vec::new(),
            shapes: shapes.iter().map(|s| s.to_vec()).collect(),
        };
        let operands = shapes
            .iter()
            .enumerate()
            .map(|(id, s)| Sym {
                id,
                shape: s.to_vec(),
            })
            .collect();
        let result = spec.contract(&mut recording, operands)?.id;
        let Recording {
            mut prims,
            shapes: value_shapes,
        } = recording;
        // The intermediates are no op's outputs, so the engine's probe has
        // not seen them: a path whose intermediate the machine cannot hold
        // is refused here, before its first product runs.
        let intermediates: Vec<(DType, &[usize])> = value_shapes[shapes.len()..]
            .iter()
            .map(|s| (dtype, &s[..]))
            .collect();
        super::buffer::check_allocatable(&intermediates)?;
        fold_permutes(&mut prims, &value_shapes, shapes.len());
        let mut last_use = vec![None; value_shapes.len()];
        for (i, prim) in prims.iter().enumerate() {
            for src in prim.reads() {
                last_use[src] = Some(i);
            }
        }
        Ok(EinsumPlan {
            spec: spec.clone(),
            shapes: shapes.iter().map(|s| s.to_vec()).collect(),
            dtype,
            prims,
            last_use,
            result,
        })
    }

    /// The hash the engine's cache files a plan under: of the subscripts
    /// and the path given with them, the operands' shapes and the element
    /// type.
    pub(crate) fn key_hash(spec: &Spec, shapes: &[&[usize]], dtype: DType) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        spec.text().hash(&mut h);
        spec.given_path().hash(&mut h);
        shapes.hash(&mut h);
        dtype.hash(&mut h);
        h.finish()
    }

    /// Whether this plan is the one for these subscripts, shapes and type.
    pub(crate) fn is_for(&self, spec: &Spec, shapes: &[&[usize]], dtype: DType) -> bool {
        self.dtype == dtype
            && self.spec == *spec
            && self.shapes.len() == shapes.len()
            && self.shapes.iter().zip(shapes).all(|(a, b)| a == b)
    }

    /// Replays the plan on `inputs`, which must be of the shapes and type
    /// it was made for: every caller has just compiled it for them or found
    /// it by them ([`EinsumPlan::is_for`]), computing as `compute` says.
    ///
    /// # Errors
    ///
    /// Only what a kernel finds; none is expected.
    pub(crate) fn run(&self, inputs: &[&Tensor], compute: Compute) -> Result<Tensor, TensorError> {
        // The common contraction: one product of two operands read in
        // place (a permutation folded in, or none needed).
        if let [Prim::Gemm { a, b, dims, out }] = &self.prims[..] {
            if let (Some(x), Some(y)) = (inputs.get(a.src), inputs.get(b.src)) {
                return product(x, a.layout, y, b.layout, *dims, out, compute);
            }
        }
        let mut values: smallvec::SmallVec<[Option<Cow<'_, Tensor>>; 8]> = inputs
            .iter()
            .map(|&t| Some(Cow::Borrowed(t)))
            .chain(self.prims.iter().map(|_| None))
            .collect();
        let n = inputs.len();
        for (i, prim) in self.prims.iter().enumerate() {
            let get = |v: usize| values[v].as_deref().expect("made before it is read");
            let made = match prim {
                Prim::Permute { folded: true, .. } => None,
                Prim::View { src, view } => Some(structural::view(get(*src), view)?),
                Prim::Sum { src, axes } => Some(reduce::reduce(
                    ReduceOp::Sum,
                    get(*src),
                    axes,
                    false,
                    false,
                )?),
                Prim::Permute { src, perm, .. } => {
                    Some(structural::permute(get(*src), perm, compute.parallel())?)
                }
                Prim::Gemm { a, b, dims, out } => Some(product(
                    get(a.src),
                    a.layout,
                    get(b.src),
                    b.layout,
                    *dims,
                    out,
                    compute,
                )?),
            };
            values[n + i] = made.map(Cow::Owned);
            for src in prim.reads() {
                if self.last_use[src] == Some(i) {
                    if let Some(Cow::Owned(t)) = values[src].take() {
                        buffer::recycle(t);
                    }
                }
            }
        }
        Ok(values[self.result]
            .take()
            .expect("the result is made")
            .into_owned())
    }
}

impl Prim {
    /// The values it reads.
    fn reads(&self) -> smallvec::SmallVec<[usize; 2]> {
        match self {
            Prim::View { src, .. } | Prim::Sum { src, .. } | Prim::Permute { src, .. } => {
                smallvec::smallvec![*src]
            }
            Prim::Gemm { a, b, .. } => smallvec::smallvec![a.src, b.src],
        }
    }
}

/// Folds each permutation read only by one product into that product, as
/// a strided operand over the permutation's source, where its axes merge
/// into a batch, a row and a column stride with rows or columns
/// contiguous.
fn fold_permutes(prims: &mut [Prim], shapes: &[Vec<usize>], inputs: usize) {
    let mut readers = vec![0usize; shapes.len()];
    for prim in prims.iter() {
        for src in prim.reads() {
            readers[src] += 1;
        }
    }
    for g in 0..prims.len() {
        let Prim::Gemm { a, b, dims, .. } = &prims[g] else {
            continue;
        };
        let [nb, m, k, n] = *dims;
        let mut folds = Vec::new();
        // A broadcast operand (batch stride 0) has no batch axes to fold.
        let own_batch = |operand: &Operand| if operand.layout.batch() == 0 { 1 } else { nb };
        for (side, operand, groups) in
            [(0, *a, [own_batch(a), m, k]), (1, *b, [own_batch(b), k, n])]
        {
            let Some(p) = operand.src.checked_sub(inputs) else {
                continue;
            };
            let Prim::Permute { src, perm, .. } = &prims[p] else {
                continue;
            };
            if readers[operand.src] != 1 {
                continue;
            }
            let source = &shapes[*src];
            let own = row_major(source);
            let shape: Vec<usize> = perm.iter().map(|&i| source[i]).collect();
            let strides: Vec<isize> = perm.iter().map(|&i| own[i]).collect();
            if let Some(layout) = layout_of(&shape, &strides, groups) {
                folds.push((side, p, *src, layout));
            }
        }
        for (side, p, src, layout) in folds {
            if let Prim::Permute { folded, .. } = &mut prims[p] {
                *folded = true;
            }
            if let Prim::Gemm { a, b, .. } = &mut prims[g] {
                let operand = if side == 0 { a } else { b };
                *operand = Operand { src, layout };
            }
        }
    }
}

/// The layout of a tensor of this shape and these strides read as
/// `[groups[0], groups[1], groups[2]]`, if it can be read so in place
/// ([`matrix_strides`]).
fn layout_of(shape: &[usize], strides: &[isize], groups: [usize; 3]) -> Option<Layout> {
    let [batch, row, col] = matrix_strides(shape, strides, groups)?;
    let batch = batch.unwrap_or(0);
    match (row, col) {
        (_, None | Some(1)) => Some(Layout::Rows {
            batch,
            row: row.unwrap_or(groups[2]),
        }),
        (None | Some(1), Some(col)) => Some(Layout::Cols { batch, col }),
        _ => None,
    }
}

/// `[nb, m, k] @ [nb, k, n]` of operands read through their layouts, into
/// a fresh row-major value of shape `out`.
fn product(
    a: &Tensor,
    la: Layout,
    b: &Tensor,
    lb: Layout,
    dims: [usize; 4],
    out: &[usize],
    compute: Compute,
) -> Result<Tensor, TensorError> {
    if a.dtype() != b.dtype() {
        return Err(TensorError::MixedDTypes {
            op: "einsum",
            lhs: a.dtype(),
            rhs: b.dtype(),
        });
    }
    let data = for_field!(a.dtype(), |T| T::wrap(typed_product::<T>(
        a, la, b, lb, dims, compute
    )), else return Err(TensorError::Unsupported {
        op: "einsum",
        dtype: a.dtype(),
    }));
    Tensor::from_parts(out.to_vec(), data)
}

fn typed_product<T: Field>(
    a: &Tensor,
    la: Layout,
    b: &Tensor,
    lb: Layout,
    [nb, m, k, n]: [usize; 4],
    compute: Compute,
) -> Vec<T> {
    let (a, b) = (
        a.as_slice::<T>().expect("checked dtype"),
        b.as_slice::<T>().expect("checked dtype"),
    );
    if k == 1 {
        return unsummed(a, la, b, lb, [nb, m, n], compute);
    }
    fn view<T>(
        data: &[T],
        layout: Layout,
        batch: usize,
        rows: usize,
        cols: usize,
    ) -> MatRef<'_, T> {
        match layout {
            Layout::Rows { batch: step, row } => {
                MatRef::from_row_major_slice_with_stride(&data[batch * step..], rows, cols, row)
            }
            Layout::Cols { batch: step, col } => {
                MatRef::from_column_major_slice_with_stride(&data[batch * step..], rows, cols, col)
            }
        }
    }
    gemm::batched([nb, m, k, n], compute, |batch| {
        (view(a, la, batch, m, k), view(b, lb, batch, k, n))
    })
}

/// Output elements one task of an unsummed product writes, at least.
const CHUNK: usize = 1 << 13;

/// `[nb, m, 1] @ [nb, 1, n]`: no label is summed, so each output element is
/// one multiplication (an elementwise product, an outer product, either
/// broadcast over batch axes, or a tensor scaled by a scalar). Computed as
/// that, rows of the row-major output written at memory speed, instead of
/// as `nb` products of `m × 1` by `1 × n` matrices; over the pool when
/// `compute` allows and the output is large.
fn unsummed<T: Field>(
    a: &[T],
    la: Layout,
    b: &[T],
    lb: Layout,
    [nb, m, n]: [usize; 3],
    compute: Compute,
) -> Vec<T> {
    // Element (batch, i) of `a` and (batch, j) of `b`: `k` is 1, so only
    // the batch and the free axis's strides matter.
    let (a_batch, a_row) = match la {
        Layout::Rows { batch, row } => (batch, row),
        Layout::Cols { batch, .. } => (batch, 1),
    };
    let (b_batch, b_col) = match lb {
        Layout::Rows { batch, .. } => (batch, 1),
        Layout::Cols { batch, col } => (batch, col),
    };
    // The output's length: the plan's shape arithmetic checked it.
    let total = nb * m * n;
    let mut out = buffer::overwritten::<T>(total);
    if total == 0 {
        return out;
    }
    let parallel = compute.parallel() && total >= PARALLEL_THRESHOLD;
    if m == 1 && n == 1 {
        // One element per batch: an elementwise product of the batches.
        let fill = |first: usize, chunk: &mut [T]| {
            if a_batch == 1 && b_batch == 1 {
                let (a, b) = (&a[first..], &b[first..]);
                for ((o, &x), &y) in chunk.iter_mut().zip(a).zip(b) {
                    *o = x * y;
                }
            } else {
                for (t, o) in (first..).zip(chunk.iter_mut()) {
                    *o = a[t * a_batch] * b[t * b_batch];
                }
            }
        };
        if parallel {
            out.par_chunks_mut(CHUNK)
                .enumerate()
                .for_each(|(i, chunk)| fill(i * CHUNK, chunk));
        } else {
            fill(0, &mut out);
        }
        return out;
    }
    // Row `r` of the output is (batch r / m, i = r % m): `a`'s element
    // times `n` of `b`'s.
    let fill = |first_row: usize, rows: &mut [T]| {
        let (mut batch, mut i) = (first_row / m, first_row % m);
        for row in rows.chunks_exact_mut(n) {
            let x = a[batch * a_batch + i * a_row];
            let bs = &b[batch * b_batch..];
            if b_col == 1 {
                for (o, &y) in row.iter_mut().zip(bs) {
                    *o = x * y;
                }
            } else {
                for (j, o) in row.iter_mut().enumerate() {
                    *o = x * bs[j * b_col];
                }
            }
            i += 1;
            if i == m {
                i = 0;
                batch += 1;
            }
        }
    };
    if parallel {
        let rows = CHUNK.div_ceil(n);
        out.par_chunks_mut(rows * n)
            .enumerate()
            .for_each(|(t, chunk)| fill(t * rows, chunk));
    } else {
        fill(0, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use weft_core::{c64, DType};

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
        let out_shape: Vec<usize> = s.output().iter().map(|c| ext[c]).collect();
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
                .zip(s.inputs().iter())
                .map(|(t, ls)| t.as_slice::<f64>().unwrap()[flat(ls, t.shape())])
                .product();
            out[flat(s.output(), &out_shape)] += prod;
        }
        out
    }

    fn check(spec: &str, inputs: &[&Tensor]) {
        let s = Spec::parse(spec).unwrap();
        let metas: Vec<Meta> = inputs.iter().map(|t| Meta::of(t)).collect();
        let meta = s.infer(&metas).unwrap();
        let got = run(&s, inputs, Compute::faer(1)).unwrap();
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
    fn tensor_network_contractions_fold_into_one_product() {
        for (spec, shapes) in [
            ("ab,bsd->asd", [&[4, 4][..], &[4, 2, 4]]),
            ("asc,asd->cd", [&[4, 2, 4][..], &[4, 2, 4]]),
            ("ij,jk->ik", [&[3, 5][..], &[5, 2]]),
            ("ik,jk->ij", [&[3, 5][..], &[2, 5]]),
            ("bij,bjk->bik", [&[2, 3, 4][..], &[2, 4, 5]]),
        ] {
            let plan =
                EinsumPlan::compile(&Spec::parse(spec).unwrap(), &shapes, DType::F64).unwrap();
            let run: Vec<&Prim> = plan
                .prims
                .iter()
                .filter(|p| !matches!(p, Prim::Permute { folded: true, .. }))
                .collect();
            assert!(
                matches!(run[..], [Prim::Gemm { .. }]),
                "{spec}: {:?}",
                plan.prims
            );
            let inputs: Vec<Tensor> = shapes.iter().map(|s| tensor(s, 0.4)).collect();
            check(spec, &inputs.iter().collect::<Vec<_>>());
        }
    }

    #[test]
    fn last_products_lay_their_result_out_as_the_output() {
        // The output's order is made by the last product itself: no
        // permutation runs after it. Two DMRG steps: the output interleaves
        // the first operand's labels around the second's, so the leading run
        // becomes a batch over which the second operand (the MPO) is
        // broadcast; then a batched and a plain product whose output puts the
        // second operand's labels first.
        for (spec, shapes, broadcast) in [
            (
                "amtuz,mnst->asnuz",
                [&[8, 3, 2, 4, 16][..], &[3, 2, 3, 2]],
                true,
            ),
            (
                "asnuz,nkru->asrkz",
                [&[8, 3, 2, 4, 64][..], &[2, 3, 2, 4]],
                true,
            ),
            (
                "bmsy,mnst->bnty",
                [&[16, 3, 2, 48][..], &[3, 2, 2, 3]],
                true,
            ),
            ("bij,bjk->bki", [&[3, 5, 4][..], &[3, 4, 6]], false),
            ("ij,jk->ki", [&[5, 4][..], &[4, 6]], false),
            ("ab,c->acb", [&[4, 32][..], &[16]], true),
        ] {
            let s = Spec::parse(spec).unwrap();
            let plan = EinsumPlan::compile(&s, &shapes, DType::F64).unwrap();
            let Some(Prim::Gemm { a, b, dims, .. }) = plan.prims.last() else {
                panic!("{spec}: the last step is not the product: {:?}", plan.prims);
            };
            assert_eq!(
                dims[0] > 1 && (a.layout.batch() == 0 || b.layout.batch() == 0),
                broadcast,
                "{spec}: {:?}",
                plan.prims
            );
            let inputs: Vec<Tensor> = shapes.iter().map(|s| tensor(s, 0.3)).collect();
            let inputs: Vec<&Tensor> = inputs.iter().collect();
            let want = reference(spec, &inputs);
            for compute in [Compute::faer(1), Compute::faer(2)] {
                let got = run(&s, &inputs, compute).unwrap();
                let got = got.as_slice::<f64>().unwrap();
                for (x, y) in got.iter().zip(&want) {
                    assert!((x - y).abs() <= 1e-12 * (1.0 + y.abs()), "{spec}: {x} {y}");
                }
            }
        }
        // The plain product and a permutation of its result where that
        // copies less: too small a product per batch to be worth a call
        // each; and an operand the output's order would copy whole (`ijx`
        // read as rows `ji` does not merge) when the result is smaller.
        for (spec, shapes) in [
            ("amtuz,mnst->asnuz", [&[8, 3, 2, 2, 4][..], &[3, 2, 3, 2]]),
            ("ijx,x->ji", [&[8, 6, 5][..], &[5]]),
        ] {
            let s = Spec::parse(spec).unwrap();
            let plan = EinsumPlan::compile(&s, &shapes, DType::F64).unwrap();
            assert!(
                matches!(plan.prims.last(), Some(Prim::Permute { folded: false, .. })),
                "{spec}: {:?}",
                plan.prims
            );
            let inputs: Vec<Tensor> = shapes.iter().map(|s| tensor(s, 0.2)).collect();
            check(spec, &inputs.iter().collect::<Vec<_>>());
        }
    }

    #[test]
    fn products_that_sum_no_label_are_one_multiplication_per_element() {
        // Large enough to spread over the pool; strided operands (a
        // permutation folded in) and broadcast batches included.
        let (a, b) = (tensor(&[256, 192], 0.3), tensor(&[192, 256], 0.6));
        let (v, w) = (tensor(&[300], 0.1), tensor(&[200], 0.2));
        let batched = tensor(&[4, 96, 90], 0.4);
        for (spec, inputs) in [
            ("ij,ij->ij", vec![&a, &a]),
            ("ij,ji->ij", vec![&a, &b]),
            ("ij,ji->ji", vec![&a, &b]),
            ("i,j->ij", vec![&v, &w]),
            ("i,j->ji", vec![&v, &w]),
            ("bij,bi->bij", vec![&batched, &tensor(&[4, 96], 0.5)]),
            ("bij,bj->bji", vec![&batched, &tensor(&[4, 90], 0.7)]),
            ("bij,b->bij", vec![&batched, &tensor(&[4], 0.8)]),
        ] {
            let s = Spec::parse(spec).unwrap();
            let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
            let plan = EinsumPlan::compile(&s, &shapes, DType::F64).unwrap();
            assert!(
                plan.prims.iter().any(|p| matches!(
                    p,
                    Prim::Gemm {
                        dims: [_, _, 1, _],
                        ..
                    }
                )),
                "{spec}: {:?}",
                plan.prims
            );
            let want = reference(spec, &inputs);
            for compute in [Compute::faer(1), Compute::faer(2)] {
                let got = run(&s, &inputs, compute).unwrap();
                assert_eq!(got.as_slice::<f64>().unwrap(), &want[..], "{spec}");
            }
        }
        let z = Tensor::from_vec(vec![c64::new(1.0, 2.0), c64::new(0.5, -1.0)], &[2]).unwrap();
        let got = run(
            &Spec::parse("i,j->ij").unwrap(),
            &[&z, &z],
            Compute::faer(1),
        )
        .unwrap();
        let zs = z.as_slice::<c64>().unwrap();
        let want: Vec<c64> = zs
            .iter()
            .flat_map(|&x| zs.iter().map(move |&y| x * y))
            .collect();
        assert_eq!(got.as_slice::<c64>().unwrap(), &want[..]);
    }

    #[test]
    fn complex_operands() {
        let a = Tensor::from_vec(vec![c64::new(0.0, 1.0), c64::new(1.0, 0.0)], &[2]).unwrap();
        let s = Spec::parse("i,i->").unwrap();
        let got = run(&s, &[&a, &a], Compute::faer(1)).unwrap();
        assert_eq!(got.as_slice::<c64>().unwrap(), &[c64::new(0.0, 0.0)]);
        assert_eq!(got.dtype(), DType::C64);
    }

    #[test]
    fn bad_specs_are_named() {
        let meta = |shape: &[usize]| Meta {
            dtype: DType::F64,
            shape: shape.to_vec(),
        };
        let err = Spec::parse("ij,j!->i").unwrap_err();
        assert!(err.to_string().contains("`!` is not a label"), "{err}");
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
