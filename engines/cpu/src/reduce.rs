//! Reduction kernels over any set of axes.

use rayon::prelude::*;

use super::parallel::PARALLEL_THRESHOLD;
use weft_core::layout::View;
use weft_core::ops::{arg_meta, reduce_meta, ArgOp, ReduceOp};
use weft_core::{Data, Element, Field, Tensor, TensorError};

/// Reduces `input` over `axes` (keeping them as extent 1 if `keep_dims`);
/// `parallel` spreads large reductions over the current rayon pool.
///
/// # Errors
///
/// As [`reduce_meta`].
pub(super) fn reduce(
    op: ReduceOp,
    input: &Tensor,
    axes: &[usize],
    keep_dims: bool,
    parallel: bool,
) -> Result<Tensor, TensorError> {
    let (_, out_shape) = reduce_meta(op, input.dtype(), input.shape(), axes, keep_dims)?;
    let plan = Plan::new(input.shape(), axes);
    let data = match (op, input.data()) {
        (ReduceOp::Any | ReduceOp::All, data) => {
            with_data!(data, |v| Data::Bool(truth(op, v, &plan, parallel)))
        }
        (_, Data::I32(v)) => exact(op, v, &plan, parallel, i64::from),
        (_, Data::I64(v)) => exact(op, v, &plan, parallel, |x| x),
        (_, Data::Bool(v)) => exact(op, v, &plan, parallel, i64::from),
        (_, data) => {
            with_field!(data, |v| fold(op, v, &plan, parallel), else unreachable!("every type has an arm"))
        }
    };
    Tensor::from_data(data, &out_shape)
}

/// The `i64` index of each extremum of `input` along `axis`: the first
/// of equal ones, and the first NaN if there is one (NumPy's rule).
///
/// # Errors
///
/// As [`arg_meta`].
pub(super) fn arg(
    op: ArgOp,
    input: &Tensor,
    axis: usize,
    keep_dims: bool,
) -> Result<Tensor, TensorError> {
    let out_shape = arg_meta(op, input.dtype(), input.shape(), axis, keep_dims)?;
    let plan = Plan::new(input.shape(), &[axis]);
    fn find<T: Element + PartialOrd>(op: ArgOp, values: &[T], plan: &Plan) -> Vec<i64> {
        // `x != x` only for NaN.
        #[allow(clippy::eq_op)]
        let better = move |x: T, best: T| {
            let (x_nan, best_nan) = (x != x, best != best);
            !best_nan && (x_nan || if op == ArgOp::Max { x > best } else { x < best })
        };
        // (index, value) pairs, combined keeping the earlier on ties.
        let pick = move |a: (i64, T), b: (i64, T)| if better(b.1, a.1) { b } else { a };
        Fold {
            run: move |run: &[T]| {
                run.iter()
                    .enumerate()
                    .map(|(i, &x)| (i as i64, x))
                    .reduce(pick)
                    .expect("checked: an axis of at least one element")
            },
            combine: pick,
            strided: move |visit: Visit<'_, T>| {
                let (mut best, mut at): (Option<(i64, T)>, i64) = (None, 0);
                visit(&mut |x| {
                    best = Some(best.map_or((at, x), |b| pick(b, (at, x))));
                    at += 1;
                });
                best.expect("checked: an axis of at least one element")
            },
        }
        // Serial: a run split into chunks would number each from 0.
        .each(values, plan, false)
        .into_iter()
        .map(|(i, _)| i)
        .collect()
    }
    let data = match input.data() {
        Data::F32(v) => find(op, v, &plan),
        Data::F64(v) => find(op, v, &plan),
        Data::I32(v) => find(op, v, &plan),
        Data::I64(v) => find(op, v, &plan),
        Data::Bool(v) => find(op, v, &plan),
        Data::C32(_) | Data::C64(_) => {
            return Err(TensorError::Unsupported {
                op: op.name(),
                dtype: input.dtype(),
            })
        }
    };
    Tensor::from_data(Data::I64(data), &out_shape)
}

/// The iteration of a reduction: output elements over the kept axes, and
/// for each the reduced elements, as offsets into the input.
struct Plan {
    kept: View,
    reduced: View,
    /// Reduced elements per output element.
    count: usize,
    /// Whether the reduced elements of one output are one contiguous run.
    contiguous: bool,
}

impl Plan {
    fn new(shape: &[usize], axes: &[usize]) -> Plan {
        let reduced = View::axes_of(shape, |i| axes.contains(&i));
        let count = reduced.shape.iter().product();
        // Contiguous: the reduced axes are exactly the trailing ones.
        let contiguous = axes.iter().all(|&a| a + axes.len() >= shape.len());
        Plan {
            kept: View::axes_of(shape, |i| !axes.contains(&i)),
            reduced,
            count,
            contiguous,
        }
    }

    /// Calls `f(base)` with the input offset of each output element's first
    /// reduced element, in output order.
    fn outputs(&self, f: impl FnMut(usize)) {
        self.kept.for_each_offset(f);
    }

    /// The offsets of the reduced elements from a base, in order.
    fn reduced(&self, base: usize, mut f: impl FnMut(usize)) {
        self.reduced.for_each_offset(|o| f(base + o));
    }
}

/// Sums a contiguous run with [`LANES`] accumulators, so that the
/// additions do not wait on each other and the compiler can keep them in
/// vector registers (one accumulator runs at a fraction of the memory
/// bandwidth; four at about half of it), then adds them pairwise.
fn sum_lanes<T: Field>(run: &[T]) -> T {
    let mut acc = [T::ZERO; LANES];
    let mut chunks = run.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a += x;
        }
    }
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for i in 0..width {
            acc[i] += acc[i + width];
        }
    }
    let mut total = acc[0];
    for &x in chunks.remainder() {
        total += x;
    }
    total
}

/// Accumulators of [`sum_lanes`]: a power of two.
const LANES: usize = 16;

/// Computes every output: `run` on its reduced elements when they are one
/// contiguous run, `strided` (handed a visitor) when they are not.
/// `parallel` spreads large reductions over the current rayon pool: across
/// outputs when there are many, across chunks of each run (joined by
/// `combine`) when there are few.
/// Hands a fold every reduced element of one output.
type Visit<'a, T> = &'a mut dyn FnMut(&mut dyn FnMut(T));

struct Fold<R, C, S> {
    run: R,
    combine: C,
    strided: S,
}

impl<R, C, S> Fold<R, C, S> {
    fn each<T: Element, U: Send>(self, values: &[T], plan: &Plan, parallel: bool) -> Vec<U>
    where
        R: Fn(&[T]) -> U + Sync,
        C: Fn(U, U) -> U + Sync,
        S: Fn(Visit<'_, T>) -> U + Sync,
    {
        let mut bases = Vec::new();
        plan.outputs(|base| bases.push(base));
        let one = |base: usize| {
            if plan.contiguous {
                (self.run)(&values[base..base + plan.count])
            } else {
                (self.strided)(&mut |visit: &mut dyn FnMut(T)| {
                    plan.reduced(base, |o| visit(values[o]))
                })
            }
        };
        if !parallel || values.len() < PARALLEL_THRESHOLD {
            return bases.into_iter().map(one).collect();
        }
        if plan.contiguous && bases.len() < rayon::current_num_threads() * 4 {
            return bases
                .into_iter()
                .map(|base| {
                    values[base..base + plan.count]
                        .par_chunks(1 << 14)
                        .map(&self.run)
                        .reduce_with(&self.combine)
                        .unwrap_or_else(|| (self.run)(&[]))
                })
                .collect();
        }
        bases.into_par_iter().map(one).collect()
    }
}

fn sum<T: Field>(values: &[T], plan: &Plan, parallel: bool) -> Vec<T> {
    Fold {
        run: sum_lanes,
        combine: |a: T, b: T| a + b,
        strided: |visit: Visit<'_, T>| {
            let mut acc = T::ZERO;
            visit(&mut |x| acc += x);
            acc
        },
    }
    .each(values, plan, parallel)
}

fn prod<T: Field>(values: &[T], plan: &Plan, parallel: bool) -> Vec<T> {
    Fold {
        run: |run: &[T]| run.iter().fold(T::ONE, |a, &x| a * x),
        combine: |a: T, b: T| a * b,
        strided: |visit: Visit<'_, T>| {
            let mut acc = T::ONE;
            visit(&mut |x| acc *= x);
            acc
        },
    }
    .each(values, plan, parallel)
}

/// Every output of `op` over elements of type `T`. Max and min are of the
/// real types only (checked), whose value is the real part; a mean and a
/// norm are computed in f64 and rounded to the result's type once.
fn fold<T: Field>(op: ReduceOp, values: &[T], plan: &Plan, parallel: bool) -> Data {
    let n = plan.count as f64;
    match op {
        ReduceOp::Sum => T::wrap(sum(values, plan, parallel)),
        ReduceOp::Prod => T::wrap(prod(values, plan, parallel)),
        ReduceOp::Mean => T::wrap(
            sum(values, plan, parallel)
                .into_iter()
                .map(|s| {
                    let (re, im) = s.to_parts();
                    T::from_parts(re / n, im / n)
                })
                .collect(),
        ),
        ReduceOp::Any | ReduceOp::All => unreachable!("dispatched to `truth`"),
        ReduceOp::Norm => {
            let square = |x: T| {
                let (re, im) = x.to_parts();
                re * re + im * im
            };
            <T::Re as Element>::wrap(
                sum_sq(values, plan, square, parallel)
                    .into_iter()
                    .map(|s| T::Re::from_parts(s.sqrt(), 0.0))
                    .collect(),
            )
        }
        ReduceOp::Max | ReduceOp::Min => {
            let better: fn(f64, f64) -> bool = if op == ReduceOp::Max {
                |x, a| x > a
            } else {
                |x, a| x < a
            };
            // NaN wins, then the better value: associative, so chunks of a
            // run can be picked from in parallel.
            let pick = move |a: T, x: T| {
                if is_nan(&a) || !(is_nan(&x) || better(x.to_parts().0, a.to_parts().0)) {
                    a
                } else {
                    x
                }
            };
            T::wrap(extremum(values, plan, parallel, pick))
        }
    }
}

/// The reduced elements of every output folded by `pick` (max or min),
/// associative, so chunks of a run can be picked from in parallel.
fn extremum<T: Element>(
    values: &[T],
    plan: &Plan,
    parallel: bool,
    pick: impl Fn(T, T) -> T + Copy + Sync,
) -> Vec<T> {
    Fold {
        run: move |run: &[T]| {
            run.iter()
                .copied()
                .reduce(pick)
                .expect("checked: max/min over at least one element")
        },
        combine: pick,
        strided: move |visit: Visit<'_, T>| {
            let mut best: Option<T> = None;
            visit(&mut |x| best = Some(best.map_or(x, |a| pick(a, x))));
            best.expect("checked: at least one element")
        },
    }
    .each(values, plan, parallel)
}

/// Whether any (`Any`) or every (`All`) reduced element is nonzero.
fn truth<T: Element>(op: ReduceOp, values: &[T], plan: &Plan, parallel: bool) -> Vec<bool> {
    let any = op == ReduceOp::Any;
    Fold {
        run: move |run: &[T]| {
            if any {
                run.iter().any(|&x| x != T::ZERO)
            } else {
                run.iter().all(|&x| x != T::ZERO)
            }
        },
        combine: move |a: bool, b: bool| if any { a || b } else { a && b },
        strided: move |visit: Visit<'_, T>| {
            let mut acc = !any;
            visit(&mut |x| {
                if any {
                    acc |= x != T::ZERO;
                } else {
                    acc &= x != T::ZERO;
                }
            });
            acc
        },
    }
    .each(values, plan, parallel)
}

/// Every output of `op` over integers or `bool`: `sum` and `prod` in
/// `i64`, wrapping; `mean` in f64; `max` and `min` of the type itself.
fn exact<T: Element + Ord>(
    op: ReduceOp,
    values: &[T],
    plan: &Plan,
    parallel: bool,
    widen: impl Fn(T) -> i64 + Copy + Sync,
) -> Data {
    let wide = |start: i64, f: fn(i64, i64) -> i64| Fold {
        run: move |run: &[T]| run.iter().fold(start, |a, &x| f(a, widen(x))),
        combine: f,
        strided: move |visit: Visit<'_, T>| {
            let mut acc = start;
            visit(&mut |x| acc = f(acc, widen(x)));
            acc
        },
    };
    match op {
        ReduceOp::Sum => Data::I64(wide(0, i64::wrapping_add).each(values, plan, parallel)),
        ReduceOp::Prod => Data::I64(wide(1, i64::wrapping_mul).each(values, plan, parallel)),
        ReduceOp::Mean => {
            let n = plan.count as f64;
            Data::F64(
                sum_sq(values, plan, move |x| widen(x) as f64, parallel)
                    .into_iter()
                    .map(|s| s / n)
                    .collect(),
            )
        }
        ReduceOp::Max | ReduceOp::Min => {
            let pick = if op == ReduceOp::Max {
                Ord::max
            } else {
                Ord::min
            };
            T::wrap(extremum(values, plan, parallel, pick))
        }
        ReduceOp::Norm | ReduceOp::Any | ReduceOp::All => {
            unreachable!("checked: norm is of fields; any and all have their own fold")
        }
    }
}

/// `sum f(x)` in f64 over the reduced elements of every output.
fn sum_sq<T: Element>(
    values: &[T],
    plan: &Plan,
    f: impl Fn(T) -> f64 + Copy + Sync,
    parallel: bool,
) -> Vec<f64> {
    Fold {
        run: |run: &[T]| {
            let mut acc = [0.0f64; 4];
            let mut chunks = run.chunks_exact(4);
            for c in &mut chunks {
                for k in 0..4 {
                    acc[k] += f(c[k]);
                }
            }
            (acc[0] + acc[1])
                + (acc[2] + acc[3])
                + chunks.remainder().iter().map(|&x| f(x)).sum::<f64>()
        },
        combine: |a: f64, b: f64| a + b,
        strided: |visit: Visit<'_, T>| {
            let mut acc = 0.0;
            visit(&mut |x| acc += f(x));
            acc
        },
    }
    .each(values, plan, parallel)
}

/// NaN is the one value unequal to itself, whatever the element type.
#[allow(clippy::eq_op)]
fn is_nan<T: PartialEq>(x: &T) -> bool {
    x != x
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_core::{c64, DType};

    fn tensor(shape: &[usize]) -> Tensor {
        let n = shape.iter().product();
        Tensor::from_vec::<f64>((0..n).map(|i| ((i * 7 % 11) as f64) - 4.5).collect(), shape)
            .unwrap()
    }

    /// Reference: for every output index, loop over the whole input and
    /// pick the elements whose kept coordinates match.
    fn reference(op: ReduceOp, t: &Tensor, axes: &[usize]) -> Vec<f64> {
        let shape = t.shape();
        let v = t.as_slice::<f64>().unwrap();
        let coords = |mut k: usize| {
            let mut c = vec![0; shape.len()];
            for i in (0..shape.len()).rev() {
                c[i] = k % shape[i];
                k /= shape[i];
            }
            c
        };
        let kept: Vec<usize> = (0..shape.len()).filter(|a| !axes.contains(a)).collect();
        let outputs: usize = kept.iter().map(|&a| shape[a]).product();
        let kept_shape: Vec<usize> = kept.iter().map(|&a| shape[a]).collect();
        (0..outputs)
            .map(|o| {
                let mut oc = vec![0; kept.len()];
                let mut r = o;
                for i in (0..kept.len()).rev() {
                    oc[i] = r % kept_shape[i];
                    r /= kept_shape[i];
                }
                let xs: Vec<f64> = (0..v.len())
                    .filter(|&k| {
                        let c = coords(k);
                        kept.iter().zip(&oc).all(|(&a, &x)| c[a] == x)
                    })
                    .map(|k| v[k])
                    .collect();
                match op {
                    ReduceOp::Sum => xs.iter().sum(),
                    ReduceOp::Prod => xs.iter().product(),
                    ReduceOp::Max => xs.iter().cloned().fold(f64::MIN, f64::max),
                    ReduceOp::Min => xs.iter().cloned().fold(f64::MAX, f64::min),
                    ReduceOp::Mean => xs.iter().sum::<f64>() / xs.len() as f64,
                    ReduceOp::Norm => xs.iter().map(|x| x * x).sum::<f64>().sqrt(),
                    ReduceOp::Any | ReduceOp::All => unreachable!("of bool results"),
                }
            })
            .collect()
    }

    #[test]
    fn every_reduction_over_every_axis_set() {
        let shapes: &[&[usize]] = &[&[7], &[3, 5], &[2, 3, 4], &[2, 1, 3, 2]];
        let ops = ReduceOp::ALL
            .into_iter()
            .filter(|&op| op.output_dtype(DType::F64) == Some(DType::F64) || op == ReduceOp::Norm);
        for shape in shapes {
            let t = tensor(shape);
            let rank = shape.len();
            for mask in 0..(1u32 << rank) {
                let axes: Vec<usize> = (0..rank).filter(|i| mask & (1 << i) != 0).collect();
                for op in ops.clone() {
                    let got = reduce(op, &t, &axes, false, false).unwrap();
                    let want = reference(op, &t, &axes);
                    let got = got.as_slice::<f64>().unwrap();
                    assert_eq!(got.len(), want.len(), "{op:?} {shape:?} {axes:?}");
                    for (g, w) in got.iter().zip(&want) {
                        assert!(
                            (g - w).abs() <= 1e-9 * (1.0 + w.abs()),
                            "{op:?} {shape:?} {axes:?}: {g} vs {w}"
                        );
                    }
                    let kept = reduce(op, &t, &axes, true, false).unwrap();
                    assert_eq!(kept.shape().len(), rank);
                }
            }
        }
    }

    #[test]
    fn parallel_reductions_match_serial() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let t = tensor(&[300, 500]);
        let ops = [
            ReduceOp::Sum,
            ReduceOp::Max,
            ReduceOp::Min,
            ReduceOp::Mean,
            ReduceOp::Norm,
        ];
        for axes in [vec![0, 1], vec![1], vec![0]] {
            for op in ops {
                let serial = reduce(op, &t, &axes, false, false).unwrap();
                let par = pool.install(|| reduce(op, &t, &axes, false, true).unwrap());
                assert_eq!(serial.shape(), par.shape());
                for (s, p) in serial
                    .as_slice::<f64>()
                    .unwrap()
                    .iter()
                    .zip(par.as_slice::<f64>().unwrap())
                {
                    assert!(
                        (s - p).abs() <= 1e-9 * (1.0 + s.abs()),
                        "{op:?} {axes:?}: {s} vs {p}"
                    );
                }
            }
        }
        let mut v = vec![1.0f64; 100_000];
        v[77_777] = f64::NAN;
        let nan = Tensor::from_vec(v, &[100_000]).unwrap();
        let m = pool.install(|| reduce(ReduceOp::Max, &nan, &[0], false, true).unwrap());
        assert!(
            m.as_slice::<f64>().unwrap()[0].is_nan(),
            "NaN propagates across chunks"
        );
    }

    #[test]
    fn long_sums_use_several_accumulators_and_stay_exact() {
        let t = Tensor::from_vec((0..1001).map(|i| i as f64).collect::<Vec<_>>(), &[1001]).unwrap();
        let s = reduce(ReduceOp::Sum, &t, &[0], false, false).unwrap();
        assert_eq!(s.as_slice::<f64>().unwrap(), &[500_500.0]);
        assert_eq!(s.shape(), &[] as &[usize]);
    }

    #[test]
    fn complex_and_empty_and_bad_axes() {
        let z = Tensor::from_vec(vec![c64::new(3.0, 4.0), c64::new(0.0, 1.0)], &[2]).unwrap();
        let n = reduce(ReduceOp::Norm, &z, &[0], false, false).unwrap();
        assert_eq!(
            (n.dtype(), n.as_slice::<f64>().unwrap()),
            (DType::F64, &[26f64.sqrt()][..])
        );
        let m = reduce(ReduceOp::Mean, &z, &[0], false, false).unwrap();
        assert_eq!(m.as_slice::<c64>().unwrap(), &[c64::new(1.5, 2.5)]);
        let e = Tensor::from_vec(Vec::<f64>::new(), &[2, 0]).unwrap();
        assert_eq!(
            reduce(ReduceOp::Sum, &e, &[1], false, false)
                .unwrap()
                .as_slice::<f64>()
                .unwrap(),
            &[0.0, 0.0]
        );
        assert_eq!(
            reduce(ReduceOp::Prod, &e, &[1], false, false)
                .unwrap()
                .as_slice::<f64>()
                .unwrap(),
            &[1.0, 1.0]
        );
        let err = reduce(ReduceOp::Max, &e, &[1], false, false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "max over no elements (shape [2, 0]) is undefined"
        );
        let err = reduce(ReduceOp::Sum, &e, &[2], false, false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "sum: axis 2 of a rank-2 tensor is out of range"
        );
        let err = reduce(ReduceOp::Sum, &e, &[0, 0], false, false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "sum: axis 0 of a rank-2 tensor is given twice"
        );
        assert!(matches!(
            reduce(ReduceOp::Max, &z, &[0], false, false),
            Err(TensorError::Unsupported { .. })
        ));
    }
}
