//! Case `bandwidth`: ops that stream memory (an add, a sum, a transpose of
//! 64 MiB f64, and two permutations of the same bytes as 23 axes of extent
//! 2, as tensor networks of qubits hold them) in GB/s, against the machine's practical limit on the same
//! threads: a copy loop (each thread copies its chunks with `memcpy`) into
//! a buffer it has written before, so no page is faulted in while timed.
//!
//! Bytes counted are those an op must move: the add reads two operands and
//! writes one (3 × 64 MiB), the sum reads one, the transpose and the copy
//! read one and write one. A write to memory not in the cache also reads
//! the line first; that traffic is not counted on either side.

use weft::ops::{ElementwiseOps, ReduceOps, StructuralOps};
use weft::Tensor;
use weft_examples::{copy_loop, random, written_buffer, BoxError};

use crate::case::{Case, Domain, Run};
use crate::report::{Row, Side, Unit};
use crate::timing::interleaved;

pub(super) const CASE: Case = Case {
    name: "bandwidth",
    title: "memory-bound ops, 64 MiB f64",
    run: Run::InDomain(run),
};

const BYTES: usize = 64 * 1024 * 1024;

fn run(domain: &Domain<'_>, rows: &mut Vec<Row>) -> Result<(), BoxError> {
    measure(domain, rows)
}

/// The case's rows (the `roofline` case reports them too), each against
/// the copy loop.
pub(super) fn measure(domain: &Domain<'_>, rows: &mut Vec<Row>) -> Result<(), BoxError> {
    let Domain {
        settings,
        lane,
        direct_pool,
        ..
    } = *domain;
    let n = BYTES / 8;
    let (rows_2d, cols_2d) = (4096, n / 4096);
    let (x, y) = (random(n, 5), random(n, 6));
    let (hx, hy) = (
        lane.upload(Tensor::from_vec(x.clone(), &[n])?)?,
        lane.upload(Tensor::from_vec(y, &[n])?)?,
    );
    let matrix = lane.reshape(&hx, &[rows_2d, cols_2d])?;
    let rank = n.trailing_zeros() as usize;
    let qubits = lane.reshape(&hx, &vec![2; rank])?;
    let reversed: Vec<usize> = (0..rank).rev().collect();
    // A fixed shuffle: axis i goes to 7·i mod rank (7 is prime to 23).
    let shuffled: Vec<usize> = (0..rank).map(|i| 7 * i % rank).collect();
    let mut copied = written_buffer(n);
    let wait = |h: &weft::TensorHandle| lane.sync(h).expect("submitted").wait().expect("ran");
    let [add, sum, transpose, reverse, shuffle, copy] = interleaved(
        settings.reps(7),
        [
            &mut || wait(&lane.add(&hx, &hy).expect("submitted")),
            &mut || wait(&lane.sum_all(&hx).expect("submitted")),
            &mut || wait(&lane.permute(&matrix, &[1, 0]).expect("submitted")),
            &mut || wait(&lane.permute(&qubits, &reversed).expect("submitted")),
            &mut || wait(&lane.permute(&qubits, &shuffled).expect("submitted")),
            &mut || copy_loop(direct_pool, &mut copied, &x),
        ],
    );
    if copied != x {
        return Err("bandwidth: the copy loop's copy differs from its source".into());
    }
    let gbs = |bytes: usize, d: std::time::Duration| bytes as f64 / d.as_secs_f64() / 1e9;
    let limit = || {
        Side::new(
            "copy loop, same threads (read + write)",
            gbs(2 * BYTES, copy),
        )
    };
    for (id, what, how, bytes, time) in [
        (
            "bandwidth-add",
            "c = a + b (read 2, write 1)",
            "lane.add",
            3 * BYTES,
            add,
        ),
        (
            "bandwidth-sum",
            "sum of all (read 1)",
            "lane.sum_all",
            BYTES,
            sum,
        ),
        (
            "bandwidth-transpose",
            "4096×2048 transpose (read 1, write 1)",
            "lane.permute",
            2 * BYTES,
            transpose,
        ),
        (
            "bandwidth-reverse-2s",
            "rank-23 extent-2 axes reversed (read 1, write 1)",
            "lane.permute",
            2 * BYTES,
            reverse,
        ),
        (
            "bandwidth-shuffle-2s",
            "rank-23 extent-2 axes shuffled (read 1, write 1)",
            "lane.permute",
            2 * BYTES,
            shuffle,
        ),
    ] {
        rows.push(
            Row::new(
                CASE.name,
                id,
                what,
                Unit::GigabytesPerSecond,
                Side::new(how, gbs(bytes, time)),
            )
            .against(limit()),
        );
    }
    Ok(())
}
