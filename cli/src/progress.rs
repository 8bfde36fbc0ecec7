//! Progress on stderr for work that may take a while, as `--progress WHEN` asks: with `auto`,
//! a bar that appears once the work has taken a second, when stderr is a terminal and the
//! output is not JSON; with `always`, the bar from the start or, where stderr is no terminal
//! (indicatif draws nothing there), a plain line at most once a second and one when done; with
//! `never`, nothing.

use indicatif::{BinaryBytes, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// With `auto`, work shorter than this shows no bar.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// Plain lines come at most this often (and one when done).
const LINE_EVERY: Duration = Duration::from_secs(1);

/// When to show progress (`--progress`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum When {
    /// A bar once the work has taken a second, if stderr is a terminal and not with --json
    #[default]
    Auto,
    /// From the start, with --json too: a bar on a terminal, else a line a second and one at
    /// the end
    Always,
    /// No progress
    Never,
}

impl When {
    /// What `self` comes to for a command whose output is JSON (`json`) or text: `auto` shows
    /// nothing beside JSON.
    pub fn with_json(self, json: bool) -> When {
        match (self, json) {
            (When::Auto, true) => When::Never,
            (when, _) => when,
        }
    }
}

/// How progress is shown.
enum Shown {
    Nothing,
    /// The bar, drawn on stderr once the work has taken `SHOW_AFTER` (and whether it is).
    BarLater(AtomicBool),
    /// The bar, drawn on stderr from the start.
    Bar,
    /// Plain lines on stderr; when the last was written (or the work started).
    Lines(Mutex<Instant>),
}

/// Progress through a known number of bytes; shared by the threads doing the work.
pub struct Progress {
    bar: ProgressBar,
    what: String,
    started: Instant,
    shown: Shown,
}

impl Progress {
    /// Progress through `total` bytes of `what` ("verifying checksums"), shown as `when` says
    /// (`When::with_json` already applied).
    pub fn bytes(total: u64, what: &str, when: When) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        let style = ProgressStyle::with_template(
            "{msg} [{bar:30}] {binary_bytes}/{binary_total_bytes} ({binary_bytes_per_sec}, {eta} left)",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_message(what.to_string());
        let shown = match when {
            When::Never => Shown::Nothing,
            When::Auto if std::io::stderr().is_terminal() => {
                Shown::BarLater(AtomicBool::new(false))
            }
            When::Auto => Shown::Nothing,
            When::Always => {
                // indicatif's stderr target is hidden where stderr is no terminal (or TERM is
                // unset or dumb): lines there instead.
                let target = ProgressDrawTarget::stderr();
                match target.is_hidden() {
                    true => Shown::Lines(Mutex::new(Instant::now())),
                    false => {
                        bar.set_draw_target(target);
                        bar.tick();
                        Shown::Bar
                    }
                }
            }
        };
        Progress {
            bar,
            what: what.to_string(),
            started: Instant::now(),
            shown,
        }
    }

    /// `n` more bytes done.
    pub fn add(&self, n: u64) {
        self.bar.inc(n);
        match &self.shown {
            Shown::BarLater(on) => {
                if !on.load(Ordering::Relaxed)
                    && self.started.elapsed() > SHOW_AFTER
                    && !on.swap(true, Ordering::Relaxed)
                {
                    self.bar.set_draw_target(ProgressDrawTarget::stderr());
                }
            }
            Shown::Lines(last) => {
                // Another thread writing a line now: this one need not.
                let Ok(mut last) = last.try_lock() else {
                    return;
                };
                if last.elapsed() >= LINE_EVERY {
                    *last = Instant::now();
                    self.line();
                }
            }
            Shown::Nothing | Shown::Bar => {}
        }
    }

    /// Ends the progress: the bar (if shown) is removed so the command's own output follows
    /// cleanly; plain lines end with one saying all is done.
    pub fn finish(&self) {
        match &self.shown {
            Shown::Lines(_) => self.line(),
            _ => self.bar.finish_and_clear(),
        }
    }

    /// Writes "<what>: <done> of <total>" on stderr, in one write.
    fn line(&self) {
        let total = self.bar.length().unwrap_or(0);
        let (done, total) = (BinaryBytes(self.bar.position()), BinaryBytes(total));
        let line = format!("{}: {done} of {total}\n", self.what);
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }
}
