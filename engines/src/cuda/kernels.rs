//! The engine's own kernels: CUDA C++ in `source.cu`, compiled by NVRTC
//! for the device's architecture once per element type, on first use.

use std::collections::HashMap;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction, CudaModule, DeviceRepr, LaunchConfig};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions, Ptx};

use crate::structural::View;
use crate::tensor::DType;

/// The kernels' source, before the element type's prelude.
const SOURCE: &str = include_str!("source.cu");

/// Axes a strided kernel walks at most (`MAXR` in the source).
pub(crate) const MAX_RANK: usize = 8;

/// Threads per block of the row reductions (`REDUCE_THREADS`).
const REDUCE_THREADS: u32 = 256;

/// Threads per block of the elementwise kernels.
const THREADS: u32 = 256;

/// A strided walk over up to three operands, laid out as `struct Dims` in
/// `source.cu`: element `i` of `shape` (row-major) sits at
/// `b_k + Σ index[d]·s_k[d]` in operand `k`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Dims {
    n: i64,
    rank: i64,
    shape: [i64; MAX_RANK],
    s0: [i64; MAX_RANK],
    s1: [i64; MAX_RANK],
    s2: [i64; MAX_RANK],
    b0: i64,
    b1: i64,
    b2: i64,
}

// SAFETY: `Dims` is `repr(C)` and holds only `i64`s, so it has no padding
// and no pointers; its layout is the source's `struct Dims` field for
// field (all `long long`), which the kernels take by value.
unsafe impl DeviceRepr for Dims {}

impl Dims {
    /// A walk over `shape` with one stride list and base per operand
    /// (operands beyond those given walk nothing). `None` when the rank is
    /// over [`MAX_RANK`].
    pub(crate) fn new(shape: &[usize], operands: &[(&[isize], isize)]) -> Option<Dims> {
        if shape.len() > MAX_RANK {
            return None;
        }
        let mut d = Dims {
            n: shape.iter().product::<usize>() as i64,
            rank: shape.len() as i64,
            ..Dims::default()
        };
        for (axis, &extent) in shape.iter().enumerate() {
            d.shape[axis] = extent as i64;
        }
        let slots = [
            (&mut d.s0, &mut d.b0),
            (&mut d.s1, &mut d.b1),
            (&mut d.s2, &mut d.b2),
        ];
        for ((strides, base), (given, b)) in slots.into_iter().zip(operands) {
            for (axis, &s) in given.iter().enumerate() {
                strides[axis] = s as i64;
            }
            *base = *b as i64;
        }
        Some(d)
    }

    /// A copy of `view` (source) into a contiguous destination.
    pub(crate) fn gather(view: &View) -> Option<Dims> {
        let dst = crate::structural::row_major(&view.shape);
        Dims::new(&view.shape, &[(&view.strides, view.base), (&dst, 0)])
    }

    /// Elements walked.
    pub(crate) fn len(&self) -> usize {
        self.n as usize
    }
}

/// The kernels' names as the source spells them, before the type suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kernel {
    StridedCopy,
    Binary,
    BinaryScalar,
    Unary,
    Magnitude,
    Fill,
    Arange,
    Eye,
    Reduce,
    Norm,
}

impl Kernel {
    const ALL: [Kernel; 10] = [
        Kernel::StridedCopy,
        Kernel::Binary,
        Kernel::BinaryScalar,
        Kernel::Unary,
        Kernel::Magnitude,
        Kernel::Fill,
        Kernel::Arange,
        Kernel::Eye,
        Kernel::Reduce,
        Kernel::Norm,
    ];

    fn name(self) -> &'static str {
        match self {
            Kernel::StridedCopy => "strided_copy",
            Kernel::Binary => "binary",
            Kernel::BinaryScalar => "binary_scalar",
            Kernel::Unary => "unary",
            Kernel::Magnitude => "magnitude",
            Kernel::Fill => "fill",
            Kernel::Arange => "arange",
            Kernel::Eye => "eye",
            Kernel::Reduce => "reduce",
            Kernel::Norm => "norm",
        }
    }
}

/// The element and real types and the name suffix of `dtype`.
fn prelude(dtype: DType) -> String {
    let (t, r, suffix) = match dtype {
        DType::F32 => ("float", "float", "f32"),
        DType::F64 => ("double", "double", "f64"),
        DType::C32 => ("cx<float>", "float", "c32"),
        DType::C64 => ("cx<double>", "double", "c64"),
    };
    format!("#define SUFFIX {suffix}\n#define ELEMENT {t}\n#define REAL {r}\n")
}

/// The full source for one element type: the typedefs come after the
/// complex template they may name.
pub(crate) fn source(dtype: DType) -> String {
    let marker = "#define MAXR 8\n";
    let (head, body) = SOURCE.split_at(SOURCE.find(marker).expect("the source defines MAXR"));
    let types = "typedef ELEMENT T;\ntypedef REAL R;\n";
    let (defs, rest) = body.split_at(body.find("#define REAL_FN").expect("REAL_FN"));
    format!("{}{head}{defs}{types}{rest}", prelude(dtype))
}

/// Compiles the kernels of `dtype` to PTX for `arch` (`(9, 0)` for
/// `compute_90`; `None` for NVRTC's default). Needs only the NVRTC
/// library, no device: the test suite uses it to check the source.
///
/// # Errors
///
/// NVRTC's log, when the source does not compile.
pub fn compile(dtype: DType, arch: Option<(i32, i32)>) -> Result<Ptx, String> {
    let mut options = CompileOptions {
        name: Some(format!("weft_{dtype}.cu")),
        ..CompileOptions::default()
    };
    if let Some((major, minor)) = arch {
        options
            .options
            .push(format!("--gpu-architecture=compute_{major}{minor}"));
    }
    compile_ptx_with_opts(source(dtype), options).map_err(|e| e.to_string())
}

/// Whether the NVRTC library can be loaded (the kernels compile at run time).
pub fn nvrtc_present() -> bool {
    // SAFETY: only tries to load the shared library by name; no NVRTC
    // entry point is called.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// The compiled modules of one device, by element type, and their functions.
#[derive(Debug, Default)]
pub(crate) struct Kernels {
    modules: HashMap<DType, Arc<CudaModule>>,
    functions: HashMap<(DType, Kernel), CudaFunction>,
}

impl Kernels {
    /// The function `kernel` for `dtype`, compiling the type's module on
    /// first use.
    pub(crate) fn get(
        &mut self,
        ctx: &Arc<CudaContext>,
        arch: (i32, i32),
        dtype: DType,
        kernel: Kernel,
    ) -> Result<CudaFunction, KernelError> {
        if let Some(f) = self.functions.get(&(dtype, kernel)) {
            return Ok(f.clone());
        }
        if !self.modules.contains_key(&dtype) {
            if !nvrtc_present() {
                return Err(KernelError::NoNvrtc);
            }
            let ptx = compile(dtype, Some(arch)).map_err(KernelError::Compile)?;
            let module = ctx
                .load_module(ptx)
                .map_err(|e| KernelError::Load(e.to_string()))?;
            for k in Kernel::ALL {
                let f = module
                    .load_function(&format!("{}_{dtype}", k.name()))
                    .map_err(|e| KernelError::Load(e.to_string()))?;
                self.functions.insert((dtype, k), f);
            }
            self.modules.insert(dtype, module);
        }
        Ok(self.functions[&(dtype, kernel)].clone())
    }
}

/// Why a kernel is not available.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KernelError {
    NoNvrtc,
    Compile(String),
    Load(String),
}

/// A grid-stride launch over `n` elements.
pub(crate) fn elementwise(n: usize) -> LaunchConfig {
    let blocks = n.div_ceil(THREADS as usize).clamp(1, 1 << 16) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// One block per row (rows beyond the grid loop).
pub(crate) fn rows(rows: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (rows.clamp(1, 1 << 16) as u32, 1, 1),
        block_dim: (REDUCE_THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_walk_each_operand_by_its_strides() {
        let d = Dims::new(&[2, 3], &[(&[3, 1], 0), (&[0, 1], 5)]).unwrap();
        assert_eq!((d.n, d.rank, d.len()), (6, 2, 6));
        assert_eq!(&d.shape[..2], &[2, 3]);
        assert_eq!((&d.s0[..2], d.b0), (&[3i64, 1][..], 0));
        assert_eq!((&d.s1[..2], d.b1), (&[0i64, 1][..], 5));
        assert_eq!(d.s2, [0; MAX_RANK]);
        assert!(Dims::new(&[1; MAX_RANK + 1], &[]).is_none());
        // Layout: what the kernels read by value (`long long` fields).
        assert_eq!(std::mem::size_of::<Dims>(), 8 * (2 + 4 * MAX_RANK + 3));
    }

    #[test]
    fn a_gather_writes_the_destination_row_major() {
        let view = crate::structural::reverse_view(&[2, 3], &[1]).unwrap();
        let d = Dims::gather(&view).unwrap();
        assert_eq!((&d.s0[..2], d.b0), (&[3i64, -1][..], 2));
        assert_eq!((&d.s1[..2], d.b1), (&[3i64, 1][..], 0));
    }

    #[test]
    fn the_source_names_every_kernel_for_every_type() {
        for dtype in [DType::F32, DType::F64, DType::C32, DType::C64] {
            let src = source(dtype);
            // The typedefs come after the complex template they may name.
            let cx = src.find("template <typename F> struct cx").unwrap();
            assert!(src.find("typedef ELEMENT T;").unwrap() > cx);
            assert!(src.starts_with(&format!("#define SUFFIX {dtype}\n")));
            for k in Kernel::ALL {
                assert!(src.contains(&format!("K({})(", k.name())), "{}", k.name());
            }
        }
    }
}
