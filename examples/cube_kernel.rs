//! A kernel written in Rust, on a CUDA lane (feature `cuda`): the fused
//! three-term update of a Lanczos step, `w ← w − α·v − β·v_prev`, as a
//! cubecl `#[cube]` function, launched on the lane's stream with the
//! lane's resident vectors as its arrays and mixed with the vocabulary
//! (the norm and the scaling of the next step are named ops on the same
//! lane). Checked against the same update by named ops on the CPU.
//!
//! cubecl is weft's compiler here, nothing more: it turns the function into
//! CUDA source, weft's NVRTC compiles it for the device and weft's actor
//! launches it. Without a GPU the example prints the source cubecl made
//! and says why it launched nothing.
//!
//! `cargo run --release -p weft-examples --features cuda --example cube_kernel`

use weft::cuda::cubecl;
use weft::cuda::{cube_source, CubeArgs, CubeKernel, Signature};
use weft::ops::{CreateOps, CubeOps, Distribution, ElementwiseOps, ReduceOps};
use weft::tensor::Meta;
use weft::{BuildError, DType, Place, Runtime};

use cubecl::ir::Scope;
use cubecl::prelude::*;

/// `w − α·v − β·u`, element by element: one thread each.
#[cube]
fn three_term<F: Float>(
    w: &Array<F>,
    v: &Array<F>,
    u: &Array<F>,
    out: &mut Array<F>,
    alpha: F,
    beta: F,
) {
    if ABSOLUTE_POS < out.len() {
        out[ABSOLUTE_POS] = w[ABSOLUTE_POS] - alpha * v[ABSOLUTE_POS] - beta * u[ABSOLUTE_POS];
    }
}

/// What weft needs to know of it: three arrays in, one out, two scalars.
struct ThreeTerm;

impl CubeKernel for ThreeTerm {
    const NAME: &'static str = "three_term";
    const SIGNATURE: Signature = Signature {
        inputs: 3,
        outputs: 1,
        scalars: 2,
    };
    fn expand<F: Float + CubeElement>(scope: &mut Scope, a: &CubeArgs<F>) {
        three_term::expand::<F>(
            scope,
            a.input(0),
            a.input(1),
            a.input(2),
            a.output(0),
            a.scalar(0),
            a.scalar(1),
        );
    }
}

const N: usize = 1 << 20;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let source = cube_source::<ThreeTerm>(DType::F64)?;
    let rt = match Runtime::builder().split(1).cuda_devices([0]).build() {
        Ok(rt) => rt,
        Err(BuildError::Cuda(reason)) => {
            // The entry point and its parameters: the arrays, then the
            // argument block by value.
            let lines: Vec<&str> = source.text.lines().collect();
            let at = lines.iter().position(|l| l.contains(&source.entry));
            println!(
                "cubecl made {} ({} lines of CUDA; {:?})",
                source.entry,
                lines.len(),
                source.info
            );
            for line in at.map_or(&[][..], |i| &lines[i..(i + 3).min(lines.len())]) {
                println!("  {}", line.trim());
            }
            println!("skipped: the launch needs a GPU ({reason})");
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let (cpu, gpu) = (rt.lane(0)?, rt.cuda_lane(0)?);
    let (alpha, beta) = (0.75, -0.25);
    let mut worst: f64 = 0.0;
    for step in 0..4u64 {
        let [w, v, u] =
            [0, 1, 2].map(|k| cpu.random(DType::F64, &[N], Distribution::Normal, 3 * step + k));
        let (w, v, u) = (w?, v?, u?);
        let on = |t| cpu.transfer(t, Place::Cuda(0));
        let (gw, gv, gu) = (on(&w)?, on(&v)?, on(&u)?);
        // The fused update on the device, then named ops on its result:
        // its norm and the next step's vector, all on the lane's stream.
        let out = gpu.launch::<ThreeTerm>(
            &[&gw, &gv, &gu],
            &[alpha, beta],
            &[Meta {
                dtype: DType::F64,
                shape: vec![N],
            }],
        )?;
        let norm = gpu.norm(&out[0])?;
        let next = gpu.div(&out[0], &norm)?;
        // The same with named ops on the CPU.
        let want = cpu.sub(&cpu.sub(&w, &cpu.scale(&v, alpha)?)?, &cpu.scale(&u, beta)?)?;
        let want_next = cpu.div(&want, &cpu.norm(&want)?)?;
        let got = gpu.download(&next)?.wait()?;
        let want = cpu.download(&want_next)?.wait()?;
        for (g, w) in got.as_slice::<f64>()?.iter().zip(want.as_slice::<f64>()?) {
            worst = worst.max((g - w).abs());
        }
    }
    assert!(worst < 1e-12, "largest difference {worst:e}");
    println!("checked: the fused update and its normalisation match the CPU's named ops on 4 steps of {N} f64 (largest difference {worst:.1e})");
    println!("{}", rt.stats());
    rt.shutdown()?;
    Ok(())
}
