//! The rules of the decompositions (QR, SVD, eigh, Cholesky, solve) and
//! the matrix helpers they share.

use super::{Derivation, Missing, Pullback, DEGENERACY};
use crate::ops::{BinaryOp, EinsumSpec, Scalar, SliceAxis, TensorOp, UnaryOp};
use crate::program::Value;
use crate::tensor::DType;

impl Derivation<'_> {
    pub(super) fn matmul(&mut self, a: Value, b: Value) -> Result<Value, Missing> {
        self.op(TensorOp::Matmul, &[a, b])
    }

    /// `X` with `A X = B`.
    pub(super) fn solve(&mut self, a: Value, b: Value) -> Result<Value, Missing> {
        self.op(TensorOp::Linalg(crate::ops::Linalg::Solve), &[a, b])
    }

    /// `X A⁻¹ = (A⁻ᴴ Xᴴ)ᴴ`, of `A` given as its adjoint `ah` (so `X M⁻ᴴ`
    /// of `ah = M`).
    pub(super) fn right_solve(&mut self, x: Value, ah: Value) -> Result<Value, Missing> {
        let xh = self.adjoint(x)?;
        let y = self.solve(ah, xh)?;
        self.adjoint(y)
    }

    pub(super) fn tril(&mut self, x: Value, k: isize) -> Result<Value, Missing> {
        self.op(TensorOp::Triangle { k, upper: false }, &[x])
    }

    /// The gradient of a Hermitian `g` as one of a function that reads only
    /// its input's lower triangle (faer's `Side::Lower`): the strict lower
    /// part twice, the diagonal once, the upper part nothing.
    pub(super) fn lower_read(&mut self, g: Value) -> Result<Value, Missing> {
        let all = self.tril(g, 0)?;
        let strict = self.tril(g, -1)?;
        self.bin(BinaryOp::Add, all, strict)
    }

    /// `(x + xᴴ) / 2`.
    pub(super) fn hermitian_part(&mut self, x: Value) -> Result<Value, Missing> {
        let xh = self.adjoint(x)?;
        let s = self.bin(BinaryOp::Add, x, xh)?;
        self.scalar(BinaryOp::Mul, s, Scalar::Real(0.5))
    }

    /// `v` (`[n]`) on the diagonal of an `n × n` matrix of `dtype`.
    pub(super) fn diag_of(&mut self, v: Value, dtype: DType) -> Result<Value, Missing> {
        let v = self.op(TensorOp::Cast(dtype), &[v])?;
        self.op(TensorOp::DiagEmbed { axes: [0, 1] }, &[v])
    }

    /// An `n × n` zero matrix of `dtype`.
    pub(super) fn zero_matrix(&mut self, n: usize, dtype: DType) -> Result<Value, Missing> {
        self.full(dtype, vec![n, n], Scalar::Real(0.0))
    }

    /// `F_ij = E_ij / (E_ij² + ε)` for `E_ij = x_j - x_i` (real `[n]`), as
    /// `dtype`: `1 / (x_j - x_i)` away from degeneracy, 0 on the diagonal,
    /// and at most `1 / (2√ε)` where `x_i ≈ x_j` (Lorentzian broadening,
    /// as tensor-network AD libraries regularise degenerate spectra;
    /// [`DEGENERACY`] is ε).
    pub(super) fn inverse_gaps(&mut self, x: Value, dtype: DType) -> Result<Value, Missing> {
        let n = self.meta(x).shape[0];
        let row = self.op(TensorOp::Reshape(vec![1, n]), &[x])?;
        let col = self.op(TensorOp::Reshape(vec![n, 1]), &[x])?;
        let e = self.bin(BinaryOp::Sub, row, col)?;
        let e2 = self.bin(BinaryOp::Mul, e, e)?;
        let den = self.scalar(BinaryOp::Add, e2, Scalar::Real(DEGENERACY))?;
        let f = self.bin(BinaryOp::Div, e, den)?;
        self.op(TensorOp::Cast(dtype), &[f])
    }

    /// The decompositions and the solve: the standard rules (PyTorch's and
    /// JAX's), `gs` the cotangents of their results (`None`: unused).
    pub(super) fn linalg(
        &mut self,
        op: crate::ops::Linalg,
        args: &[Value],
        outs: &[Value],
        gs: &[Option<Value>],
        need: &[bool],
    ) -> Pullback {
        use crate::ops::Linalg;
        let a = args[0];
        let dtype = self.meta(a).dtype;
        Ok(match op {
            Linalg::Solve => {
                // X = A⁻¹B: B̄ = A⁻ᴴ X̄, Ā = -B̄ Xᴴ.
                let (x, gx) = (outs[0], gs[0].expect("the solve's one result"));
                let ah = self.adjoint(a)?;
                let gb = self.solve(ah, gx)?;
                let ga = if need[0] {
                    let outer = if self.meta(x).shape.len() == 1 {
                        let xc = self.conj(x)?;
                        let spec = EinsumSpec::parse("i,j->ij").expect("a valid specification");
                        self.op(TensorOp::Einsum(spec), &[gb, xc])?
                    } else {
                        let xh = self.adjoint(x)?;
                        self.matmul(gb, xh)?
                    };
                    Some(self.un(UnaryOp::Neg, outer)?)
                } else {
                    None
                };
                vec![ga, Some(gb)]
            }
            Linalg::Cholesky => {
                // A = L Lᴴ: Ā = L⁻ᴴ Φ(Lᴴ L̄) L⁻¹, Φ the lower triangle with
                // its diagonal halved; then its Hermitian part, read as
                // faer reads A (the lower triangle).
                let (l, gl) = (outs[0], gs[0].expect("the factor"));
                let lh = self.adjoint(l)?;
                let m = self.matmul(lh, gl)?;
                let low = self.tril(m, 0)?;
                let strict = self.tril(m, -1)?;
                let both = self.bin(BinaryOp::Add, low, strict)?;
                let phi = self.scalar(BinaryOp::Mul, both, Scalar::Real(0.5))?;
                let t = self.solve(lh, phi)?;
                let s = self.right_solve(t, lh)?;
                let g = self.hermitian_part(s)?;
                vec![Some(self.lower_read(g)?)]
            }
            Linalg::Eigh => {
                // A = V diag(w) Vᴴ: Ā = V (diag(w̄) + F ∘ (X - Xᴴ)/2) Vᴴ,
                // X = Vᴴ V̄.
                let (w, v) = (outs[0], outs[1]);
                let n = self.meta(w).shape[0];
                let mut inner = match gs[0] {
                    Some(gw) => self.diag_of(gw, dtype)?,
                    None => self.zero_matrix(n, dtype)?,
                };
                let vh = self.adjoint(v)?;
                if let Some(gv) = gs[1] {
                    let x = self.matmul(vh, gv)?;
                    let xh = self.adjoint(x)?;
                    let k = self.bin(BinaryOp::Sub, x, xh)?;
                    let k = self.scalar(BinaryOp::Mul, k, Scalar::Real(0.5))?;
                    let f = self.inverse_gaps(w, dtype)?;
                    let kf = self.bin(BinaryOp::Mul, k, f)?;
                    inner = self.bin(BinaryOp::Add, inner, kf)?;
                }
                let left = self.matmul(v, inner)?;
                let g = self.matmul(left, vh)?;
                let g = self.hermitian_part(g)?;
                vec![Some(self.lower_read(g)?)]
            }
            Linalg::Qr => {
                let (q, r) = (outs[0], outs[1]);
                let gq = match gs[0] {
                    Some(g) => g,
                    None => self.zeros_like(q)?,
                };
                let gr = match gs[1] {
                    Some(g) => g,
                    None => self.zeros_like(r)?,
                };
                let shape = self.meta(a).shape;
                let (m, n) = (shape[0], shape[1]);
                if m >= n {
                    vec![Some(self.qr_tall(q, r, gq, gr)?)]
                } else {
                    // Wide: A = [X | Y], R = [U | V] with X = QU square and
                    // Y = QV; Ȳ = Q V̄, and X̄ is the square rule's with
                    // Q̄ + Y V̄ᴴ for Q̄ and Ū for R̄.
                    let cols = |start, stop| {
                        vec![
                            SliceAxis::ALL,
                            SliceAxis {
                                start,
                                stop,
                                step: 1,
                            },
                        ]
                    };
                    let y = self.op(TensorOp::Slice(cols(m, n)), &[a])?;
                    let u = self.op(TensorOp::Slice(cols(0, m)), &[r])?;
                    let gu = self.op(TensorOp::Slice(cols(0, m)), &[gr])?;
                    let gv = self.op(TensorOp::Slice(cols(m, n)), &[gr])?;
                    let gy = self.matmul(q, gv)?;
                    let gvh = self.adjoint(gv)?;
                    let ygv = self.matmul(y, gvh)?;
                    let gq = self.bin(BinaryOp::Add, gq, ygv)?;
                    let gx = self.qr_tall(q, u, gq, gu)?;
                    vec![Some(self.op(
                        TensorOp::Concatenate { axis: 1, inputs: 2 },
                        &[gx, gy],
                    )?)]
                }
            }
            Linalg::Svd => self.svd(a, outs, gs)?,
        })
    }

    /// QR's rule for `A = QR`, `m ≥ n`: `Ā = (Q̄ + Q copyltu(M)) R⁻ᴴ`,
    /// `M = R R̄ᴴ - Q̄ᴴ Q`, copyltu(M) the Hermitian matrix of M's lower
    /// triangle (its diagonal's real part).
    pub(super) fn qr_tall(
        &mut self,
        q: Value,
        r: Value,
        gq: Value,
        gr: Value,
    ) -> Result<Value, Missing> {
        let dtype = self.meta(q).dtype;
        let grh = self.adjoint(gr)?;
        let rgr = self.matmul(r, grh)?;
        let gqh = self.adjoint(gq)?;
        let gqq = self.matmul(gqh, q)?;
        let m = self.bin(BinaryOp::Sub, rgr, gqq)?;
        let strict = self.tril(m, -1)?;
        let strict_h = self.adjoint(strict)?;
        let diag = self.op(TensorOp::Diagonal { axes: [0, 1] }, &[m])?;
        let diag = self.op(TensorOp::Cast(dtype.real()), &[diag])?;
        let diag = self.diag_of(diag, dtype)?;
        let sym = self.bin(BinaryOp::Add, strict, strict_h)?;
        let sym = self.bin(BinaryOp::Add, sym, diag)?;
        let qm = self.matmul(q, sym)?;
        let b = self.bin(BinaryOp::Add, gq, qm)?;
        // B R⁻ᴴ
        self.right_solve(b, r)
    }

    /// The thin SVD's rule: `A = U S Vᴴ`, `k = min(m, n)`,
    /// `Ā = U [(J ∘ S_j + S_i ∘ K) ∘ F + diag(S̄) + i·Im(UᴴŪ)_ii / S_i] Vᴴ
    ///      + (I - UUᴴ) Ū S⁻¹ Vᴴ + U S⁻¹ V̄ᴴ (I - VVᴴ)`,
    /// with `J = UᴴŪ - ŪᴴU`, `K = VᴴV̄ - V̄ᴴV`, `F_ij = 1/(S_j² - S_i²)`
    /// regularised as [`Derivation::inverse_gaps`] (the phase term only for
    /// complex types). The loss must not depend on the singular vectors'
    /// phases (gauge), as every loss of a tensor network's values does.
    pub(super) fn svd(&mut self, a: Value, outs: &[Value], gs: &[Option<Value>]) -> Pullback {
        let meta = self.meta(a);
        let dtype = meta.dtype;
        let (m, n) = (meta.shape[0], meta.shape[1]);
        let (u, s, vh) = (outs[0], outs[1], outs[2]);
        let k = self.meta(s).shape[0];
        let mut inner = match gs[1] {
            Some(gsv) => self.diag_of(gsv, dtype)?,
            None => self.zero_matrix(k, dtype)?,
        };
        let s2 = self.bin(BinaryOp::Mul, s, s)?;
        let f = self.inverse_gaps(s2, dtype)?;
        let sc = self.op(TensorOp::Cast(dtype), &[s])?;
        let s_row = self.op(TensorOp::Reshape(vec![1, k]), &[sc])?;
        let s_col = self.op(TensorOp::Reshape(vec![k, 1]), &[sc])?;
        let v = self.adjoint(vh)?;
        let mut extra: Vec<Value> = Vec::new();
        if let Some(gu) = gs[0] {
            let uh = self.adjoint(u)?;
            let x = self.matmul(uh, gu)?;
            let xh = self.adjoint(x)?;
            let j = self.bin(BinaryOp::Sub, x, xh)?;
            let js = self.bin(BinaryOp::Mul, j, s_row)?;
            let jf = self.bin(BinaryOp::Mul, js, f)?;
            inner = self.bin(BinaryOp::Add, inner, jf)?;
            if dtype.is_complex() {
                // i·Im(UᴴŪ)_ii / S_i = (d - conj(d)) / (2 S_i), d = (UᴴŪ)_ii.
                let d = self.op(TensorOp::Diagonal { axes: [0, 1] }, &[x])?;
                let dc = self.conj(d)?;
                let im2 = self.bin(BinaryOp::Sub, d, dc)?;
                let s2x = self.scalar(BinaryOp::Mul, sc, Scalar::Real(2.0))?;
                let ph = self.bin(BinaryOp::Div, im2, s2x)?;
                let ph = self.op(TensorOp::DiagEmbed { axes: [0, 1] }, &[ph])?;
                inner = self.bin(BinaryOp::Add, inner, ph)?;
            }
            if m > k {
                // (I - UUᴴ) Ū S⁻¹ Vᴴ
                let gus = self.bin(BinaryOp::Div, gu, s_row)?;
                let proj = self.matmul(uh, gus)?;
                let back = self.matmul(u, proj)?;
                let perp = self.bin(BinaryOp::Sub, gus, back)?;
                extra.push(self.matmul(perp, vh)?);
            }
        }
        if let Some(gvh) = gs[2] {
            let gv = self.adjoint(gvh)?;
            let x = self.matmul(vh, gv)?;
            let xh = self.adjoint(x)?;
            let kk = self.bin(BinaryOp::Sub, x, xh)?;
            let sk = self.bin(BinaryOp::Mul, s_col, kk)?;
            let kf = self.bin(BinaryOp::Mul, sk, f)?;
            inner = self.bin(BinaryOp::Add, inner, kf)?;
            if n > k {
                // U S⁻¹ V̄ᴴ (I - VVᴴ)
                let gvs = self.bin(BinaryOp::Div, gv, s_row)?;
                let proj = self.matmul(vh, gvs)?;
                let back = self.matmul(v, proj)?;
                let perp = self.bin(BinaryOp::Sub, gvs, back)?;
                let perp_h = self.adjoint(perp)?;
                extra.push(self.matmul(u, perp_h)?);
            }
        }
        let left = self.matmul(u, inner)?;
        let mut g = self.matmul(left, vh)?;
        for e in extra {
            g = self.bin(BinaryOp::Add, g, e)?;
        }
        Ok(vec![Some(g)])
    }
}
