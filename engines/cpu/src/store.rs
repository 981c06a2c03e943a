//! The resident store: the tensors a domain holds, by id.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use weft_core::Tensor;
use weft_core::{NotResident, TensorId};

/// Ids (and the plan caches' keys, hashes already) are integers that need
/// no hashing of their own: spread them by one multiply.
#[derive(Default)]
pub(super) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The tensors resident in one domain.
#[derive(Default)]
pub struct Store {
    tensors: HashMap<TensorId, Tensor, BuildHasherDefault<IdHasher>>,
    bytes: usize,
}

impl Store {
    /// Stores `tensor` under `id`, replacing any tensor there.
    pub fn insert(&mut self, id: TensorId, tensor: Tensor) {
        self.bytes += bytes(&tensor);
        if let Some(old) = self.tensors.insert(id, tensor) {
            self.bytes -= bytes(&old);
        }
    }

    /// The tensor under `id`.
    ///
    /// # Errors
    ///
    /// [`NotResident`] if there is none.
    pub fn get(&self, id: TensorId) -> Result<&Tensor, NotResident> {
        self.tensors.get(&id).ok_or(NotResident(id))
    }

    /// Removes and returns the tensor under `id`, if any.
    pub fn remove(&mut self, id: TensorId) -> Option<Tensor> {
        let tensor = self.tensors.remove(&id)?;
        self.bytes -= bytes(&tensor);
        Some(tensor)
    }

    /// Number of resident tensors.
    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    /// Whether no tensor is resident.
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// Bytes of element data resident.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("tensors", &self.tensors.len())
            .field("bytes", &self.bytes)
            .finish()
    }
}

fn bytes(t: &Tensor) -> usize {
    t.len() * t.dtype().size()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_get_remove_account_bytes() {
        let mut store = Store::default();
        let a = Tensor::from_vec(vec![1.0f64; 6], &[2, 3]).unwrap();
        store.insert(TensorId(7), a.clone());
        assert_eq!((store.len(), store.bytes()), (1, 48));
        assert_eq!(store.get(TensorId(7)).unwrap(), &a);
        let err = store.get(TensorId(8)).unwrap_err();
        assert_eq!(err, NotResident(TensorId(8)));
        assert!(err.to_string().contains("TensorId(8)"));
        assert_eq!(store.remove(TensorId(7)), Some(a));
        assert!(store.is_empty() && store.bytes() == 0);
        assert_eq!(store.remove(TensorId(7)), None);
    }
}
