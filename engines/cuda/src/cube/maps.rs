//! The unary maps of the real types (`f32`, `f64`) as cubecl kernels, one
//! per op: what `unary_f32` and `unary_f64` of `cu/elementwise.cu` did with
//! a switch on the op's code. The complex types keep the source's kernel
//! (cubecl has no complex element), and so does the magnitude.
//!
//! Each kernel computes what the source's does, formula for formula
//! (`rsqrt` is `1 / sqrt(x)`, `sign` keeps a zero's sign and a NaN), but
//! `expm1`, which cubecl lacks: it is Kahan's `(u − 1)·x / ln u` with
//! `u = eˣ`, accurate to a few ulps where `eˣ − 1` would lose every digit
//! near 0, and exact at its edges (`u = 1`: x; `u = 0`: −1; `u = ∞`: ∞);
//! the product is taken as `(u − 1)·(x / ln u)`, which cannot overflow
//! where `eˣ` is finite.

use cubecl_core as cubecl;
use cubecl_core::ir::Scope;
use cubecl_core::prelude::*;
use weft_core::ops::UnaryOp;
use weft_core::DType;

use super::{CubeArgs, CubeError, CubeKernel, CubeKey, CubeSource, MakeSource, Signature};

/// One thread per element: `out[i] = f(x[i])`.
macro_rules! unary_maps {
    ($($op:ident $name:literal |$x:ident| $body:block)*) => {
        $(
            /// The op's kernel and its description for weft.
            #[allow(non_snake_case, unused_braces)]
            mod $op {
                use super::*;

                #[cube]
                fn map<F: Float>(input: &Array<F>, out: &mut Array<F>) {
                    if ABSOLUTE_POS < out.len() {
                        let $x = input[ABSOLUTE_POS];
                        out[ABSOLUTE_POS] = $body;
                    }
                }

                pub(crate) struct Kernel;

                impl CubeKernel for Kernel {
                    const NAME: &'static str = $name;
                    const SIGNATURE: Signature = Signature {
                        inputs: 1,
                        outputs: 1,
                        scalars: 0,
                    };
                    fn expand<F: Float + CubeElement>(scope: &mut Scope, a: &CubeArgs<F>) {
                        map::expand::<F>(scope, a.input(0), a.output(0));
                    }
                }
            }
        )*

        /// The cubecl kernel of unary op `op` for real types, if it has one.
        pub(crate) fn unary_kernel(op: UnaryOp) -> Option<CubeMap> {
            match op {
                $(UnaryOp::$op => Some(CubeMap::of::<$op::Kernel>()),)*
                _ => None,
            }
        }

        /// Every map kernel weft compiles with cubecl: its name and its
        /// source for an element type.
        pub(super) const MAPS: &[(&str, MakeSource)] = &[
            $(($name, super::cube_source::<$op::Kernel>),)*
        ];
    };
}

unary_maps! {
    Neg "unary_neg" |x| { -x }
    Abs "unary_abs" |x| { F::abs(x) }
    Sign "unary_sign" |x| {
        select(x > F::new(0.0), F::new(1.0), select(x < F::new(0.0), F::new(-1.0), x))
    }
    Conj "unary_conj" |x| { x }
    Exp "unary_exp" |x| { F::exp(x) }
    Log "unary_log" |x| { F::ln(x) }
    Expm1 "unary_expm1" |x| {
        let u = F::exp(x);
        let um1 = u - F::new(1.0);
        // x / ln u first: it is near 1, so no overflow where eˣ is large.
        let kahan = um1 * (x / F::ln(u));
        // u + u == u only at ∞ (and at 0, answered before).
        let edge = select(u + u == u, u, kahan);
        select(u == F::new(1.0), x, select(um1 == F::new(-1.0), um1, edge))
    }
    Log1p "unary_log1p" |x| { F::log1p(x) }
    Sqrt "unary_sqrt" |x| { F::sqrt(x) }
    Rsqrt "unary_rsqrt" |x| { F::new(1.0) / F::sqrt(x) }
    Sin "unary_sin" |x| { F::sin(x) }
    Cos "unary_cos" |x| { F::cos(x) }
    Tanh "unary_tanh" |x| { F::tanh(x) }
}

/// A map's cache key and source, for the engine.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CubeMap {
    pub(crate) key: fn(DType) -> CubeKey,
    pub(crate) source: fn(DType) -> Result<std::sync::Arc<CubeSource>, CubeError>,
}

impl CubeMap {
    fn of<K: CubeKernel>() -> CubeMap {
        CubeMap {
            key: super::key::<K>,
            source: super::cube_source_cached::<K>,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every unary op of the real types has its own cubecl kernel, and
    /// the list CI compiles is exactly those.
    #[test]
    fn every_real_unary_op_has_its_kernel() {
        let real: Vec<UnaryOp> = UnaryOp::ALL
            .into_iter()
            .filter(|op| op.supports(DType::F64))
            .collect();
        let mut keys = Vec::new();
        for &op in &real {
            let map = unary_kernel(op).unwrap_or_else(|| panic!("no kernel for {}", op.name()));
            let source = (map.source)(DType::F32).unwrap();
            assert_eq!(source.entry, format!("unary_{}_f32", op.name()));
            keys.push((map.key)(DType::F32));
        }
        keys.sort_by_key(|k| format!("{k:?}"));
        keys.dedup();
        assert_eq!(keys.len(), real.len());
        assert!(unary_kernel(UnaryOp::Not).is_none());
        let names: Vec<String> = real
            .iter()
            .map(|op| format!("unary_{}", op.name()))
            .collect();
        let listed: Vec<String> = MAPS.iter().map(|(n, _)| (*n).to_owned()).collect();
        assert_eq!(names, listed);
    }
}
