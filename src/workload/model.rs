//! The loader: binds variables (with `-D` overrides), resolves every define, checks what can be
//! checked before running (unknown names, a semblock nobody posts, a read on a write-only
//! fileset) and produces the [`Model`] the interpreter runs. Errors carry file:line:column.

use super::ast::*;
use super::lexer::{shown, Pos};
use super::vars::{cvar_dist, format_num, parse_params, Dist, RandVar, Var};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// A semantic error at a position; the caller adds the file name.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadError {
    pub pos: Pos,
    pub msg: String,
}

type R<T> = Result<T, LoadError>;

fn fail<T>(pos: Pos, msg: impl Into<String>) -> R<T> {
    Err(LoadError {
        pos,
        msg: msg.into(),
    })
}

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

const ATTRS: &[&str] = &[
    "name",
    "filesetname",
    "filename",
    "fd",
    "srcfd",
    "iosize",
    "random",
    "workingset",
    "dsync",
    "directio",
    "noreadahead",
    "opennext",
    "indexed",
    "iters",
    "value",
    "target",
    "blocking",
    "highwater",
    "rotatefd",
];

struct Loader {
    env: HashMap<String, Var>,
    filesets: Vec<FilesetSpec>,
    composites: HashMap<String, Composite>,
    model: Model,
}

/// A `define flowop`: its attributes, inner flowops and place.
type Composite = (Vec<Attr>, Vec<FlowopDef>, Pos);

/// A flowop of `kind` at `pos` with every attribute at its default.
fn blank_flowop(kind: Kind, pos: Pos) -> Flowop {
    Flowop {
        name: String::new(),
        kind,
        fileset: None,
        fd: None,
        srcfd: None,
        iosize: Param::Const(0.0),
        random: false,
        wss: 0,
        dsync: false,
        directio: false,
        noreadahead: false,
        opennext: false,
        indexed: None,
        iters: 1,
        value: Param::Const(0.0),
        target: None,
        targets: Vec::new(),
        target_name: None,
        blocking: false,
        highwater: 0,
        inner: Vec::new(),
        stat: 0,
        pos,
    }
}

/// The attributes a flowop use ends up with, and a composite's local variables.
/// Local variables of a composite (`$v` or `$v=value`) are bound for its inner flowops, the
/// use's value winning over the definition's default; attributes given on the definition
/// apply unless the use overrides them.
fn merged_attrs(f: &FlowopDef, comp: Option<&Composite>) -> (Vec<Attr>, Vec<(String, Value, Pos)>) {
    let mut attrs: Vec<Attr> = f.attrs.clone();
    let mut locals: Vec<(String, Value, Pos)> = Vec::new();
    if let Some((cattrs, _, _)) = comp {
        for a in cattrs.iter().chain(f.attrs.iter()) {
            if let Some(v) = a.name.strip_prefix('$') {
                locals.retain(|l| l.0 != v);
                locals.push((v.to_string(), a.value.clone(), a.pos));
            }
        }
        for a in cattrs {
            if !attrs.iter().any(|b| b.name == a.name) {
                attrs.push(a.clone());
            }
        }
    }
    attrs.retain(|a| !a.name.starts_with('$'));
    (attrs, locals)
}

/// Turn a `-D` value into a variable: numbers (with k/m/g suffix), true/false, else a string.
pub fn define_value(s: &str) -> Var {
    match s {
        "true" => return Var::Bool(true),
        "false" => return Var::Bool(false),
        _ => {}
    }
    if let Ok(n) = s.parse::<f64>() {
        return Var::Num(n);
    }
    if let Ok(n) = crate::units::parse_size(s) {
        return Var::Num(n as f64);
    }
    Var::Str(s.to_string())
}

impl Model {
    /// A model with nothing defined yet (the loader fills it; a composite flowop's scope
    /// starts from one).
    fn empty() -> Model {
        Model {
            filesets: Vec::new(),
            processes: Vec::new(),
            sems: Vec::new(),
            script: Vec::new(),
            mode: QuitMode::Timeout,
            lathist: false,
            notes: Vec::new(),
            vars: Vec::new(),
        }
    }
}

/// Load a parsed workload. `overrides` are the `-D` values (they win over every `set`).
pub fn load(stmts: &[Stmt], overrides: &HashMap<String, Var>) -> R<Model> {
    let mut l = Loader {
        env: overrides.clone(),
        filesets: Vec::new(),
        composites: HashMap::new(),
        model: Model::empty(),
    };
    let mut process_defs = Vec::new();
    for s in stmts {
        if !l.statement(s, overrides, &mut process_defs)? {
            break;
        }
    }
    l.finish(process_defs)
}

/// A `define process` waiting for every fileset to be known: its attributes, threads,
/// place and the environment as it was where it stood.
type ProcessDef = (Vec<Attr>, Vec<ThreadDef>, Pos, HashMap<String, Var>);

impl Loader {
    /// Apply one top-level statement in file order: bind a variable, record a definition or
    /// append a script command. False at `quit` (nothing after it is read).
    fn statement(
        &mut self,
        s: &Stmt,
        overrides: &HashMap<String, Var>,
        process_defs: &mut Vec<ProcessDef>,
    ) -> R<bool> {
        match s {
            Stmt::Set { var, value, pos } => {
                if !overrides.contains_key(var) {
                    let v = match value {
                        SetValue::Value(v) => self.resolve(v, *pos)?,
                        SetValue::Cvar(attrs) => Var::Rand(Arc::new(self.cvar(attrs, *pos)?)),
                    };
                    self.env.insert(var.clone(), v);
                }
            }
            Stmt::SetMode { mode, .. } => self.model.mode = *mode,
            Stmt::DefineFileset {
                is_file,
                attrs,
                pos,
            } => {
                let fs = self.fileset(*is_file, attrs, *pos)?;
                if self.filesets.iter().any(|f| f.name == fs.name) {
                    return fail(*pos, format!("fileset '{}' is defined twice", fs.name));
                }
                self.filesets.push(fs);
            }
            Stmt::DefineRandvar { attrs, pos } => {
                let (name, rv) = self.randvar(attrs, *pos)?;
                if !overrides.contains_key(&name) {
                    self.env.insert(name, Var::Rand(Arc::new(rv)));
                }
            }
            Stmt::DefineComposite {
                attrs,
                flowops,
                pos,
            } => {
                let name = self.name_attr(attrs, *pos, "composite flowop")?;
                self.composites
                    .insert(name, (attrs.clone(), flowops.clone(), *pos));
            }
            Stmt::DefineProcess {
                attrs,
                threads,
                pos,
            } => {
                // Flowops are resolved after all filesets are known; keep the environment as it
                // is now so later `set`s do not leak backwards.
                process_defs.push((attrs.clone(), threads.clone(), *pos, self.env.clone()));
            }
            Stmt::Quit { .. } => return Ok(false),
            _ => self.script_statement(s)?,
        }
        Ok(true)
    }

    /// Apply a statement of the run script (eventgen, enable, run, psrun, create, sleep, echo,
    /// system) or note one that is accepted and ignored.
    fn script_statement(&mut self, s: &Stmt) -> R<()> {
        let cmd = match s {
            Stmt::Eventgen { attrs, pos } => Cmd::Eventgen(self.eventgen_rate(attrs, *pos)?),
            Stmt::Enable { what, pos } => {
                match what.as_str() {
                    "lathist" => self.model.lathist = true,
                    "multi" => self
                        .model
                        .notes
                        .push("'enable multi' (multi-client sync) is ignored".into()),
                    other => {
                        return fail(*pos, format!("cannot enable '{other}': expected lathist"))
                    }
                }
                return Ok(());
            }
            Stmt::Run { secs, pos } => {
                let secs = self.run_time(secs, *pos)?;
                Cmd::Run { secs, psrun: None }
            }
            Stmt::Psrun {
                period,
                negative,
                secs,
                pos,
            } => {
                let period = period
                    .as_ref()
                    .map(|v| self.amount(v, *pos, "psrun period"))
                    .transpose()?
                    .unwrap_or(10.0);
                if period <= 0.0 {
                    return fail(*pos, "psrun period must be more than 0 seconds");
                }
                Cmd::Run {
                    secs: self.run_time(secs, *pos)?,
                    psrun: Some((period, *negative)),
                }
            }
            Stmt::Create { what, .. } if what != "processes" => Cmd::CreateFiles,
            Stmt::Sleep { secs, pos } => Cmd::Sleep(self.amount(secs, *pos, "sleep time")?),
            Stmt::Echo { text, pos } => Cmd::Echo(self.interpolate(text, *pos)?),
            Stmt::System { cmd, pos } => Cmd::System(self.interpolate(cmd, *pos)?),
            Stmt::Ignored { what, pos } => {
                self.model.notes.push(format!(
                    "line {}: '{what}' is accepted and ignored",
                    pos.line
                ));
                return Ok(());
            }
            // `create processes` (processes start at `run`); definitions and quit are handled
            // by `statement`.
            Stmt::Create { .. }
            | Stmt::Set { .. }
            | Stmt::SetMode { .. }
            | Stmt::DefineFileset { .. }
            | Stmt::DefineRandvar { .. }
            | Stmt::DefineComposite { .. }
            | Stmt::DefineProcess { .. }
            | Stmt::Quit { .. } => return Ok(()),
        };
        self.model.script.push(cmd);
        Ok(())
    }

    /// The events per second of an `eventgen rate=N` statement.
    fn eventgen_rate(&self, attrs: &[Attr], pos: Pos) -> R<f64> {
        let mut rate = None;
        for a in attrs {
            match a.name.as_str() {
                "rate" => rate = Some(self.amount(&a.value, a.pos, "eventgen rate")?),
                other => {
                    return fail(
                        a.pos,
                        format!("unknown eventgen attribute '{other}': expected rate"),
                    )
                }
            }
        }
        let Some(rate) = rate else {
            return fail(pos, "eventgen needs rate=N (events per second)");
        };
        Ok(rate)
    }

    /// The optional run time of `run` or `psrun`.
    fn run_time(&self, secs: &Option<Value>, pos: Pos) -> R<Option<f64>> {
        secs.as_ref()
            .map(|v| self.amount(v, pos, "run time"))
            .transpose()
    }

    /// After the last statement: resolve the processes (each in the environment it was
    /// defined in), refuse runs with no process, link the semaphores and record the final
    /// variable values.
    fn finish(mut self, process_defs: Vec<ProcessDef>) -> R<Model> {
        self.model.filesets = self.filesets.clone();
        let mut sem_names: Vec<(String, Pos, u64, i64)> = Vec::new();
        for (attrs, threads, pos, env) in process_defs {
            self.env = env;
            let p = self.process(&attrs, &threads, pos, &mut sem_names)?;
            self.model.processes.push(p);
        }
        if self.model.processes.is_empty()
            && self
                .model
                .script
                .iter()
                .any(|c| matches!(c, Cmd::Run { .. }))
        {
            return fail(Pos { line: 1, col: 1 }, "the workload defines no process: add `define process name=p { thread name=t { flowop ... } }`");
        }
        self.link_sync(&sem_names)?;
        let mut vars: Vec<(String, String)> = self
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.describe()))
            .collect();
        vars.sort();
        self.model.vars = vars;
        Ok(self.model)
    }

    fn lookup(&self, name: &str, pos: Pos) -> R<Var> {
        self.env.get(name).cloned().ok_or_else(|| LoadError {
            pos,
            msg: format!(
                "variable ${name} is not set: add `set ${name}=...` or pass -D {name}=VALUE"
            ),
        })
    }

    fn resolve(&self, v: &Value, pos: Pos) -> R<Var> {
        Ok(match v {
            Value::Num(n) => Var::Num(*n),
            Value::Str(s) => Var::Str(self.interpolate(s, pos)?),
            Value::Word(w) if w == "true" => Var::Bool(true),
            Value::Word(w) if w == "false" => Var::Bool(false),
            Value::Word(w) => Var::Str(w.clone()),
            Value::Var(name) => self.lookup(name, pos)?,
            Value::Flag => Var::Bool(true),
            Value::Table(_) => {
                return fail(pos, "a table is only accepted as a randvar's randtable")
            }
        })
    }

    fn interpolate(&self, s: &str, pos: Pos) -> R<String> {
        let mut out = String::new();
        let mut it = s.chars().peekable();
        while let Some(c) = it.next() {
            if c == '$'
                && it
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphabetic() || *c == '{')
            {
                let braced = it.peek() == Some(&'{');
                if braced {
                    it.next();
                }
                let mut name = String::new();
                while let Some(&c) = it.peek() {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        name.push(c);
                        it.next();
                    } else {
                        break;
                    }
                }
                if braced && it.next() != Some('}') {
                    return fail(pos, format!("expected '}}' after '${{{name}' in a string"));
                }
                out.push_str(&self.lookup(&name, pos)?.describe());
            } else {
                out.push(c);
            }
        }
        Ok(out)
    }

    fn num(&self, v: &Value, pos: Pos) -> R<f64> {
        match self.resolve(v, pos)? {
            Var::Num(n) => Ok(n),
            Var::Bool(b) => Ok(b as u8 as f64),
            Var::Rand(r) => Ok(r.mean()),
            Var::Str(s) => fail(pos, format!("expected a number, found '{}'", shown(&s))),
        }
    }

    /// A count, size or duration: a finite number of 0 or more (a negative or infinite one
    /// is a mistake, not something to clamp silently).
    fn amount(&self, v: &Value, pos: Pos, what: &str) -> R<f64> {
        let n = self.num(v, pos)?;
        if !n.is_finite() || n < 0.0 {
            return fail(
                pos,
                format!(
                    "{what} must be a finite number of 0 or more, found {}",
                    format_num(n)
                ),
            );
        }
        Ok(n)
    }

    /// Like [`Self::param`], refusing a negative or non-finite constant.
    fn amount_param(&self, v: &Value, pos: Pos, what: &str) -> R<Param> {
        match self.param(v, pos)? {
            Param::Const(_) => Ok(Param::Const(self.amount(v, pos, what)?)),
            r => Ok(r),
        }
    }

    fn param(&self, v: &Value, pos: Pos) -> R<Param> {
        match self.resolve(v, pos)? {
            Var::Rand(r) => Ok(Param::Rand(r)),
            _ => Ok(Param::Const(self.num(v, pos)?)),
        }
    }

    fn flag(&self, v: &Value, pos: Pos) -> R<bool> {
        match self.resolve(v, pos)? {
            Var::Bool(b) => Ok(b),
            Var::Num(n) => Ok(n != 0.0),
            Var::Str(s) => fail(
                pos,
                format!("expected true/false or a number, found '{}'", shown(&s)),
            ),
            Var::Rand(_) => fail(pos, "expected true/false, found a random variable"),
        }
    }

    fn text(&self, v: &Value, pos: Pos) -> R<String> {
        match self.resolve(v, pos)? {
            Var::Str(s) => Ok(s),
            Var::Num(n) => Ok(format_num(n)),
            Var::Bool(b) => Ok(b.to_string()),
            Var::Rand(_) => fail(pos, "expected a name, found a random variable"),
        }
    }

    fn name_attr(&self, attrs: &[Attr], pos: Pos, what: &str) -> R<String> {
        match attrs.iter().find(|a| a.name == "name") {
            Some(a) => self.text(&a.value, a.pos),
            None => fail(pos, format!("a {what} needs name=...")),
        }
    }

    fn cvar(&self, attrs: &[Attr], pos: Pos) -> R<RandVar> {
        let (mut kind, mut params, mut min, mut max, mut round) =
            (None, HashMap::new(), 0.0, None, 0.0);
        for a in attrs {
            match a.name.as_str() {
                "type" => kind = Some(self.text(&a.value, a.pos)?),
                "parameters" => {
                    let t = self.text(&a.value, a.pos)?;
                    params = parse_params(&t).map_err(|m| LoadError { pos: a.pos, msg: m.0 })?;
                }
                "min" => min = self.num(&a.value, a.pos)?,
                "max" => max = Some(self.num(&a.value, a.pos)?),
                "round" => round = self.num(&a.value, a.pos)?,
                other => return fail(a.pos, format!("unknown cvar attribute '{other}': expected type, parameters, min, max or round")),
            }
        }
        let Some(kind) = kind else {
            return fail(pos, "cvar needs type=cvar-gamma|cvar-normal|...");
        };
        let dist = cvar_dist(&kind, &params).map_err(|m| LoadError { pos, msg: m.0 })?;
        Ok(RandVar {
            dist,
            min,
            max,
            round,
            seed: None,
        })
    }

    fn randvar(&self, attrs: &[Attr], pos: Pos) -> R<(String, RandVar)> {
        let mut name = None;
        let (mut kind, mut min, mut mean, mut gamma, mut round, mut seed, mut table) =
            ("uniform".to_string(), 0.0, None, 1500.0, 0.0, None, None);
        for a in attrs {
            match a.name.as_str() {
                "name" => match &a.value {
                    Value::Var(v) => name = Some(v.clone()),
                    _ => return fail(a.pos, "a randvar's name must be a $variable, e.g. name=$iosize"),
                },
                "type" => kind = self.text(&a.value, a.pos)?,
                "min" => min = self.num(&a.value, a.pos)?,
                "mean" => mean = Some(self.num(&a.value, a.pos)?),
                "gamma" => gamma = self.num(&a.value, a.pos)?,
                "round" => round = self.num(&a.value, a.pos)?,
                "seed" => seed = Some(self.num(&a.value, a.pos)? as u64),
                "randsrc" => {}
                "randtable" => match &a.value {
                    Value::Table(rows) => {
                        let mut t = Vec::new();
                        for r in rows {
                            if r.len() != 3 {
                                return fail(a.pos, "each randtable row must be {percent, min, max}");
                            }
                            t.push((self.num(&r[0], a.pos)?, self.num(&r[1], a.pos)?, self.num(&r[2], a.pos)?));
                        }
                        table = Some(t);
                    }
                    _ => return fail(a.pos, "randtable must be a table like {{50, 1k, 2k}, {50, 4k, 8k}}"),
                },
                other => {
                    return fail(a.pos, format!("unknown randvar attribute '{other}': expected name, type, min, mean, gamma, round, seed, randsrc or randtable"))
                }
            }
        }
        let Some(name) = name else {
            return fail(pos, "a randvar needs name=$variable");
        };
        let dist = match kind.as_str() {
            "uniform" => {
                let m = mean.unwrap_or(0.0);
                Dist::Uniform {
                    lower: 0.0,
                    upper: 2.0 * (m - min).max(0.0),
                }
            }
            // Filebench writes the shape times 1000 (gamma=1500 means 1.5).
            "gamma" => Dist::Gamma {
                mean: (mean.unwrap_or(0.0) - min).max(0.0),
                shape: (gamma / 1000.0).max(1e-3),
            },
            // Filebench's rand_table_get: the table is normalised to its minimum 0 and mean 1,
            // then scaled onto [min, mean] (mean defaults to the table's own mean), so with
            // min equal to the table's smallest value a draw is a value of the table itself.
            "tabular" => match table {
                Some(t) if !t.is_empty() => {
                    let tot: f64 = t.iter().map(|r| r.0).sum::<f64>().max(1e-9);
                    let tavg = t.iter().map(|r| r.0 * (r.1 + r.2) / 2.0).sum::<f64>() / tot;
                    let tmin = t.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
                    let m = match mean {
                        Some(m) if m != 0.0 => m,
                        _ => tavg,
                    };
                    let span = tavg - tmin;
                    let scale = if span == 0.0 { 0.0 } else { (m - min) / span };
                    Dist::Table(
                        t.iter()
                            .map(|r| (r.0, (r.1 - tmin) * scale, (r.2 - tmin) * scale))
                            .collect(),
                    )
                }
                _ => {
                    return fail(
                        pos,
                        "a tabular randvar needs randtable={{percent, min, max}, ...}",
                    )
                }
            },
            other => {
                return fail(
                    pos,
                    format!("unknown randvar type '{other}': expected uniform, gamma or tabular"),
                )
            }
        };
        Ok((
            name,
            RandVar {
                dist,
                min,
                max: None,
                round,
                seed,
            },
        ))
    }

    fn fileset(&self, is_file: bool, attrs: &[Attr], pos: Pos) -> R<FilesetSpec> {
        let mut fs = FilesetSpec {
            name: String::new(),
            root: PathBuf::new(),
            is_file,
            entries: 1,
            size: Param::Const(0.0),
            dirwidth: 0.0,
            dirgamma: 0.0,
            dirdepth: None,
            leafdirs: 0,
            prealloc_pct: 0.0,
            paralloc: false,
            reuse: false,
            readonly: false,
            writeonly: false,
            cached: true,
            shared_rank: None,
            pos,
        };
        let mut path = None;
        for a in attrs {
            let v = &a.value;
            match a.name.as_str() {
                "name" => fs.name = self.text(v, a.pos)?,
                "path" => path = Some(self.text(v, a.pos)?),
                "entries" if !is_file => fs.entries = self.amount(v, a.pos, "entries")? as u64,
                "size" | "filesize" => fs.size = self.amount_param(v, a.pos, "size")?,
                "dirwidth" if !is_file => fs.dirwidth = self.amount(v, a.pos, "dirwidth")?,
                "dirgamma" if !is_file => fs.dirgamma = self.amount(v, a.pos, "dirgamma")?,
                "dirdepthrv" if !is_file => fs.dirdepth = Some(self.param(v, a.pos)?),
                "leafdirs" if !is_file => fs.leafdirs = self.amount(v, a.pos, "leafdirs")? as u64,
                "prealloc" => {
                    fs.prealloc_pct = if *v == Value::Flag {
                        100.0
                    } else {
                        self.num(v, a.pos)?
                    };
                    if !(0.0..=100.0).contains(&fs.prealloc_pct) {
                        return fail(a.pos, "prealloc is a percentage: expected 0..100");
                    }
                }
                "paralloc" => fs.paralloc = self.flag(v, a.pos)?,
                "reuse" => fs.reuse = self.flag(v, a.pos)?,
                "readonly" => fs.readonly = self.flag(v, a.pos)?,
                "writeonly" => fs.writeonly = self.flag(v, a.pos)?,
                "cached" => fs.cached = self.flag(v, a.pos)?,
                "trusttree" => {}
                other => {
                    let allowed = if is_file {
                        "name, path, size, prealloc, paralloc, reuse, readonly, writeonly"
                    } else {
                        "name, path, entries, size, dirwidth, dirgamma, dirdepthrv, leafdirs, prealloc, paralloc, reuse, readonly, writeonly"
                    };
                    return fail(
                        a.pos,
                        format!(
                            "unknown {} attribute '{other}': expected {allowed}",
                            if is_file { "file" } else { "fileset" }
                        ),
                    );
                }
            }
        }
        if fs.name.is_empty() || fs.name.contains('/') || fs.name == "." || fs.name == ".." {
            return fail(pos, "a fileset needs name=NAME (a plain name without '/')");
        }
        let Some(path) = path else {
            return fail(pos, format!("fileset '{}' needs path=DIR", fs.name));
        };
        fs.root = PathBuf::from(path).join(&fs.name);
        if fs.dirwidth <= 0.0 {
            fs.dirwidth = 1e9;
        }
        if fs.readonly && fs.writeonly {
            return fail(pos, "a fileset cannot be both readonly and writeonly");
        }
        Ok(fs)
    }

    fn process(
        &self,
        attrs: &[Attr],
        threads: &[ThreadDef],
        pos: Pos,
        sems: &mut Vec<(String, Pos, u64, i64)>,
    ) -> R<ProcSpec> {
        let mut p = ProcSpec {
            name: String::new(),
            instances: 1,
            nice: 0,
            threads: Vec::new(),
        };
        for a in attrs {
            match a.name.as_str() {
                "name" => p.name = self.text(&a.value, a.pos)?,
                "instances" => p.instances = self.amount(&a.value, a.pos, "instances")? as u64,
                "nice" => {
                    let n = self.num(&a.value, a.pos)?;
                    if !(-20.0..=19.0).contains(&n) {
                        return fail(a.pos, "nice must be from -20 to 19");
                    }
                    p.nice = n as i32
                }
                other => {
                    return fail(
                        a.pos,
                        format!(
                            "unknown process attribute '{other}': expected name, instances or nice"
                        ),
                    )
                }
            }
        }
        if p.name.is_empty() {
            return fail(pos, "a process needs name=...");
        }
        for t in threads {
            let mut ts = ThreadSpec {
                name: String::new(),
                instances: 1,
                memsize: 1 << 20,
                useism: false,
                flowops: Vec::new(),
            };
            for a in &t.attrs {
                match a.name.as_str() {
                    "name" => ts.name = self.text(&a.value, a.pos)?,
                    "instances" => {
                        ts.instances = self.amount(&a.value, a.pos, "instances")? as u64
                    }
                    "memsize" => {
                        ts.memsize = self.amount(&a.value, a.pos, "memsize")?.max(4096.0) as u64
                    }
                    "useism" => ts.useism = self.flag(&a.value, a.pos)?,
                    "ioprio" | "nice" => {}
                    other => return fail(a.pos, format!("unknown thread attribute '{other}': expected name, instances, memsize or useism")),
                }
            }
            if ts.name.is_empty() {
                return fail(t.pos, "a thread needs name=...");
            }
            for f in &t.flowops {
                let fo = self.flowop(f, sems, 0)?;
                ts.flowops.push(fo);
            }
            number(&mut ts.flowops, &mut 0);
            // finishoncount, finishonbytes and the limits may name a flowop of the thread
            // (also one inside a composite) as their target.
            let names: Vec<String> = flatten(&ts.flowops)
                .iter()
                .map(|f| f.name.clone())
                .collect();
            fn resolve(fs: &mut [Flowop], names: &[String], thread: &str) -> R<()> {
                for f in fs.iter_mut() {
                    if matches!(
                        f.kind,
                        Kind::FinishOnCount
                            | Kind::FinishOnBytes
                            | Kind::OpsLimit
                            | Kind::IopsLimit
                            | Kind::BwLimit
                    ) {
                        if let Some(tn) = &f.target_name {
                            match names.iter().position(|n| n == tn) {
                                Some(j) => f.target = Some(j),
                                None => {
                                    return fail(
                                        f.pos,
                                        format!(
                                            "target '{tn}' is not a flowop of thread '{thread}'"
                                        ),
                                    )
                                }
                            }
                        }
                    }
                    resolve(&mut f.inner, names, thread)?;
                }
                Ok(())
            }
            resolve(&mut ts.flowops, &names, &ts.name)?;
            p.threads.push(ts);
        }
        if p.threads.is_empty() {
            return fail(pos, format!("process '{}' has no thread", p.name));
        }
        Ok(p)
    }

    /// Resolve one flowop of a thread (`depth` levels inside composites): its kind, its
    /// attributes and, for a composite, its inner flowops; then check it and register the
    /// semaphore it blocks on.
    fn flowop(
        &self,
        f: &FlowopDef,
        sems: &mut Vec<(String, Pos, u64, i64)>,
        depth: usize,
    ) -> R<Flowop> {
        let (kind, comp) = self.flowop_kind(f, depth)?;
        let mut fo = blank_flowop(kind, f.pos);
        let (attrs, locals) = merged_attrs(f, comp);
        for a in &attrs {
            self.flowop_attr(&mut fo, a)?;
        }
        if fo.name.is_empty() {
            return fail(f.pos, format!("flowop {} needs name=...", f.kind));
        }
        if let Some((_, inner, _)) = comp {
            self.expand_composite(&mut fo, inner, &locals, sems, depth)?;
        }
        self.check_flowop(&mut fo, sems)?;
        Ok(fo)
    }

    /// What a flowop's type names: a built-in kind, or a composite defined with
    /// `define flowop` (with its definition) when nesting allows one more level.
    fn flowop_kind(&self, f: &FlowopDef, depth: usize) -> R<(Kind, Option<&Composite>)> {
        if let Some((_, k)) = FLOWOP_NAMES.iter().find(|(n, _)| *n == f.kind) {
            return Ok((*k, None));
        }
        match self.composites.get(&f.kind) {
            Some(c) if depth < 8 => Ok((Kind::Composite, Some(c))),
            Some(_) => fail(
                f.pos,
                "composite flowops nest too deep (more than 8 levels)",
            ),
            None => {
                let all: Vec<&str> = FLOWOP_NAMES.iter().map(|(n, _)| *n).collect();
                fail(f.pos, format!("unknown flowop '{}': expected one of {} or a flowop defined with `define flowop`", f.kind, all.join(", ")))
            }
        }
    }

    /// Set the flowop field an attribute names, refusing an unknown attribute or a fileset
    /// that is not defined.
    fn flowop_attr(&self, fo: &mut Flowop, a: &Attr) -> R<()> {
        let v = &a.value;
        match a.name.as_str() {
            "name" => fo.name = self.text(v, a.pos)?,
            "filesetname" | "filename" => {
                let n = self.text(v, a.pos)?;
                match self.filesets.iter().position(|fs| fs.name == n) {
                    Some(i) => fo.fileset = Some(i),
                    None => return fail(a.pos, format!("no fileset or file named '{}' is defined (define it before the process)", shown(&n))),
                }
            }
            "fd" | "srcfd" => {
                let n = self.num(v, a.pos)?;
                if !(0.0..=1024.0).contains(&n) || n.fract() != 0.0 {
                    return fail(
                        a.pos,
                        format!("{} must be a whole number from 0 to 1024", a.name),
                    );
                }
                if a.name == "fd" {
                    fo.fd = Some(n as usize)
                } else {
                    fo.srcfd = Some(n as usize)
                }
            }
            "iosize" => fo.iosize = self.amount_param(v, a.pos, "iosize")?,
            "random" => fo.random = self.flag(v, a.pos)?,
            "workingset" => fo.wss = self.amount(v, a.pos, "workingset")? as u64,
            "dsync" => fo.dsync = self.flag(v, a.pos)?,
            "directio" => fo.directio = self.flag(v, a.pos)?,
            "noreadahead" => fo.noreadahead = self.flag(v, a.pos)?,
            "opennext" | "rotatefd" => fo.opennext = self.flag(v, a.pos)?,
            "indexed" => fo.indexed = Some(self.amount_param(v, a.pos, "indexed")?),
            "iters" => fo.iters = self.amount(v, a.pos, "iters")?.max(1.0) as u64,
            "value" => fo.value = self.amount_param(v, a.pos, "value")?,
            "target" => fo.target_name = Some(self.text(v, a.pos)?),
            "blocking" => fo.blocking = self.flag(v, a.pos)?,
            "highwater" => fo.highwater = self.amount(v, a.pos, "highwater")? as u64,
            other => {
                return fail(
                    a.pos,
                    format!(
                        "unknown flowop attribute '{other}': expected one of {}",
                        ATTRS.join(", ")
                    ),
                )
            }
        }
        Ok(())
    }

    /// Resolve a composite's inner flowops into `fo.inner`, with its local variables bound
    /// (in a scope of their own when there are any).
    fn expand_composite(
        &self,
        fo: &mut Flowop,
        inner: &[FlowopDef],
        locals: &[(String, Value, Pos)],
        sems: &mut Vec<(String, Pos, u64, i64)>,
        depth: usize,
    ) -> R<()> {
        let bound: Vec<(String, Var)> = locals
            .iter()
            .filter(|l| l.1 != Value::Flag)
            .map(|l| Ok((l.0.clone(), self.resolve(&l.1, l.2)?)))
            .collect::<R<_>>()?;
        if bound.is_empty() {
            for i in inner {
                fo.inner.push(self.flowop(i, sems, depth + 1)?);
            }
        } else {
            let mut scoped = Loader {
                env: self.env.clone(),
                filesets: self.filesets.clone(),
                composites: self.composites.clone(),
                model: Model::empty(),
            };
            for (k, v) in bound {
                scoped.env.insert(k, v);
            }
            for i in inner {
                fo.inner.push(scoped.flowop(i, sems, depth + 1)?);
            }
        }
        Ok(())
    }

    fn check_flowop(&self, fo: &mut Flowop, sems: &mut Vec<(String, Pos, u64, i64)>) -> R<()> {
        use Kind::*;
        let needs_fileset = matches!(
            fo.kind,
            CreateFile
                | DeleteFile
                | StatFile
                | MakeDir
                | RemoveDir
                | ListDir
                | FsyncSet
                | OpenFile
        );
        // statfile and deletefile with fd=N work on the file open there (Filebench).
        if needs_fileset
            && fo.fileset.is_none()
            && !(matches!(fo.kind, StatFile | DeleteFile) && fo.fd.is_some())
        {
            return fail(
                fo.pos,
                format!("flowop '{}' needs filesetname=NAME", fo.name),
            );
        }
        // I/O flowops without fd or fileset, closefile and fsync without fd use the thread's
        // default descriptor 0 (Filebench's flowoplib_fdnum); whether it is open is known only
        // when the flowop runs.
        if matches!(fo.kind, MakeDir | RemoveDir)
            && !self.filesets[fo.fileset.unwrap_or(0)].is_dirs()
        {
            return fail(
                fo.pos,
                format!(
                    "flowop '{}' works on a fileset of directories: give that fileset leafdirs=N",
                    fo.name
                ),
            );
        }
        if let Some(i) = fo.fileset {
            let fs = &self.filesets[i];
            if fs.readonly && (fo.kind.is_write() || matches!(fo.kind, CreateFile | DeleteFile)) {
                return fail(
                    fo.pos,
                    format!(
                        "flowop '{}' writes to fileset '{}', which is readonly",
                        fo.name, fs.name
                    ),
                );
            }
            if fs.writeonly && fo.kind.is_read() {
                return fail(
                    fo.pos,
                    format!(
                        "flowop '{}' reads fileset '{}', which is writeonly",
                        fo.name, fs.name
                    ),
                );
            }
            if fs.is_dirs() && !matches!(fo.kind, MakeDir | RemoveDir | ListDir) {
                return fail(fo.pos, format!("fileset '{}' holds directories (leafdirs): only makedir, removedir and listdir use it", fs.name));
            }
        }
        let io = matches!(
            fo.kind,
            Read | Write | AppendFile | AppendFileRand | AioWrite
        );
        if io && fo.iosize.upper_hint() <= 0.0 {
            return fail(
                fo.pos,
                format!("flowop '{}' needs iosize=N (bytes, e.g. 8k)", fo.name),
            );
        }
        if matches!(fo.kind, ReadWholeFile | WriteWholeFile) && fo.iosize.upper_hint() <= 0.0 {
            fo.iosize = Param::Const(1048576.0);
        }
        match fo.kind {
            SemBlock | Block => {
                let key = if fo.kind == Block {
                    format!("block:{}", fo.name)
                } else {
                    fo.name.clone()
                };
                let initial = 0;
                match sems.iter().position(|s| s.0 == key) {
                    Some(i) => fo.target = Some(i),
                    None => {
                        sems.push((key, fo.pos, fo.highwater, initial));
                        fo.target = Some(sems.len() - 1);
                    }
                }
            }
            SemPost | Wakeup if fo.target_name.is_none() => {
                let what = if fo.kind == SemPost {
                    "semblock"
                } else {
                    "block flowop"
                };
                return fail(
                    fo.pos,
                    format!(
                        "flowop '{}' needs target=NAME (the {what} it posts to)",
                        fo.name
                    ),
                );
            }
            _ => {}
        }
        Ok(())
    }

    /// Give every instance of every semblock/block flowop its own semaphore (Filebench's
    /// flowops are per thread instance, and sempost/wakeup post to each instance of the target
    /// name); resolve sempost/wakeup targets; refuse a semblock or block nothing can release.
    fn link_sync(&mut self, sems: &[(String, Pos, u64, i64)]) -> R<()> {
        // Instance blocks: (key, process, thread, first semaphore, instances, highwater).
        let mut blocks: Vec<(usize, usize, usize, usize, usize)> = Vec::new();
        let mut specs: Vec<SemSpec> = Vec::new();
        fn collect(fs: &[Flowop], out: &mut Vec<(usize, u64)>) {
            for f in fs {
                if matches!(f.kind, Kind::SemBlock | Kind::Block) {
                    if let Some(k) = f.target {
                        if !out.iter().any(|o| o.0 == k) {
                            out.push((k, f.highwater));
                        }
                    }
                }
                collect(&f.inner, out);
            }
        }
        for (pi, p) in self.model.processes.iter().enumerate() {
            for (ti, t) in p.threads.iter().enumerate() {
                let mut keys = Vec::new();
                collect(&t.flowops, &mut keys);
                let n = (p.instances * t.instances) as usize;
                for (k, hw) in keys {
                    blocks.push((k, pi, ti, specs.len(), n));
                    for _ in 0..n {
                        specs.push(SemSpec {
                            name: sems[k].0.trim_start_matches("block:").to_string(),
                            initial: 0,
                            highwater: hw,
                        });
                    }
                }
            }
        }
        let mut posted = vec![false; sems.len()];
        type Blocks = [(usize, usize, usize, usize, usize)];
        fn walk(
            fs: &mut [Flowop],
            sems: &[(String, Pos, u64, i64)],
            blocks: &Blocks,
            at: (usize, usize),
            posted: &mut [bool],
        ) -> R<()> {
            for f in fs.iter_mut() {
                if matches!(f.kind, Kind::SemBlock | Kind::Block) {
                    let k = f.target.unwrap_or(0);
                    if let Some(b) = blocks.iter().find(|b| b.0 == k && (b.1, b.2) == at) {
                        f.target = Some(b.3);
                    }
                }
                if matches!(f.kind, Kind::SemPost | Kind::Wakeup) {
                    let tn = f.target_name.clone().unwrap_or_default();
                    let key = if f.kind == Kind::Wakeup {
                        format!("block:{tn}")
                    } else {
                        tn.clone()
                    };
                    match sems.iter().position(|s| s.0 == key) {
                        Some(i) => {
                            f.targets = blocks
                                .iter()
                                .filter(|b| b.0 == i)
                                .map(|b| (b.3, b.4))
                                .collect();
                            f.target = f.targets.first().map(|t| t.0);
                            posted[i] = true;
                        }
                        None => {
                            let what = if f.kind == Kind::SemPost {
                                "semblock"
                            } else {
                                "block"
                            };
                            return fail(f.pos, format!("flowop '{}' targets '{tn}', but no {what} flowop has that name", f.name));
                        }
                    }
                }
                walk(&mut f.inner, sems, blocks, at, posted)?;
            }
            Ok(())
        }
        for (pi, p) in self.model.processes.iter_mut().enumerate() {
            for (ti, t) in p.threads.iter_mut().enumerate() {
                walk(&mut t.flowops, sems, &blocks, (pi, ti), &mut posted)?;
            }
        }
        for (i, s) in sems.iter().enumerate() {
            if !posted[i] {
                let what = if s.0.starts_with("block:") {
                    "block flowop"
                } else {
                    "semblock"
                };
                return LoadError {
                    pos: s.1,
                    msg: format!(
                        "{what} '{}' can never proceed: no sempost/wakeup targets it",
                        s.0.trim_start_matches("block:")
                    ),
                }
                .into_err();
            }
        }
        self.model.sems = specs;
        Ok(())
    }
}

impl LoadError {
    fn into_err<T>(self) -> R<T> {
        Err(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::parser::parse;

    fn load_str(s: &str) -> R<Model> {
        load(&parse(s).unwrap(), &HashMap::new())
    }

    #[test]
    fn overrides_win_and_undefined_vars_are_reported() {
        let src = "set $n=10\ndefine fileset name=fs,path=/tmp/x,entries=$n,size=1k\ndefine process name=p { thread name=t { flowop statfile name=s,filesetname=fs } }\nrun 1";
        let m = load_str(src).unwrap();
        assert_eq!(m.filesets[0].entries, 10);
        let mut o = HashMap::new();
        o.insert("n".to_string(), define_value("3k"));
        let m = load(&parse(src).unwrap(), &o).unwrap();
        assert_eq!(m.filesets[0].entries, 3072);
        let e = load_str("define fileset name=fs,path=$dir,entries=1").unwrap_err();
        assert_eq!(e.pos, Pos { line: 1, col: 24 });
        assert!(e.msg.contains("$dir is not set"));
    }

    #[test]
    fn semblock_without_post_is_refused() {
        let e = load_str(
            "define process name=p { thread name=t { flowop semblock name=wait,value=1 } }\nrun 1",
        )
        .unwrap_err();
        assert!(e.msg.contains("can never proceed"), "{}", e.msg);
        let e = load_str(
            "define process name=p { thread name=t { flowop sempost name=post,target=nosuch } }",
        )
        .unwrap_err();
        assert!(e.msg.contains("no semblock"), "{}", e.msg);
        let ok = load_str("define process name=p { thread name=t { flowop semblock name=wait,value=1\nflowop sempost name=post,target=wait,value=1 } }\nrun 1").unwrap();
        assert_eq!(ok.sems.len(), 1);
    }

    #[test]
    fn negative_or_non_finite_amounts_are_refused() {
        for (attr, v) in [
            ("entries", "-1"),
            ("size", "-5"),
            ("dirwidth", "-2"),
            ("leafdirs", "-1"),
        ] {
            let src = format!("define fileset name=fs,path=/tmp/x,{attr}={v}");
            let e = load_str(&src).unwrap_err();
            assert!(
                e.msg.contains("finite number of 0 or more"),
                "{attr}={v}: {}",
                e.msg
            );
        }
        for v in ["nan", "1e400", "-inf", "-7"] {
            let mut o = HashMap::new();
            o.insert("n".to_string(), define_value(v));
            let src = "define fileset name=fs,path=/tmp/x,entries=$n";
            assert!(load(&parse(src).unwrap(), &o).is_err(), "-D n={v}");
        }
        for t in [
            "define process name=p,instances=-1 { thread name=t { flowop hog name=h,value=1 } }",
            "define process name=p { thread name=t,instances=-3 { flowop hog name=h,value=1 } }",
            "define process name=p { thread name=t { flowop hog name=h,value=-1 } }",
            "define process name=p { thread name=t { flowop hog name=h,value=1,iters=-1 } }",
            "sleep -1",
        ] {
            let e = load_str(t).unwrap_err();
            assert!(e.msg.contains("0 or more"), "{t}: {}", e.msg);
        }
    }

    #[test]
    fn semantic_errors_name_the_place() {
        let e = load_str("define process name=p {\n thread name=t {\n  flowop frob name=x\n }\n}")
            .unwrap_err();
        assert_eq!(e.pos, Pos { line: 3, col: 10 });
        let e = load_str("define file name=f,path=/tmp,readonly\ndefine process name=p { thread name=t { flowop write name=w,filename=f,iosize=4k } }").unwrap_err();
        assert!(e.msg.contains("readonly"));
        let e = load_str("define fileset name=f,path=/tmp,entries=2,bogus=1").unwrap_err();
        assert!(e.msg.contains("unknown fileset attribute 'bogus'"));
    }

    /// The script commands in file order, notes for what is ignored, nothing after `quit`.
    #[test]
    fn script_commands_in_order_and_quit_ends_the_file() {
        let m = load_str("set $t=3\neventgen rate=5\nenable lathist\nenable multi\ncreate files\ncreate processes\nrun $t\npsrun -2 4\npsrun\nsleep 1\necho \"t=$t\"\nsystem \"true $t\"\nversion\ndefine process name=p { thread name=t { flowop hog name=h,value=1 } }\nquit\nrun 9\n").unwrap();
        assert_eq!(
            m.script,
            vec![
                Cmd::Eventgen(5.0),
                Cmd::CreateFiles,
                Cmd::Run {
                    secs: Some(3.0),
                    psrun: None
                },
                Cmd::Run {
                    secs: Some(4.0),
                    psrun: Some((2.0, true))
                },
                Cmd::Run {
                    secs: None,
                    psrun: Some((10.0, false))
                },
                Cmd::Sleep(1.0),
                Cmd::Echo("t=3".into()),
                Cmd::System("true 3".into()),
            ]
        );
        assert!(m.lathist);
        assert_eq!(
            m.notes,
            vec![
                "'enable multi' (multi-client sync) is ignored".to_string(),
                "line 13: 'version' is accepted and ignored".to_string(),
            ]
        );
        assert_eq!(m.vars, vec![("t".to_string(), "3".to_string())]);
        assert_eq!(m.processes.len(), 1);
    }

    /// Loader mistakes of the statements and flowops: message and place.
    #[test]
    fn statement_and_flowop_mistakes_name_the_place() {
        let p = "define process name=p { thread name=t { flowop hog name=h,value=1 } }\n";
        let cases: Vec<(String, (u32, u32), &str)> = vec![
            ("eventgen".into(), (1, 1), "eventgen needs rate=N (events per second)"),
            ("eventgen rate=1,burst=2".into(), (1, 17), "unknown eventgen attribute 'burst': expected rate"),
            ("enable foo".into(), (1, 1), "cannot enable 'foo': expected lathist"),
            (format!("{p}psrun 0"), (2, 1), "psrun period must be more than 0 seconds"),
            (format!("{p}run -1"), (2, 1), "run time must be a finite number of 0 or more, found -1"),
            ("sleep 1\nrun 1".into(), (1, 1), "the workload defines no process: add `define process name=p { thread name=t { flowop ... } }`"),
            ("define file name=f,path=/tmp\ndefine file name=f,path=/tmp".into(), (2, 1), "fileset 'f' is defined twice"),
            ("define flowop name=a { flowop a name=x }\ndefine process name=p { thread name=t { flowop a name=y } }".into(), (1, 31), "composite flowops nest too deep (more than 8 levels)"),
            ("define process name=p { thread name=t { flowop hog value=1 } }".into(), (1, 48), "flowop hog needs name=..."),
            ("define process name=p { thread name=t { flowop read name=r,filename=nof } }".into(), (1, 60), "no fileset or file named 'nof' is defined (define it before the process)"),
            ("define process name=p { thread name=t { flowop hog name=h,fd=2000 } }".into(), (1, 59), "fd must be a whole number from 0 to 1024"),
            ("define process name=p { thread name=t { flowop hog name=h,colour=2 } }".into(), (1, 59), "unknown flowop attribute 'colour': expected one of name, filesetname, filename, fd, srcfd, iosize, random, workingset, dsync, directio, noreadahead, opennext, indexed, iters, value, target, blocking, highwater, rotatefd"),
        ];
        for (src, (line, col), msg) in cases {
            let e = load_str(&src).unwrap_err();
            assert_eq!((e.pos, e.msg.as_str()), (Pos { line, col }, msg), "{src}");
        }
    }

    /// A composite's attributes apply to its uses unless a use gives its own.
    #[test]
    fn composite_definition_attributes_are_defaults() {
        let m = load_str("define flowop name=c, iters=4 { flowop hog name=h,value=1 }\ndefine process name=p { thread name=t { flowop c name=u\nflowop c name=v,iters=2 } }").unwrap();
        let f = &m.processes[0].threads[0].flowops;
        assert_eq!(
            (f[0].kind, f[0].iters, f[0].inner.len()),
            (Kind::Composite, 4, 1)
        );
        assert_eq!((f[1].name.as_str(), f[1].iters), ("v", 2));
        assert_eq!(f[1].inner[0].stat, 3);
    }
}
