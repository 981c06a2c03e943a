//! Integer and `bool` tensors: creation, casts between every pair,
//! integer and logical arithmetic, comparisons, masks, reductions and
//! `argmax`/`argmin`, each against a plain loop written here, and every
//! refusal as a typed error naming the bad value.

use weft::ops::{CreateOps, ElementwiseOps, StructuralOps};
use weft::{
    c64,
    error::TensorError,
    ops::{ArgOp, BinaryOp, CmpOp, Distribution, HostRun, MatOp, ReduceOp, TensorOp, UnaryOp},
    tensor::Element,
    DType, Scalar, Tensor,
};
use weft_tests::{wait, wait_ok};

/// Runs `op` with the CPU engine's kernels on one thread and on two, and
/// checks they agree.
fn run(op: &TensorOp, inputs: &[&Tensor]) -> Result<Tensor, TensorError> {
    let one = op.run(inputs, 1).map(|mut v| v.remove(0));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let two = pool.install(|| op.run(inputs, 2).map(|mut v| v.remove(0)));
    let same = match (&one, &two) {
        (Ok(a), Ok(b)) => a.shape() == b.shape() && fingerprint(a) == fingerprint(b),
        (a, b) => a == b,
    };
    assert!(same, "{}: one thread and two differ", op.name());
    one
}

/// The elements as text: equal for equal tensors, NaN included.
fn fingerprint(t: &Tensor) -> String {
    match t.dtype() {
        DType::F32 => format!("{:?}", values::<f32>(t)),
        DType::F64 => format!("{:?}", values::<f64>(t)),
        DType::C32 => format!("{:?}", values::<weft::c32>(t)),
        DType::C64 => format!("{:?}", values::<c64>(t)),
        DType::I32 => format!("{:?}", values::<i32>(t)),
        DType::I64 => format!("{:?}", values::<i64>(t)),
        DType::Bool => format!("{:?}", values::<bool>(t)),
    }
}

fn values<T: Element>(t: &Tensor) -> Vec<T> {
    t.as_slice::<T>().expect("the expected type").to_vec()
}

/// A seeded stream of integers in `[lo, hi]` with the extremes mixed in.
fn integers(n: usize, seed: u64, lo: i64, hi: i64) -> Vec<i64> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|i| match i % 11 {
            0 => lo,
            1 => hi,
            2 => 0,
            _ => {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let span = (hi as i128 - lo as i128 + 1) as u128;
                (lo as i128 + (u128::from(x) % span) as i128) as i64
            }
        })
        .collect()
}

/// Python's `//` and `%` of integers, by the definition: the quotient
/// rounded toward minus infinity, in i128 so that nothing overflows.
fn py_divmod(a: i64, b: i64) -> (i128, i128) {
    let (a, b) = (i128::from(a), i128::from(b));
    let mut q = a / b;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q -= 1;
    }
    (q, a - b * q)
}

#[test]
fn integer_and_bool_tensors_round_trip_through_a_lane() {
    let rt = weft::Runtime::builder().split(1).build().expect("runtime");
    let lane = rt.lane(0).expect("lane");
    let ints = Tensor::from_vec(vec![i32::MIN, -1, 0, 7, i32::MAX, 3], &[2, 3]).unwrap();
    let longs = Tensor::from_vec(vec![i64::MIN, i64::MAX, 1 << 60], &[3]).unwrap();
    let bits = Tensor::from_vec(vec![true, false, false, true], &[2, 2]).unwrap();
    for t in [&ints, &longs, &bits] {
        let h = lane.upload(t.clone()).unwrap();
        assert_eq!(h.dtype(), t.dtype());
        // Reversed and back: the data movement of every type.
        let axes: Vec<usize> = (0..t.shape().len()).collect();
        let p = lane
            .reverse(&lane.reverse(&h, &axes).unwrap(), &axes)
            .unwrap();
        assert_eq!(&wait_ok(lane.download(&p).unwrap()), t);
    }
    assert_eq!(DType::Bool.size(), 1);
    assert_eq!(ints.as_slice::<i32>().unwrap()[4], i32::MAX);
    let err = ints.as_slice::<i64>().unwrap_err();
    assert_eq!(err.to_string(), "expected a i64 tensor, got i32");
    // Creation of every type.
    let z = wait_ok(
        lane.download(&lane.zeros(DType::Bool, &[2]).unwrap())
            .unwrap(),
    );
    assert_eq!(values::<bool>(&z), [false, false]);
    let o = wait_ok(
        lane.download(&lane.ones(DType::I64, &[2]).unwrap())
            .unwrap(),
    );
    assert_eq!(values::<i64>(&o), [1, 1]);
    let e = wait_ok(lane.download(&lane.eye(DType::I32, 2, 3).unwrap()).unwrap());
    assert_eq!(values::<i32>(&e), [1, 0, 0, 0, 1, 0]);
    let f = lane.full(DType::I64, &[2], Scalar::Int(i64::MAX)).unwrap();
    assert_eq!(
        values::<i64>(&wait_ok(lane.download(&f).unwrap())),
        [i64::MAX; 2]
    );
    let a = lane.arange(DType::I32, -3.0, 2.0, 4).unwrap();
    assert_eq!(
        values::<i32>(&wait_ok(lane.download(&a).unwrap())),
        [-3, -1, 1, 3]
    );
}

#[test]
fn scalar_arguments_are_never_rounded_into_their_type() {
    let full = |dtype, value| {
        TensorOp::Full {
            dtype,
            shape: vec![1],
            value,
        }
        .run(&[], 1)
    };
    let err = full(DType::I32, Scalar::Real(1.5)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "full: value is 1.5, which must be a whole number in i32's range"
    );
    let err = full(DType::I32, Scalar::Int(1 << 40)).unwrap_err();
    assert!(matches!(err, TensorError::Argument { .. }), "{err}");
    assert!(full(DType::I64, Scalar::Real(9.3e18)).is_err());
    assert!(full(DType::I64, Scalar::Real(-9.2e18)).is_ok());
    let err = full(DType::Bool, Scalar::Int(2)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "full: value is 2, which must be true, false, 0 or 1"
    );
    let err = full(DType::I64, Scalar::Complex(c64::new(1.0, 1.0))).unwrap_err();
    assert_eq!(
        err.to_string(),
        "full: value is 1+1i, which must be a whole number in i64's range"
    );
    // Every op's scalar is named with its value, and the argument it is.
    let gemm = TensorOp::Gemm {
        alpha: Scalar::Complex(c64::new(0.5, -2.0)),
        beta: Scalar::Real(0.0),
        a: MatOp::NONE,
        b: MatOp::NONE,
    };
    let m = Tensor::from_vec(vec![1.0f64; 4], &[2, 2]).unwrap();
    let err = gemm.run(&[&m, &m, &m], 1).unwrap_err();
    assert_eq!(
        err.to_string(),
        "gemm: alpha is 0.5-2i, which must be real, for f64 tensors"
    );
    let t = full(DType::F64, Scalar::Bool(true)).unwrap().remove(0);
    assert_eq!(values::<f64>(&t), [1.0]);
    let t = full(DType::Bool, Scalar::Real(0.0)).unwrap().remove(0);
    assert_eq!(values::<bool>(&t), [false]);
    // A scalar operand of an integer op is an integer.
    let x = Tensor::from_vec(vec![5i32, -5], &[2]).unwrap();
    let op = TensorOp::BinaryScalar {
        op: BinaryOp::Mul,
        value: Scalar::Real(2.5),
        scalar_first: false,
    };
    assert!(matches!(run(&op, &[&x]), Err(TensorError::Argument { .. })));
    let op = TensorOp::BinaryScalar {
        op: BinaryOp::FloorDiv,
        value: Scalar::Int(-2),
        scalar_first: false,
    };
    assert_eq!(values::<i32>(&run(&op, &[&x]).unwrap()), [-3, 2]);
}

#[test]
fn integer_ranges_and_random_integers() {
    let arange = |dtype, start, step, len| {
        TensorOp::Arange {
            dtype,
            start,
            step,
            len,
        }
        .run(&[], 1)
    };
    let t = arange(DType::I64, 5.0, -3.0, 4).unwrap().remove(0);
    assert_eq!(values::<i64>(&t), [5, 2, -1, -4]);
    let err = arange(DType::I32, 0.0, 0.5, 3).unwrap_err();
    assert_eq!(
        err.to_string(),
        "arange: step is 0.5, which must be a whole number in i32's range"
    );
    let err = arange(DType::I32, 2147483000.0, 1000.0, 2).unwrap_err();
    assert_eq!(
        err.to_string(),
        "arange: start + step·(len - 1) is 2147484000, which must be in the integer type's range"
    );
    assert!(arange(DType::I64, 0.0, 1e18, usize::MAX).is_err());
    assert!(arange(DType::Bool, 0.0, 1.0, 2).is_err());

    let random = |dtype, distribution, seed| {
        TensorOp::Random {
            dtype,
            shape: vec![4000],
            distribution,
            seed,
        }
        .run(&[], 1)
    };
    let range = Distribution::Integers { low: -3, high: 4 };
    let a = random(DType::I32, range, 9).unwrap().remove(0);
    assert_eq!(a, random(DType::I32, range, 9).unwrap().remove(0));
    assert_ne!(a, random(DType::I32, range, 10).unwrap().remove(0));
    let v = values::<i32>(&a);
    // Every value of the range drawn, none outside it, each about 1/7.
    for k in -3..4 {
        let count = v.iter().filter(|&&x| x == k).count();
        assert!((400..750).contains(&count), "{k} drawn {count} times");
    }
    assert!(v.iter().all(|x| (-3..4).contains(x)));
    let full = Distribution::Integers {
        low: i64::MIN,
        high: i64::MAX,
    };
    let w = values::<i64>(&random(DType::I64, full, 1).unwrap().remove(0));
    assert!(w.iter().any(|&x| x < -(1 << 62)) && w.iter().any(|&x| x > 1 << 62));
    let b = values::<bool>(
        &random(DType::Bool, Distribution::Bits, 3)
            .unwrap()
            .remove(0),
    );
    let trues = b.iter().filter(|&&x| x).count();
    assert!((1800..2200).contains(&trues), "{trues} of 4000");
    // Refusals: the wrong family, an empty or too wide interval.
    let err = random(DType::I32, Distribution::Normal, 1).unwrap_err();
    assert_eq!(
        err.to_string(),
        "normal random is not defined for i32 tensors"
    );
    let err = random(DType::F64, range, 1).unwrap_err();
    assert_eq!(
        err.to_string(),
        "random integers is not defined for f64 tensors"
    );
    let empty = Distribution::Integers { low: 2, high: 2 };
    assert!(matches!(
        random(DType::I64, empty, 1),
        Err(TensorError::Argument { .. })
    ));
    let wide = Distribution::Integers {
        low: 0,
        high: 1 << 40,
    };
    let err = random(DType::I32, wide, 1).unwrap_err();
    assert_eq!(
        err.to_string(),
        "random: low..high is 0..1099511627776, which must be within i32's range"
    );
}

/// One source tensor per type with the values casts disagree on.
fn cast_sources() -> Vec<Tensor> {
    vec![
        Tensor::from_vec(vec![-1.7f32, 0.0, -0.0, f32::NAN, f32::INFINITY, 3e9], &[6]).unwrap(),
        Tensor::from_vec(
            vec![-1.7f64, 0.0, -0.0, f64::NAN, f64::NEG_INFINITY, 1e19],
            &[6],
        )
        .unwrap(),
        Tensor::from_vec(
            vec![
                weft::c32::new(-1.7, 0.0),
                weft::c32::new(0.0, 1.0),
                weft::c32::new(0.0, -0.0),
                weft::c32::new(2.5, 9.0),
                weft::c32::new(-3e9, 0.0),
                weft::c32::new(1.0, 1.0),
            ],
            &[6],
        )
        .unwrap(),
        Tensor::from_vec(
            vec![
                c64::new(-1.7, 0.0),
                c64::new(0.0, 1.0),
                c64::new(0.0, -0.0),
                c64::new(2.5, 9.0),
                c64::new(-3e9, 0.0),
                c64::new(1.0, 1.0),
            ],
            &[6],
        )
        .unwrap(),
        Tensor::from_vec(vec![i32::MIN, -1, 0, 1, i32::MAX, 16_777_217], &[6]).unwrap(),
        Tensor::from_vec(
            vec![i64::MIN, -1, 0, (1 << 32) + 5, i64::MAX, (1 << 53) + 1],
            &[6],
        )
        .unwrap(),
        Tensor::from_vec(vec![true, false, true, false, true, true], &[6]).unwrap(),
    ]
}

/// The value of element `i` of `t` cast to `to`, written out case by case
/// from the stated rule (Rust's `as`), independently of the kernels'
/// `Scalar` route.
fn cast_reference(t: &Tensor, i: usize, to: DType) -> Tensor {
    let one = |data: Tensor| data;
    macro_rules! to {
        ($x:expr) => {{
            let x = $x;
            one(match to {
                DType::F32 => Tensor::scalar(x as f32),
                DType::F64 => Tensor::scalar(x as f64),
                DType::C32 => Tensor::scalar(weft::c32::new(x as f32, 0.0)),
                DType::C64 => Tensor::scalar(c64::new(x as f64, 0.0)),
                DType::I32 => Tensor::scalar(x as i32),
                DType::I64 => Tensor::scalar(x as i64),
                DType::Bool => unreachable!("handled by the caller"),
            })
        }};
    }
    match t.dtype() {
        DType::F32 => {
            let x = values::<f32>(t)[i];
            match to {
                DType::Bool => Tensor::scalar(x != 0.0),
                _ => to!(x),
            }
        }
        DType::F64 => {
            let x = values::<f64>(t)[i];
            match to {
                DType::Bool => Tensor::scalar(x != 0.0),
                _ => to!(x),
            }
        }
        DType::C32 => {
            let z = values::<weft::c32>(t)[i];
            match to {
                DType::Bool => Tensor::scalar(z.re != 0.0 || z.im != 0.0),
                DType::C32 => Tensor::scalar(z),
                DType::C64 => Tensor::scalar(c64::new(z.re.into(), z.im.into())),
                _ => to!(z.re),
            }
        }
        DType::C64 => {
            let z = values::<c64>(t)[i];
            match to {
                DType::Bool => Tensor::scalar(z.re != 0.0 || z.im != 0.0),
                DType::C32 => Tensor::scalar(weft::c32::new(z.re as f32, z.im as f32)),
                DType::C64 => Tensor::scalar(z),
                _ => to!(z.re),
            }
        }
        DType::I32 => {
            let x = values::<i32>(t)[i];
            match to {
                DType::Bool => Tensor::scalar(x != 0),
                _ => to!(x),
            }
        }
        DType::I64 => {
            let x = values::<i64>(t)[i];
            match to {
                DType::Bool => Tensor::scalar(x != 0),
                _ => to!(x),
            }
        }
        DType::Bool => {
            let x = values::<bool>(t)[i];
            match to {
                DType::Bool => Tensor::scalar(x),
                _ => to!(u8::from(x)),
            }
        }
    }
}

/// Equality of one-element tensors, NaN equal to NaN.
fn same_element(got: &Tensor, want: &Tensor) -> bool {
    let nan = |t: &Tensor| match t.dtype() {
        DType::F32 => values::<f32>(t)[0].is_nan(),
        DType::F64 => values::<f64>(t)[0].is_nan(),
        DType::C32 => values::<weft::c32>(t)[0].re.is_nan(),
        DType::C64 => values::<c64>(t)[0].re.is_nan(),
        _ => false,
    };
    got == want || (nan(got) && nan(want))
}

#[test]
fn casts_between_every_pair_follow_rusts_as() {
    for src in cast_sources() {
        for to in DType::ALL {
            let got = run(&TensorOp::Cast(to), &[&src]).unwrap();
            assert_eq!((got.dtype(), got.shape()), (to, &[6][..]));
            for i in 0..6 {
                let one = run(
                    &TensorOp::Slice(vec![weft::ops::SliceAxis {
                        start: i,
                        stop: i + 1,
                        step: 1,
                    }]),
                    &[&got],
                )
                .unwrap();
                let one = Tensor::from_data(one.data().clone(), &[]).unwrap();
                let want = cast_reference(&src, i, to);
                assert!(
                    same_element(&one, &want),
                    "{} element {i} to {to}: {:?} vs {:?}",
                    src.dtype(),
                    one.data(),
                    want.data()
                );
            }
        }
    }
    // The stated rule on the values that differ between libraries.
    let f = Tensor::from_vec(vec![f64::NAN, 1e300, -1e300, -2.9], &[4]).unwrap();
    let i = run(&TensorOp::Cast(DType::I32), &[&f]).unwrap();
    assert_eq!(values::<i32>(&i), [0, i32::MAX, i32::MIN, -2]);
    let wide = Tensor::from_vec(vec![(1i64 << 32) + 7, -1], &[2]).unwrap();
    let narrow = run(&TensorOp::Cast(DType::I32), &[&wide]).unwrap();
    assert_eq!(values::<i32>(&narrow), [7, -1]);
}

#[test]
fn integer_arithmetic_wraps_and_divides_as_numpy() {
    for (dtype, lo, hi) in [
        (DType::I32, i64::from(i32::MIN), i64::from(i32::MAX)),
        (DType::I64, i64::MIN, i64::MAX),
    ] {
        let make = |v: &[i64], shape: &[usize]| match dtype {
            DType::I32 => Tensor::from_vec(v.iter().map(|&x| x as i32).collect(), shape).unwrap(),
            _ => Tensor::from_vec(v.to_vec(), shape).unwrap(),
        };
        let read = |t: &Tensor| -> Vec<i64> {
            match t.dtype() {
                DType::I32 => values::<i32>(t).into_iter().map(i64::from).collect(),
                _ => values::<i64>(t),
            }
        };
        // Wrapping to the type's width, written in i128.
        let wrap = |x: i128| -> i64 {
            match dtype {
                DType::I32 => x as i32 as i64,
                _ => x as i64,
            }
        };
        // [3, 1, 5] against [4, 5]: both sides broadcast; 40 000 elements
        // of a second pair exercise the parallel path.
        for (sa, sb) in [
            (vec![3, 1, 5], vec![4, 5]),
            (vec![200, 200], vec![200, 200]),
        ] {
            let na: usize = sa.iter().product();
            let nb: usize = sb.iter().product();
            let av = integers(na, 1, lo, hi);
            let mut bv = integers(nb, 2, lo, hi);
            let (a, b) = (make(&av, &sa), make(&bv, &sb));
            let out: Vec<usize> = if sa.len() == 3 {
                vec![3, 4, 5]
            } else {
                sa.clone()
            };
            let pair = |o: usize, bv: &[i64]| -> (i64, i64) {
                if sa.len() == 3 {
                    let (i, j, k) = (o / 20, (o / 5) % 4, o % 5);
                    (av[i * 5 + k], bv[j * 5 + k])
                } else {
                    (av[o], bv[o])
                }
            };
            let n: usize = out.iter().product();
            let check = |op: BinaryOp, b: &Tensor, bv: &[i64], f: &dyn Fn(i64, i64) -> i64| {
                let got = read(&run(&TensorOp::Binary(op), &[&a, b]).unwrap());
                for (o, g) in got.iter().enumerate().take(n) {
                    let (x, y) = pair(o, bv);
                    assert_eq!(*g, f(x, y), "{dtype} {}({x}, {y})", op.name());
                }
            };
            check(BinaryOp::Add, &b, &bv, &|x, y| {
                wrap(i128::from(x) + i128::from(y))
            });
            check(BinaryOp::Sub, &b, &bv, &|x, y| {
                wrap(i128::from(x) - i128::from(y))
            });
            check(BinaryOp::Mul, &b, &bv, &|x, y| {
                wrap(i128::from(x) * i128::from(y))
            });
            check(BinaryOp::Maximum, &b, &bv, &|x, y| x.max(y));
            check(BinaryOp::Minimum, &b, &bv, &|x, y| x.min(y));
            check(BinaryOp::And, &b, &bv, &|x, y| x & y);
            check(BinaryOp::Or, &b, &bv, &|x, y| x | y);
            check(BinaryOp::Xor, &b, &bv, &|x, y| x ^ y);
            // Division: no zero divisor.
            for y in bv.iter_mut() {
                if *y == 0 {
                    *y = -7;
                }
            }
            let b = make(&bv, &sb);
            check(BinaryOp::FloorDiv, &b, &bv, &|x, y| wrap(py_divmod(x, y).0));
            check(BinaryOp::Rem, &b, &bv, &|x, y| wrap(py_divmod(x, y).1));
            // Powers: small exponents, wrapping.
            let ev: Vec<i64> = bv.iter().map(|y| y.rem_euclid(40)).collect();
            let e = make(&ev, &sb);
            check(BinaryOp::Pow, &e, &ev, &|x, y| {
                let mut r: i128 = 1;
                for _ in 0..y {
                    r = i128::from(wrap(r * i128::from(x)));
                }
                wrap(r)
            });
        }
        // The edges: MIN // -1 and MIN % -1 wrap as NumPy's do.
        let m = make(&[lo, lo, 7, -7], &[4]);
        let d = make(&[-1, -1, -2, 2], &[4]);
        let q = read(&run(&TensorOp::Binary(BinaryOp::FloorDiv), &[&m, &d]).unwrap());
        assert_eq!(q, [lo, lo, -4, -4]);
        let r = read(&run(&TensorOp::Binary(BinaryOp::Rem), &[&m, &d]).unwrap());
        assert_eq!(r, [0, 0, -1, 1]);
        // Unary ops: neg and abs wrap at MIN, sign, not.
        let u = make(&[lo, -5, 0, 9, hi], &[5]);
        let un = |op| read(&run(&TensorOp::Unary(op), &[&u]).unwrap());
        assert_eq!(un(UnaryOp::Neg), [lo, 5, 0, -9, -hi]);
        assert_eq!(un(UnaryOp::Abs), [lo, 5, 0, 9, hi]);
        assert_eq!(un(UnaryOp::Sign), [-1, -1, 0, 1, 1]);
        assert_eq!(un(UnaryOp::Not), [!lo, 4, -1, -10, !hi]);
        assert_eq!(un(UnaryOp::Conj), [lo, -5, 0, 9, hi]);
        // Clamp to the whole numbers inside the bounds; bounds past the
        // type's range saturate.
        let c = |lo, hi| read(&run(&TensorOp::Clamp { lo, hi }, &[&u]).unwrap());
        assert_eq!(c(-4.5, 8.2), [-4, -4, 0, 8, 8]);
        assert_eq!(c(-1e300, 1e300), [lo, -5, 0, 9, hi]);
        assert_eq!(c(1e300, 2e300), [hi; 5]);
    }
}

#[test]
fn integer_refusals_are_typed_and_name_the_value() {
    let a = Tensor::from_vec(vec![1i64, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
    let b = Tensor::from_vec(vec![1i64, 2, 0, 4, 5, 0], &[2, 3]).unwrap();
    for op in [BinaryOp::FloorDiv, BinaryOp::Rem] {
        let err = run(&TensorOp::Binary(op), &[&a, &b]).unwrap_err();
        assert_eq!(
            err,
            TensorError::DivisionByZero {
                op: op.name(),
                index: vec![0, 2],
                shape: vec![2, 3],
            }
        );
        assert_eq!(
            err.to_string(),
            format!(
                "{}: integer division by zero (element [0, 2] of the divisor [2, 3] is 0)",
                op.name()
            )
        );
    }
    let e = Tensor::from_vec(vec![2i32, -1], &[2]).unwrap();
    let x = Tensor::from_vec(vec![3i32, 3], &[2]).unwrap();
    let err = run(&TensorOp::Binary(BinaryOp::Pow), &[&x, &e]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "pow: exponent is -1 (element [1]), which must be non-negative for integer \
         tensors (cast to a float type for negative powers)"
    );
    let refused = |op: &TensorOp, inputs: &[&Tensor]| match run(op, inputs) {
        Err(TensorError::Unsupported { op, dtype }) => format!("{op} {dtype}"),
        other => panic!("{}: {other:?}", op.name()),
    };
    assert_eq!(
        refused(&TensorOp::Binary(BinaryOp::Div), &[&a, &a]),
        "div i64"
    );
    assert_eq!(refused(&TensorOp::Unary(UnaryOp::Exp), &[&a]), "exp i64");
    assert_eq!(refused(&TensorOp::Matmul, &[&a, &a]), "matmul i64");
    let norm = TensorOp::Reduce {
        op: ReduceOp::Norm,
        axes: vec![0],
        keep_dims: false,
    };
    assert_eq!(refused(&norm, &[&a]), "norm i64");
    let t = Tensor::from_vec(vec![true, false], &[2]).unwrap();
    assert_eq!(
        refused(&TensorOp::Binary(BinaryOp::Add), &[&t, &t]),
        "add bool"
    );
    assert_eq!(refused(&TensorOp::Unary(UnaryOp::Neg), &[&t]), "neg bool");
    let f = Tensor::from_vec(vec![1.0f64, 2.0], &[2]).unwrap();
    assert_eq!(
        refused(&TensorOp::Binary(BinaryOp::And), &[&f, &f]),
        "and f64"
    );
    assert_eq!(refused(&TensorOp::Unary(UnaryOp::Not), &[&f]), "not f64");
}

#[test]
fn an_integer_division_by_zero_fails_the_op_on_the_actor_and_loses_nothing() {
    let rt = weft::Runtime::builder().split(1).build().expect("runtime");
    let lane = rt.lane(0).expect("lane");
    let a = lane
        .upload(Tensor::from_vec(vec![7i32, -7, 9], &[3]).unwrap())
        .unwrap();
    let b = lane
        .upload(Tensor::from_vec(vec![2i32, 0, 3], &[3]).unwrap())
        .unwrap();
    let q = lane.floor_div(&a, &b).unwrap();
    let twice = lane.add(&q, &q).unwrap();
    let err = wait(lane.download(&twice).unwrap()).unwrap_err();
    let first = err.dependency().expect("the division's failure");
    assert_eq!(first.op, "floor_div");
    assert!(
        first
            .to_string()
            .contains("integer division by zero (element [1] of the divisor [3] is 0)"),
        "{first}"
    );
    // The operands are intact and the actor serves the next op.
    assert_eq!(
        values::<i32>(&wait_ok(lane.download(&a).unwrap())),
        [7, -7, 9]
    );
    let ok = lane
        .rem(&a, &lane.full(DType::I32, &[], Scalar::Int(-4)).unwrap())
        .unwrap();
    assert_eq!(
        values::<i32>(&wait_ok(lane.download(&ok).unwrap())),
        [-1, -3, -3]
    );
}

#[test]
fn float_floor_division_and_remainder_match_python() {
    // (a, b, a // b, a % b) as CPython and NumPy compute them.
    let cases: [(f64, f64, f64, f64); 8] = [
        (7.5, 2.0, 3.0, 1.5),
        (7.5, -2.0, -4.0, -0.5),
        (-7.5, 2.0, -4.0, 0.5),
        (-7.5, -2.0, 3.0, -1.5),
        (1.0, 0.1, 9.0, 0.09999999999999995),
        (-0.0, 3.0, -0.0, 0.0),
        (0.0, -3.0, -0.0, -0.0),
        (5.0, f64::INFINITY, 0.0, 5.0),
    ];
    let a = Tensor::from_vec(cases.iter().map(|c| c.0).collect(), &[8]).unwrap();
    let b = Tensor::from_vec(cases.iter().map(|c| c.1).collect(), &[8]).unwrap();
    let q = values::<f64>(&run(&TensorOp::Binary(BinaryOp::FloorDiv), &[&a, &b]).unwrap());
    let r = values::<f64>(&run(&TensorOp::Binary(BinaryOp::Rem), &[&a, &b]).unwrap());
    for (i, c) in cases.iter().enumerate() {
        assert_eq!(
            q[i].to_bits(),
            c.2.to_bits(),
            "{} // {} = {}",
            c.0,
            c.1,
            q[i]
        );
        assert_eq!(
            r[i].to_bits(),
            c.3.to_bits(),
            "{} % {} = {}",
            c.0,
            c.1,
            r[i]
        );
    }
    // A zero divisor gives inf or NaN, as NumPy (no error for floats).
    let z = Tensor::from_vec(vec![1.0f32, -1.0], &[2]).unwrap();
    let zero = Tensor::scalar(0.0f32);
    let q = values::<f32>(&run(&TensorOp::Binary(BinaryOp::FloorDiv), &[&z, &zero]).unwrap());
    assert_eq!(q, [f32::INFINITY, f32::NEG_INFINITY]);
    let r = values::<f32>(&run(&TensorOp::Binary(BinaryOp::Rem), &[&z, &zero]).unwrap());
    assert!(r.iter().all(|x| x.is_nan()));
}

#[test]
fn comparisons_give_bool_and_select_takes_a_bool_mask() {
    let a = Tensor::from_vec(vec![1i32, 5, 3, -2], &[2, 2]).unwrap();
    let b = Tensor::from_vec(vec![3i32, -2], &[2]).unwrap();
    let cmp =
        |op, x: &Tensor, y: &Tensor| values::<bool>(&run(&TensorOp::Compare(op), &[x, y]).unwrap());
    // Row i, column j: a[i][j] against b[j].
    let want = |f: fn(i32, i32) -> bool| -> Vec<bool> {
        let (av, bv) = (values::<i32>(&a), values::<i32>(&b));
        (0..4).map(|o| f(av[o], bv[o % 2])).collect()
    };
    assert_eq!(cmp(CmpOp::Lt, &a, &b), want(|x, y| x < y));
    assert_eq!(cmp(CmpOp::Ge, &a, &b), want(|x, y| x >= y));
    assert_eq!(cmp(CmpOp::Eq, &a, &b), want(|x, y| x == y));
    let t = Tensor::from_vec(vec![false, true], &[2]).unwrap();
    let u = Tensor::from_vec(vec![true, true], &[2]).unwrap();
    assert_eq!(cmp(CmpOp::Lt, &t, &u), [true, false]);
    let f = Tensor::from_vec(vec![f64::NAN, 1.0], &[2]).unwrap();
    assert_eq!(cmp(CmpOp::Ne, &f, &f), [true, false]);
    assert_eq!(cmp(CmpOp::Le, &f, &f), [false, true]);
    // Logical ops, select on the mask.
    let l = |op| values::<bool>(&run(&TensorOp::Binary(op), &[&t, &u]).unwrap());
    assert_eq!(l(BinaryOp::And), [false, true]);
    assert_eq!(l(BinaryOp::Or), [true, true]);
    assert_eq!(l(BinaryOp::Xor), [true, false]);
    let not = values::<bool>(&run(&TensorOp::Unary(UnaryOp::Not), &[&t]).unwrap());
    assert_eq!(not, [true, false]);
    let mask = run(&TensorOp::Compare(CmpOp::Gt), &[&a, &b]).unwrap();
    let s = run(&TensorOp::Select, &[&mask, &a, &Tensor::scalar(0i32)]).unwrap();
    assert_eq!(values::<i32>(&s), [0, 5, 0, 0]);
    let float_mask = run(&TensorOp::Cast(DType::F64), &[&mask]).unwrap();
    assert_eq!(values::<f64>(&float_mask), [0.0, 1.0, 0.0, 0.0]);
    let err = run(&TensorOp::Select, &[&float_mask, &a, &a]).unwrap_err();
    assert_eq!(err.to_string(), "expected a bool tensor, got f64");
}

mod reductions_and_products;
