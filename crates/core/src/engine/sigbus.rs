//! SIGBUS under the mmap engine: a page of a mapping that cannot be read or written (the file
//! was truncated by another process, the file system is full while filling a sparse file, a
//! device error) is reported by the kernel as SIGBUS, which would kill fsbench with no file,
//! no offset and no cleanup. While mappings exist, a handler finds the mapping that holds the
//! faulting address, writes one line naming the file and the offset, removes the files the
//! run created (unless --keep, and only while their path still names the created file) and
//! exits with status 1, the status of a failed run.
//!
//! Everything the handler needs is prepared before the run (messages as bytes, paths as
//! C strings, device and inode numbers), so the handler itself allocates nothing, takes no
//! lock and calls only async-signal-safe functions (write, stat, unlink, pause, _exit,
//! sigaction).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::Once;

/// One mapping: [start, end) in memory maps the file from offset 0.
struct Region {
    start: usize,
    end: usize,
    /// "fsbench: error: I/O error (SIGBUS) in the mapping of FILE at offset ".
    msg: Box<[u8]>,
    /// False once the mapping is gone (the node itself is never freed: the handler may be
    /// reading it).
    active: AtomicBool,
    next: *const Region,
}

/// Files to remove when the handler ends the process: path, device and inode at creation.
pub(crate) struct Removal {
    path: CString,
    dev: u64,
    ino: u64,
}

struct Removals(Vec<Removal>);

static REGIONS: AtomicPtr<Region> = AtomicPtr::new(std::ptr::null_mut());
static REMOVALS: AtomicPtr<Removals> = AtomicPtr::new(std::ptr::null_mut());
/// Set by the first thread that enters the handler; any other thread faulting at the same
/// time waits for it to end the process, so exactly one line is written.
static HANDLING: AtomicBool = AtomicBool::new(false);
static INSTALL: Once = Once::new();

/// A registered mapping; dropping it (before munmap) makes the handler ignore it.
pub(crate) struct RegionGuard(&'static Region);

impl Drop for RegionGuard {
    fn drop(&mut self) {
        self.0.active.store(false, Ordering::SeqCst);
    }
}

/// Register a mapping of `len` bytes at `start` of the file named `name` (for the message).
/// Installs the handler the first time.
pub(crate) fn register(start: *mut u8, len: usize, name: &str) -> RegionGuard {
    install();
    let msg = format!("fsbench: error: I/O error (SIGBUS) in the mapping of {name} at offset ")
        .into_bytes()
        .into_boxed_slice();
    // Never freed on purpose: a few dozen bytes per mapping per run, and the handler may read any
    // node at any time, so none can be freed while the process lives.
    let node: *mut Region = Box::into_raw(Box::new(Region {
        start: start as usize,
        end: (start as usize).saturating_add(len),
        msg,
        active: AtomicBool::new(true),
        next: std::ptr::null(),
    }));
    let mut head = REGIONS.load(Ordering::SeqCst);
    loop {
        // SAFETY: `node` is ours alone until the exchange below publishes it.
        unsafe { (*node).next = head };
        match REGIONS.compare_exchange(head, node, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => break,
            Err(h) => head = h,
        }
    }
    // SAFETY: never freed, so a 'static shared reference is valid.
    RegionGuard(unsafe { &*node })
}

/// The files the handler removes: those this run created, with their (device, inode) at
/// creation, or none with --keep. Replaces an earlier list (the old one is leaked, as the
/// handler may be reading it).
pub(crate) fn set_removals(files: &[(&Path, u64, u64)]) {
    let list: Vec<Removal> = files
        .iter()
        .filter_map(|(p, dev, ino)| {
            Some(Removal {
                path: CString::new(p.as_os_str().as_bytes()).ok()?,
                dev: *dev,
                ino: *ino,
            })
        })
        .collect();
    let new = Box::into_raw(Box::new(Removals(list)));
    REMOVALS.swap(new, Ordering::SeqCst);
}

fn install() {
    INSTALL.call_once(|| {
        // SAFETY: a zeroed sigaction is a valid starting point; the handler has the
        // SA_SIGINFO signature and only makes async-signal-safe calls (see on_sigbus).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_sigbus as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut());
        }
    });
}

/// Decimal digits of `n` into `buf`, without allocating; returns the digits.
pub(crate) fn format_u64(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[i..]
}

fn write_all(bytes: &[u8]) {
    let mut b = bytes;
    while !b.is_empty() {
        // SAFETY: write(2) of a live buffer of the given length; async-signal-safe.
        let n = unsafe { libc::write(2, b.as_ptr() as *const libc::c_void, b.len()) };
        if n <= 0 {
            return;
        }
        b = &b[n as usize..];
    }
}

extern "C" fn on_sigbus(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers; si_addr is the
    // faulting address for SIGBUS. The region list and removal list are only ever pushed to
    // (nodes are never freed), so every pointer read here stays valid. The calls made are
    // write, stat, unlink, pause, sigaction and _exit, all async-signal-safe; nothing
    // allocates or locks.
    unsafe {
        let addr = (*info).si_addr() as usize;
        let mut r = REGIONS.load(Ordering::SeqCst) as *const Region;
        let mut found: Option<&Region> = None;
        while !r.is_null() {
            let reg = &*r;
            if reg.active.load(Ordering::SeqCst) && addr >= reg.start && addr < reg.end {
                found = Some(reg);
                break;
            }
            r = reg.next;
        }
        let Some(reg) = found else {
            // Not one of our mappings: a real bug. Restore the default action and return,
            // so the fault repeats and kills the process as it would have.
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut());
            return;
        };
        if HANDLING.swap(true, Ordering::SeqCst) {
            // Another thread is reporting and will end the process.
            loop {
                libc::pause();
            }
        }
        let mut digits = [0u8; 20];
        write_all(&reg.msg);
        write_all(format_u64((addr - reg.start) as u64, &mut digits));
        write_all(b"\n");
        let list = REMOVALS.load(Ordering::SeqCst);
        if !list.is_null() {
            for f in &(*list).0 {
                let mut st: libc::stat = std::mem::zeroed();
                // Only while the path still names the file that was created.
                if libc::stat(f.path.as_ptr(), &mut st) == 0
                    && st.st_dev == f.dev
                    && st.st_ino == f.ino
                {
                    libc::unlink(f.path.as_ptr());
                }
            }
        }
        libc::_exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_without_allocation() {
        let mut b = [0u8; 20];
        assert_eq!(format_u64(0, &mut b), b"0");
        assert_eq!(format_u64(4096, &mut b), b"4096");
        assert_eq!(format_u64(u64::MAX, &mut b), b"18446744073709551615");
    }
}
