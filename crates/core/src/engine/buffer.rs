//! I/O buffers: allocated and aligned once per worker, named by slot index so an asynchronous
//! engine can own or register them for the whole flight of an I/O.

use std::alloc::{alloc_zeroed, dealloc, Layout};

/// Alignment of every buffer: a page, enough for O_DIRECT on any device and for io_uring
/// fixed buffers.
pub(crate) const BUFFER_ALIGN: usize = 4096;

pub struct BufferPool {
    ptr: *mut u8,
    layout: Layout,
    slot_size: usize,
    slots: usize,
    locked: bool,
}

// SAFETY: the pool owns its allocation exclusively; it is moved between threads, never shared.
unsafe impl Send for BufferPool {}

impl BufferPool {
    /// `slots` buffers of `slot_size` bytes each (rounded up to the alignment), filled with a
    /// non-repeating pattern so compressing or deduplicating storage cannot shortcut writes.
    pub(crate) fn new(slots: usize, slot_size: usize, seed: u64) -> std::io::Result<Self> {
        let slot_size = slot_size.div_ceil(BUFFER_ALIGN).max(1) * BUFFER_ALIGN;
        let total = slot_size
            .checked_mul(slots.max(1))
            .ok_or_else(|| std::io::Error::other("buffer pool too large"))?;
        let layout = Layout::from_size_align(total, BUFFER_ALIGN)
            .map_err(|_| std::io::Error::other("bad buffer layout"))?;
        // SAFETY: layout has a non-zero size (slot_size >= BUFFER_ALIGN, slots >= 1).
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(std::io::Error::other(
                "out of memory allocating I/O buffers",
            ));
        }
        let mut pool = BufferPool {
            ptr,
            layout,
            slot_size,
            slots: slots.max(1),
            locked: false,
        };
        pool.fill(seed);
        Ok(pool)
    }

    fn fill(&mut self, seed: u64) {
        let mut x = seed | 1;
        let words = self.layout.size() / 8;
        // SAFETY: the allocation is layout.size() bytes and 4096-aligned, so u64-aligned.
        let s = unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut u64, words) };
        for w in s {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *w = x;
        }
    }

    /// Pin the buffers in memory (vxbench -m).
    pub(crate) fn lock(&mut self) -> std::io::Result<()> {
        // SAFETY: the range is our own live allocation.
        let rc = unsafe { libc::mlock(self.ptr as *const libc::c_void, self.layout.size()) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        self.locked = true;
        Ok(())
    }

    pub(crate) fn slot_size(&self) -> usize {
        self.slot_size
    }
    pub(crate) fn slots(&self) -> usize {
        self.slots
    }

    /// Raw pointer to a slot, for engines that hand buffers to the kernel.
    #[inline]
    pub(crate) fn slot_ptr(&self, slot: usize) -> *mut u8 {
        debug_assert!(slot < self.slots);
        // SAFETY: slot < slots, so the offset stays inside the allocation.
        unsafe { self.ptr.add(slot * self.slot_size) }
    }

    #[inline]
    pub(crate) fn slot(&self, slot: usize) -> &[u8] {
        // SAFETY: in bounds as above; the pool is borrowed immutably for the slice's life.
        unsafe { std::slice::from_raw_parts(self.slot_ptr(slot), self.slot_size) }
    }

    #[inline]
    pub(crate) fn slot_mut(&mut self, slot: usize) -> &mut [u8] {
        // SAFETY: in bounds; `&mut self` guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.slot_ptr(slot), self.slot_size) }
    }
}

impl Drop for BufferPool {
    fn drop(&mut self) {
        // SAFETY: ptr came from alloc_zeroed with this layout; munlock is harmless if unlocked.
        unsafe {
            if self.locked {
                libc::munlock(self.ptr as *const libc::c_void, self.layout.size());
            }
            dealloc(self.ptr, self.layout);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_filled() {
        let p = BufferPool::new(4, 5000, 7).unwrap();
        assert_eq!(p.slot_size(), 8192);
        for i in 0..4 {
            assert_eq!(p.slot_ptr(i) as usize % BUFFER_ALIGN, 0);
        }
        assert!(p.slot(3).iter().any(|&b| b != 0));
        assert_ne!(p.slot(0)[..64], p.slot(1)[..64]);
    }
}
