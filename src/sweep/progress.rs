//! The progress line of long runs: points done/total, the current point and an ETA, redrawn
//! in place on a terminal (stderr) and silent when stderr is not a terminal.

use crate::units::format_duration;
use std::io::Write;
use std::time::Instant;

pub(crate) struct Progress {
    total: usize,
    done: usize,
    started: Instant,
    enabled: bool,
    width: usize,
}

/// True when stderr is a terminal.
pub(crate) fn stderr_is_tty() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal()
}

impl Progress {
    pub(crate) fn new(total: usize) -> Self {
        Progress {
            total,
            done: 0,
            started: Instant::now(),
            enabled: stderr_is_tty(),
            width: 0,
        }
    }

    /// The line shown while `label` runs.
    pub(crate) fn line(&self, label: &str) -> String {
        let eta = if self.done > 0 {
            let per = self.started.elapsed().as_secs_f64() / self.done as f64;
            format!(
                "ETA {}",
                format_duration(per * (self.total.saturating_sub(self.done)) as f64)
            )
        } else {
            "ETA ?".into()
        };
        let mut l = label.to_string();
        if l.len() > 60 {
            l.truncate(57);
            l.push_str("...");
        }
        format!(
            "[{}/{}] {l}  {eta}",
            self.done + 1,
            self.total.max(self.done + 1)
        )
    }

    pub(crate) fn start_point(&mut self, label: &str) {
        if !self.enabled {
            return;
        }
        let line = self.line(label);
        let pad = self.width.saturating_sub(line.len());
        self.width = line.len();
        let mut e = std::io::stderr().lock();
        let _ = write!(e, "\r{line}{}", " ".repeat(pad));
        let _ = e.flush();
    }

    pub(crate) fn finish_point(&mut self) {
        self.done += 1;
    }

    /// Clear the line before other output.
    pub(crate) fn clear(&mut self) {
        if self.enabled && self.width > 0 {
            let _ = write!(std::io::stderr(), "\r{}\r", " ".repeat(self.width));
            self.width = 0;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_counts_points_and_shows_the_eta() {
        let mut p = Progress::new(4);
        assert!(p.line("bs=64k").starts_with("[1/4] bs=64k  ETA ?"));
        p.finish_point();
        assert!(p.line("x").starts_with("[2/4] x  ETA "));
    }
}
