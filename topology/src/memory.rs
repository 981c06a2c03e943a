//! Memory advice: fresh buffers backed by huge pages.
//!
//! A large allocation comes straight from the kernel, and its first write
//! faults each of its pages in: 8 192 faults for 32 MiB of 4 KiB pages,
//! which cost more than the copy that touches them (measured on the
//! 2-vCPU machine the benchmarks ran on: a clone of 32 MiB took 15.9 ms, a
//! copy into a buffer advised here 4.4 ms, into one already written
//! 2.9 ms). Transparent huge pages cut that to 16 faults; where the kernel
//! offers them only on request (`madvise` in
//! `/sys/kernel/mm/transparent_hugepage/enabled`, the common default), a
//! buffer must ask before it is first written.
//!
//! On a virtual machine whose host backs guest memory lazily, the first
//! huge pages taken from memory the guest has never touched cost more
//! than small ones (on the same machine: 70 ms for the first 32 MiB, once
//! per process, then 4.4 ms); the engine's buffer pool, which keeps freed
//! buffers with their pages, pays that once per size class.

use std::mem::MaybeUninit;

/// The size of a transparent huge page with 4 KiB base pages (x86-64,
/// arm64): the alignment of the part of a buffer that [`advise_huge_pages`]
/// advises.
pub const HUGE_PAGE_BYTES: usize = 2 << 20;

/// Asks the kernel to back the huge-page-aligned part of `memory` with
/// transparent huge pages, if it is at least one huge page. Call it on a
/// buffer's spare capacity before its first write (`vec.spare_capacity_mut()`
/// of a new `Vec`); pages already faulted in are not changed.
///
/// Advice only: the contents of `memory` and what it may hold are not
/// affected, and where the kernel does not take the advice (huge pages
/// turned off, another OS) nothing happens.
pub fn advise_huge_pages<T>(memory: &mut [MaybeUninit<T>]) {
    let start = memory.as_mut_ptr() as usize;
    let end = start + std::mem::size_of_val(memory);
    let first = start.next_multiple_of(HUGE_PAGE_BYTES);
    let last = end - end % HUGE_PAGE_BYTES;
    if last > first {
        #[cfg(target_os = "linux")]
        crate::sys::advise_huge_pages(first, last - first);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_advised_before_its_first_write_keeps_what_is_written() {
        let n = 3 * HUGE_PAGE_BYTES / 8 + 5;
        let mut v: Vec<u64> = Vec::with_capacity(n);
        advise_huge_pages(v.spare_capacity_mut());
        v.extend(0..n as u64);
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
        // Too small to hold a huge page: nothing to advise, nothing breaks.
        let mut small: Vec<u8> = Vec::with_capacity(100);
        advise_huge_pages(small.spare_capacity_mut());
        small.extend(0..100);
        assert_eq!(small.len(), 100);
    }
}
