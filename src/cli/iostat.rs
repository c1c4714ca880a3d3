//! `fsbench iostat [PATH] INTERVAL [COUNT]`: device statistics like `sar -d 2 5`, for the
//! block devices under PATH (through partitions, loop devices and dm/md) or for every device
//! that did I/O.

use crate::probe::diskstats::{self, DeviceSample, IostatSeries};
use crate::report::{iostat, Format};
use crate::{bail_usage, usage};
use clap::Args;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
#[command(
    mut_arg("format", |a| super::args::formats_help(a, PRINTED).long_help(
        "What is printed: text (rows as the samples come) or json (at the end) [default: text]"
    )),
    after_help = EXAMPLES
)]
pub(crate) struct IostatArgs {
    /// [PATH] INTERVAL [COUNT]: e.g. `2 5`, or `/data 1s 10`
    #[arg(value_name = "[PATH] INTERVAL [COUNT]", num_args = 1..=3, required = true)]
    pub args: Vec<String>,
    #[command(flatten)]
    pub printed: super::args::FormatArgs,
    #[command(flatten)]
    pub old: super::args::JsonAlias,
}

/// What `iostat` prints: a table as the samples come, or JSON at the end.
const PRINTED: &[Format] = &[Format::Text, Format::Json];

const EXAMPLES: &str = "\
Examples:
  fsbench iostat 2 5
  fsbench iostat /mnt/data 1s 10 --format json";

fn is_interval(s: &str) -> bool {
    crate::units::parse_duration(s).is_ok()
}

pub(crate) fn main(a: IostatArgs) -> anyhow::Result<i32> {
    let json = a.printed.among(PRINTED, a.old.json)? == Format::Json;
    let mut args = a.args.as_slice();
    let path = if !args.is_empty() && !is_interval(&args[0]) {
        let p = std::path::PathBuf::from(&args[0]);
        if !p.exists() {
            bail_usage!(
                "iostat: {} does not exist (give [PATH] INTERVAL [COUNT], e.g. /data 2 5)",
                p.display()
            );
        }
        args = &args[1..];
        Some(p)
    } else {
        None
    };
    let Some(iv) = args.first() else {
        bail_usage!("iostat: no INTERVAL: expected [PATH] INTERVAL [COUNT], e.g. 2 5");
    };
    let interval = crate::units::parse_duration(iv)?;
    if interval < Duration::from_millis(10) {
        bail_usage!("iostat: interval {iv} is too short: at least 10ms");
    }
    let count: Option<u64> = match args.get(1) {
        Some(c) => Some(
            c.parse()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| usage!("iostat: COUNT '{c}' must be a whole number above 0"))?,
        ),
        None => None,
    };
    if args.len() > 2 {
        bail_usage!("iostat: too many arguments: expected [PATH] INTERVAL [COUNT]");
    }
    let devices = match &path {
        Some(p) => {
            let d = diskstats::devices_under(p);
            if d.is_empty() {
                bail_usage!(
                    "iostat: no block device under {} (tmpfs, overlay or a network file system); run without PATH to see every device",
                    p.display()
                );
            }
            d
        }
        None => Vec::new(),
    };
    crate::runner::signal::install();
    let mut series = IostatSeries {
        devices: devices.clone(),
        interval_s: interval.as_secs_f64(),
        run_start_s: 0.0,
        samples: Vec::new(),
    };
    if !json {
        crate::out!("{}", iostat::devices_line(path.as_deref(), &devices));
        crate::out!("{}", iostat::header());
    }
    let start = Instant::now();
    let mut prev = diskstats::read_now()?;
    let mut prev_t = start;
    let mut n = 0u64;
    while count.is_none_or(|c| n < c) {
        // Checked: a long interval times many samples must not overflow (a panic).
        let next = u32::try_from(n + 1)
            .ok()
            .and_then(|k| interval.checked_mul(k))
            .and_then(|d| start.checked_add(d))
            .unwrap_or_else(|| Instant::now() + interval);
        while Instant::now() < next && !crate::runner::signal::interrupted() {
            std::thread::sleep((next - Instant::now()).min(Duration::from_millis(50)));
        }
        if crate::runner::signal::interrupted() {
            break;
        }
        let now = Instant::now();
        let cur = diskstats::read_now()?;
        let mut batch: Vec<DeviceSample> = Vec::new();
        let t = now.duration_since(start).as_secs_f64();
        diskstats::push_samples(
            &mut batch,
            &devices,
            &prev,
            &cur,
            now.duration_since(prev_t).as_secs_f64(),
            t,
        );
        if !json {
            // Rows only (the header was printed once).
            let one = IostatSeries {
                samples: batch.clone(),
                ..Default::default()
            };
            crate::out!("{}", iostat::rows(&one));
            if batch.is_empty() {
                crate::out!("{}", iostat::idle_row(t));
            }
        }
        series.samples.extend(batch);
        prev = cur;
        prev_t = now;
        n += 1;
    }
    if json {
        crate::out!("{}", crate::report::json(&series));
    } else {
        crate::out!("{}", iostat::averages(&series));
    }
    Ok(0)
}
