//! Think time (`--think DUR[:BLOCKS]`, fio's thinktime and thinktime_blocks): each thread
//! pauses for DUR after every BLOCKS of its I/Os, as an application that computes between
//! requests does. The pause is outside every timed I/O, so latencies stay those of the
//! I/O; throughput counts it, as the application would see it. Written as text on the
//! command line, in job files and on sweep axes, so it has one parser and prints back as
//! the text it reads.

use crate::error::UsageError;
use crate::units::parse_duration;
use crate::usage;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Longest pause: a minute (a longer one is a stopped benchmark, not think time).
pub(crate) const MAX_THINK: Duration = Duration::from_secs(60);
/// Most I/Os between pauses.
pub(crate) const MAX_THINK_BLOCKS: u64 = 1 << 30;

/// A pause of `pause` after every `every` I/Os of a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Think {
    pub pause: Duration,
    pub every: u64,
}

const THINK_FORMS: &str =
    "expected DUR[:BLOCKS], a pause of more than 0 up to 60s (e.g. 10ms, 250us) after every BLOCKS I/Os (1 to 1073741824, default 1)";

impl Think {
    /// Read `10ms` or `10ms:8`; `what` names the option in the message.
    pub fn parse(v: &str, what: &str) -> Result<Think, UsageError> {
        let bad = |why: &str| usage!("bad {what} '{v}': {why}; {THINK_FORMS}");
        let (dur, blocks) = match v.split_once(':') {
            Some((d, b)) => (d, Some(b)),
            None => (v, None),
        };
        let pause = parse_duration(dur).map_err(|_| bad("not a duration"))?;
        if pause.is_zero() || pause > MAX_THINK {
            return Err(bad("the pause is out of range"));
        }
        let every = match blocks {
            None => 1,
            Some(b) => b
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|n| (1..=MAX_THINK_BLOCKS).contains(n))
                .ok_or_else(|| bad("BLOCKS is not a whole number in range"))?,
        };
        Ok(Think { pause, every })
    }

    /// The spec as [`Think::parse`] reads it.
    pub fn spec(&self) -> String {
        let ns = self.pause.as_nanos();
        let pause = if ns.is_multiple_of(1_000_000) {
            format!("{}ms", ns / 1_000_000)
        } else {
            format!("{}us", ns as f64 / 1e3)
        };
        match self.every {
            1 => pause,
            n => format!("{pause}:{n}"),
        }
    }
}

impl TryFrom<String> for Think {
    type Error = String;
    fn try_from(s: String) -> Result<Think, String> {
        Think::parse(&s, "think time").map_err(|e| e.0)
    }
}

impl From<Think> for String {
    fn from(t: Think) -> String {
        t.spec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pause_and_blocks() {
        let t = Think::parse("10ms", "--think").unwrap();
        assert_eq!((t.pause, t.every), (Duration::from_millis(10), 1));
        let t = Think::parse("250us:8", "--think").unwrap();
        assert_eq!((t.pause, t.every), (Duration::from_micros(250), 8));
        assert_eq!(t.spec(), "250us:8");
        assert_eq!(Think::parse("10ms:1", "x").unwrap().spec(), "10ms");
        assert_eq!(Think::parse(&t.spec(), "x").unwrap(), t);
        for bad in [
            "", "0", "0ms", "2m", "10ms:0", "10ms:", "10ms:x", "x", "10ms:-1",
        ] {
            let e = Think::parse(bad, "--think").unwrap_err().0;
            assert!(e.starts_with("bad --think"), "{bad}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
