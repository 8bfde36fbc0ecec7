//! A progress bar on stderr for work that takes more than a second: hidden until then, and
//! for good when stderr is not a terminal or the output is JSON.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Work shorter than this shows no bar.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// Progress through a known number of bytes; shared by the threads doing the work.
pub struct Progress {
    bar: ProgressBar,
    started: Instant,
    /// Whether the bar may appear, and whether it has.
    allowed: bool,
    shown: AtomicBool,
}

impl Progress {
    /// Progress through `total` bytes of `what` ("verifying checksums"); `quiet` (the JSON
    /// output) keeps the bar hidden.
    pub fn bytes(total: u64, what: &str, quiet: bool) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        let style = ProgressStyle::with_template(
            "{msg} [{bar:30}] {binary_bytes}/{binary_total_bytes} ({binary_bytes_per_sec}, {eta} left)",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_message(what.to_string());
        Progress {
            bar,
            started: Instant::now(),
            allowed: !quiet && std::io::stderr().is_terminal(),
            shown: AtomicBool::new(false),
        }
    }

    /// `n` more bytes done.
    pub fn add(&self, n: u64) {
        self.bar.inc(n);
        if self.allowed
            && !self.shown.load(Ordering::Relaxed)
            && self.started.elapsed() > SHOW_AFTER
            && !self.shown.swap(true, Ordering::Relaxed)
        {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    /// Removes the bar (if shown) so the command's own output follows cleanly.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
