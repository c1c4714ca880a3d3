//! CLI entry: parse, dispatch, exit codes (0 ok, 1 run failed, 2 bad usage).

fn main() {
    // Behave like other command-line tools when output goes to a closed pipe (`| head`):
    // end quietly instead of panicking on a failed print.
    // SAFETY: resetting a signal disposition to its default at start-up, before any thread.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // Started by `fsbench trace` in front of the command it traces: become that command.
    fsbench::trace::strace::exec_tracee_if_asked();
    std::process::exit(fsbench::main_with_exit_code());
}
