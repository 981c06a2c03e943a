//! Panics and faults: the text of a panic payload, and the test-only hook
//! that ends an actor thread the way a fatal bug would.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The payload that [`kill_actor`] unwinds with.
#[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
struct KillActor;

/// Whether a panic payload came from [`kill_actor`]: the op runner lets it
/// through instead of catching it.
pub(crate) fn is_kill(payload: &(dyn Any + Send)) -> bool {
    cfg!(feature = "fault-injection") && payload.is::<KillActor>()
}

/// Called from inside an op, ends the actor thread as an uncatchable fault
/// would: the running op and every queued op resolve with `ActorLost`, the
/// actor's lanes close, other actors carry on.
#[cfg(feature = "fault-injection")]
pub fn kill_actor() -> ! {
    std::panic::resume_unwind(Box::new(KillActor))
}

/// Runs `f`, a call into a user's code (it runs, drops or formats a
/// user's value), so that a panic there cannot unwind into the caller: the
/// panic comes back as its message, its payload dropped under the same
/// guard.
pub(crate) fn isolate<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(take_message)
}

/// Drops a value nobody owns any more; a panicking `Drop` is contained.
pub(crate) fn drop_isolated<V>(value: V) {
    let _ = isolate(move || drop(value));
}

/// The text of a panic payload, and the payload dropped. A payload whose
/// own `Drop` panics is leaked rather than unwound: that second panic
/// would otherwise escape the guard that caught the first.
pub(crate) fn take_message(payload: Box<dyn Any + Send>) -> String {
    let message = panic_message(&*payload);
    if let Err(inner) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(inner);
    }
    message
}

/// The text of a panic payload: a `&str` or `String` as it is, a boxed
/// error's `Display`, a number, `bool` or `char` with its type, and the
/// kind of payload otherwise (the type of a `dyn Any` cannot be named).
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    macro_rules! shown {
        ($($t:ty),*) => {
            $(if let Some(v) = payload.downcast_ref::<$t>() {
                return format!("panic payload of type {}: {v:?}", stringify!($t));
            })*
        };
    }
    if is_kill(payload) {
        return "killed by the fault-injection hook".to_owned();
    }
    if let Some(s) = payload.downcast_ref::<&str>() {
        return (*s).to_owned();
    }
    if let Some(s) = payload.downcast_ref::<String>() {
        return s.clone();
    }
    if let Some(e) = payload.downcast_ref::<Box<dyn std::error::Error + Send + Sync>>() {
        return match catch_unwind(AssertUnwindSafe(|| e.to_string())) {
            Ok(text) => text,
            Err(inner) => {
                std::mem::forget(inner);
                "a boxed error whose Display panicked".to_owned()
            }
        };
    }
    shown!(i8, i16, i32, i64, i128, u8, u16, u32, u64, u128, usize, isize, f32, f64, bool, char);
    "panic payload of a type other than &str, String, a boxed error, a number, bool or char"
        .to_owned()
}
