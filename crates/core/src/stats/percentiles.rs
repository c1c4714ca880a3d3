//! The latency percentiles a user asks for (`--percentiles 50,99,99.999`, fio's
//! percentile_list): the list, checked, and the values, computed after the run from the
//! histogram buckets the Result keeps. They go into the Result as `lat_percentiles_ns`, an
//! object keyed the way `lat_ns` keys its own (`p50`, `p99_9`, `p99_999`; nanoseconds), in
//! the order asked, and the text report shows them in place of its default list.

use super::hist::LatencyHist;
use super::LatencySummary;
use crate::error::UsageError;
use crate::usage;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

/// Most percentiles one list may ask for.
pub(crate) const MAX_PERCENTILES: usize = 16;

const FORMS: &str = "expected a comma list of up to 16 different percentiles, each more than 0 and less than 100 (e.g. 50,90,99,99.9,99.99)";

/// Read `50,90,99,99.9`: each 0 < p < 100, at most `MAX_PERCENTILES`, no duplicates.
pub fn parse_list(text: &str) -> Result<Vec<f64>, UsageError> {
    let bad = |why: String| usage!("bad --percentiles '{text}': {why}; {FORMS}");
    let mut out: Vec<f64> = Vec::new();
    for part in text.split(',').map(str::trim) {
        let p: f64 = part
            .parse()
            .ok()
            .filter(|p: &f64| p.is_finite())
            .ok_or_else(|| bad(format!("'{part}' is not a number")))?;
        if !(p > 0.0 && p < 100.0) {
            return Err(bad(format!("{part} is out of range")));
        }
        if out.iter().any(|q| key(*q) == key(p)) {
            return Err(bad(format!("{part} is given twice")));
        }
        out.push(p);
        if out.len() > MAX_PERCENTILES {
            return Err(bad(format!("more than {MAX_PERCENTILES}")));
        }
    }
    Ok(out)
}

/// The JSON key of percentile `p`: `p99_9` for 99.9, as in `lat_ns`.
pub(crate) fn key(p: f64) -> String {
    format!("p{}", p.to_string().replace('.', "_"))
}

/// The percentile a key names (`p99_9` is 99.9).
fn from_key(k: &str) -> Option<f64> {
    k.strip_prefix('p')?.replace('_', ".").parse().ok()
}

/// Percentiles asked for and their values in nanoseconds, in the order asked (empty when
/// none were asked: `lat_ns` holds the default list).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PercentileValues(pub Vec<(f64, u64)>);

impl PercentileValues {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The values of `list` in the latency kept as `buckets`, held inside the exact
    /// minimum and maximum of `summary` (the buckets know them only to a bucket's width).
    pub(crate) fn of(list: &[f64], buckets: &[[u64; 2]], summary: &LatencySummary) -> Self {
        if buckets.is_empty() || summary.count == 0 {
            return PercentileValues::default();
        }
        let h = LatencyHist::from_buckets(buckets);
        PercentileValues(
            list.iter()
                .map(|p| {
                    let v = h.quantile(p / 100.0).clamp(summary.min, summary.max);
                    (*p, v)
                })
                .collect(),
        )
    }
}

impl Serialize for PercentileValues {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (p, v) in &self.0 {
            m.serialize_entry(&key(*p), v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for PercentileValues {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PercentileValues;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of percentiles (p50, p99_9, ...) in nanoseconds")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = a.next_entry::<String, u64>()? {
                    let p = from_key(&k).ok_or_else(|| {
                        serde::de::Error::custom(format!("'{k}' is not a percentile key"))
                    })?;
                    if out.len() >= MAX_PERCENTILES {
                        return Err(serde::de::Error::custom("more than 16 percentiles"));
                    }
                    out.push((p, v));
                }
                out.sort_by(|a, b| a.0.total_cmp(&b.0));
                Ok(PercentileValues(out))
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_checked() {
        assert_eq!(
            parse_list("50, 99.9,99.999").unwrap(),
            vec![50.0, 99.9, 99.999]
        );
        for bad in ["", "0", "100", "50,50", "x", "50,,90", "-1", "nan", "inf"] {
            let e = parse_list(bad).unwrap_err().0;
            assert!(e.starts_with("bad --percentiles"), "{bad}: {e}");
        }
        let seventeen: Vec<String> = (1..=17).map(|i| i.to_string()).collect();
        assert!(parse_list(&seventeen.join(",")).is_err());
        assert!(parse_list(&seventeen[..16].join(",")).is_ok());
    }

    #[test]
    fn values_come_from_the_buckets_in_order_and_round_trip() {
        let mut h = LatencyHist::new();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let s = h.summary();
        let pv = PercentileValues::of(&[99.9, 50.0], &h.to_buckets(), &s);
        assert_eq!(pv.0[0].0, 99.9);
        assert!((pv.0[0].1 as f64 - s.p99_9 as f64).abs() <= s.p99_9 as f64 * 0.01);
        assert!((pv.0[1].1 as f64 - 500_000.0).abs() <= 5_000.0, "{:?}", pv);
        let json = serde_json::to_string(&pv).unwrap();
        assert!(json.starts_with("{\"p99_9\":"), "{json}");
        let back: PercentileValues = serde_json::from_str(&json).unwrap();
        assert_eq!(back.0.len(), 2);
        assert_eq!(back.0[0].0, 50.0);
    }
}
