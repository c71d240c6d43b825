//! What a restarted service worker resumes from: tokens, pauses, adaptive rates, reported
//! limits and daily blocks (the `Pacer` part's state), taken with the wall-clock time and
//! restored with the time since.

use super::timers::Timer;
use super::Engine;
use crate::snapshot::Snapshot;
use crate::time::Duration;

impl<C: Clone> Engine<C> {
    /// The state a restarted pacer needs (see [`Engine::restore`]), at wall time `wall_ms`.
    pub fn snapshot(&self, wall_ms: f64) -> Snapshot {
        self.pacer.snapshot(self.now, wall_ms)
    }

    /// Resumes from a snapshot taken `elapsed` ago: tokens earned meanwhile are added (up
    /// to `capacity`), what is left of each pause still holds, adaptive rates return.
    pub fn restore(&mut self, snapshot: &Snapshot, elapsed: Duration) {
        let pause_ends = self
            .pacer
            .restore(snapshot, elapsed, self.now, &self.options);
        for until in pause_ends {
            self.timers.push(until, Timer::PauseEnd(until));
        }
    }
}
