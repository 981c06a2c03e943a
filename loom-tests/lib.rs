//! Loom models of the public protocols of `weft-actors`; see `models.rs`.
