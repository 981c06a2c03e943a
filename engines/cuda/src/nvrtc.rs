//! NVRTC: whether it loads, the architectures it targets, and compiling
//! the kernels' source to a cubin.

/// Whether the NVRTC library can be loaded (the kernels compile at run time).
pub fn nvrtc_present() -> bool {
    // SAFETY: as `driver_present`, for the NVRTC library.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// The GPU architectures this NVRTC compiles cubins for (`90` is
/// `sm_90`); empty if it cannot say. Callers have checked
/// [`nvrtc_present`].
pub fn nvrtc_architectures() -> Vec<i32> {
    use cudarc::nvrtc::sys;
    let mut count: std::ffi::c_int = 0;
    // SAFETY: NVRTC is loaded (the callers' check); it writes one int.
    if unsafe { sys::nvrtcGetNumSupportedArchs(&mut count) }
        .result()
        .is_err()
        || count <= 0
    {
        return Vec::new();
    }
    let mut archs: Vec<std::ffi::c_int> = vec![0; count as usize];
    // SAFETY: `archs` has room for the `count` ints NVRTC writes.
    if unsafe { sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) }
        .result()
        .is_err()
    {
        return Vec::new();
    }
    archs
}

/// Compiles `source` with NVRTC to a cubin for `sm_{arch}`: a binary for
/// that architecture, which the driver loads without a JIT (so a newer
/// NVRTC than the driver cannot fail with `UNSUPPORTED_PTX_VERSION`).
/// Callers have checked [`nvrtc_present`]. Errors are NVRTC's log.
pub(super) fn compile_cubin(source: &str, name: &str, arch: i32) -> Result<Vec<u8>, String> {
    use cudarc::nvrtc::{result, sys};
    use std::ffi::CString;
    let text = |bytes: &[std::ffi::c_char]| {
        let bytes: Vec<u8> = bytes
            .iter()
            .map(|&c| c as u8)
            .take_while(|&b| b != 0)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let src = CString::new(source).map_err(|_| "the kernel source holds a NUL byte".to_owned())?;
    let name = CString::new(name).map_err(|_| "the program name holds a NUL byte".to_owned())?;
    let prog = result::create_program(&src, Some(&name)).map_err(|e| e.to_string())?;
    let option = format!("--gpu-architecture=sm_{arch}");
    // SAFETY: `prog` was created above and is destroyed only at the end of
    // this function; `src` and `name`, which it refers to, outlive it.
    let compiled = unsafe { result::compile_program(prog, &[option]) };
    let cubin = match compiled {
        // SAFETY: as above.
        Err(e) => Err(unsafe { result::get_program_log(prog) }
            .map(|log| text(&log))
            .unwrap_or_else(|_| e.to_string())),
        Ok(()) => {
            let mut size = 0usize;
            // SAFETY: as above; NVRTC writes one `size_t`.
            match unsafe { sys::nvrtcGetCUBINSize(prog, &mut size) }.result() {
                Err(e) => Err(e.to_string()),
                Ok(()) => {
                    let mut bytes: Vec<std::ffi::c_char> = vec![0; size];
                    // SAFETY: as above; `bytes` has room for the `size`
                    // bytes NVRTC writes.
                    unsafe { sys::nvrtcGetCUBIN(prog, bytes.as_mut_ptr()) }
                        .result()
                        .map(|()| bytes.into_iter().map(|c| c as u8).collect())
                        .map_err(|e| e.to_string())
                }
            }
        }
    };
    // SAFETY: created above and not destroyed yet.
    let _ = unsafe { result::destroy_program(prog) };
    cubin
}
