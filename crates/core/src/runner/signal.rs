//! Ctrl-C and SIGTERM: set a flag the workers read between I/Os, so the run ends cleanly with
//! partial results instead of dying mid-write.

use std::sync::atomic::{AtomicBool, Ordering};

/// Workers stop at their next I/O: set by a signal, or by a distributed run's stonewall.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// A signal arrived (the run is partial); a stonewall stop alone leaves it false.
static SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    // Only atomic stores: async-signal-safe.
    SIGNALLED.store(true, Ordering::SeqCst);
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Stop the workers of this process at their next I/O without marking the run interrupted:
/// the stonewall of a distributed run (`crate::mpi`), which is a planned end, not Ctrl-C.
pub fn stop_workers() {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Take back a stonewall stop ([`stop_workers`]) once the stopped workers are over, so that
/// the next timed part of the same process (a workload's next `run` on a rank) starts
/// unstopped. A signal's stop stays: it is set again when a signal arrived meanwhile.
pub fn clear_stonewall_stop() {
    INTERRUPTED.store(false, Ordering::SeqCst);
    if SIGNALLED.load(Ordering::SeqCst) {
        INTERRUPTED.store(true, Ordering::SeqCst);
    }
}

/// Install the handlers once; later calls are harmless.
pub fn install() {
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
pub fn flag() -> &'static AtomicBool {
    &INTERRUPTED
}

/// The workers of this process were told to stop: by a signal, or by a stonewall
/// ([`stop_workers`]). The process runner forwards it to worker processes.
pub(crate) fn stop_requested() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

#[inline]
pub fn interrupted() -> bool {
    SIGNALLED.load(Ordering::Relaxed)
}
