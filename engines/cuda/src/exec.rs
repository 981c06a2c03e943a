//! The CUDA engine's op methods: each op as allocations, strided copies,
//! kernel launches and cuBLAS products on one lane's stream, and einsum
//! through the shared lowering. No `unsafe` here: every launch goes
//! through the checked wrappers of `launch`, `cublas` and `cusolver`.

use cudarc::cublas::CudaBlas;

use super::codes;
use super::kernels::Dims;
use super::launch::{Create, Launcher, MapArgs, RowArgs};
use super::memory::alloc;
use super::DeviceTensor;
use weft_core::layout::{row_major, View};
use weft_core::ops::{
    broadcast_view, diag_embed_view, permute_view, ArgOp, BinaryOp, CmpOp, Contraction, MatOp,
    ReduceOp, Scalar, UnaryOp,
};
use weft_core::{DType, TensorError};
use weft_core::{ExecError, Place, Unsupported};

/// What one op needs of the engine: a launcher on the lane's stream and,
/// for products, the lane's cuBLAS handle. Borrowed apart from the store,
/// so the inputs can be read while it runs.
pub(super) struct Exec<'a> {
    pub(super) launch: Launcher<'a>,
    pub(super) blas: Option<&'a CudaBlas>,
    /// The lane's cuSOLVER handle, for decompositions.
    pub(super) solver: Option<&'a super::cusolver::Solver>,
}

impl Exec<'_> {
    fn device(&self) -> usize {
        self.launch.device
    }

    /// The kernels walk at most [`super::kernels::MAX_RANK`] axes.
    pub(super) fn too_many_axes(&self, op: &'static str, dtype: DType) -> ExecError {
        ExecError::Unsupported(Unsupported {
            place: Place::Cuda(self.device()),
            op,
            dtype,
            reason: Some("more than 8 axes"),
        })
    }

    /// Device memory for a `dtype` tensor of `shape`, in the lane
    /// stream's order, uninitialized: every caller writes all of it on
    /// that stream before it is read.
    pub(super) fn alloc(&self, dtype: DType, shape: &[usize]) -> Result<DeviceTensor, ExecError> {
        let launch = &self.launch;
        alloc(launch.stream, launch.events, self.device(), dtype, shape)
    }

    /// Copies `view` of `src` into a new contiguous tensor.
    pub(super) fn gather(
        &mut self,
        src: &DeviceTensor,
        view: &View,
    ) -> Result<DeviceTensor, ExecError> {
        let mut out = self.alloc(src.dtype, &view.shape)?;
        let dims =
            Dims::gather(view).ok_or_else(|| self.too_many_axes("strided copy", src.dtype))?;
        self.launch.strided_copy(&mut out, src, &dims)?;
        Ok(out)
    }

    pub(super) fn binary(
        &mut self,
        op: BinaryOp,
        a: &DeviceTensor,
        b: &DeviceTensor,
        shape: &[usize],
    ) -> Result<DeviceTensor, ExecError> {
        let mut out = self.alloc(a.dtype, shape)?;
        let sa = broadcast_view(&a.shape, shape)?;
        let sb = broadcast_view(&b.shape, shape)?;
        let dims = Dims::new(shape, &[(&sa.strides, 0), (&sb.strides, 0)])
            .ok_or_else(|| self.too_many_axes(op.name(), a.dtype))?;
        let code = codes::binary(op);
        self.launch.binary(&mut out, a, b, code, &dims)?;
        Ok(out)
    }

    pub(super) fn binary_scalar(
        &mut self,
        op: BinaryOp,
        a: &DeviceTensor,
        value: Scalar,
        scalar_first: bool,
    ) -> Result<DeviceTensor, ExecError> {
        let code = codes::binary(op);
        if !a.dtype.is_field() {
            // As the CPU: the scalar as a rank-0 tensor (exact for every
            // 64-bit integer), then the broadcast op.
            let s = self.fill(a.dtype, &[], value)?;
            let (l, r) = if scalar_first { (&s, a) } else { (a, &s) };
            return self.binary(op, l, r, &a.shape);
        }
        let mut out = self.alloc(a.dtype, &a.shape)?;
        self.launch
            .binary_scalar(&mut out, a, value.parts(), code, scalar_first)?;
        Ok(out)
    }

    pub(super) fn unary(
        &mut self,
        op: UnaryOp,
        a: &DeviceTensor,
        out_dtype: DType,
    ) -> Result<DeviceTensor, ExecError> {
        let mut out = self.alloc(out_dtype, &a.shape)?;
        self.launch.unary(&mut out, a, op)?;
        Ok(out)
    }

    /// `op` over `axes`: the reduced axes are moved last (one gather when
    /// they are not already), then one block reduces each row (or each
    /// part of a long row, the partials combined by a second launch).
    pub(super) fn reduce(
        &mut self,
        op: ReduceOp,
        a: &DeviceTensor,
        axes: &[usize],
        out_dtype: DType,
        out_shape: &[usize],
    ) -> Result<DeviceTensor, ExecError> {
        // The type the reduction runs in, as the CPU's: any and all of
        // bool (nonzero), integer and bool sums and products in i64, an
        // integer mean in f64.
        let exact = !a.dtype.is_field();
        let within = match op {
            ReduceOp::Any | ReduceOp::All => DType::Bool,
            ReduceOp::Sum | ReduceOp::Prod if exact => DType::I64,
            ReduceOp::Mean if exact => DType::F64,
            _ => a.dtype,
        };
        if within != a.dtype {
            let converted = self.cast(a, within)?;
            return self.reduce(op, &converted, axes, out_dtype, out_shape);
        }
        let rank = a.shape.len();
        let kept: Vec<usize> = (0..rank).filter(|i| !axes.contains(i)).collect();
        let perm: Vec<usize> = kept.iter().copied().chain(axes.iter().copied()).collect();
        let moved;
        let src = if perm.iter().enumerate().all(|(i, &p)| i == p) {
            a
        } else {
            moved = self.gather(a, &permute_view(&a.shape, &perm)?)?;
            &moved
        };
        let rows: usize = kept.iter().map(|&i| a.shape[i]).product();
        let len: usize = axes.iter().map(|&i| a.shape[i]).product();
        let mut out = self.alloc(out_dtype, out_shape)?;
        if rows == 0 {
            return Ok(out);
        }
        let parts = reduce_parts(rows, len);
        let code = codes::reduce(op);
        let count = len as f64;
        let norm = |squared, root| RowArgs::Norm { squared, root };
        let reduce = |op| RowArgs::Reduce { op, count };
        if op == ReduceOp::Norm {
            if parts == 1 {
                self.launch
                    .rows(&mut out, src, [rows, len, 1], norm(false, true))?;
            } else {
                // Sums of squares per part, then their sums and roots (on
                // the real type's kernels).
                let mut partial = self.alloc(out_dtype, &[rows * parts])?;
                self.launch
                    .rows(&mut partial, src, [rows, len, parts], norm(false, false))?;
                self.launch
                    .rows(&mut out, &partial, [rows, parts, 1], norm(true, true))?;
            }
        } else if parts == 1 {
            self.launch
                .rows(&mut out, src, [rows, len, 1], reduce(code))?;
        } else {
            // Partials per part (a mean's are sums), then one per row.
            let first = if op == ReduceOp::Mean {
                codes::reduce(ReduceOp::Sum)
            } else {
                code
            };
            let mut partial = self.alloc(a.dtype, &[rows * parts])?;
            self.launch
                .rows(&mut partial, src, [rows, len, parts], reduce(first))?;
            self.launch
                .rows(&mut out, &partial, [rows, parts, 1], reduce(code))?;
        }
        Ok(out)
    }

    /// The index of the extremum along `axis` (moved last by one gather
    /// when it is not), as many threads per row as its length needs.
    pub(super) fn arg_reduce(
        &mut self,
        op: ArgOp,
        a: &DeviceTensor,
        axis: usize,
        out_shape: &[usize],
    ) -> Result<DeviceTensor, ExecError> {
        let rank = a.shape.len();
        let perm: Vec<usize> = (0..rank).filter(|&i| i != axis).chain([axis]).collect();
        let moved;
        let src = if axis + 1 == rank {
            a
        } else {
            moved = self.gather(a, &permute_view(&a.shape, &perm)?)?;
            &moved
        };
        let len = a.shape[axis];
        let rows = a.len() / len.max(1);
        let mut out = self.alloc(DType::I64, out_shape)?;
        if rows == 0 {
            return Ok(out);
        }
        let max = op == ArgOp::Max;
        self.launch
            .rows(&mut out, src, [rows, len, 1], RowArgs::Arg { max })?;
        Ok(out)
    }

    pub(super) fn fill(
        &mut self,
        dtype: DType,
        shape: &[usize],
        value: Scalar,
    ) -> Result<DeviceTensor, ExecError> {
        let mut out = self.alloc(dtype, shape)?;
        let what = if dtype.is_field() {
            let (re, im) = value.parts();
            Create::Fill(re, im)
        } else {
            // The vocabulary checked that the value is of the type.
            Create::FillInt(match value {
                Scalar::Int(i) => i,
                Scalar::Bool(b) => i64::from(b),
                Scalar::Real(x) => x as i64,
                Scalar::Complex(z) => z.re as i64,
            })
        };
        self.launch.create(&mut out, what)?;
        Ok(out)
    }

    pub(super) fn arange(
        &mut self,
        dtype: DType,
        start: f64,
        step: f64,
        len: usize,
    ) -> Result<DeviceTensor, ExecError> {
        let what = if dtype.is_field() {
            Create::Arange(start, step)
        } else {
            let (first, by) = weft_core::ops::integer_range(dtype, start, step, len)?;
            Create::ArangeInt(first, by)
        };
        let mut out = self.alloc(dtype, &[len])?;
        self.launch.create(&mut out, what)?;
        Ok(out)
    }

    pub(super) fn eye(
        &mut self,
        dtype: DType,
        rows: usize,
        cols: usize,
    ) -> Result<DeviceTensor, ExecError> {
        let mut out = self.alloc(dtype, &[rows, cols])?;
        self.launch.create(&mut out, Create::Eye)?;
        Ok(out)
    }

    /// A copy of `src` (a reshape, or an einsum that only reorders nothing).
    pub(super) fn duplicate(
        &mut self,
        src: &DeviceTensor,
        shape: &[usize],
    ) -> Result<DeviceTensor, ExecError> {
        let mut out = self.alloc(src.dtype, shape)?;
        self.launch.order(&[src], &[&out])?;
        self.launch
            .stream
            .memcpy_dtod(&*src.buf, &mut *out.buf)
            .map_err(|e| super::device_error(self.device(), "cuMemcpyDtoDAsync", e))?;
        self.launch.recorded(&[src], &[&out])?;
        Ok(out)
    }

    /// `[nb, m, k] @ [nb, k, n]` with per-batch strides (0 broadcasts one
    /// matrix to every batch), through one strided batched GEMM.
    fn gemm(
        &mut self,
        a: (&DeviceTensor, usize),
        b: (&DeviceTensor, usize),
        [nb, m, k, n]: [usize; 4],
        out_shape: &[usize],
    ) -> Result<DeviceTensor, ExecError> {
        let dtype = a.0.dtype;
        if nb * m * n == 0 {
            return self.alloc(dtype, out_shape);
        }
        if k == 0 {
            return self.fill(dtype, out_shape, Scalar::Real(0.0));
        }
        if [nb, m, k, n].into_iter().any(|x| i32::try_from(x).is_err()) {
            return Err(TensorError::TooLarge {
                shape: out_shape.to_vec(),
            }
            .into());
        }
        let blas = self.blas.ok_or_else(|| {
            ExecError::Device(super::device_error(
                self.device(),
                "cublasGemmStridedBatchedEx",
                "no cuBLAS handle bound to the lane",
            ))
        })?;
        let mut out = self.alloc(dtype, out_shape)?;
        self.launch.gemm(blas, &mut out, a, b, [nb, m, k, n])?;
        Ok(out)
    }

    /// `a @ b` with the batch axes broadcast: a side whose batch is all
    /// ones is read with stride 0; any other broadcast is made real first.
    pub(super) fn matmul(
        &mut self,
        a: &DeviceTensor,
        b: &DeviceTensor,
        out_shape: &[usize],
    ) -> Result<DeviceTensor, ExecError> {
        let r = out_shape.len();
        let batch = &out_shape[..r - 2];
        let nb: usize = batch.iter().product();
        let (m, k, n) = (
            a.shape[a.shape.len() - 2],
            a.shape[a.shape.len() - 1],
            b.shape[b.shape.len() - 1],
        );
        let (a_full, sa) = self.batch_operand(a, batch, m, k)?;
        let (b_full, sb) = self.batch_operand(b, batch, k, n)?;
        let (a, b) = (a_full.as_ref().unwrap_or(a), b_full.as_ref().unwrap_or(b));
        self.gemm((a, sa), (b, sb), [nb, m, k, n], out_shape)
    }

    /// A `[…, rows, cols]` operand as a strided batch over `batch`: read as
    /// it is (one matrix per batch, or stride 0 when its batch is all
    /// ones), or broadcast into a new tensor first. Returns that tensor,
    /// if made, and the batch stride.
    fn batch_operand(
        &mut self,
        t: &DeviceTensor,
        batch: &[usize],
        rows: usize,
        cols: usize,
    ) -> Result<(Option<DeviceTensor>, usize), ExecError> {
        let own: usize = t.shape[..t.shape.len() - 2].iter().product();
        if own == batch.iter().product::<usize>() {
            Ok((None, rows * cols))
        } else if own == 1 {
            Ok((None, 0))
        } else {
            let full: Vec<usize> = batch.iter().copied().chain([rows, cols]).collect();
            let view = broadcast_view(&t.shape, &full)?;
            Ok((Some(self.gather(t, &view)?), rows * cols))
        }
    }

    /// `a op b` as a `bool` tensor, broadcast.
    pub(super) fn compare(
        &mut self,
        op: CmpOp,
        a: &DeviceTensor,
        b: &DeviceTensor,
        shape: &[usize],
    ) -> Result<DeviceTensor, ExecError> {
        let mut out = self.alloc(DType::Bool, shape)?;
        let sa = broadcast_view(&a.shape, shape)?;
        let sb = broadcast_view(&b.shape, shape)?;
        let dims = Dims::new(shape, &[(&sa.strides, 0), (&sb.strides, 0)])
            .ok_or_else(|| self.too_many_axes(op.name(), a.dtype))?;
        self.launch
            .compare(&mut out, a, b, codes::compare(op), &dims)?;
        Ok(out)
    }

    /// Where `mask` is true `a`, else `b`, the three broadcast.
    pub(super) fn select(
        &mut self,
        [mask, a, b]: [&DeviceTensor; 3],
        shape: &[usize],
    ) -> Result<DeviceTensor, ExecError> {
        let mut out = self.alloc(a.dtype, shape)?;
        let walks = [mask, a, b].map(|t| broadcast_view(&t.shape, shape).map(|v| v.strides));
        let [sm, sa, sb] = walks;
        let (sm, sa, sb) = (sm?, sa?, sb?);
        let dims = Dims::new(shape, &[(&sm, 0), (&sa, 0), (&sb, 0)])
            .ok_or_else(|| self.too_many_axes("select", a.dtype))?;
        self.launch.select(&mut out, [mask, a, b], &dims)?;
        Ok(out)
    }

    /// A one-input kernel into a new tensor of `dtype`, `a`'s shape.
    pub(super) fn map(
        &mut self,
        a: &DeviceTensor,
        dtype: DType,
        args: MapArgs,
    ) -> Result<DeviceTensor, ExecError> {
        let mut out = self.alloc(dtype, &a.shape)?;
        self.launch.map(&mut out, a, args)?;
        Ok(out)
    }

    /// The lower or upper triangle of the last two axes.
    pub(super) fn triangle(
        &mut self,
        a: &DeviceTensor,
        k: isize,
        upper: bool,
    ) -> Result<DeviceTensor, ExecError> {
        let r = a.shape.len();
        let (rows, cols) = (a.shape[r - 2], a.shape[r - 1]);
        let args = MapArgs::Triangle {
            rows,
            cols,
            k,
            upper,
        };
        self.map(a, a.dtype, args)
    }

    /// `a` converted to `dtype`: a copy when the type is `a`'s.
    pub(super) fn cast(
        &mut self,
        a: &DeviceTensor,
        dtype: DType,
    ) -> Result<DeviceTensor, ExecError> {
        if dtype == a.dtype {
            return self.duplicate(a, &a.shape);
        }
        self.map(a, dtype, MapArgs::Cast)
    }

    /// `a` inside a tensor of `out_shape` filled with `value`: one fill,
    /// then one strided copy of `a` into the interior.
    pub(super) fn pad(
        &mut self,
        a: &DeviceTensor,
        widths: &[(usize, usize)],
        value: Scalar,
        out_shape: &[usize],
    ) -> Result<DeviceTensor, ExecError> {
        let mut out = self.fill(a.dtype, out_shape, value)?;
        let dst = row_major(out_shape);
        let base: isize = widths
            .iter()
            .zip(&dst)
            .map(|(&(before, _), &stride)| before as isize * stride)
            .sum();
        let own = row_major(&a.shape);
        let dims = Dims::new(&a.shape, &[(&own, 0), (&dst, base)])
            .ok_or_else(|| self.too_many_axes("pad", a.dtype))?;
        self.launch.strided_copy(&mut out, a, &dims)?;
        Ok(out)
    }

    /// The last axis of `a` on the diagonals of output axes `axes`: zeros,
    /// then one strided copy of `a` onto the diagonals' offsets.
    pub(super) fn diag_embed(
        &mut self,
        a: &DeviceTensor,
        axes: [usize; 2],
    ) -> Result<DeviceTensor, ExecError> {
        let (shape, placed) = diag_embed_view(&a.shape, axes)?;
        let mut out = self.fill(a.dtype, &shape, Scalar::Real(0.0))?;
        let own = row_major(&a.shape);
        let dims = Dims::new(&a.shape, &[(&own, 0), (&placed.strides, 0)])
            .ok_or_else(|| self.too_many_axes("diag_embed", a.dtype))?;
        self.launch.strided_copy(&mut out, a, &dims)?;
        Ok(out)
    }

    /// `t` as `op` reads it: transposed by a copy, conjugated by a map
    /// (nothing for a real type); `None` when it is read as it is.
    fn operand(&mut self, t: &DeviceTensor, op: MatOp) -> Result<Option<DeviceTensor>, ExecError> {
        let mut out = None;
        if op.transpose {
            let r = t.shape.len();
            let mut perm: Vec<usize> = (0..r).collect();
            perm.swap(r - 2, r - 1);
            out = Some(self.gather(t, &permute_view(&t.shape, &perm)?)?);
        }
        if op.conjugate && t.dtype.is_complex() {
            let read = out.as_ref().unwrap_or(t);
            out = Some(self.unary(UnaryOp::Conj, read, t.dtype)?);
        }
        Ok(out)
    }

    /// `alpha · op(a) @ op(b) + beta · c`, as the CPU computes it: the
    /// operands read as `ops` say, one product, the scalings and the sum
    /// as elementwise kernels; `c` not read when `beta` is 0.
    pub(super) fn gemm_accumulate(
        &mut self,
        [a, b, c]: [&DeviceTensor; 3],
        ops: [MatOp; 2],
        [alpha, beta]: [Scalar; 2],
        out_shape: &[usize],
    ) -> Result<DeviceTensor, ExecError> {
        let (ta, tb) = (self.operand(a, ops[0])?, self.operand(b, ops[1])?);
        let product = self.matmul(
            ta.as_ref().unwrap_or(a),
            tb.as_ref().unwrap_or(b),
            out_shape,
        )?;
        let scaled = if alpha.parts() == (1.0, 0.0) {
            product
        } else {
            self.binary_scalar(BinaryOp::Mul, &product, alpha, false)?
        };
        if beta.is_zero() {
            return Ok(scaled);
        }
        let c = self.binary_scalar(BinaryOp::Mul, c, beta, false)?;
        self.binary(BinaryOp::Add, &scaled, &c, out_shape)
    }

    /// `x · alpha + y · beta`, broadcast, as the CPU computes it.
    pub(super) fn axpby(
        &mut self,
        [x, y]: [&DeviceTensor; 2],
        [alpha, beta]: [Scalar; 2],
        out_shape: &[usize],
    ) -> Result<DeviceTensor, ExecError> {
        let ax = self.binary_scalar(BinaryOp::Mul, x, alpha, false)?;
        if beta.is_zero() {
            // β = 0 does not read `y` (its NaNs stay out), as BLAS.
            if ax.shape == out_shape {
                return Ok(ax);
            }
            let view = weft_core::ops::broadcast_view(&ax.shape, out_shape)?;
            return self.gather(&ax, &view);
        }
        let by = self.binary_scalar(BinaryOp::Mul, y, beta, false)?;
        self.binary(BinaryOp::Add, &ax, &by, out_shape)
    }

    /// `minimum(maximum(x, lo), hi)`, the three broadcast.
    pub(super) fn clamp_between(
        &mut self,
        [x, lo, hi]: [&DeviceTensor; 3],
        out_shape: &[usize],
    ) -> Result<DeviceTensor, ExecError> {
        let raised_shape = weft_core::ops::broadcast_shapes("clamp_between", &x.shape, &lo.shape)?;
        let raised = self.binary(BinaryOp::Maximum, x, lo, &raised_shape)?;
        self.binary(BinaryOp::Minimum, &raised, hi, out_shape)
    }

    /// An integer tensor limited to `[lo, hi]` as the CPU limits it: the
    /// bounds rounded inward and saturated into the type (a NaN bound is
    /// 0), then a maximum and a minimum against them, so an empty interval
    /// gives `hi`.
    pub(super) fn clamp_integers(
        &mut self,
        a: &DeviceTensor,
        lo: f64,
        hi: f64,
    ) -> Result<DeviceTensor, ExecError> {
        let bound = |v: f64| match a.dtype {
            DType::I32 => i64::from(v as i32),
            _ => v as i64,
        };
        let lo = self.fill(a.dtype, &[], Scalar::Int(bound(lo.ceil())))?;
        let hi = self.fill(a.dtype, &[], Scalar::Int(bound(hi.floor())))?;
        let raised = self.binary(BinaryOp::Maximum, a, &lo, &a.shape)?;
        self.binary(BinaryOp::Minimum, &raised, &hi, &a.shape)
    }

    /// `Σ a_i b_i` (of `conj(a)` if `conjugate`): the products, then one
    /// sum, into a rank-0 tensor.
    pub(super) fn dot(
        &mut self,
        a: &DeviceTensor,
        b: &DeviceTensor,
        conjugate: bool,
    ) -> Result<DeviceTensor, ExecError> {
        let conj = if conjugate && a.dtype.is_complex() {
            Some(self.unary(UnaryOp::Conj, a, a.dtype)?)
        } else {
            None
        };
        let products = self.binary(BinaryOp::Mul, conj.as_ref().unwrap_or(a), b, &a.shape)?;
        self.reduce(ReduceOp::Sum, &products, &[0], a.dtype, &[])
    }

    /// Joins `inputs` along `axis`: each is copied into its band of the output.
    pub(super) fn concatenate(
        &mut self,
        inputs: &[&DeviceTensor],
        axis: usize,
        out_shape: &[usize],
    ) -> Result<DeviceTensor, ExecError> {
        let mut out = self.alloc(inputs[0].dtype, out_shape)?;
        let out_strides = row_major(out_shape);
        let mut at = 0isize;
        for t in inputs {
            let own = row_major(&t.shape);
            let dims = Dims::new(
                &t.shape,
                &[(&own, 0), (&out_strides, at * out_strides[axis])],
            )
            .ok_or_else(|| self.too_many_axes("concatenate", t.dtype))?;
            self.launch.strided_copy(&mut out, t, &dims)?;
            at += t.shape[axis] as isize;
        }
        Ok(out)
    }
}

/// A value of an einsum on the device: a resident input, or an intermediate.
pub(super) enum Value<'a> {
    Resident(&'a DeviceTensor),
    Owned(DeviceTensor),
}

impl Value<'_> {
    fn tensor(&self) -> &DeviceTensor {
        match self {
            Value::Resident(t) => t,
            Value::Owned(t) => t,
        }
    }
}

impl<'a> Contraction for Exec<'a> {
    type Value = Value<'a>;
    type Error = ExecError;

    fn shape(value: &Self::Value) -> &[usize] {
        &value.tensor().shape
    }

    fn view(&mut self, value: Value<'a>, view: &View) -> Result<Value<'a>, ExecError> {
        Ok(Value::Owned(self.gather(value.tensor(), view)?))
    }

    fn sum(&mut self, value: Value<'a>, axes: &[usize]) -> Result<Value<'a>, ExecError> {
        let t = value.tensor();
        let shape: Vec<usize> = (0..t.shape.len())
            .filter(|i| !axes.contains(i))
            .map(|i| t.shape[i])
            .collect();
        Ok(Value::Owned(self.reduce(
            ReduceOp::Sum,
            t,
            axes,
            t.dtype,
            &shape,
        )?))
    }

    fn permute(&mut self, value: Value<'a>, perm: &[usize]) -> Result<Value<'a>, ExecError> {
        let t = value.tensor();
        Ok(Value::Owned(
            self.gather(t, &permute_view(&t.shape, perm)?)?,
        ))
    }

    fn batched_matmul(
        &mut self,
        a: &Value<'a>,
        b: &Value<'a>,
        [nb, m, k, n]: [usize; 4],
        [a_batched, b_batched]: [bool; 2],
        out: Vec<usize>,
    ) -> Result<Value<'a>, ExecError> {
        // A broadcast operand is read with batch stride 0.
        let stride = |batched: bool, len: usize| if batched { len } else { 0 };
        Ok(Value::Owned(self.gemm(
            (a.tensor(), stride(a_batched, m * k)),
            (b.tensor(), stride(b_batched, k * n)),
            [nb, m, k, n],
            &out,
        )?))
    }
}

/// Elements each block of a split reduction takes at least.
const REDUCE_PART: usize = 1 << 14;

/// Parts each row of a reduction is cut into: enough blocks to fill the
/// device when there are few long rows (a full reduction is one row), one
/// part when the rows alone are many or short.
fn reduce_parts(rows: usize, len: usize) -> usize {
    if rows >= 512 || len < 4 * REDUCE_PART {
        1
    } else {
        (len / REDUCE_PART).min(1024usize.div_ceil(rows)).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_rows_are_split_to_fill_the_device() {
        // Short rows, or many rows: one part each.
        assert_eq!(reduce_parts(1, 1000), 1);
        assert_eq!(reduce_parts(4096, 1 << 20), 1);
        // One long row (a full reduction): up to 1024 blocks of at least
        // REDUCE_PART elements.
        assert_eq!(reduce_parts(1, 1 << 20), (1 << 20) / REDUCE_PART);
        assert_eq!(reduce_parts(1, 1 << 30), 1024);
        assert_eq!(reduce_parts(8, 1 << 30), 128);
        for (rows, len) in [(1, 4 * REDUCE_PART), (3, 200_000), (511, 1 << 24)] {
            let parts = reduce_parts(rows, len);
            assert!(parts >= 1 && rows * parts <= 1 << 16, "{rows} {len}");
            assert!(len.div_ceil(parts) >= REDUCE_PART / 2, "{rows} {len}");
        }
    }
}
