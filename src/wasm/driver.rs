//! The async driver: feeds the engine with the clock's time, starts provider calls,
//! settles promises, and sleeps until the engine's next wake-up.
//!
//! No `RefCell` borrow is ever held while JS code runs (provider, resolvers, `onEvent`,
//! the user's clock), so a callback that re-enters the pacer cannot cause a panic.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use js_sys::Function;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::budget::PacerBudget;
use super::clock::{Clock, TimerHandle};
use super::convert::{self, describe};
use super::errors::{js_error, js_error_of};
use super::host::Calls;
use super::input;
use super::runs::RunFunctions;
use super::views;
use crate::hash::IdMap;
use crate::slotted_map::SlottedMap;
use crate::{
    disposed_error, Call, CallId, Compat, Engine, ErrorCode, Event, Instant, Item, Lookup, Options,
    Output, PacerFailure, Settled, StoreWrite, Ticket,
};

/// Resolve and reject functions of one `translate` promise.
type Resolvers = (Function, Function);

pub(super) struct State {
    pub(super) engine: Engine<JsValue>,
    /// By ticket: a job's own ticket names its job's slot.
    resolvers: SlottedMap<Resolvers>,
    timer: Option<(Instant, TimerHandle)>,
    /// A timer that has fired; dropped later, never inside its own callback.
    spent_timer: Option<TimerHandle>,
    on_event: Option<Function>,
    /// The `onPartial` of unsettled items that have one.
    partials: IdMap<Function>,
    /// The `meta` of unsettled items that have one, for `request.metas`.
    metas: IdMap<JsValue>,
    /// The functions of unsettled `pacer.run`s, and their values.
    pub(super) runs: RunFunctions,
}

pub(super) struct Inner {
    pub(super) state: RefCell<State>,
    /// Starts and cancels provider calls on the JS side.
    calls: Calls,
    clock: Clock,
    /// The user's `{ get, set }` persistent store.
    pub(super) store: Option<JsValue>,
    /// The user's `estimateTokens(text)`.
    estimate: Option<Function>,
}

/// One unit of work taken out of the engine, performed with no borrow held.
enum Action {
    Cancel(CallId),
    Settle(Resolvers, Settled<JsValue>),
    /// A call, with its `request.metas` (undefined when no item has a `meta`).
    Start(Call, JsValue),
    /// A try of a `pacer.run`: its function, called for call `id` and this attempt.
    StartRun(CallId, Function, u32),
    /// A `pacer.run` ended: its value, or why it failed.
    SettleRun(Resolvers, Result<JsValue, PacerFailure<JsValue>>),
    Notify(Function, Event),
    Lookup(Lookup),
    Write(StoreWrite),
    Preview(Function, String),
}

/// The engine behind one `BatchPacer`.
#[wasm_bindgen]
pub struct PacerCore {
    pub(super) inner: Rc<Inner>,
}

impl core::fmt::Debug for PacerCore {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PacerCore").finish_non_exhaustive()
    }
}

/// An `invalid_options` error about `option`.
fn invalid_option(option: &str, message: String) -> JsValue {
    js_error(&PacerFailure::invalid_option(option, message))
}

// The constructor's optional paths, each kept out of line (`inline(never)`): engines
// compile a function on its first call, so code inlined into the constructor would be
// compiled on every start, used or not.

#[inline(never)]
fn not_a_provider(value: &JsValue) -> JsValue {
    invalid_option(
        "provider",
        format!("provider must be a function (got {})", describe(value)),
    )
}

#[inline(never)]
fn user_store(value: &JsValue) -> Result<JsValue, JsValue> {
    convert::store(value).map_err(|m| invalid_option("cache", m))
}

#[inline(never)]
fn user_clock(value: &JsValue) -> Result<Clock, JsValue> {
    Clock::user(value).map_err(|m| invalid_option("clock", m))
}

/// Applies the `restore` option's snapshot to a new engine.
#[inline(never)]
#[cfg_attr(cold_for_size, optimize(size))]
fn restore(engine: &mut Engine<JsValue>, value: &JsValue) -> Result<(), JsValue> {
    let snapshot = views::snapshot_from(value).map_err(|m| invalid_option("restore", m))?;
    let elapsed = snapshot
        .elapsed(js_sys::Date::now())
        .map_err(|e| invalid_option(&e.option, e.message))?;
    engine.restore(&snapshot, elapsed);
    Ok(())
}

#[inline(never)]
fn estimator(value: &JsValue) -> Result<Function, JsValue> {
    value.clone().dyn_into::<Function>().map_err(|_| {
        invalid_option(
            "estimateTokens",
            format!(
                "estimateTokens must be a function (got {})",
                describe(value)
            ),
        )
    })
}

fn event_handler(value: Option<JsValue>) -> Result<Option<Function>, JsValue> {
    match value {
        None => Ok(None),
        Some(v) => v.clone().dyn_into::<Function>().map(Some).map_err(|_| {
            invalid_option(
                "onEvent",
                format!("onEvent must be a function (got {})", describe(&v)),
            )
        }),
    }
}

#[wasm_bindgen]
impl PacerCore {
    /// `new PacerCore(provider, options, seedLow, seedHigh)`; throws `invalid_options`.
    /// The two words are 64 random bits from the JS layer: they seed the retry jitter
    /// and key the in-memory item keys.
    #[wasm_bindgen(constructor)]
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub fn new(
        provider: JsValue,
        options: JsValue,
        seed_low: u32,
        seed_high: u32,
    ) -> Result<PacerCore, JsValue> {
        let provider: Function = provider.dyn_into().map_err(|v| not_a_provider(&v))?;
        // `budget` is the JS layer's (see `shareBudget`).
        let input = convert::options_input(&options, "options").map_err(|e| js_error(&e))?;
        let parsed = Options::default()
            .patched(&input.core)
            .map_err(|e| invalid_option(&e.option, e.message))?;
        let store = match &input.cache {
            Some(cache) => Some(user_store(cache)?),
            None => None,
        };
        let clock = match &input.clock {
            Some(c) => user_clock(c)?,
            None => Clock::global(),
        };
        let on_event = event_handler(input.on_event)?;
        let estimate = match &input.estimate_tokens {
            Some(f) => Some(estimator(f)?),
            None => None,
        };
        let now = Instant::from_millis(clock.now_ms());
        let seed = u64::from(seed_high) << 32 | u64::from(seed_low);
        let mut engine = Engine::new(parsed, now, seed);
        if store.is_some() {
            engine.enable_store();
        }
        if let Some(value) = &input.restore {
            restore(&mut engine, value)?;
        }
        let inner = Rc::new_cyclic(|weak: &Weak<Inner>| Inner {
            state: RefCell::new(State {
                engine,
                resolvers: SlottedMap::new(crate::ticket_slot),
                timer: None,
                spent_timer: None,
                on_event,
                partials: IdMap::default(),
                metas: IdMap::default(),
                runs: RunFunctions::default(),
            }),
            calls: Calls::new(&provider, super::answers::answer(weak)),
            clock,
            store,
            estimate,
        });
        Ok(PacerCore { inner })
    }

    /// Queues an item; its promise is settled through `resolve` / `reject`. Returns the
    /// ticket to pass to `abort` (0 when the item was rejected at once).
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub fn translate(&self, item: JsValue, resolve: Function, reject: Function) -> f64 {
        let fields = match convert::item_fields(&item) {
            Ok(fields) => fields,
            Err(error) => {
                // After `dispose`, every call rejects `disposed`, a malformed item too.
                let disposed =
                    (self.inner.state.try_borrow()).is_ok_and(|state| state.engine.is_disposed());
                let error = if disposed { disposed_error() } else { error };
                let _ = reject.call1(&JsValue::UNDEFINED, &js_error(&error));
                return 0.0;
            }
        };
        let tokens = self.inner.user_tokens(|| JsValue::from_str(&fields.text));
        let meta = convert::get(&item, "meta");
        self.admit(resolve, reject, meta, |engine, now| {
            let item = Item {
                tokens,
                ..fields.item()
            };
            if fields.aborted {
                engine.handle_translate_aborted(now, &item)
            } else {
                engine.handle_translate(now, &item)
            }
        })
    }

    /// Rejects an item whose fields could not be read (a getter or proxy threw `error`):
    /// `invalid_input` with the error as `cause`, or `disposed` after `dispose`.
    #[wasm_bindgen(js_name = rejectUnreadable)]
    pub fn reject_unreadable(&self, error: JsValue, reject: Function) {
        let message = "item could not be read: a getter or proxy threw";
        self.reject_invalid(message.into(), error, reject);
    }

    /// Rejects an item whose `signal` threw `error` when the pacer added its abort
    /// listener: `invalid_input` with the error as `cause`, or `disposed` after `dispose`.
    #[wasm_bindgen(js_name = rejectSignal)]
    pub fn reject_signal(&self, error: JsValue, reject: Function) {
        let message = format!(
            "signal must be an AbortSignal: its addEventListener threw ({})",
            convert::error_message(&error)
        );
        self.reject_invalid(message, error, reject);
    }

    /// Registers a combination of compatibility fields for `submit`; returns its id.
    /// The fields are checked when an item uses them, like those of `translate`.
    #[wasm_bindgen(js_name = registerCompat)]
    pub fn register_compat(
        &self,
        provider_id: &str,
        source_lang: &str,
        target_lang: &str,
        context: &str,
        llm: bool,
        scope: &str,
    ) -> u32 {
        let compat = Compat {
            provider_id,
            source_lang,
            target_lang,
            context,
            llm,
            scope,
        };
        match self.inner.state.try_borrow_mut() {
            Ok(mut state) => state.engine.register_compat(&compat),
            Err(_) => 0,
        }
    }

    /// Forgets every registered combination.
    #[wasm_bindgen(js_name = clearCompats)]
    pub fn clear_compats(&self) {
        if let Ok(mut state) = self.inner.state.try_borrow_mut() {
            state.engine.clear_compats();
        }
    }

    /// `translate` for an item whose fields the JS layer has type-checked (strings, a
    /// number, no signal or one not aborted): its text is the `bytes` last written to
    /// the input buffer, its other fields those registered under `compat`; `meta` is
    /// handed to the provider as it is.
    pub fn submit(
        &self,
        bytes: usize,
        compat: u32,
        priority: f64,
        meta: JsValue,
        resolve: Function,
        reject: Function,
    ) -> f64 {
        let text = match input::take(bytes) {
            Ok(text) => text,
            Err(message) => {
                let _ = reject.call1(
                    &JsValue::UNDEFINED,
                    &js_error_of(ErrorCode::InvalidInput, message),
                );
                return 0.0;
            }
        };
        let tokens = self.inner.user_tokens(|| JsValue::from_str(&text));
        self.admit(resolve, reject, meta, |engine, now| {
            engine.handle_submit(now, compat, &text, priority, tokens)
        })
    }

    /// Shares `budget` with the other pacers given it (right after construction).
    #[wasm_bindgen(js_name = shareBudget)]
    pub fn share_budget(&self, budget: &PacerBudget) -> Result<(), JsValue> {
        self.inner
            .borrow()?
            .engine
            .share_budget(budget.budget.clone());
        Ok(())
    }

    /// Sends previews of the item of `ticket`'s translation to `on_partial` while its
    /// reply streams, until it settles.
    pub fn watch(&self, ticket: f64, on_partial: Function) {
        if let Ok(mut state) = self.inner.state.try_borrow_mut() {
            if state.resolvers.contains(ticket as Ticket) {
                state.engine.want_previews();
                state.partials.insert(ticket as Ticket, on_partial);
            }
        }
    }

    /// The item of `ticket` was aborted by its signal.
    pub fn abort(&self, ticket: f64) {
        let now = self.inner.now();
        if let Ok(mut state) = self.inner.state.try_borrow_mut() {
            state.engine.handle_abort(now, ticket as Ticket);
        }
        self.inner.flush();
    }

    /// Validates the whole patch, then applies it; throws `invalid_options`.
    #[wasm_bindgen(js_name = setOptions)]
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub fn set_options(&self, patch: JsValue) -> Result<(), JsValue> {
        let input =
            convert::options_input(&patch, "the options patch").map_err(|e| js_error(&e))?;
        if let Some(clock) = &input.clock {
            let got = describe(clock);
            return Err(invalid_option(
                "clock",
                format!("clock cannot be changed after construction (got {got})"),
            ));
        }
        let fixed = [
            ("budget", &input.budget),
            ("cache", &input.cache),
            ("restore", &input.restore),
            ("estimateTokens", &input.estimate_tokens),
        ];
        for (name, value) in fixed {
            if let Some(value) = value {
                let got = describe(value);
                return Err(invalid_option(
                    name,
                    format!("{name} cannot be changed after construction (got {got})"),
                ));
            }
        }
        let on_event = event_handler(input.on_event.clone())?;
        let now = self.inner.now();
        {
            let mut state = self.inner.borrow()?;
            // The engine changes nothing unless the whole patch is valid; onEvent follows it.
            state
                .engine
                .set_options(now, &input.core)
                .map_err(|e| js_error(&e))?;
            if input.on_event.is_some() {
                state.on_event = on_event;
            }
        }
        self.inner.flush();
        Ok(())
    }

    /// The options in force.
    #[wasm_bindgen(getter)]
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub fn options(&self) -> Result<JsValue, JsValue> {
        let state = self.inner.state.try_borrow().map_err(|_| busy())?;
        Ok(convert::options_object(state.engine.options()))
    }

    /// Tokens, 429 pauses and adaptive rates with the wall-clock time, as plain JSON for
    /// `new BatchPacer(provider, { restore })` in a restarted service worker.
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub fn snapshot(&self) -> Result<JsValue, JsValue> {
        let state = self.inner.state.try_borrow().map_err(|_| busy())?;
        Ok(views::snapshot_object(
            &state.engine.snapshot(js_sys::Date::now()),
        ))
    }

    /// Counters and gauges as a plain object.
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub fn stats(&self) -> Result<JsValue, JsValue> {
        let state = self.inner.state.try_borrow().map_err(|_| busy())?;
        let by_provider = state.engine.stats_by_provider();
        Ok(views::stats_object(&state.engine.stats(), &by_provider))
    }

    /// Rejects everything unsettled with `disposed` and stops all timers.
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub fn dispose(&self) {
        if let Ok(mut state) = self.inner.state.try_borrow_mut() {
            state.engine.handle_dispose();
        }
        self.inner.flush();
        // Every promise has settled: the tables sized for the most items ever in flight
        // are given back now, not when the pacer is collected. (The flush above dropped
        // the armed timer, whose callback holds the pacer: a disposed engine asks for no
        // wake-up.)
        if let Ok(mut state) = self.inner.state.try_borrow_mut() {
            state.resolvers = SlottedMap::new(crate::ticket_slot);
            state.partials = IdMap::default();
            state.metas = IdMap::default();
            state.runs = RunFunctions::default();
        }
    }
}

type Admission = Result<Ticket, PacerFailure<JsValue>>;

impl PacerCore {
    /// Runs `handle` on the engine and keeps the item's resolvers (and `meta`, unless
    /// undefined) under its ticket. Returns the ticket for `abort` (0 when the item was
    /// rejected at once).
    fn admit(
        &self,
        resolve: Function,
        reject: Function,
        meta: JsValue,
        handle: impl FnOnce(&mut Engine<JsValue>, Instant) -> Admission,
    ) -> f64 {
        let has_meta = !meta.is_undefined();
        let keep = |state: &mut State, ticket| {
            if has_meta {
                state.metas.insert(ticket, meta);
            }
        };
        self.admit_with(resolve, reject, keep, |engine, now| {
            if has_meta {
                // Before `handle`: the item's call may be made at once.
                engine.want_call_items();
            }
            handle(engine, now)
        })
    }

    /// `admit`, with `keep` storing what else the driver needs under the ticket before
    /// the engine's outputs (which may start a call for it) are performed.
    pub(super) fn admit_with(
        &self,
        resolve: Function,
        reject: Function,
        keep: impl FnOnce(&mut State, Ticket),
        handle: impl FnOnce(&mut Engine<JsValue>, Instant) -> Admission,
    ) -> f64 {
        let now = self.inner.now();
        let admitted = {
            let Ok(mut state) = self.inner.state.try_borrow_mut() else {
                let _ = reject.call1(&JsValue::UNDEFINED, &busy());
                return 0.0;
            };
            let state = &mut *state;
            let admitted = handle(&mut state.engine, now);
            match admitted {
                Ok(ticket) => {
                    state.resolvers.insert(ticket, (resolve, reject));
                    keep(state, ticket);
                    Ok(ticket)
                }
                Err(error) => Err((reject, error)),
            }
        };
        match admitted {
            Ok(ticket) => {
                self.inner.flush();
                ticket as f64
            }
            Err((reject, error)) => {
                let _ = reject.call1(&JsValue::UNDEFINED, &js_error(&error));
                0.0
            }
        }
    }

    /// Rejects an item `invalid_input` with `message` and `cause`, or `disposed` after
    /// `dispose` (every call rejects `disposed` then, a malformed item too).
    pub(super) fn reject_invalid(&self, message: String, cause: JsValue, reject: Function) {
        let disposed =
            (self.inner.state.try_borrow()).is_ok_and(|state| state.engine.is_disposed());
        let failure = if disposed {
            disposed_error()
        } else {
            let mut failure = PacerFailure::new(ErrorCode::InvalidInput, message);
            failure.cause = Some(cause);
            failure
        };
        let _ = reject.call1(&JsValue::UNDEFINED, &js_error(&failure));
    }
}

fn busy() -> JsValue {
    js_error_of(
        ErrorCode::InvalidInput,
        "the pacer was called from inside its own callback in a way it cannot serve",
    )
}

impl Inner {
    pub(super) fn now(&self) -> Instant {
        Instant::from_millis(self.clock.now_ms())
    }

    /// The user's estimate of an item's tokens, when the user gave one (the budgets and
    /// every call's output bound use it). Called with no borrow held (the estimator is
    /// user code); a throw or a value that is not a finite number >= 0 falls back to the
    /// built-in estimate.
    fn user_tokens(&self, text: impl FnOnce() -> JsValue) -> Option<f64> {
        let estimate = self.estimate.as_ref()?;
        let value = estimate.call1(&JsValue::UNDEFINED, &text()).ok()?;
        value.as_f64().filter(|n| n.is_finite() && *n >= 0.0)
    }

    fn borrow(&self) -> Result<std::cell::RefMut<'_, State>, JsValue> {
        self.state.try_borrow_mut().map_err(|_| busy())
    }

    /// Takes the next output of the engine, in the order that keeps promises prompt.
    fn next_action(&self) -> Option<Action> {
        let mut state = self.state.try_borrow_mut().ok()?;
        let state = &mut *state;
        // The engine decides the order (`Output`); here each output finds its handler,
        // and one whose handler is gone (a settled item's `onPartial`, no `onEvent`) is
        // dropped.
        while let Some(output) = state.engine.poll_output() {
            match output {
                Output::Cancel(id) => return Some(Action::Cancel(id)),
                Output::Settled(settled) => {
                    if !state.partials.is_empty() {
                        state.partials.remove(&settled.ticket);
                    }
                    if !state.metas.is_empty() {
                        state.metas.remove(&settled.ticket);
                    }
                    match state.resolvers.remove(settled.ticket) {
                        Some(resolvers) => {
                            return Some(match state.runs.end(settled.ticket) {
                                Some(value) => {
                                    Action::SettleRun(resolvers, settled.result.map(|_| value))
                                }
                                None => Action::Settle(resolvers, settled),
                            })
                        }
                        None => state.engine.note_duplicate_settlement(),
                    }
                }
                Output::Preview(preview) => {
                    if let Some(on_partial) = state.partials.get(&preview.ticket) {
                        return Some(Action::Preview(on_partial.clone(), preview.text));
                    }
                }
                Output::Lookup(lookup) => return Some(Action::Lookup(lookup)),
                Output::StoreWrite(write) => return Some(Action::Write(write)),
                Output::Event(event) => {
                    if let Some(handler) = &state.on_event {
                        return Some(Action::Notify(handler.clone(), event));
                    }
                }
                // A run's function is stored before any output of the engine is performed.
                Output::Call(call) => {
                    let Some(ticket) = call.run else {
                        let metas = convert::metas(&call.items, &state.metas);
                        return Some(Action::Start(call, metas));
                    };
                    if let Some(function) = state.runs.function(ticket) {
                        return Some(Action::StartRun(call.id, function, call.attempt));
                    }
                }
            }
        }
        None
    }

    /// Performs every pending output, then re-arms the timer.
    pub(super) fn flush(self: &Rc<Self>) {
        while let Some(action) = self.next_action() {
            match action {
                Action::Cancel(id) => self.calls.cancel(id),
                Action::Settle((resolve, reject), settled) => match settled.result {
                    Ok(text) => input::resolve(&resolve, &text),
                    Err(error) => {
                        let _ = reject.call1(&JsValue::UNDEFINED, &js_error(&error));
                    }
                },
                // A throwing handler must not stop the pacer: its error is dropped.
                Action::Notify(handler, event) => {
                    let _ = handler.call1(&JsValue::UNDEFINED, &views::event_object(&event));
                }
                Action::Start(call, metas) => self.calls.start(&call, &metas),
                Action::StartRun(id, function, attempt) => {
                    self.calls.start_run(id, &function, attempt)
                }
                Action::SettleRun((resolve, reject), result) => {
                    let _ = match result {
                        Ok(value) => resolve.call1(&JsValue::UNDEFINED, &value),
                        Err(error) => reject.call1(&JsValue::UNDEFINED, &js_error(&error)),
                    };
                }
                Action::Lookup(lookup) => self.look_up(lookup),
                Action::Write(write) => self.write(write),
                // A throwing onPartial is ignored: a preview is no result.
                Action::Preview(on_partial, text) => {
                    let _ = on_partial.call1(&JsValue::UNDEFINED, &JsValue::from_str(&text));
                }
            }
        }
        self.arm_timer();
    }

    fn on_timer(self: &Rc<Self>) {
        let now = self.now();
        if let Ok(mut state) = self.state.try_borrow_mut() {
            state.spent_timer = state.timer.take().map(|(_, handle)| handle);
            state.engine.handle_timeout(now);
        }
        self.flush();
    }

    /// Sleeps until the engine's next wake-up (one timer at most).
    fn arm_timer(self: &Rc<Self>) {
        let (wake, stale) = {
            let Ok(mut state) = self.state.try_borrow_mut() else {
                return;
            };
            let wake = state.engine.poll_timeout();
            let armed = state.timer.as_ref().map(|(at, _)| *at);
            // A timer already set for this time or earlier stays: waking early costs one
            // empty turn, while re-arming on every call (each moves the next deadline)
            // would cost a clearTimeout and a setTimeout per call.
            if armed == wake || armed.zip(wake).is_some_and(|(armed, wake)| armed <= wake) {
                return;
            }
            (wake, (state.timer.take(), state.spent_timer.take()))
        };
        // Clearing runs the user's clearTimeout: no borrow may be held.
        drop(stale);
        let Some(at) = wake else {
            return;
        };
        // Read only now: most flushes leave the armed timer as it is.
        let delay = at.since(self.now()).as_millis();
        let inner = Rc::clone(self);
        let handle = self.clock.set_timeout(delay, move || inner.on_timer());
        if let (Some(handle), Ok(mut state)) = (handle, self.state.try_borrow_mut()) {
            state.timer = Some((at, handle));
        }
    }
}
