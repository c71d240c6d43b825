//! Sending: a due batch, dealt and charged, becomes a provider call: its texts laid out
//! (markers or separator, or an array), its output bound, timeout and cost, recorded as
//! running and handed to the driver.

use std::rc::Rc;

use super::batches::Batch;
use super::calls::{CallStrings, Reading, Running};
use super::outbox::Counter;
use super::pacer::Charge;
use super::Engine;
use crate::call::{Call, Layout};
use crate::call_timeout::CallTimeout;
use crate::codec;
use crate::markers;
use crate::options::SegmentFormat;
use crate::output_bound::output_bound;
use crate::quota;
use crate::slab::Id;
use crate::stream::reply_cap;
use crate::text::utf16_len;

/// A call's text, its layout and instructions for the provider, and how its reply will
/// be read; `array`: its texts are `llm: false` items, which share a call only as an
/// array.
pub(super) fn lay_out(
    format: SegmentFormat,
    array: bool,
    texts: &[String],
    strings: &mut CallStrings,
) -> (String, Layout, Rc<str>, Reading) {
    let count = texts.len();
    let single = count <= 1;
    if array && !single {
        return (
            texts.join("\n"),
            Layout::Array,
            strings.none(),
            Reading::Array,
        );
    }
    match format {
        SegmentFormat::Markers => {
            if single {
                // A single text's reply is taken as it is: no tag to choose.
                let text = texts.first().cloned().unwrap_or_default();
                let reading = Reading::Markers(String::new());
                return (text, Layout::Single, strings.none(), reading);
            }
            let tag = markers::choose_tag(texts);
            let pairs = strings.pairs(&tag, count);
            let text = markers::lay_out(texts, &pairs);
            let instructions =
                strings.instructions(&tag, count, || markers::instructions(&tag, count));
            (
                text,
                Layout::Markers(pairs),
                instructions,
                Reading::Markers(tag),
            )
        }
        SegmentFormat::Separator => {
            let separator = codec::choose_separator(texts);
            let (text, instructions) = if single {
                (texts.first().cloned().unwrap_or_default(), strings.none())
            } else {
                let instructions = strings
                    .instructions(&separator, count, || codec::instructions(&separator, count));
                (codec::join(texts, &separator), instructions)
            };
            let reading = Reading::Separator {
                separator: separator.clone(),
                strip_fence: codec::fence_is_added(texts),
            };
            (text, Layout::Separator(separator), instructions, reading)
        }
    }
}

impl<C: Clone> Engine<C> {
    /// Composes and starts the call of `batch_key` to `provider` (its own, or its pool's member),
    /// charged `charge`.
    pub(super) fn send(&mut self, batch_key: Id<Batch>, provider: u32, charge: Charge) {
        let Some(batch) = self.batches.get(batch_key) else {
            return;
        };
        let (group_key, own, attempt) = (batch.compat(), batch.provider(), batch.attempts());
        let mut texts: Vec<String> = Vec::with_capacity(batch.jobs().len());
        // The output bound needs the texts' tokens: the jobs' estimates when they were
        // made (a token budget, the user's estimateTokens), else the built-in one.
        let mut text_tokens = 0.0;
        let want_items = self.out.wants_call_items();
        let mut items = Vec::new();
        for job in batch.jobs().iter().filter_map(|j| self.jobs.get(*j)) {
            if want_items {
                // Identical items share the job: its first waiter speaks for them.
                items.push(job.waiters().iter().next().unwrap_or(0));
            }
            text_tokens += match job.tokens() {
                t if t > 0.0 => f64::from(t),
                _ => quota::input_tokens(job.text()),
            };
            texts.push(job.text().to_string());
        }
        let bound_scale = batch.bound_scale();
        let Some(group) = self.groups.get(group_key) else {
            return;
        };
        let compat = Rc::clone(group.info());
        let compat = self.call_compat(&compat, own, provider);
        let is_batch = texts.len() > 1;
        let format = self.options.segment_format;
        let (text, layout, instructions, reading) =
            lay_out(format, !compat.llm, &texts, self.calls.strings());
        let ids = self.calls.strings().ids(texts.len());
        self.out.count(Counter::ProviderCalls, 1);
        let counts = (self.out).provider_stats(provider, self.pacer.provider_id(provider));
        (counts.calls, counts.items) = (counts.calls + 1, counts.items + texts.len() as u64);
        self.out.count(Counter::BatchCalls, u64::from(is_batch));
        self.out.count(Counter::Retries, u64::from(attempt > 0));
        self.pacer.note_call(provider, texts.len());
        let ratio = self.pacer.input_ratio(provider);
        let max_output_tokens = output_bound(text_tokens, texts.len(), ratio, bound_scale);
        let cap = reply_cap(&texts);
        let context = quota::input_tokens(&compat.context);
        let estimated_input = quota::prompt_input(text_tokens, context, is_batch);
        let characters = texts.iter().map(|t| utf16_len(t)).sum();
        let timeout =
            CallTimeout::new(&self.options, self.pacer.own_settings(provider), characters);
        let run = Running::new(batch_key, provider, charge, reading, timeout, self.now)
            .with_bounds(estimated_input, cap);
        let id = self.calls.insert_new(run);
        self.batches.start(batch_key, id);
        self.out.call(Call {
            id,
            ids,
            texts,
            items,
            text,
            layout,
            instructions,
            is_batch,
            compat,
            attempt,
            timeout: timeout.first(),
            max_output_tokens,
            reply_cap: u32::try_from(cap).unwrap_or(u32::MAX),
            run: None,
        });
    }
}
