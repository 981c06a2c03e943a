//! Element-type dispatch: the one place that matches a tensor's elements
//! by type. A kernel is written once, generic over [`Element`], and these
//! macros pick its instance (candle's `Map1`/`Map2`, as macros, so that a
//! kernel is a closure-like body rather than a trait impl per op).
//!
//! - `for_dtype!(dtype, |T| body)`: `body` with the type alias `T` bound
//!   to `dtype`'s element type.
//! - `with_data!(data, |v| body)`: `body` with `v` bound to the elements,
//!   whatever their type; its value as it is.
//! - `map_data!(data, |v| body)`: as `with_data!`, with `body` a `Vec` of
//!   the same element type, wrapped back into `Data`.
//! - `with_data2!(a, b, |x, y| body, else other)` and `map_data2!`: two
//!   operands of one type, the result as it is or wrapped; `other` when
//!   their types differ.
//! - `map_real!` / `map_real2!`: the same over the real types only, with
//!   `else other` for complex operands.
//!
//! [`Element`]: crate::Element

macro_rules! for_dtype {
    ($dtype:expr, |$t:ident| $body:expr) => {
        match $dtype {
            $crate::DType::F32 => {
                type $t = f32;
                $body
            }
            $crate::DType::F64 => {
                type $t = f64;
                $body
            }
            $crate::DType::C32 => {
                type $t = $crate::c32;
                $body
            }
            $crate::DType::C64 => {
                type $t = $crate::c64;
                $body
            }
        }
    };
}

macro_rules! with_data {
    ($data:expr, |$v:ident| $body:expr) => {
        match $data {
            $crate::Data::F32($v) => $body,
            $crate::Data::F64($v) => $body,
            $crate::Data::C32($v) => $body,
            $crate::Data::C64($v) => $body,
        }
    };
}

macro_rules! map_data {
    ($data:expr, |$v:ident| $body:expr) => {
        match $data {
            $crate::Data::F32($v) => $crate::Data::F32($body),
            $crate::Data::F64($v) => $crate::Data::F64($body),
            $crate::Data::C32($v) => $crate::Data::C32($body),
            $crate::Data::C64($v) => $crate::Data::C64($body),
        }
    };
}

macro_rules! map_data2 {
    ($a:expr, $b:expr, |$x:ident, $y:ident| $body:expr, else $other:expr) => {
        match ($a, $b) {
            ($crate::Data::F32($x), $crate::Data::F32($y)) => $crate::Data::F32($body),
            ($crate::Data::F64($x), $crate::Data::F64($y)) => $crate::Data::F64($body),
            ($crate::Data::C32($x), $crate::Data::C32($y)) => $crate::Data::C32($body),
            ($crate::Data::C64($x), $crate::Data::C64($y)) => $crate::Data::C64($body),
            _ => $other,
        }
    };
}

macro_rules! with_data2 {
    ($a:expr, $b:expr, |$x:ident, $y:ident| $body:expr, else $other:expr) => {
        match ($a, $b) {
            ($crate::Data::F32($x), $crate::Data::F32($y)) => $body,
            ($crate::Data::F64($x), $crate::Data::F64($y)) => $body,
            ($crate::Data::C32($x), $crate::Data::C32($y)) => $body,
            ($crate::Data::C64($x), $crate::Data::C64($y)) => $body,
            _ => $other,
        }
    };
}

macro_rules! map_real {
    ($data:expr, |$v:ident| $body:expr, else $other:expr) => {
        match $data {
            $crate::Data::F32($v) => $crate::Data::F32($body),
            $crate::Data::F64($v) => $crate::Data::F64($body),
            _ => $other,
        }
    };
}

macro_rules! map_real2 {
    ($a:expr, $b:expr, |$x:ident, $y:ident| $body:expr, else $other:expr) => {
        match ($a, $b) {
            ($crate::Data::F32($x), $crate::Data::F32($y)) => $crate::Data::F32($body),
            ($crate::Data::F64($x), $crate::Data::F64($y)) => $crate::Data::F64($body),
            _ => $other,
        }
    };
}
