//! A running call's streamed reply, as far as it has arrived: its text, which of its
//! items the reply so far has resolved and previewed, and what it reported. `Calls`
//! stores it in the call's record; `streams` feeds it and acts on what it proves.
//!
//! It keeps "the call's texts, their jobs, what is resolved and what was previewed are
//! one entry per item of the call, in call order".

use std::rc::Rc;

use super::jobs::Job;
use crate::call::{CompatInfo, Report};
use crate::early;
use crate::settle::Ticket;
use crate::slab::Id;
use crate::stream::{reply_cap, ReplyText};

/// A preview of an item's translation while its streamed reply arrives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preview {
    /// The item.
    pub ticket: Ticket,
    /// Its segment's text so far, trimmed, with no marker nor the start of one.
    pub text: String,
}

/// A running call's streamed reply.
#[derive(Debug)]
pub(in crate::engine) struct Streamed {
    text: ReplyText,
    /// The call's texts and their jobs, in call order (the reply's ids).
    texts: Vec<Box<str>>,
    jobs: Vec<Id<Job>>,
    /// Items already resolved from the reply so far.
    resolved: Vec<bool>,
    /// A segment has closed cleanly and waits for the next one's first characters.
    awaits_next: bool,
    /// Length of the last preview given per segment.
    previewed: Vec<usize>,
    /// What the stream reported (usage, limits), the last value of each kind winning.
    report: Report,
    /// Its provider and items' fields: whose length ratio its segments are read with,
    /// and teach.
    provider: u32,
    compat: Rc<CompatInfo>,
}

/// A stream that ended: its whole text and what the call needs to read it.
#[derive(Debug)]
pub(in crate::engine) struct Ended {
    pub(in crate::engine) text: String,
    /// Cut at its cap, or reported so by the provider.
    pub(in crate::engine) truncated: bool,
    /// `<think>` reasoning was removed from it.
    pub(in crate::engine) reasoned: bool,
    pub(in crate::engine) report: Report,
    pub(in crate::engine) texts: Vec<Box<str>>,
    pub(in crate::engine) jobs: Vec<Id<Job>>,
    /// How many items the stream resolved before it ended.
    pub(in crate::engine) early: usize,
    pub(in crate::engine) provider: u32,
    pub(in crate::engine) compat: Rc<CompatInfo>,
}

impl Streamed {
    /// The stream of a call of `texts` (for `jobs`, in call order) to `provider`.
    pub(in crate::engine) fn new(
        texts: Vec<Box<str>>,
        jobs: Vec<Id<Job>>,
        provider: u32,
        compat: Rc<CompatInfo>,
    ) -> Self {
        let count = jobs.len();
        Streamed {
            text: ReplyText::capped(reply_cap(&texts)),
            resolved: vec![false; count],
            awaits_next: false,
            previewed: vec![0; count],
            texts,
            jobs,
            report: Report::default(),
            provider,
            compat,
        }
    }

    /// Adds a piece of the reply; whether the visible text changed.
    pub(in crate::engine) fn push(&mut self, piece: &str) -> bool {
        self.text.push(piece)
    }

    /// Whether the reply passed its cap (it is read as it stands).
    pub(in crate::engine) fn is_truncated(&self) -> bool {
        self.text.is_truncated()
    }

    /// Whether a closed segment waits for the first characters of the next.
    pub(in crate::engine) fn awaits_next(&self) -> bool {
        self.awaits_next
    }

    /// A `{ usage, limits, truncated }` value: the last of each kind wins. It counts
    /// against the length cap as a value (a stream of reports alone ends too).
    pub(in crate::engine) fn add_report(&mut self, report: Report) {
        self.text.count_value(1);
        if report.usage.is_some() {
            self.report.usage = report.usage;
        }
        if !report.limits.is_empty() {
            self.report.limits = report.limits;
        }
        self.report.truncated |= report.truncated;
    }

    /// What it reported so far.
    pub(in crate::engine) fn report(&self) -> &Report {
        &self.report
    }

    /// Its provider.
    pub(in crate::engine) fn provider(&self) -> u32 {
        self.provider
    }

    /// Its items' fields.
    pub(in crate::engine) fn compat(&self) -> &CompatInfo {
        &self.compat
    }

    /// The call's texts, in call order.
    pub(in crate::engine) fn texts(&self) -> &[Box<str>] {
        &self.texts
    }

    /// The job of the item at `index` in call order.
    pub(in crate::engine) fn job(&self, index: usize) -> Option<Id<Job>> {
        self.jobs.get(index).copied()
    }

    /// The items the markers of the reply so far prove (see `early`) and that were not
    /// resolved yet, now counted as resolved: their index in call order and translation.
    pub(in crate::engine) fn newly_proven(
        &mut self,
        tag: &str,
        ratio: Option<f64>,
    ) -> Vec<(usize, String)> {
        let run = early::leading_pairs(self.text.as_str(), tag);
        let texts: Vec<&str> = self.texts.iter().map(|text| &**text).collect();
        let count = early::proven_count(&texts, &run, ratio).min(run.closed.len());
        // Values without a marker matter only while a closed segment waits for the text
        // after it.
        self.awaits_next = !run.broken && run.open.is_some() && count < run.closed.len();
        let proven: Vec<(usize, String)> = (0..count)
            .filter(|&i| !self.resolved[i])
            .map(|i| (i, run.closed[i].to_owned()))
            .collect();
        for (i, _) in &proven {
            self.resolved[*i] = true;
        }
        proven
    }

    /// Previews of the segment being written (and of one that closed with the last
    /// value), while everything before it in the reply is in order, each new since the
    /// last one given for its item: index in call order and text. `tag`: the markers'
    /// tag, `None` for a reply without markers (a single text's only).
    pub(in crate::engine) fn new_previews(&mut self, tag: Option<&str>) -> Vec<(usize, String)> {
        let mut shown: Vec<(usize, String)> = Vec::new();
        match tag {
            Some(tag) => {
                let run = early::leading_pairs(self.text.as_str(), tag);
                if run.broken || run.closed.iter().any(|s| s.is_empty()) {
                    return shown;
                }
                let closed = run.closed.len();
                if let Some(last) = closed.checked_sub(1) {
                    shown.push((last, run.closed[last].to_owned()));
                }
                if let Some(open) = run.open.filter(|_| closed < self.texts.len()) {
                    shown.push((closed, without_marker_start(open).trim().to_owned()));
                }
            }
            None if self.texts.len() == 1 => {
                shown.push((0, self.text.as_str().trim().to_owned()));
            }
            None => return shown,
        }
        shown.retain(|(i, text)| {
            let new = !text.is_empty() && !self.resolved[*i] && text.len() != self.previewed[*i];
            if new {
                self.previewed[*i] = text.len();
            }
            new
        });
        shown
    }

    /// The stream ended (or was cut at its cap): its whole text.
    pub(in crate::engine) fn end(mut self) -> Ended {
        self.text.finish();
        let truncated = self.text.is_truncated() || self.report.truncated;
        let reasoned = self.text.hid_reasoning();
        Ended {
            text: self.text.into_string(),
            truncated,
            reasoned,
            report: self.report,
            early: self.resolved.iter().filter(|r| **r).count(),
            texts: self.texts,
            jobs: self.jobs,
            provider: self.provider,
            compat: self.compat,
        }
    }
}

/// `text` without a trailing `<…` that could still become a marker.
fn without_marker_start(text: &str) -> &str {
    match text.rfind('<') {
        Some(at) if !text[at..].contains('>') => &text[..at],
        _ => text,
    }
}
