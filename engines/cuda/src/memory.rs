//! Device and host memory: device buffers allocated in a stream's order,
//! the bytes of host tensors, the engine's pinned staging and its copies
//! to and from the device. One of the CUDA engine's five modules with
//! `unsafe`, one per library (with `launch`, `nvrtc`, `cublas` and
//! `cusolver`).

use std::cell::RefCell;
use std::mem::ManuallyDrop;
use std::rc::Rc;
use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaEvent, CudaSlice, DevicePtr, DevicePtrMut, DriverError, PinnedHostSlice,
};

use super::access::{FreeOn, Kind, Tracker};
use super::streams::Stream;
use super::{device_error, CudaEngine, DeviceTensor, EventPool, STAGING_CHUNK, STAGING_THRESHOLD};
use weft_core::{element_count, DType, Data, Tensor, TensorError};
use weft_core::{BufferStats, DeviceError, ExecError};

/// The engine's host copies: a stream each way (a copy waits on the
/// device for the op that wrote its source, through the buffer's event),
/// and pinned staging for each direction, made at its first large copy.
/// Shared by every lane: copies go through the actor thread one at a time
/// anyway, and a lane that only moves tensors (a transfer's) never makes a
/// stream of its own.
pub(super) struct Copies {
    h2d: Stream,
    d2h: Stream,
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
        // context's life, which the engine holds); every attribute the
        // engine uses (`PoolAttr`) is a `cuuint64_t`, and `value` is one.
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

/// Turns cudarc's per-buffer events off for `ctx` (this engine's own
/// context handle): the engine orders every access itself (`access.rs`).
pub(super) fn order_accesses_here(ctx: &CudaContext) {
    // SAFETY: called before the engine makes any buffer on this context
    // handle, and every buffer made on it is a `DeviceTensor`, whose every
    // access the engine orders through its table: a read or write on one
    // stream waits for the accesses on others it must follow, an
    // allocation is a write the first access waits for, and a free waits
    // for every access (cudarc's three conditions for turning it off).
    unsafe { ctx.disable_event_tracking() }
}

/// Device memory for a `dtype` tensor of `shape`, uninitialized, allocated
/// in `stream`'s order: the stream that writes it first, so no other
/// stream can reach it before it exists.
pub(super) fn alloc(
    stream: &Stream,
    events: &Rc<EventPool>,
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
    // of it on this stream (a kernel over every element, a copy of the
    // whole tensor) before anything reads it, and every read on another
    // stream is ordered after that write (`access.rs`).
    let buf = unsafe { stream.alloc::<u8>(bytes.max(1)) }
        .map_err(|e| device_error(device, "cuMemAllocAsync", e))?;
    events.count(|c| c.allocs += 1);
    Ok(DeviceTensor {
        dtype,
        shape: shape.to_vec(),
        buf: ManuallyDrop::new(buf),
        access: RefCell::new(Tracker::default()),
        events: events.clone(),
    })
}

/// The free, where the access table says (`access.rs`): a tensor no
/// access touched on its allocating stream; one whose every access was on
/// one stream in that stream's order, with no wait; any other on the free
/// stream, after it has waited on the device for every access the table
/// knows of (the last write and every stream's reads since), so no reader
/// on any stream can still be reading memory that stream-ordered
/// allocation hands out again at once, and no lane or copy stream waits
/// for another's kernels. The events go back to the engine's pool.
impl Drop for DeviceTensor {
    fn drop(&mut self) {
        let mut access = std::mem::take(self.access.get_mut());
        // SAFETY: `buf` is taken once, here, and not used after.
        let buf = unsafe { ManuallyDrop::take(&mut self.buf) };
        let pool = &self.events;
        pool.count(|c| c.frees += 1);
        let ctx = &pool.ctx;
        let on = match access.free_on() {
            // cudarc frees it on its allocating stream.
            FreeOn::Allocator => return drop(buf),
            _ if !pool.stream_ordered() => {
                // cudarc's synchronous free syncs only the allocating
                // stream.
                pool.count(|c| c.syncs += 1);
                ctx.record_err(ctx.synchronize());
                drop(buf);
                return pool.give(access.into_events());
            }
            FreeOn::Stream(stream) => stream.cu_stream(),
            FreeOn::FreeStream => {
                let free = pool.free_stream();
                // The free is a write on the free stream: it follows every
                // access.
                if let Err(e) = order_after(&mut access, pool, free, Kind::Write) {
                    // An access could not be waited for: the buffer is
                    // leaked rather than freed under a reader.
                    ctx.record_err::<()>(Err(e));
                    let _leaked = buf.leak();
                    return pool.give(access.into_events());
                }
                free.cu_stream()
            }
        };
        let ptr = buf.leak();
        // SAFETY: `ptr` came from `cuMemAllocAsync` (`alloc`, on a device
        // with stream-ordered allocation) and is freed once, here, on
        // `on`: either the one stream every access to it was enqueued on
        // (stream order puts the free after them), or the free stream,
        // which waits just above for every access the table knows of.
        ctx.record_err(unsafe { cudarc::driver::result::free_async(ptr, on) });
        pool.give(access.into_events());
    }
}

/// Makes `stream` wait, on the device, for the accesses `access` says an
/// access of `kind` there must follow (first recording the events of the
/// reads a write must follow).
fn order_after(
    access: &mut Tracker<Stream, CudaEvent>,
    pool: &EventPool,
    stream: &Stream,
    kind: Kind,
) -> Result<(), DriverError> {
    let id = stream.id();
    access.settle(
        id,
        kind,
        || pool.take(),
        |s, ev| {
            pool.count(|c| c.event_records += 1);
            ev.record(s)
        },
    )?;
    for event in access.waits(id, kind) {
        pool.count(|c| c.event_waits += 1);
        stream.wait(event)?;
    }
    Ok(())
}

impl DeviceTensor {
    /// Orders an access of `kind` about to be enqueued on `stream` after
    /// the accesses it must follow: `stream` waits for them on the device
    /// (a write first has an event recorded on each stream that read the
    /// tensor since its last write).
    pub(super) fn before(&self, stream: &Stream, kind: Kind) -> Result<(), DriverError> {
        order_after(&mut self.access.borrow_mut(), &self.events, stream, kind)
    }

    /// Blocks the calling thread until the last write of the tensor has
    /// run on the device.
    pub(super) fn wait_written(&self) -> Result<(), DriverError> {
        match self.access.borrow().last_write() {
            Some(event) => {
                self.events.count(|c| c.syncs += 1);
                event.synchronize()
            }
            None => Ok(()),
        }
    }

    /// Notes an access of `kind` just enqueued on `stream`: a write's
    /// event is recorded now, a read's only when a later access must
    /// follow it.
    pub(super) fn after(&self, stream: &Stream, kind: Kind) -> Result<(), DriverError> {
        let mut access = self.access.borrow_mut();
        match kind {
            Kind::Read => access.read(stream),
            Kind::Write => {
                self.events.count(|c| c.event_records += 1);
                access
                    .write(stream, || self.events.take())?
                    .record(stream)?;
            }
        }
        Ok(())
    }
}

/// The bytes of a host tensor's elements.
fn host_bytes(data: &Data) -> &[u8] {
    fn bytes<T>(values: &[T]) -> &[u8] {
        // SAFETY: `T` is the element type of a `Data` variant (the only
        // caller matches them): f32, f64, c32, c64, i32, i64 or bool,
        // plain data with no padding, so its elements may be read as
        // `size_of_val(values)` initialized bytes for the borrow's life.
        unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
    }
    with_data!(data, |v| bytes(v))
}

/// The bytes of a host buffer to be filled, of any type but `bool` (whose
/// bytes are only 0 or 1: it is filled through a byte buffer).
pub(super) fn host_bytes_mut(data: &mut Data) -> &mut [u8] {
    fn bytes<T>(values: &mut [T]) -> &mut [u8] {
        // SAFETY: as in `host_bytes`; and any bytes written make valid
        // elements of these types (`bool` is excluded below), so the
        // slice may be written through.
        unsafe {
            std::slice::from_raw_parts_mut(
                values.as_mut_ptr().cast(),
                std::mem::size_of_val(values),
            )
        }
    }
    match data {
        Data::Bool(_) => &mut [],
        other => with_data!(other, |v| bytes(v)),
    }
}

impl Copies {
    fn new(ctx: &Arc<CudaContext>) -> Result<Copies, DriverError> {
        Ok(Copies {
            h2d: Stream::new(ctx)?,
            d2h: Stream::new(ctx)?,
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
        let stream = self.copies()?.h2d.clone();
        let mut out = alloc(
            &stream,
            &self.events,
            device,
            tensor.dtype(),
            tensor.shape(),
        )?;
        self.copy_to(&stream, tensor, &mut out)?;
        out.after(&stream, Kind::Write)
            .map_err(err("cuEventRecord"))?;
        Ok(out)
    }

    /// Enqueues the copy of `tensor`'s elements into `out` on `stream`.
    fn copy_to(
        &mut self,
        stream: &Stream,
        tensor: &Tensor,
        out: &mut DeviceTensor,
    ) -> Result<(), ExecError> {
        let device = self.info.ordinal;
        let err = |call| move |e: DriverError| device_error(device, call, e);
        let ctx = self.ctx.clone();
        let events = self.events.clone();
        let copies = self.copies()?;
        let (src, dst) = (host_bytes(tensor.data()), &mut out.buf);
        if src.len() < STAGING_THRESHOLD {
            events.count(|c| c.host_copies += 1);
            stream
                .memcpy_htod(src, &mut dst.slice_mut(..src.len()))
                .map_err(err("cuMemcpyHtoDAsync"))?;
            return Ok(());
        }
        let staging = copies
            .staging(&ctx, Direction::Upload)
            .map_err(err("cuMemHostAlloc"))?;
        for (i, piece) in src.chunks(STAGING_CHUNK).enumerate() {
            let (pinned, done) = &mut staging.0[i % 2];
            // The copy that last read this buffer must be over.
            events.count(|c| c.syncs += 1);
            done.synchronize().map_err(err("cuEventSynchronize"))?;
            let host = pinned.as_mut_slice().map_err(err("cuMemHostAlloc"))?;
            host[..piece.len()].copy_from_slice(piece);
            let at = i * STAGING_CHUNK;
            let mut part = dst.slice_mut(at..at + piece.len());
            let (ptr, _record) = part.device_ptr_mut(stream);
            events.count(|c| c.host_copies += 1);
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
            done.record(stream).map_err(err("cuEventRecord"))?;
        }
        Ok(())
    }

    /// Copies `src` into `dst` on the device-to-host stream, after the op
    /// that wrote `src` (a wait on the device), and waits for the copy:
    /// the host waits for that tensor alone, not for any lane's other work.
    pub(super) fn copy_out(
        &mut self,
        tensor: &DeviceTensor,
        dst: &mut [u8],
    ) -> Result<(), DeviceError> {
        let device = self.info.ordinal;
        let err = |call| move |e: DriverError| device_error(device, call, e);
        let stream = self.copies()?.d2h.clone();
        tensor
            .before(&stream, Kind::Read)
            .map_err(err("cuStreamWaitEvent"))?;
        let copied = self.copy_from(&stream, &tensor.buf, dst);
        if copied.is_err() {
            // Whatever was enqueued is a read a later free must follow. A
            // copy that succeeded has been waited for by the host: nothing
            // later need follow it.
            tensor
                .after(&stream, Kind::Read)
                .map_err(err("cuEventRecord"))?;
        }
        copied
    }

    /// Enqueues the copy of `src` into `dst` on `stream` and waits for it.
    fn copy_from(
        &mut self,
        stream: &Stream,
        src: &CudaSlice<u8>,
        dst: &mut [u8],
    ) -> Result<(), DeviceError> {
        let device = self.info.ordinal;
        let err = |call| move |e: DriverError| device_error(device, call, e);
        let ctx = self.ctx.clone();
        let events = self.events.clone();
        let copies = self.copies()?;
        if dst.len() < STAGING_THRESHOLD {
            events.count(|c| {
                c.host_copies += 1;
                c.syncs += 1;
            });
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
                events.count(|c| c.syncs += 1);
                done.synchronize().map_err(err("cuEventSynchronize"))?;
                let host = pinned.as_mut_slice().map_err(err("cuMemHostAlloc"))?;
                let part = src.slice(r.clone());
                let (ptr, _record) = part.device_ptr(stream);
                events.count(|c| c.host_copies += 1);
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
                done.record(stream).map_err(err("cuEventRecord"))?;
            }
            if i > 0 {
                let r = range(i - 1);
                let (pinned, done) = &mut staging.0[(i - 1) % 2];
                events.count(|c| c.syncs += 1);
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
