//! Ctrl-C and SIGTERM: set a flag the workers read between I/Os, so the run ends cleanly with
//! partial results instead of dying mid-write.

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Install the handlers once; later calls are harmless.
pub(crate) fn install() {
    // SAFETY: installing a handler that only performs an atomic store.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
}

/// The flag itself, for a worker loop that takes its interrupt flag as an argument (so tests
/// can interrupt one run without touching the process-wide flag).
pub(crate) fn flag() -> &'static AtomicBool {
    &INTERRUPTED
}

#[inline]
pub(crate) fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}
