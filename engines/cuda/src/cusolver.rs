//! cuSOLVER: whether it loads, a lane's dense handle, and the
//! decompositions' 64-bit calls (workspaces, statuses read back).

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr};

use super::{device_error, DeviceTensor};
use weft_core::DType;
use weft_core::{DeviceError, ExecError};

use super::launch::Launcher;

/// Whether the cuSOLVER library can be loaded (decompositions need it).
pub fn cusolver_present() -> bool {
    // SAFETY: as `driver_present`, for the cuSOLVER library.
    unsafe { cudarc::cusolver::sys::is_culib_present() }
}

/// A lane's cuSOLVER dense handle, bound to the lane's stream, and the
/// default options of its 64-bit calls. Made and destroyed here, not by
/// cudarc's `DnHandle`, whose drop unwraps the destroy's result: a failed
/// destroy is reported on stderr, never a panic on the actor.
pub(super) struct Solver {
    device: usize,
    handle: cudarc::cusolver::sys::cusolverDnHandle_t,
    params: cudarc::cusolver::sys::cusolverDnParams_t,
}

impl Solver {
    /// A handle bound to `stream`. The caller checked
    /// [`cusolver_present`] (cudarc panics without the library).
    pub(super) fn new(device: usize, stream: &CudaStream) -> Result<Solver, DeviceError> {
        use cudarc::cusolver::result;
        let err =
            |call| move |e: result::CusolverError| device_error(device, call, format!("{e:?}"));
        let handle = result::dn_create().map_err(err("cusolverDnCreate"))?;
        let mut solver = Solver {
            device,
            handle,
            params: std::ptr::null_mut(),
        };
        // SAFETY: `handle` was just made; the stream outlives the handle
        // (the lane holds both, and drops the handle first).
        unsafe { result::dn_set_stream(handle, stream.cu_stream() as _) }
            .map_err(err("cusolverDnSetStream"))?;
        solver.params = result::dn_create_params().map_err(err("cusolverDnCreateParams"))?;
        Ok(solver)
    }
}

impl Drop for Solver {
    fn drop(&mut self) {
        use cudarc::cusolver::result;
        // SAFETY: both were made by `Solver::new` and are destroyed once,
        // here (a null `params` was never made).
        let destroyed = unsafe {
            let params = if self.params.is_null() {
                Ok(())
            } else {
                result::dn_destroy_params(self.params)
            };
            params.and(result::dn_destroy(self.handle))
        };
        if let Err(e) = destroyed {
            eprintln!(
                "weft: destroying a cuSOLVER handle of device {}: {e:?}",
                self.device
            );
        }
    }
}

/// cuSOLVER's name of a float or complex element type.
fn solver_type(dtype: DType) -> Option<cudarc::cusolver::sys::cudaDataType> {
    use cudarc::cusolver::sys::cudaDataType as T;
    Some(match dtype {
        DType::F32 => T::CUDA_R_32F,
        DType::F64 => T::CUDA_R_64F,
        DType::C32 => T::CUDA_C_32F,
        DType::C64 => T::CUDA_C_64F,
        _ => return None,
    })
}

impl Launcher<'_> {
    /// The bytes of `t`, copied to the host on the lane's stream and waited
    /// for: meant for small tensors (a status, a probe's scalar). The host
    /// has then seen the read complete, so nothing is recorded.
    pub(super) fn read_back(&self, t: &DeviceTensor) -> Result<Vec<u8>, ExecError> {
        self.order(&[t], &[])?;
        let mut host = vec![0u8; t.bytes()];
        if host.is_empty() {
            return Ok(host);
        }
        self.copy_back(&t.buf.slice(..host.len()), &mut host)?;
        Ok(host)
    }

    /// The statuses cuSOLVER wrote to `info` (after the stream has run).
    fn solver_info<const N: usize>(&self, info: &CudaSlice<i32>) -> Result<[i32; N], ExecError> {
        let mut host = [0i32; N];
        self.copy_back(info, &mut host)?;
        Ok(host)
    }

    /// Copies `src` into `dst` on the lane's stream and waits for it.
    fn copy_back<T: DeviceRepr>(
        &self,
        src: &impl DevicePtr<T>,
        dst: &mut [T],
    ) -> Result<(), ExecError> {
        self.events.count(|c| {
            c.host_copies += 1;
            c.syncs += 1;
        });
        self.stream
            .memcpy_dtoh(src, dst)
            .map_err(self.err("cuMemcpyDtoHAsync"))?;
        self.stream
            .synchronize()
            .map_err(self.err("cuStreamSynchronize"))
    }

    /// Device workspace of `bytes` (at least one) on the lane's stream.
    fn workspace(&self, bytes: usize) -> Result<CudaSlice<u8>, ExecError> {
        self.events.count(|c| {
            c.allocs += 1;
            c.frees += 1;
        });
        self.stream
            .alloc_zeros::<u8>(bytes.max(1))
            .map_err(self.err("cuMemAllocAsync"))
    }

    /// The Cholesky factor of the row-major Hermitian `a`, in place: read
    /// as column-major it is `Aᵀ = conj(A)`, whose upper factorization
    /// `conj(A) = UᴴU` leaves `Uᵀ` in the row-major lower triangle, and
    /// `A = Uᵀ conj(U) = L Lᴴ` with `L = Uᵀ`: so `potrf` of the upper
    /// triangle reads the row-major lower triangle (the CPU's) and writes
    /// `L` there. The strict upper triangle is left as it was. Returns
    /// cuSOLVER's `info` (0, or the order of the first minor that is not
    /// positive definite).
    pub(super) fn potrf(&self, solver: &Solver, a: &mut DeviceTensor) -> Result<i32, ExecError> {
        use cudarc::cusolver::sys;
        const NAME: &str = "cusolverDnXpotrf";
        let ty = solver_type(a.dtype).ok_or_else(|| self.refused(NAME, "not a field type"))?;
        let n = match a.shape[..] {
            [r, c] if r == c && r > 0 => r,
            _ => return Err(self.refused(NAME, "not a nonempty square matrix")),
        };
        self.require(a.len() == n * n, NAME, "the buffer is not the matrix")?;
        let n64 = i64::try_from(n).map_err(|_| self.refused(NAME, "too large"))?;
        let uplo = sys::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER;
        let pa = a.buf.device_ptr_mut(self.stream).0;
        let (h, p) = (solver.handle, solver.params);
        // Both closures' safety: the handle is bound to this stream
        // (`Solver::new`), `pa` addresses the n×n matrix of the type given
        // with ld n (checked); the workspaces are as the query asked and
        // `info` one `int` (`solver_run`).
        self.solver_run(
            NAME,
            &[&*a],
            |d, hb| {
                // SAFETY: as argued above (the size query).
                unsafe {
                    sys::cusolverDnXpotrf_bufferSize(
                        h,
                        p,
                        uplo,
                        n64,
                        ty,
                        pa as *const _,
                        n64,
                        ty,
                        d,
                        hb,
                    )
                }
            },
            |work, d, host, hb, info| {
                // SAFETY: as argued above (the call).
                unsafe {
                    sys::cusolverDnXpotrf(
                        h,
                        p,
                        uplo,
                        n64,
                        ty,
                        pa as *mut _,
                        n64,
                        ty,
                        work,
                        d,
                        host,
                        hb,
                        info,
                    )
                }
            },
        )
    }

    /// One cuSOLVER 64-bit call that writes `writes` (ordered on the lane's
    /// stream as writes): `query` asks for its workspace sizes (device,
    /// host), `call` runs it with (device workspace, its bytes, host
    /// workspace, its bytes, the `info` pointer); returns `info`, read back
    /// after the stream has run (the workspaces live until then).
    fn solver_run(
        &self,
        name: &'static str,
        writes: &[&DeviceTensor],
        query: impl FnOnce(&mut usize, &mut usize) -> cudarc::cusolver::sys::cusolverStatus_t,
        call: impl FnOnce(
            *mut std::ffi::c_void,
            usize,
            *mut std::ffi::c_void,
            usize,
            *mut i32,
        ) -> cudarc::cusolver::sys::cusolverStatus_t,
    ) -> Result<i32, ExecError> {
        use cudarc::cusolver::sys::cusolverStatus_t as Status;
        let err = |e: Status| ExecError::from(device_error(self.device, name, format!("{e:?}")));
        self.order(&[], writes)?;
        let (mut on_device, mut on_host) = (0usize, 0usize);
        let status = query(&mut on_device, &mut on_host);
        if status != Status::CUSOLVER_STATUS_SUCCESS {
            return Err(err(status));
        }
        let mut work = self.workspace(on_device)?;
        let mut host = vec![0u8; on_host.max(1)];
        let mut info = self
            .stream
            .alloc_zeros::<i32>(1)
            .map_err(self.err("cuMemAllocAsync"))?;
        let stream = self.stream;
        let (pw, _rw) = work.device_ptr_mut(stream);
        let (pi, _ri) = info.device_ptr_mut(stream);
        self.events.count(|c| c.enqueued += 1);
        let status = call(
            pw as *mut _,
            on_device,
            host.as_mut_ptr().cast(),
            on_host,
            pi as *mut _,
        );
        drop((_rw, _ri));
        if status != Status::CUSOLVER_STATUS_SUCCESS {
            return Err(err(status));
        }
        self.recorded(&[], writes)?;
        let [code] = self.solver_info(&info)?;
        drop((work, host));
        Ok(code)
    }

    /// The eigenvalues (ascending, into `w`, of the real type) and
    /// eigenvectors of the row-major Hermitian `a`, in place: read as
    /// column-major it is `conj(A)`, whose upper triangle is the row-major
    /// lower one (the CPU's); `syevd` leaves the eigenvectors `U` of
    /// `conj(A)` as its columns, so the row-major buffer holds `Uᵀ`, and
    /// `A`'s eigenvectors are `conj(U)`, its adjoint (the caller's step).
    pub(super) fn syevd(
        &self,
        solver: &Solver,
        a: &mut DeviceTensor,
        w: &mut DeviceTensor,
    ) -> Result<i32, ExecError> {
        use cudarc::cusolver::sys;
        const NAME: &str = "cusolverDnXsyevd";
        let ty = solver_type(a.dtype).ok_or_else(|| self.refused(NAME, "not a field type"))?;
        let real = solver_type(a.dtype.real()).ok_or_else(|| self.refused(NAME, "no real type"))?;
        let n = match a.shape[..] {
            [r, c] if r == c && r > 0 => r,
            _ => return Err(self.refused(NAME, "not a nonempty square matrix")),
        };
        self.require(a.len() == n * n, NAME, "the buffer is not the matrix")?;
        self.require(
            w.dtype == a.dtype.real() && w.len() == n,
            NAME,
            "W is not n reals",
        )?;
        let n64 = i64::try_from(n).map_err(|_| self.refused(NAME, "too large"))?;
        let (job, uplo) = (
            sys::cusolverEigMode_t::CUSOLVER_EIG_MODE_VECTOR,
            sys::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER,
        );
        // The pointers alone (cudarc's access guards are no-ops here: the
        // engine orders accesses itself).
        let stream = self.stream;
        let pa = a.buf.device_ptr_mut(stream).0;
        let pw = w.buf.device_ptr_mut(stream).0;
        let (h, p) = (solver.handle, solver.params);
        // Both closures' safety: the handle is bound to this stream, `pa`
        // addresses the n×n matrix of the type given with ld n and `pw` n
        // reals of its real type (checked); the workspaces are as the query
        // asked and `info` one `int` (`solver_run`).
        self.solver_run(
            NAME,
            &[&*a, &*w],
            |d, hb| {
                // SAFETY: as argued above (the size query).
                unsafe {
                    sys::cusolverDnXsyevd_bufferSize(
                        h,
                        p,
                        job,
                        uplo,
                        n64,
                        ty,
                        pa as *const _,
                        n64,
                        real,
                        pw as *const _,
                        ty,
                        d,
                        hb,
                    )
                }
            },
            |work, d, host, hb, info| {
                // SAFETY: as argued above (the call).
                unsafe {
                    sys::cusolverDnXsyevd(
                        h,
                        p,
                        job,
                        uplo,
                        n64,
                        ty,
                        pa as *mut _,
                        n64,
                        real,
                        pw as *mut _,
                        ty,
                        work,
                        d,
                        host,
                        hb,
                        info,
                    )
                }
            },
        )
    }

    /// The thin SVD of the column-major `rows × cols` matrix in `a`
    /// (`rows ≥ cols`, destroyed): `s` its `cols` singular values
    /// (descending, of the real type), `u` the `rows × cols` column-major
    /// left vectors, `vt` the `cols × cols` column-major `Vᴴ`.
    pub(super) fn gesvd(
        &self,
        solver: &Solver,
        a: &mut DeviceTensor,
        [s, u, vt]: [&mut DeviceTensor; 3],
        [rows, cols]: [usize; 2],
    ) -> Result<i32, ExecError> {
        use cudarc::cusolver::sys;
        const NAME: &str = "cusolverDnXgesvd";
        let ty = solver_type(a.dtype).ok_or_else(|| self.refused(NAME, "not a field type"))?;
        let real = solver_type(a.dtype.real()).ok_or_else(|| self.refused(NAME, "no real type"))?;
        self.require(rows >= cols && cols > 0, NAME, "not a nonempty tall matrix")?;
        let size = |r: usize, c: usize| r.checked_mul(c);
        self.require(
            size(rows, cols) == Some(a.len()),
            NAME,
            "A is not rows × cols",
        )?;
        self.require(
            s.dtype == a.dtype.real() && s.len() == cols,
            NAME,
            "S is not cols reals",
        )?;
        self.require(
            u.dtype == a.dtype && size(rows, cols) == Some(u.len()),
            NAME,
            "U is not rows × cols",
        )?;
        self.require(
            vt.dtype == a.dtype && size(cols, cols) == Some(vt.len()),
            NAME,
            "Vᴴ is not cols × cols",
        )?;
        let fit = |v: usize| i64::try_from(v).map_err(|_| self.refused(NAME, "too large"));
        let (m, n) = (fit(rows)?, fit(cols)?);
        let job = b'S' as std::ffi::c_schar;
        // The pointers alone (cudarc's access guards are no-ops here: the
        // engine orders accesses itself).
        let stream = self.stream;
        let pa = a.buf.device_ptr_mut(stream).0;
        let ps = s.buf.device_ptr_mut(stream).0;
        let pu = u.buf.device_ptr_mut(stream).0;
        let pv = vt.buf.device_ptr_mut(stream).0;
        let (h, p) = (solver.handle, solver.params);
        // Both closures' safety: the handle is bound to this stream; `pa`
        // addresses the rows × cols matrix (ld rows), `ps` cols reals, `pu`
        // rows × cols (ld rows) and `pv` cols × cols (ld cols), of the
        // types given (all checked); job 'S' writes exactly those; the
        // workspaces are as the query asked and `info` one `int`.
        self.solver_run(
            NAME,
            &[&*a, &*s, &*u, &*vt],
            |d, hb| {
                // SAFETY: as argued above (the size query).
                unsafe {
                    sys::cusolverDnXgesvd_bufferSize(
                        h,
                        p,
                        job,
                        job,
                        m,
                        n,
                        ty,
                        pa as *const _,
                        m,
                        real,
                        ps as *const _,
                        ty,
                        pu as *const _,
                        m,
                        ty,
                        pv as *const _,
                        n,
                        ty,
                        d,
                        hb,
                    )
                }
            },
            |work, d, host, hb, info| {
                // SAFETY: as argued above (the call).
                unsafe {
                    sys::cusolverDnXgesvd(
                        h,
                        p,
                        job,
                        job,
                        m,
                        n,
                        ty,
                        pa as *mut _,
                        m,
                        real,
                        ps as *mut _,
                        ty,
                        pu as *mut _,
                        m,
                        ty,
                        pv as *mut _,
                        n,
                        ty,
                        work,
                        d,
                        host,
                        hb,
                        info,
                    )
                }
            },
        )
    }

    /// The Householder QR of the column-major `rows × cols` matrix in `a`,
    /// in place (`R` in its upper triangle, the reflectors below), and
    /// their `min(rows, cols)` scalars into `tau`.
    pub(super) fn geqrf(
        &self,
        solver: &Solver,
        a: &mut DeviceTensor,
        tau: &mut DeviceTensor,
        [rows, cols]: [usize; 2],
    ) -> Result<i32, ExecError> {
        use cudarc::cusolver::sys;
        const NAME: &str = "cusolverDnXgeqrf";
        let ty = solver_type(a.dtype).ok_or_else(|| self.refused(NAME, "not a field type"))?;
        let k = rows.min(cols);
        self.require(k > 0, NAME, "an empty matrix")?;
        self.require(
            rows.checked_mul(cols) == Some(a.len()),
            NAME,
            "A is not rows × cols",
        )?;
        self.require(
            tau.dtype == a.dtype && tau.len() == k,
            NAME,
            "tau is not min(rows, cols) elements",
        )?;
        let fit = |v: usize| i64::try_from(v).map_err(|_| self.refused(NAME, "too large"));
        let (m, n) = (fit(rows)?, fit(cols)?);
        let stream = self.stream;
        let pa = a.buf.device_ptr_mut(stream).0;
        let pt = tau.buf.device_ptr_mut(stream).0;
        let (h, p) = (solver.handle, solver.params);
        // Both closures' safety: the handle is bound to this stream; `pa`
        // addresses the rows × cols matrix (ld rows) and `pt` k scalars, of
        // the type given (checked); the workspaces are as the query asked
        // and `info` one `int` (`solver_run`).
        self.solver_run(
            NAME,
            &[&*a, &*tau],
            |d, hb| {
                // SAFETY: as argued above (the size query).
                unsafe {
                    sys::cusolverDnXgeqrf_bufferSize(
                        h,
                        p,
                        m,
                        n,
                        ty,
                        pa as *const _,
                        m,
                        ty,
                        pt as *const _,
                        ty,
                        d,
                        hb,
                    )
                }
            },
            |work, d, host, hb, info| {
                // SAFETY: as argued above (the call).
                unsafe {
                    sys::cusolverDnXgeqrf(
                        h,
                        p,
                        m,
                        n,
                        ty,
                        pa as *mut _,
                        m,
                        ty,
                        pt as *mut _,
                        ty,
                        work,
                        d,
                        host,
                        hb,
                        info,
                    )
                }
            },
        )
    }

    /// The first `k` columns of `Q`, in place over the `rows × k`
    /// column-major reflectors `geqrf` left in `a` (ld `rows`), from their
    /// scalars `tau` (`orgqr`, `ungqr` for the complex types: the 64-bit
    /// API has none).
    pub(super) fn orgqr(
        &self,
        solver: &Solver,
        a: &mut DeviceTensor,
        tau: &DeviceTensor,
        [rows, k]: [usize; 2],
    ) -> Result<i32, ExecError> {
        use cudarc::cusolver::sys;
        const NAME: &str = "cusolverDn<t>orgqr";
        self.require(a.dtype.is_field(), NAME, "not a field type")?;
        self.require(rows >= k && k > 0, NAME, "not a nonempty tall matrix")?;
        self.require(
            rows.checked_mul(k).is_some_and(|n| n <= a.len()),
            NAME,
            "A is shorter than rows × k",
        )?;
        self.require(
            tau.dtype == a.dtype && tau.len() == k,
            NAME,
            "tau is not k elements",
        )?;
        let fit = |v: usize| i32::try_from(v).map_err(|_| self.refused(NAME, "too large"));
        let (m, kk) = (fit(rows)?, fit(k)?);
        let size = a.dtype.size();
        let stream = self.stream;
        let pa = a.buf.device_ptr_mut(stream).0;
        let pt = tau.buf.device_ptr(stream).0;
        let h = solver.handle;
        let dtype = a.dtype;
        // Both closures' safety: the handle is bound to this stream; `pa`
        // addresses at least the rows × k matrix (ld rows) and `pt` k
        // scalars, of the element type each typed call takes (checked,
        // and matched by `dtype`); the device workspace holds the `lwork`
        // elements the query asked for, and `info` is one `int`.
        self.solver_run(
            NAME,
            &[&*a],
            |d, hb| {
                let mut lwork = 0i32;
                // SAFETY: as argued above (the size query).
                let status = unsafe {
                    match dtype {
                        DType::F32 => sys::cusolverDnSorgqr_bufferSize(
                            h,
                            m,
                            kk,
                            kk,
                            pa as *const _,
                            m,
                            pt as *const _,
                            &mut lwork,
                        ),
                        DType::F64 => sys::cusolverDnDorgqr_bufferSize(
                            h,
                            m,
                            kk,
                            kk,
                            pa as *const _,
                            m,
                            pt as *const _,
                            &mut lwork,
                        ),
                        DType::C32 => sys::cusolverDnCungqr_bufferSize(
                            h,
                            m,
                            kk,
                            kk,
                            pa as *const _,
                            m,
                            pt as *const _,
                            &mut lwork,
                        ),
                        _ => sys::cusolverDnZungqr_bufferSize(
                            h,
                            m,
                            kk,
                            kk,
                            pa as *const _,
                            m,
                            pt as *const _,
                            &mut lwork,
                        ),
                    }
                };
                *d = usize::try_from(lwork).unwrap_or(0) * size;
                *hb = 0;
                status
            },
            |work, d, _host, _hb, info| {
                let lwork = i32::try_from(d / size).unwrap_or(i32::MAX);
                // SAFETY: as argued above (the call).
                unsafe {
                    match dtype {
                        DType::F32 => sys::cusolverDnSorgqr(
                            h,
                            m,
                            kk,
                            kk,
                            pa as *mut _,
                            m,
                            pt as *const _,
                            work.cast(),
                            lwork,
                            info,
                        ),
                        DType::F64 => sys::cusolverDnDorgqr(
                            h,
                            m,
                            kk,
                            kk,
                            pa as *mut _,
                            m,
                            pt as *const _,
                            work.cast(),
                            lwork,
                            info,
                        ),
                        DType::C32 => sys::cusolverDnCungqr(
                            h,
                            m,
                            kk,
                            kk,
                            pa as *mut _,
                            m,
                            pt as *const _,
                            work.cast(),
                            lwork,
                            info,
                        ),
                        _ => sys::cusolverDnZungqr(
                            h,
                            m,
                            kk,
                            kk,
                            pa as *mut _,
                            m,
                            pt as *const _,
                            work.cast(),
                            lwork,
                            info,
                        ),
                    }
                }
            },
        )
    }

    /// `A X = B` for row-major `a` (n×n, overwritten by the LU factors of
    /// its column-major reading `Aᵀ`) and `b` holding `B` column-major
    /// (n×nrhs, overwritten by `X`): `getrf` of `Aᵀ`, then `getrs` with
    /// the transpose, which solves `(Aᵀ)ᵀ X = B`. Returns `getrf`'s
    /// `info` (0, or the first zero pivot's order), then `getrs`'s.
    pub(super) fn lu_solve(
        &self,
        solver: &Solver,
        a: &mut DeviceTensor,
        b: &mut DeviceTensor,
        [n, nrhs]: [usize; 2],
    ) -> Result<[i32; 2], ExecError> {
        use cudarc::cusolver::sys;
        const NAME: &str = "cusolverDnXgetrf";
        let ty = solver_type(a.dtype).ok_or_else(|| self.refused(NAME, "not a field type"))?;
        self.require(a.dtype == b.dtype, NAME, "element types differ")?;
        self.require(n > 0 && nrhs > 0, NAME, "an empty system")?;
        self.require(n.checked_mul(n) == Some(a.len()), NAME, "A is not n×n")?;
        self.require(
            n.checked_mul(nrhs) == Some(b.len()),
            NAME,
            "B is not n×nrhs",
        )?;
        let fit = |v: usize| i64::try_from(v).map_err(|_| self.refused(NAME, "too large"));
        let (n64, r64) = (fit(n)?, fit(nrhs)?);
        let err =
            |call, e: sys::cusolverStatus_t| device_error(self.device, call, format!("{e:?}"));
        self.order(&[], &[&*a, &*b])?;
        let stream = self.stream;
        let (pa, _ra) = a.buf.device_ptr_mut(stream);
        let (pb, _rb) = b.buf.device_ptr_mut(stream);
        let (mut on_device, mut on_host) = (0usize, 0usize);
        // SAFETY: the handle is bound to this stream, `pa` addresses the
        // n×n matrix of the type given with ld n (checked), and the sizes
        // are written to the two locals.
        let status = unsafe {
            sys::cusolverDnXgetrf_bufferSize(
                solver.handle,
                solver.params,
                n64,
                n64,
                ty,
                pa as *const _,
                n64,
                ty,
                &mut on_device,
                &mut on_host,
            )
        };
        if status != sys::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
            return Err(err(NAME, status).into());
        }
        let mut work = self.workspace(on_device)?;
        let mut host = vec![0u8; on_host.max(1)];
        let alloc = |len: usize| {
            self.stream
                .alloc_zeros::<i64>(len)
                .map_err(self.err("cuMemAllocAsync"))
        };
        let mut pivots = alloc(n)?;
        let mut infos = self
            .stream
            .alloc_zeros::<i32>(2)
            .map_err(self.err("cuMemAllocAsync"))?;
        let (pw, _rw) = work.device_ptr_mut(stream);
        let (pp, _rp) = pivots.device_ptr_mut(stream);
        let (pi, _ri) = infos.device_ptr_mut(stream);
        self.events.count(|c| c.enqueued += 2);
        // SAFETY: as above, with a device workspace of `on_device` bytes,
        // a host one of `on_host` (alive until the status is read below,
        // after the stream has run), `n` 64-bit pivots and two `int`
        // statuses on the device; `getrs` reads the factors and pivots
        // `getrf` wrote (the same stream orders them) and overwrites the
        // n×nrhs column-major `B` (ld n, checked) with `X`.
        let statuses = unsafe {
            let lu = sys::cusolverDnXgetrf(
                solver.handle,
                solver.params,
                n64,
                n64,
                ty,
                pa as *mut _,
                n64,
                pp as *mut _,
                ty,
                pw as *mut _,
                on_device,
                host.as_mut_ptr().cast(),
                on_host,
                pi as *mut _,
            );
            let solve = if lu == sys::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
                sys::cusolverDnXgetrs(
                    solver.handle,
                    solver.params,
                    sys::cublasOperation_t::CUBLAS_OP_T,
                    n64,
                    r64,
                    ty,
                    pa as *const _,
                    n64,
                    pp as *const _,
                    ty,
                    pb as *mut _,
                    n64,
                    (pi as *mut i32).wrapping_add(1),
                )
            } else {
                lu
            };
            (lu, solve)
        };
        drop((_ra, _rb, _rw, _rp, _ri));
        if statuses.0 != sys::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
            return Err(err(NAME, statuses.0).into());
        }
        if statuses.1 != sys::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
            return Err(err("cusolverDnXgetrs", statuses.1).into());
        }
        self.recorded(&[], &[&*a, &*b])?;
        let codes = self.solver_info(&infos)?;
        drop((work, host, pivots));
        Ok(codes)
    }
}
