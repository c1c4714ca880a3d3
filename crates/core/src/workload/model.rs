//! The model a workload file loads into, what the interpreter runs: filesets, processes and
//! their threads, flowops, semaphores and the run script. The loader that builds it from the
//! parsed statements is `model/load.rs`.

use super::ast::QuitMode;
use super::lexer::Pos;
use super::vars::RandVar;
use std::path::PathBuf;
use std::sync::Arc;

mod load;

pub use load::{define_value, load, LoadError};

/// A number that is either fixed or drawn from a random variable at each use.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    Const(f64),
    Rand(Arc<RandVar>),
}

impl Param {
    pub fn sample(&self, rng: &mut super::vars::Rng) -> f64 {
        match self {
            Param::Const(c) => *c,
            Param::Rand(r) => r.sample(rng),
        }
    }
    pub fn upper_hint(&self) -> f64 {
        match self {
            Param::Const(c) => *c,
            Param::Rand(r) => r.max.unwrap_or(r.mean() * 8.0),
        }
    }
}

#[derive(Debug, Clone)]
pub struct FilesetSpec {
    pub name: String,
    /// `path/name`: the directory fsbench creates, marks and removes.
    pub root: PathBuf,
    pub is_file: bool,
    pub entries: u64,
    pub size: Param,
    pub dirwidth: f64,
    /// Filebench's dirgamma: shape * 1000 of the per-directory width distribution (0 = fixed).
    pub dirgamma: f64,
    pub dirdepth: Option<Param>,
    /// Number of leaf directories when this is a set of directories (makedir/removedir).
    pub leafdirs: u64,
    pub prealloc_pct: f64,
    pub paralloc: bool,
    pub reuse: bool,
    pub readonly: bool,
    pub writeonly: bool,
    /// Keep the created files in the page cache (the default, as Filebench 1.5 does); with
    /// `cached=0` their pages are dropped after creation (Filebench 1.4's `cached` semantics).
    pub cached: bool,
    /// Set for one rank of a run on MPI ranks with `--shared-file` (`Source::shared_rank`):
    /// the directories are shared by every rank (rank 0 makes and removes them), this rank
    /// creates and removes only its own entries, named with its tag.
    pub shared_rank: Option<u32>,
    pub pos: Pos,
}

impl FilesetSpec {
    pub fn is_dirs(&self) -> bool {
        self.leafdirs > 0
    }
    pub fn count(&self) -> u64 {
        if self.is_dirs() {
            self.leafdirs
        } else {
            self.entries
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Kind {
    Read,
    Write,
    OpenFile,
    CreateFile,
    CloseFile,
    DeleteFile,
    StatFile,
    MakeDir,
    RemoveDir,
    ListDir,
    Fsync,
    FsyncSet,
    ReadWholeFile,
    WriteWholeFile,
    AppendFile,
    AppendFileRand,
    AioWrite,
    AioWait,
    Block,
    Wakeup,
    SemBlock,
    SemPost,
    Hog,
    Delay,
    EventLimit,
    BwLimit,
    IopsLimit,
    OpsLimit,
    FinishOnCount,
    FinishOnBytes,
    /// A `define flowop` used by name: runs its inner flowops `iters` times.
    Composite,
}

pub const FLOWOP_NAMES: &[(&str, Kind)] = &[
    ("read", Kind::Read),
    ("write", Kind::Write),
    ("openfile", Kind::OpenFile),
    ("createfile", Kind::CreateFile),
    ("closefile", Kind::CloseFile),
    ("deletefile", Kind::DeleteFile),
    ("statfile", Kind::StatFile),
    ("makedir", Kind::MakeDir),
    ("removedir", Kind::RemoveDir),
    ("listdir", Kind::ListDir),
    ("fsync", Kind::Fsync),
    ("fsyncset", Kind::FsyncSet),
    ("readwholefile", Kind::ReadWholeFile),
    ("writewholefile", Kind::WriteWholeFile),
    ("appendfile", Kind::AppendFile),
    ("appendfilerand", Kind::AppendFileRand),
    ("aiowrite", Kind::AioWrite),
    ("aiowait", Kind::AioWait),
    ("block", Kind::Block),
    ("wakeup", Kind::Wakeup),
    ("semblock", Kind::SemBlock),
    ("sempost", Kind::SemPost),
    ("hog", Kind::Hog),
    ("delay", Kind::Delay),
    ("eventlimit", Kind::EventLimit),
    ("bwlimit", Kind::BwLimit),
    ("iopslimit", Kind::IopsLimit),
    ("opslimit", Kind::OpsLimit),
    ("finishoncount", Kind::FinishOnCount),
    ("finishonbytes", Kind::FinishOnBytes),
];

impl Kind {
    pub fn is_read(self) -> bool {
        matches!(self, Kind::Read | Kind::ReadWholeFile)
    }
    pub fn is_write(self) -> bool {
        matches!(
            self,
            Kind::Write
                | Kind::WriteWholeFile
                | Kind::AppendFile
                | Kind::AppendFileRand
                | Kind::AioWrite
        )
    }
}

#[derive(Debug, Clone)]
pub struct Flowop {
    pub name: String,
    pub kind: Kind,
    pub fileset: Option<usize>,
    pub fd: Option<usize>,
    pub srcfd: Option<usize>,
    pub iosize: Param,
    pub random: bool,
    pub wss: u64,
    pub dsync: bool,
    pub directio: bool,
    pub noreadahead: bool,
    pub opennext: bool,
    /// `indexed=N` or `indexed=$randvar` (sampled on every pick, as Filebench does).
    pub indexed: Option<Param>,
    pub iters: u64,
    pub value: Param,
    /// Index of the semaphore (semblock/sempost) or block event (block/wakeup), or of the
    /// flowop counted by finishoncount/finishonbytes within the thread.
    pub target: Option<usize>,
    /// sempost/wakeup: every instance block of the target, as (first semaphore, instances).
    /// Filebench posts to each instance of the named semblock.
    pub targets: Vec<(usize, usize)>,
    pub target_name: Option<String>,
    pub blocking: bool,
    pub highwater: u64,
    pub inner: Vec<Flowop>,
    /// Index of this flowop's statistics within its thread (pre-order over composites).
    pub stat: usize,
    pub pos: Pos,
}

/// Number the flowops of a thread (pre-order, composites before their inner flowops).
fn number(fs: &mut [Flowop], next: &mut usize) {
    for f in fs {
        f.stat = *next;
        *next += 1;
        number(&mut f.inner, next);
    }
}

/// All flowops of a thread in statistics order.
pub fn flatten(fs: &[Flowop]) -> Vec<&Flowop> {
    let mut out = Vec::new();
    fn walk<'a>(fs: &'a [Flowop], out: &mut Vec<&'a Flowop>) {
        for f in fs {
            out.push(f);
            walk(&f.inner, out);
        }
    }
    walk(fs, &mut out);
    out
}

#[derive(Debug, Clone)]
pub struct ThreadSpec {
    pub name: String,
    pub instances: u64,
    pub memsize: u64,
    pub useism: bool,
    pub flowops: Vec<Flowop>,
}

#[derive(Debug, Clone)]
pub struct ProcSpec {
    pub name: String,
    pub instances: u64,
    pub nice: i32,
    pub threads: Vec<ThreadSpec>,
}

#[derive(Debug, Clone)]
pub struct SemSpec {
    pub name: String,
    pub initial: i64,
    pub highwater: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Cmd {
    CreateFiles,
    Run {
        secs: Option<f64>,
        psrun: Option<(f64, bool)>,
    },
    Sleep(f64),
    Echo(String),
    Eventgen(f64),
    /// `system "command"`, variables interpolated.
    System(String),
}

#[derive(Debug, Clone)]
pub struct Model {
    pub filesets: Vec<FilesetSpec>,
    pub processes: Vec<ProcSpec>,
    /// Semaphores (one per semblock name) followed by block events (one per block name).
    pub sems: Vec<SemSpec>,
    pub script: Vec<Cmd>,
    pub mode: QuitMode,
    pub lathist: bool,
    pub notes: Vec<String>,
    /// Final values of the plain variables, for the result document.
    pub vars: Vec<(String, String)>,
}

impl Model {
    pub fn total_threads(&self) -> usize {
        self.processes
            .iter()
            .map(|p| {
                p.instances as usize
                    * p.threads
                        .iter()
                        .map(|t| t.instances as usize)
                        .sum::<usize>()
            })
            .sum()
    }
}
