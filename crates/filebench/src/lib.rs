//! Filebench's Workload Model Language (WML) as text: the lexer, the parser and the syntax
//! tree of `.f` files. What the statements mean (variables, filesets, processes of threads of
//! flowops) and how they run is `fsbench_core::workload`, which loads this tree; this crate
//! imports nothing of fsbench.
#![warn(unreachable_pub)]

pub mod ast;
pub mod lexer;
pub mod parser;
