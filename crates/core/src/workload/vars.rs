//! Variables, random variables (`define randvar`) and custom variables (`cvar(...)`), with our
//! own samplers: a splitmix/xorshift generator and Marsaglia–Tsang gamma (no extra crates).

use super::lexer::shown;
use crate::error::UsageError;
use crate::usage;
use std::collections::HashMap;
use std::sync::Arc;

/// Small, fast, seedable generator (xorshift64*), seeded through splitmix64.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [0, 1).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in [0, n).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            ((self.next_u64() as u128 * n as u128) >> 64) as u64
        }
    }
    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = self.unit().max(f64::MIN_POSITIVE);
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
    /// Gamma(shape k, scale 1): Marsaglia & Tsang (2000); shape < 1 by the boost
    /// Gamma(k) = Gamma(k+1) * U^(1/k).
    pub fn gamma(&mut self, shape: f64) -> f64 {
        if shape <= 0.0 || !shape.is_finite() {
            return 0.0;
        }
        if shape < 1.0 {
            let u = self.unit().max(f64::MIN_POSITIVE);
            return self.gamma(shape + 1.0) * u.powf(1.0 / shape);
        }
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let (x, v) = loop {
                let x = self.normal();
                let v = 1.0 + c * x;
                if v > 0.0 {
                    break (x, v * v * v);
                }
            };
            let u = self.unit();
            if u < 1.0 - 0.0331 * x * x * x * x
                || u.max(f64::MIN_POSITIVE).ln() < 0.5 * x * x + d * (1.0 - v + v.ln())
            {
                return d * v;
            }
        }
    }
}

/// A distribution a randvar or cvar draws from.
#[derive(Debug, Clone, PartialEq)]
pub enum Dist {
    /// Uniform on [min, min + 2*(mean-min)] (Filebench randvar `type=uniform`), or [lower, upper].
    Uniform {
        lower: f64,
        upper: f64,
    },
    /// Gamma with the given mean and shape (Filebench: `gamma` is the shape).
    Gamma {
        mean: f64,
        shape: f64,
    },
    Exponential {
        mean: f64,
    },
    Normal {
        mean: f64,
        sigma: f64,
    },
    LogNormal {
        shape: f64,
        scale: f64,
    },
    Weibull {
        shape: f64,
        scale: f64,
    },
    Triangular {
        lower: f64,
        upper: f64,
        mode: f64,
    },
    Erlang {
        shape: u32,
        rate: f64,
    },
    /// Zipf: rank k of 1..=n with weight 1/k^theta, the value k * scale (rank 1, the
    /// smallest value, is the most frequent).
    Zipf {
        n: u64,
        theta: f64,
        scale: f64,
        sampler: crate::runner::pick::Zipf,
    },
    /// Pareto (type I): scale / U^(1/shape), never below `scale`; a heavy right tail.
    Pareto {
        shape: f64,
        scale: f64,
    },
    /// Rows of (percent, min, max): pick a row by weight, then uniform in [min, max].
    Table(Vec<(f64, f64, f64)>),
}

/// A random variable: distribution plus Filebench's `min` (added offset), `round` and clamps.
#[derive(Debug, Clone, PartialEq)]
pub struct RandVar {
    pub dist: Dist,
    pub min: f64,
    pub max: Option<f64>,
    pub round: f64,
    pub seed: Option<u64>,
}

impl RandVar {
    pub fn mean(&self) -> f64 {
        let m = match &self.dist {
            Dist::Uniform { lower, upper } => (lower + upper) / 2.0,
            Dist::Gamma { mean, .. } | Dist::Exponential { mean } | Dist::Normal { mean, .. } => {
                *mean
            }
            Dist::LogNormal { shape, scale } => (scale.ln() + shape * shape / 2.0).exp(),
            Dist::Weibull { scale, .. } => *scale,
            Dist::Triangular { lower, upper, mode } => (lower + upper + mode) / 3.0,
            Dist::Erlang { shape, rate } => *shape as f64 / rate,
            Dist::Zipf {
                n, theta, scale, ..
            } => zipf_mean(*n, *theta) * scale,
            Dist::Pareto { shape, scale } => shape * scale / (shape - 1.0),
            Dist::Table(rows) => {
                let tot: f64 = rows.iter().map(|r| r.0).sum();
                rows.iter().map(|r| r.0 * (r.1 + r.2) / 2.0).sum::<f64>() / tot.max(1e-9)
            }
        };
        self.min + m
    }

    pub fn sample(&self, rng: &mut Rng) -> f64 {
        let x = match &self.dist {
            Dist::Uniform { lower, upper } => lower + rng.unit() * (upper - lower),
            Dist::Gamma { mean, shape } => rng.gamma(*shape) * mean / shape,
            Dist::Exponential { mean } => -mean * (1.0 - rng.unit()).ln(),
            Dist::Normal { mean, sigma } => mean + sigma * rng.normal(),
            Dist::LogNormal { shape, scale } => (scale.ln() + shape * rng.normal()).exp(),
            Dist::Weibull { shape, scale } => scale * (-(1.0 - rng.unit()).ln()).powf(1.0 / shape),
            Dist::Triangular { lower, upper, mode } => {
                let u = rng.unit();
                let f = (mode - lower) / (upper - lower).max(1e-12);
                if u < f {
                    lower + (u * (upper - lower) * (mode - lower)).sqrt()
                } else {
                    upper - ((1.0 - u) * (upper - lower) * (upper - mode)).sqrt()
                }
            }
            Dist::Erlang { shape, rate } => {
                (0..*shape).map(|_| -(1.0 - rng.unit()).ln()).sum::<f64>() / rate
            }
            Dist::Zipf { scale, sampler, .. } => sampler.sample_with(|| rng.unit()) as f64 * scale,
            Dist::Pareto { shape, scale } => scale / (1.0 - rng.unit()).powf(1.0 / shape),
            Dist::Table(rows) => {
                let tot: f64 = rows.iter().map(|r| r.0).sum();
                let mut pick = rng.unit() * tot;
                let mut chosen = rows[rows.len() - 1];
                for r in rows {
                    if pick < r.0 {
                        chosen = *r;
                        break;
                    }
                    pick -= r.0;
                }
                chosen.1 + rng.unit() * (chosen.2 - chosen.1)
            }
        };
        let mut v = (self.min + x).max(self.min).max(0.0);
        if let Some(m) = self.max {
            v = v.min(m);
        }
        if self.round > 0.0 {
            v = (v / self.round).round() * self.round;
        }
        v
    }
}

/// What a `$name` is bound to.
#[derive(Debug, Clone, PartialEq)]
pub enum Var {
    Num(f64),
    Str(String),
    Bool(bool),
    Rand(Arc<RandVar>),
}

impl Var {
    pub fn describe(&self) -> String {
        match self {
            Var::Num(n) => format_num(*n),
            Var::Str(s) => s.clone(),
            Var::Bool(b) => b.to_string(),
            Var::Rand(r) => format!("random(mean {})", format_num(r.mean())),
        }
    }
}

pub fn format_num(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e18 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

/// Parse `key:value;key:value` cvar parameters. A mistake is a usage error (the loader adds
/// where it is).
pub fn parse_params(s: &str) -> Result<HashMap<String, f64>, UsageError> {
    let mut out = HashMap::new();
    for part in s.split(';').filter(|p| !p.trim().is_empty()) {
        let (k, v) = part.split_once(':').ok_or_else(|| {
            usage!(
                "bad cvar parameter '{}': expected key:value, e.g. mean:16384;gamma:1.5",
                shown(part)
            )
        })?;
        let v: f64 = v.trim().parse().map_err(|_| {
            usage!(
                "bad cvar parameter value '{}' for '{}': expected a number",
                shown(v),
                shown(k)
            )
        })?;
        out.insert(k.trim().to_string(), v);
    }
    Ok(out)
}

/// Build a cvar distribution from its type name and parameters; an unknown type or
/// inconsistent parameters are a usage error.
pub fn cvar_dist(kind: &str, p: &HashMap<String, f64>) -> Result<Dist, UsageError> {
    let get = |k: &str, d: f64| p.get(k).copied().unwrap_or(d);
    let given = kind;
    let kind = kind.strip_prefix("cvar-").unwrap_or(kind);
    let dist = match kind {
        "gamma" => Dist::Gamma { mean: get("mean", 4096.0), shape: get("gamma", 1.5) },
        "exponential" => Dist::Exponential { mean: get("mean", 4096.0) },
        "normal" => Dist::Normal { mean: get("mean", 4096.0), sigma: get("sigma", 1024.0) },
        "lognormal" => Dist::LogNormal { shape: get("shape", 1.0), scale: get("scale", 4096.0) },
        "weibull" => Dist::Weibull { shape: get("shape", 1.5), scale: get("scale", 4096.0) },
        "triangular" => Dist::Triangular { lower: get("lower", 0.0), upper: get("upper", 8192.0), mode: get("mode", 4096.0) },
        "uniform" => Dist::Uniform { lower: get("lower", 0.0), upper: get("upper", 8192.0) },
        "erlang" => Dist::Erlang { shape: get("shape", 2.0).max(1.0) as u32, rate: get("rate", 1.0 / 2048.0) },
        "zipf" => return zipf(get("n", 16.0), get("theta", 1.2), get("scale", 4096.0)),
        "pareto" => Dist::Pareto { shape: get("shape", 1.5), scale: get("scale", 4096.0) },
        _ => {
            return Err(usage!(
                "unknown cvar type '{}': expected cvar-gamma, cvar-exponential, cvar-normal, cvar-lognormal, cvar-weibull, cvar-triangular, cvar-uniform, cvar-erlang, cvar-zipf or cvar-pareto",
                shown(given)
            ))
        }
    };
    match &dist {
        Dist::Gamma { mean, shape } if *mean < 0.0 || *shape <= 0.0 => {
            Err(usage!("cvar-gamma needs mean >= 0 and gamma > 0"))
        }
        Dist::Triangular { lower, upper, mode } if !(lower <= mode && mode <= upper) => {
            Err(usage!("cvar-triangular needs lower <= mode <= upper"))
        }
        Dist::Uniform { lower, upper } if lower > upper => {
            Err(usage!("cvar-uniform needs lower <= upper"))
        }
        // shape <= 1 has no finite mean, and a file set is sized by its mean.
        Dist::Pareto { shape, scale } if !(*shape > 1.0 && *scale > 0.0 && shape.is_finite()) => {
            Err(usage!(
                "cvar-pareto needs shape > 1 (a finite mean) and scale > 0"
            ))
        }
        _ => Ok(dist),
    }
}

/// Most ranks a cvar-zipf takes: its mean is summed over them once, when the file is read.
const ZIPF_MAX_N: f64 = 1e7;

/// A cvar-zipf over ranks 1..=n (n a whole number), exponent theta > 0, values rank * scale.
fn zipf(n: f64, theta: f64, scale: f64) -> Result<Dist, UsageError> {
    let n_ok = (1.0..=ZIPF_MAX_N).contains(&n) && n.fract() == 0.0;
    let theta_ok = theta > 0.0 && theta.is_finite();
    let scale_ok = scale > 0.0 && scale.is_finite();
    if !(n_ok && theta_ok && scale_ok) {
        return Err(usage!(
            "cvar-zipf needs n a whole number from 1 to 10000000, theta > 0 and scale > 0"
        ));
    }
    let n = n as u64;
    Ok(Dist::Zipf {
        n,
        theta,
        scale,
        sampler: crate::runner::pick::Zipf::new(n, theta),
    })
}

/// Mean rank of Zipf(n, theta): sum k^(1-theta) / sum k^-theta.
fn zipf_mean(n: u64, theta: f64) -> f64 {
    let (mut num, mut den) = (0.0, 0.0);
    for k in 1..=n {
        let w = (k as f64).powf(-theta);
        num += k as f64 * w;
        den += w;
    }
    num / den
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean_of(rv: &RandVar, n: usize) -> f64 {
        let mut r = Rng::new(7);
        (0..n).map(|_| rv.sample(&mut r)).sum::<f64>() / n as f64
    }

    #[test]
    fn gamma_mean_and_variance() {
        for shape in [0.5, 1.5, 4.0] {
            let rv = RandVar {
                dist: Dist::Gamma {
                    mean: 16384.0,
                    shape,
                },
                min: 0.0,
                max: None,
                round: 0.0,
                seed: None,
            };
            let mut r = Rng::new(1);
            let xs: Vec<f64> = (0..200_000).map(|_| rv.sample(&mut r)).collect();
            let m = xs.iter().sum::<f64>() / xs.len() as f64;
            let var = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / xs.len() as f64;
            assert!((m / 16384.0 - 1.0).abs() < 0.02, "shape {shape} mean {m}");
            // Gamma variance = mean^2 / shape.
            let want = 16384.0f64.powi(2) / shape;
            assert!(
                (var / want - 1.0).abs() < 0.06,
                "shape {shape} var {var} want {want}"
            );
        }
    }

    #[test]
    fn other_distributions_have_their_means() {
        let p = parse_params("mean:1000;sigma:10").unwrap();
        let rv = RandVar {
            dist: cvar_dist("cvar-normal", &p).unwrap(),
            min: 0.0,
            max: None,
            round: 0.0,
            seed: None,
        };
        assert!((mean_of(&rv, 50_000) - 1000.0).abs() < 5.0);
        let rv = RandVar {
            dist: Dist::Table(vec![(50.0, 0.0, 10.0), (50.0, 100.0, 110.0)]),
            min: 0.0,
            max: None,
            round: 0.0,
            seed: None,
        };
        assert!((mean_of(&rv, 50_000) - 55.0).abs() < 2.0);
        let rv = RandVar {
            dist: Dist::Exponential { mean: 10.0 },
            min: 5.0,
            max: None,
            round: 1.0,
            seed: None,
        };
        let m = mean_of(&rv, 50_000);
        assert!((m - 15.0).abs() < 0.5, "{m}");
        assert!(cvar_dist("cvar-zeta", &p).is_err());
        assert!(parse_params("mean=3").is_err());
    }

    fn cvar(kind: &str, params: &str) -> RandVar {
        RandVar {
            dist: cvar_dist(kind, &parse_params(params).unwrap()).unwrap(),
            min: 0.0,
            max: None,
            round: 0.0,
            seed: None,
        }
    }

    #[test]
    fn zipf_has_its_mean_and_favours_small_ranks() {
        let rv = cvar("cvar-zipf", "n:8;theta:1.5;scale:4096");
        // Mean rank of Zipf(8, 1.5), summed by hand: sum k^-0.5 / sum k^-1.5.
        let num: f64 = (1..=8).map(|k| (k as f64).powf(-0.5)).sum();
        let den: f64 = (1..=8).map(|k| (k as f64).powf(-1.5)).sum();
        let want = num / den * 4096.0;
        assert!((rv.mean() - want).abs() < 1e-6, "{} vs {want}", rv.mean());
        let mut r = Rng::new(3);
        let xs: Vec<f64> = (0..100_000).map(|_| rv.sample(&mut r)).collect();
        let m = xs.iter().sum::<f64>() / xs.len() as f64;
        assert!((m / want - 1.0).abs() < 0.02, "{m} vs {want}");
        // Every value is a whole rank times the scale, and rank 1 takes its weight.
        assert!(xs
            .iter()
            .all(|x| x % 4096.0 == 0.0 && (4096.0..=8.0 * 4096.0).contains(x)));
        let ones = xs.iter().filter(|&&x| x == 4096.0).count() as f64 / xs.len() as f64;
        assert!((ones - 1.0 / den).abs() < 0.01, "{ones} vs {}", 1.0 / den);
    }

    #[test]
    fn pareto_has_its_mean_and_tail() {
        let rv = cvar("pareto", "shape:3;scale:1000");
        assert_eq!(rv.mean(), 1500.0);
        let mut r = Rng::new(4);
        let xs: Vec<f64> = (0..200_000).map(|_| rv.sample(&mut r)).collect();
        let m = xs.iter().sum::<f64>() / xs.len() as f64;
        assert!((m - 1500.0).abs() < 30.0, "{m}");
        assert!(xs.iter().all(|&x| x >= 1000.0));
        // P(X > 2 * scale) = 2^-shape = 1/8.
        let tail = xs.iter().filter(|&&x| x > 2000.0).count() as f64 / xs.len() as f64;
        assert!((tail - 0.125).abs() < 0.005, "{tail}");
    }

    #[test]
    fn zipf_and_pareto_refuse_what_they_cannot_draw() {
        for (kind, params, msg) in [
            ("cvar-zipf", "n:0", "cvar-zipf needs n a whole number"),
            ("cvar-zipf", "n:2.5", "cvar-zipf needs n a whole number"),
            ("cvar-zipf", "theta:0", "theta > 0"),
            ("cvar-zipf", "scale:-1", "scale > 0"),
            ("cvar-pareto", "shape:1", "cvar-pareto needs shape > 1"),
            ("cvar-pareto", "scale:0", "scale > 0"),
        ] {
            let err = cvar_dist(kind, &parse_params(params).unwrap()).unwrap_err();
            assert!(err.0.contains(msg), "{kind} {params}: {}", err.0);
        }
    }

    /// The cvar mistakes and their messages (the loader shows them after file:line:column).
    #[test]
    fn cvar_mistakes_keep_their_messages() {
        let p = parse_params("").unwrap();
        let cases: [(UsageError, &str); 6] = [
            (
                parse_params("mean=3").unwrap_err(),
                "bad cvar parameter 'mean=3': expected key:value, e.g. mean:16384;gamma:1.5",
            ),
            (
                parse_params("mean:x\u{1}").unwrap_err(),
                "bad cvar parameter value 'x\\u{1}' for 'mean': expected a number",
            ),
            (
                cvar_dist("cvar-zeta", &p).unwrap_err(),
                "unknown cvar type 'cvar-zeta': expected cvar-gamma, cvar-exponential, cvar-normal, cvar-lognormal, cvar-weibull, cvar-triangular, cvar-uniform, cvar-erlang, cvar-zipf or cvar-pareto",
            ),
            (
                cvar_dist("cvar-gamma", &parse_params("gamma:0").unwrap()).unwrap_err(),
                "cvar-gamma needs mean >= 0 and gamma > 0",
            ),
            (
                cvar_dist("triangular", &parse_params("mode:9000").unwrap()).unwrap_err(),
                "cvar-triangular needs lower <= mode <= upper",
            ),
            (
                cvar_dist("cvar-uniform", &parse_params("lower:5;upper:1").unwrap()).unwrap_err(),
                "cvar-uniform needs lower <= upper",
            ),
        ];
        for (err, msg) in cases {
            assert_eq!(err.to_string(), msg);
        }
    }
}
