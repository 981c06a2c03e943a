//! Transfers, the order of lanes and streams, programs, CPU and GPU pipelines, typed errors, lane retirement and the driver calls of a chain.

use super::*;
use weft::ops::{Apply, CreateOps, ElementwiseOps, LinalgOps, ReduceOps, StructuralOps};
use weft::OpError;

/// Host → device → host is exact, for every type and size (the large ones
/// go through the pinned staging in several chunks), and device → device
/// through two lanes keeps the values.
pub(super) fn transfers_round_trip() -> Result<Outcome, String> {
    with_gpu(|rt, cpu, gpu| {
        let other = rt.cuda_lane(0).map_err(|e| e.to_string())?;
        for (seed, dtype) in DTYPES.into_iter().enumerate() {
            for n in [0usize, 1, 1000, 3 << 20] {
                let x = random(cpu, dtype, &[n], 500 + seed as u64)?;
                let there = cpu
                    .transfer(&x, Place::Cuda(0))
                    .map_err(|e| e.to_string())?;
                let moved = other.add(
                    &there,
                    &other.zeros(dtype, &[n]).map_err(|e| e.to_string())?,
                );
                let moved = moved.map_err(|e| e.to_string())?;
                let back = gpu.transfer(&moved, 0).map_err(|e| e.to_string())?;
                close(
                    &format!("{dtype} x{n} round trip"),
                    &download(cpu, &back)?,
                    &download(cpu, &x)?,
                    0.0,
                )?;
                let uploaded = gpu.upload(download(cpu, &x)?).map_err(|e| e.to_string())?;
                close(
                    &format!("{dtype} x{n} upload/download"),
                    &download(gpu, &uploaded)?,
                    &download(cpu, &x)?,
                    0.0,
                )?;
            }
        }
        // Integers and bool: bytes there and back, a reshape and a
        // transpose on the device.
        for t in [
            Tensor::from_vec(vec![i32::MIN, -1, 0, i32::MAX], &[2, 2]).unwrap(),
            Tensor::from_vec(vec![i64::MIN, 7, 1 << 50, i64::MAX], &[2, 2]).unwrap(),
            Tensor::from_vec(vec![true, false, false, true], &[2, 2]).unwrap(),
        ] {
            let h = gpu.upload(t.clone()).map_err(|e| e.to_string())?;
            let r = gpu.reshape(&h, &[4]).map_err(|e| e.to_string())?;
            let back = download(gpu, &r)?;
            check(
                back.data() == t.data() && back.shape() == [4],
                format!("{} round trip: {back:?}", t.dtype()),
            )?;
            let p = gpu.transpose(&h).map_err(|e| e.to_string())?;
            let want = cpu
                .transpose(&cpu.upload(t.clone()).map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?;
            let (got, want) = (download(gpu, &p)?, download(cpu, &want)?);
            check(
                got.data() == want.data() && got.shape() == want.shape(),
                format!("{} transpose: {got:?}, the CPU's {want:?}", t.dtype()),
            )?;
        }
        Ok(())
    })
}

/// Ops on one stream read tensors another stream wrote: the device orders
/// them by events, the actor never waits. A long product on lane A, read
/// at once by lane B, must give the product.
pub(super) fn lanes_are_ordered_across_streams() -> Result<Outcome, String> {
    with_gpu(|rt, cpu, a| {
        let b = rt.cuda_lane(0).map_err(|e| e.to_string())?;
        let x = random(cpu, DType::F64, &[1024, 1024], 600)?;
        let xa = cpu
            .transfer(&x, Place::Cuda(0))
            .map_err(|e| e.to_string())?;
        let mut p = xa.clone();
        for _ in 0..8 {
            p = a.matmul(&p, &xa).map_err(|e| e.to_string())?;
            p = a
                .binary_scalar(BinaryOp::Mul, &p, Scalar::Real(1.0 / 512.0))
                .map_err(|e| e.to_string())?;
        }
        let sum_b = b.sum_all(&p).map_err(|e| e.to_string())?;
        let mut q = x.clone();
        for _ in 0..8 {
            q = cpu.matmul(&q, &x).map_err(|e| e.to_string())?;
            q = cpu
                .binary_scalar(BinaryOp::Mul, &q, Scalar::Real(1.0 / 512.0))
                .map_err(|e| e.to_string())?;
        }
        let sum_cpu = cpu.sum_all(&q).map_err(|e| e.to_string())?;
        close(
            "cross-lane sum",
            &download(&b, &sum_b)?,
            &download(cpu, &sum_cpu)?,
            1e-8,
        )
    })
}

/// `x·x / 1024` on `lane` (of a 1024×1024 `x`: values stay in range).
pub(super) fn square_scaled<E: weft::TensorEngine>(
    lane: &Lane<E>,
    x: &TensorHandle,
) -> Result<TensorHandle, String> {
    let p = lane.matmul(x, x).map_err(|e| e.to_string())?;
    lane.binary_scalar(BinaryOp::Mul, &p, Scalar::Real(1.0 / 1024.0))
        .map_err(|e| e.to_string())
}

/// A tensor read by two lanes (each read long enough to still run when the
/// tensor is dropped), then dropped while a third lane allocates and
/// fills buffers of its size over and over: stream-ordered allocation
/// would hand its memory out at once if the free waited for one reader
/// only. Both readers' results must be intact.
pub(super) fn a_tensor_read_on_two_lanes_outlives_both_reads() -> Result<Outcome, String> {
    with_gpu(|rt, cpu, a| {
        let (b, c) = (
            rt.cuda_lane(0).map_err(|e| e.to_string())?,
            rt.cuda_lane(0).map_err(|e| e.to_string())?,
        );
        let x = random(cpu, DType::F64, &[1024, 1024], 900)?;
        let gx = cpu
            .transfer(&x, Place::Cuda(0))
            .map_err(|e| e.to_string())?;
        // Long reads: a chain of products on each lane, the first of each
        // reading `gx`.
        let (mut pa, mut pb) = (
            a.matmul(&gx, &gx).map_err(|e| e.to_string())?,
            b.mul(&gx, &gx).map_err(|e| e.to_string())?,
        );
        for _ in 0..4 {
            pa = square_scaled(a, &pa)?;
            pb = square_scaled(&b, &pb)?;
        }
        drop(gx);
        for _ in 0..32 {
            drop(c.full(DType::F64, &[1024, 1024], Scalar::Real(f64::NAN)));
        }
        let (mut qa, mut qb) = (
            cpu.matmul(&x, &x).map_err(|e| e.to_string())?,
            cpu.mul(&x, &x).map_err(|e| e.to_string())?,
        );
        for _ in 0..4 {
            qa = square_scaled(cpu, &qa)?;
            qb = square_scaled(cpu, &qb)?;
        }
        close(
            "lane A's reads",
            &download(a, &pa)?,
            &download(cpu, &qa)?,
            1e-8,
        )?;
        close(
            "lane B's reads",
            &download(&b, &pb)?,
            &download(cpu, &qb)?,
            1e-8,
        )
    })
}

/// A program runs on the device as one op (every kernel on the lane's
/// stream, intermediates freed after their last use) and matches the same
/// program on the CPU; a step that fails on the device fails the outputs,
/// naming the step, and leaves the inputs and the device's memory as they
/// were.
pub(super) fn programs_match_the_cpu() -> Result<Outcome, String> {
    with_gpu(|_, cpu, gpu| {
        let program = weft::Program::record(|p| -> Result<(), OpError> {
            let e = p.input(DType::C64, &[16, 16]);
            let a = p.input(DType::C64, &[16, 2, 16]);
            let ac = p.unary(weft::ops::UnaryOp::Conj, &a)?;
            let t = p.einsum("ab,bsd->asd", &[&e, &a])?;
            let next = p.einsum("asc,asd->cd", &[&ac, &t])?;
            let scaled = p.scale(&next, 0.5)?;
            Ok(p.output(scaled)?)
        })
        .map_err(|e| e.to_string())?;
        let e = random(cpu, DType::C64, &[16, 16], 1200)?;
        let a = random(cpu, DType::C64, &[16, 2, 16], 1201)?;
        let want = cpu
            .run_program(&program, &[&e, &a])
            .map_err(|e| e.to_string())?;
        let (ge, ga) = (
            cpu.transfer(&e, Place::Cuda(0))
                .map_err(|e| e.to_string())?,
            cpu.transfer(&a, Place::Cuda(0))
                .map_err(|e| e.to_string())?,
        );
        // The transfers arrive in their own order, not the lane's: wait
        // for both before counting what is resident.
        download(gpu, &ge)?;
        download(gpu, &ga)?;
        let (tensors, _) = gpu
            .resident()
            .map_err(|e| e.to_string())?
            .wait()
            .map_err(|e| e.to_string())?;
        let mut got = Vec::new();
        for _ in 0..8 {
            got = gpu
                .run_program(&program, &[&ge, &ga])
                .map_err(|e| e.to_string())?;
        }
        close(
            "program",
            &download(gpu, &got[0])?,
            &download(cpu, &want[0])?,
            1e-10,
        )?;
        drop(got);
        let after = gpu
            .resident()
            .map_err(|e| e.to_string())?
            .wait()
            .map_err(|e| e.to_string())?;
        check(
            after.0 == tensors,
            format!("{} resident after the runs, {tensors} before", after.0),
        )?;
        // A random matrix has no Cholesky factor: the program fails at
        // that step, with the CPU's error.
        let failing = weft::Program::record(|p| -> Result<(), OpError> {
            let x = p.input(DType::C64, &[16, 16]);
            let y = p.scale(&x, 2.0)?;
            let l = p.apply_many(
                weft::ops::TensorOp::Linalg(weft::ops::Linalg::Cholesky),
                &[&y],
            )?;
            Ok(p.output(l[0])?)
        })
        .map_err(|e| e.to_string())?;
        let out = gpu
            .run_program(&failing, &[&ge])
            .map_err(|e| e.to_string())?;
        let err = wait_err(gpu, &out[0])?;
        check(err.contains("step 1 (cholesky)"), err)?;
        close(
            "the input after a failed program",
            &download(gpu, &ge)?,
            &download(cpu, &e)?,
            0.0,
        )
    })
}

/// A two-stage pipeline: CPU makes inputs, the GPU multiplies, the CPU reduces.
pub(super) fn cpu_gpu_pipeline() -> Result<Outcome, String> {
    with_gpu(|_, cpu, gpu| {
        let mut pending = Vec::new();
        for i in 0..16u64 {
            let a = random(cpu, DType::F32, &[128, 64], 700 + i)?;
            let b = random(cpu, DType::F32, &[64, 32], 800 + i)?;
            let (ga, gb) = (
                cpu.transfer(&a, Place::Cuda(0))
                    .map_err(|e| e.to_string())?,
                cpu.transfer(&b, Place::Cuda(0))
                    .map_err(|e| e.to_string())?,
            );
            let c = gpu.matmul(&ga, &gb).map_err(|e| e.to_string())?;
            let back = gpu.transfer(&c, 0).map_err(|e| e.to_string())?;
            let total = cpu.sum_all(&back).map_err(|e| e.to_string())?;
            let want = cpu
                .sum_all(&cpu.matmul(&a, &b).map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?;
            pending.push((total, want));
        }
        for (i, (got, want)) in pending.iter().enumerate() {
            close(
                &format!("item {i}"),
                &download(cpu, got)?,
                &download(cpu, want)?,
                1e-4,
            )?;
        }
        Ok(())
    })
}

/// What the vocabulary does not define is refused at the call, naming op
/// and type (the device implements every op the vocabulary defines: the
/// coverage table has no missing cell), never a CPU fallback; a device
/// failure (out of memory) fails its op and loses nothing resident.
pub(super) fn unsupported_and_device_errors_are_typed() -> Result<Outcome, String> {
    with_gpu(|_, cpu, gpu| {
        let x = cpu
            .transfer(&random(cpu, DType::F64, &[8, 8], 900)?, Place::Cuda(0))
            .map_err(|e| e.to_string())?;
        let before = download(gpu, &x)?;
        let ints = gpu.cast(&x, DType::I64).map_err(|e| e.to_string())?;
        match gpu.cholesky(&ints) {
            Err(err) => check(
                err.to_string().contains("cholesky is not defined for i64"),
                err.to_string(),
            )?,
            Ok(h) => return Err(format!("cholesky of i64 was accepted: {h:?}")),
        }
        let huge = gpu
            .zeros(DType::F64, &[1 << 22, 1 << 22])
            .map_err(|e| e.to_string())?;
        let err = wait_err(gpu, &huge)?;
        check(err.contains("CUDA device 0"), err)?;
        close(
            "resident after the errors",
            &download(gpu, &x)?,
            &before,
            0.0,
        )?;
        let memory = wait_ok(gpu.memory().map_err(|e| e.to_string())?);
        check(
            memory.tensors >= 1 && memory.tensor_bytes >= 512,
            format!("{memory:?}"),
        )?;
        Ok(())
    })
}

/// A lane's stream and cuBLAS handle go with its last handle, after its
/// last op: lanes opened and dropped by the hundred leave nothing behind.
pub(super) fn dropped_lanes_release_their_streams() -> Result<Outcome, String> {
    with_gpu(|rt, _, gpu| {
        let x = gpu.ones(DType::F32, &[64, 64]).map_err(|e| e.to_string())?;
        let mut kept = Vec::new();
        for i in 0..200 {
            let lane = rt.cuda_lane(0).map_err(|e| e.to_string())?;
            let y = lane.matmul(&x, &x).map_err(|e| e.to_string())?;
            if i % 50 == 0 {
                kept.push(y); // outlives its lane: the stream lives on under it
            }
        }
        for y in &kept {
            let total = gpu.sum_all(y).map_err(|e| e.to_string())?;
            let got = download(gpu, &total)?;
            check(flat(&got) == [64.0 * 64.0 * 64.0], format!("{got:?}"))?;
        }
        // Retirements are ops of their own lanes, served fairly with the
        // query's: ask until they are all through (bounded).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let streams = loop {
            let streams = gpu
                .run(|engine| engine.lane_streams())
                .map_err(|e| e.to_string())?
                .wait()
                .map_err(|e| e.to_string())?;
            if streams <= 2 || std::time::Instant::now() > deadline {
                break streams;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        check(
            streams <= 2,
            format!("{streams} streams after 200 dropped lanes"),
        )
    })
}

/// A chain of binary ops on one lane asks the driver for what its
/// ordering needs and no more: per op one launch, one allocation and one
/// event (its output's write); the intermediates, written and read on the
/// lane's stream alone, are freed in its order with no event and no wait;
/// the only waits are the first op's, for the upload on the copy stream,
/// and the download's.
pub(super) fn a_chain_on_one_lane_makes_only_the_driver_calls_it_needs() -> Result<Outcome, String>
{
    with_gpu(|_, cpu, gpu| {
        const OPS: u64 = 64;
        let calls = || -> Result<weft::cuda::DriverCalls, String> {
            gpu.run(|e: &mut CudaEngine| e.driver_calls())
                .map_err(|e| e.to_string())?
                .wait()
                .map_err(|e| e.to_string())
        };
        let x = random(cpu, DType::F32, &[256], 7)?;
        let gx = cpu
            .transfer(&x, Place::Cuda(0))
            .map_err(|e| e.to_string())?;
        gpu.sync(&gx)
            .map_err(|e| e.to_string())?
            .wait()
            .map_err(|e| e.to_string())?;
        let before = calls()?;
        let mut y = gx.clone();
        for _ in 0..OPS {
            y = gpu
                .binary(BinaryOp::Add, &y, &gx)
                .map_err(|e| e.to_string())?;
        }
        let got = download(gpu, &y)?;
        let mut want = x.clone();
        for _ in 0..OPS {
            want = cpu
                .binary(BinaryOp::Add, &want, &x)
                .map_err(|e| e.to_string())?;
        }
        close("the chain", &got, &download(cpu, &want)?, 1e-6)?;
        drop(y);
        // The intermediates' frees follow their handles' release: ask
        // until every one is through (bounded).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let c = loop {
            let c = calls()?.since(&before);
            if c.frees >= OPS || std::time::Instant::now() > deadline {
                break c;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        println!("    driver calls for {OPS} adds on one lane: {c:?}");
        check(
            c.frees >= OPS,
            format!("{} of {OPS} outputs freed", c.frees),
        )?;
        check(
            c.enqueued == OPS && c.allocs == OPS,
            format!("{c:?}: one launch and one allocation per op"),
        )?;
        check(
            c.event_records == OPS,
            format!("{c:?}: one event per op, none for reads or frees"),
        )?;
        // The first add waits for the upload (once per operand; the lane
        // has read it since, so no later add waits), and the download's
        // copy stream for the last add.
        check(
            c.event_waits <= 3,
            format!("{c:?}: a wait beyond the upload's and the download's"),
        )
    })
}
