//! The engine's own kernels: CUDA C++ in `cu/`, one file per op family
//! after the common definitions, compiled by NVRTC for the device's
//! architecture once per element type, on first use.

use std::collections::HashMap;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction, CudaModule, LaunchConfig};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions, Ptx};

use weft_core::layout::{row_major, View};
use weft_core::DType;

use super::cube::{CubeError, CubeKey, CubeSource, InfoLayout, CUBE_MIN_ARCH};

/// The kernels' source files, in the order they are compiled: the common
/// definitions, then the op families (reductions use the elementwise ops,
/// scatters their addition).
pub(crate) const SOURCES: [(&str, &str); 5] = [
    ("common.cuh", include_str!("cu/common.cuh")),
    ("elementwise.cu", include_str!("cu/elementwise.cu")),
    ("structural.cu", include_str!("cu/structural.cu")),
    ("create.cu", include_str!("cu/create.cu")),
    ("reduce.cu", include_str!("cu/reduce.cu")),
];

/// Axes a strided kernel walks at most (`MAXR` in the source).
pub(crate) const MAX_RANK: usize = 8;

/// Threads per block of the row reductions (`REDUCE_THREADS`).
const REDUCE_THREADS: u32 = 256;

/// Threads per block of the elementwise kernels.
const THREADS: u32 = 256;

/// A strided walk over up to three operands, laid out as `struct Dims` in
/// `cu/common.cuh`: element `i` of `shape` (row-major) sits at
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

impl Dims {
    /// A walk over `shape` with one stride list and base per operand (up
    /// to three; operands not given walk nothing). Axes of extent 1 are
    /// dropped and neighbours that every operand walks as one axis are
    /// merged, so a contiguous operand costs the kernel one multiply per
    /// element instead of a division per axis. `None` when more than
    /// [`MAX_RANK`] axes remain.
    pub(crate) fn new(shape: &[usize], operands: &[(&[isize], isize)]) -> Option<Dims> {
        let mut axes: Vec<(usize, [isize; 3])> = Vec::with_capacity(shape.len());
        for (k, &extent) in shape.iter().enumerate() {
            if extent == 1 {
                continue;
            }
            let mut strides = [0isize; 3];
            for (s, (given, _)) in strides.iter_mut().zip(operands) {
                *s = given[k];
            }
            match axes.last_mut() {
                Some((outer, outer_strides))
                    if (0..3).all(|j| outer_strides[j] == strides[j] * extent as isize) =>
                {
                    *outer *= extent;
                    *outer_strides = strides;
                }
                _ => axes.push((extent, strides)),
            }
        }
        if axes.len() > MAX_RANK {
            return None;
        }
        let mut d = Dims {
            n: weft_core::element_count(shape).map_or(i64::MAX, |n| n as i64),
            rank: axes.len() as i64,
            ..Dims::default()
        };
        for (k, (extent, strides)) in axes.into_iter().enumerate() {
            d.shape[k] = extent as i64;
            d.s0[k] = strides[0] as i64;
            d.s1[k] = strides[1] as i64;
            d.s2[k] = strides[2] as i64;
        }
        for (base, (_, b)) in [&mut d.b0, &mut d.b1, &mut d.b2].into_iter().zip(operands) {
            *base = *b as i64;
        }
        Some(d)
    }

    /// A copy of `view` (source) into a contiguous destination.
    pub(crate) fn gather(view: &View) -> Option<Dims> {
        let dst = row_major(&view.shape);
        Dims::new(&view.shape, &[(&view.strides, view.base), (&dst, 0)])
    }

    /// Elements walked.
    pub(crate) fn len(&self) -> usize {
        self.n as usize
    }

    /// The lowest and highest offsets operand `k` (0, 1 or 2) reaches, or
    /// `None` for an empty walk.
    pub(crate) fn reach(&self, k: usize) -> Option<(i128, i128)> {
        if self.n == 0 {
            return None;
        }
        let (strides, base) = match k {
            0 => (&self.s0, self.b0),
            1 => (&self.s1, self.b1),
            _ => (&self.s2, self.b2),
        };
        let (mut lo, mut hi) = (i128::from(base), i128::from(base));
        for (&extent, &stride) in self.shape.iter().zip(strides).take(self.rank as usize) {
            let span = i128::from(extent - 1) * i128::from(stride);
            if span < 0 {
                lo += span;
            } else {
                hi += span;
            }
        }
        Some((lo, hi))
    }

    /// Whether operand `k`'s walk stays inside a buffer of `len` elements.
    pub(crate) fn within(&self, k: usize, len: usize) -> bool {
        self.reach(k)
            .is_none_or(|(lo, hi)| lo >= 0 && hi < len as i128)
    }
}

/// The kernels' names as the source spells them, before the type suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kernel {
    StridedCopy,
    /// Gather along an axis at positions the host checked.
    Take,
    /// Scatter, one thread per distinct target.
    Put,
    Binary,
    BinaryScalar,
    Unary,
    Magnitude,
    Fill,
    /// A fill with an exact 64-bit integer (integer and bool types).
    FillInt,
    Arange,
    /// An integer range, exact.
    ArangeInt,
    Eye,
    Reduce,
    Norm,
    /// The index of each row's extremum.
    ArgReduce,
    Compare,
    Select,
    Clamp,
    Triangle,
    /// A conversion to the type given.
    Cast(DType),
}

impl Kernel {
    /// The kernels every element type has.
    const EVERY: [Kernel; 17] = [
        Kernel::StridedCopy,
        Kernel::Take,
        Kernel::Put,
        Kernel::Binary,
        Kernel::Unary,
        Kernel::Reduce,
        Kernel::Eye,
        Kernel::Compare,
        Kernel::Select,
        Kernel::Triangle,
        Kernel::Cast(DType::F32),
        Kernel::Cast(DType::F64),
        Kernel::Cast(DType::C32),
        Kernel::Cast(DType::C64),
        Kernel::Cast(DType::I32),
        Kernel::Cast(DType::I64),
        Kernel::Cast(DType::Bool),
    ];

    /// The kernels of the float and complex types only.
    const FIELD: [Kernel; 5] = [
        Kernel::BinaryScalar,
        Kernel::Magnitude,
        Kernel::Fill,
        Kernel::Arange,
        Kernel::Clamp,
    ];

    /// The kernels compiled for `dtype` (as the source's `KIND_*`
    /// guards say).
    pub(crate) fn of(dtype: DType) -> Vec<Kernel> {
        let mut all = Kernel::EVERY.to_vec();
        if !dtype.is_complex() {
            all.push(Kernel::ArgReduce);
        }
        if dtype.is_field() {
            all.extend(Kernel::FIELD);
            all.push(Kernel::Norm);
        } else {
            all.push(Kernel::FillInt);
            if dtype != DType::Bool {
                all.push(Kernel::ArangeInt);
            }
        }
        all
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Kernel::StridedCopy => "strided_copy",
            Kernel::Take => "take",
            Kernel::Put => "put",
            Kernel::Binary => "binary",
            Kernel::BinaryScalar => "binary_scalar",
            Kernel::Unary => "unary",
            Kernel::Magnitude => "magnitude",
            Kernel::Fill => "fill",
            Kernel::FillInt => "fill_int",
            Kernel::Arange => "arange",
            Kernel::ArangeInt => "arange_int",
            Kernel::Eye => "eye",
            Kernel::Reduce => "reduce",
            Kernel::Norm => "norm",
            Kernel::ArgReduce => "arg_reduce",
            Kernel::Compare => "compare",
            Kernel::Select => "select",
            Kernel::Clamp => "clamp",
            Kernel::Triangle => "triangle",
            Kernel::Cast(DType::F32) => "cast_f32",
            Kernel::Cast(DType::F64) => "cast_f64",
            Kernel::Cast(DType::C32) => "cast_c32",
            Kernel::Cast(DType::C64) => "cast_c64",
            Kernel::Cast(DType::I32) => "cast_i32",
            Kernel::Cast(DType::I64) => "cast_i64",
            Kernel::Cast(DType::Bool) => "cast_bool",
        }
    }
}

/// The names of the kernels the engine loads for `dtype` (each with the
/// type's suffix in the compiled module: `binary_f64`).
pub fn kernel_names(dtype: DType) -> Vec<&'static str> {
    Kernel::of(dtype).into_iter().map(Kernel::name).collect()
}

/// The element and real types, the name suffix and the kind of `dtype`.
fn prelude(dtype: DType) -> String {
    let (t, r, suffix, kind) = match dtype {
        DType::F32 => ("float", "float", "f32", "FIELD"),
        DType::F64 => ("double", "double", "f64", "FIELD"),
        DType::C32 => ("cx<float>", "float", "c32", "FIELD\n#define KIND_COMPLEX"),
        DType::C64 => ("cx<double>", "double", "c64", "FIELD\n#define KIND_COMPLEX"),
        DType::I32 => ("int", "int", "i32", "INTEGER"),
        DType::I64 => ("long long", "long long", "i64", "INTEGER"),
        DType::Bool => ("unsigned char", "unsigned char", "bool", "BOOL"),
    };
    format!("#define SUFFIX {suffix}\n#define ELEMENT {t}\n#define REAL {r}\n#define KIND_{kind}\n")
}

/// The full source for one element type: its prelude, the op codes and
/// the files of [`SOURCES`].
pub(crate) fn source(dtype: DType) -> String {
    let mut src = prelude(dtype);
    src.push_str(&super::codes::defines());
    for (file, text) in SOURCES {
        src.push_str(&format!("#line 1 \"{file}\"\n{text}"));
    }
    src
}

/// Compiles the kernels of `dtype` to PTX for `arch` (`(9, 0)` for
/// `compute_90`; `None` for NVRTC's default). Needs only the NVRTC
/// library, no device: the test suite uses it to check the source.
///
/// # Errors
///
/// NVRTC's log, when the source does not compile.
pub fn compile(dtype: DType, arch: Option<(i32, i32)>) -> Result<Ptx, String> {
    compile_text(&source(dtype), &format!("weft_{dtype}.cu"), arch)
}

/// Compiles CUDA source `text` (program `name`) to PTX for `arch`.
pub(crate) fn compile_text(
    text: &str,
    name: &str,
    arch: Option<(i32, i32)>,
) -> Result<Ptx, String> {
    let mut options = CompileOptions {
        name: Some(name.to_owned()),
        ..CompileOptions::default()
    };
    if let Some((major, minor)) = arch {
        options
            .options
            .push(format!("--gpu-architecture=compute_{major}{minor}"));
    }
    compile_ptx_with_opts(text, options).map_err(|e| e.to_string())
}

/// Compiles a cubecl kernel's source to PTX for `compute_{arch}` (at
/// least [`CUBE_MIN_ARCH`](super::cube::CUBE_MIN_ARCH)), as the engine does
/// for a device NVRTC cannot target: needs only NVRTC, no device.
///
/// # Errors
///
/// NVRTC's log.
pub fn compile_cube(source: &CubeSource, arch: (i32, i32)) -> Result<Ptx, String> {
    compile_text(&source.text, &format!("{}.cu", source.entry), Some(arch))
}

/// Compiles a cubecl kernel's source to a cubin for `sm_{arch}`, as the
/// engine does for a device NVRTC targets.
///
/// # Errors
///
/// NVRTC's log.
pub fn compile_cube_cubin(source: &CubeSource, arch: i32) -> Result<Vec<u8>, String> {
    super::nvrtc::compile_cubin(&source.text, &format!("{}.cu", source.entry), arch)
}

/// What a device of architecture `arch` loads of CUDA source `text`: a
/// cubin or PTX, as [`Target::choose`] says, with PTX for `floor` (else
/// NVRTC's default) where NVRTC targets nothing at or below the device's
/// architecture.
fn image(
    text: &str,
    name: &str,
    arch: (i32, i32),
    floor: Option<(i32, i32)>,
) -> Result<Ptx, KernelError> {
    if !super::nvrtc_present() {
        return Err(KernelError::NoNvrtc);
    }
    match Target::choose(arch, &super::nvrtc::nvrtc_architectures()) {
        Target::Cubin(sm) => Ok(Ptx::from_binary(
            super::nvrtc::compile_cubin(text, name, sm).map_err(KernelError::Compile)?,
        )),
        Target::Ptx(compute) => {
            let compute = compute.map(|a| (a / 10, a % 10)).or(floor);
            compile_text(text, name, compute).map_err(KernelError::Compile)
        }
    }
}

/// What NVRTC makes for a device: a cubin for its architecture when NVRTC
/// can target it, else PTX for the newest architecture NVRTC knows that
/// the device runs (the driver compiles it), else PTX for NVRTC's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// A binary for `sm_{0}`.
    Cubin(i32),
    /// PTX for `compute_{0}` (`None`: NVRTC's default).
    Ptx(Option<i32>),
}

impl Target {
    /// The target for a device of compute capability `device`, given the
    /// architectures NVRTC supports (`90` for `sm_90`).
    pub(crate) fn choose(device: (i32, i32), supported: &[i32]) -> Target {
        let arch = device.0 * 10 + device.1;
        if supported.contains(&arch) {
            return Target::Cubin(arch);
        }
        Target::Ptx(supported.iter().copied().filter(|&a| a <= arch).max())
    }
}

/// Compiles the kernels of `dtype` to a cubin for `sm_{arch}` (`90`):
/// what the engine loads on a device NVRTC can target.
///
/// # Errors
///
/// NVRTC's log.
pub fn compile_cubin(dtype: DType, arch: i32) -> Result<Vec<u8>, String> {
    super::nvrtc::compile_cubin(&source(dtype), &format!("weft_{dtype}.cu"), arch)
}

/// The compiled modules of one device, by element type, and their functions.
#[derive(Debug, Default)]
pub(crate) struct Kernels {
    modules: HashMap<DType, Arc<CudaModule>>,
    functions: HashMap<(DType, Kernel), CudaFunction>,
    /// cubecl kernels (`cube/`), by kernel and element type, each in a
    /// module of its own, with the layout of its argument block and its
    /// threads per block.
    cube: HashMap<CubeKey, (CudaFunction, InfoLayout, u32)>,
    /// Run the real types' unary maps with the source's switch kernel
    /// instead of their cubecl kernels (`CudaEngine::use_source_maps`).
    pub(crate) source_maps: bool,
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
            let image = image(&source(dtype), &format!("weft_{dtype}.cu"), arch, None)?;
            let module = ctx
                .load_module(image)
                .map_err(|e| KernelError::Load(e.to_string()))?;
            for k in Kernel::of(dtype) {
                let f = module
                    .load_function(&format!("{}_{dtype}", k.name()))
                    .map_err(|e| KernelError::Load(e.to_string()))?;
                self.functions.insert((dtype, k), f);
            }
            self.modules.insert(dtype, module);
        }
        self.functions
            .get(&(dtype, kernel))
            .cloned()
            .ok_or_else(|| KernelError::Load(format!("no {} kernel for {dtype}", kernel.name())))
    }

    /// The cubecl kernel `key`, compiled from `source` on first use (to
    /// CUDA by cubecl, then by NVRTC as the engine's own kernels are).
    pub(crate) fn cube(
        &mut self,
        ctx: &Arc<CudaContext>,
        arch: (i32, i32),
        key: CubeKey,
        source: impl FnOnce() -> Result<Arc<CubeSource>, CubeError>,
    ) -> Result<(CudaFunction, InfoLayout, u32), KernelError> {
        if let Some(found) = self.cube.get(&key) {
            return Ok(found.clone());
        }
        let source = source().map_err(KernelError::Cube)?;
        if arch < CUBE_MIN_ARCH {
            let (major, minor) = arch;
            return Err(KernelError::Cube(CubeError::Architecture {
                kernel: source.kernel,
                major,
                minor,
            }));
        }
        let name = format!("{}.cu", source.entry);
        let image = image(&source.text, &name, arch, Some(CUBE_MIN_ARCH))?;
        let module = ctx
            .load_module(image)
            .map_err(|e| KernelError::Load(e.to_string()))?;
        let f = module
            .load_function(&source.entry)
            .map_err(|e| KernelError::Load(e.to_string()))?;
        // The function keeps its module loaded.
        self.cube.insert(key, (f, source.info, source.cube_dim));
        Ok(self.cube[&key].clone())
    }
}

/// Why a kernel is not available.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KernelError {
    NoNvrtc,
    /// cubecl could not make the kernel's source.
    Cube(CubeError),
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

/// Threads that reduce one segment of `len` elements: the power of two at
/// or above `len`, at most a block (so it divides the block).
pub(crate) fn segment_width(len: usize) -> i32 {
    len.clamp(1, REDUCE_THREADS as usize).next_power_of_two() as i32
}

/// `segments` segments of a row kernel, `width` threads each
/// ([`segment_width`]): a block takes `REDUCE_THREADS / width` at a time,
/// the grid loops over those beyond it.
pub(crate) fn rows(segments: usize, width: i32) -> LaunchConfig {
    let per_block = REDUCE_THREADS as usize / width.max(1) as usize;
    LaunchConfig {
        grid_dim: (segments.div_ceil(per_block).clamp(1, 1 << 16) as u32, 1, 1),
        block_dim: (REDUCE_THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// A scatter's updates grouped by the position they land on: the distinct
/// targets in order of first appearance, and for target `t` the updates
/// `src[start[t]..start[t + 1]]` (their places in the index tensor, in its
/// order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Targets {
    pub(crate) dst: Vec<usize>,
    pub(crate) start: Vec<usize>,
    pub(crate) src: Vec<usize>,
}

impl Targets {
    /// Groups the positions `at` (update `j` lands on `at[j]`).
    pub(crate) fn group(at: &[usize]) -> Targets {
        let mut slot: HashMap<usize, usize> = HashMap::new();
        let mut lists: Vec<Vec<usize>> = Vec::new();
        let mut dst = Vec::new();
        for (j, &p) in at.iter().enumerate() {
            let t = *slot.entry(p).or_insert_with(|| {
                dst.push(p);
                lists.push(Vec::new());
                lists.len() - 1
            });
            lists[t].push(j);
        }
        let mut start = Vec::with_capacity(lists.len() + 1);
        start.push(0);
        let mut src = Vec::with_capacity(at.len());
        for list in lists {
            src.extend(list);
            start.push(src.len());
        }
        Targets { dst, start, src }
    }

    /// Whether the kernel may trust it: targets below `extent`, offsets
    /// rising from 0 to the update count by at least one each, update
    /// positions below that count.
    pub(crate) fn is_sound(&self, extent: usize) -> bool {
        let n = self.src.len();
        self.start.len() == self.dst.len() + 1
            && self.start.first() == Some(&0)
            && self.start.last() == Some(&n)
            && self.start.windows(2).all(|w| w[0] < w[1])
            && self.dst.iter().all(|&d| d < extent)
            && self.src.iter().all(|&s| s < n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_rows_share_a_block() {
        assert_eq!(segment_width(0), 1);
        assert_eq!(segment_width(1), 1);
        assert_eq!(segment_width(7), 8);
        assert_eq!(segment_width(32), 32);
        assert_eq!(segment_width(300), REDUCE_THREADS as i32);
        for len in [1, 3, 8, 100, 255, 256, 10_000] {
            let w = segment_width(len) as u32;
            assert_eq!(REDUCE_THREADS % w, 0, "{len}: {w} must divide the block");
            assert!(w as usize >= len.min(REDUCE_THREADS as usize), "{len}: {w}");
        }
        // 1 800 rows of 7: 32 a block, 57 blocks; rows of 300 a block each.
        assert_eq!(rows(1800, segment_width(7)).grid_dim.0, 57);
        assert_eq!(rows(1800, segment_width(300)).grid_dim.0, 1800);
        assert_eq!(rows(1 << 30, 1).grid_dim.0, 1 << 16, "the grid loops");
    }

    #[test]
    fn a_cubin_where_nvrtc_targets_the_device_else_ptx_it_can_run() {
        let nvrtc_12_9 = [
            50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 120,
        ];
        assert_eq!(Target::choose((9, 0), &nvrtc_12_9), Target::Cubin(90));
        assert_eq!(Target::choose((8, 6), &nvrtc_12_9), Target::Cubin(86));
        // A device newer than this NVRTC: PTX for the newest it knows.
        assert_eq!(Target::choose((12, 1), &nvrtc_12_9), Target::Ptx(Some(120)));
        // An NVRTC that no longer targets an old device: nothing it runs.
        assert_eq!(Target::choose((3, 5), &nvrtc_12_9), Target::Ptx(None));
        // An NVRTC that cannot say: its default PTX.
        assert_eq!(Target::choose((9, 0), &[]), Target::Ptx(None));
    }

    /// The kernel's `offset`, on the host.
    fn offset(d: &Dims, strides: &[i64; MAX_RANK], base: i64, mut i: i64) -> i64 {
        let mut o = base;
        for k in (0..d.rank as usize).rev() {
            o += (i % d.shape[k]) * strides[k];
            i /= d.shape[k];
        }
        o
    }

    /// Every element's offsets, walked axis by axis as given.
    fn reference(shape: &[usize], strides: &[isize], base: isize) -> Vec<i64> {
        let n: usize = shape.iter().product();
        (0..n)
            .map(|mut i| {
                let mut o = base as i64;
                for k in (0..shape.len()).rev() {
                    o += (i % shape[k]) as i64 * strides[k] as i64;
                    i /= shape[k];
                }
                o
            })
            .collect()
    }

    #[test]
    fn dims_walk_each_operand_by_its_strides() {
        // A broadcast row (stride 0) beside a contiguous operand: no merge.
        let d = Dims::new(&[2, 3], &[(&[3, 1], 0), (&[0, 1], 5)]).unwrap();
        assert_eq!((d.n, d.rank, d.len()), (6, 2, 6));
        assert_eq!(&d.shape[..2], &[2, 3]);
        assert_eq!((&d.s0[..2], d.b0), (&[3i64, 1][..], 0));
        assert_eq!((&d.s1[..2], d.b1), (&[0i64, 1][..], 5));
        assert_eq!(d.s2, [0; MAX_RANK]);
        // Contiguous operands become one axis; extents of 1 vanish, so a
        // walk of more than MAX_RANK axes can still fit.
        let shape = [2, 1, 3, 4];
        let rm = row_major(&shape);
        let d = Dims::new(&shape, &[(&rm, 0), (&rm, 7)]).unwrap();
        assert_eq!(
            (d.rank, d.shape[0], d.s0[0], d.s1[0], d.b1),
            (1, 24, 1, 1, 7)
        );
        let tall = [1usize; MAX_RANK + 4];
        assert_eq!(
            Dims::new(&tall, &[(&[0; MAX_RANK + 4], 0)]).unwrap().rank,
            0
        );
        let distinct: Vec<usize> = (0..MAX_RANK + 1).map(|_| 2).collect();
        let broadcast: Vec<isize> = (0..MAX_RANK + 1).map(|k| (k % 2) as isize).collect();
        assert!(Dims::new(&distinct, &[(&broadcast, 0)]).is_none());
        // Layout: what the kernels read by value (`long long` fields).
        assert_eq!(std::mem::size_of::<Dims>(), 8 * (2 + 4 * MAX_RANK + 3));
    }

    #[test]
    fn merged_walks_reach_the_same_offsets() {
        // Permutations, slices with steps, reversals and broadcasts of a
        // few shapes: the merged walk visits every element where the
        // axis-by-axis walk does.
        let shapes: [&[usize]; 5] = [&[4, 5, 6], &[1, 7, 1, 3], &[2, 3, 4, 5], &[6], &[]];
        for shape in shapes {
            let rank = shape.len();
            let mut views = vec![View {
                shape: shape.to_vec(),
                strides: row_major(shape),
                base: 0,
            }];
            if rank >= 2 {
                let perm: Vec<usize> = (0..rank).rev().collect();
                views.push(weft_core::ops::permute_view(shape, &perm).unwrap());
                let axes: Vec<usize> = (0..rank).step_by(2).collect();
                views.push(weft_core::ops::reverse_view(shape, &axes).unwrap());
                let mut to = vec![3];
                to.extend_from_slice(shape);
                views.push(weft_core::ops::broadcast_view(shape, &to).unwrap());
            }
            let steps: Vec<weft_core::ops::SliceAxis> = shape
                .iter()
                .map(|&e| weft_core::ops::SliceAxis {
                    start: usize::from(e > 2),
                    stop: e,
                    step: 1 + usize::from(e > 3),
                })
                .collect();
            views.push(weft_core::ops::slice_view(shape, &steps).unwrap());
            for v in views {
                let d = Dims::gather(&v).unwrap();
                let dst = row_major(&v.shape);
                let want_src = reference(&v.shape, &v.strides, v.base);
                let want_dst = reference(&v.shape, &dst, 0);
                assert_eq!(d.len(), want_src.len(), "{v:?}");
                for i in 0..d.len() {
                    assert_eq!(offset(&d, &d.s0, d.b0, i as i64), want_src[i], "{v:?} {i}");
                    assert_eq!(offset(&d, &d.s1, d.b1, i as i64), want_dst[i], "{v:?} {i}");
                }
            }
        }
    }

    #[test]
    fn a_gather_writes_the_destination_row_major() {
        let view = weft_core::ops::reverse_view(&[2, 3], &[1]).unwrap();
        let d = Dims::gather(&view).unwrap();
        assert_eq!((&d.s0[..2], d.b0), (&[3i64, -1][..], 2));
        assert_eq!((&d.s1[..2], d.b1), (&[3i64, 1][..], 0));
    }

    #[test]
    fn the_source_names_every_kernel_for_every_type() {
        for dtype in [DType::F32, DType::F64, DType::C32, DType::C64] {
            let src = source(dtype);
            // The typedefs come after the complex template they may name.
            let cx = src
                .find("template <typename F> struct alignas(2 * sizeof(F)) cx")
                .unwrap();
            assert!(src.find("typedef ELEMENT T;").unwrap() > cx);
            assert!(src.starts_with(&format!("#define SUFFIX {dtype}\n")));
            for k in Kernel::of(dtype) {
                let (direct, cast) = (
                    format!("K({})(", k.name()),
                    format!("CAST_TO({},", k.name()),
                );
                assert!(src.contains(&direct) || src.contains(&cast), "{}", k.name());
            }
        }
    }
}
