//! Provider calls through their JS side (`call-host.js`): it builds each request, calls
//! the provider and hands the answer back through one callback made here.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Array, Function};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::{Call, CallId, CompatInfo, Layout};

#[wasm_bindgen(module = "/src/wasm/call-host.js")]
extern "C" {
    /// `{ start(...), cancel(id) }` for one pacer.
    pub type CallHost;

    #[wasm_bindgen(js_name = makeCallHost)]
    fn make_call_host(provider: &Function, input: &JsValue, answer: &Function) -> CallHost;

    /// Registers `{ limits(headers), retryAfterMs(headers), bodyRetryAfterMs(body),
    /// bodyQuota(status, body) }`, the JS layer's readers that failures are read with
    /// (see `failure` there).
    #[wasm_bindgen(js_name = useReaders)]
    pub fn use_readers(readers: &JsValue);

    /// Starts a provider call. The text the model is sent is `bytes` long at `address`
    /// (read at once, as `input.js`'s `text` reads it, `maybe_last` from
    /// `input::locate`). For a batch, `spans_address` holds `span_count` u32 numbers, the
    /// `[start, end)` UTF-16 offsets of each text in the text, flattened (read at once by
    /// `input.js`'s `numbers`), and `ids` the ids, at least as many as there are texts
    /// (the JS side copies the first ones); a single text has no spans (`[text]`),
    /// `ids` undefined (`["1"]`) and `instructions` undefined (`""`).
    /// `layout` is the separator string, or the `[open, close]` pairs of the markers (at
    /// least as many as there are texts; the JS side copies them), or `undefined` for a
    /// single text in the markers format; `compat` is `[providerId, sourceLang,
    /// targetLang, context]`, then `fallbackFrom` for items moved to a fallback provider;
    /// `max_output_tokens` is `request.maxOutputTokens`, and a
    /// string reply longer than `reply_cap` UTF-16 code units is cut there (and handed
    /// back as `REPLY_TEXT_CUT`); `metas` is `request.metas` (undefined: no item has a
    /// `meta`). It never throws: whatever goes wrong comes back as the call's failure.
    #[wasm_bindgen(method, structural)]
    #[allow(clippy::too_many_arguments)]
    fn start(
        this: &CallHost,
        id: f64,
        address: u32,
        bytes: u32,
        maybe_last: bool,
        spans_address: u32,
        span_count: u32,
        ids: &JsValue,
        layout: &JsValue,
        instructions: &JsValue,
        is_batch: bool,
        compat: &JsValue,
        attempt: u32,
        max_output_tokens: u32,
        reply_cap: u32,
        metas: &JsValue,
    );

    /// Starts a try of a `pacer.run`: calls `function({ signal, attempt })` under call
    /// `id`; its value comes back as `RUN_DONE`, a throw or rejection as `FAIL`.
    #[wasm_bindgen(method, structural, js_name = startRun)]
    fn start_run(this: &CallHost, id: f64, function: &Function, attempt: u32);

    #[wasm_bindgen(method, structural)]
    fn cancel(this: &CallHost, id: f64);
}

/// What the JS side hands back: `(kind, call id, what it got, bytes)`, where the kind
/// (one of the constants below, as in call-host.js) says what it got; for text written
/// to the input buffer, `bytes` is its length (what it got is then `undefined`).
pub type Answer = Closure<dyn Fn(u32, f64, JsValue, u32)>;

/// A string reply, written to the input buffer (`bytes` long).
pub const REPLY_TEXT: u32 = 0;
/// Any other fulfilled value.
pub const REPLY: u32 = 1;
/// A rejection reason, or what the provider threw (a stream's iterator too).
pub const FAIL: u32 = 2;
/// A string value of a streamed reply, written to the input buffer (`bytes` long).
pub const CHUNK: u32 = 3;
/// A `{ usage, limits }` value of a streamed reply.
pub const REPORT: u32 = 4;
/// The streamed reply ended.
pub const END: u32 = 5;
/// A value of a streamed reply that is neither a string nor `{ usage, limits }`.
pub const BAD_VALUE: u32 = 6;
/// A string reply longer than the call's cap, cut there and written to the input buffer
/// (`bytes` long).
pub const REPLY_TEXT_CUT: u32 = 7;
/// The value of a `pacer.run`'s try, as its function resolved it.
pub const RUN_DONE: u32 = 8;

/// How many compatibility groups keep their fields as JS strings between calls.
const RECENT_GROUPS: usize = 8;

/// The calls of one pacer. Owns the answer callback, so it lives as long as it does.
pub struct Calls {
    host: CallHost,
    _answer: Answer,
    /// The fields of recent groups and the last separator as JS strings: most calls
    /// repeat them, and each string made anew costs a decode.
    recent: RefCell<Recent>,
}

#[derive(Default)]
struct Recent {
    groups: Vec<(Rc<CompatInfo>, JsValue)>,
    separator: Option<(String, JsValue)>,
    /// Ids "1", "2", ... as a JS array of strings.
    ids: Array,
    /// The markers of the last tag seen (by its first open marker), as JS arrays.
    markers: Option<(String, Array)>,
    /// The last instructions.
    instructions: Option<(String, JsValue)>,
}

impl Recent {
    fn compat(&mut self, compat: &Rc<CompatInfo>) -> JsValue {
        if let Some(i) = self.groups.iter().position(|(c, _)| Rc::ptr_eq(c, compat)) {
            return self.groups[i].1.clone();
        }
        // `[providerId, sourceLang, targetLang, context, fallbackFrom?]`, read by index in
        // call-host.js. The scope stays out: it only keeps items apart here, and a tab id
        // or an origin is nothing a provider needs to learn.
        let fields = Array::of4(
            &compat.provider_id.as_str().into(),
            &compat.source_lang.as_str().into(),
            &compat.target_lang.as_str().into(),
            &compat.context.as_str().into(),
        );
        if let Some(from) = &compat.fallback_from {
            fields.push(&from.as_str().into());
        }
        let fields: JsValue = fields.into();
        if self.groups.len() == RECENT_GROUPS {
            self.groups.remove(0);
        }
        self.groups.push((Rc::clone(compat), fields.clone()));
        fields
    }

    /// The ids "1", "2", ..., at least as many as the call has: the JS side copies the
    /// first ones into the request's own array (one crossing per call).
    fn ids(&mut self, call: &Call) -> JsValue {
        for id in call.ids.iter().skip(self.ids.length() as usize) {
            self.ids.push(&id.as_str().into());
        }
        self.ids.clone().into()
    }

    /// The `[open, close]` arrays of the tag of `pairs`, at least as many as `pairs`:
    /// the JS side copies the first ones into the request's own fresh arrays (one
    /// crossing per call instead of three per pair).
    fn markers(&mut self, pairs: &[(String, String)]) -> JsValue {
        let first = pairs.first().map_or("", |(open, _)| open.as_str());
        let cached = match &mut self.markers {
            Some((key, cached)) if key == first => cached,
            slot => &mut slot.insert((first.to_owned(), Array::new())).1,
        };
        for (open, close) in pairs.iter().skip(cached.length() as usize) {
            cached.push(&Array::of2(&open.as_str().into(), &close.as_str().into()));
        }
        cached.clone().into()
    }

    fn instructions(&mut self, instructions: &str) -> JsValue {
        match &self.instructions {
            Some((text, value)) if text == instructions => value.clone(),
            _ => {
                let value = JsValue::from_str(instructions);
                self.instructions = Some((instructions.to_owned(), value.clone()));
                value
            }
        }
    }

    fn separator(&mut self, separator: &str) -> JsValue {
        match &self.separator {
            Some((text, value)) if text == separator => value.clone(),
            _ => {
                let value = JsValue::from_str(separator);
                self.separator = Some((separator.to_owned(), value.clone()));
                value
            }
        }
    }
}

impl Calls {
    /// Calls go to `provider`; answers come back through `answer`.
    pub fn new(provider: &Function, answer: Answer) -> Self {
        let host = make_call_host(
            provider,
            &super::input::input_writer(),
            answer.as_ref().unchecked_ref(),
        );
        Calls {
            host,
            _answer: answer,
            recent: RefCell::default(),
        }
    }

    /// Starts `call`, its request's `metas` as given.
    pub fn start(&self, call: &Call, metas: &JsValue) {
        let batch = call.texts.len() > 1;
        let (layout, compat, ids, instructions) = {
            let mut recent = self.recent.borrow_mut();
            let layout = match &call.layout {
                Layout::Single => JsValue::UNDEFINED,
                Layout::Separator(separator) => recent.separator(separator),
                Layout::Markers(pairs) => recent.markers(pairs),
            };
            let ids = if batch {
                recent.ids(call)
            } else {
                JsValue::UNDEFINED
            };
            // A single text's instructions are `""`, which the JS side fills in.
            let instructions = if call.instructions.is_empty() {
                JsValue::UNDEFINED
            } else {
                recent.instructions(&call.instructions)
            };
            (layout, recent.compat(&call.compat), ids, instructions)
        };
        // Read from wasm memory by the JS side: one crossing, not one per offset.
        let spans = if batch { call.text_spans() } else { Vec::new() };
        // A single text is most often the item's text, the string last written: no decode.
        let (address, bytes, maybe_last) = super::input::locate(&call.text);
        self.host.start(
            call.id as f64,
            address,
            bytes,
            maybe_last,
            spans.as_ptr() as u32,
            spans.len() as u32,
            &ids,
            &layout,
            &instructions,
            call.is_batch,
            &compat,
            call.attempt,
            call.max_output_tokens,
            call.reply_cap,
            metas,
        )
    }

    /// Starts a try of a `pacer.run` under call `id`: `function` instead of the provider.
    pub fn start_run(&self, id: CallId, function: &Function, attempt: u32) {
        self.host.start_run(id as f64, function, attempt);
    }

    /// Aborts the signal of call `id`.
    pub fn cancel(&self, id: CallId) {
        self.host.cancel(id as f64);
    }
}
