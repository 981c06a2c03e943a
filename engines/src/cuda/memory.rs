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
use crate::engine::{BufferStats, DeviceError, ExecError};
use crate::tensor::{element_count, DType, Data, Tensor, TensorError};

/// The engine's host copies: a stream each way (a copy waits on the
/// device for the op that wrote its source, through the buffer's event),
/// and pinned staging for each direction, made at its first large copy.
/// Shared by every lane: copies go through the actor thread one at a time
/// anyway, and a lane that only moves tensors (a transfer's) never makes a
/// stream of its own.
pub(super) struct Copies {
    h2d: Arc<CudaStream>,
    d2h: Arc<CudaStream>,
    /// Write-combined: the host only writes it, and the bus reads it fast.
    upload: Option<Staging>,
    /// Plain pinned memory: the host reads it, which write-combined memory
    /// makes slow (uncached reads).
    download: Option<Staging>,
}

/// Two pinned host buffers, each with the event of the last copy that used
/// it: one fills while the other is on the bus.
struct Staging([(PinnedHostSlice<u8>, CudaEvent); 2]);

/// The host-allocation flags of a direction's staging.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    /// Host to device: write-combined.
    Upload,
    /// Device to host: plain pinned memory.
    Download,
}

impl Direction {
    /// The `cuMemHostAlloc` flags of its staging.
    pub(super) fn host_alloc_flags(self) -> u32 {
        match self {
            Direction::Upload => cudarc::driver::sys::CU_MEMHOSTALLOC_WRITECOMBINED,
            Direction::Download => 0,
        }
    }
}

impl Staging {
    fn new(ctx: &Arc<CudaContext>, direction: Direction) -> Result<Staging, DriverError> {
        let buffer = || -> Result<_, DriverError> {
            // SAFETY: the pinned buffer is uninitialized host memory; it is
            // only ever written (a chunk copied in, or a copy from the
            // device) before the bytes written are read.
            let pinned = unsafe {
                ctx.alloc_pinned_with_flags::<u8>(STAGING_CHUNK, direction.host_alloc_flags())
            }?;
            Ok((pinned, ctx.new_event(None)?))
        };
        Ok(Staging([buffer()?, buffer()?]))
    }
}

/// The device's default memory pool, which `cuMemAllocAsync` draws from.
pub(super) struct DevicePool(cudarc::driver::sys::CUmemoryPool);

/// The attributes of a device memory pool the engine sets and reads; the
/// device's pool, or a fake in the tests.
pub(super) trait PoolAttributes {
    fn set(&mut self, attr: PoolAttr, value: u64) -> Result<(), DriverError>;
    fn get(&self, attr: PoolAttr) -> Result<u64, DriverError>;
    fn trim_to(&mut self, keep: usize) -> Result<(), DriverError>;
}

/// The pool attributes the engine uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PoolAttr {
    /// Memory the pool keeps across a synchronization.
    ReleaseThreshold,
    /// Memory the pool holds from the OS.
    Reserved,
    /// The most it has held.
    ReservedHigh,
    /// Memory in live allocations.
    Used,
}

impl PoolAttr {
    fn raw(self) -> cudarc::driver::sys::CUmemPool_attribute {
        use cudarc::driver::sys::CUmemPool_attribute::*;
        match self {
            PoolAttr::ReleaseThreshold => CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            PoolAttr::Reserved => CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
            PoolAttr::ReservedHigh => CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
            PoolAttr::Used => CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
        }
    }
}

/// Makes the pool keep freed memory for reuse (up to the device's memory)
/// instead of returning it to the OS at every synchronization, which the
/// default threshold of 0 does: memory goes back only on a trim.
pub(super) fn keep_freed_memory(
    pool: &mut impl PoolAttributes,
    device_memory: usize,
) -> Result<(), DriverError> {
    pool.set(PoolAttr::ReleaseThreshold, device_memory as u64)
}

/// The pool's counters as the engine reports them: what it holds beyond
/// live allocations is `pooled_bytes`, its high-water mark `peak_bytes`,
/// its release threshold `cap_bytes`.
pub(super) fn pool_stats(pool: &impl PoolAttributes) -> Result<BufferStats, DriverError> {
    let get = |attr| {
        pool.get(attr)
            .map(|v| usize::try_from(v).unwrap_or(usize::MAX))
    };
    let (reserved, used) = (get(PoolAttr::Reserved)?, get(PoolAttr::Used)?);
    Ok(BufferStats {
        cap_bytes: get(PoolAttr::ReleaseThreshold)?,
        pooled_bytes: reserved.saturating_sub(used),
        peak_bytes: get(PoolAttr::ReservedHigh)?,
        ..BufferStats::default()
    })
}

impl DevicePool {
    /// The default pool of `ctx`'s device, if the device has one (devices
    /// without stream-ordered allocation have none).
    pub(super) fn of(ctx: &CudaContext) -> Option<DevicePool> {
        // SAFETY: `cu_device` is a device the driver returned for this
        // context.
        unsafe { cudarc::driver::result::device::get_default_mem_pool(ctx.cu_device()) }
            .ok()
            .map(DevicePool)
    }
}

impl PoolAttributes for DevicePool {
    fn set(&mut self, attr: PoolAttr, value: u64) -> Result<(), DriverError> {
        let mut value = value;
        // SAFETY: the pool is the device's default pool (valid for the
        // context's life, which the engine holds); the three attributes
        // set are `cuuint64_t`, and `value` is one.
        unsafe {
            cudarc::driver::result::mem_pool::set_attribute(
                self.0,
                attr.raw(),
                (&mut value as *mut u64).cast(),
            )
        }
    }

    fn get(&self, attr: PoolAttr) -> Result<u64, DriverError> {
        let mut value = 0u64;
        // SAFETY: as in `set`: every attribute read is a `cuuint64_t`.
        unsafe {
            cudarc::driver::result::mem_pool::get_attribute(
                self.0,
                attr.raw(),
                (&mut value as *mut u64).cast(),
            )
        }?;
        Ok(value)
    }

    fn trim_to(&mut self, keep: usize) -> Result<(), DriverError> {
        // SAFETY: the pool is valid (see `set`); a trim frees only memory
        // no allocation uses.
        unsafe { cudarc::driver::result::mem_pool::trim_to(self.0, keep) }
    }
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
        Ok(Copies {
            h2d: ctx.new_stream()?,
            d2h: ctx.new_stream()?,
            upload: None,
            download: None,
        })
    }

    /// The staging of `direction`, made at its first use.
    fn staging(
        &mut self,
        ctx: &Arc<CudaContext>,
        direction: Direction,
    ) -> Result<&mut Staging, DriverError> {
        let slot = match direction {
            Direction::Upload => &mut self.upload,
            Direction::Download => &mut self.download,
        };
        if slot.is_none() {
            *slot = Some(Staging::new(ctx, direction)?);
        }
        Ok(slot.as_mut().expect("made above"))
    }
}

impl CudaEngine {
    fn copies(&mut self) -> Result<&mut Copies, DeviceError> {
        if self.copies.is_none() {
            let copies = Copies::new(&self.ctx)
                .map_err(|e| device_error(self.info.ordinal, "cuStreamCreate", e))?;
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
        let ctx = self.ctx.clone();
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
        let staging = copies
            .staging(&ctx, Direction::Upload)
            .map_err(err("cuMemHostAlloc"))?;
        for (i, piece) in src.chunks(STAGING_CHUNK).enumerate() {
            let (pinned, done) = &mut staging.0[i % 2];
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
        let ctx = self.ctx.clone();
        let copies = self.copies()?;
        let stream = copies.d2h.clone();
        if dst.len() < STAGING_THRESHOLD {
            stream
                .memcpy_dtoh(&src.slice(..dst.len()), dst)
                .map_err(err("cuMemcpyDtoHAsync"))?;
            return stream.synchronize().map_err(err("cuStreamSynchronize"));
        }
        let staging = copies
            .staging(&ctx, Direction::Download)
            .map_err(err("cuMemHostAlloc"))?;
        let chunks = dst.len().div_ceil(STAGING_CHUNK);
        let total = dst.len();
        let range = |i: usize| i * STAGING_CHUNK..((i + 1) * STAGING_CHUNK).min(total);
        for i in 0..=chunks {
            if i < chunks {
                let r = range(i);
                let (pinned, done) = &mut staging.0[i % 2];
                // Its last copy has been read out (below, two chunks ago).
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
                let (pinned, done) = &mut staging.0[(i - 1) % 2];
                done.synchronize().map_err(err("cuEventSynchronize"))?;
                let host = pinned.as_mut_slice().map_err(err("cuMemHostAlloc"))?;
                dst[r.clone()].copy_from_slice(&host[..r.len()]);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pool that records what is set and answers from a table.
    #[derive(Default)]
    struct FakePool {
        set: Vec<(PoolAttr, u64)>,
        values: Vec<(PoolAttr, u64)>,
    }

    impl PoolAttributes for FakePool {
        fn set(&mut self, attr: PoolAttr, value: u64) -> Result<(), DriverError> {
            self.set.push((attr, value));
            self.values.retain(|(a, _)| *a != attr);
            self.values.push((attr, value));
            Ok(())
        }

        fn get(&self, attr: PoolAttr) -> Result<u64, DriverError> {
            Ok(self
                .values
                .iter()
                .find(|(a, _)| *a == attr)
                .map_or(0, |(_, v)| *v))
        }

        fn trim_to(&mut self, _keep: usize) -> Result<(), DriverError> {
            Ok(())
        }
    }

    #[test]
    fn the_pool_keeps_freed_memory_and_reports_what_it_holds() {
        let mut pool = FakePool::default();
        keep_freed_memory(&mut pool, 141 << 30).unwrap();
        // One call: the release threshold, to the device's memory.
        assert_eq!(pool.set, [(PoolAttr::ReleaseThreshold, 141 << 30)]);
        pool.values.extend([
            (PoolAttr::Reserved, 96 << 20),
            (PoolAttr::Used, 32 << 20),
            (PoolAttr::ReservedHigh, 128 << 20),
        ]);
        let stats = pool_stats(&pool).unwrap();
        assert_eq!(stats.cap_bytes, 141 << 30);
        assert_eq!(stats.pooled_bytes, 64 << 20, "reserved beyond live use");
        assert_eq!(stats.peak_bytes, 128 << 20);
    }

    #[test]
    fn only_upload_staging_is_write_combined() {
        use cudarc::driver::sys::CU_MEMHOSTALLOC_WRITECOMBINED;
        assert_eq!(
            Direction::Upload.host_alloc_flags(),
            CU_MEMHOSTALLOC_WRITECOMBINED
        );
        // The host reads download staging: no write-combining.
        assert_eq!(Direction::Download.host_alloc_flags(), 0);
    }
}
