//! The coverage table: every op of the vocabulary × backend × element type,
//! printed and checked. The CPU column is what running each sample on a
//! CPU engine gives; the CUDA column is the CUDA engine's own account
//! (`cuda::missing`), which the GPU check runs against a device.

use weft_topology::CpuSet;

use weft_core::ops::samples;
use weft_core::{DType, Distribution, Linalg, Meta, Tensor, TensorError, TensorOp};
use weft_cpu::{CpuEngine, CpuEngineConfig, Pinning};

const DTYPES: [DType; 7] = DType::ALL;

/// One cell: runs, the vocabulary refuses the element type, or the backend
/// does not implement the op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cell {
    Runs,
    Undefined,
    Missing,
}

impl Cell {
    fn mark(self) -> &'static str {
        match self {
            Cell::Runs => "ok",
            Cell::Undefined => "-",
            Cell::Missing => "no",
        }
    }
}

/// Inputs of these types and shapes: identities for decompositions (every
/// one of them admits one), seeded random data otherwise.
fn inputs(engine: &CpuEngine, op: &TensorOp, metas: &[Meta]) -> Vec<Tensor> {
    metas
        .iter()
        .enumerate()
        .map(|(i, m)| match (op, &m.shape[..]) {
            (TensorOp::Linalg(_), &[n, n2]) if n == n2 => {
                let eye = TensorOp::Eye {
                    dtype: m.dtype,
                    rows: n,
                    cols: n,
                };
                engine.execute(&eye, &[]).unwrap().remove(0)
            }
            // Indices and starts in range; a mask of all six elements.
            (
                TensorOp::Gather { .. }
                | TensorOp::Scatter { .. }
                | TensorOp::DynamicSlice { .. }
                | TensorOp::DynamicUpdateSlice,
                _,
            ) if m.dtype == DType::I64 && i > 0 => {
                let indices = Distribution::Integers { low: 0, high: 2 };
                Tensor::random(m.dtype, &m.shape, indices, i as u64).unwrap()
            }
            (TensorOp::Compress { .. }, _) if i == 1 => {
                Tensor::from_vec(vec![true; 6], &m.shape).unwrap()
            }
            _ => {
                // Integers from 1 up: divisors and exponents that every
                // integer op takes.
                let distribution = match m.dtype {
                    DType::I32 | DType::I64 => Distribution::Integers { low: 1, high: 9 },
                    DType::Bool => Distribution::Bits,
                    _ => Distribution::Normal,
                };
                Tensor::random(m.dtype, &m.shape, distribution, i as u64).unwrap()
            }
        })
        .collect()
}

fn cpu_cell(engine: &CpuEngine, op: &TensorOp, metas: &[Meta]) -> Cell {
    match op.infer(metas) {
        Err(TensorError::Unsupported { .. }) => return Cell::Undefined,
        Err(e) => panic!("{}: the sample does not check: {e}", op.name()),
        Ok(_) => {}
    }
    let tensors = inputs(engine, op, metas);
    let refs: Vec<&Tensor> = tensors.iter().collect();
    match engine.execute(op, &refs) {
        Ok(outputs) => {
            let expected = op.infer(metas).unwrap();
            let got: Vec<Meta> = outputs.iter().map(Meta::of).collect();
            assert_eq!(got, expected, "{}: outputs differ from infer", op.name());
            Cell::Runs
        }
        Err(e) => panic!("{}: the CPU engine failed: {e}", op.name()),
    }
}

fn cuda_cell(op: &TensorOp, metas: &[Meta], dtype: DType) -> Cell {
    if op.infer(metas).is_err() {
        Cell::Undefined
    } else if crate::missing(
        op,
        metas.get(crate::data_input(op)).map_or(dtype, |m| m.dtype),
    )
    .is_some()
    {
        Cell::Missing
    } else {
        Cell::Runs
    }
}

/// The vocabulary page's table (`docs/guide/vocabulary.md`, between its
/// `coverage` markers) is this one.
fn check_readme(table: &str) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/guide/vocabulary.md"
    );
    let readme = std::fs::read_to_string(path).expect("the vocabulary page");
    let (begin, end) = (
        "<!-- coverage table -->\n```text\n",
        "```\n<!-- end of coverage table -->",
    );
    let start = readme
        .find(begin)
        .expect("the vocabulary page has the coverage table")
        + begin.len();
    let stop = start + readme[start..].find(end).expect("the table ends");
    let shown = &readme[start..stop];
    let lines = |t: &str| -> Vec<String> { t.lines().map(|l| l.trim_end().to_owned()).collect() };
    let (shown, computed) = (lines(shown), lines(table));
    let differs = (0..shown.len().max(computed.len())).find(|&i| shown.get(i) != computed.get(i));
    if let Some(i) = differs {
        panic!(
            "the vocabulary page's coverage table differs at line {i}: {:?} there, {:?} here; paste the \
             printed one",
            shown.get(i),
            computed.get(i)
        );
    }
}

#[test]
fn coverage_table() {
    let config = CpuEngineConfig {
        pinning: Pinning::None,
        ..CpuEngineConfig::new(0, CpuSet::single(0), 1)
    };
    let engine = CpuEngine::new(config).unwrap();
    let per_dtype: Vec<Vec<(TensorOp, Vec<Meta>)>> = DTYPES.iter().map(|&d| samples(d)).collect();
    let names: String = DTYPES
        .iter()
        .map(|d| format!("{:>5}", d.to_string()))
        .collect();
    let mut table = format!("op                    cpu:{names}   cuda:{names}\n");
    let mut cuda_missing: Vec<&'static str> = Vec::new();
    for row in 0..per_dtype[0].len() {
        let op = &per_dtype[0][row].0;
        let name = op.name();
        let shown = match op {
            TensorOp::BinaryScalar { .. } => format!("{name}_scalar"),
            _ => name.to_owned(),
        };
        let cpu: Vec<Cell> = per_dtype
            .iter()
            .map(|s| cpu_cell(&engine, &s[row].0, &s[row].1))
            .collect();
        // Every op the vocabulary defines for a type runs on the CPU, every
        // op for some type, and for both widths of a family or neither.
        assert!(cpu.iter().all(|&c| c != Cell::Missing), "{name}");
        assert!(cpu.contains(&Cell::Runs), "{name}");
        assert_eq!((cpu[0], cpu[2]), (cpu[1], cpu[3]), "{name}");
        assert_eq!(cpu[4], cpu[5], "{name}");
        let cells = |cells: &[Cell]| {
            cells
                .iter()
                .map(|c| format!("{:>5}", c.mark()))
                .collect::<String>()
        };
        let cuda = {
            let cuda: Vec<Cell> = per_dtype
                .iter()
                .zip(DTYPES)
                .map(|(s, d)| cuda_cell(&s[row].0, &s[row].1, d))
                .collect();
            // The CUDA engine refuses where the vocabulary does, and
            // nowhere else for some float types only: an op runs for every
            // float and complex type the vocabulary defines, or for none.
            for (c, p) in cuda.iter().zip(&cpu) {
                assert_eq!(*c == Cell::Undefined, *p == Cell::Undefined, "{name}");
            }
            if cuda[..4].contains(&Cell::Missing) && !cuda_missing.contains(&name) {
                cuda_missing.push(name);
            }
            cells(&cuda)
        };
        table += &format!("{shown:<22}    {}        {cuda}\n", cells(&cpu));
    }
    println!("{table}");
    check_readme(&table);
    // The CUDA engine lacks no op of the float and complex types.
    assert!(
        cuda_missing.is_empty(),
        "the CUDA engine lacks {cuda_missing:?}: say so in docs/cuda.md"
    );
    // Decompositions are the vocabulary's only ops with several outputs.
    let several: Vec<&str> = per_dtype[1]
        .iter()
        .filter(|(op, m)| op.infer(m).is_ok_and(|o| o.len() > 1))
        .map(|(op, _)| op.name())
        .collect();
    assert_eq!(several, [Linalg::Qr.name(), "svd", "eigh"]);
}
