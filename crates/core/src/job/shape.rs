//! Two things a Job says beyond where and how much: which blocks random I/O favours
//! (`--distribution`, fio's random_distribution) and what the bytes it writes look like
//! (`--buffer-pattern`, `--buffer-compress`, `--dedupe`, fio's buffer options). Both are
//! values written as text on the command line, in job files and on sweep axes, so each has
//! one parser here and prints back as the text it reads.

use crate::error::UsageError;
use crate::usage;
use serde::{Deserialize, Serialize};

/// One zone of `zoned:`: `io_pct` % of the I/Os land in the next `size_pct` % of the file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Zone {
    pub io_pct: f64,
    pub size_pct: f64,
}

/// Most zones a `zoned:` spec may list.
pub(crate) const MAX_ZONES: usize = 256;

/// How random offsets are drawn over the blocks of the target.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Distribution {
    /// Every block equally likely.
    #[default]
    Uniform,
    /// Block of popularity rank k drawn with weight 1 / k^theta; the hot blocks are scattered
    /// over the file.
    Zipf { theta: f64 },
    /// Pareto with parameter h: a share h of the I/Os lands on the hottest (1 - h) of the
    /// blocks (h = 0.8: 80 % on 20 %); the hot blocks are scattered over the file.
    Pareto { h: f64 },
    /// Gaussian around the middle of the file, standard deviation `sigma_pct` % of it.
    Normal { sigma_pct: f64 },
    /// Zones in file order, each taking a share of the I/Os, uniform inside.
    Zoned(Vec<Zone>),
}

const DIST_FORMS: &str =
    "uniform, zipf:THETA (0 < THETA <= 10), pareto:H (0 < H < 1), normal:SIGMA% (0 < SIGMA <= 100), zoned:P/R:P/R... (I/O % / size %, each column adding up to 100)";

fn number(v: &str, whole: &str, what: &str) -> Result<f64, UsageError> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .ok_or_else(|| usage!("bad {what} '{whole}': '{v}' is not a number; expected {DIST_FORMS}"))
}

impl Distribution {
    /// Read `uniform`, `zipf:1.2`, `pareto:0.8`, `normal:10%`, `zoned:50/5:30/15:20/80`;
    /// `what` names the option in the message.
    pub fn parse<'a>(v: &'a str, what: &str) -> Result<Distribution, UsageError> {
        let (kind, arg) = match v.split_once(':') {
            Some((k, a)) => (k, Some(a)),
            None => (v, None),
        };
        let bad = |why: &str| usage!("bad {what} '{v}': {why}; expected {DIST_FORMS}");
        let arg = arg.filter(|a| !a.is_empty());
        let need = |a: Option<&'a str>| a.ok_or_else(|| bad("missing value"));
        Ok(match kind {
            "uniform" | "random" if arg.is_none() => Distribution::Uniform,
            "zipf" => {
                let theta = number(need(arg)?, v, what)?;
                if !(theta > 0.0 && theta <= 10.0) {
                    return Err(bad("THETA out of range"));
                }
                Distribution::Zipf { theta }
            }
            "pareto" => {
                let h = number(need(arg)?, v, what)?;
                if !(h > 0.0 && h < 1.0) {
                    return Err(bad("H out of range"));
                }
                Distribution::Pareto { h }
            }
            "normal" | "gauss" => {
                let a = need(arg)?;
                let sigma_pct = number(a.strip_suffix('%').unwrap_or(a), v, what)?;
                if !(sigma_pct > 0.0 && sigma_pct <= 100.0) {
                    return Err(bad("SIGMA out of range"));
                }
                Distribution::Normal { sigma_pct }
            }
            "zoned" => Distribution::Zoned(parse_zones(need(arg)?, v, what)?),
            _ => return Err(bad("unknown distribution")),
        })
    }

    pub fn is_uniform(&self) -> bool {
        *self == Distribution::Uniform
    }

    /// The spec as [`Distribution::parse`] reads it.
    pub fn spec(&self) -> String {
        match self {
            Distribution::Uniform => "uniform".into(),
            Distribution::Zipf { theta } => format!("zipf:{theta}"),
            Distribution::Pareto { h } => format!("pareto:{h}"),
            Distribution::Normal { sigma_pct } => format!("normal:{sigma_pct}%"),
            Distribution::Zoned(z) => {
                let parts: Vec<String> = z
                    .iter()
                    .map(|z| format!("{}/{}", z.io_pct, z.size_pct))
                    .collect();
                format!("zoned:{}", parts.join(":"))
            }
        }
    }
}

fn parse_zones(arg: &str, whole: &str, what: &str) -> Result<Vec<Zone>, UsageError> {
    let bad = |why: String| usage!("bad {what} '{whole}': {why}; expected {DIST_FORMS}");
    let mut zones = Vec::new();
    for part in arg.split(':') {
        let Some((p, r)) = part.split_once('/') else {
            return Err(bad(format!("zone '{part}' is not P/R")));
        };
        let io_pct = number(p, whole, what)?;
        let size_pct = number(r, whole, what)?;
        let in_range = (0.0..=100.0).contains(&io_pct) && size_pct > 0.0 && size_pct <= 100.0;
        if !in_range {
            return Err(bad(format!(
                "zone '{part}': P must be 0 to 100 and R more than 0 up to 100"
            )));
        }
        zones.push(Zone { io_pct, size_pct });
        if zones.len() > MAX_ZONES {
            return Err(bad(format!("more than {MAX_ZONES} zones")));
        }
    }
    let io: f64 = zones.iter().map(|z| z.io_pct).sum();
    let size: f64 = zones.iter().map(|z| z.size_pct).sum();
    if (io - 100.0).abs() > 0.01 || (size - 100.0).abs() > 0.01 {
        return Err(bad(format!(
            "the I/O shares add up to {io} and the sizes to {size}, both must be 100"
        )));
    }
    Ok(zones)
}

impl TryFrom<String> for Distribution {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Distribution::parse(&s, "distribution").map_err(|e| e.0)
    }
}

impl From<Distribution> for String {
    fn from(d: Distribution) -> String {
        d.spec()
    }
}

/// Where `--dedupe`'s duplicate blocks come from (fio's dedupe_mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DedupeMode {
    /// One of a few blocks every worker of the run shares, written again and again.
    #[default]
    Repeat,
    /// A working set of distinct blocks, `--dedupe-working-set` % of the file's blocks.
    WorkingSet,
}

/// The working set's share of the file's blocks when `--dedupe-working-set` is not given
/// (fio's default dedupe_working_set_percentage).
pub(crate) const DEFAULT_WORKING_SET_PCT: u8 = 5;

impl DedupeMode {
    pub fn parse(v: &str, what: &str) -> Result<DedupeMode, UsageError> {
        match v {
            "repeat" => Ok(DedupeMode::Repeat),
            "working-set" | "working_set" => Ok(DedupeMode::WorkingSet),
            _ => Err(usage!("bad {what} '{v}': expected repeat or working-set")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DedupeMode::Repeat => "repeat",
            DedupeMode::WorkingSet => "working-set",
        }
    }
}

/// What the bytes of every write are (fio's buffer_pattern).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum BufferPattern {
    /// Zero bytes.
    Zero,
    /// Fresh pseudo-random bytes for every write.
    Random,
    /// These bytes, repeated over the block.
    Bytes(Vec<u8>),
}

/// Longest `0xHEX` pattern, in bytes.
pub(crate) const MAX_PATTERN_BYTES: usize = 512;

impl BufferPattern {
    pub fn parse(v: &str, what: &str) -> Result<BufferPattern, UsageError> {
        let expected =
            "expected zero, random or 0xHEX (1 to 512 bytes, an even number of hex digits)";
        Ok(match v {
            "zero" | "zeros" => BufferPattern::Zero,
            "random" => BufferPattern::Random,
            _ => {
                let hex = v
                    .strip_prefix("0x")
                    .or_else(|| v.strip_prefix("0X"))
                    .ok_or_else(|| usage!("bad {what} '{v}': {expected}"))?;
                if hex.is_empty()
                    || hex.len() % 2 != 0
                    || hex.len() / 2 > MAX_PATTERN_BYTES
                    || !hex.bytes().all(|b| b.is_ascii_hexdigit())
                {
                    return Err(usage!("bad {what} '{v}': {expected}"));
                }
                let bytes = (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex digits"))
                    .collect();
                BufferPattern::Bytes(bytes)
            }
        })
    }

    pub fn spec(&self) -> String {
        match self {
            BufferPattern::Zero => "zero".into(),
            BufferPattern::Random => "random".into(),
            BufferPattern::Bytes(b) => {
                let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
                format!("0x{hex}")
            }
        }
    }
}

impl TryFrom<String> for BufferPattern {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        BufferPattern::parse(&s, "buffer_pattern").map_err(|e| e.0)
    }
}

impl From<BufferPattern> for String {
    fn from(p: BufferPattern) -> String {
        p.spec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distributions_read_and_print_back() {
        for s in [
            "uniform",
            "zipf:1.2",
            "pareto:0.8",
            "normal:10%",
            "zoned:50/5:30/15:20/80",
        ] {
            let d = Distribution::parse(s, "--distribution").unwrap();
            assert_eq!(d.spec(), s);
        }
        assert_eq!(
            Distribution::parse("normal:7", "x").unwrap(),
            Distribution::Normal { sigma_pct: 7.0 }
        );
        for bad in [
            "",
            "zipf",
            "zipf:",
            "zipf:0",
            "zipf:abc",
            "pareto:1",
            "normal:0%",
            "zoned:50/5",
            "zoned:50/50:40/50",
            "zoned:a/b",
            "zoned:50-50:50/50",
            "gaussian",
            "zipf:nan",
        ] {
            let e = Distribution::parse(bad, "--distribution").unwrap_err();
            assert!(e.0.starts_with("bad --distribution"), "{bad}: {}", e.0);
            assert!(!e.0.contains('\n'));
        }
    }

    #[test]
    fn patterns_read_and_print_back() {
        assert_eq!(
            BufferPattern::parse("0xDEADbeef", "p").unwrap(),
            BufferPattern::Bytes(vec![0xde, 0xad, 0xbe, 0xef])
        );
        for s in ["zero", "random", "0x00ff"] {
            assert_eq!(BufferPattern::parse(s, "p").unwrap().spec(), s);
        }
        for bad in ["", "0x", "0xabc", "0xgg", "ones", "deadbeef"] {
            assert!(BufferPattern::parse(bad, "p").is_err(), "{bad}");
        }
    }
}
