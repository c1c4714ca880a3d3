//! Filebench's Workload Model Language (WML): parse `.f` files, bind variables, lay out and
//! create filesets, and run processes of threads of flowops with per-flowop latency and CPU
//! accounting. `fsbench workload` (src/cli/workload.rs) is the front end; docs/workload.md
//! lists what of the language is supported and how each construct is mapped.

pub mod fileset;
pub mod interp;
pub mod model;
pub mod personalities;
pub mod report;
pub mod run;
pub mod shared;
pub mod stats;
pub mod vars;
pub(crate) mod verify;
pub mod worker;

/// The language itself (tokens, statements, the syntax tree) is the `fsbench-filebench` crate.
pub use fsbench_filebench::{ast, lexer, parser};

use std::collections::HashMap;

/// A workload as the user named it: where it came from, its text and the `-D` overrides.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Source {
    /// A personality name or the path of the `.f` file (used in error messages).
    pub name: String,
    pub text: String,
    /// `-D var=value` pairs in the order given (including `dir` from `--dir`).
    pub defines: Vec<(String, String)>,
    /// On MPI ranks with `--shared-file`: this rank's number. Every rank lays out the same
    /// fileset directories (made once, by rank 0) and tags its own entries' names with it
    /// (`00000001.r00003`), so ranks share the directories but never each other's files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_rank: Option<u32>,
}

/// Parse and load a workload; errors read `FILE:LINE:COL: what was wrong` (a usage error),
/// one line: the messages show quoted user text escaped, and names that reach a message
/// unquoted (a process or flowop name from a string) are escaped here.
pub fn load_source(src: &Source) -> anyhow::Result<model::Model> {
    let at = |pos: lexer::Pos, msg: &str| {
        crate::error::UsageError(lexer::shown(&format!("{}:{pos}: {msg}", src.name)))
    };
    let stmts = parser::parse(&src.text).map_err(|e| at(e.pos, &e.msg))?;
    let overrides: HashMap<String, vars::Var> = src
        .defines
        .iter()
        .map(|(k, v)| (k.clone(), model::define_value(v)))
        .collect();
    let mut m = model::load(&stmts, &overrides).map_err(|e| at(e.pos, &e.msg))?;
    for f in &mut m.filesets {
        f.shared_rank = src.shared_rank;
    }
    Ok(m)
}
#[cfg(test)]
mod tests;
