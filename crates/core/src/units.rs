//! Units in one place: parsing sizes, counts and durations the user types, and formatting
//! bytes, rates and times for people.
//!
//! Sizes are powers of 1024 (`512`, `4k`, `1m`, `2g`, `1t`, optionally with a trailing `b`/`ib`).
//! The vxbench front end keeps vxbench's convention that a bare number is in KB; it passes
//! [`BareUnit::Kilobytes`].

use crate::error::UsageError;
use std::time::Duration;

/// What a number without a suffix means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BareUnit {
    Bytes,
    Kilobytes,
    /// A plain count: `k` = 1024 (vxbench: `iocount=128k` is 131072 I/Os).
    Count,
}

fn split_number(s: &str) -> Option<(u64, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if end == 0 {
        return None;
    }
    let n = s[..end].parse::<u64>().ok()?;
    Some((n, &s[end..]))
}

fn suffix_multiplier(suffix: &str) -> Option<u64> {
    let lower = suffix.to_ascii_lowercase();
    let core = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower);
    Some(match core {
        "" => return None,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        _ => return Some(0),
    })
}

/// Parse a size or count. `what` names the option in the error message.
pub fn parse_size_as(s: &str, bare: BareUnit, what: &str) -> Result<u64, UsageError> {
    let t = s.trim();
    let bad = || {
        UsageError(format!(
            "bad {what} '{s}': expected a whole number with an optional k, m, g or t suffix (powers of 1024), e.g. 512, 4k, 1m, 2g"
        ))
    };
    let (n, suffix) = split_number(t).ok_or_else(bad)?;
    let value = match suffix_multiplier(suffix) {
        None if suffix.eq_ignore_ascii_case("b") => n,
        None => match bare {
            BareUnit::Bytes | BareUnit::Count => n,
            BareUnit::Kilobytes => n.checked_mul(1024).ok_or_else(bad)?,
        },
        Some(0) => return Err(bad()),
        Some(m) => n.checked_mul(m).ok_or_else(bad)?,
    };
    Ok(value)
}

/// Parse a size in bytes (`4k` = 4096; a bare number is bytes).
pub fn parse_size(s: &str) -> Result<u64, UsageError> {
    parse_size_as(s, BareUnit::Bytes, "size")
}

/// Parse a duration: `10`, `10s`, `500ms`, `2m`, `1h`, `1.5s`.
pub fn parse_duration(s: &str) -> Result<Duration, UsageError> {
    let t = s.trim();
    let bad = || {
        UsageError(format!(
            "bad duration '{s}': expected a number with an optional unit ms, s, m or h, e.g. 500ms, 10s, 2m"
        ))
    };
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    if end == 0 {
        return Err(bad());
    }
    let n: f64 = t[..end].parse().map_err(|_| bad())?;
    let secs = match &t[end..] {
        "" | "s" | "sec" => n,
        "ms" => n / 1e3,
        "us" => n / 1e6,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(bad()),
    };
    if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `4096` -> `4k`, `1048576` -> `1m`, `1536` -> `1536` (exact, the way a user would type it).
pub fn format_size_exact(bytes: u64) -> String {
    for (shift, suffix) in [(40, "t"), (30, "g"), (20, "m"), (10, "k")] {
        if bytes != 0 && bytes.is_multiple_of(1u64 << shift) {
            return format!("{}{}", bytes >> shift, suffix);
        }
    }
    bytes.to_string()
}

/// Human bytes with binary units: `1.50 MiB`.
pub fn format_bytes(bytes: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} {}", units[i])
    } else {
        format!("{v:.2} {}", units[i])
    }
}

/// How a run's throughput is printed.
///
/// fsbench's one convention outside `vx`: binary magnitudes with their true names and the
/// decimal figure beside them, as fio prints them (`95.6 MiB/s (100.2 MB/s)`): KiB/MiB/GiB are
/// powers of 1024, kB/MB/GB powers of 1000. `vx` keeps vxbench's output, where KB/s and MB/s
/// are 1024 and 1024^2 bytes a second (the white paper's tables).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RateUnit {
    /// Readable binary magnitude with the decimal MB/s beside it (`run`, `replay`).
    #[default]
    #[serde(rename = "auto")]
    Auto,
    /// Always MiB/s (`run --mb`).
    #[serde(rename = "mib")]
    MebiBytes,
    /// vxbench's KB/s, KB = 1024 bytes (`vx`, `vx -k`).
    #[serde(rename = "kb")]
    KiloBytes,
    /// vxbench's MB/s, MB = 1024^2 bytes (`vx -M`).
    #[serde(rename = "mb")]
    MegaBytes,
}

impl RateUnit {
    /// `bytes_per_sec` in this unit, with its label.
    pub fn format(self, bytes_per_sec: f64) -> String {
        match self {
            RateUnit::Auto => format_rate(bytes_per_sec),
            RateUnit::MebiBytes => format!(
                "{:.2} MiB/s ({})",
                bytes_per_sec / MIB,
                format_decimal_rate(bytes_per_sec)
            ),
            RateUnit::KiloBytes => format!("{:.2} KB/s", bytes_per_sec / 1024.0),
            RateUnit::MegaBytes => format!("{:.2} MB/s", bytes_per_sec / MIB),
        }
    }
    /// Whether this is vxbench's convention (its line shape is kept).
    pub fn is_vx(self) -> bool {
        matches!(self, RateUnit::KiloBytes | RateUnit::MegaBytes)
    }
}

const MIB: f64 = 1024.0 * 1024.0;

/// A rate in bytes per second as a person reads it: the binary magnitude that keeps the
/// figure readable, three significant digits or more, and the decimal one beside it:
/// `95.6 MiB/s (100.2 MB/s)`, `812 KiB/s (831.5 kB/s)`, `2.33 GiB/s (2.50 GB/s)`.
pub(crate) fn format_rate(bytes_per_sec: f64) -> String {
    format!(
        "{} ({})",
        format_binary_rate(bytes_per_sec),
        format_decimal_rate(bytes_per_sec)
    )
}

/// `95.6 MiB/s`: the binary magnitude (B, KiB, MiB, GiB, TiB) under 1024 of it.
pub fn format_binary_rate(bytes_per_sec: f64) -> String {
    let (v, unit) = magnitude(
        bytes_per_sec,
        1024.0,
        &["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"],
    );
    format!("{} {unit}", sig3(v))
}

/// `100.2 MB/s`, `2.50 GB/s`: the decimal magnitude (B, kB, MB, GB, TB) under 1000 of it.
pub(crate) fn format_decimal_rate(bytes_per_sec: f64) -> String {
    let (v, unit) = magnitude(
        bytes_per_sec,
        1000.0,
        &["B/s", "kB/s", "MB/s", "GB/s", "TB/s"],
    );
    if v < 10.0 {
        format!("{v:.2} {unit}")
    } else {
        format!("{v:.1} {unit}")
    }
}

/// The binary unit rates up to `max` bytes per second read best in: (bytes per second in one
/// unit, its name `B/s` .. `TiB/s`). A chart's axis shows all its ticks in it.
pub fn rate_unit(max: f64) -> (f64, &'static str) {
    unit_of(max, 1024.0, &["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"])
}

/// The unit times up to `max_ns` nanoseconds read best in: (nanoseconds in one unit, its name
/// `ns`, `µs`, `ms` or `s`).
pub fn time_unit(max_ns: f64) -> (f64, &'static str) {
    unit_of(max_ns, 1000.0, &["ns", "µs", "ms", "s"])
}

fn unit_of(max: f64, step: f64, units: &[&'static str]) -> (f64, &'static str) {
    let (scaled, name) = magnitude(max, step, units);
    let per_unit = if scaled > 0.0 { max / scaled } else { 1.0 };
    // Exact powers of the step (the division above may leave rounding noise).
    let exp = per_unit.log(step).round() as i32;
    (step.powi(exp), name)
}

fn magnitude(v: f64, step: f64, units: &[&'static str]) -> (f64, &'static str) {
    let mut v = if v.is_finite() { v.max(0.0) } else { 0.0 };
    let mut i = 0;
    while v >= step && i + 1 < units.len() {
        v /= step;
        i += 1;
    }
    (v, units[i])
}

/// At least three significant digits: `2.36`, `95.6`, `812`.
fn sig3(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.2}")
    } else if v < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// Seconds for people, to the second or minute: `95` -> `1m35s`, `7300` -> `2h01m`.
pub(crate) fn format_duration(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// Nanoseconds for people: `850 ns`, `12.3 us`, `4.56 ms`, `1.20 s`.
pub fn format_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn axis_units_are_exact_powers() {
        assert_eq!(rate_unit(3.0 * 1024.0 * 1024.0), (1024.0 * 1024.0, "MiB/s"));
        assert_eq!(rate_unit(100.0), (1.0, "B/s"));
        assert_eq!(rate_unit(0.0), (1.0, "B/s"));
        assert_eq!(time_unit(2.5e6), (1e6, "ms"));
        assert_eq!(time_unit(999.0), (1.0, "ns"));
        assert_eq!(time_unit(7e10), (1e9, "s"));
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512").unwrap(), 512);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("4K").unwrap(), 4096);
        assert_eq!(parse_size("1m").unwrap(), 1 << 20);
        assert_eq!(parse_size("2g").unwrap(), 2 << 30);
        assert_eq!(parse_size("2GiB").unwrap(), 2 << 30);
        assert_eq!(parse_size("8b").unwrap(), 8);
        assert!(parse_size("").is_err());
        assert!(parse_size("k").is_err());
        assert!(parse_size("4x").is_err());
        assert!(parse_size("-4k").is_err());
        assert!(parse_size("99999999999999999999").is_err());
        assert!(parse_size("20000000000t").is_err());
    }

    #[test]
    fn vx_conventions() {
        assert_eq!(
            parse_size_as("8", BareUnit::Kilobytes, "iosize").unwrap(),
            8192
        );
        assert_eq!(
            parse_size_as("8k", BareUnit::Kilobytes, "iosize").unwrap(),
            8192
        );
        assert_eq!(
            parse_size_as("35g", BareUnit::Kilobytes, "x").unwrap(),
            35 << 30
        );
        assert_eq!(
            parse_size_as("128k", BareUnit::Count, "iocount").unwrap(),
            131072
        );
        assert_eq!(parse_size_as("50", BareUnit::Count, "iocount").unwrap(), 50);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("1x").is_err());
        assert!(parse_duration("1.2.3").is_err());
    }

    #[test]
    fn formatting() {
        assert_eq!(format_size_exact(4096), "4k");
        assert_eq!(format_size_exact(1 << 20), "1m");
        assert_eq!(format_size_exact(1536), "1536");
        assert_eq!(format_size_exact(0), "0");
        assert_eq!(format_ns(850.0), "850 ns");
        assert_eq!(format_ns(12_300.0), "12.3 us");
        assert_eq!(format_duration(95.0), "1m35s");
        assert_eq!(format_duration(3.4), "3s");
        assert_eq!(format_duration(7300.0), "2h01m");
    }

    #[test]
    fn rates_say_their_units() {
        assert_eq!(format_rate(100_200_000.0), "95.6 MiB/s (100.2 MB/s)");
        assert_eq!(format_rate(831_488.0), "812 KiB/s (831.5 kB/s)");
        assert_eq!(format_rate(2.5e9), "2.33 GiB/s (2.50 GB/s)");
        assert_eq!(format_rate(0.0), "0.00 B/s (0.00 B/s)");
        assert_eq!(RateUnit::KiloBytes.format(2048.0), "2.00 KB/s");
        assert_eq!(RateUnit::MegaBytes.format(3.0 * MIB), "3.00 MB/s");
        assert_eq!(
            RateUnit::MebiBytes.format(3.0 * MIB),
            "3.00 MiB/s (3.15 MB/s)"
        );
    }

    proptest! {
        /// The figures printed are the rate in the units they name, within their rounding.
        #[test]
        fn printed_rates_read_back(bps in 0.0f64..1e13) {
            let s = format_rate(bps);
            let (bin, dec) = s.split_once(" (").unwrap();
            let factor = |u: &str| match u {
                "B/s" => 1.0, "KiB/s" => 1024.0, "MiB/s" => MIB, "GiB/s" => 1024.0 * MIB,
                "TiB/s" => MIB * MIB, "kB/s" => 1e3, "MB/s" => 1e6, "GB/s" => 1e9,
                "TB/s" => 1e12, other => panic!("unit {other}"),
            };
            let (v, u) = bin.split_once(' ').unwrap();
            let back = v.parse::<f64>().unwrap() * factor(u);
            prop_assert!((back - bps).abs() <= 0.0051 * bps + 0.005, "{} vs {}", s, bps);
            let (v, u) = dec.trim_end_matches(')').split_once(' ').unwrap();
            let back = v.parse::<f64>().unwrap() * factor(u);
            prop_assert!((back - bps).abs() <= 0.05 * factor(u) + 1e-9, "{} vs {}", s, bps);
        }

        #[test]
        fn size_parser_never_panics(s in "\\PC{0,24}") {
            let _ = parse_size(&s);
            let _ = parse_size_as(&s, BareUnit::Kilobytes, "x");
            let _ = parse_duration(&s);
        }

        #[test]
        fn size_roundtrip(n in 1u64..1_000_000, shift in prop::sample::select(vec![0u32, 10, 20, 30])) {
            let v = n << shift;
            prop_assert_eq!(parse_size(&format_size_exact(v)).unwrap(), v);
        }
    }
}
