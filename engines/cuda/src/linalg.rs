//! Decompositions on the device through cuSOLVER's 64-bit API (one call
//! for all four field types), on the lane's stream with the lane's
//! cuSOLVER handle: Cholesky (`potrf`), solve (`getrf` + `getrs`), eigh
//! (`syevd`), the thin SVD (`gesvd`) and the thin QR (`geqrf`, then the
//! typed `orgqr`/`ungqr`: the 64-bit API has no generator of `Q`).
//! Row-major matrices are read as the column-major transposes they are
//! (see `cusolver`'s `potrf` and `lu_solve` for why each call gives
//! the row-major answer).
//!
//! Each reads its status back (one synchronous copy), and the inputs are
//! first checked to be finite on the device (a product by zero and a sum,
//! read back): the CPU refuses a NaN or an infinity, and cuSOLVER would
//! not say. Where the device finds a failure — a non-finite entry, a
//! minor that is not positive definite, a zero pivot, a solution that is
//! not finite — it says so in [`Failed`], and the engine reruns the op on
//! the host copies of the inputs to give the CPU's own error, with the
//! entry or the reason the CPU names.

use super::exec::Exec;
use super::DeviceTensor;
use weft_core::ops::{
    diagonal_view, permute_view, slice_view, BinaryOp, CmpOp, ReduceOp, Scalar, SliceAxis, UnaryOp,
};
use weft_core::DType;
use weft_core::ExecError;

/// What the device found wrong with a decomposition's input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Failed(pub(super) String);

impl<'a> Exec<'a> {
    /// Whether every element of `t` (a field type) is finite: `t · 0` and
    /// its sum, read back, are NaN exactly when one is not.
    fn all_finite(&mut self, t: &DeviceTensor) -> Result<bool, ExecError> {
        let zeroed = self.binary_scalar(BinaryOp::Mul, t, Scalar::Real(0.0), false)?;
        let axes: Vec<usize> = (0..t.shape.len()).collect();
        let sum = self.reduce(ReduceOp::Sum, &zeroed, &axes, t.dtype, &[])?;
        let bytes = self.launch.read_back(&sum)?;
        Ok(match t.dtype {
            DType::F32 | DType::C32 => bytes
                .chunks_exact(4)
                .all(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")).is_finite()),
            _ => bytes
                .chunks_exact(8)
                .all(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")).is_finite()),
        })
    }

    fn solver(&self) -> Result<&'a super::cusolver::Solver, ExecError> {
        self.solver.ok_or_else(|| {
            ExecError::Device(super::device_error(
                self.launch.device,
                "cusolverDnCreate",
                "no cuSOLVER handle bound to the lane",
            ))
        })
    }

    /// The lane's cuSOLVER handle once every input is checked finite, or
    /// what the device found.
    fn prepare(
        &mut self,
        inputs: &[&DeviceTensor],
    ) -> Result<Result<&'a super::cusolver::Solver, Failed>, ExecError> {
        let solver = self.solver()?;
        for t in inputs {
            if !self.all_finite(t)? {
                return Ok(Err(Failed("a non-finite entry".into())));
            }
        }
        Ok(Ok(solver))
    }

    /// The lower Cholesky factor `L` of Hermitian positive definite `a`
    /// (its lower triangle read), zeros above the diagonal.
    pub(super) fn cholesky(
        &mut self,
        a: &DeviceTensor,
    ) -> Result<Result<DeviceTensor, Failed>, ExecError> {
        let solver = match self.prepare(&[a])? {
            Ok(solver) => solver,
            Err(failed) => return Ok(Err(failed)),
        };
        let mut factor = self.duplicate(a, &a.shape)?;
        let info = self.launch.potrf(solver, &mut factor)?;
        if info != 0 {
            return Ok(Err(Failed(format!(
                "cuSOLVER: the leading minor of order {info} is not positive definite"
            ))));
        }
        Ok(Ok(self.triangle(&factor, 0, false)?))
    }

    /// `X` with `a X = b` (`b` a vector or a matrix), by LU with partial
    /// pivoting.
    pub(super) fn solve(
        &mut self,
        a: &DeviceTensor,
        b: &DeviceTensor,
    ) -> Result<Result<DeviceTensor, Failed>, ExecError> {
        let solver = match self.prepare(&[a, b])? {
            Ok(solver) => solver,
            Err(failed) => return Ok(Err(failed)),
        };
        let n = a.shape[0];
        let nrhs = b.shape.get(1).copied().unwrap_or(1);
        let mut lu = self.duplicate(a, &a.shape)?;
        // B column-major: a vector as it is, a matrix transposed.
        let mut x = match b.shape[..] {
            [_] => self.duplicate(b, &b.shape)?,
            _ => self.gather(b, &permute_view(&b.shape, &[1, 0])?)?,
        };
        let [pivot, status] = self.launch.lu_solve(solver, &mut lu, &mut x, [n, nrhs])?;
        if pivot != 0 || status != 0 {
            return Ok(Err(Failed(format!(
                "cuSOLVER: getrf info {pivot}, getrs info {status}"
            ))));
        }
        let x = match b.shape[..] {
            [_] => x,
            _ => self.gather(&x, &permute_view(&[nrhs, n], &[1, 0])?)?,
        };
        if !self.all_finite(&x)? {
            return Ok(Err(Failed("the solution is not finite".into())));
        }
        Ok(Ok(x))
    }

    /// The eigenvalues (ascending, real) and eigenvectors (columns) of
    /// Hermitian `a` (its lower triangle read).
    pub(super) fn eigh(
        &mut self,
        a: &DeviceTensor,
    ) -> Result<Result<Vec<DeviceTensor>, Failed>, ExecError> {
        let solver = match self.prepare(&[a])? {
            Ok(solver) => solver,
            Err(failed) => return Ok(Err(failed)),
        };
        let n = a.shape[0];
        let mut vectors = self.duplicate(a, &a.shape)?;
        let mut values = self.alloc(a.dtype.real(), &[n])?;
        let info = self.launch.syevd(solver, &mut vectors, &mut values)?;
        if info != 0 {
            return Ok(Err(Failed(format!(
                "cuSOLVER: syevd did not converge (info {info})"
            ))));
        }
        // The buffer holds Uᵀ; A's eigenvectors are conj(U), its adjoint.
        let v = self.gather(&vectors, &permute_view(&[n, n], &[1, 0])?)?;
        let v = if a.dtype.is_complex() {
            self.unary(UnaryOp::Conj, &v, a.dtype)?
        } else {
            v
        };
        Ok(Ok(vec![values, v]))
    }

    /// The thin SVD of `a` (m×n): `U` (m×k), `S` (k, real, descending),
    /// `Vᴴ` (k×n), `k = min(m, n)`. `gesvd` takes a column-major matrix at
    /// least as tall as it is wide: the row-major buffer is one when
    /// `n ≥ m` (it reads `Aᵀ = U' S V'ᴴ`, so `A = conj(V') S U'ᵀ`, and the
    /// two factor buffers read row-major are `conj(V')` and `U'ᵀ` as they
    /// are); for `m > n`, `A` is transposed into one first and both
    /// factors transposed back.
    pub(super) fn svd(
        &mut self,
        a: &DeviceTensor,
    ) -> Result<Result<Vec<DeviceTensor>, Failed>, ExecError> {
        let solver = match self.prepare(&[a])? {
            Ok(solver) => solver,
            Err(failed) => return Ok(Err(failed)),
        };
        let (m, n) = (a.shape[0], a.shape[1]);
        let (dtype, real) = (a.dtype, a.dtype.real());
        let info;
        let factors = if n >= m {
            let mut work = self.duplicate(a, &a.shape)?;
            let mut s = self.alloc(real, &[m])?;
            let mut u = self.alloc(dtype, &[m, n])?;
            let mut vt = self.alloc(dtype, &[m, m])?;
            info = self
                .launch
                .gesvd(solver, &mut work, [&mut s, &mut u, &mut vt], [n, m])?;
            vec![vt, s, u]
        } else {
            let mut work = self.gather(a, &permute_view(&a.shape, &[1, 0])?)?;
            let mut s = self.alloc(real, &[n])?;
            let mut u = self.alloc(dtype, &[n, m])?;
            let mut vt = self.alloc(dtype, &[n, n])?;
            info = self
                .launch
                .gesvd(solver, &mut work, [&mut s, &mut u, &mut vt], [m, n])?;
            let u = self.gather(&u, &permute_view(&[n, m], &[1, 0])?)?;
            let vh = self.gather(&vt, &permute_view(&[n, n], &[1, 0])?)?;
            vec![u, s, vh]
        };
        if info != 0 {
            return Ok(Err(Failed(format!(
                "cuSOLVER: gesvd did not converge (info {info})"
            ))));
        }
        Ok(Ok(factors))
    }

    /// The thin QR of `a` (m×n): `Q` (m×k), `R` (k×n), `k = min(m, n)`,
    /// `R`'s diagonal real and non-negative as the CPU's. `geqrf` and
    /// `orgqr` take `A` column-major: its row-major transpose.
    pub(super) fn qr(
        &mut self,
        a: &DeviceTensor,
    ) -> Result<Result<Vec<DeviceTensor>, Failed>, ExecError> {
        let solver = match self.prepare(&[a])? {
            Ok(solver) => solver,
            Err(failed) => return Ok(Err(failed)),
        };
        let (m, n) = (a.shape[0], a.shape[1]);
        let k = m.min(n);
        let mut b = self.gather(a, &permute_view(&a.shape, &[1, 0])?)?;
        let mut tau = self.alloc(a.dtype, &[k])?;
        let info = self.launch.geqrf(solver, &mut b, &mut tau, [m, n])?;
        if info != 0 {
            return Ok(Err(Failed(format!("cuSOLVER: geqrf info {info}"))));
        }
        // R: the upper triangle of the first k rows of column-major b.
        let rows = |count: usize, len: usize| {
            [
                SliceAxis {
                    start: 0,
                    stop: count,
                    step: 1,
                },
                SliceAxis {
                    start: 0,
                    stop: len,
                    step: 1,
                },
            ]
        };
        let full = self.gather(&b, &permute_view(&[n, m], &[1, 0])?)?;
        let top = self.gather(&full, &slice_view(&[m, n], &rows(k, n))?)?;
        let r = self.triangle(&top, 0, true)?;
        // Q: the first k columns of column-major b once `orgqr` has run.
        let info = self.launch.orgqr(solver, &mut b, &tau, [m, k])?;
        if info != 0 {
            return Ok(Err(Failed(format!("cuSOLVER: orgqr info {info}"))));
        }
        let qt = self.gather(&b, &slice_view(&[n, m], &rows(k, m))?)?;
        let q = self.gather(&qt, &permute_view(&[k, m], &[1, 0])?)?;
        let (q, r) = self.real_diagonal(&q, &r)?;
        Ok(Ok(vec![q, r]))
    }

    /// `Q·diag(p)` and `diag(conj p)·R`, `p` the phases of `R`'s diagonal
    /// (1 where it is 0): `R`'s diagonal becomes real and non-negative,
    /// and `Q R` is unchanged (`|p| = 1`).
    fn real_diagonal(
        &mut self,
        q: &DeviceTensor,
        r: &DeviceTensor,
    ) -> Result<(DeviceTensor, DeviceTensor), ExecError> {
        let dtype = r.dtype;
        let d = self.gather(r, &diagonal_view(&r.shape, [0, 1])?)?;
        let k = [d.len()];
        let magnitude = self.unary(UnaryOp::Abs, &d, dtype.real())?;
        let magnitude = self.cast(&magnitude, dtype)?;
        let zero = self.fill(dtype, &[], Scalar::Real(0.0))?;
        let one = self.fill(dtype, &[], Scalar::Real(1.0))?;
        let vanishes = self.compare(CmpOp::Eq, &magnitude, &zero, &k)?;
        let d = self.select([&vanishes, &one, &d], &k)?;
        let magnitude = self.select([&vanishes, &one, &magnitude], &k)?;
        let p = self.binary(BinaryOp::Div, &d, &magnitude, &k)?;
        let q = self.binary(BinaryOp::Mul, q, &p, &q.shape)?;
        let conj = if dtype.is_complex() {
            self.unary(UnaryOp::Conj, &p, dtype)?
        } else {
            p
        };
        let column = self.duplicate(&conj, &[k[0], 1])?;
        let r = self.binary(BinaryOp::Mul, &column, r, &r.shape)?;
        Ok((q, r))
    }
}
