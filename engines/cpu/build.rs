//! Links the system's OpenBLAS when the `blas` feature is on (the CPU
//! engine's BLAS provider); does nothing otherwise. `WEFT_OPENBLAS_DIR`
//! names a folder holding `libopenblas` where it is not in the linker's
//! own search path.

use std::path::Path;

/// Where distributions put `libopenblas.so` (Debian's `libopenblas-dev`
/// first).
const DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
    "/opt/homebrew/opt/openblas/lib",
];

fn main() {
    println!("cargo:rerun-if-env-changed=WEFT_OPENBLAS_DIR");
    if std::env::var_os("CARGO_FEATURE_BLAS").is_none() {
        return;
    }
    let named = std::env::var("WEFT_OPENBLAS_DIR").ok();
    if let Some(dir) = &named {
        println!("cargo:rustc-link-search=native={dir}");
    }
    let found = named
        .iter()
        .map(String::as_str)
        .chain(DIRS.iter().copied())
        .any(|dir| {
            ["libopenblas.so", "libopenblas.dylib", "libopenblas.a"]
                .iter()
                .any(|lib| Path::new(dir).join(lib).exists())
        });
    if !found {
        println!(
            "cargo:warning=feature `blas`: no libopenblas in {DIRS:?}; install OpenBLAS \
             (Debian: `apt-get install libopenblas-dev`) or set WEFT_OPENBLAS_DIR"
        );
    }
    println!("cargo:rustc-link-lib=openblas");
}
