//! CLI entry: parse, dispatch, exit codes (0 ok, 1 run failed, 2 bad usage).

fn main() {
    std::process::exit(fsbench::cli::main_with_exit_code());
}
