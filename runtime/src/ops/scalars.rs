//! Host scalars out of resident tensors: `item` and `items`, one round trip
//! and no tensor for the caller to manage.

use weft_actors::Ticket;
use weft_core::{element_count, Element, TensorEngine, TensorError};

use crate::error::OpError;
use crate::handle::TensorHandle;
use crate::lane::Lane;

impl<E: TensorEngine> Lane<E> {
    /// The one element of `handle`'s tensor (a scalar, or any shape that
    /// holds one element: `[1, 1]`), as a host value of type `T`. One op
    /// and one round trip; nothing for the caller to download or free.
    ///
    /// ```
    /// use weft::prelude::*;
    /// let rt = weft::Runtime::builder().split(1).build()?;
    /// let lane = rt.lane(0)?;
    /// let x = lane.upload(weft::Tensor::from_vec(vec![3.0f64, 4.0], &[2])?)?;
    /// let squared = lane.dot(&x, &x)?;
    /// assert_eq!(lane.item::<f64>(&squared)?.wait()?, 25.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// At the call, nothing submitted: [`TensorError::DType`] when the
    /// tensor's type is not `T`, [`TensorError::NotOneElement`] when it
    /// does not hold one element, and the handle errors of
    /// [`Lane::download`]. The ticket fails with `DependencyFailed` if the
    /// op that produced the tensor failed.
    pub fn item<T: Element>(&self, handle: &TensorHandle) -> Result<Ticket<T, OpError>, OpError> {
        self.read_items("item", &[handle], |mut values: Vec<T>| {
            values.pop().expect("one value")
        })
    }

    /// The one element of each tensor of `handles` (all of this lane's
    /// domain, all of type `T`), in order, in one op and one round trip:
    /// the scalars of an iteration (a Lanczos step's α and β, a norm and
    /// an overlap) read together.
    ///
    /// # Errors
    ///
    /// As [`Lane::item`], for each handle.
    pub fn items<T: Element>(
        &self,
        handles: &[&TensorHandle],
    ) -> Result<Ticket<Vec<T>, OpError>, OpError> {
        self.read_items("items", handles, |values| values)
    }

    /// Checks `handles` for `op` and submits one op that reads the one
    /// element of each, after its producer, and gives them to `finish`.
    fn read_items<T: Element, R: Send + 'static>(
        &self,
        op: &'static str,
        handles: &[&TensorHandle],
        finish: impl FnOnce(Vec<T>) -> R + Send + 'static,
    ) -> Result<Ticket<R, OpError>, OpError> {
        for handle in handles {
            self.check(op, handle)?;
            if handle.dtype() != T::DTYPE {
                return Err(TensorError::DType {
                    expected: T::DTYPE,
                    got: handle.dtype(),
                }
                .into());
            }
            let elements = element_count(handle.shape()).unwrap_or(usize::MAX);
            if elements != 1 {
                return Err(TensorError::NotOneElement {
                    op,
                    shape: handle.shape().to_vec(),
                    elements,
                }
                .into());
            }
        }
        let held: Vec<TensorHandle> = handles.iter().map(|&h| h.clone()).collect();
        let events: Vec<_> = held.iter().map(TensorHandle::ready).collect();
        let lane = self.actor_lane().id();
        self.submit_op(op, events, None, move |engine: &mut E, _| {
            let values = held
                .iter()
                .map(|h| -> Result<T, OpError> {
                    let tensor = engine.download(h.id(), lane)?;
                    Ok(tensor.as_slice::<T>()?[0])
                })
                .collect::<Result<Vec<T>, OpError>>()?;
            Ok(finish(values))
        })
    }
}
