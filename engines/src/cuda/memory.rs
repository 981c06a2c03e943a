//! Device and host memory: device buffers allocated in a stream's order,
//! the bytes of host tensors, the engine's pinned staging and its copies
//! to and from the device. With `launch`, the only module of the CUDA
//! engine with `unsafe`.

use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaEvent, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DriverError,
    PinnedHostSlice,
};

use super::{device_error, CudaEngine, DeviceTensor, STAGING_CHUNK, STAGING_THRESHOLD};
use crate::engine::{DeviceError, ExecError};
use crate::tensor::{element_count, DType, Data, Tensor, TensorError};

/// The engine's host copies: a stream each way (a copy waits on the
/// device for the op that wrote its source, through the buffer's event),
/// and two pinned host buffers, each with the event of the last copy that
/// used it. Shared by every lane: copies go through the actor thread one
/// at a time anyway, and a lane that only moves tensors (a transfer's)
/// never makes a stream of its own.
pub(super) struct Copies {
    h2d: Arc<CudaStream>,
    d2h: Arc<CudaStream>,
    buffers: Vec<(PinnedHostSlice<u8>, CudaEvent)>,
}

/// Device memory for a `dtype` tensor of `shape`, uninitialized, allocated
/// in `stream`'s order.
pub(super) fn alloc_on(
    stream: &Arc<CudaStream>,
    device: usize,
    dtype: DType,
    shape: &[usize],
) -> Result<DeviceTensor, ExecError> {
    let bytes = element_count(shape)
        .and_then(|n| n.checked_mul(dtype.size()))
        .ok_or_else(|| TensorError::TooLarge {
            shape: shape.to_vec(),
        })?;
    // SAFETY: the buffer is uninitialized; every caller writes all `bytes`
    // of it (a kernel over every element, a copy of the whole tensor) on
    // this stream before anything reads it, and every read, on this stream
    // or (through the write's event) on another, is ordered after it.
    let buf = unsafe { stream.alloc::<u8>(bytes.max(1)) }
        .map_err(|e| device_error(device, "cuMemAllocAsync", e))?;
    Ok(DeviceTensor {
        dtype,
        shape: shape.to_vec(),
        buf,
    })
}

/// The bytes of a host tensor's elements.
fn host_bytes(data: &Data) -> &[u8] {
    fn bytes<T>(values: &[T]) -> &[u8] {
        // SAFETY: `T` is the element type of a `Data` variant (the only
        // caller matches them): f32, f64, c32 or c64, plain data with no padding
        // and no invalid bit patterns, so its elements may be read as
        // `size_of_val(values)` initialized bytes for the borrow's life.
        unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
    }
    with_data!(data, |v| bytes(v))
}

/// The bytes of a host buffer to be filled.
pub(super) fn host_bytes_mut(data: &mut Data) -> &mut [u8] {
    fn bytes<T>(values: &mut [T]) -> &mut [u8] {
        // SAFETY: as in `host_bytes`; and any bytes written make valid
        // elements of these types, so the slice may be written through.
        unsafe {
            std::slice::from_raw_parts_mut(
                values.as_mut_ptr().cast(),
                std::mem::size_of_val(values),
            )
        }
    }
    with_data!(data, |v| bytes(v))
}

impl Copies {
    fn new(ctx: &Arc<CudaContext>) -> Result<Copies, DriverError> {
        let (h2d, d2h) = (ctx.new_stream()?, ctx.new_stream()?);
        let mut buffers = Vec::with_capacity(2);
        for _ in 0..2 {
            // SAFETY: the pinned buffer is uninitialized host memory; it is
            // only ever written (a chunk copied in, or a copy from the
            // device) before the bytes written are read.
            let pinned = unsafe { ctx.alloc_pinned::<u8>(STAGING_CHUNK) }?;
            buffers.push((pinned, ctx.new_event(None)?));
        }
        Ok(Copies { h2d, d2h, buffers })
    }
}

impl CudaEngine {
    fn copies(&mut self) -> Result<&mut Copies, DeviceError> {
        if self.copies.is_none() {
            let copies = Copies::new(&self.ctx)
                .map_err(|e| device_error(self.info.ordinal, "cuMemHostAlloc", e))?;
            self.copies = Some(copies);
        }
        Ok(self.copies.as_mut().expect("made above"))
    }

    /// A new device tensor holding `tensor`'s elements, copied on the
    /// host-to-device stream; large copies alternate between the two
    /// pinned buffers so that filling one overlaps the bus transfer of the
    /// other. Returns once the copy is enqueued (and the host data read).
    pub(super) fn copy_in(&mut self, tensor: &Tensor) -> Result<DeviceTensor, ExecError> {
        let device = self.info.ordinal;
        let err = |call| move |e: DriverError| device_error(device, call, e);
        let copies = self.copies()?;
        let stream = copies.h2d.clone();
        let mut out = alloc_on(&stream, device, tensor.dtype(), tensor.shape())?;
        let (src, dst) = (host_bytes(tensor.data()), &mut out.buf);
        if src.len() < STAGING_THRESHOLD {
            stream
                .memcpy_htod(src, &mut dst.slice_mut(..src.len()))
                .map_err(err("cuMemcpyHtoDAsync"))?;
            return Ok(out);
        }
        for (i, piece) in src.chunks(STAGING_CHUNK).enumerate() {
            let (pinned, done) = &mut copies.buffers[i % 2];
            // The copy that last read this buffer must be over.
            done.synchronize().map_err(err("cuEventSynchronize"))?;
            let host = pinned.as_mut_slice().map_err(err("cuMemHostAlloc"))?;
            host[..piece.len()].copy_from_slice(piece);
            let at = i * STAGING_CHUNK;
            let mut part = dst.slice_mut(at..at + piece.len());
            let (ptr, _record) = part.device_ptr_mut(&stream);
            // SAFETY: `host[..len]` is pinned memory that stays untouched
            // until `done` (recorded right after on the same stream) has
            // completed: the next use of this buffer waits on it above.
            // `ptr` addresses `len` bytes of the destination.
            unsafe {
                cudarc::driver::result::memcpy_htod_async(
                    ptr,
                    &host[..piece.len()],
                    stream.cu_stream(),
                )
            }
            .map_err(err("cuMemcpyHtoDAsync"))?;
            done.record(&stream).map_err(err("cuEventRecord"))?;
        }
        Ok(out)
    }

    /// Copies `src` into `dst` on the device-to-host stream, after the op
    /// that wrote `src` (a wait on the device), and waits for the copy:
    /// the host waits for that tensor alone, not for any lane's other work.
    pub(super) fn copy_out(
        &mut self,
        src: &CudaSlice<u8>,
        dst: &mut [u8],
    ) -> Result<(), DeviceError> {
        let device = self.info.ordinal;
        let err = |call| move |e: DriverError| device_error(device, call, e);
        let copies = self.copies()?;
        let stream = copies.d2h.clone();
        if dst.len() < STAGING_THRESHOLD {
            stream
                .memcpy_dtoh(&src.slice(..dst.len()), dst)
                .map_err(err("cuMemcpyDtoHAsync"))?;
            return stream.synchronize().map_err(err("cuStreamSynchronize"));
        }
        let chunks = dst.len().div_ceil(STAGING_CHUNK);
        let total = dst.len();
        let range = |i: usize| i * STAGING_CHUNK..((i + 1) * STAGING_CHUNK).min(total);
        for i in 0..=chunks {
            if i < chunks {
                let r = range(i);
                let (pinned, done) = &mut copies.buffers[i % 2];
                // Its last use (an upload's copy, on the other stream) is over.
                done.synchronize().map_err(err("cuEventSynchronize"))?;
                let host = pinned.as_mut_slice().map_err(err("cuMemHostAlloc"))?;
                let part = src.slice(r.clone());
                let (ptr, _record) = part.device_ptr(&stream);
                // SAFETY: `host[..len]` is pinned memory no one reads until
                // `done` has completed (waited on below before the copy
                // out of it); `ptr` addresses `len` bytes of the source.
                unsafe {
                    cudarc::driver::result::memcpy_dtoh_async(
                        &mut host[..r.len()],
                        ptr,
                        stream.cu_stream(),
                    )
                }
                .map_err(err("cuMemcpyDtoHAsync"))?;
                done.record(&stream).map_err(err("cuEventRecord"))?;
            }
            if i > 0 {
                let r = range(i - 1);
                let (pinned, done) = &mut copies.buffers[(i - 1) % 2];
                done.synchronize().map_err(err("cuEventSynchronize"))?;
                let host = pinned.as_mut_slice().map_err(err("cuMemHostAlloc"))?;
                dst[r.clone()].copy_from_slice(&host[..r.len()]);
            }
        }
        Ok(())
    }
}
