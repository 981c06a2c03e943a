//! Case `small_gemm`: the products of MPS contractions (bond 4 to 32),
//! per product, as the engine runs them in a program on the actor,
//! against the best of faer called directly and a plain-loop kernel, both
//! into buffers of their own and on the actor too.
//!
//! A program of 64 products alternates the two shapes of an MPS transfer
//! step at bond `b`: `b×2b · 2b×b` and `b×b · b×2b`. Each product there
//! needs the one before it, so every step pays the program's per-step
//! cost. The batched rows are the other form: 64 independent products of
//! `b×2b · 2b×b` as one einsum `bij,bjk->bik` (the batched-product path:
//! the batch spread over the pool, each product on one thread), against
//! the best of faer and the plain loop per product with rayon over the
//! same batch on the same threads.

use std::time::{Duration, Instant};
use weft::ops::LinalgOps;
use weft::OpError;

use rayon::prelude::*;
use weft::{
    c64,
    tensor::{Field, TensorId},
    Lane, Program, Tensor, TensorEngine,
};
use weft_examples::{random, BoxError};

use crate::case::{Case, Domain, Run};
use crate::report::{Row, Side, Unit};
use crate::timing::{interleaved, median};

pub(super) const CASE: Case = Case {
    name: "small_gemm",
    title: "small products (MPS shapes), per product",
    run: Run::InDomain(run),
};

/// Products in the program.
const PRODUCTS: usize = 64;
/// Runs timed in one stretch on the actor.
const RUNS: u32 = 50;
const BONDS: [usize; 4] = [4, 8, 16, 32];

fn run(domain: &Domain<'_>, rows: &mut Vec<Row>) -> Result<(), BoxError> {
    let Domain { settings, lane, .. } = *domain;
    let reps = settings.reps(11);
    let c64s = |len, seed| {
        let (re, im) = (random(len, seed), random(len, seed + 100));
        re.into_iter()
            .zip(im)
            .map(|(r, i)| c64::new(r, i))
            .collect()
    };
    for bond in BONDS {
        shape_rows::<f64>(lane, bond, reps, &random, rows)?;
        shape_rows::<c64>(lane, bond, reps, &c64s, rows)?;
    }
    for bond in BONDS {
        batched_rows::<f64>(domain, bond, &random, rows)?;
        batched_rows::<c64>(domain, bond, &c64s, rows)?;
    }
    Ok(())
}

/// 64 independent products `b×2b · 2b×b` as one einsum, per product.
fn batched_rows<T: Field>(
    domain: &Domain<'_>,
    b: usize,
    values: &dyn Fn(usize, u64) -> Vec<T>,
    rows: &mut Vec<Row>,
) -> Result<(), BoxError> {
    let Domain {
        settings,
        lane,
        direct_pool,
        ..
    } = *domain;
    let dtype = T::DTYPE;
    let (pm, qm, cm) = (2 * b * b, 2 * b * b, b * b);
    let (p, q) = (values(PRODUCTS * pm, 7), values(PRODUCTS * qm, 8));
    let (hp, hq) = (
        lane.upload(Tensor::from_vec(p.clone(), &[PRODUCTS, b, 2 * b])?)?,
        lane.upload(Tensor::from_vec(q.clone(), &[PRODUCTS, 2 * b, b])?)?,
    );
    // Enough einsums to a timed run that it lasts well over the lane's
    // round trip: about 2^20 multiply-adds.
    let runs = ((1usize << 20) / (PRODUCTS * b * 2 * b * b)).clamp(1, 64);
    let (mut by_faer, mut by_loop) = (vec![T::ZERO; PRODUCTS * cm], vec![T::ZERO; PRODUCTS * cm]);
    let each = |c: &mut [T], product: Product<T>| {
        direct_pool.install(|| {
            c.par_chunks_mut(cm).enumerate().for_each(|(i, c)| {
                product(
                    c,
                    &p[i * pm..(i + 1) * pm],
                    &q[i * qm..(i + 1) * qm],
                    [b, 2 * b, b],
                );
            });
        });
    };
    let serial = |c: &mut [T], product: Product<T>| {
        for (i, c) in c.chunks_mut(cm).enumerate() {
            product(
                c,
                &p[i * pm..(i + 1) * pm],
                &q[i * qm..(i + 1) * qm],
                [b, 2 * b, b],
            );
        }
    };
    let mut by_serial = vec![T::ZERO; PRODUCTS * cm];
    let einsum = || lane.einsum("bij,bjk->bik", &[&hp, &hq]).expect("submitted");
    let [weft, faer_over_pool, faer, plain] = interleaved(
        settings.reps(11),
        [
            &mut || {
                let mut last = einsum();
                for _ in 1..runs {
                    last = einsum();
                }
                lane.sync(&last).expect("submitted").wait().expect("ran");
            },
            &mut || (0..runs).for_each(|_| each(&mut by_faer, faer_product)),
            &mut || (0..runs).for_each(|_| serial(&mut by_serial, faer_product)),
            &mut || (0..runs).for_each(|_| serial(&mut by_loop, plain_product)),
        ],
    );
    let got = lane.download(&einsum())?.wait()?.into_vec::<T>()?;
    for (what, want) in [
        ("faer over the pool", &by_faer),
        ("faer", &by_serial),
        ("the plain loop", &by_loop),
    ] {
        super::close(&got, want, 1e-10)
            .map_err(|e| format!("small_gemm batched bond {b} {dtype}: {e} ({what})"))?;
    }
    let per = |d: Duration| d.as_secs_f64() * 1e6 / (runs * PRODUCTS) as f64;
    let (best, name) = [
        (faer_over_pool, "faer, rayon over the batch"),
        (faer, "faer, one thread"),
        (plain, "plain loop, one thread"),
    ]
    .into_iter()
    .min_by_key(|(d, _)| *d)
    .expect("three");
    rows.push(
        Row::new(
            CASE.name,
            format!("small_gemm-batched-{dtype}-bond{b}"),
            format!("{dtype}, {PRODUCTS} × {b}×{}·{}×{b} batched", 2 * b, 2 * b),
            Unit::MicrosPerOp,
            Side::new("lane.einsum bij,bjk->bik", per(weft)),
        )
        .against(Side::new(
            format!(
                "best: {name} (pool {:.3}, faer {:.3}, loop {:.3})",
                per(faer_over_pool),
                per(faer),
                per(plain)
            ),
            per(best),
        )),
    );
    Ok(())
}

/// The two operands at bond `b`: `p` of `b×2b`, `q` of `2b×b`, scaled so
/// that 64 products neither overflow nor vanish.
fn operands<T: Field>(b: usize, values: &dyn Fn(usize, u64) -> Vec<T>) -> [Vec<T>; 2] {
    let scale = T::from_parts(2.0 / ((2 * b) as f64).sqrt(), 0.0);
    let scaled = |v: Vec<T>| v.into_iter().map(|x| x * scale).collect();
    [
        scaled(values(2 * b * b, b as u64)),
        scaled(values(2 * b * b, b as u64 + 1)),
    ]
}

/// The `m×k · k×n` dims of product `i` of the chain at bond `b`.
fn dims(i: usize, b: usize) -> [usize; 3] {
    if i.is_multiple_of(2) {
        [b, 2 * b, b]
    } else {
        [b, b, 2 * b]
    }
}

fn shape_rows<T: Field>(
    lane: &Lane,
    b: usize,
    reps: usize,
    values: &dyn Fn(usize, u64) -> Vec<T>,
    rows: &mut Vec<Row>,
) -> Result<(), BoxError> {
    let dtype = T::DTYPE;
    let [p, q] = operands(b, values);
    let handles = [
        lane.upload(Tensor::from_vec(p.clone(), &[b, 2 * b])?)?,
        lane.upload(Tensor::from_vec(q.clone(), &[2 * b, b])?)?,
    ];
    let program = Program::record(|r| -> Result<(), OpError> {
        let (p, q) = (r.input(dtype, &[b, 2 * b]), r.input(dtype, &[2 * b, b]));
        let mut x = p;
        for i in 0..PRODUCTS {
            let factor = if i.is_multiple_of(2) { q } else { p };
            x = r.einsum("ij,jk->ik", &[&x, &factor])?;
        }
        Ok(r.output(x)?)
    })?
    .labelled("small_gemm");
    let ids: Vec<TensorId> = handles.iter().map(|h| h.id()).collect();
    lane.sync(&handles[1])?.wait()?;
    let timed = lane
        .run(move |engine: &mut weft::CpuEngine| {
            let out = [TensorId::scratch()];
            let mut times = [Vec::new(), Vec::new(), Vec::new()];
            let mut results: [Vec<T>; 3] = Default::default();
            for _ in 0..reps {
                times[0].push(stretch(|| {
                    engine.free(out[0]);
                    engine.run_program(&program, &ids, &out, 0).is_ok()
                }));
                times[1].push(stretch(|| !chain(&p, &q, b, faer_product).is_empty()));
                times[2].push(stretch(|| !chain(&p, &q, b, plain_product).is_empty()));
            }
            results[0] = engine
                .download(out[0], 0)
                .map_err(|e| e.to_string())?
                .into_vec::<T>()
                .map_err(|e| e.to_string())?;
            engine.free(out[0]);
            results[1] = chain(&p, &q, b, faer_product);
            results[2] = chain(&p, &q, b, plain_product);
            Ok::<_, String>((times.map(median), results))
        })?
        .wait()??;
    let ([weft, faer, plain], [got, by_faer, by_loop]) = timed;
    for (what, want) in [("faer", &by_faer), ("the plain loop", &by_loop)] {
        super::close(&got, want, 1e-10)
            .map_err(|e| format!("small_gemm bond {b} {dtype}: {e} ({what})"))?;
    }
    let per = |d: Duration| d.as_secs_f64() * 1e6 / PRODUCTS as f64;
    let (best, name) = if faer <= plain {
        (faer, "faer direct")
    } else {
        (plain, "plain loop")
    };
    rows.push(
        Row::new(
            CASE.name,
            format!("small_gemm-{dtype}-bond{b}"),
            format!(
                "{dtype}, {b}×{}·{}×{b} and {b}×{b}·{b}×{}",
                2 * b,
                2 * b,
                2 * b
            ),
            Unit::MicrosPerOp,
            Side::new("engine.run_program", per(weft)),
        )
        .against(Side::new(
            format!(
                "best: {name} (faer {:.3}, loop {:.3})",
                per(faer),
                per(plain)
            ),
            per(best),
        )),
    );
    Ok(())
}

/// One run's time: `RUNS` runs of `f` timed together.
fn stretch(mut f: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    for _ in 0..RUNS {
        assert!(std::hint::black_box(f()), "the run failed");
    }
    start.elapsed() / RUNS
}

/// A product kernel: `c = a · b` of the given `m×k · k×n` dims.
type Product<T> = fn(&mut [T], &[T], &[T], [usize; 3]);

/// The chain of products of `p` and `q` at bond `b`, each by `product`
/// into a buffer of its own (two, used in turn).
fn chain<T: Field>(p: &[T], q: &[T], b: usize, product: Product<T>) -> Vec<T> {
    let mut x = p.to_vec();
    let mut next = vec![T::ZERO; 2 * b * b];
    for i in 0..PRODUCTS {
        let [m, k, n] = dims(i, b);
        let factor = if i.is_multiple_of(2) { q } else { p };
        product(&mut next[..m * n], &x[..m * k], factor, [m, k, n]);
        std::mem::swap(&mut x, &mut next);
    }
    let [m, _, n] = dims(PRODUCTS - 1, b);
    x.truncate(m * n);
    x
}

fn faer_product<T: Field>(c: &mut [T], a: &[T], b: &[T], [m, k, n]: [usize; 3]) {
    faer::linalg::matmul::matmul(
        faer::MatMut::from_row_major_slice_mut(c, m, n),
        faer::Accum::Replace,
        faer::MatRef::from_row_major_slice(a, m, k),
        faer::MatRef::from_row_major_slice(b, k, n),
        T::ONE,
        faer::Par::Seq,
    );
}

/// The plain loop: each row of `c` accumulated from the rows of `b`.
fn plain_product<T: Field>(c: &mut [T], a: &[T], b: &[T], [m, k, n]: [usize; 3]) {
    for i in 0..m {
        let row = &mut c[i * n..(i + 1) * n];
        row.fill(T::ZERO);
        for p in 0..k {
            let s = a[i * k + p];
            for (x, &y) in row.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                *x += s * y;
            }
        }
    }
}
