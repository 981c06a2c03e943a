//! Panics and faults: the text of a panic payload, and the test-only hook
//! that ends an actor thread the way a fatal bug would.

use std::any::Any;

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

/// The text of a panic payload.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if is_kill(payload) {
        "killed by the fault-injection hook".to_owned()
    } else if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}
