//! Element-type dispatch: the one place that matches a tensor's elements
//! by type. A kernel is written once, generic over [`Element`] (or one of
//! its families), and these macros pick its instance (candle's
//! `Map1`/`Map2`, as macros, so that a kernel is a closure-like body
//! rather than a trait impl per op).
//!
//! Over every element type (the body must compile for all seven):
//! - `for_dtype!(dtype, |T| body)`: `body` with the type alias `T` bound
//!   to `dtype`'s element type.
//! - `with_data!(data, |v| body)`: `body` with `v` bound to the elements,
//!   whatever their type; its value as it is.
//! - `map_data!(data, |v| body)`: as `with_data!`, with `body` a `Vec` of
//!   the same element type, wrapped back into `Data`.
//! - `with_data2!(a, b, |x, y| body, else other)` and `map_data2!`: two
//!   operands of one type, the result as it is or wrapped; `other` when
//!   their types differ.
//!
//! Over one family, with `else other` for the types outside it:
//! - `for_field!`, `with_field!`, `map_field2!`: the floats
//!   and complexes ([`Field`]).
//! - `map_real!`, `map_real2!`: the real floats.
//! - `map_int!`, `map_int2!`: the integers.
//!
//! [`Element`]: crate::Element
//! [`Field`]: crate::Field

/// The element types of each family, as `(variant, type)`.
#[doc(hidden)]
#[macro_export]
macro_rules! family {
    (all, $m:ident!($($args:tt)*)) => {
        $crate::$m!([(F32, f32), (F64, f64), (C32, $crate::c32), (C64, $crate::c64),
             (I32, i32), (I64, i64), (Bool, bool)], $($args)*)
    };
    (field, $m:ident!($($args:tt)*)) => {
        $crate::$m!([(F32, f32), (F64, f64), (C32, $crate::c32), (C64, $crate::c64)], $($args)*)
    };
    (real, $m:ident!($($args:tt)*)) => {
        $crate::$m!([(F32, f32), (F64, f64)], $($args)*)
    };
    (int, $m:ident!($($args:tt)*)) => {
        $crate::$m!([(I32, i32), (I64, i64)], $($args)*)
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! by_dtype {
    ([$(($variant:ident, $ty:ty)),*], $dtype:expr, |$t:ident| $body:expr, $other:expr) => {{
        #[allow(unreachable_patterns)]
        let value = match $dtype {
            $($crate::DType::$variant => {
                type $t = $ty;
                $body
            })*
            _ => $other,
        };
        value
    }};
}

#[doc(hidden)]
#[macro_export]
macro_rules! by_data {
    ([$(($variant:ident, $ty:ty)),*], $data:expr, |$v:ident| $body:expr, $other:expr) => {{
        #[allow(unreachable_patterns)]
        let value = match $data {
            $($crate::Data::$variant($v) => $body,)*
            _ => $other,
        };
        value
    }};
}

#[doc(hidden)]
#[macro_export]
macro_rules! by_data_wrapped {
    ([$(($variant:ident, $ty:ty)),*], $data:expr, |$v:ident| $body:expr, $other:expr) => {{
        #[allow(unreachable_patterns)]
        let value = match $data {
            $($crate::Data::$variant($v) => $crate::Data::$variant($body),)*
            _ => $other,
        };
        value
    }};
}

#[doc(hidden)]
#[macro_export]
macro_rules! by_data2 {
    ([$(($variant:ident, $ty:ty)),*], $a:expr, $b:expr, |$x:ident, $y:ident| $body:expr, $other:expr) => {{
        #[allow(unreachable_patterns)]
        let value = match ($a, $b) {
            $(($crate::Data::$variant($x), $crate::Data::$variant($y)) => $body,)*
            _ => $other,
        };
        value
    }};
}

#[doc(hidden)]
#[macro_export]
macro_rules! by_data2_wrapped {
    ([$(($variant:ident, $ty:ty)),*], $a:expr, $b:expr, |$x:ident, $y:ident| $body:expr, $other:expr) => {{
        #[allow(unreachable_patterns)]
        let value = match ($a, $b) {
            $(($crate::Data::$variant($x), $crate::Data::$variant($y)) =>
                $crate::Data::$variant($body),)*
            _ => $other,
        };
        value
    }};
}

/// `for_dtype!(dtype, |T| body)`: `body` with the type alias `T` bound to `dtype`'s element type.
#[macro_export]
macro_rules! for_dtype {
    ($dtype:expr, |$t:ident| $body:expr) => {
        $crate::family!(
            all,
            by_dtype!($dtype, |$t| $body, unreachable!("every type has an arm"))
        )
    };
}

/// `for_field!(dtype, |T| body, else other)`: as `for_dtype!`, over the floats and complexes.
#[macro_export]
macro_rules! for_field {
    ($dtype:expr, |$t:ident| $body:expr, else $other:expr) => {
        $crate::family!(field, by_dtype!($dtype, |$t| $body, $other))
    };
}

/// `with_data!(data, |v| body)`: `body` with `v` bound to the elements, whatever their type.
#[macro_export]
macro_rules! with_data {
    ($data:expr, |$v:ident| $body:expr) => {
        $crate::family!(
            all,
            by_data!($data, |$v| $body, unreachable!("every type has an arm"))
        )
    };
}

/// `map_data!(data, |v| body)`: as `with_data!`, `body` a `Vec` of the same type, wrapped back into `Data`.
#[macro_export]
macro_rules! map_data {
    ($data:expr, |$v:ident| $body:expr) => {
        $crate::family!(
            all,
            by_data_wrapped!($data, |$v| $body, unreachable!("every type has an arm"))
        )
    };
}

/// `with_data2!(a, b, |x, y| body, else other)`: two operands of one type; `other` when their types differ.
#[macro_export]
macro_rules! with_data2 {
    ($a:expr, $b:expr, |$x:ident, $y:ident| $body:expr, else $other:expr) => {
        $crate::family!(all, by_data2!($a, $b, |$x, $y| $body, $other))
    };
}

/// `map_data2!(a, b, |x, y| body, else other)`: as `with_data2!`, the result wrapped back into `Data`.
#[macro_export]
macro_rules! map_data2 {
    ($a:expr, $b:expr, |$x:ident, $y:ident| $body:expr, else $other:expr) => {
        $crate::family!(all, by_data2_wrapped!($a, $b, |$x, $y| $body, $other))
    };
}

/// `with_field!(data, |v| body, else other)`: as `with_data!`, over the floats and complexes.
#[macro_export]
macro_rules! with_field {
    ($data:expr, |$v:ident| $body:expr, else $other:expr) => {
        $crate::family!(field, by_data!($data, |$v| $body, $other))
    };
}

/// `map_field2!(a, b, |x, y| body, else other)`: as `map_data2!`, over the floats and complexes.
#[macro_export]
macro_rules! map_field2 {
    ($a:expr, $b:expr, |$x:ident, $y:ident| $body:expr, else $other:expr) => {
        $crate::family!(field, by_data2_wrapped!($a, $b, |$x, $y| $body, $other))
    };
}

/// `map_real!(data, |v| body, else other)`: as `map_data!`, over the real floats.
#[macro_export]
macro_rules! map_real {
    ($data:expr, |$v:ident| $body:expr, else $other:expr) => {
        $crate::family!(real, by_data_wrapped!($data, |$v| $body, $other))
    };
}

/// `map_real2!(a, b, |x, y| body, else other)`: as `map_data2!`, over the real floats.
#[macro_export]
macro_rules! map_real2 {
    ($a:expr, $b:expr, |$x:ident, $y:ident| $body:expr, else $other:expr) => {
        $crate::family!(real, by_data2_wrapped!($a, $b, |$x, $y| $body, $other))
    };
}

/// `map_int!(data, |v| body, else other)`: as `map_data!`, over the integers.
#[macro_export]
macro_rules! map_int {
    ($data:expr, |$v:ident| $body:expr, else $other:expr) => {
        $crate::family!(int, by_data_wrapped!($data, |$v| $body, $other))
    };
}

/// `map_int2!(a, b, |x, y| body, else other)`: as `map_data2!`, over the integers.
#[macro_export]
macro_rules! map_int2 {
    ($a:expr, $b:expr, |$x:ident, $y:ident| $body:expr, else $other:expr) => {
        $crate::family!(int, by_data2_wrapped!($a, $b, |$x, $y| $body, $other))
    };
}
