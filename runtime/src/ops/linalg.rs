//! Contractions and linear algebra: matmul, einsum, dots, decompositions, solves.

// The engines crate's one kernel-module path the runtime names: the axis
// rule that `dot_general` shares with the structural ops.
use super::vocabulary::Apply;
use weft_core::ops::check_axes;
use weft_core::{EinsumSpec, Linalg, MatOp, Scalar, TensorEngine, TensorError, TensorOp, UnaryOp};

use super::elementwise::ElementwiseOps;
use crate::error::OpError;

/// The axes of a [`Lane::dot_general_into`], and which operands it
/// conjugates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DotGeneral {
    /// Paired batch axes `(lhs, rhs)`, kept in front of the result.
    pub batch: Vec<(usize, usize)>,
    /// Paired contracted axes `(lhs, rhs)`.
    pub contract: Vec<(usize, usize)>,
    /// Whether `lhs` is conjugated (nothing for real types).
    pub conj_lhs: bool,
    /// Whether `rhs` is conjugated (nothing for real types).
    pub conj_rhs: bool,
}
use crate::handle::TensorHandle;
use crate::lane::Lane;

/// Contractions and linear algebra: matmul, einsum, dots, decompositions, solves.
///
/// Provided for every [`Apply`]: a [`crate::Lane`] runs them, a
/// [`weft_core::Recorder`] records them.
pub trait LinalgOps: Apply {
    /// `lhs @ rhs` (batched, batch axes broadcast) through faer over the
    /// domain's pool; see [`Apply::apply`].
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`].
    fn matmul(&self, lhs: &Self::Tensor, rhs: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::Matmul, &[lhs, rhs])
    }

    /// `einsum` with NumPy subscripts (`"ij,jk->ik"`, traces and repeated
    /// labels included), lowered to permutations and batched GEMM with a
    /// greedy contraction order. The spec is parsed and checked against the
    /// operands here, at the call site, as NumPy's: `...` and extent-1
    /// axes broadcast (see [`EinsumSpec::parse_for`]). A whole network is
    /// one einsum: any number of operands, and labels beyond ASCII letters
    /// (letters and digits of any script, and other non-ASCII characters,
    /// as opt_einsum's symbols); give its path with
    /// [`LinalgOps::einsum_along`].
    ///
    /// A `*` after an operand's labels reads that operand conjugated:
    /// `⟨a|b⟩` is `einsum("i*,i->", &[a, b])`, an MPS transfer step
    /// `einsum("asc*,asd->cd", &[a, t])`. The mark is taken here: a complex
    /// operand it marks is conjugated by one more op before the
    /// contraction (a real one is its own conjugate), so it records, runs
    /// and differentiates as those ops do.
    ///
    /// # Errors
    ///
    /// [`OpError::Tensor`] with [`TensorError::Einsum`] naming the problem;
    /// as [`Apply::apply`].
    fn einsum(&self, spec: &str, inputs: &[&Self::Tensor]) -> Result<Self::Tensor, OpError> {
        einsum_op(self, spec, inputs, None)
    }

    /// [`LinalgOps::einsum`] contracted along `path`, as opt_einsum writes one
    /// (`contract_path`'s pairs): each pair names two places in the
    /// current list of terms, which are contracted and their result
    /// appended at the end. The path is checked here, at the call site.
    ///
    /// # Errors
    ///
    /// As [`LinalgOps::einsum`]; [`TensorError::Einsum`] naming a pair that
    /// does not fit (see [`EinsumSpec::with_path`]).
    fn einsum_along(
        &self,
        spec: &str,
        inputs: &[&Self::Tensor],
        path: &[(usize, usize)],
    ) -> Result<Self::Tensor, OpError> {
        einsum_op(self, spec, inputs, Some(path))
    }

    /// `alpha · op(a) @ op(b) + beta · c`, batched as [`LinalgOps::matmul`]
    /// (BLAS's `gemm`: `MatOp::T` transposes, `MatOp::H` takes the
    /// adjoint); `c` has the product's shape and is not read when `beta`
    /// is 0. The result is a new tensor; `c` is unchanged.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: shapes that do not multiply, a `c` of another
    /// shape, integer or `bool` operands.
    #[allow(clippy::too_many_arguments)]
    fn gemm(
        &self,
        alpha: Scalar,
        a: &Self::Tensor,
        a_op: MatOp,
        b: &Self::Tensor,
        b_op: MatOp,
        beta: Scalar,
        c: &Self::Tensor,
    ) -> Result<Self::Tensor, OpError> {
        self.apply(gemm_op([alpha, beta], [a_op, b_op]), &[a, b, c])
    }

    /// `alpha · x + beta · y`, broadcast. As every accumulating op here
    /// (`gemm`, `axpby`, their `_into` forms and `dot_general_into`), a
    /// `beta` of 0 does not read `y`: its NaNs do not reach the result.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`].
    fn axpby(
        &self,
        alpha: Scalar,
        x: &Self::Tensor,
        beta: Scalar,
        y: &Self::Tensor,
    ) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::Axpby { alpha, beta }, &[x, y])
    }

    /// `Σ a_i b_i` of two vectors, as a rank-0 tensor.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`].
    fn dot(&self, a: &Self::Tensor, b: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::Dot { conjugate: false }, &[a, b])
    }

    /// `Σ conj(a_i) b_i` of two vectors, as a rank-0 tensor.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`].
    fn vdot(&self, a: &Self::Tensor, b: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::Dot { conjugate: true }, &[a, b])
    }

    /// XLA's `dot_general`: contracts `lhs` and `rhs` over the paired
    /// `contract` axes, with the paired `batch` axes kept in front; the
    /// result is `[batch…, lhs free…, rhs free…]`. Lowered to [`LinalgOps::einsum`].
    ///
    /// # Errors
    ///
    /// [`OpError::Tensor`] for axes out of range or used twice (as
    /// [`TensorError::Axis`]) and for paired extents that differ.
    fn dot_general(
        &self,
        lhs: &Self::Tensor,
        rhs: &Self::Tensor,
        batch: &[(usize, usize)],
        contract: &[(usize, usize)],
    ) -> Result<Self::Tensor, OpError> {
        let labels: Vec<char> = ('a'..='z').chain('A'..='Z').collect();
        let (l_shape, r_shape) = (self.shape(lhs)?, self.shape(rhs)?);
        let (l_type, r_type) = (self.dtype(lhs)?, self.dtype(rhs)?);
        let (rl, rr) = (l_shape.len(), r_shape.len());
        // Checked here, in the caller's axes: the einsum it lowers to would
        // name labels the caller never wrote.
        let bad = |reason: String| -> OpError {
            let error = TensorError::DotGeneral {
                lhs: l_shape.to_vec(),
                rhs: r_shape.to_vec(),
                reason,
            };
            self.refused("dot_general", error)
        };
        if rl + rr > labels.len() {
            return Err(bad(format!(
                "{} axes in all: at most {}",
                rl + rr,
                labels.len()
            )));
        }
        if l_type != r_type {
            let error = TensorError::MixedDTypes {
                op: "dot_general",
                lhs: l_type,
                rhs: r_type,
            };
            return Err(self.refused("dot_general", error));
        }
        let (l_axes, r_axes): (Vec<usize>, Vec<usize>) =
            batch.iter().chain(contract).copied().unzip();
        check_axes("dot_general", rl, &l_axes).map_err(|e| self.refused("dot_general", e))?;
        check_axes("dot_general", rr, &r_axes).map_err(|e| self.refused("dot_general", e))?;
        for (kind, pairs) in [("batch", batch), ("contracting", contract)] {
            for &(i, j) in pairs {
                let (a, b) = (l_shape[i], r_shape[j]);
                if a != b {
                    return Err(bad(format!(
                        "{kind} axes {i} of lhs (extent {a}) and {j} of rhs (extent {b}) differ"
                    )));
                }
            }
        }
        let l: Vec<char> = labels[..rl].to_vec();
        let mut r: Vec<char> = labels[rl..rl + rr].to_vec();
        for &(i, j) in batch.iter().chain(contract) {
            r[j] = l[i];
        }
        let mut out: Vec<char> = batch.iter().map(|&(i, _)| l[i]).collect();
        out.extend((0..rl).filter(|i| !l_axes.contains(i)).map(|i| l[i]));
        out.extend((0..rr).filter(|j| !r_axes.contains(j)).map(|j| r[j]));
        let spec = format!(
            "{},{}->{}",
            l.iter().collect::<String>(),
            r.iter().collect::<String>(),
            out.iter().collect::<String>()
        );
        self.einsum(&spec, &[lhs, rhs])
    }

    /// `A = Q R`, thin; returns `(Q, R)`.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: `a` not 2-D.
    fn qr(&self, a: &Self::Tensor) -> Result<(Self::Tensor, Self::Tensor), OpError> {
        let mut out = self
            .apply_many(TensorOp::Linalg(Linalg::Qr), &[a])?
            .into_iter();
        Ok((out.next().expect("Q"), out.next().expect("R")))
    }

    /// `A = U diag(S) Vᴴ`, thin; returns `(U, S, Vᴴ)` with `S` real.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: `a` not 2-D. A failure to converge fails the op.
    #[allow(clippy::type_complexity)] // (U, S, Vᴴ): three of the mode's tensors
    fn svd(&self, a: &Self::Tensor) -> Result<(Self::Tensor, Self::Tensor, Self::Tensor), OpError> {
        let mut out = self
            .apply_many(TensorOp::Linalg(Linalg::Svd), &[a])?
            .into_iter();
        Ok((
            out.next().expect("U"),
            out.next().expect("S"),
            out.next().expect("Vh"),
        ))
    }

    /// Eigenvalues (real, ascending) and eigenvectors of Hermitian `a`
    /// (its lower triangle is read); returns `(W, V)`.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: `a` not square.
    fn eigh(&self, a: &Self::Tensor) -> Result<(Self::Tensor, Self::Tensor), OpError> {
        let mut out = self
            .apply_many(TensorOp::Linalg(Linalg::Eigh), &[a])?
            .into_iter();
        Ok((out.next().expect("W"), out.next().expect("V")))
    }

    /// `L` with `A = L Lᴴ`. A matrix that is not positive definite fails the
    /// op (and its dependents), not the call.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: `a` not square.
    fn cholesky(&self, a: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::Linalg(Linalg::Cholesky), &[a])
    }

    /// `X` with `A X = B`. A singular `A` fails the op, not the call.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: `a` not square, `b` of another type or row count.
    fn solve(&self, a: &Self::Tensor, b: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::Linalg(Linalg::Solve), &[a, b])
    }
}

impl<T: Apply + ?Sized> LinalgOps for T {}

impl<E: TensorEngine> Lane<E> {
    /// `c ← alpha · op(a) @ op(b) + beta · c`: [`LinalgOps::gemm`] written into
    /// `c`'s memory, which is given up (the returned handle names the
    /// result). When `c` is the last handle of its tensor as the op runs
    /// (see [`Lane::apply_into`] for the rule), the CPU accumulates in
    /// `c`'s buffer, each product one faer call reading transposes as views
    /// and conjugates as flags; else `c`'s value stays for whoever still
    /// reads it and the result is fresh.
    ///
    /// # Errors
    ///
    /// As [`LinalgOps::gemm`].
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_into(
        &self,
        alpha: Scalar,
        a: &TensorHandle,
        a_op: MatOp,
        b: &TensorHandle,
        b_op: MatOp,
        beta: Scalar,
        c: TensorHandle,
    ) -> Result<TensorHandle, OpError> {
        let inputs = smallvec::smallvec![a.clone(), b.clone(), c.clone()];
        self.donate(gemm_op([alpha, beta], [a_op, b_op]), inputs, c)
    }

    /// `y ← alpha · x + beta · y` (BLAS's `axpby`, `x` broadcast to `y`'s
    /// shape): [`LinalgOps::axpby`] accumulated in `y`'s memory, which is given
    /// up, under the rule of [`Lane::apply_into`].
    ///
    /// ```
    /// use weft::{ops::BinaryOp, prelude::*};
    /// let rt = weft::Runtime::builder().split(1).build()?;
    /// let lane = rt.lane(0)?;
    /// let x = lane.arange(DType::F64, 0.0, 1.0, 256)?;
    /// let mut acc = lane.zeros(DType::F64, &[256])?;
    /// for _ in 0..3 {
    ///     // acc ← x² + acc, in acc's buffer.
    ///     let square = lane.binary(BinaryOp::Mul, &x, &x)?;
    ///     acc = lane.axpby_into(Scalar::Real(1.0), &square, Scalar::Real(1.0), acc)?;
    /// }
    /// assert_eq!(lane.download(&acc)?.wait()?.as_slice::<f64>()?[2], 12.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`LinalgOps::axpby`], and [`TensorError::Into`] when `x` broadcasts
    /// `y` to a larger shape.
    pub fn axpby_into(
        &self,
        alpha: Scalar,
        x: &TensorHandle,
        beta: Scalar,
        y: TensorHandle,
    ) -> Result<TensorHandle, OpError> {
        let inputs = smallvec::smallvec![x.clone(), y.clone()];
        self.donate(TensorOp::Axpby { alpha, beta }, inputs, y)
    }

    /// `c ← alpha · dot_general(lhs, rhs) + beta · c`, either operand
    /// conjugated first as `dims` says: the accumulating form of
    /// [`LinalgOps::dot_general`], lowered to its einsum (after a `conj` of an
    /// operand to conjugate, for complex types) and one
    /// [`Lane::axpby_into`] of `c`.
    ///
    /// # Errors
    ///
    /// As [`LinalgOps::dot_general`] and [`Lane::axpby_into`]: a `c` not of the
    /// contraction's shape is [`TensorError::Into`].
    pub fn dot_general_into(
        &self,
        alpha: Scalar,
        lhs: &TensorHandle,
        rhs: &TensorHandle,
        dims: &DotGeneral,
        beta: Scalar,
        c: TensorHandle,
    ) -> Result<TensorHandle, OpError> {
        let read = |h: &TensorHandle, conjugate: bool| -> Result<TensorHandle, OpError> {
            if conjugate && h.dtype().is_complex() {
                self.unary(UnaryOp::Conj, h)
            } else {
                Ok(h.clone())
            }
        };
        let (l, r) = (read(lhs, dims.conj_lhs)?, read(rhs, dims.conj_rhs)?);
        let product = self.dot_general(&l, &r, &dims.batch, &dims.contract)?;
        if product.shape() != c.shape() || product.dtype() != c.dtype() {
            return Err(TensorError::Into {
                op: "dot_general",
                dtype: product.dtype(),
                shape: product.shape().to_vec(),
                into_dtype: c.dtype(),
                into_shape: c.shape().to_vec(),
            }
            .into());
        }
        self.axpby_into(alpha, &product, beta, c)
    }
}

/// `spec` without its conjugation marks (a `*` ending an operand's
/// labels), and `inputs` with each complex operand so marked conjugated. A
/// `*` anywhere else is left for the parser to name.
fn conjugate_marked<A: Apply + ?Sized>(
    ops: &A,
    spec: &str,
    inputs: &[&A::Tensor],
) -> Result<(String, Vec<A::Tensor>), OpError> {
    let (lhs, rhs) = match spec.split_once("->") {
        Some((lhs, rhs)) => (lhs, Some(rhs)),
        None => (spec, None),
    };
    let mut plain = String::with_capacity(spec.len());
    let mut read = Vec::with_capacity(inputs.len());
    for (k, term) in lhs.split(',').enumerate() {
        let marked = term.trim_end().strip_suffix('*');
        if k > 0 {
            plain.push(',');
        }
        plain.push_str(marked.unwrap_or(term));
        if let Some(&x) = inputs.get(k) {
            read.push(match marked.is_some() && ops.dtype(x)?.is_complex() {
                true => ops.apply(TensorOp::Unary(UnaryOp::Conj), &[x])?,
                false => x.clone(),
            });
        }
    }
    if let Some(rhs) = rhs {
        plain.push_str("->");
        plain.push_str(rhs);
    }
    // Operands past the spec's terms stay, for the parser to count.
    read.extend(inputs.iter().skip(read.len()).map(|&x| x.clone()));
    Ok((plain, read))
}

/// The one path of [`LinalgOps::einsum`] and [`LinalgOps::einsum_along`]:
/// conjugation marks taken, the spec parsed for the operands' shapes (as
/// NumPy's einsum reads it) and given `path`, the op applied.
fn einsum_op<A: Apply + ?Sized>(
    ops: &A,
    spec: &str,
    inputs: &[&A::Tensor],
    path: Option<&[(usize, usize)]>,
) -> Result<A::Tensor, OpError> {
    if spec.contains('*') {
        // A `*` left in `plain` (not after an operand) is the parser's to
        // name: no second round of marks.
        let (plain, read) = conjugate_marked(ops, spec, inputs)?;
        let read: Vec<&A::Tensor> = read.iter().collect();
        return unmarked_einsum(ops, &plain, &read, path);
    }
    unmarked_einsum(ops, spec, inputs, path)
}

/// [`einsum_op`] of a spec whose marks were taken.
fn unmarked_einsum<A: Apply + ?Sized>(
    ops: &A,
    spec: &str,
    inputs: &[&A::Tensor],
    path: Option<&[(usize, usize)]>,
) -> Result<A::Tensor, OpError> {
    let shapes = (inputs.iter())
        .map(|&x| ops.shape(x))
        .collect::<Result<smallvec::SmallVec<[_; 4]>, _>>()?;
    let shapes: smallvec::SmallVec<[&[usize]; 4]> = shapes.iter().map(|s| &s[..]).collect();
    let parsed = EinsumSpec::parse_for(spec, &shapes);
    let parsed = match path {
        Some(path) => parsed.and_then(|spec| spec.with_path(path)),
        None => parsed,
    };
    let spec = parsed.map_err(|e| ops.refused("einsum", e))?;
    ops.apply(TensorOp::Einsum(spec), inputs)
}

/// The gemm of these scales and operand reads.
fn gemm_op([alpha, beta]: [Scalar; 2], [a, b]: [MatOp; 2]) -> TensorOp {
    TensorOp::Gemm { alpha, beta, a, b }
}
