//! Signs of life on long work: an indicatif bar where the work reports how
//! far it is (the analysis, by stage), a spinner with the elapsed time
//! where it does not (reading inputs, extrapolating, merging). Both draw on
//! standard error and only when it is a terminal, so pipes, logs and tests
//! see nothing of them, and both vanish when the work ends.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar or a spinner on standard error, hidden when that is not a
/// terminal. Dropping it clears it.
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar for work that reports `(stage, done, total)`, as
    /// [`analysis::analyze`] does; `what` names the command.
    pub fn bar(what: &str) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix}: {msg:<15} [{bar:30}] {percent:>3}% ({elapsed}, {eta} left)",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("#>-"),
        );
        bar.set_prefix(what.to_string());
        Progress { bar }
    }

    /// A spinner that says `message` and the time spent, ticking on its own
    /// while the work runs.
    pub fn spinner(what: &str, message: impl Into<String>) -> Progress {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{prefix}: {spinner} {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_prefix(what.to_string());
        bar.set_message(message.into());
        bar.enable_steady_tick(Duration::from_millis(120));
        Progress { bar }
    }

    /// Reports a stage's progress (the callback the analysis takes).
    pub fn update(&self, stage: &str, done: u64, total: u64) {
        if self.bar.message() != stage {
            self.bar.set_message(stage.to_string());
        }
        self.bar.set_length(total);
        self.bar.set_position(done.min(total));
    }

    /// Prints a line on standard error without tearing the bar.
    pub fn warn(&self, line: &str) {
        self.bar.suspend(|| eprintln!("{line}"));
    }

    /// Changes what a spinner says.
    pub fn say(&self, message: impl Into<String>) {
        self.bar.set_message(message.into());
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
