//! The wire format of a tensor between ranks: a header of fixed size (a
//! magic word, the element type's code, the axes and their extents) on
//! tag `2t`, the elements' bytes on tag `2t + 1`.

use weft_core::DType;

use crate::MAX_AXES;

pub(crate) const MAGIC: u64 = 0x7765_6674_5f74_656e;
pub(crate) const HEADER_WORDS: usize = 3 + MAX_AXES;

/// A type's code in headers and signatures: its place in [`DType::ALL`].
pub(crate) fn dtype_code(dtype: DType) -> u64 {
    DType::ALL.iter().position(|&d| d == dtype).unwrap_or(0) as u64
}

/// The header of a tensor of `dtype` and `shape` (at most [`MAX_AXES`]
/// axes, checked by the caller).
pub(crate) fn header(dtype: DType, shape: &[usize]) -> Vec<u64> {
    let mut header = vec![0u64; HEADER_WORDS];
    header[0] = MAGIC;
    header[1] = dtype_code(dtype);
    header[2] = shape.len() as u64;
    for (w, &d) in header[3..].iter_mut().zip(shape) {
        *w = d as u64;
    }
    header
}

/// The type and shape a header announces, if it is a weft header.
pub(crate) fn parse_header(words: &[u64]) -> Option<(DType, Vec<usize>)> {
    if words.len() != HEADER_WORDS || words[0] != MAGIC {
        return None;
    }
    let dtype = *DType::ALL.get(usize::try_from(words[1]).ok()?)?;
    let axes = usize::try_from(words[2]).ok().filter(|&a| a <= MAX_AXES)?;
    let shape = words[3..3 + axes]
        .iter()
        .map(|&d| usize::try_from(d).ok())
        .collect::<Option<Vec<_>>>()?;
    Some((dtype, shape))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_strangers_are_refused() {
        let mut words = vec![0u64; HEADER_WORDS];
        words[0] = MAGIC;
        words[1] = dtype_code(DType::C32);
        words[2] = 2;
        words[3] = 4;
        words[4] = 5;
        assert_eq!(parse_header(&words), Some((DType::C32, vec![4, 5])));
        words[2] = MAX_AXES as u64 + 1;
        assert_eq!(parse_header(&words), None);
        words[2] = 2;
        words[0] = 7;
        assert_eq!(parse_header(&words), None);
    }
}
