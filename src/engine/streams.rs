//! Streamed replies: the reply arrives in pieces (`handle_chunk`), reports of usage and
//! limits may come between them (`handle_stream_report`), and it ends
//! (`handle_stream_end`) or breaks (`handle_response` with a failure, or a timeout
//! between two values). In the markers layout, items whose segments the reply so far
//! proves (`early`) resolve at once; the rest is read as a whole reply at the end.

use std::rc::Rc;

use super::batches::Batch;
use super::calls::{Reading, Running};
use super::outbox::Counter;
use super::replies::{left_empty, Unproven};
use super::streamed::{Ended, Preview, Streamed};
use super::Engine;
use crate::batch_limit::Proved;
use crate::call::{CallId, CompatInfo, Reply, Report};
use crate::proof::char_len;

impl<C: Clone> Engine<C> {
    /// A piece of call `id`'s streamed reply. Unknown ids are ignored.
    pub(super) fn on_chunk(&mut self, id: CallId, piece: &str) {
        let Some(mut stream) = self.stream_value(id) else {
            return;
        };
        let changed = stream.push(piece);
        let truncated = stream.is_truncated();
        // A closing marker, or the first characters of the segment after it, can
        // prove a segment.
        if changed && (piece.contains('>') || stream.awaits_next()) {
            self.resolve_early(id, &mut stream);
        }
        if changed {
            self.preview(id, &mut stream);
        }
        self.put_back_or_cut(id, stream, truncated);
    }

    /// Puts call `id`'s stream back in its record; one that passed its cap (`truncated`)
    /// ends there.
    fn put_back_or_cut(&mut self, id: CallId, stream: Box<Streamed>, truncated: bool) {
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

    /// A `{ usage, limits }` value of call `id`'s stream.
    pub(super) fn on_stream_report(&mut self, id: CallId, report: Report) {
        if let Some(mut stream) = self.stream_value(id) {
            stream.add_report(report);
            let truncated = stream.is_truncated();
            self.put_back_or_cut(id, stream, truncated);
        }
    }

    /// Call `id`'s stream ended: what is left is read as a whole reply.
    pub(super) fn on_stream_end(&mut self, id: CallId) {
        if let Some(stream) = self.stream_value(id) {
            if let Some(run) = self.calls.get_mut(id) {
                run.put_stream(stream);
            }
            self.end_stream(id);
        }
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
        // The provider the call went to (a pool's member, not the pool).
        let provider = run.provider();
        self.out.count(Counter::StreamedCalls, 1);
        let jobs = batch.jobs().to_vec();
        let mut texts = Vec::with_capacity(jobs.len());
        for job in jobs.iter().filter_map(|j| self.jobs.get(*j)) {
            texts.push(Box::<str>::from(job.text()));
        }
        Some(Box::new(Streamed::new(texts, jobs, provider, compat)))
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
        let compat = stream.compat();
        let ratio =
            self.pacer
                .length_ratio(stream.provider(), &compat.source_lang, &compat.target_lang);
        for (i, translation) in stream.newly_proven(&tag, ratio) {
            let source = &stream.texts()[i];
            self.learn_length(stream.provider(), stream.compat(), source, &translation);
            let Some(job_key) = stream.job(i) else {
                continue;
            };
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
        let tag = self.marker_tag(id);
        for (i, text) in stream.new_previews(tag.as_deref()) {
            let Some(job) = stream.job(i).and_then(|j| self.jobs.get(j)) else {
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
        let Some(stream) = run.take_stream() else {
            return;
        };
        let Ended {
            mut text,
            truncated,
            reasoned,
            report,
            texts,
            jobs,
            early,
            provider,
            compat,
        } = stream.end();
        self.take_report(&run, &report, None);
        if texts.len() <= 1 && reasoned && !truncated {
            // As for a whole reply: what follows `</think>` is the answer, trimmed.
            if text.trim().is_empty() {
                return self.on_failure(run, left_empty());
            }
            text = text.trim().to_owned();
        }
        let Reading::Markers(tag) = run.reading() else {
            return self.on_reply(run, Reply::Text(text), truncated);
        };
        if tag.is_empty() || texts.len() <= 1 {
            return self.on_reply(run, Reply::Text(text), truncated);
        }
        let fingerprint = Some(Reply::text_fingerprint(&text));
        let views: Vec<&str> = texts.iter().map(|text| &**text).collect();
        let ratio = self
            .pacer
            .length_ratio(provider, &compat.source_lang, &compat.target_lang);
        let mut proven = crate::early::whole_reading(&views, &text, tag, ratio);
        let Some(batch) = self.batches.get(run.batch()) else {
            return;
        };
        // The items still open, in call order, with what the whole reply proves of them.
        let mut translations = Vec::with_capacity(batch.jobs().len());
        for job in batch.jobs() {
            let at = jobs.iter().position(|j| j == job);
            translations.push(at.and_then(|i| proven.get_mut(i)?.take()));
        }
        for (i, translation) in proven.iter().enumerate() {
            if let Some(translation) = translation {
                self.learn_length(provider, &compat, &texts[i], translation);
            }
        }
        let proved = if translations.iter().all(Option::is_some) {
            Proved::All
        } else if early > 0 || translations.iter().any(Option::is_some) {
            Proved::Some
        } else {
            Proved::Nothing
        };
        self.learn_batch_size(&run, proved);
        let looped = truncated && super::replies::looped(&Reply::Text(text), &views);
        let unproven = Unproven {
            fingerprint,
            truncated,
            looped,
        };
        if translations.is_empty() {
            self.batches.remove(run.batch());
            self.grow_adaptive_rate(&run);
        } else if proved == Proved::All {
            self.succeed(run, translations);
        } else if translations.iter().any(Option::is_some) {
            self.accept_proven(run, translations, unproven);
        } else {
            if early > 0 {
                self.grow_adaptive_rate(&run);
            }
            self.on_mismatch(run, texts.len(), early, unproven);
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
