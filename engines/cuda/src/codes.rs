//! The op codes the kernels switch on, made from the vocabulary's own
//! enums: an op's code is its discriminant, and the kernels' source names
//! each code through a `#define` written here from the enum's `ALL` list
//! and the op's name (`BINARY_FLOOR_DIV`, `UNARY_RSQRT`, `COMPARE_GE`,
//! `REDUCE_MEAN`). A new op gets its code and its name in the source from
//! its enum; the source fails to compile if it names an op the enum lacks.

use std::fmt::Write;

use weft_core::ops::{BinaryOp, CmpOp, ReduceOp, UnaryOp};

/// The `binary` kernels' code of `op`.
pub(crate) fn binary(op: BinaryOp) -> i32 {
    op as i32
}

/// The `unary` kernels' code of `op`.
pub(crate) fn unary(op: UnaryOp) -> i32 {
    op as i32
}

/// The `compare` kernels' code of `op`.
pub(crate) fn compare(op: CmpOp) -> i32 {
    op as i32
}

/// The `reduce` kernels' code of `op` (a norm has kernels of its own).
pub(crate) fn reduce(op: ReduceOp) -> i32 {
    op as i32
}

/// The source's `#define`s of every code: `<FAMILY>_<NAME> <code>`, one
/// line each.
pub(crate) fn defines() -> String {
    let mut out = String::new();
    let mut define = |family: &str, name: &str, code: i32| {
        let name = name.to_ascii_uppercase();
        // Writing to a `String` cannot fail.
        let _ = writeln!(out, "#define {family}_{name} {code}");
    };
    for op in BinaryOp::ALL {
        define("BINARY", op.name(), binary(op));
    }
    for op in UnaryOp::ALL {
        define("UNARY", op.name(), unary(op));
    }
    for op in CmpOp::ALL {
        define("COMPARE", op.name(), compare(op));
    }
    for op in ReduceOp::ALL {
        define("REDUCE", op.name(), reduce(op));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each family's codes are distinct, so no two ops share a `case`.
    fn distinct(codes: impl Iterator<Item = i32>) -> bool {
        let mut seen: Vec<i32> = codes.collect();
        let n = seen.len();
        seen.sort_unstable();
        seen.dedup();
        seen.len() == n
    }

    #[test]
    fn every_op_has_a_code_of_its_own() {
        assert!(distinct(BinaryOp::ALL.into_iter().map(binary)));
        assert!(distinct(UnaryOp::ALL.into_iter().map(unary)));
        assert!(distinct(CmpOp::ALL.into_iter().map(compare)));
        assert!(distinct(ReduceOp::ALL.into_iter().map(reduce)));
    }

    #[test]
    fn the_defines_name_each_op_by_its_code() {
        let d = defines();
        assert!(d.contains(&format!(
            "#define BINARY_FLOOR_DIV {}\n",
            binary(BinaryOp::FloorDiv)
        )));
        assert!(d.contains(&format!("#define UNARY_NOT {}\n", unary(UnaryOp::Not))));
        assert!(d.contains(&format!("#define COMPARE_GE {}\n", compare(CmpOp::Ge))));
        assert!(d.contains(&format!("#define REDUCE_ALL {}\n", reduce(ReduceOp::All))));
        let lines = d.lines().count();
        assert_eq!(
            lines,
            BinaryOp::ALL.len() + UnaryOp::ALL.len() + CmpOp::ALL.len() + ReduceOp::ALL.len()
        );
    }

    #[test]
    fn the_source_names_ops_only_through_the_defines() {
        // Every `case` of the kernels' switches and every test of an op
        // code is a name, never a number a comment would have to keep in
        // step.
        for (file, text) in super::super::kernels::SOURCES {
            for line in text.lines() {
                let t = line.trim_start();
                let named = |after: &str| after.starts_with(|c: char| c.is_ascii_uppercase());
                if let Some(rest) = t.strip_prefix("case ") {
                    assert!(named(rest), "{file}: `{t}`");
                }
                for test in ["op == ", "op != "] {
                    for (at, _) in t.match_indices(test) {
                        assert!(named(&t[at + test.len()..]), "{file}: `{t}`");
                    }
                }
            }
        }
    }
}
