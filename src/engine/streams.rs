//! Streamed replies: the reply arrives in pieces (`handle_chunk`), reports of usage and
//! limits may come between them (`handle_stream_report`), and it ends
//! (`handle_stream_end`) or breaks (`handle_response` with a failure, or a timeout
//! between two values). In the markers layout, items whose segments the reply so far
//! proves (`early`) resolve at once; the rest is read as a whole reply at the end.

use super::batches::{Batch, Batches};
use super::calls::Running;
use super::outbox::Counter;
use super::replies::{Reading, Unproven};
use super::{Engine, Job};
use crate::batch_limit::Proved;
use std::rc::Rc;

use crate::call::{CallId, CompatInfo, Failure, Reply, Report};
use crate::early;
use crate::proof;
use crate::proof::char_len;
use crate::settle::Ticket;
use crate::slab::Id;
use crate::stream::{reply_cap, ReplyText};
use crate::time::Instant;

/// A running call's streamed reply.
#[derive(Debug)]
pub(super) struct Streamed {
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

/// A preview of an item's translation while its streamed reply arrives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preview {
    /// The item.
    pub ticket: Ticket,
    /// Its segment's text so far, trimmed, with no marker nor the start of one.
    pub text: String,
}

/// A string reply's visible text: reasoning removed. `None` for a single text left
/// empty by the removal: no answer at all, a failed call ([`left_empty`]), retried like
/// a reply of the wrong type.
pub(super) fn visible_reply(text: String, texts: usize) -> Option<String> {
    let Some(visible) = ReplyText::visible(&text) else {
        return Some(text);
    };
    if texts <= 1 {
        // The line breaks a model writes after `</think>` are not the translation's.
        let answer = visible.trim();
        return (!answer.is_empty()).then(|| answer.to_owned());
    }
    Some(visible)
}

pub(super) fn left_empty<C>() -> Failure<C> {
    let mut failure =
        Failure::bad_reply("a reply left empty once its <think> reasoning is removed");
    failure.message =
        String::from("provider returned nothing but <think> reasoning: no translation");
    failure
}

impl Running {
    /// What the call's stream reported so far, if it streamed.
    pub(super) fn stream_report(&self) -> Option<&Report> {
        self.stream().map(|s| &s.report)
    }

    /// How many items the call's batch still holds.
    pub(super) fn batch_len(&self, batches: &Batches) -> usize {
        batches.get(self.batch()).map_or(0, |b| b.jobs().len())
    }
}

impl<C: Clone> Engine<C> {
    /// A piece of call `id`'s streamed reply. Unknown ids are ignored.
    pub fn handle_chunk(&mut self, now: Instant, id: CallId, piece: &str) {
        self.advance(now);
        if let Some(mut stream) = self.stream_value(id) {
            let changed = stream.text.push(piece);
            let truncated = stream.text.is_truncated();
            // A closing marker, or the first characters of the segment after it, can
            // prove a segment.
            if changed && (piece.contains('>') || stream.awaits_next) {
                self.resolve_early(id, &mut stream);
            }
            if changed {
                self.preview(id, &mut stream);
            }
            if let Some(run) = self.calls.get_mut(id) {
                run.put_stream(stream);
            }
            if truncated {
                // Far longer than the batch could need: cut and read as it stands. Its
                // items settle now, so this value's previews are moot.
                self.out.clear_previews();
                self.out.cancel(id);
                self.end_stream(id);
            }
        }
        self.after_input();
    }

    /// A `{ usage, limits }` value of call `id`'s stream.
    pub fn handle_stream_report(&mut self, now: Instant, id: CallId, report: Report) {
        self.advance(now);
        if let Some(mut stream) = self.stream_value(id) {
            if report.usage.is_some() {
                stream.report.usage = report.usage;
            }
            if !report.limits.is_empty() {
                stream.report.limits = report.limits;
            }
            stream.report.truncated |= report.truncated;
            if let Some(run) = self.calls.get_mut(id) {
                run.put_stream(stream);
            }
        }
        self.after_input();
    }

    /// Call `id`'s stream ended: what is left is read as a whole reply.
    pub fn handle_stream_end(&mut self, now: Instant, id: CallId) {
        self.advance(now);
        if let Some(stream) = self.stream_value(id) {
            if let Some(run) = self.calls.get_mut(id) {
                run.put_stream(stream);
            }
            self.end_stream(id);
        }
        self.after_input();
    }

    /// Asks for previews (`poll_preview`); without this call none are made.
    pub fn want_previews(&mut self) {
        self.out.want_previews();
    }

    /// The next preview of an item's translation.
    pub fn poll_preview(&mut self) -> Option<Preview> {
        self.out.next_preview()
    }

    /// Takes call `id`'s stream state out (made on its first value), counting the value:
    /// the call's timeout starts again.
    fn stream_value(&mut self, id: CallId) -> Option<Box<Streamed>> {
        let now = self.now;
        let run = self.calls.get_mut(id)?;
        run.restart_deadline(now);
        if let Some(stream) = run.take_stream() {
            return Some(stream);
        }
        let batch = self.batches.get(run.batch())?;
        let compat = Rc::clone(self.groups.get(batch.compat())?.info());
        let provider = batch.provider();
        self.out.count(Counter::StreamedCalls, 1);
        let jobs = batch.jobs().to_vec();
        let mut texts = Vec::with_capacity(jobs.len());
        for job in jobs.iter().filter_map(|j| self.jobs.get(*j)) {
            texts.push(Box::<str>::from(job.text()));
        }
        Some(Box::new(Streamed {
            text: ReplyText::capped(reply_cap(&texts)),
            resolved: vec![false; jobs.len()],
            awaits_next: false,
            previewed: vec![0; jobs.len()],
            texts,
            jobs,
            report: Report::default(),
            provider,
            compat,
        }))
    }

    /// The tag of a running batch in the markers layout; `None` otherwise.
    fn marker_tag(&self, id: CallId) -> Option<String> {
        match self.calls.get(id)?.reading() {
            Reading::Markers(tag) if !tag.is_empty() => Some(tag.clone()),
            _ => None,
        }
    }

    /// Resolves the items whose segments the reply so far proves (see `early`).
    fn resolve_early(&mut self, id: CallId, stream: &mut Streamed) {
        let Some(tag) = self.marker_tag(id) else {
            return;
        };
        let Some(batch_key) = self.calls.get(id).map(Running::batch) else {
            return;
        };
        let (source, target) = (&stream.compat.source_lang, &stream.compat.target_lang);
        let ratio = self.pacer.length_ratio(stream.provider, source, target);
        let proven: Vec<(usize, String)> = {
            let run = early::leading_pairs(stream.text.as_str(), &tag);
            let count = early::proven_count(&stream.texts, &run, ratio).min(run.closed.len());
            // Values without a marker matter only while a closed segment waits for the
            // text after it.
            stream.awaits_next = !run.broken && run.open.is_some() && count < run.closed.len();
            (0..count)
                .filter(|&i| !stream.resolved[i])
                .map(|i| (i, run.closed[i].to_owned()))
                .collect()
        };
        for (i, translation) in proven {
            self.learn_length(
                stream.provider,
                &stream.compat,
                &stream.texts[i],
                &translation,
            );
            stream.resolved[i] = true;
            let job_key = stream.jobs[i];
            let (Some(job), Some(member)) = (self.jobs.get(job_key), self.jobs.member(job_key))
            else {
                continue;
            };
            self.out
                .count(Counter::EarlyResolved, job.waiters().len() as u64);
            let Some(group) = self.batches.get(batch_key).map(Batch::compat) else {
                continue;
            };
            self.batches.leave(&member);
            self.resolve_job(job_key, group, translation);
        }
    }

    /// Previews of the segment being written (and of one that closed with this value),
    /// while everything before it in the reply is in order.
    fn preview(&mut self, id: CallId, stream: &mut Streamed) {
        if !self.out.wants_previews() {
            return;
        }
        let mut shown: Vec<(usize, String)> = Vec::new();
        match self.marker_tag(id) {
            Some(tag) => {
                let run = early::leading_pairs(stream.text.as_str(), &tag);
                if run.broken || run.closed.iter().any(|s| s.is_empty()) {
                    return;
                }
                let closed = run.closed.len();
                if let Some(last) = closed.checked_sub(1) {
                    shown.push((last, run.closed[last].to_owned()));
                }
                if let Some(open) = run.open.filter(|_| closed < stream.texts.len()) {
                    shown.push((closed, without_marker_start(open).trim().to_owned()));
                }
            }
            None if stream.texts.len() == 1 => {
                shown.push((0, stream.text.as_str().trim().to_owned()));
            }
            None => return,
        }
        for (i, text) in shown {
            if text.is_empty() || stream.resolved[i] || text.len() == stream.previewed[i] {
                continue;
            }
            stream.previewed[i] = text.len();
            let Some(job) = self.jobs.get(stream.jobs[i]) else {
                continue;
            };
            for ticket in job.waiters().iter() {
                self.out.preview(Preview {
                    ticket,
                    text: text.clone(),
                });
            }
        }
    }

    /// The stream of call `id` ended (or was cut at its cap): proven segments resolve,
    /// missing ones go out again.
    fn end_stream(&mut self, id: CallId) {
        let Some(mut run) = self.calls.remove(id) else {
            return;
        };
        let Some(mut stream) = run.take_stream() else {
            return;
        };
        stream.text.finish();
        self.take_report(&run, &stream.report, None);
        let truncated = stream.text.is_truncated() || stream.report.truncated;
        let reasoned = stream.text.hid_reasoning();
        let mut text = stream.text.into_string();
        if stream.texts.len() <= 1 && reasoned {
            // As for a whole reply: what follows `</think>` is the answer, trimmed.
            if text.trim().is_empty() {
                return self.on_failure(run, left_empty());
            }
            text = text.trim().to_owned();
        }
        let Reading::Markers(tag) = run.reading() else {
            return self.on_reply(run, Reply::Text(text), truncated);
        };
        if tag.is_empty() || stream.texts.len() <= 1 {
            return self.on_reply(run, Reply::Text(text), truncated);
        }
        let fingerprint = Some(Reply::text_fingerprint(&text));
        let entries = proof::by_index(proof::marked_entries(&text, tag));
        let mut proven = proof::prove(&stream.texts, entries);
        let Some(batch) = self.batches.get(run.batch()) else {
            return;
        };
        // The items still open, in call order, with what the whole reply proves of them.
        let mut translations = Vec::with_capacity(batch.jobs().len());
        for job in batch.jobs() {
            let at = stream.jobs.iter().position(|j| j == job);
            translations.push(at.and_then(|i| proven.get_mut(i)?.take()));
        }
        for (i, translation) in proven.iter().enumerate() {
            if let Some(translation) = translation {
                self.learn_length(
                    stream.provider,
                    &stream.compat,
                    &stream.texts[i],
                    translation,
                );
            }
        }
        let early = stream.resolved.iter().filter(|r| **r).count();
        let proved = if translations.iter().all(Option::is_some) {
            Proved::All
        } else if early > 0 || translations.iter().any(Option::is_some) {
            Proved::Some
        } else {
            Proved::Nothing
        };
        self.learn_batch_size(&run, proved);
        let unproven = Unproven {
            fingerprint,
            truncated,
        };
        if translations.is_empty() {
            self.batches.remove(run.batch());
            self.grow_adaptive_rate(&run);
        } else if proved == Proved::All {
            self.succeed(run, translations.into_iter().flatten().collect());
        } else if translations.iter().any(Option::is_some) {
            self.accept_proven(run, translations, unproven);
        } else {
            if early > 0 {
                self.grow_adaptive_rate(&run);
            }
            self.on_mismatch(run, stream.texts.len(), early, unproven);
        }
    }

    /// A segment of a stream to `provider` (items of `compat`) proved `translation` of
    /// `source`: its length teaches the provider's ratio for the language pair.
    fn learn_length(&self, provider: u32, compat: &CompatInfo, source: &str, translation: &str) {
        let langs = (compat.source_lang.as_str(), compat.target_lang.as_str());
        let (source, translated) = (char_len(source), char_len(translation));
        self.pacer.learn_length(provider, langs, source, translated);
    }

    /// A streamed call broke after its reply had resolved every item: nothing is left
    /// to retry.
    pub(super) fn resolved_before_failure(&mut self, run: &Running) -> bool {
        let empty = run.stream().is_some()
            && self
                .batches
                .get(run.batch())
                .is_some_and(|b| b.jobs().is_empty());
        if empty {
            self.batches.remove(run.batch());
        }
        empty
    }
}

/// `text` without a trailing `<…` that could still become a marker.
fn without_marker_start(text: &str) -> &str {
    match text.rfind('<') {
        Some(at) if !text[at..].contains('>') => &text[..at],
        _ => text,
    }
}
