//! A provider's learned batch size (`adaptiveBatching`): how many items its batch replies
//! have shown they can carry.
//!
//! Small and local models often cannot keep a batch's layout. Every batch such a model
//! answers costs a call that proves nothing, and its items go out again alone, so a
//! provider that keeps failing batches is given smaller ones until its items go one to a
//! call, and is tried with a batch of two now and then, in case it can batch again
//! (another model behind the same id).
//!
//! The rules: two batch replies in a row that prove none of their segments halve the
//! limit (rounded down, 1 at least; single calls between them do not break the row); a
//! batch reply that proves every segment raises it by one; at a limit of 1, one batch of
//! two items is tried after every [`PROBE_AFTER_SINGLES`] single calls.

/// Single calls at a limit of 1 before a batch of two is tried again.
pub const PROBE_AFTER_SINGLES: u32 = 20;

/// What a batch reply proved of its segments.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Proved {
    /// Not one segment.
    Nothing,
    /// Some, not all.
    Some,
    /// Every segment.
    All,
}

/// A provider's learned limit on the items of its batches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchLimit {
    /// The limit learned; `None`: none yet (the pacer's `maxItemsPerBatch`).
    learned: Option<u32>,
    /// Batch replies in a row that proved nothing, since the last change.
    failed_in_row: u8,
    /// Single calls since the limit reached 1 or the last probe.
    singles: u32,
}

impl BatchLimit {
    /// A limit restored from a snapshot.
    pub fn restored(limit: u32) -> Self {
        BatchLimit {
            learned: Some(limit.max(1)),
            ..BatchLimit::default()
        }
    }

    /// Most items in a batch to this provider under `max` (`maxItemsPerBatch`).
    pub fn limit(&self, max: u32) -> u32 {
        self.learned.map_or(max, |l| l.min(max)).max(1)
    }

    /// The limit learned, when one was.
    pub fn learned(&self) -> Option<u32> {
        self.learned
    }

    /// A batch reply came back proving `proved` of its segments, under `max`. The new
    /// limit when it changed.
    pub fn on_batch_reply(&mut self, proved: Proved, max: u32) -> Option<u32> {
        let before = self.limit(max);
        match proved {
            Proved::Nothing => {
                self.failed_in_row = self.failed_in_row.saturating_add(1);
                if self.failed_in_row < 2 {
                    return None;
                }
                self.failed_in_row = 0;
                self.learned = Some((before / 2).max(1));
            }
            Proved::Some => {
                self.failed_in_row = 0;
                return None;
            }
            Proved::All => {
                self.failed_in_row = 0;
                if before >= max {
                    return None;
                }
                self.learned = Some(before + 1);
            }
        }
        let after = self.limit(max);
        if after == 1 && before != 1 {
            self.singles = 0;
        }
        (after != before).then_some(after)
    }

    /// A single call to the provider started.
    pub fn on_single(&mut self) {
        self.singles = self.singles.saturating_add(1);
    }

    /// How many items the next call to this provider may carry under `max`: at a limit
    /// of 1, two once [`PROBE_AFTER_SINGLES`] single calls have gone since the last try.
    pub fn next_call_limit(&self, max: u32) -> u32 {
        let limit = self.limit(max);
        if limit == 1 && max >= 2 && self.singles >= PROBE_AFTER_SINGLES {
            2
        } else {
            limit
        }
    }

    /// A batch call started: a probe, if it was one, is taken.
    pub fn on_batch(&mut self) {
        self.singles = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_failures_in_a_row_halve_and_a_success_raises_by_one() {
        let mut l = BatchLimit::default();
        assert_eq!(l.limit(4), 4);
        assert_eq!(l.on_batch_reply(Proved::Nothing, 4), None);
        assert_eq!(l.on_batch_reply(Proved::Nothing, 4), Some(2));
        assert_eq!(l.on_batch_reply(Proved::Nothing, 4), None);
        assert_eq!(l.on_batch_reply(Proved::Some, 4), None);
        assert_eq!(l.on_batch_reply(Proved::Nothing, 4), None);
        assert_eq!(l.on_batch_reply(Proved::Nothing, 4), Some(1));
        assert_eq!(l.on_batch_reply(Proved::Nothing, 4), None);
        assert_eq!(l.on_batch_reply(Proved::Nothing, 4), None);
        assert_eq!(l.limit(4), 1);
        assert_eq!(l.on_batch_reply(Proved::All, 4), Some(2));
        assert_eq!(l.on_batch_reply(Proved::All, 4), Some(3));
        assert_eq!(l.on_batch_reply(Proved::All, 4), Some(4));
        assert_eq!(l.on_batch_reply(Proved::All, 4), None);
    }

    #[test]
    fn odd_limits_round_down_and_never_go_below_one() {
        let mut l = BatchLimit::restored(5);
        l.on_batch_reply(Proved::Nothing, 8);
        assert_eq!(l.on_batch_reply(Proved::Nothing, 8), Some(2));
        assert_eq!(BatchLimit::restored(0).limit(4), 1);
        // A learned limit above a lowered maxItemsPerBatch is that maximum.
        assert_eq!(BatchLimit::restored(3).limit(2), 2);
    }

    #[test]
    fn at_one_a_batch_of_two_goes_after_twenty_singles() {
        let mut l = BatchLimit::restored(1);
        for _ in 0..PROBE_AFTER_SINGLES {
            assert_eq!(l.next_call_limit(4), 1);
            l.on_single();
        }
        assert_eq!(l.next_call_limit(4), 2);
        // Without room for two in a batch, there is nothing to probe.
        assert_eq!(l.next_call_limit(1), 1);
        l.on_batch();
        assert_eq!(l.next_call_limit(4), 1);
    }
}
