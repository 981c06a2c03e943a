//! Case `permutations`: the strided-rs suite's permutation patterns
//! (`data/permutation_patterns.json`: 2-D to 24-D, up to 2 GiB of f64)
//! through `lane.permute`, in GB/s (bytes read plus bytes written),
//! against a copy loop of the same bytes on the same threads: the
//! fraction of the copy rate each pattern reaches.
//!
//! The patterns are written column-major, as Julia and strided-rs hold
//! arrays; a column-major array is the row-major one of the reversed
//! shape, so each pattern runs as the row-major permutation of the same
//! buffer. A source with explicit strides (`tn_light_415`'s scattered
//! operand) is a dense buffer whose axes are in another order: the pattern
//! is then the one permutation from that buffer to the output.
//!
//! A pattern's `perm` is read as Julia's `permutedims` and HPTT read it
//! (the suite's participants): output axis `j` is source axis `perm[j]`.
//!
//! Every output is checked, element by element at a sample of positions,
//! against the pattern's definition.

use serde_json::Value;
use weft::ops::StructuralOps;
use weft::Tensor;
use weft_examples::{copy_loop, written_buffer, BoxError};

use crate::case::{Case, Domain, Run};
use crate::report::{Row, Side, Unit};
use crate::timing::interleaved;

pub(super) const CASE: Case = Case {
    name: "permutations",
    title: "the strided-rs permutation patterns, f64",
    run: Run::InDomain(run),
};

const DATA: &str = include_str!("../../data/permutation_patterns.json");

/// A pattern as a row-major permutation: the source buffer's shape, and
/// for each output axis the source axis it reads.
struct RowMajor {
    shape: Vec<usize>,
    perm: Vec<usize>,
}

/// Turns a column-major pattern (its shape, `perm` with output axis `j`
/// the source's axis `perm[j]`, and the source's strides in elements) into
/// the row-major permutation of its source buffer.
fn row_major(shape: &[usize], perm: &[usize], strides: &[usize]) -> Result<RowMajor, BoxError> {
    let r = shape.len();
    // The source buffer's axes, fastest first: the pattern's axes by stride.
    let mut order: Vec<usize> = (0..r).collect();
    order.sort_by_key(|&d| strides[d]);
    let mut expect = 1;
    for &d in &order {
        if strides[d] != expect {
            return Err(format!("permutations: strides {strides:?} are not a dense buffer").into());
        }
        expect *= shape[d];
    }
    let position = |d: usize| order.iter().position(|&o| o == d).expect("an axis");
    // Column-major: output axis j reads buffer axis position(perm[j]).
    // Row-major, both reversed: output axis r-1-j reads r-1-position(perm[j]).
    let mut rm_perm = vec![0; r];
    for (j, &p) in perm.iter().enumerate() {
        rm_perm[r - 1 - j] = r - 1 - position(p);
    }
    let rm_shape = order.iter().rev().map(|&d| shape[d]).collect();
    Ok(RowMajor {
        shape: rm_shape,
        perm: rm_perm,
    })
}

/// Whether `out` is `src` permuted by `p`, at `samples` positions spread
/// over it.
fn check(p: &RowMajor, src: &[f64], out: &[f64], samples: usize) -> Result<(), BoxError> {
    let r = p.shape.len();
    let mut src_strides = vec![1usize; r];
    for a in (0..r.saturating_sub(1)).rev() {
        src_strides[a] = src_strides[a + 1] * p.shape[a + 1];
    }
    let out_shape: Vec<usize> = p.perm.iter().map(|&a| p.shape[a]).collect();
    let n = out.len();
    for k in 0..samples {
        let flat = (k as u128 * 0x9E37_79B9_7F4A_7C15 % n as u128) as usize;
        let (mut rest, mut s) = (flat, 0);
        for j in (0..r).rev() {
            let i = rest % out_shape[j];
            rest /= out_shape[j];
            s += i * src_strides[p.perm[j]];
        }
        if out[flat] != src[s] {
            return Err(format!(
                "permutations: element {flat} is {}, not {}",
                out[flat], src[s]
            )
            .into());
        }
    }
    Ok(())
}

fn run(domain: &Domain<'_>, rows: &mut Vec<Row>) -> Result<(), BoxError> {
    let Domain {
        settings,
        lane,
        direct_pool,
        ..
    } = *domain;
    let data: Value = serde_json::from_str(DATA)?;
    let patterns = data["patterns"].as_array().ok_or("patterns: a list")?;
    for pattern in patterns {
        let id = pattern["id"].as_str().ok_or("an id")?;
        let label = pattern["label"].as_str().ok_or("a label")?;
        let list = |v: &Value| -> Result<Vec<usize>, BoxError> {
            v.as_array()
                .ok_or("a list")?
                .iter()
                .map(|x| {
                    x.as_u64()
                        .map(|x| x as usize)
                        .ok_or_else(|| "a count".into())
                })
                .collect()
        };
        let (shape, perm) = (list(&pattern["shape"])?, list(&pattern["perm"])?);
        let strides = match pattern["src_layout"]["kind"].as_str() {
            Some("explicit_strides") => list(&pattern["src_layout"]["strides"])?,
            _ => shape
                .iter()
                .scan(1, |acc, &e| {
                    let s = *acc;
                    *acc *= e;
                    Some(s)
                })
                .collect(),
        };
        let p = row_major(&shape, &perm, &strides)?;
        let n: usize = p.shape.iter().product();
        let values: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let h = lane.upload(Tensor::from_vec(values.clone(), &p.shape)?)?;
        let out = lane.download(&lane.permute(&h, &p.perm)?)?.wait()?;
        check(&p, &values, out.as_slice::<f64>()?, 4096)?;
        drop(out);
        let mut copied = written_buffer(n);
        let wait = |h: &weft::TensorHandle| lane.sync(h).expect("submitted").wait().expect("ran");
        let mut measure = |rows: &mut Vec<Row>, row: String, label: String| {
            let [permute, copy] = interleaved(
                settings.reps(5),
                [
                    &mut || wait(&lane.permute(&h, &p.perm).expect("submitted")),
                    &mut || copy_loop(direct_pool, &mut copied, &values),
                ],
            );
            let gbs = |d: std::time::Duration| 2.0 * (n * 8) as f64 / d.as_secs_f64() / 1e9;
            rows.push(
                Row::new(
                    CASE.name,
                    row,
                    label,
                    Unit::GigabytesPerSecond,
                    Side::new("lane.permute", gbs(permute)),
                )
                .against(Side::new(
                    "copy loop, same threads (read + write)",
                    gbs(copy),
                )),
            );
        };
        measure(rows, format!("permutations-{id}"), label.to_string());
        // An output past the pool's cap is fresh memory every time, the
        // kernel's zeroing of its pages most of the time (measured): the
        // copy loop writes a buffer it keeps. So such a pattern is also
        // run with the cap raised to hold it, as a user would set it
        // (`Builder::buffer_cap`): the permutation itself.
        let cap = lane.memory()?.wait()?.buffers.cap_bytes;
        if n * 8 > cap {
            let set = |bytes: usize| {
                lane.run(move |engine: &mut weft::CpuEngine| engine.set_buffer_cap(bytes))
            };
            set(4 * n * 8)?.wait()?;
            measure(
                rows,
                format!("permutations-{id}-pooled"),
                format!("{label}, pool cap raised to hold it"),
            );
            set(cap)?.wait()?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_major_pattern_is_the_reversed_row_major_one() {
        // A column-major 2-D transpose is a row-major one.
        let p = row_major(&[3, 5], &[1, 0], &[1, 3]).unwrap();
        assert_eq!((p.shape, p.perm), (vec![5, 3], vec![1, 0]));
        // [2, 0, 1] column-major: output axes (2, 0, 1) of the source.
        let p = row_major(&[2, 3, 4], &[2, 0, 1], &[1, 2, 6]).unwrap();
        assert_eq!(p.shape, vec![4, 3, 2]);
        // Output (4, 2, 3) column-major is (3, 2, 4) row-major: its axes
        // read source axes (1, 2, 0) of the row-major (4, 3, 2).
        assert_eq!(p.perm, vec![1, 2, 0]);
    }
}
