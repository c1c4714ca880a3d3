//! `fsbench ior`: IOR's command line (`-w -r -b 4m -t 64k -s 2 -F -C -o FILE ...`) in, its
//! write and read phases run as fsbench Jobs (`crate::ior::map`) through the executor (this
//! host, or every rank when mpirun started fsbench, with the layout IOR's flags imply), one
//! Result per phase and iteration out, then IOR's summary of the iterations.

use crate::error::UsageError;
use crate::ior::{IorLayout, IorOptions, IorPlan};
use crate::report::{Format, ReportOptions, Runs};
use crate::result::RunResult;
use crate::usage;
use std::path::PathBuf;

pub(crate) const HELP: &str = "\
fsbench ior: IOR's bandwidth benchmark, on this host or on MPI ranks

Usage: [mpirun -np N] fsbench ior [-w] [-r] [-b BLOCK] [-t XFER] [-s SEGMENTS] [-F] [-o FILE] ...

Each rank writes (-w) and then reads (-r) -s segments of -b bytes in -t transfers (neither
-w nor -r: both). Without -F the ranks share one file: with -s 1 each rank's block is one
piece of it, with -b equal to -t the ranks' transfers interleave; -F gives each rank a file.

  -a API      POSIX (default), MMAP, or an fsbench engine: sync, uring, null
  -b N        bytes per rank per segment [1m]     -t N   bytes per transfer [256k]
  -s N        segments [1]                        -F     a file per rank
  -o FILE     the test file [testFile]            -k     keep the file(s)
  -C          read another rank's data (one host away; on one host the next rank)
  -Q 1        the offset of -C (1 only)
  -e          fsync after the write phase         -Y     fsync after every write
  -W          check the written data (read back and verify)
  -z          random offsets (each transfer once)
  -B          O_DIRECT                            -g     barriers (noted: fsbench already
                                                         starts each phase at one barrier)
  -i N        iterations [1]                      -d S   seconds between iterations
  -D S        stop each phase S seconds after it started (stonewall)
  -v          accepted (the output is the same)
fsbench's own:
  --format F  text (default: the Results, then IOR's summary), json or csv
  --output P  write the Results (JSON) to P
  --force     let --output replace a file fsbench did not write
  -h, --help  this help

Refused (one line, naming the flag): -R -E -c -m -n -x -Z -X -u -V -q -H -l -O -G -j -J
-T -U -f -M -N -y and IOR's long options.

Examples:
  fsbench ior -w -r -b 4m -t 64k -s 2 -o /mnt/scratch/f
  fsbench ior -w -r -F -z -e -b 16m -t 4k -i 3 -o /mnt/scratch/f
  mpirun -np 16 fsbench ior -w -r -F -C -b 1g -t 1m -o /mnt/pfs/f -i 3";

/// A parsed `fsbench ior` command line.
#[derive(Debug, Clone)]
pub(crate) struct IorCommand {
    pub opts: IorOptions,
    pub format: Format,
    pub output: Option<PathBuf>,
    pub force: bool,
    pub help: bool,
}

/// IOR's flags and fsbench's own long options.
pub(crate) fn parse(args: &[String]) -> Result<IorCommand, UsageError> {
    let mut format = Format::Text;
    let mut output = None;
    let mut force = false;
    let help = args.iter().any(|a| a == "-h" || a == "--help");
    if help {
        return Ok(IorCommand {
            opts: IorOptions::default(),
            format,
            output,
            force,
            help,
        });
    }
    let opts = crate::ior::parse(args, |w| {
        let (name, inline) = match w[0].split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (w[0].as_str(), None),
        };
        let value = || -> Result<(String, usize), UsageError> {
            match &inline {
                Some(v) => Ok((v.clone(), 1)),
                None => w
                    .get(1)
                    .map(|v| (v.clone(), 2))
                    .ok_or_else(|| usage!("{name} needs a value: see fsbench ior --help")),
            }
        };
        Ok(match name {
            "--format" => {
                let (v, n) = value()?;
                format = Format::parse_for::<Runs>(&v, "--format")?;
                n
            }
            "--output" => {
                let (v, n) = value()?;
                output = Some(PathBuf::from(v));
                n
            }
            "--force" => {
                force = true;
                1
            }
            _ => 0,
        })
    })?;
    Ok(IorCommand {
        opts,
        format,
        output,
        force,
        help,
    })
}

/// `fsbench ior ARGS`: parsed on every rank (mpirun gives each the same words; rank 0 alone
/// says what is wrong), then run on this host or on the ranks with IOR's layout.
pub(crate) fn dispatch(args: &[String]) -> anyhow::Result<i32> {
    let quiet = super::ranks::launched_rank().unwrap_or(0) != 0;
    let ranks = super::ranks::launched_ranks().unwrap_or(1).max(1);
    let checked = parse(args).and_then(|cmd| {
        let plan = crate::ior::map(&cmd.opts, ranks)?;
        Ok((cmd, plan))
    });
    let (cmd, plan) = match checked {
        Ok(c) => c,
        // Rank 0 says why and exits 2, which mpirun reports; a rank that exited 2 first would
        // have mpirun end the job, at times before rank 0 has printed its line.
        Err(_) if quiet => return Ok(0),
        Err(e) => return Err(e.into()),
    };
    if cmd.help {
        if !quiet {
            crate::outln!("{HELP}");
        }
        return Ok(0);
    }
    let dist = dist_args(&plan, ranks);
    super::ranks::on_ranks("ior", &dist, |exec| main(&cmd, &plan, exec))
}

/// The distributed-run flags that give IOR's layout on `ranks` ranks (none on one): what
/// `run` would be given as --file-per-rank, --shared-file, --reorder-ranks and --stonewall.
pub(crate) fn dist_args(plan: &IorPlan, ranks: u32) -> super::ranks::DistArgs {
    super::ranks::DistArgs {
        file_per_rank: ranks > 1 && plan.layout == IorLayout::FilePerRank,
        shared_file: match plan.layout {
            _ if ranks <= 1 => None,
            IorLayout::FilePerRank => None,
            IorLayout::SharedSegmented => Some("segmented".into()),
            IorLayout::SharedStrided => Some("strided".into()),
        },
        reorder_ranks: plan.reorder,
        reorder_reads_only: true,
        stonewall: plan.stonewall_s.map(|s| format!("{s}s")),
        mpi_timeout: None,
    }
}

/// Rank 0 (or this host): every iteration's phases, the Results, IOR's summary.
fn main(cmd: &IorCommand, plan: &IorPlan, exec: crate::exec::Executor) -> anyhow::Result<i32> {
    crate::output::check_output(cmd.output.as_deref(), cmd.force)?;
    let results = run_iterations(&cmd.opts, plan, &exec);
    // Files kept between phases on the ranks are removed (unless -k) even after an error.
    exec.cleanup(cmd.opts.keep);
    let results = results?;
    let code = super::output::emit(
        &results,
        cmd.format,
        &ReportOptions::default(),
        cmd.output.as_deref(),
        cmd.force,
    )?;
    if cmd.format == Format::Text {
        crate::out!(
            "{}",
            summary(&cmd.opts, &results, exec.ranks().unwrap_or(1))
        );
    }
    Ok(code)
}

/// IOR's test loop: each iteration writes, then reads, on the file(s) the write made; on
/// this host the file is removed after each iteration unless -k, as IOR does (on ranks the
/// caller removes the kept files with `exec.cleanup`). One Result per phase and iteration.
pub(crate) fn run_iterations(
    o: &IorOptions,
    plan: &IorPlan,
    exec: &crate::exec::Executor,
) -> anyhow::Result<Vec<RunResult>> {
    let observe = crate::observe::Observe::default();
    let mut results = Vec::new();
    let phases: Vec<&crate::job::Job> = plan.write.iter().chain(plan.read.iter()).collect();
    for it in 1..=o.iterations {
        if it > 1 && o.delay_s > 0 {
            std::thread::sleep(std::time::Duration::from_secs(o.delay_s));
        }
        let mut files = exec.ranks().is_none().then(|| {
            let mut first = phases[0].clone();
            first.keep = o.keep;
            super::repeat::SameFiles::new(&first)
        });
        for job in &phases {
            let mut j = (*job).clone();
            if o.iterations > 1 {
                j.name = format!("{} {it}/{}", j.name, o.iterations);
            }
            let writes = j.access.read_pct(j.read_pct) < 100;
            let r = exec.run_job(&j, writes, &observe);
            if let Some(f) = &mut files {
                f.after_run();
            }
            let mut r = r?;
            r.notes.extend(plan.notes.iter().cloned());
            let stop = r.status != crate::runner::RunStatus::Complete
                || crate::runner::signal::interrupted();
            results.push(r);
            if stop {
                return Ok(results);
            }
        }
    }
    Ok(results)
}

/// One operation's figures over the iterations, as IOR's summary gives them.
fn summary(o: &IorOptions, results: &[RunResult], ranks: u32) -> String {
    use std::fmt::Write as _;
    let mib = (1u64 << 20) as f64;
    let mut s = String::from("\nSummary of all tests:\n");
    let _ = writeln!(
        s,
        "{:<9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6} {:>6} {:>10} {:>10} {:>10} {:>5} {:>5}",
        "Operation", "Max(MiB)", "Min(MiB)", "Mean(MiB)", "StdDev", "Max(OPs)", "Min(OPs)",
        "Mean(OPs)", "StdDev", "Mean(s)", "#Tasks", "segcnt", "blksiz", "xsize", "aggs(MiB)",
        "API", "reps"
    );
    let api = results
        .first()
        .and_then(|r| r.job.as_ref())
        .map_or("sync", |j| j.engine.name());
    for write in [true, false] {
        let mut bw = Vec::new();
        let mut ops = Vec::new();
        let mut secs = Vec::new();
        for r in results.iter().filter(|r| {
            r.job
                .as_ref()
                .is_some_and(|j| (j.access.read_pct(j.read_pct) < 100) == write)
        }) {
            let t = &r.total;
            let (b, n) = if write {
                (t.write_bytes, t.write_ops)
            } else {
                (t.read_bytes, t.read_ops)
            };
            let e = t.elapsed_s.max(f64::MIN_POSITIVE);
            bw.push(b as f64 / e / mib);
            ops.push(n as f64 / e);
            secs.push(t.elapsed_s);
        }
        if bw.is_empty() {
            continue;
        }
        let stats = |v: &[f64]| {
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            let max = v.iter().cloned().fold(f64::MIN, f64::max);
            let min = v.iter().cloned().fold(f64::MAX, f64::min);
            (max, min, mean, crate::mdtest::stddev(v, mean))
        };
        let (bmax, bmin, bmean, bsd) = stats(&bw);
        let (omax, omin, omean, osd) = stats(&ops);
        let mean_s = secs.iter().sum::<f64>() / secs.len() as f64;
        let agg = (o.block * o.segments * ranks as u64) as f64 / mib;
        let _ = writeln!(
            s,
            "{:<9} {bmax:>10.2} {bmin:>10.2} {bmean:>10.2} {bsd:>10.2} {omax:>10.2} {omin:>10.2} {omean:>10.2} {osd:>10.2} {mean_s:>10.5} {ranks:>6} {:>6} {:>10} {:>10} {agg:>10.1} {api:>5} {:>5}",
            if write { "write" } else { "read" },
            o.segments,
            o.block,
            o.transfer,
            bw.len(),
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<IorCommand, UsageError> {
        let v: Vec<String> = s.split_whitespace().map(String::from).collect();
        parse(&v)
    }

    #[test]
    fn fsbench_options_mix_with_iors() {
        let c = p("-w --format json -b 4m --output=r.json --force -k").unwrap();
        assert_eq!(c.format, Format::Json);
        assert_eq!(c.output, Some(PathBuf::from("r.json")));
        assert!(c.force && c.opts.keep && c.opts.write && !c.opts.read);
        assert!(p("--format").unwrap_err().0.contains("needs a value"));
        assert!(p("--format xml").is_err());
        assert!(p("-w -h").unwrap().help);
    }
}
