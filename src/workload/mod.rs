//! Filebench's Workload Model Language (WML): parse `.f` files, bind variables, lay out and
//! create filesets, and run processes of threads of flowops with per-flowop latency and CPU
//! accounting. `fsbench workload` (src/cli/workload.rs) is the front end; docs/workload.md
//! lists what of the language is supported and how each construct is mapped.

pub mod ast;
pub mod fileset;
pub mod lexer;
pub mod model;
pub mod parser;
pub mod shared;
pub mod vars;
