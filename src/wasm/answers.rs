//! What the JS side of a provider call hands back (a reply, a failure, or a streamed
//! reply value by value), turned into the engine's inputs.

use std::rc::{Rc, Weak};

use wasm_bindgen::prelude::*;

use super::driver::Inner;
use super::host::{self, Answer};
use super::{input, replies};
use crate::{CallId, Engine, Instant, Report};

/// A callback for the JS side of calls: turns what it hands back into the engine's input.
/// Weak: a provider that never settles (and ignores its abort signal) must not keep a
/// disposed or dropped pacer alive.
pub(super) fn answer(inner: &Weak<Inner>) -> Answer {
    let inner = inner.clone();
    Closure::new(move |kind: u32, id: f64, value: JsValue, bytes: u32| {
        let Some(inner) = inner.upgrade() else { return };
        let id = id as CallId;
        let outcome = match kind {
            host::REPLY_TEXT => input::reply(bytes).map(|reply| (reply, Report::default())),
            host::REPLY_TEXT_CUT => input::reply(bytes).map(|reply| (reply, Report::cut())),
            host::REPLY => replies::reply_from(value, inner.reply_cap(id)),
            host::CHUNK => {
                return match input::take(bytes as usize) {
                    Ok(text) => inner.stream(|engine, now| engine.handle_chunk(now, id, &text)),
                    Err(message) => inner.respond(id, Err(crate::Failure::bad_reply(message))),
                }
            }
            host::REPORT => {
                let report = replies::report_from(&value);
                return inner.stream(|engine, now| engine.handle_stream_report(now, id, report));
            }
            host::END => return inner.stream(|engine, now| engine.handle_stream_end(now, id)),
            host::RUN_DONE => return inner.run_done(id, value),
            host::BAD_VALUE => Err(replies::bad_value(&value)),
            kind => {
                debug_assert_eq!(kind, host::FAIL);
                Err(replies::failure_from(value))
            }
        };
        inner.respond(id, outcome);
    })
}

impl Inner {
    pub(super) fn respond(
        self: &Rc<Self>,
        id: CallId,
        outcome: Result<(crate::Reply, Report), crate::Failure<JsValue>>,
    ) {
        let now = self.now();
        if let Ok(mut state) = self.state.try_borrow_mut() {
            let (outcome, report) = match outcome {
                Ok((reply, report)) => (Ok(reply), report),
                Err(failure) => (Err(failure), Report::default()),
            };
            state
                .engine
                .handle_response_reported(now, id, outcome, report);
        }
        self.flush();
    }

    /// The length cap of call `id`'s reply (bytes).
    fn reply_cap(&self, id: CallId) -> usize {
        self.state
            .try_borrow()
            .ok()
            .and_then(|state| state.engine.reply_cap(id))
            .unwrap_or(usize::MAX)
    }

    /// A value or the end of a streamed reply, handed to the engine.
    pub(super) fn stream(self: &Rc<Self>, handle: impl FnOnce(&mut Engine<JsValue>, Instant)) {
        let now = self.now();
        if let Ok(mut state) = self.state.try_borrow_mut() {
            handle(&mut state.engine, now);
        }
        self.flush();
    }
}
