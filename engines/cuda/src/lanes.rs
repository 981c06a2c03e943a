//! The lanes' streams and library handles: a stream per lane, made on the
//! lane's first op; a cuBLAS handle bound to it on the lane's first
//! product, a cuSOLVER handle on its first decomposition; and the cuBLAS
//! handles of retired lanes, kept for the next lane (destroying a handle
//! synchronizes the whole device).

use std::sync::Arc;

use cudarc::cublas::CudaBlas;
use cudarc::driver::CudaStream;

use super::cublas::rebind_blas;
use super::cusolver::{cusolver_present, Solver};
use super::streams::Stream;
use super::{device_error, CudaEngine};
use weft_core::DeviceError;

/// One lane's stream and the library handles bound to it.
pub(super) struct LaneStream {
    /// Bound to `stream` on the lane's first decomposition; declared
    /// first, so it goes before the stream.
    pub(super) solver: Option<Solver>,
    pub(super) stream: Stream,
    /// Bound to `stream` on the lane's first product.
    pub(super) blas: Option<CudaBlas>,
}

/// A cuBLAS handle of a retired lane, still bound to that lane's stream.
/// Destroying a handle synchronizes the whole device, so handles are kept
/// and rebound instead: the next lane that needs one takes it.
pub(super) struct SpareBlas {
    blas: CudaBlas,
    stream: Arc<CudaStream>,
}

impl CudaEngine {
    /// Lane `lane`'s stream, made on first use.
    ///
    /// # Errors
    ///
    /// [`DeviceError`] when the stream cannot be made.
    pub fn stream(&mut self, lane: u64) -> Result<&Arc<CudaStream>, DeviceError> {
        Ok(&self.lane(lane)?.stream)
    }

    /// How many lanes hold a stream now (a lane's stream goes when the
    /// lane's last handle does).
    pub fn lane_streams(&self) -> usize {
        self.lanes.len()
    }

    pub(super) fn lane(&mut self, lane: u64) -> Result<&mut LaneStream, DeviceError> {
        let device = self.info.ordinal;
        if !self.lanes.contains_key(&lane) {
            let stream =
                Stream::new(&self.ctx).map_err(|e| device_error(device, "cuStreamCreate", e))?;
            self.lanes.insert(
                lane,
                LaneStream {
                    solver: None,
                    stream,
                    blas: None,
                },
            );
        }
        Ok(self.lanes.get_mut(&lane).expect("made above"))
    }

    /// Gives lane `lane` a cuBLAS handle bound to its stream, if it has
    /// none: a retired lane's, or a new one.
    pub(super) fn blas(&mut self, lane: u64) -> Result<(), DeviceError> {
        let device = self.info.ordinal;
        let spare = self.spare_blas.pop();
        let lane = self.lane(lane)?;
        if lane.blas.is_some() {
            if let Some(spare) = spare {
                self.spare_blas.push(spare);
            }
            return Ok(());
        }
        let blas = match spare {
            Some(SpareBlas { mut blas, stream }) => {
                rebind_blas(device, &mut blas, &stream, &lane.stream)?;
                blas
            }
            None => CudaBlas::new(Arc::clone(&lane.stream))
                .map_err(|e| device_error(device, "cublasCreate", e))?,
        };
        lane.blas = Some(blas);
        Ok(())
    }

    /// Gives lane `lane` a cuSOLVER handle bound to its stream, if it has
    /// none.
    ///
    /// # Errors
    ///
    /// [`DeviceError`] when cuSOLVER cannot be loaded or the handle made.
    pub(super) fn solver(&mut self, lane: u64) -> Result<(), DeviceError> {
        let device = self.info.ordinal;
        let lane = self.lane(lane)?;
        if lane.solver.is_none() {
            if !cusolver_present() {
                return Err(device_error(
                    device,
                    "loading libcusolver",
                    "cuSOLVER cannot be loaded (libcusolver.so.11 of CUDA 12, or a link to it)",
                ));
            }
            lane.solver = Some(Solver::new(device, &lane.stream)?);
        }
        Ok(())
    }

    /// Lane `lane` is gone. Buffers allocated on its stream keep the stream
    /// alive (cudarc holds it by `Arc`) until they are freed; dropping it
    /// returns at once, with its work finishing on the device. Its cuBLAS
    /// handle is kept for the next lane.
    pub(super) fn retire(&mut self, lane: u64) {
        if let Some(LaneStream {
            stream,
            blas: Some(blas),
            ..
        }) = self.lanes.remove(&lane)
        {
            let stream = Arc::clone(&stream);
            self.spare_blas.push(SpareBlas { blas, stream });
        }
    }
}
