//! Memory budget for work sized by input (a trace's records, a stripe's columns, a replay's
//! threads): estimate first and refuse with the estimate, reserve fallibly, so a large or
//! hostile input is one usage line, never an allocator abort or the OOM killer.

use crate::error::UsageError;
use crate::units::format_bytes;

/// Bytes this process may still allocate: MemAvailable, and under an address-space limit
/// (RLIMIT_AS) what is left of it. `None` when neither can be read.
pub fn available() -> Option<u64> {
    let mem = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb.saturating_mul(1024))
    });
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct we own.
    let as_left = if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut rl) } == 0
        && rl.rlim_cur != libc::RLIM_INFINITY
    {
        let used = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("VmSize:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
            .map(|kb| kb * 1024)
            .unwrap_or(0);
        Some(rl.rlim_cur.saturating_sub(used))
    } else {
        None
    };
    match (mem, as_left) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Refuse `what` when its estimated memory `bytes` exceeds what is available (keeping a
/// quarter back for everything else on the machine).
pub fn check(what: &str, bytes: u64) -> Result<(), UsageError> {
    check_against(what, bytes, available())
}

fn check_against(what: &str, bytes: u64, avail: Option<u64>) -> Result<(), UsageError> {
    match avail {
        Some(a) if bytes > a / 4 * 3 => Err(crate::usage!(
            "{what} would need about {} of memory but only {} is available: {}",
            format_bytes(bytes as f64),
            format_bytes(a as f64),
            "give a smaller input or free memory"
        )),
        _ => Ok(()),
    }
}

/// An empty vector with room for `n` items, or a usage error naming `what` and the size when
/// the allocator cannot provide it (instead of aborting).
pub fn try_vec<T>(n: usize, what: &str) -> Result<Vec<T>, UsageError> {
    let mut v = Vec::new();
    try_reserve(&mut v, n, what)?;
    Ok(v)
}

/// `v.try_reserve(n)`, failing as a usage error naming `what`.
pub fn try_reserve<T>(v: &mut Vec<T>, n: usize, what: &str) -> Result<(), UsageError> {
    v.try_reserve(n).map_err(|_| {
        crate::usage!(
            "{what} would need about {} of memory, more than can be allocated: give a smaller input",
            format_bytes((n as f64) * std::mem::size_of::<T>() as f64)
        )
    })
}

/// A vector of `n` copies of `x`, fallibly.
pub fn try_filled<T: Clone>(n: usize, x: T, what: &str) -> Result<Vec<T>, UsageError> {
    let mut v = try_vec(n, what)?;
    v.resize(n, x);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_above_three_quarters_of_available_with_the_estimate() {
        let e = check_against("thing", 10 << 30, Some(4 << 30)).unwrap_err();
        assert!(e.0.contains("thing would need about"), "{e}");
        assert!(e.0.contains("10.00 GiB") && e.0.contains("4.00 GiB"), "{e}");
        assert!(check_against("thing", 1 << 30, Some(4 << 30)).is_ok());
        assert!(check_against("thing", u64::MAX, None).is_ok());
    }

    #[test]
    fn impossible_reservation_is_an_error_not_an_abort() {
        let r: Result<Vec<u64>, _> = try_vec(usize::MAX / 4, "huge");
        assert!(r.unwrap_err().0.starts_with("huge would need"));
        assert_eq!(try_filled(3, 7u8, "x").unwrap(), vec![7, 7, 7]);
    }

    #[test]
    fn something_is_available_here() {
        assert!(available().is_some_and(|a| a > 0));
    }
}
