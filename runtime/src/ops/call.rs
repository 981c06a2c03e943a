//! Functions written once and run either way: [`Function`], a user's
//! computation generic over the vocabulary, and [`Lane::call`], which
//! traces it into a program on first use per input types and shapes,
//! keeps the program in the runtime's cache, and runs it as one message
//! thereafter ([`eagerly`] runs it op by op instead).
//!
//! This is `jax.jit` for a language whose closures cannot be generic.
//! JAX traces a Python function by calling it with tracer arrays; here the
//! function's body is a generic method, [`Function::call`], which a lane
//! runs (its tensors are handles) and a recorder records (its tensors are
//! values) — the same code, monomorphized twice. JAX's static arguments
//! are the function's fields: they are part of the cache key (by the
//! type's `Hash` and `Eq`), so a new value of one traces again, while
//! tensors and host scalars are inputs, so new values of them do not.
//! What JAX retraces on — new input shapes or types — retraces here too.

use std::cell::Cell;
use std::hash::Hash;

use weft_core::{DType, Program, Scalar, TensorEngine};

use super::vocabulary::Ops;
use super::CreateOps;
use crate::error::OpError;
use crate::functions::Key;
use crate::handle::TensorHandle;
use crate::lane::Lane;

/// A computation on tensors written once for both modes: `call` is
/// generic over [`Ops`], so [`Lane::call`] can trace it into a program
/// (with a [`weft_core::Recorder`]) and run that, or run it eagerly on a
/// lane. Its fields are its static arguments: part of the key its traced
/// programs are cached by, so they must be `Hash + Eq` and cheap to clone.
///
/// ```
/// use weft::{ops::Function, prelude::*};
///
/// /// `y = α·x + A·x`: `α` a host scalar, so new values of it reuse the
/// /// traced program; `transpose` a static argument.
/// #[derive(Clone, PartialEq, Eq, Hash)]
/// struct Step {
///     transpose: bool,
/// }
///
/// impl Function for Step {
///     fn call<O: Ops>(&self, o: &O, inputs: &[O::Tensor]) -> Result<Vec<O::Tensor>, weft::OpError> {
///         let [a, x, alpha] = inputs else { unreachable!("three inputs") };
///         let spec = if self.transpose { "ji,j->i" } else { "ij,j->i" };
///         let ax = o.einsum(spec, &[a, x])?;
///         Ok(vec![o.add(&o.mul(alpha, x)?, &ax)?])
///     }
/// }
///
/// let rt = weft::Runtime::builder().split(1).build()?;
/// let lane = rt.lane(0)?;
/// let a = lane.upload(Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?)?;
/// let x = lane.upload(Tensor::from_vec(vec![1.0f64, 1.0], &[2])?)?;
/// for alpha in [0.5, 1.5, 2.5] {
///     let y = lane.call(&Step { transpose: false }, &[&a, &x], &[Scalar::Real(alpha)])?;
///     assert_eq!(lane.download(&y[0])?.wait()?.as_slice::<f64>()?, [3.0 + alpha, 7.0 + alpha]);
/// }
/// let traced = lane.memory()?.wait()?.functions;
/// assert_eq!((traced.misses, traced.hits), (1, 2)); // traced once, run three times
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Function: Hash + Eq + Clone + Send + 'static {
    /// The computation: `inputs` are the call's tensors, then one rank-0
    /// tensor per host scalar of the call (see [`Lane::call`]); the result
    /// is the call's outputs, at least one.
    ///
    /// # Errors
    ///
    /// Whatever the ops return: an op that does not fit its inputs (named
    /// by its step when traced), a lane's own errors when run eagerly.
    fn call<O: Ops>(&self, o: &O, inputs: &[O::Tensor]) -> Result<Vec<O::Tensor>, OpError>;

    /// The label of its traced programs, in stats, traces and errors
    /// (by default the type's name, without its path).
    fn label(&self) -> &'static str {
        let name = std::any::type_name::<Self>();
        let plain = name.split('<').next().unwrap_or(name);
        let start = plain.rfind("::").map_or(0, |i| i + 2);
        &name[start..]
    }
}

#[cfg(not(weft_loom))]
thread_local! {
    /// How many [`eagerly`] scopes are running on this thread.
    static EAGER: Cell<usize> = const { Cell::new(0) };
}

#[cfg(weft_loom)]
loom::thread_local! {
    static EAGER: Cell<usize> = Cell::new(0);
}

/// Runs `f` with every [`Lane::call`] this thread makes meanwhile run its
/// function eagerly, op by op, instead of tracing it (as
/// `jax.disable_jit()`): the same code path, for debugging a function or
/// timing it against its program. Scopes nest; each ends even if `f`
/// unwinds.
pub fn eagerly<R>(f: impl FnOnce() -> R) -> R {
    /// Ends the scope even if `f` unwinds.
    struct Scope;
    impl Drop for Scope {
        fn drop(&mut self) {
            let _ = EAGER.try_with(|depth| depth.set(depth.get() - 1));
        }
    }
    EAGER.with(|depth| depth.set(depth.get() + 1));
    let _scope = Scope;
    f()
}

/// Whether an [`eagerly`] scope is running on this thread.
fn eager() -> bool {
    EAGER.with(|depth| depth.get() > 0)
}

impl<E: TensorEngine> Lane<E> {
    /// Runs `function` on `tensors` and host `scalars`: traced into a
    /// program on the first call per input types and shapes, scalar types
    /// and function value, kept in the runtime's cache of traced
    /// functions ([`crate::Builder::function_cache`]; its counters are
    /// `lane.memory()`'s `functions`), and run as **one** op
    /// ([`Lane::run_program_with`]) on every call. Each scalar is a rank-0
    /// input of its own type ([`Scalar::Real`] `f64`, [`Scalar::Complex`]
    /// `c64`, [`Scalar::Int`] `i64`, [`Scalar::Bool`] `bool`; cast it in
    /// the function for another), after the tensors; its value is not part
    /// of the program, so new values do not trace again. Inside an
    /// [`eagerly`] scope the function runs op by op on this lane instead
    /// (each scalar a rank-0 tensor made for the call).
    ///
    /// Under a [`Tape`](crate::program::Tape) a call is taped as its
    /// program run (or as its ops, eagerly), so it has a gradient like any
    /// recorded program.
    ///
    /// # Errors
    ///
    /// The function's own errors, those of tracing it (a step that does
    /// not fit, as [`OpError::Record`]; a function with no outputs), and
    /// as [`Lane::run_program_with`].
    pub fn call<F: Function>(
        &self,
        function: &F,
        tensors: &[&TensorHandle],
        scalars: &[Scalar],
    ) -> Result<Vec<TensorHandle>, OpError> {
        if eager() {
            let mut inputs: Vec<TensorHandle> = tensors.iter().map(|&h| h.clone()).collect();
            for &value in scalars {
                inputs.push(self.full(scalar_dtype(value), &[], value)?);
            }
            return function.call(self, &inputs);
        }
        let metas: smallvec::SmallVec<[(DType, &[usize]); 8]> =
            tensors.iter().map(|h| (h.dtype(), h.shape())).collect();
        let types: smallvec::SmallVec<[DType; 4]> =
            scalars.iter().map(|&s| scalar_dtype(s)).collect();
        let key = Key {
            function,
            inputs: &metas,
            scalars: &types,
        };
        let functions = self.tensors().functions();
        let hash = key.hash();
        let program = match functions.find(hash, &key) {
            Some(program) => program,
            None => {
                let program = trace(function, &metas, &types)?;
                functions.keep(hash, &key, program.clone());
                program
            }
        };
        self.run_program_with(&program, tensors, scalars)
    }
}

/// `function` recorded on placeholders of these types and shapes.
fn trace<F: Function>(
    function: &F,
    inputs: &[(DType, &[usize])],
    scalars: &[DType],
) -> Result<Program, OpError> {
    let program = Program::record(|p| -> Result<(), OpError> {
        let mut values: Vec<_> = inputs.iter().map(|&(d, s)| p.input(d, s)).collect();
        values.extend(scalars.iter().map(|&d| p.input(d, &[])));
        for out in function.call(p, &values)? {
            p.output(out)?;
        }
        Ok(())
    })?;
    Ok(program.labelled(function.label()))
}

/// The type a host scalar has as an input of a call.
fn scalar_dtype(value: Scalar) -> DType {
    match value {
        Scalar::Real(_) => DType::F64,
        Scalar::Complex(_) => DType::C64,
        Scalar::Int(_) => DType::I64,
        Scalar::Bool(_) => DType::Bool,
    }
}
