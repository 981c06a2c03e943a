//! Kernels written in Rust with cubecl's `#[cube]`, compiled by cubecl to
//! CUDA source and from there by the engine's own NVRTC path: cubecl is a
//! compiler here and nothing else. No cubecl client, server, thread,
//! stream or memory pool is made; the kernel is launched on a lane's
//! stream with weft's resident tensors as its buffers, ordered by the same
//! access table as every other kernel.
//!
//! A kernel weft launches takes `inputs` arrays, then `outputs` arrays,
//! then `scalars` values, all of the tensors' element type (`f32` or
//! `f64`), and is launched over one thread per element of its largest
//! output (`ABSOLUTE_POS`), in blocks of [`CubeKernel::CUBE_DIM`]
//! threads ([`CUBE_DIM`] unless it says). A user says so by
//! implementing [`CubeKernel`]: its [`Signature`] and one line that calls
//! the `#[cube]` function's `expand` with the arguments weft made.
//!
//! # The argument block (cubecl 0.10's layout, checked against the source)
//!
//! The compiled kernel takes one pointer per buffer in declaration order,
//! then, when it has any, an `info_st` struct by value (compiled with
//! `__grid_constant__`): the scalars grouped by type, each group padded to
//! 8 bytes, then the static metadata of the buffers (all buffer lengths,
//! then all logical lengths, as `uint32`), padded to 8 bytes. Arrays have
//! no extended metadata, so there is no `dynamic_meta` pointer. The layout
//! is read back from the struct in the generated source
//! ([`InfoLayout::of_source`]) and a launch fills exactly that; a source
//! whose struct weft does not know is refused at compile time, before
//! anything is launched. The version of cubecl is pinned (`=0.10.0`): this
//! layout is internal to it.
//!
//! Kernels are compiled in cubecl's checked mode: a read past an array
//! gives 0 and a write past it is dropped, so a kernel that indexes wrong
//! computes wrong values but never writes outside its outputs. A checked
//! read still loads the array's last element before it chooses 0, so an
//! empty array is refused in a launch that runs threads
//! ([`CubeError::EmptyArray`]).

use std::any::TypeId;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use cubecl_core::ir::Scope;
use cubecl_core::prelude::{
    AddressType, Array, ArrayCompilationArg, CubeDim, CubeElement, Float, KernelBuilder,
    KernelSettings, LaunchArg, NativeExpand,
};
use cubecl_cpp::cuda::mma::CudaWmmaCompiler;
use cubecl_cpp::cuda::CudaDialect;
use cubecl_cpp::shared::{CompilationOptions, CppCompiler, CppSupportedFeatures};
use cubecl_runtime::compiler::Compiler;
use cubecl_runtime::server::ExecutionMode;
use weft_core::ops::KernelOp;
use weft_core::{DType, ExecError, Meta, TensorError, TensorId};

use crate::CudaEngine;

mod info;
mod maps;

pub use info::{InfoLayout, ScalarType};

pub(crate) use maps::unary_kernel;

/// cubecl's frontend, for writing kernels: `use weft::cuda::cubecl;`, then
/// `use cubecl::prelude::*;` and `#[cube]` as in cubecl's own examples.
pub use cubecl_core as cubecl;

/// Threads per block of a kernel that does not say ([`CubeKernel::CUBE_DIM`]).
pub const CUBE_DIM: u32 = 256;

/// The most threads a block holds on every CUDA device.
pub const MAX_CUBE_DIM: u32 = 1024;

/// cubecl's CUDA compiler: C++ in CUDA's dialect.
type CudaCompiler = CppCompiler<CudaDialect<CudaWmmaCompiler>>;

/// How many arrays a kernel reads and writes and how many scalars it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Signature {
    /// Arrays read, first in the kernel's buffers.
    pub inputs: usize,
    /// Arrays written, after the inputs; at least one.
    pub outputs: usize,
    /// Scalars of the element type, in the argument block.
    pub scalars: usize,
}

impl Signature {
    /// Checks the counts of a launch of kernel `kernel` against this.
    ///
    /// # Errors
    ///
    /// [`TensorError::Arity`] naming the kernel and the first count
    /// (inputs, outputs, scalars) that differs.
    pub fn check(
        &self,
        kernel: &'static str,
        inputs: usize,
        outputs: usize,
        scalars: usize,
    ) -> Result<(), TensorError> {
        let counts = [
            (self.inputs, inputs),
            (self.outputs, outputs),
            (self.scalars, scalars),
        ];
        match counts.into_iter().find(|(expected, got)| expected != got) {
            Some((expected, got)) => Err(TensorError::Arity {
                op: kernel,
                expected,
                got,
            }),
            None => Ok(()),
        }
    }
}

/// A `#[cube]` kernel weft can launch on a CUDA lane.
///
/// ```
/// use weft_cuda::cubecl;
/// use cubecl::prelude::*;
/// use weft_cuda::{cube_source, CubeArgs, CubeKernel, Signature};
///
/// #[cube]
/// fn axpy<F: Float>(x: &Array<F>, y: &Array<F>, out: &mut Array<F>, alpha: F) {
///     if ABSOLUTE_POS < out.len() {
///         out[ABSOLUTE_POS] = alpha * x[ABSOLUTE_POS] + y[ABSOLUTE_POS];
///     }
/// }
///
/// struct Axpy;
/// impl CubeKernel for Axpy {
///     const NAME: &'static str = "axpy";
///     const SIGNATURE: Signature = Signature { inputs: 2, outputs: 1, scalars: 1 };
///     fn expand<F: Float + CubeElement>(scope: &mut cubecl::ir::Scope, a: &CubeArgs<F>) {
///         axpy::expand::<F>(scope, a.input(0), a.input(1), a.output(0), a.scalar(0));
///     }
/// }
///
/// # fn main() -> Result<(), weft_cuda::CubeError> {
/// // What the engine compiles with NVRTC on a device's first launch.
/// let source = cube_source::<Axpy>(weft_core::DType::F32)?;
/// assert_eq!(source.entry, "axpy_f32");
/// assert_eq!(source.info.buffers, 3);
/// # Ok(())
/// # }
/// ```
pub trait CubeKernel: Send + Sync + 'static {
    /// The kernel's name: its entry point is `{NAME}_{dtype}` (letters,
    /// digits and `_` only).
    const NAME: &'static str;
    /// Its arrays and scalars.
    const SIGNATURE: Signature;
    /// Threads per block (cubecl's `CUBE_DIM`, a kernel's `__launch_bounds__`;
    /// 1 to [`MAX_CUBE_DIM`]): [`CUBE_DIM`] unless the kernel says.
    const CUBE_DIM: u32 = CUBE_DIM;
    /// Expands the kernel's body for element type `F`: calls the `#[cube]`
    /// function's `expand` with `scope` and the arguments of `args`.
    fn expand<F: Float + CubeElement>(scope: &mut Scope, args: &CubeArgs<F>);
}

/// The arguments weft made for a kernel's expansion, in its signature's order.
#[allow(missing_debug_implementations)]
pub struct CubeArgs<F: Float + CubeElement> {
    inputs: Vec<NativeExpand<Array<F>>>,
    outputs: Vec<NativeExpand<Array<F>>>,
    scalars: Vec<NativeExpand<F>>,
}

impl<F: Float + CubeElement> CubeArgs<F> {
    /// Input array `i` (panics past the signature's inputs: the expansion
    /// fails with [`CubeError::Expand`], naming the kernel).
    pub fn input(&self, i: usize) -> NativeExpand<Array<F>> {
        self.inputs[i].clone()
    }

    /// Output array `i`.
    pub fn output(&self, i: usize) -> NativeExpand<Array<F>> {
        self.outputs[i].clone()
    }

    /// Scalar `i`.
    pub fn scalar(&self, i: usize) -> NativeExpand<F> {
        self.scalars[i].clone()
    }
}

/// Why a cubecl kernel could not be compiled or launched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CubeError {
    /// cubecl kernels are of `f32` and `f64` tensors here.
    #[error("cubecl kernel `{kernel}` has no {dtype} form: kernels are of f32 and f64 tensors")]
    DType {
        /// The kernel.
        kernel: &'static str,
        /// The element type asked for.
        dtype: DType,
    },
    /// The name is not a C identifier.
    #[error("cubecl kernel name {kernel:?} is not made of letters, digits and `_`")]
    Name {
        /// The name.
        kernel: &'static str,
    },
    /// The expansion panicked (an argument past the signature, an
    /// operation cubecl refuses).
    #[error("cubecl kernel `{kernel}` failed to expand: {message}")]
    Expand {
        /// The kernel.
        kernel: &'static str,
        /// cubecl's message.
        message: String,
    },
    /// cubecl could not turn the expansion into CUDA source.
    #[error("cubecl kernel `{kernel}` failed to compile to CUDA: {message}")]
    Compile {
        /// The kernel.
        kernel: &'static str,
        /// cubecl's message.
        message: String,
    },
    /// The device is older than the kernels' arguments allow: the
    /// argument block is passed as a grid constant (compute capability 7.0).
    #[error(
        "cubecl kernel `{kernel}` needs a device of compute capability 7.0 or later, \
         not {major}.{minor}"
    )]
    Architecture {
        /// The kernel.
        kernel: &'static str,
        /// The device's major version.
        major: i32,
        /// Its minor version.
        minor: i32,
    },
    /// An empty array in a launch that runs threads: cubecl's checked
    /// reads still load an empty array's first element, which it does
    /// not have (the launch would fault the device's context).
    #[error(
        "cubecl kernel `{kernel}`: array {array} is empty, and the launch runs threads \
         (every array needs an element unless every output is empty)"
    )]
    EmptyArray {
        /// The kernel.
        kernel: &'static str,
        /// The array's place among the kernel's arrays (inputs, then outputs).
        array: usize,
    },
    /// An array too long for the kernels' 32-bit indices.
    #[error("cubecl kernel `{kernel}`: an array of {elements} elements (at most 2^32 - 1)")]
    TooLong {
        /// The kernel.
        kernel: &'static str,
        /// The array's elements.
        elements: usize,
    },
    /// The source's parameters are not the layout weft fills.
    #[error("cubecl kernel `{kernel}`: unknown argument layout ({message})")]
    Layout {
        /// The kernel.
        kernel: &'static str,
        /// What was not as expected.
        message: String,
    },
}

/// A kernel's CUDA source, its entry point and its argument block's layout.
#[derive(Debug, Clone)]
pub struct CubeSource {
    /// The kernel's name.
    pub kernel: &'static str,
    /// The entry point, `{NAME}_{dtype}`.
    pub entry: String,
    /// The source NVRTC compiles (no header: `cuda_runtime.h` is dropped).
    pub text: String,
    /// The `info_st` struct the kernel takes after its buffers.
    pub info: InfoLayout,
    /// Threads per block (the kernel's `__launch_bounds__`).
    pub cube_dim: u32,
}

/// The oldest architecture the kernels compile for: grid constants
/// (`__grid_constant__`) need `compute_70`.
pub const CUBE_MIN_ARCH: (i32, i32) = (7, 0);

/// What identifies a compiled cubecl kernel on one device.
pub(crate) type CubeKey = (TypeId, DType);

/// What launches a cubecl kernel on the engine: the [`KernelOp::run`] of
/// the ops [`kernel_op`] makes, which the engine downcasts to this.
pub(crate) struct CubeLaunch(pub(crate) Launch);

/// `CudaEngine::launch_cube::<K>`.
pub(crate) type Launch = fn(
    &mut CudaEngine,
    &[TensorId],
    &[f64],
    &[(TensorId, DType, &[usize])],
    u64,
) -> Result<(), ExecError>;

/// The vocabulary's op of kernel `K` with `scalars`, making `outputs`: a
/// [`weft_core::TensorOp::Kernel`] a lane runs, or a recorder records,
/// like any op. Only a CUDA engine runs it.
pub fn kernel_op<K: CubeKernel>(scalars: &[f64], outputs: &[Meta]) -> KernelOp {
    KernelOp {
        name: K::NAME,
        inputs: K::SIGNATURE.inputs,
        outputs: outputs.to_vec(),
        scalars: scalars.to_vec(),
        run: Arc::new(CubeLaunch(CudaEngine::launch_cube::<K>)),
    }
}

/// The first empty array among `lengths` (the element counts of a
/// launch's inputs, the first `inputs`, then its outputs) when the launch
/// runs threads (some output has an element): the array a launch must
/// not be given.
pub fn empty_array(lengths: &[usize], inputs: usize) -> Option<usize> {
    let runs = lengths
        .get(inputs..)
        .is_some_and(|outs| outs.iter().any(|&n| n > 0));
    runs.then(|| lengths.iter().position(|&n| n == 0)).flatten()
}

/// What makes a kernel's source for an element type.
pub type MakeSource = fn(DType) -> Result<CubeSource, CubeError>;

/// The kernels weft itself compiles with cubecl (the real types' unary
/// maps): each one's name and its source for an element type. CI compiles
/// every one under NVRTC.
pub fn cube_kernels() -> &'static [(&'static str, MakeSource)] {
    maps::MAPS
}

/// The kernel of `K` for `dtype`, as CUDA source.
///
/// # Errors
///
/// [`CubeError`] naming the kernel: another element type, a bad name, an
/// expansion that panicked, a compile failure, a layout weft does not know.
pub fn cube_source<K: CubeKernel>(dtype: DType) -> Result<CubeSource, CubeError> {
    match dtype {
        DType::F32 => source_of::<K, f32>(dtype),
        DType::F64 => source_of::<K, f64>(dtype),
        dtype => Err(CubeError::DType {
            kernel: K::NAME,
            dtype,
        }),
    }
}

fn source_of<K: CubeKernel, F: Float + CubeElement>(dtype: DType) -> Result<CubeSource, CubeError> {
    let kernel = K::NAME;
    let named = !kernel.is_empty()
        && !kernel.starts_with(|c: char| c.is_ascii_digit())
        && kernel
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !named {
        return Err(CubeError::Name { kernel });
    }
    let sig = K::SIGNATURE;
    let cube_dim = K::CUBE_DIM;
    if !(1..=MAX_CUBE_DIM).contains(&cube_dim) {
        return Err(CubeError::Layout {
            kernel,
            message: format!("{cube_dim} threads per block (1 to {MAX_CUBE_DIM})"),
        });
    }
    if sig.outputs == 0 {
        return Err(CubeError::Layout {
            kernel,
            message: "no output array".into(),
        });
    }
    let entry = format!("{kernel}_{dtype}");
    let settings = KernelSettings::default()
        .kernel_name(&entry)
        .cube_dim(CubeDim::new_1d(cube_dim))
        .address_type(AddressType::U32);
    let message = |payload: Box<dyn std::any::Any + Send>| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "a panic without a message".into())
    };
    // The user's expansion (and cubecl's, on what it was given) may panic:
    // isolated, and named.
    let definition = catch_unwind(AssertUnwindSafe(|| {
        let mut builder = KernelBuilder::default();
        AddressType::U32.register(&mut builder.scope);
        let array = ArrayCompilationArg { inplace: None };
        let inputs = (0..sig.inputs)
            .map(|_| <Array<F> as LaunchArg>::expand(&array, &mut builder))
            .collect();
        let outputs = (0..sig.outputs)
            .map(|_| <Array<F> as LaunchArg>::expand_output(&array, &mut builder))
            .collect();
        let scalars = (0..sig.scalars)
            .map(|_| <F as LaunchArg>::expand(&Default::default(), &mut builder))
            .collect();
        let args = CubeArgs {
            inputs,
            outputs,
            scalars,
        };
        K::expand::<F>(&mut builder.scope, &args);
        builder.build(settings)
    }))
    .map_err(|p| CubeError::Expand {
        kernel,
        message: message(p),
    })?;
    let options = CompilationOptions {
        warp_size: 32,
        supports_features: CppSupportedFeatures {
            grid_constants: true,
            ..CppSupportedFeatures::default()
        },
    };
    let compiled = catch_unwind(AssertUnwindSafe(|| {
        CudaCompiler::default()
            .compile(
                definition,
                &options,
                ExecutionMode::Checked,
                AddressType::U32.unsigned_type(),
            )
            .map(|kernel| kernel.to_string())
    }))
    .map_err(|p| CubeError::Compile {
        kernel,
        message: message(p),
    })?
    .map_err(|e| CubeError::Compile {
        kernel,
        message: e.to_string(),
    })?;
    // NVRTC has no `cuda_runtime.h` of its own, and these kernels need
    // nothing from it.
    let text: String = compiled
        .lines()
        .filter(|line| line.trim() != "#include <cuda_runtime.h>")
        .flat_map(|line| [line, "\n"])
        .collect();
    let info = InfoLayout::of_source(&text, &entry)
        .map_err(|message| CubeError::Layout { kernel, message })?;
    let buffers = sig.inputs + sig.outputs;
    let expected_meta = 2 * buffers;
    if info.scalars.map_or(0, |(_, n)| n) < sig.scalars
        || (info.static_meta != 0 && info.static_meta != expected_meta)
        || info.buffers != buffers
    {
        return Err(CubeError::Layout {
            kernel,
            message: format!(
                "{} buffers, {:?} scalars and {} metadata words in the source, for {sig:?}",
                info.buffers, info.scalars, info.static_meta
            ),
        });
    }
    Ok(CubeSource {
        kernel,
        entry,
        text,
        info,
        cube_dim,
    })
}

/// The cache key of `K`'s kernel for `dtype`.
pub(crate) fn key<K: CubeKernel>(dtype: DType) -> CubeKey {
    (TypeId::of::<K>(), dtype)
}

/// [`cube_source`], made once per process for each kernel and element
/// type (it is a function of the two): the call site of a launch checks
/// a kernel with it, and each device compiles what it made.
///
/// # Errors
///
/// As [`cube_source`], the same error every time.
pub fn cube_source_cached<K: CubeKernel>(dtype: DType) -> Result<Arc<CubeSource>, CubeError> {
    type Made = HashMap<CubeKey, Result<Arc<CubeSource>, CubeError>>;
    static MADE: OnceLock<Mutex<Made>> = OnceLock::new();
    let made = MADE.get_or_init(Mutex::default);
    // No panic is possible under the lock (the expansion runs outside
    // it), so a poisoned lock only means a thread died holding it: its
    // map is still whole.
    let lock = || made.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(found) = lock().get(&key::<K>(dtype)) {
        return found.clone();
    }
    let source = cube_source::<K>(dtype).map(Arc::new);
    lock().entry(key::<K>(dtype)).or_insert(source).clone()
}

#[cfg(test)]
mod tests {
    use super::{
        cube_source, cubecl, CubeArgs, CubeError, CubeKernel, InfoLayout, ScalarType, Scope,
        Signature,
    };
    use cubecl_core::prelude::*;
    use cubecl_core::InfoBuilder;
    use weft_core::DType;

    #[cube]
    fn affine<F: Float>(x: &Array<F>, out: &mut Array<F>, a: F, b: F) {
        if ABSOLUTE_POS < out.len() {
            out[ABSOLUTE_POS] = a * x[ABSOLUTE_POS] + b;
        }
    }

    /// `a·x + b`: one array in, one out, two scalars (which fill 8 bytes
    /// as `f32`, 16 as `f64`).
    struct Affine;
    impl CubeKernel for Affine {
        const NAME: &'static str = "affine";
        const SIGNATURE: Signature = Signature {
            inputs: 1,
            outputs: 1,
            scalars: 2,
        };
        fn expand<F: Float + CubeElement>(scope: &mut Scope, a: &CubeArgs<F>) {
            affine::expand::<F>(scope, a.input(0), a.output(0), a.scalar(0), a.scalar(1));
        }
    }

    /// The layout read back from the source is the one cubecl's own
    /// launcher fills, byte for byte, for both element types.
    #[test]
    fn the_argument_block_is_cubecls_own() {
        let lengths = [5usize, 7];
        for (dtype, ty) in [(DType::F32, ScalarType::F32), (DType::F64, ScalarType::F64)] {
            let source = cube_source::<Affine>(dtype).unwrap();
            assert_eq!(source.entry, format!("affine_{dtype}"));
            assert!(!source.text.contains("#include"), "{}", source.text);
            // Two scalars, padded to 8 bytes.
            let declared = (2 * ty.size()).next_multiple_of(8) / ty.size();
            assert_eq!(
                source.info,
                InfoLayout {
                    buffers: 2,
                    scalars: Some((ty, declared)),
                    static_meta: 4,
                    present: true,
                }
            );
            let block = source.info.block(&[2.5, -0.75], &lengths).unwrap();
            let mut cubecl = InfoBuilder::default();
            match dtype {
                DType::F32 => {
                    cubecl.scalars.push(2.5f32);
                    cubecl.scalars.push(-0.75f32);
                }
                _ => {
                    cubecl.scalars.push(2.5f64);
                    cubecl.scalars.push(-0.75f64);
                }
            }
            for &n in &lengths {
                cubecl
                    .metadata
                    .register_array(n as u64, n as u64, AddressType::U32);
            }
            let theirs = cubecl.finish(AddressType::U32);
            assert_eq!(block, theirs.data, "{dtype}");
            // The scalars, then 4 lengths of 4 bytes.
            assert_eq!(block.len() * 8, declared * ty.size() + 16, "{dtype}");
        }
    }

    #[test]
    fn a_block_of_the_wrong_counts_is_refused() {
        let info = cube_source::<Affine>(DType::F64).unwrap().info;
        assert!(info
            .block(&[1.0, 2.0], &[1])
            .unwrap_err()
            .contains("1 buffer lengths"));
        assert!(info
            .block(&[1.0, 2.0, 3.0], &[1, 2])
            .unwrap_err()
            .contains("3 scalars"));
        let big = u32::MAX as usize + 1;
        assert!(info
            .block(&[1.0, 2.0], &[1, big])
            .unwrap_err()
            .contains("4294967296"));
    }

    /// `a·x + b` in blocks of 96 threads, or of a count no block holds.
    struct Narrow<const DIM: u32>;
    impl<const DIM: u32> CubeKernel for Narrow<DIM> {
        const NAME: &'static str = "narrow";
        const SIGNATURE: Signature = Affine::SIGNATURE;
        const CUBE_DIM: u32 = DIM;
        fn expand<F: Float + CubeElement>(scope: &mut Scope, a: &CubeArgs<F>) {
            Affine::expand::<F>(scope, a);
        }
    }

    #[test]
    fn a_kernel_says_its_threads_per_block() {
        let source = cube_source::<Narrow<96>>(DType::F32).unwrap();
        assert_eq!(source.cube_dim, 96);
        assert!(
            source.text.contains("__launch_bounds__(96)"),
            "{}",
            source.text
        );
        assert_eq!(
            cube_source::<Affine>(DType::F32).unwrap().cube_dim,
            super::CUBE_DIM
        );
        for refused in [
            cube_source::<Narrow<0>>(DType::F32),
            cube_source::<Narrow<2048>>(DType::F32),
        ] {
            match refused {
                Err(CubeError::Layout {
                    kernel: "narrow",
                    message,
                }) => assert!(message.contains("threads per block"), "{message}"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn an_empty_array_is_refused_only_where_threads_run() {
        // Inputs [3, 0], outputs [4]: the empty input would be read.
        assert_eq!(super::empty_array(&[3, 0, 4], 2), Some(1));
        // Input [3], outputs [4, 0]: an empty output beside one that runs.
        assert_eq!(super::empty_array(&[3, 4, 0], 1), Some(2));
        // No output has an element: nothing is launched, nothing read.
        assert_eq!(super::empty_array(&[3, 0, 0], 2), None);
        assert_eq!(super::empty_array(&[3, 5, 4], 2), None);
    }

    #[test]
    fn counts_are_checked_against_the_signature() {
        let sig = Affine::SIGNATURE;
        assert!(sig.check("affine", 1, 1, 2).is_ok());
        assert_eq!(
            sig.check("affine", 1, 1, 1),
            Err(weft_core::TensorError::Arity {
                op: "affine",
                expected: 2,
                got: 1
            })
        );
    }

    struct Past;
    impl CubeKernel for Past {
        const NAME: &'static str = "past";
        const SIGNATURE: Signature = Signature {
            inputs: 1,
            outputs: 1,
            scalars: 0,
        };
        fn expand<F: Float + CubeElement>(scope: &mut Scope, a: &CubeArgs<F>) {
            // A scalar past the signature, which has none.
            affine::expand::<F>(scope, a.input(0), a.output(0), a.scalar(0), a.scalar(1));
        }
    }

    struct BadName;
    impl CubeKernel for BadName {
        const NAME: &'static str = "no spaces";
        const SIGNATURE: Signature = Affine::SIGNATURE;
        fn expand<F: Float + CubeElement>(scope: &mut Scope, a: &CubeArgs<F>) {
            Affine::expand::<F>(scope, a);
        }
    }

    #[test]
    fn bad_kernels_are_typed_errors_naming_them() {
        match cube_source::<Past>(DType::F32) {
            Err(CubeError::Expand {
                kernel: "past",
                message,
            }) => {
                assert!(message.contains("index out of bounds"), "{message}")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            cube_source::<Affine>(DType::C64).unwrap_err(),
            CubeError::DType {
                kernel: "affine",
                dtype: DType::C64
            }
        );
        assert_eq!(
            cube_source::<BadName>(DType::F32).unwrap_err(),
            CubeError::Name {
                kernel: "no spaces"
            }
        );
    }
}
