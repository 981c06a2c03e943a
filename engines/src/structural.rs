//! Structural ops: reshape and axis permutation.

use crate::tensor::{element_count, Data, Tensor, TensorError};

/// Checks a reshape of `shape` to `to`.
///
/// # Errors
///
/// [`TensorError::Reshape`] if the element counts differ.
pub fn reshape_meta(shape: &[usize], to: &[usize]) -> Result<Vec<usize>, TensorError> {
    match (element_count(shape), element_count(to)) {
        (Some(a), Some(b)) if a == b => Ok(to.to_vec()),
        _ => Err(TensorError::Reshape {
            from: shape.to_vec(),
            to: to.to_vec(),
        }),
    }
}

/// Checks a permutation of the axes of `shape`: `perm[i]` is the input axis
/// that becomes output axis `i`.
///
/// # Errors
///
/// [`TensorError::Permutation`] unless `perm` is a permutation of the axes.
pub fn permute_meta(shape: &[usize], perm: &[usize]) -> Result<Vec<usize>, TensorError> {
    let mut seen = vec![false; shape.len()];
    let ok = perm.len() == shape.len()
        && perm
            .iter()
            .all(|&p| p < shape.len() && !std::mem::replace(&mut seen[p], true));
    if !ok {
        return Err(TensorError::Permutation {
            perm: perm.to_vec(),
            rank: shape.len(),
        });
    }
    Ok(perm.iter().map(|&p| shape[p]).collect())
}

/// `input` with shape `to` (same elements, same order).
///
/// # Errors
///
/// As [`reshape_meta`].
pub fn reshape(input: &Tensor, to: &[usize]) -> Result<Tensor, TensorError> {
    let shape = reshape_meta(input.shape(), to)?;
    Tensor::from_data(input.data().clone(), &shape)
}

/// `input` with its axes permuted.
///
/// # Errors
///
/// As [`permute_meta`].
pub fn permute(input: &Tensor, perm: &[usize]) -> Result<Tensor, TensorError> {
    let out = permute_meta(input.shape(), perm)?;
    let shape = input.shape();
    let mut strides = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1];
    }
    // Output axis i walks input axis perm[i].
    let walk: Vec<(usize, usize)> = perm.iter().map(|&p| (shape[p], strides[p])).collect();
    fn gather<T: Copy>(v: &[T], walk: &[(usize, usize)]) -> Vec<T> {
        let mut out = Vec::with_capacity(v.len());
        if walk.iter().any(|&(n, _)| n == 0) {
            return out;
        }
        let mut index = vec![0; walk.len()];
        let mut offset = 0;
        loop {
            out.push(v[offset]);
            let mut axis = walk.len();
            loop {
                if axis == 0 {
                    return out;
                }
                axis -= 1;
                let (n, stride) = walk[axis];
                index[axis] += 1;
                offset += stride;
                if index[axis] < n {
                    break;
                }
                offset -= stride * n;
                index[axis] = 0;
            }
        }
    }
    let data = match input.data() {
        Data::F32(v) => Data::F32(gather(v, &walk)),
        Data::F64(v) => Data::F64(gather(v, &walk)),
        Data::C32(v) => Data::C32(gather(v, &walk)),
        Data::C64(v) => Data::C64(gather(v, &walk)),
    };
    Tensor::from_data(data, &out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permute_matches_index_arithmetic() {
        let shape = [2, 3, 4];
        let t = Tensor::from_vec((0..24).map(f64::from).collect::<Vec<_>>(), &shape).unwrap();
        for perm in [
            [0, 1, 2],
            [2, 1, 0],
            [1, 0, 2],
            [0, 2, 1],
            [2, 0, 1],
            [1, 2, 0],
        ] {
            let got = permute(&t, &perm).unwrap();
            let out: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
            assert_eq!(got.shape(), &out[..]);
            let v = got.as_slice::<f64>().unwrap();
            for i in 0..out[0] {
                for j in 0..out[1] {
                    for k in 0..out[2] {
                        let mut src = [0; 3];
                        src[perm[0]] = i;
                        src[perm[1]] = j;
                        src[perm[2]] = k;
                        let want = (src[0] * 12 + src[1] * 4 + src[2]) as f64;
                        assert_eq!(v[(i * out[1] + j) * out[2] + k], want, "{perm:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn reshape_keeps_order_and_checks_counts() {
        let t = Tensor::from_vec((0..6).map(f64::from).collect::<Vec<_>>(), &[2, 3]).unwrap();
        let r = reshape(&t, &[3, 1, 2]).unwrap();
        assert_eq!(r.as_slice::<f64>().unwrap(), t.as_slice::<f64>().unwrap());
        let err = reshape(&t, &[4, 2]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot reshape [2, 3] (6 elements) to [4, 2] (8 elements)"
        );
        let err = permute(&t, &[0, 0]).unwrap_err();
        assert_eq!(err.to_string(), "[0, 0] is not a permutation of the 2 axes");
        let e = Tensor::from_vec(Vec::<f32>::new(), &[0, 3]).unwrap();
        assert_eq!(permute(&e, &[1, 0]).unwrap().shape(), &[3, 0]);
    }
}
