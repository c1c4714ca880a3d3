//! fio's metadata ioengines (`filecreate`, `filestat`, `filedelete`, `dircreate`, `dirstat`,
//! `dirdelete`) compiled into mdtest's phases (`crate::mdtest`): in fio each "I/O" of such a
//! job is the create, stat or delete of one of its `nrfiles` files (or directories), timed
//! as one operation. mdtest's phases do exactly that, one item per step through the runner,
//! with fsbench's safety rules (everything made in a marked run directory of its own,
//! removed at the end unless kept), so a metadata job is an mdtest plan: `nrfiles` items in
//! `directory`, the engine's phase measured, the phases it needs around it untimed.
//!
//! Options that change nothing for a metadata engine in fio (`size`, `bs`, `rw`: fio only
//! counts fake I/Os with them) are accepted; options fsbench cannot honour on such a job are
//! refused in one line naming the option and the section.

use super::map::{flag, parse_size};
use super::parse::Section;
use crate::error::UsageError;
use crate::mdtest::Options;
use crate::usage;
use std::path::PathBuf;

/// One of fio's metadata engines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MetaEngine {
    FileCreate,
    FileStat,
    FileDelete,
    DirCreate,
    DirStat,
    DirDelete,
}

impl MetaEngine {
    /// fio's name of the engine, if `v` is one of them.
    pub(crate) fn parse(v: &str) -> Option<MetaEngine> {
        Some(match v.trim() {
            "filecreate" => MetaEngine::FileCreate,
            "filestat" => MetaEngine::FileStat,
            "filedelete" => MetaEngine::FileDelete,
            "dircreate" => MetaEngine::DirCreate,
            "dirstat" => MetaEngine::DirStat,
            "dirdelete" => MetaEngine::DirDelete,
            _ => return None,
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            MetaEngine::FileCreate => "filecreate",
            MetaEngine::FileStat => "filestat",
            MetaEngine::FileDelete => "filedelete",
            MetaEngine::DirCreate => "dircreate",
            MetaEngine::DirStat => "dirstat",
            MetaEngine::DirDelete => "dirdelete",
        }
    }

    /// What its items are.
    fn items(self) -> &'static str {
        if self.on_dirs() {
            "directories"
        } else {
            "files"
        }
    }

    fn on_dirs(self) -> bool {
        matches!(
            self,
            MetaEngine::DirCreate | MetaEngine::DirStat | MetaEngine::DirDelete
        )
    }

    /// mdtest's flags for the item kind and the measured phase.
    fn mdtest_flags(self) -> [&'static str; 2] {
        let kind = if self.on_dirs() { "-D" } else { "-F" };
        let phase = match self {
            MetaEngine::FileCreate | MetaEngine::DirCreate => "-C",
            MetaEngine::FileStat | MetaEngine::DirStat => "-T",
            MetaEngine::FileDelete | MetaEngine::DirDelete => "-r",
        };
        [kind, phase]
    }
}

/// A metadata job: the mdtest options it runs as, and the equivalent `fsbench mdtest`
/// command line (recorded in the Result).
#[derive(Debug, Clone)]
pub(crate) struct MetaJob {
    pub engine: MetaEngine,
    pub opts: Options,
    pub argv: Vec<String>,
    /// `numjobs`: clones, each with `nrfiles` items of its own (threads on one host).
    pub clones: u32,
}

impl MetaJob {
    /// The Result's note on how the job ran: the equivalent `fsbench mdtest` command line.
    pub(crate) fn note(&self, job: &str) -> String {
        let clones = match self.clones {
            1 => String::new(),
            n => format!(
                " in {n} clones (threads, as the ranks of mpirun -np {n}) with {} {} each",
                self.opts.items.unwrap_or(1),
                self.engine.items()
            ),
        };
        format!(
            "ioengine={} in [{job}] runs as fsbench mdtest {}{clones}: each of the {} {} is one operation, timed alone; no data is read or written (fio's size and bs only count fake I/Os)",
            self.engine.name(),
            self.argv.join(" "),
            self.opts.items.unwrap_or(1) * self.clones as u64,
            self.engine.items()
        )
    }

    /// Keep the run directory and the items (`--keep`).
    pub(crate) fn keep(&mut self) {
        self.opts.keep = true;
        self.argv.push("--keep".into());
    }
}

/// What the section says beside the mdtest plan.
pub(crate) struct MetaSection {
    pub job: MetaJob,
    pub name: String,
    pub notes: Vec<String>,
    pub stonewall: bool,
    pub new_group: bool,
    pub group_reporting: bool,
}

/// Options fio reads for its own accounting of fake I/Os on a metadata engine, or that
/// describe what fsbench does anyway (one item at a time, each opened once): accepted.
const NO_EFFECT: &[&str] = &[
    "size",
    "filesize",
    "bs",
    "blocksize",
    "rw",
    "readwrite",
    "thread",
    "kb_base",
    "ioengine",
    "create_on_open",
    "openfiles",
    "fallocate",
];

/// fio's `stat_type` (stat, lstat, statx): fsbench's stat is statx without following a
/// last symbolic link (lstat's answer); the items are plain files and directories it made,
/// so every type answers the same.
fn stat_type(v: &str, section: &str) -> Result<(), UsageError> {
    match v.trim() {
        "stat" | "lstat" | "statx" => Ok(()),
        _ => Err(usage!(
            "bad stat_type={v} in [{section}]: expected stat, lstat or statx"
        )),
    }
}

/// The metadata job one section describes (its `ioengine` is `engine`).
pub(crate) fn build(
    section: &Section,
    engine: MetaEngine,
    kb: u64,
    ignore_unsupported: bool,
) -> Result<MetaSection, UsageError> {
    let sname = section.name.as_str();
    let mut out = MetaSection {
        job: MetaJob {
            engine,
            opts: Options {
                items: Some(1),
                iterations: 1,
                tree_untimed: true,
                ..Options::default()
            },
            argv: Vec::new(),
            clones: 1,
        },
        name: sname.to_string(),
        notes: Vec::new(),
        stonewall: false,
        new_group: false,
        group_reporting: false,
    };
    let mut dir: Option<PathBuf> = None;
    let mut ignored: Vec<String> = Vec::new();
    for o in &section.options {
        let key = o.key.as_str();
        let need = || {
            o.value
                .as_deref()
                .map(str::trim)
                .ok_or_else(|| usage!("{key} in [{sname}] needs a value: {key}=VALUE"))
        };
        let what = format!("{key} in [{sname}]");
        let opts = &mut out.job.opts;
        match key {
            "name" => out.name = need()?.to_string(),
            "description" => out.notes.push(format!("fio description: {}", need()?)),
            "directory" => {
                let d = need()?;
                if d.contains(':') {
                    return Err(usage!(
                        "directory={d} in [{sname}]: several directories are not supported; give one"
                    ));
                }
                dir = Some(PathBuf::from(d));
            }
            "nrfiles" => {
                let n = parse_size(need()?, kb, &what)?;
                if n == 0 || n > crate::mdtest::MAX_ITEMS {
                    return Err(usage!(
                        "bad nrfiles={n} in [{sname}]: must be 1 to {}",
                        crate::mdtest::MAX_ITEMS
                    ));
                }
                opts.items = Some(n);
            }
            "numjobs" => {
                let n = parse_size(need()?, kb, &what)?;
                if n == 0 || n > super::map::MAX_NUMJOBS {
                    return Err(usage!(
                        "bad numjobs={n} in [{sname}]: must be 1 to {}",
                        super::map::MAX_NUMJOBS
                    ));
                }
                out.job.clones = n as u32;
            }
            "loops" => {
                let n = parse_size(need()?, kb, &what)?;
                if n == 0 || n > u32::MAX as u64 {
                    return Err(usage!("bad loops={n} in [{sname}]: must be 1 or more"));
                }
                opts.iterations = n as u32;
            }
            "unlink" => opts.keep = !flag(o, sname)?,
            "stat_type" => stat_type(need()?, sname)?,
            "stonewall" | "wait_for_previous" => out.stonewall = flag(o, sname)?,
            "new_group" => out.new_group = flag(o, sname)?,
            "group_reporting" => out.group_reporting = flag(o, sname)?,
            _ if NO_EFFECT.contains(&key) => {}
            _ if ignore_unsupported => {
                if !ignored.iter().any(|k| k == key) {
                    ignored.push(key.to_string());
                }
            }
            _ => {
                return Err(usage!(
                    "unsupported fio option '{key}' in [{sname}]: ioengine={} runs as mdtest's phases, where it has no meaning (see docs/fio.md); --ignore-unsupported runs without it",
                    engine.name()
                ))
            }
        }
    }
    let opts = &mut out.job.opts;
    match engine {
        MetaEngine::FileCreate | MetaEngine::DirCreate => opts.create = true,
        MetaEngine::FileStat | MetaEngine::DirStat => opts.stat = true,
        MetaEngine::FileDelete | MetaEngine::DirDelete => opts.remove = true,
    }
    opts.files_only = !engine.on_dirs();
    opts.dirs_only = engine.on_dirs();
    let dir = dir.unwrap_or_else(|| PathBuf::from("."));
    opts.dirs = vec![dir.clone()];
    let items = opts.items.unwrap_or(1);
    let mut argv: Vec<String> = vec!["-n".into(), items.to_string()];
    argv.extend(engine.mdtest_flags().map(String::from));
    if opts.iterations > 1 {
        argv.extend(["-i".into(), opts.iterations.to_string()]);
    }
    argv.extend(["-d".into(), dir.display().to_string()]);
    if opts.keep {
        argv.push("--keep".into());
    }
    let what = engine.items();
    let made_before = if engine.on_dirs() {
        "made"
    } else {
        "created empty"
    };
    if !matches!(engine, MetaEngine::FileCreate | MetaEngine::DirCreate) {
        out.notes.push(format!(
            "the {what} are {made_before} before the timed phase (untimed), in fsbench's run directory, as mdtest names them"
        ));
    }
    for k in ignored {
        out.notes.push(format!(
            "fio option '{k}' in [{sname}] ignored (--ignore-unsupported)"
        ));
    }
    out.job.argv = argv;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::parse::parse_text;
    use super::*;

    fn meta(text: &str) -> Result<MetaSection, UsageError> {
        let s = parse_text(text, &|_| None)?.remove(0);
        let e = MetaEngine::parse(s.last("ioengine").unwrap().value.as_deref().unwrap()).unwrap();
        build(&s, e, 1024, false)
    }

    #[test]
    fn each_engine_measures_its_own_phase() {
        let m = meta("[c]\nioengine=filecreate\nnrfiles=10\nfilesize=4k\ndirectory=/d\n").unwrap();
        let o = &m.job.opts;
        assert_eq!(o.items, Some(10));
        assert!(o.create && !o.stat && !o.remove && o.files_only && !o.dirs_only);
        assert_eq!(o.dirs, vec![PathBuf::from("/d")]);
        assert_eq!(m.job.argv.join(" "), "-n 10 -F -C -d /d");
        let m = meta("[s]\nioengine=dirstat\nnrfiles=3\nloops=2\nunlink=0\n").unwrap();
        let o = &m.job.opts;
        assert!(o.stat && !o.create && o.dirs_only && o.keep);
        assert_eq!(o.iterations, 2);
        assert_eq!(m.job.argv.join(" "), "-n 3 -D -T -i 2 -d . --keep");
        let m = meta("[d]\nioengine=filedelete\nstat_type=statx\n").unwrap();
        assert!(m.job.opts.remove && !m.job.opts.create);
    }

    #[test]
    fn options_without_meaning_for_metadata_are_refused() {
        for (text, want) in [
            ("iodepth=4", "'iodepth' in [c]: ioengine=filecreate"),
            ("numjobs=0", "bad numjobs=0"),
            ("nrfiles=0", "bad nrfiles=0"),
            ("directory=a:b", "several directories"),
            ("stat_type=fstat", "bad stat_type"),
        ] {
            let e = meta(&format!("[c]\nioengine=filecreate\n{text}\n"))
                .err()
                .unwrap()
                .0;
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
