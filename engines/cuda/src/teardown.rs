//! Teardown in the order the device needs: every queued kernel and copy
//! finished, then the tensors freed, the cuBLAS handles destroyed, the
//! modules unloaded and the staging released (its events with it). A
//! failure is reported on stderr, never as a panic on the actor: a drop has
//! nobody to return it to.

use crate::kernels::Kernels;

use crate::CudaEngine;

/// The steps of an engine's teardown, in the order [`teardown`] takes
/// them; an engine's are driver calls, a test's are notes.
trait Teardown {
    /// Waits for every queued kernel and copy.
    fn synchronize(&mut self) -> Result<(), String>;
    /// Frees the resident tensors.
    fn free_tensors(&mut self);
    /// Destroys the cuBLAS handles and the lanes' streams (cudarc's handle
    /// drop unwraps the destroy's result, so this may panic).
    fn drop_handles(&mut self);
    /// Unloads the kernel modules.
    fn unload_modules(&mut self);
    /// Releases the pinned staging and its events.
    fn release_staging(&mut self);
    /// An error a release recorded earlier without returning it.
    fn recorded_error(&mut self) -> Result<(), String>;
}

/// Tears down in the one safe order: nothing is released while a kernel or
/// copy still uses it (the context is synchronized first), tensors before
/// the streams they are freed on, modules after every launch, staging
/// after its copies. Returns what failed, for stderr: a failure, even a
/// panic in a handle's drop, never stops the later steps.
fn teardown(engine: &mut impl Teardown) -> Vec<String> {
    let mut failures = Vec::new();
    if let Err(e) = engine.synchronize() {
        failures.push(format!("cuCtxSynchronize: {e}"));
    }
    engine.free_tensors();
    if let Err(payload) =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| engine.drop_handles()))
    {
        let text = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        failures.push(format!("cublasDestroy panicked: {text}"));
        // A payload's drop is not run here, where it could panic again.
        std::mem::forget(payload);
    }
    engine.unload_modules();
    engine.release_staging();
    if let Err(e) = engine.recorded_error() {
        failures.push(format!("an earlier release: {e}"));
    }
    failures
}

impl Teardown for CudaEngine {
    fn synchronize(&mut self) -> Result<(), String> {
        self.ctx.synchronize().map_err(|e| e.to_string())
    }

    fn free_tensors(&mut self) {
        self.store.clear();
        self.bytes = 0;
    }

    fn drop_handles(&mut self) {
        drop((
            std::mem::take(&mut self.lanes),
            std::mem::take(&mut self.spare_blas),
        ));
    }

    fn unload_modules(&mut self) {
        self.kernels = Kernels::default();
    }

    fn release_staging(&mut self) {
        self.copies = None;
    }

    fn recorded_error(&mut self) -> Result<(), String> {
        self.ctx.check_err().map_err(|e| e.to_string())
    }
}

impl Drop for CudaEngine {
    fn drop(&mut self) {
        let device = self.info.ordinal;
        for failure in teardown(self) {
            eprintln!("weft: dropping the CUDA engine of device {device}: {failure}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{teardown, Teardown};

    /// Notes each step; fails where told.
    #[derive(Default)]
    struct Steps {
        done: Vec<&'static str>,
        sync_fails: bool,
        handles_panic: bool,
        error_left: bool,
    }

    impl Teardown for Steps {
        fn synchronize(&mut self) -> Result<(), String> {
            self.done.push("synchronize");
            if self.sync_fails {
                return Err("CUDA_ERROR_LAUNCH_FAILED".into());
            }
            Ok(())
        }

        fn free_tensors(&mut self) {
            self.done.push("tensors");
        }

        fn drop_handles(&mut self) {
            self.done.push("handles");
            if self.handles_panic {
                panic!("CUBLAS_STATUS_INTERNAL_ERROR");
            }
        }

        fn unload_modules(&mut self) {
            self.done.push("modules");
        }

        fn release_staging(&mut self) {
            self.done.push("staging");
        }

        fn recorded_error(&mut self) -> Result<(), String> {
            self.done.push("errors");
            if self.error_left {
                return Err("CUDA_ERROR_ILLEGAL_ADDRESS".into());
            }
            Ok(())
        }
    }

    const ORDER: [&str; 6] = [
        "synchronize",
        "tensors",
        "handles",
        "modules",
        "staging",
        "errors",
    ];

    #[test]
    fn teardown_synchronizes_first_and_releases_in_order() {
        let mut steps = Steps::default();
        assert!(teardown(&mut steps).is_empty());
        assert_eq!(steps.done, ORDER);
    }

    #[test]
    fn a_failure_or_a_panicking_handle_stops_no_later_step() {
        let mut steps = Steps {
            sync_fails: true,
            handles_panic: true,
            error_left: true,
            ..Steps::default()
        };
        let failures = teardown(&mut steps);
        assert_eq!(steps.done, ORDER, "every step ran");
        assert_eq!(
            failures,
            [
                "cuCtxSynchronize: CUDA_ERROR_LAUNCH_FAILED",
                "cublasDestroy panicked: CUBLAS_STATUS_INTERNAL_ERROR",
                "an earlier release: CUDA_ERROR_ILLEGAL_ADDRESS",
            ]
        );
    }
}
