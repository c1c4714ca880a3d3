//! The progress line of long runs (sweeps, suites): points done/total, the current point and
//! an ETA. On a terminal it is an `indicatif` line redrawn in place, and every other stderr
//! line printed while it shows goes above it (`runner::live_line::println`, which the
//! workload's echo and psrun lines and the runner's warnings use), so the two never run into
//! each other. With `--progress always` and no terminal each point gets a plain line; with
//! `--progress never` (or auto without a terminal) nothing is shown.

use crate::runner::live::LiveMode;
use crate::units::format_duration;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::Instant;

/// How a study shows its progress when its front end says nothing: on a terminal only.
fn default_mode() -> LiveMode {
    if stderr_is_tty() {
        LiveMode::Terminal
    } else {
        LiveMode::Off
    }
}

pub struct Progress {
    total: usize,
    done: usize,
    started: Instant,
    mode: LiveMode,
    bar: Option<ProgressBar>,
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
            mode: default_mode(),
            bar: None,
        }
    }

    /// Show it as `--progress` said (the study's front end, before the first point).
    pub(crate) fn set_mode(&mut self, mode: LiveMode) {
        self.mode = mode;
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
            let mut cut = 57;
            while !l.is_char_boundary(cut) {
                cut -= 1;
            }
            l.truncate(cut);
            l.push_str("...");
        }
        format!(
            "[{}/{}] {l}  {eta}",
            self.done + 1,
            self.total.max(self.done + 1)
        )
    }

    pub(crate) fn start_point(&mut self, label: &str) {
        let line = self.line(label);
        match self.mode {
            LiveMode::Off => {}
            LiveMode::Lines => crate::runner::live_line::println(&line),
            LiveMode::Terminal => {
                let bar = self.bar.get_or_insert_with(|| {
                    let b =
                        ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(4));
                    b.set_style(
                        ProgressStyle::with_template("{msg}")
                            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                    );
                    // Other stderr lines go above this line while it shows.
                    crate::runner::live_line::show_bar(Some(b.clone()));
                    b
                });
                bar.set_message(line);
                bar.tick();
            }
        }
    }

    pub(crate) fn finish_point(&mut self) {
        self.done += 1;
    }

    /// Clear the line before other output.
    pub fn clear(&mut self) {
        if let Some(b) = self.bar.take() {
            crate::runner::live_line::show_bar(None);
            b.finish_and_clear();
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
        let long = "é".repeat(40);
        assert!(p.line(&long).contains("..."));
    }
}
