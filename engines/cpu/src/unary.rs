//! Unary kernels: one function of each element.

use rayon::prelude::*;

use super::buffer;
use super::parallel::PARALLEL_THRESHOLD;
use weft_core::ops::UnaryOp;
use weft_core::{c32, c64, Element, Tensor, TensorError};

/// The math of one element type.
pub(super) trait Math: Element {
    /// The real type of `|x|`.
    type Magnitude: Element;
    fn magnitude(self) -> Self::Magnitude;
    fn map(self, op: UnaryOp) -> Self;
}

macro_rules! real_math {
    ($t:ty) => {
        impl Math for $t {
            type Magnitude = $t;

            fn magnitude(self) -> $t {
                <$t>::abs(self)
            }

            fn map(self, op: UnaryOp) -> $t {
                match op {
                    UnaryOp::Neg => -self,
                    UnaryOp::Abs => <$t>::abs(self),
                    UnaryOp::Sign => {
                        if self > 0.0 {
                            1.0
                        } else if self < 0.0 {
                            -1.0
                        } else {
                            self // 0, -0 or NaN
                        }
                    }
                    UnaryOp::Conj => self,
                    UnaryOp::Exp => self.exp(),
                    UnaryOp::Log => self.ln(),
                    UnaryOp::Expm1 => self.exp_m1(),
                    UnaryOp::Log1p => self.ln_1p(),
                    UnaryOp::Sqrt => self.sqrt(),
                    UnaryOp::Rsqrt => 1.0 / self.sqrt(),
                    UnaryOp::Sin => self.sin(),
                    UnaryOp::Cos => self.cos(),
                    UnaryOp::Tanh => self.tanh(),
                    UnaryOp::Not => unreachable!("checked: not is of integers and bool"),
                }
            }
        }
    };
}

macro_rules! integer_math {
    ($t:ty) => {
        impl Math for $t {
            type Magnitude = $t;

            fn magnitude(self) -> $t {
                self.wrapping_abs()
            }

            fn map(self, op: UnaryOp) -> $t {
                match op {
                    UnaryOp::Neg => self.wrapping_neg(),
                    UnaryOp::Abs => self.wrapping_abs(),
                    UnaryOp::Sign => self.signum(),
                    UnaryOp::Conj => self,
                    UnaryOp::Not => !self,
                    _ => unreachable!("checked: the functions are of floats and complexes"),
                }
            }
        }
    };
}

impl Math for bool {
    type Magnitude = bool;

    fn magnitude(self) -> bool {
        self
    }

    fn map(self, op: UnaryOp) -> bool {
        match op {
            UnaryOp::Not => !self,
            _ => unreachable!("checked: bool has `not` only"),
        }
    }
}

macro_rules! complex_math {
    ($t:ty, $r:ty) => {
        impl Math for $t {
            type Magnitude = $r;

            fn magnitude(self) -> $r {
                self.norm()
            }

            fn map(self, op: UnaryOp) -> $t {
                let one = <$t>::new(1.0, 0.0);
                match op {
                    UnaryOp::Neg => -self,
                    UnaryOp::Abs => <$t>::new(self.norm(), 0.0),
                    UnaryOp::Sign => {
                        let n = self.norm();
                        if n == 0.0 {
                            self
                        } else {
                            self / n
                        }
                    }
                    UnaryOp::Conj => self.conj(),
                    UnaryOp::Exp => self.exp(),
                    UnaryOp::Log => self.ln(),
                    UnaryOp::Expm1 => self.exp() - one,
                    UnaryOp::Log1p => (one + self).ln(),
                    UnaryOp::Sqrt => self.sqrt(),
                    UnaryOp::Rsqrt => one / self.sqrt(),
                    UnaryOp::Sin => self.sin(),
                    UnaryOp::Cos => self.cos(),
                    UnaryOp::Tanh => self.tanh(),
                    UnaryOp::Not => unreachable!("checked: not is of integers and bool"),
                }
            }
        }
    };
}

real_math!(f32);
real_math!(f64);
complex_math!(c32, f32);
complex_math!(c64, f64);
integer_math!(i32);
integer_math!(i64);

/// Applies `op` to every element; `parallel` spreads large tensors over the
/// current rayon pool.
///
/// # Errors
///
/// As [`UnaryOp::output_dtype`].
pub(super) fn apply(op: UnaryOp, input: &Tensor, parallel: bool) -> Result<Tensor, TensorError> {
    op.output_dtype(input.dtype())?;
    let parallel = parallel && input.len() >= PARALLEL_THRESHOLD;
    let data = if op == UnaryOp::Abs && input.dtype().is_complex() {
        // |z| of a complex tensor is a tensor of its real type.
        with_data!(input.data(), |v| Element::wrap(
            map(v, parallel, |&x| x.magnitude())
        ))
    } else {
        map_data!(input.data(), |v| map(v, parallel, |&x| x.map(op)))
    };
    Tensor::from_data(data, input.shape())
}

fn map<T: Copy + Sync, U: Element>(
    values: &[T],
    parallel: bool,
    f: impl Fn(&T) -> U + Sync + Send,
) -> Vec<U> {
    let mut out = buffer::take(values.len());
    if parallel {
        out.par_extend(values.par_iter().with_min_len(1 << 12).map(&f));
    } else {
        out.extend(values.iter().map(f));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_core::DType;

    /// Reference values for real inputs: the standard library, called
    /// directly per element.
    fn reference(op: UnaryOp, x: f64) -> f64 {
        match op {
            UnaryOp::Neg => -x,
            UnaryOp::Abs => x.abs(),
            UnaryOp::Sign => {
                if x == 0.0 {
                    0.0
                } else {
                    x.signum()
                }
            }
            UnaryOp::Conj => x,
            UnaryOp::Exp => x.exp(),
            UnaryOp::Log => x.ln(),
            UnaryOp::Expm1 => x.exp_m1(),
            UnaryOp::Log1p => x.ln_1p(),
            UnaryOp::Sqrt => x.sqrt(),
            UnaryOp::Rsqrt => x.sqrt().recip(),
            UnaryOp::Sin => x.sin(),
            UnaryOp::Cos => x.cos(),
            UnaryOp::Tanh => x.tanh(),
            UnaryOp::Not => unreachable!("not a function of floats"),
        }
    }

    fn same(a: f64, b: f64) -> bool {
        (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= 1e-12 * (1.0 + b.abs())
    }

    #[test]
    fn real_ops_match_std() {
        let xs = vec![-2.5, -1.0, -0.0, 0.0, 0.25, 1.0, 3.5, 1e-9];
        let t = Tensor::from_vec(xs.clone(), &[2, 4]).unwrap();
        let big = Tensor::from_vec(
            (0..50_000).map(|i| i as f64 * 1e-3).collect::<Vec<_>>(),
            &[50_000],
        )
        .unwrap();
        for op in UnaryOp::ALL
            .into_iter()
            .filter(|op| op.supports(DType::F64))
        {
            let got = apply(op, &t, false).unwrap();
            assert_eq!(got.shape(), &[2, 4]);
            for (g, &x) in got.as_slice::<f64>().unwrap().iter().zip(&xs) {
                assert!(same(*g, reference(op, x)), "{op:?}({x}) = {g}");
            }
            let par = rayon::ThreadPoolBuilder::new()
                .num_threads(2)
                .build()
                .unwrap()
                .install(|| apply(op, &big, true).unwrap());
            assert_eq!(par, apply(op, &big, false).unwrap(), "{op:?}");
        }
        let f = Tensor::from_vec(vec![4.0f32], &[]).unwrap();
        assert_eq!(
            apply(UnaryOp::Rsqrt, &f, false)
                .unwrap()
                .as_slice::<f32>()
                .unwrap(),
            &[0.5]
        );
    }

    #[test]
    fn complex_ops_satisfy_their_identities() {
        let zs = vec![
            c64::new(1.0, 2.0),
            c64::new(-0.5, 0.25),
            c64::new(0.0, -3.0),
            c64::new(2.0, 0.0),
        ];
        let t = Tensor::from_vec(zs.clone(), &[4]).unwrap();
        let get = |op| apply(op, &t, false).unwrap().into_vec::<c64>().unwrap();
        let close = |a: c64, b: c64| (a - b).norm() <= 1e-12 * (1.0 + b.norm());
        let (exp, log, sqrt, sin, cos) = (
            get(UnaryOp::Exp),
            get(UnaryOp::Log),
            get(UnaryOp::Sqrt),
            get(UnaryOp::Sin),
            get(UnaryOp::Cos),
        );
        for (i, &z) in zs.iter().enumerate() {
            // e^(a+bi) = e^a (cos b + i sin b)
            let e = c64::new(z.re.exp() * z.im.cos(), z.re.exp() * z.im.sin());
            assert!(close(exp[i], e), "exp {z}");
            assert!(close(log[i].exp(), z), "log {z}");
            assert!(close(sqrt[i] * sqrt[i], z) && sqrt[i].re >= 0.0, "sqrt {z}");
            assert!(
                close(sin[i] * sin[i] + cos[i] * cos[i], c64::new(1.0, 0.0)),
                "sin/cos {z}"
            );
        }
        let abs = apply(UnaryOp::Abs, &t, false).unwrap();
        assert_eq!(abs.dtype(), DType::F64);
        assert_eq!(abs.as_slice::<f64>().unwrap()[2], 3.0);
        let conj = get(UnaryOp::Conj);
        assert_eq!(conj[0], c64::new(1.0, -2.0));
        let sign = get(UnaryOp::Sign);
        assert!(close(sign[2], c64::new(0.0, -1.0)));
    }
}
