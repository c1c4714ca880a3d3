//! The loader's definitions: filesets, processes with their threads and flowops (composite
//! flowops expanded), and the checks that link semaphores and block events to their posts.

use super::super::super::ast::*;
use super::super::super::lexer::{shown, Pos};
use super::super::super::vars::Var;
use super::super::*;
use super::{fail, Composite, LoadError, Loader, R};
use std::path::PathBuf;

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

impl Loader {
    pub(super) fn fileset(&self, is_file: bool, attrs: &[Attr], pos: Pos) -> R<FilesetSpec> {
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
        // fsbench's `totalsize`: the whole fileset's size, shared out evenly over its entries
        // (a database of N data files given as one size).
        let mut total: Option<(f64, Pos)> = None;
        let mut sized = false;
        for a in attrs {
            let v = &a.value;
            match a.name.as_str() {
                "name" => fs.name = self.text(v, a.pos)?,
                "totalsize" if !is_file => {
                    total = Some((self.amount(v, a.pos, "totalsize")?, a.pos))
                }
                "path" => path = Some(self.text(v, a.pos)?),
                "entries" if !is_file => fs.entries = self.amount(v, a.pos, "entries")? as u64,
                "size" | "filesize" => {
                    fs.size = self.amount_param(v, a.pos, "size")?;
                    sized = true;
                }
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
                        "name, path, entries, size, totalsize, dirwidth, dirgamma, dirdepthrv, leafdirs, prealloc, paralloc, reuse, readonly, writeonly"
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
        if let Some((t, at)) = total {
            if sized {
                return fail(
                    at,
                    "give a fileset size (each entry) or totalsize (all entries), not both",
                );
            }
            fs.size = Param::Const((t / fs.entries.max(1) as f64).floor());
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

    pub(super) fn process(
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
    pub(super) fn link_sync(&mut self, sems: &[(String, Pos, u64, i64)]) -> R<()> {
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
