//! The text report's line for `--steady-state`: whether the run settled, when, and the
//! window's figures against the limit.

use crate::result::SteadyReport;
use crate::units::{rate_unit, time_unit};

/// A value of the watched figure, in its unit.
fn value(metric: &str, v: f64) -> String {
    match metric {
        "bw" => {
            let (per, unit) = rate_unit(v);
            format!("{:.1} {unit}", v / per)
        }
        "lat" => {
            let (per, unit) = time_unit(v);
            format!("{:.1} {unit}", v / per)
        }
        _ => format!("{v:.0} IOPS"),
    }
}

/// `steady state: reached at 4.0 s (iops range 3.1 % <= 20 % over 3 s, mean 51234 IOPS)`.
pub(crate) fn line(s: &SteadyReport) -> String {
    let (what, got) = if s.slope {
        ("slope", s.slope_pct.abs())
    } else {
        ("range", s.range_pct)
    };
    let per = if s.slope { "/s" } else { "" };
    let outcome = match s.at_s {
        Some(at) if s.reached => format!("reached at {at:.1} s"),
        _ => "NOT reached: the run went on to its longest time".to_string(),
    };
    if s.samples.is_empty() {
        return format!(
            "steady state: {outcome} ({} {what} within {} %{per} over {} s: no sample taken)\n",
            s.metric, s.limit_pct, s.window_s
        );
    }
    let cmp = if s.reached { "<=" } else { "vs limit" };
    format!(
        "steady state: {outcome} ({} {what} {got:.1} %{per} {cmp} {} % over {} of {} s, mean {}, min {}, max {})\n",
        s.metric,
        s.limit_pct,
        s.samples.len(),
        s.window_s,
        value(&s.metric, s.mean),
        value(&s.metric, s.min),
        value(&s.metric, s.max),
    )
}
