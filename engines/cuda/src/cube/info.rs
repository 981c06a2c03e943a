//! The argument block of a cubecl kernel: the `info_st` struct its
//! source declares, read back from that source, and the bytes of one
//! launch in its layout (cubecl 0.10's, see the module above).

/// The element types a scalar group of the argument block can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarType {
    /// `float` (`scalars_float`).
    F32,
    /// `double` (`scalars_double`).
    F64,
}

impl ScalarType {
    pub(super) fn size(self) -> usize {
        match self {
            ScalarType::F32 => 4,
            ScalarType::F64 => 8,
        }
    }
}

/// The layout of a kernel's `info_st` argument, as its source declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InfoLayout {
    /// The kernel's buffer parameters (`buffer_0`, `buffer_1`, …).
    pub buffers: usize,
    /// The scalar group: its type and its declared length (the count
    /// rounded up to 8 bytes).
    pub scalars: Option<(ScalarType, usize)>,
    /// `uint32` words of static metadata (0 when the kernel reads none).
    pub static_meta: usize,
    /// Whether the kernel takes the struct at all.
    pub present: bool,
}

impl InfoLayout {
    /// Reads the layout back from the source of entry point `entry`: the
    /// fields of `struct info_st` and the parameters of the entry.
    ///
    /// # Errors
    ///
    /// What weft does not know: a field or parameter of another kind
    /// (tensors' dynamic metadata, tensor maps, other scalar types).
    pub fn of_source(text: &str, entry: &str) -> Result<InfoLayout, String> {
        let head = format!("{entry} (");
        let start = text
            .find(&head)
            .ok_or_else(|| format!("no entry point {entry}"))?
            + head.len();
        let end = text[start..]
            .find(')')
            .ok_or("the entry point's parameters do not close")?;
        let mut buffers = 0;
        let mut present = false;
        for param in text[start..start + end].split(',').map(str::trim) {
            let name = param.rsplit(' ').next().unwrap_or("");
            match name {
                "info" if param.contains("__grid_constant__ info_st") => present = true,
                _ if name == format!("buffer_{buffers}") => buffers += 1,
                "" => {}
                _ => return Err(format!("parameter `{param}`")),
            }
        }
        let mut scalars = None;
        let mut static_meta = 0;
        if present {
            let open = text
                .find("struct info_st {")
                .ok_or("the kernel takes info_st, which the source does not declare")?;
            let body = &text[open + "struct info_st {".len()..];
            let body = &body[..body.find("};").ok_or("info_st does not close")?];
            for field in body.split(';').map(str::trim).filter(|f| !f.is_empty()) {
                let (ty, rest) = field.split_once(' ').ok_or(format!("field `{field}`"))?;
                let (name, count) = rest
                    .strip_suffix(']')
                    .and_then(|r| r.split_once('['))
                    .ok_or(format!("field `{field}`"))?;
                let count: usize = count.parse().map_err(|_| format!("field `{field}`"))?;
                match (ty, name) {
                    ("float", "scalars_float") if scalars.is_none() => {
                        scalars = Some((ScalarType::F32, count));
                    }
                    ("double", "scalars_double") if scalars.is_none() => {
                        scalars = Some((ScalarType::F64, count));
                    }
                    ("uint32", "static_meta") => static_meta = count,
                    _ => return Err(format!("field `{field}`")),
                }
            }
        }
        Ok(InfoLayout {
            buffers,
            scalars,
            static_meta,
            present,
        })
    }

    /// The argument block for one launch: `scalars` (converted to the
    /// group's type), then each buffer's length in elements twice over
    /// (buffer length, then logical length), as 8-byte words: the struct's
    /// bytes, aligned for it. Empty when the kernel takes no struct.
    ///
    /// # Errors
    ///
    /// A count that differs from the layout's, or a length past `u32`.
    pub fn block(&self, scalars: &[f64], lengths: &[usize]) -> Result<Vec<u64>, String> {
        if !self.present {
            return Ok(Vec::new());
        }
        if lengths.len() != self.buffers {
            return Err(format!(
                "{} buffer lengths for {} buffers",
                lengths.len(),
                self.buffers
            ));
        }
        let mut bytes = Vec::new();
        match self.scalars {
            Some((ty, declared)) => {
                if scalars.len() > declared {
                    return Err(format!("{} scalars for {declared}", scalars.len()));
                }
                for i in 0..declared {
                    let v = scalars.get(i).copied().unwrap_or(0.0);
                    match ty {
                        ScalarType::F32 => bytes.extend((v as f32).to_ne_bytes()),
                        ScalarType::F64 => bytes.extend(v.to_ne_bytes()),
                    }
                }
                bytes.resize((declared * ty.size()).next_multiple_of(8), 0);
            }
            None if !scalars.is_empty() => return Err(format!("{} scalars for 0", scalars.len())),
            None => {}
        }
        if self.static_meta > 0 {
            let words: Vec<u32> = lengths
                .iter()
                .map(|&n| u32::try_from(n).map_err(|_| format!("a length of {n} elements")))
                .collect::<Result<_, _>>()?;
            for &w in words.iter().chain(&words) {
                bytes.extend(w.to_ne_bytes());
            }
            bytes.resize(bytes.len().next_multiple_of(8), 0);
        }
        Ok(bytes
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")))
            .collect())
    }
}
