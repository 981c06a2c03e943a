//! cuBLAS: whether it loads, a lane's handle moved to another stream, and
//! the one product call, a strided batched GEMM.

use std::sync::Arc;

use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};

use super::launch::Launcher;
use super::{device_error, DeviceTensor};
use weft_core::{DType, DeviceError, ExecError};

/// Whether cuBLAS can be loaded.
pub fn cublas_present() -> bool {
    // SAFETY: as `driver_present`, for the cuBLAS library.
    unsafe { cudarc::cublas::sys::is_culib_present() }
}

/// Moves a retired lane's cuBLAS handle to `stream`: `stream` first waits,
/// on the device, for all of `old`'s work, so nothing the handle enqueues
/// next can overlap what it enqueued before (its workspace may still be in
/// use by the old lane's last product).
pub(super) fn rebind_blas(
    device: usize,
    blas: &mut CudaBlas,
    old: &Arc<CudaStream>,
    stream: &Arc<CudaStream>,
) -> Result<(), DeviceError> {
    stream
        .join(old)
        .map_err(|e| device_error(device, "cuStreamWaitEvent", e))?;
    // SAFETY: after the join above, the handle's work on `old` is ordered
    // before anything it does on `stream`, and the old lane is gone, so the
    // handle is used by one stream at a time, as cuBLAS requires.
    unsafe { blas.set_stream(stream.clone()) }
        .map_err(|e| device_error(device, "cublasSetStream", format!("{e:?}")))
}

impl Launcher<'_> {
    /// `out = a @ b` over a strided batch: `[nb, m, k] @ [nb, k, n]`, row
    /// major, batches `a_stride` and `b_stride` elements apart (0 re-reads
    /// one matrix), through one `cublasGemmStridedBatchedEx` on `blas`
    /// (bound to this launcher's stream). Row-major `C = A·B` is
    /// column-major `Cᵀ = Bᵀ·Aᵀ`, so cuBLAS gets the operands swapped and
    /// no transposes. Every dimension must be nonzero and fit `i32`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn gemm(
        &self,
        blas: &CudaBlas,
        out: &mut DeviceTensor,
        (a, a_stride): (&DeviceTensor, usize),
        (b, b_stride): (&DeviceTensor, usize),
        [nb, m, k, n]: [usize; 4],
    ) -> Result<(), ExecError> {
        use cudarc::cublas::sys::{
            cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t, cudaDataType,
        };
        const NAME: &str = "cublasGemmStridedBatchedEx";
        let dtype = a.dtype;
        let same = out.dtype == dtype && b.dtype == dtype;
        self.require(same, NAME, "element types differ")?;
        let dims = [nb, m, k, n];
        let fits = dims.iter().all(|&x| x > 0 && i32::try_from(x).is_ok());
        self.require(fits, NAME, "a dimension is zero or past i32")?;
        // The elements each operand's batch reaches.
        let reach = |stride: usize, rows: usize, cols: usize| {
            (nb - 1)
                .checked_mul(stride)
                .and_then(|x| x.checked_add(rows * cols))
        };
        self.require(
            reach(a_stride, m, k).is_some_and(|r| r <= a.len()),
            NAME,
            "A is too short",
        )?;
        self.require(
            reach(b_stride, k, n).is_some_and(|r| r <= b.len()),
            NAME,
            "B is too short",
        )?;
        self.require(
            reach(m * n, m, n).is_some_and(|r| r <= out.len()),
            NAME,
            "C is too short",
        )?;
        let (data_type, compute) = match dtype {
            DType::F32 => (
                cudaDataType::CUDA_R_32F,
                cublasComputeType_t::CUBLAS_COMPUTE_32F,
            ),
            DType::F64 => (
                cudaDataType::CUDA_R_64F,
                cublasComputeType_t::CUBLAS_COMPUTE_64F,
            ),
            DType::C32 => (
                cudaDataType::CUDA_C_32F,
                cublasComputeType_t::CUBLAS_COMPUTE_32F,
            ),
            DType::C64 => (
                cudaDataType::CUDA_C_64F,
                cublasComputeType_t::CUBLAS_COMPUTE_64F,
            ),
            other => return Err(self.refused(NAME, &format!("no {other} product"))),
        };
        // alpha = 1, beta = 0 in the compute type (complex: re, im).
        let (one32, zero32) = ([1.0f32, 0.0], [0.0f32, 0.0]);
        let (one64, zero64) = ([1.0f64, 0.0], [0.0f64, 0.0]);
        let (alpha, beta): (*const std::ffi::c_void, *const std::ffi::c_void) = match dtype {
            DType::F32 | DType::C32 => (one32.as_ptr().cast(), zero32.as_ptr().cast()),
            _ => (one64.as_ptr().cast(), zero64.as_ptr().cast()),
        };
        self.order(&[a, b], &[&*out])?;
        let stream = self.stream;
        let (pa, _ra) = a.buf.device_ptr(stream);
        let (pb, _rb) = b.buf.device_ptr(stream);
        let (pc, _rc) = out.buf.device_ptr_mut(stream);
        let [nb, m, k, n] = dims.map(|x| x as i32);
        // SAFETY: the handle is bound to this stream (the engine binds a
        // lane's handle to the lane's stream before its first product); A'
        // = B is n×k column-major with ld n, B' = A is k×m with ld k, C is
        // n×m with ld n, each batch `stride` elements on, and every buffer
        // holds the elements those shapes reach and of the data type given
        // (all checked above). alpha and beta point to host scalars of the
        // compute type that outlive the call, which reads them before
        // returning (host pointer mode).
        unsafe {
            cudarc::cublas::result::gemm_strided_batched_ex(
                *blas.handle(),
                cublasOperation_t::CUBLAS_OP_N,
                cublasOperation_t::CUBLAS_OP_N,
                n,
                m,
                k,
                alpha,
                pb as *const _,
                data_type,
                n,
                b_stride as i64,
                pa as *const _,
                data_type,
                k,
                a_stride as i64,
                beta,
                pc as *mut _,
                data_type,
                n,
                (m as i64) * (n as i64),
                nb,
                compute,
                cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(|e| device_error(self.device, NAME, format!("{e:?}")))?;
        drop((_ra, _rb, _rc));
        self.recorded(&[a, b], &[&*out])
    }
}
