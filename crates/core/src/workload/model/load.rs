//! The loader: binds variables (with `-D` overrides), resolves every define, checks what can be
//! checked before running (unknown names, a semblock nobody posts, a read on a write-only
//! fileset) and produces the [`Model`] the interpreter runs. Errors carry file:line:column.
//!
//! The statements, variables and values are here; the definitions (filesets, processes,
//! threads, flowops) and the checks that link them are in `load/define.rs`.

use super::super::ast::*;
use super::super::lexer::{shown, Pos};
use super::super::vars::{cvar_dist, format_num, parse_params, Dist, RandVar, Var};
use super::*;
use std::collections::HashMap;
use std::sync::Arc;

mod define;

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

struct Loader {
    env: HashMap<String, Var>,
    filesets: Vec<FilesetSpec>,
    composites: HashMap<String, Composite>,
    model: Model,
}

/// A `define flowop`: its attributes, inner flowops and place.
type Composite = (Vec<Attr>, Vec<FlowopDef>, Pos);

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
}

#[cfg(test)]
mod tests;
