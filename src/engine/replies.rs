//! Replies: a call's reply read back onto its items (the call itself is composed in
//! `sending`): proven translations resolve at once, the rest go out again as a count
//! mismatch (partial acceptance).

use super::calls::{Reading, Running};
use super::outbox::Counter;
use super::tries::Try;
use super::Engine;
use crate::alignment;
use crate::batch_limit::Proved;
use crate::call::{Failure, Reply};
use crate::codec::{self, Mismatch};
use crate::item::is_blank;
use crate::proof;
use crate::retry::backoff;
use crate::settle::{ErrorCode, PacerFailure};
use crate::stats::{Event, RetryReason};
use crate::stream::ReplyText;

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

/// Whether a single text's reply holds no translation: its one string (or the one entry
/// of an array or object) is empty or only white space. The text it answers is not (a
/// blank text resolves to itself without a call), so a blank answer is no translation.
fn is_blank_answer(reply: &Reply) -> bool {
    match reply {
        Reply::Text(text) => is_blank(text),
        Reply::Texts(texts) => matches!(texts.as_slice(), [text] if is_blank(text)),
        Reply::Keyed(pairs) => matches!(pairs.as_slice(), [(_, text)] if is_blank(text)),
        Reply::Mixed(_) => false,
    }
}

/// A single reply that is blank: a failed call, retried like a network error.
pub(super) fn blank_answer<C>() -> Failure<C> {
    let mut failure = Failure::bad_reply("a blank answer");
    failure.message = String::from(
        "provider returned a blank answer (empty or only white space) for a text that is not blank: no translation",
    );
    failure
}

pub(super) fn left_empty<C>() -> Failure<C> {
    let mut failure =
        Failure::bad_reply("a reply left empty once its <think> reasoning is removed");
    failure.message =
        String::from("provider returned nothing but <think> reasoning: no translation");
    failure
}

/// The translation of each text that the reply proves (`None` for the missing ones), or
/// why the whole reply cannot be mapped onto the texts.
pub(super) fn read_reply(
    reading: &Reading,
    texts: &[&str],
    reply: Reply,
    ratio: Option<f64>,
) -> Result<Vec<Option<String>>, Mismatch> {
    let expected = texts.len();
    if let Reading::Array = reading {
        return read_array(texts, reply);
    }
    let all = |segments: Vec<String>| segments.into_iter().map(Some).collect();
    let reply = match reply {
        Reply::Text(text) if expected > 1 => {
            crate::structured::keyed(text, expected).map_or_else(Reply::Text, Reply::Keyed)
        }
        other => other,
    };
    match (reading, reply) {
        (_, Reply::Text(text)) if expected == 1 => Ok(vec![Some(text)]),
        (Reading::Markers(tag), Reply::Keyed(pairs)) => {
            let pairs = crate::copied_markers::unwrap_keyed(pairs, tag, expected);
            Ok(proof::prove(texts, proof::keyed_entries(pairs)))
        }
        (_, Reply::Keyed(pairs)) => Ok(proof::prove(texts, proof::keyed_entries(pairs))),
        (Reading::Markers(tag), Reply::Text(text)) => {
            Ok(crate::early::whole_reading(texts, &text, tag, ratio))
        }
        (Reading::Markers(tag), Reply::Texts(segments)) if segments.len() == expected => {
            let segments = crate::copied_markers::unwrap_listed(segments, tag);
            Ok(proof::prove(texts, proof::listed_entries(segments)))
        }
        (Reading::Markers(_), Reply::Texts(segments)) => Err(Mismatch::Count {
            expected,
            got: segments.len(),
        }),
        // Turned into a failed call before it is read (`Engine::on_reply`).
        (_, Reply::Mixed(got)) => Err(Mismatch::Count { expected, got }),
        (Reading::Array, other) => read_array(texts, other),
        (Reading::Separator { .. }, Reply::Texts(segments)) => {
            check_aligned(texts, codec::check_segments(segments, expected)?).map(all)
        }
        (
            Reading::Separator {
                separator,
                strip_fence,
            },
            Reply::Text(text),
        ) => check_aligned(
            texts,
            codec::split(&text, separator, expected, *strip_fence)?,
        )
        .map(all),
    }
}

/// An array batch's reply: one string per text, in order; a position is an identity. An
/// array of another length, one holding a non-string, or any other reply proves nothing
/// (a count mismatch for the whole batch); an empty string (or only white space) for a
/// text that is not blank leaves that item missing.
fn read_array(texts: &[&str], reply: Reply) -> Result<Vec<Option<String>>, Mismatch> {
    let expected = texts.len();
    let got = match reply {
        Reply::Texts(list) if list.len() == expected => {
            let read = list.into_iter().zip(texts);
            return Ok(read
                .map(|(t, source)| (!is_blank(&t) || is_blank(source)).then_some(t))
                .collect());
        }
        Reply::Texts(list) => list.len(),
        Reply::Mixed(len) => len,
        Reply::Keyed(pairs) => pairs.len(),
        Reply::Text(_) => 1,
    };
    Err(Mismatch::Count { expected, got })
}

/// The separator layout's evidence of a shift (see the `alignment` module).
pub(super) fn check_aligned(
    texts: &[&str],
    segments: Vec<String>,
) -> Result<Vec<String>, Mismatch> {
    if texts.len() > 1 {
        let views: Vec<&str> = segments.iter().map(String::as_str).collect();
        alignment::check(texts, &views)?;
    }
    Ok(segments)
}

impl<C: Clone> Engine<C> {
    /// A whole reply to the call of `run`; `truncated`: it stopped at its token limit (or
    /// at the length cap).
    pub(super) fn on_reply(&mut self, run: Running, reply: Reply, truncated: bool) {
        if let Some(id) = run.serves_run() {
            return self.run_succeeded(run, id);
        }
        if matches!(reply, Reply::Mixed(_)) && !matches!(run.reading(), Reading::Array) {
            return self.on_failure(run, Failure::bad_reply("an array holding a non-string"));
        }
        let mut reply = match reply {
            Reply::Text(text) => match visible_reply(text, run.batch_len(&self.batches)) {
                Some(text) => Reply::Text(text),
                None => return self.on_failure(run, left_empty()),
            },
            other => other,
        };
        let truncated = reply.cut_to(run.reply_cap()) || truncated;
        let Some(batch) = self.batches.get(run.batch()) else {
            return;
        };
        let expected = batch.jobs().len();
        let mut texts: Vec<&str> = Vec::with_capacity(expected);
        for job in batch.jobs().iter().filter_map(|j| self.jobs.get(*j)) {
            texts.push(job.text());
        }
        let looped = truncated && looped(&reply, &texts);
        if expected <= 1 && truncated {
            // A single text cut short is no translation: its retry gets twice the bound,
            // unless it was looping (`runaway`).
            if !looped {
                self.batches.double_bound(run.batch());
            }
            return self.on_failure(run, unfinished());
        }
        if expected <= 1 && is_blank_answer(&reply) {
            return self.on_failure(run, blank_answer());
        }
        let unproven = Unproven {
            fingerprint: (expected > 1).then(|| reply.fingerprint()),
            truncated,
            looped,
        };
        let ratio = self.groups.get(batch.compat()).and_then(|group| {
            let info = group.info();
            self.pacer
                .length_ratio(run.provider(), &info.source_lang, &info.target_lang)
        });
        let read = read_reply(run.reading(), &texts, reply, ratio);
        let proved = match &read {
            Ok(t) if t.iter().all(Option::is_some) => Proved::All,
            Ok(t) if t.iter().any(Option::is_some) => Proved::Some,
            _ => Proved::Nothing,
        };
        if expected > 1 {
            self.learn_batch_size(&run, proved);
        }
        match read {
            Ok(translations) if proved == Proved::All => self.succeed(run, translations),
            Ok(translations) if proved == Proved::Some => {
                self.accept_proven(run, translations, unproven)
            }
            Ok(_) => self.on_mismatch(run, expected, 0, unproven),
            Err(mismatch) => {
                let got = match mismatch {
                    Mismatch::Count { got, .. } => got,
                    Mismatch::EmptySegment { .. } | Mismatch::Misaligned { .. } => expected,
                };
                self.on_mismatch(run, expected, got, unproven)
            }
        }
    }

    /// A batch reply to `run` proved `proved` of its segments: the provider's learned
    /// batch size follows (`adaptiveBatching`), reported when it changes.
    pub(super) fn learn_batch_size(&mut self, run: &Running, proved: Proved) {
        let max = self.batches.limits_for(run.provider()).max_items;
        let max = u32::try_from(max).unwrap_or(u32::MAX);
        let changed = self
            .pacer
            .note_batch_reply(run.provider(), proved, max, &self.options);
        if let Some(limit) = changed {
            self.out.event(Event::BatchLimit {
                provider_id: self.pacer.provider_id(run.provider()),
                limit,
            });
        }
    }

    /// Every item of `run`'s batch proved (`translations` holds no `None`): each resolves.
    pub(super) fn succeed(&mut self, run: Running, translations: Vec<Option<String>>) {
        self.grow_adaptive_rate(&run);
        let Some(batch) = self.batches.remove(run.batch()) else {
            return;
        };
        let group = batch.compat();
        // Each job is paired with its own slot, never with the next value: a `None` here
        // (a caller's broken promise) would shift every later translation onto the wrong
        // paragraph if the values were flattened first. Its job is left in no batch
        // instead, which `Engine::check` reports.
        for (job_key, translation) in batch.into_jobs().into_iter().zip(translations) {
            if let Some(translation) = translation {
                self.resolve_job(job_key, group, translation);
            }
        }
    }

    /// Partial acceptance: the proven segments resolve their items now; the batch goes
    /// out again with the missing ones only, as a count mismatch.
    pub(super) fn accept_proven(
        &mut self,
        run: Running,
        translations: Vec<Option<String>>,
        unproven: Unproven,
    ) {
        self.grow_adaptive_rate(&run);
        let Some(batch) = self.batches.get(run.batch()) else {
            return;
        };
        let expected = batch.jobs().len();
        let mut proven = Vec::new();
        for (job_key, translation) in batch.jobs().iter().zip(translations) {
            if let Some(t) = translation {
                proven.push((*job_key, t));
            }
        }
        let got = proven.len();
        let group = batch.compat();
        for (job_key, translation) in proven {
            if let Some(member) = self.jobs.member(job_key) {
                self.batches.leave(&member);
            }
            self.resolve_job(job_key, group, translation);
        }
        self.on_mismatch(run, expected, got, unproven);
    }

    /// The reply did not prove every item of the batch (`got` of `expected`, the proven
    /// ones already resolved): the rest are retried, then sent one by one. A reply that
    /// repeats the last one to the same texts ends the retries at once (a model at
    /// temperature 0 answers the same prompt the same way); a truncated one sends the
    /// rest with twice the bound, unless it was looping.
    pub(super) fn on_mismatch(
        &mut self,
        run: Running,
        expected: usize,
        got: usize,
        unproven: Unproven,
    ) {
        self.out.count(Counter::CountMismatches, 1);
        let provider_id = self.pacer.provider_id(run.provider());
        let Some(missing) = self.batches.get(run.batch()).map(|b| b.jobs().len()) else {
            return;
        };
        self.out.event(Event::CountMismatch {
            provider_id: provider_id.clone(),
            expected,
            got,
        });
        if unproven.truncated && !unproven.looped {
            self.batches.double_bound(run.batch());
        }
        let repeated = !unproven.truncated
            && unproven
                .fingerprint
                .is_some_and(|f| self.batches.repeats_last_reply(run.batch(), f));
        let Some(tries) = self.batches.count_try(run.batch(), Try::Mismatch) else {
            return;
        };
        if !repeated && u64::from(tries) <= self.options.max_batch_retries {
            let delay = backoff(self.base_delay(), u32::from(tries) - 1, &mut self.jitter);
            self.retry_after(run.batch(), delay, RetryReason::CountMismatch);
        } else if (missing > 1 || repeated) && self.options.fallback_to_individual {
            self.fall_back(run.batch());
        } else {
            let why = if repeated {
                format!("on {tries} tries, the last one answered the same as the one before")
            } else {
                format!("on {tries} tries")
            };
            let message = format!(
                "the provider's reply did not prove the translation of {missing} of {expected} texts, {why}"
            );
            self.fail(
                run.batch(),
                PacerFailure::new(ErrorCode::CountMismatch, message),
            );
        }
    }
}

/// What a reply that did not prove every item says about retrying it.
#[derive(Copy, Clone, Debug, Default)]
pub(super) struct Unproven {
    /// Its fingerprint, for a batch (to tell a reply that repeats the last one).
    pub(super) fingerprint: Option<u64>,
    /// It stopped at its token limit or the length cap.
    pub(super) truncated: bool,
    /// It stopped there while repeating itself (`runaway`): its retry keeps the bound.
    pub(super) looped: bool,
}

/// Whether a reply cut at its bound was looping rather than still writing new text
/// (`runaway::looping`), against the characters of the texts it answers.
pub(super) fn looped(reply: &Reply, texts: &[&str]) -> bool {
    let Reply::Text(text) = reply else {
        return false;
    };
    let sources = texts.iter().map(|t| t.chars().count()).sum();
    crate::runaway::looping(text, sources)
}

/// A single reply that stopped at its bound: a failed call, retried with twice the bound.
pub(super) fn unfinished<C>() -> Failure<C> {
    Failure::error(
        None,
        None,
        "the answer did not end within its bound (request.maxOutputTokens): the model may be repeating itself",
    )
}
