//! CPU accounting: user and system seconds of the calling thread (getrusage RUSAGE_THREAD),
//! plus faults and context switches, so CPU seconds are measured, never estimated.

use serde::{Deserialize, Serialize};

/// A getrusage snapshot reduced to what fsbench reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub vol_ctx_switches: u64,
    pub invol_ctx_switches: u64,
}

fn tv(t: libc::timeval) -> f64 {
    t.tv_sec as f64 + t.tv_usec as f64 / 1e6
}

fn from_rusage(r: &libc::rusage) -> Usage {
    Usage {
        cpu_user_s: tv(r.ru_utime),
        cpu_sys_s: tv(r.ru_stime),
        minor_faults: r.ru_minflt as u64,
        major_faults: r.ru_majflt as u64,
        vol_ctx_switches: r.ru_nvcsw as u64,
        invol_ctx_switches: r.ru_nivcsw as u64,
    }
}

fn rusage(who: libc::c_int) -> Usage {
    // SAFETY: getrusage writes into the zeroed struct we own; `who` is a valid constant.
    unsafe {
        let mut r: libc::rusage = std::mem::zeroed();
        if libc::getrusage(who, &mut r) != 0 {
            return Usage::default();
        }
        from_rusage(&r)
    }
}

/// Usage of the calling thread so far. getrusage counts a thread's CPU time up to its last
/// scheduler tick or switch, so a run of a few milliseconds can show none; the thread CPU
/// clock counts up to now. The total is the clock's; it is split between user and system
/// time as getrusage split the time it has seen (time it has not seen yet, in a thread
/// getrusage has charged nothing, is counted as system time: an I/O thread's time is the
/// kernel's).
pub(crate) fn thread_usage() -> Usage {
    let mut u = rusage(libc::RUSAGE_THREAD);
    let total = thread_cpu_ns() as f64 / 1e9;
    let seen = u.cpu_s();
    if total > seen {
        if seen > 0.0 {
            let scale = total / seen;
            u.cpu_user_s *= scale;
            u.cpu_sys_s *= scale;
        } else {
            u.cpu_sys_s = total;
        }
    }
    u
}

impl Usage {
    /// What was used between `earlier` and `self`.
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            cpu_user_s: (self.cpu_user_s - earlier.cpu_user_s).max(0.0),
            cpu_sys_s: (self.cpu_sys_s - earlier.cpu_sys_s).max(0.0),
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
            major_faults: self.major_faults.saturating_sub(earlier.major_faults),
            vol_ctx_switches: self
                .vol_ctx_switches
                .saturating_sub(earlier.vol_ctx_switches),
            invol_ctx_switches: self
                .invol_ctx_switches
                .saturating_sub(earlier.invol_ctx_switches),
        }
    }

    /// CPU seconds the way the white paper reports them: user + system.
    pub fn cpu_s(&self) -> f64 {
        self.cpu_user_s + self.cpu_sys_s
    }
}

impl std::ops::AddAssign<&Usage> for Usage {
    fn add_assign(&mut self, o: &Usage) {
        self.cpu_user_s += o.cpu_user_s;
        self.cpu_sys_s += o.cpu_sys_s;
        self.minor_faults += o.minor_faults;
        self.major_faults += o.major_faults;
        self.vol_ctx_switches += o.vol_ctx_switches;
        self.invol_ctx_switches += o.invol_ctx_switches;
    }
}

/// CPU time of the calling thread so far, in nanoseconds (CLOCK_THREAD_CPUTIME_ID: precise
/// where getrusage counts in scheduler ticks, so short phases are not rounded to zero).
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_burst_of_work_is_charged() {
        // Far less than a scheduler tick of work: getrusage alone may show none of it.
        let before = thread_usage();
        let mut x = 0u64;
        for _ in 0..20_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let used = thread_usage().since(&before);
        assert!(used.cpu_s() > 0.0, "{used:?}");
    }

    #[test]
    fn thread_cpu_grows_with_work() {
        // Spin until this thread's own CPU time has grown by 20 ms. On a loaded machine that
        // takes longer in wall time, but it must happen: a broken probe never gets there.
        let before = thread_usage();
        let mut x = 0u64;
        let start = std::time::Instant::now();
        let mut used = Usage::default();
        while start.elapsed().as_secs() < 20 {
            for _ in 0..100_000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            used = thread_usage().since(&before);
            if used.cpu_s() >= 0.02 {
                break;
            }
        }
        std::hint::black_box(x);
        assert!(used.cpu_s() >= 0.02, "cpu {}", used.cpu_s());
        assert!(used.cpu_user_s > 0.0, "spinning is user time");
    }
}
