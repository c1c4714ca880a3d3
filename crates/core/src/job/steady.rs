//! `--steady-state`: end a timed run once its rate has settled (fio's steadystate). The spec
//! says which figure is watched (IOPS, bandwidth or mean latency, each over 1-second
//! samples), how many of the last samples are judged together (the window), and what
//! "settled" means: the samples' range within LIMIT % of their mean, or with `:slope` the
//! least-squares slope of the samples (per second) within LIMIT % of their mean.
//! The judging itself is done by the runner's observer (`crate::runner::steady`).

use crate::error::UsageError;
use crate::units::parse_duration;
use crate::usage;
use serde::{Deserialize, Serialize};

/// The longest window judged (samples are kept for it).
pub const MAX_WINDOW_S: u32 = 3600;

/// Which figure of each 1-second sample is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SteadyMetric {
    /// Read + write operations per second.
    Iops,
    /// Read + write bytes per second.
    Bw,
    /// Mean latency of the sample's I/Os.
    Lat,
}

impl SteadyMetric {
    pub fn name(self) -> &'static str {
        match self {
            SteadyMetric::Iops => "iops",
            SteadyMetric::Bw => "bw",
            SteadyMetric::Lat => "lat",
        }
    }
}

/// A parsed `--steady-state` spec: `iops|bw|lat:LIMIT%[:slope]:WINDOW`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SteadyState {
    pub metric: SteadyMetric,
    /// How far the samples may spread (range, or slope per second), in % of their mean.
    pub limit_pct: f64,
    /// Judge the least-squares slope instead of the range.
    pub slope: bool,
    /// How many of the last 1-second samples are judged together.
    pub window_s: u32,
}

const ACCEPTED: &str =
    "expected iops|bw|lat:LIMIT%[:slope]:WINDOW, e.g. iops:5%:30s or bw:1%:slope:1m";

impl SteadyState {
    /// Parse a spec; `what` names the flag or setting in the message.
    pub fn parse(v: &str, what: &str) -> Result<SteadyState, UsageError> {
        let bad = |why: &str| usage!("bad {what} '{v}': {why}; {ACCEPTED}");
        let parts: Vec<&str> = v.trim().split(':').map(str::trim).collect();
        let (metric, limit, slope, window) = match parts.as_slice() {
            [m, l, w] => (*m, *l, false, *w),
            [m, l, s, w] if s.eq_ignore_ascii_case("slope") => (*m, *l, true, *w),
            [_, _, s, _] => return Err(bad(&format!("'{s}' is not slope"))),
            _ => return Err(bad("wrong number of fields")),
        };
        let metric = match metric.to_ascii_lowercase().as_str() {
            "iops" => SteadyMetric::Iops,
            "bw" => SteadyMetric::Bw,
            "lat" => SteadyMetric::Lat,
            m => return Err(bad(&format!("unknown figure '{m}'"))),
        };
        let limit_pct: f64 = limit
            .strip_suffix('%')
            .ok_or_else(|| bad("the limit needs a % sign"))?
            .trim()
            .parse()
            .map_err(|_| bad("the limit is not a number"))?;
        if !(limit_pct > 0.0 && limit_pct <= 1000.0) {
            return Err(bad("the limit must be more than 0 % and at most 1000 %"));
        }
        let d = parse_duration(window).map_err(|e| bad(&format!("window: {}", e.0)))?;
        let secs = d.as_secs_f64();
        if secs.fract() != 0.0 || !(2.0..=MAX_WINDOW_S as f64).contains(&secs) {
            return Err(bad(&format!(
                "the window must be whole seconds, from 2 s to {MAX_WINDOW_S} s"
            )));
        }
        Ok(SteadyState {
            metric,
            limit_pct,
            slope,
            window_s: secs as u32,
        })
    }

    /// The spec as the parser reads it.
    pub fn spec(&self) -> String {
        let slope = if self.slope { ":slope" } else { "" };
        format!(
            "{}:{}%{slope}:{}s",
            self.metric.name(),
            self.limit_pct,
            self.window_s
        )
    }
}

impl TryFrom<String> for SteadyState {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        SteadyState::parse(&s, "steady_state").map_err(|e| e.0)
    }
}

impl From<SteadyState> for String {
    fn from(s: SteadyState) -> String {
        s.spec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_round_trip() {
        let s = SteadyState::parse("iops:20%:3s", "--steady-state").unwrap();
        assert_eq!(
            (s.metric, s.limit_pct, s.slope, s.window_s),
            (SteadyMetric::Iops, 20.0, false, 3)
        );
        let s = SteadyState::parse("BW:0.5%:slope:1m", "--steady-state").unwrap();
        assert_eq!(
            (s.metric, s.limit_pct, s.slope, s.window_s),
            (SteadyMetric::Bw, 0.5, true, 60)
        );
        assert_eq!(SteadyState::parse(&s.spec(), "x").unwrap(), s);
    }

    #[test]
    fn bad_specs_say_what_is_accepted() {
        for bad in [
            "",
            "iops",
            "iops:20%",
            "iops:20:3s",
            "foo:20%:3s",
            "iops:0%:3s",
            "iops:-1%:3s",
            "iops:20%:1s",
            "iops:20%:1.5s",
            "iops:20%:zz",
            "iops:20%:slop:3s",
            "iops:x%:3s",
            "iops:20%:2h",
        ] {
            let e = SteadyState::parse(bad, "--steady-state").unwrap_err().0;
            assert!(e.contains("expected iops|bw|lat"), "{bad}: {e}");
        }
    }
}
