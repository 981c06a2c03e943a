//! A CPU stage and a GPU stage (feature `cuda`): the CPU makes batches of
//! random matrices, CUDA device 0 contracts them (einsum through cuBLAS),
//! the CPU reduces the results; each item is checked against the same
//! contraction on the CPU. Without a GPU it says why and exits.
//!
//! `cargo run --release -p weft-examples --features cuda --example cuda_pipeline`

use std::collections::VecDeque;
use std::time::Instant;
use weft::ops::{CreateOps, ElementwiseOps, LinalgOps, ReduceOps, StructuralOps};

use weft::{ops::Distribution, BuildError, DType, Place, Runtime};

const ITEMS: u64 = 64;
const IN_FLIGHT: usize = 8;
const BATCH: usize = 16;
const N: usize = 256;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rt = match Runtime::builder().cuda_devices([0]).build() {
        Ok(rt) => rt,
        Err(BuildError::Cuda(reason)) => {
            println!("skipped: {reason}");
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let (cpu, gpu) = (rt.lane(0)?, rt.cuda_lane(0)?);
    let start = Instant::now();
    let mut pending = VecDeque::new();
    let mut worst: f64 = 0.0;
    for i in 0..ITEMS {
        // Stage 1 (CPU): the inputs. Stage 2 (GPU): Σ_b X_b X_bᵀ. Stage 3
        // (CPU): its trace, which is Σ |X|², the check's other side.
        let x = cpu.random(DType::F32, &[BATCH, N, N], Distribution::Normal, i)?;
        let on_gpu = cpu.transfer(&x, Place::Cuda(0))?;
        let gram = gpu.einsum("bij,bkj->ik", &[&on_gpu, &on_gpu])?;
        let back = gpu.transfer(&gram, 0)?;
        let trace = cpu.sum_all(&cpu.diagonal(&back)?)?;
        let squares = cpu.sum_all(&cpu.mul(&x, &x)?)?;
        pending.push_back((cpu.download(&trace)?, cpu.download(&squares)?));
        while pending.len() > IN_FLIGHT || (i + 1 == ITEMS && !pending.is_empty()) {
            let (got, want) = pending.pop_front().expect("not empty");
            let (got, want) = (
                got.wait()?.as_slice::<f32>()?[0],
                want.wait()?.as_slice::<f32>()?[0],
            );
            worst = worst.max(f64::from((got - want).abs() / want));
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "{ITEMS} items of {BATCH}×{N}×{N} f32 through CPU → GPU → CPU in {seconds:.2} s: {:.1} items/s",
        ITEMS as f64 / seconds
    );
    assert!(worst < 1e-3, "relative error {worst:e}");
    println!("checked: trace(Σ X Xᵀ) = Σ |X|² for every item (worst relative error {worst:.1e})");
    println!("{}", rt.stats());
    rt.shutdown()?;
    Ok(())
}
