//! The creation vocabulary: the distributions of seeded random tensors
//! and the host generator every place draws them with.

use crate::tensor::{element_count, DType, Data, Element, Field, Tensor, TensorError};

/// A distribution for seeded random tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Distribution {
    /// Uniform on `[0, 1)` (each part, for complex types; float types).
    Uniform,
    /// Standard normal (each part, for complex types; float types).
    Normal,
    /// Integers uniform on `[low, high)` (integer types; `low < high`,
    /// both in the type's range).
    Integers {
        /// The smallest value drawn.
        low: i64,
        /// One past the largest value drawn.
        high: i64,
    },
    /// `true` with probability 1/2 (`bool`).
    Bits,
}

impl Distribution {
    /// Checks that the distribution draws elements of type `dtype`.
    ///
    /// # Errors
    ///
    /// [`TensorError::Unsupported`] for a distribution of another family
    /// of types; [`TensorError::Argument`] for an empty or out-of-range
    /// integer interval.
    pub fn check(self, dtype: DType) -> Result<(), TensorError> {
        let fits = match self {
            Distribution::Uniform | Distribution::Normal => dtype.is_field(),
            Distribution::Integers { .. } => dtype.is_integer(),
            Distribution::Bits => dtype == DType::Bool,
        };
        if !fits {
            return Err(TensorError::Unsupported {
                op: self.name(),
                dtype,
            });
        }
        if let Distribution::Integers { low, high } = self {
            if low >= high {
                return Err(TensorError::Argument {
                    op: "random",
                    argument: "low..high",
                    value: format!("{low}..{high}"),
                    must: "a nonempty interval (low < high)",
                });
            }
            if dtype == DType::I32
                && (i32::try_from(low).is_err() || i32::try_from(high - 1).is_err())
            {
                return Err(TensorError::Argument {
                    op: "random",
                    argument: "low..high",
                    value: format!("{low}..{high}"),
                    must: "within i32's range",
                });
            }
        }
        Ok(())
    }

    /// The distribution's name in errors.
    pub fn name(self) -> &'static str {
        match self {
            Distribution::Uniform => "uniform random",
            Distribution::Normal => "normal random",
            Distribution::Integers { .. } => "random integers",
            Distribution::Bits => "random bits",
        }
    }
}

/// A seeded random tensor. Element `i` depends only on `seed` and `i`, so
/// the same seed gives the same data on any domain and with any number of
/// threads.
///
/// # Errors
///
/// [`TensorError::TooLarge`]; as [`Distribution::check`].
fn random(
    dtype: DType,
    shape: &[usize],
    distribution: Distribution,
    seed: u64,
) -> Result<Tensor, TensorError> {
    let n = element_count(shape).ok_or_else(|| TensorError::TooLarge {
        shape: shape.to_vec(),
    })?;
    distribution.check(dtype)?;
    let bits = |i: usize| mix(seed, i as u64);
    match distribution {
        Distribution::Integers { low, high } => {
            // Lemire's multiply-shift maps 64 random bits onto the span
            // (`high - low` ≤ 2^64 - 1): bias below 2^-64 · span, none a
            // test could see.
            let span = high.abs_diff(low);
            let draw = move |i: usize| {
                let offset = ((u128::from(bits(i)) * u128::from(span)) >> 64) as u64;
                low.wrapping_add(offset as i64)
            };
            let data = match dtype {
                DType::I32 => Data::I32((0..n).map(|i| draw(i) as i32).collect()),
                _ => Data::I64((0..n).map(draw).collect()),
            };
            return Tensor::from_data(data, shape);
        }
        Distribution::Bits => {
            let data = Data::Bool((0..n).map(|i| bits(i) >> 63 == 1).collect());
            return Tensor::from_data(data, shape);
        }
        Distribution::Uniform | Distribution::Normal => {}
    }
    // Stream `s` of element `i`: real parts use stream 0, imaginary parts 1.
    let draw = |i: usize, s: u64| -> f64 {
        let key = seed ^ s.wrapping_mul(0xD6E8_FEB8_6659_FD93);
        if distribution == Distribution::Normal {
            // Box–Muller on two uniforms of the element's own counter.
            let u1 = 1.0 - unit(mix(key, 2 * i as u64));
            let u2 = unit(mix(key, 2 * i as u64 + 1));
            (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
        } else {
            unit(mix(key, 2 * i as u64))
        }
    };
    // A real type draws no imaginary parts.
    let im = |i: usize| if dtype.is_complex() { draw(i, 1) } else { 0.0 };
    let data = for_field!(dtype, |T| T::wrap(
        (0..n).map(|i| T::from_parts(draw(i, 0), im(i))).collect()
    ), else unreachable!("checked: a float distribution"));
    Tensor::from_data(data, shape)
}

impl Tensor {
    /// A seeded random host tensor: the one [`crate::TensorOp::Random`]
    /// makes on an engine (element `i` depends only on `seed` and `i`).
    ///
    /// # Errors
    ///
    /// [`TensorError::TooLarge`].
    pub fn random(
        dtype: DType,
        shape: &[usize],
        distribution: Distribution,
        seed: u64,
    ) -> Result<Tensor, TensorError> {
        random(dtype, shape, distribution, seed)
    }
}

/// splitmix64 of `key + counter`: a counter-based generator.
fn mix(key: u64, counter: u64) -> u64 {
    let mut z = key.wrapping_add(counter.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The top 53 bits as a float in `[0, 1)`.
fn unit(bits: u64) -> f64 {
    (bits >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::c64;

    #[test]
    fn random_is_seeded_and_distributed() {
        let a = random(DType::F64, &[100_000], Distribution::Normal, 42).unwrap();
        let b = random(DType::F64, &[100_000], Distribution::Normal, 42).unwrap();
        let c = random(DType::F64, &[100_000], Distribution::Normal, 43).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let v = a.as_slice::<f64>().unwrap();
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / v.len() as f64;
        // Standard errors at n = 1e5: 0.003 for the mean, 0.0045 for the variance.
        assert!(
            mean.abs() < 0.02 && (var - 1.0).abs() < 0.03,
            "{mean} {var}"
        );
        let u = random(DType::F32, &[50_000], Distribution::Uniform, 7).unwrap();
        let u = u.as_slice::<f32>().unwrap();
        assert!(u.iter().all(|&x| (0.0..1.0).contains(&x)));
        let mean = u.iter().map(|&x| f64::from(x)).sum::<f64>() / u.len() as f64;
        assert!((mean - 0.5).abs() < 0.01, "{mean}");
        // A prefix of a longer draw equals the shorter draw: element i
        // depends on (seed, i) only.
        let short = random(DType::C64, &[10], Distribution::Normal, 9).unwrap();
        let long = random(DType::C64, &[20], Distribution::Normal, 9).unwrap();
        assert_eq!(
            short.as_slice::<c64>().unwrap(),
            &long.as_slice::<c64>().unwrap()[..10]
        );
    }
}
