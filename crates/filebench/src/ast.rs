//! The syntax tree of a workload file: statements as written, values unresolved (variables are
//! bound later by the loader, so `-D var=value` can override a `set`).

use crate::lexer::Pos;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Num(f64),
    Str(String),
    Word(String),
    Var(String),
    /// `{{10, 1k, 2k}, {90, 4k, 8k}}` (a randvar's randtable).
    Table(Vec<Vec<Value>>),
    /// An attribute written without `=value`, e.g. `prealloc`, `random`.
    Flag,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Attr {
    pub name: String,
    pub value: Value,
    pub pos: Pos,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FlowopDef {
    /// The flowop type (`read`, `createfile`, ...) or the name of a composite flowop.
    pub kind: String,
    pub attrs: Vec<Attr>,
    pub pos: Pos,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ThreadDef {
    pub attrs: Vec<Attr>,
    pub flowops: Vec<FlowopDef>,
    pub pos: Pos,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuitMode {
    Timeout,
    AllDone,
    FirstDone,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SetValue {
    Value(Value),
    /// `cvar(type=cvar-gamma, parameters=mean:16384;gamma:1.5, min=..., round=...)`
    Cvar(Vec<Attr>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Stmt {
    Set {
        var: String,
        value: SetValue,
        pos: Pos,
    },
    SetMode {
        mode: QuitMode,
        pos: Pos,
    },
    DefineFileset {
        is_file: bool,
        attrs: Vec<Attr>,
        pos: Pos,
    },
    DefineRandvar {
        attrs: Vec<Attr>,
        pos: Pos,
    },
    DefineProcess {
        attrs: Vec<Attr>,
        threads: Vec<ThreadDef>,
        pos: Pos,
    },
    DefineComposite {
        attrs: Vec<Attr>,
        flowops: Vec<FlowopDef>,
        pos: Pos,
    },
    Eventgen {
        attrs: Vec<Attr>,
        pos: Pos,
    },
    Enable {
        what: String,
        pos: Pos,
    },
    Run {
        secs: Option<Value>,
        pos: Pos,
    },
    Psrun {
        period: Option<Value>,
        negative: bool,
        secs: Option<Value>,
        pos: Pos,
    },
    Create {
        what: String,
        pos: Pos,
    },
    Sleep {
        secs: Value,
        pos: Pos,
    },
    Echo {
        text: String,
        pos: Pos,
    },
    Quit {
        pos: Pos,
    },
    /// `system "command"`: run by the shell at this point of the script (as Filebench does).
    System {
        cmd: String,
        pos: Pos,
    },
    /// Accepted for compatibility and ignored, with a note (`debug`, `version`, `system`, ...).
    Ignored {
        what: String,
        pos: Pos,
    },
}
