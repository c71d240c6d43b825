//! Cases shared by the browser and service-worker runs of the wasm binding: the real
//! global clock (performance.now, setTimeout), real promises, a JS provider.
#![cfg(target_arch = "wasm32")]

use batch_pacer::wasm::PacerCore;
use js_sys::{Function, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

/// A core as the JS layer makes one; the seed's 64 bits are fixed here.
pub fn new_core(provider: JsValue, options: JsValue) -> Result<PacerCore, JsValue> {
    PacerCore::new(provider, options, 0x0123_4567, 0x89AB_CDEF)
}

/// A provider from a JS function body taking `req`.
pub fn provider(body: &str) -> JsValue {
    Function::new_with_args("req", body).into()
}

/// An echoing provider: `«text»` for each text, in the request's layout: between its
/// markers, one per line (the default), or joined by the separator (the older layout).
pub fn echo_provider() -> JsValue {
    provider(
        "globalThis.__calls = (globalThis.__calls || 0) + 1;
         const echo = req.texts.map((t, i) => req.markers ? req.markers[i][0] + '«' + t + '»' + req.markers[i][1] : '«' + t + '»');
         return Promise.resolve(req.separator === undefined ? echo.join('\\n') : echo.join(req.separator));",
    )
}

pub fn object(pairs: &[(&str, JsValue)]) -> JsValue {
    let o = Object::new();
    for (k, v) in pairs {
        Reflect::set(&o, &JsValue::from_str(k), v).unwrap();
    }
    o.into()
}

pub fn item(text: &str) -> JsValue {
    object(&[
        ("text", text.into()),
        ("sourceLang", "en".into()),
        ("targetLang", "de".into()),
        ("providerId", "p".into()),
    ])
}

pub fn options(pairs: &[(&str, f64)]) -> JsValue {
    let pairs: Vec<(&str, JsValue)> = pairs
        .iter()
        .map(|(k, v)| (*k, JsValue::from_f64(*v)))
        .collect();
    object(&pairs)
}

/// The promise of `core.translate(item)`.
pub fn translate(core: &PacerCore, item: JsValue) -> JsFuture {
    let promise = Promise::new(&mut |resolve, reject| {
        core.translate(item.clone(), resolve, reject);
    });
    JsFuture::from(promise)
}

pub fn code(error: &JsValue) -> String {
    Reflect::get(error, &"code".into())
        .unwrap()
        .as_string()
        .unwrap_or_default()
}

pub fn stat(core: &PacerCore, name: &str) -> f64 {
    Reflect::get(&core.stats().unwrap(), &name.into())
        .unwrap()
        .as_f64()
        .unwrap()
}

pub async fn batches_and_aligns() {
    batches_and_aligns_in(options(&[("batchDelayMs", 5.0)])).await;
}

pub async fn batches_and_aligns_in_the_separator_layout() {
    let opts = object(&[
        ("batchDelayMs", 5.0.into()),
        ("segmentFormat", "separator".into()),
    ]);
    batches_and_aligns_in(opts).await;
}

async fn batches_and_aligns_in(opts: JsValue) {
    let core = new_core(echo_provider(), opts).unwrap();
    // A line that is the separator's core and one that looks like a marker: each layout
    // must keep the paragraph holding it whole.
    let texts = ["one", "two\n%%\nlines", "three <s1>x</s1>", "four", "five"];
    let pending: Vec<JsFuture> = texts.iter().map(|t| translate(&core, item(t))).collect();
    for (future, text) in pending.into_iter().zip(texts) {
        assert_eq!(
            future.await.unwrap().as_string().unwrap(),
            format!("«{text}»")
        );
    }
    assert_eq!(stat(&core, "providerCalls"), 2.0);
    assert_eq!(stat(&core, "batchCalls"), 1.0);
}

pub async fn a_429_pauses_then_succeeds() {
    let core = new_core(
        provider(
            "globalThis.__n429 = (globalThis.__n429 || 0) + 1;
             if (globalThis.__n429 === 1) { const e = new Error('slow down'); e.status = 429; e.retryAfterMs = 50; throw e; }
             return req.text + '!';",
        ),
        options(&[("batchDelayMs", 0.0)]),
    )
    .unwrap();
    let started = js_sys::Date::now();
    let out = translate(&core, item("x")).await.unwrap();
    assert_eq!(out.as_string().unwrap(), "x!");
    assert!(
        js_sys::Date::now() - started >= 45.0,
        "the Retry-After was honoured"
    );
    assert_eq!(stat(&core, "rateLimited"), 1.0);
    assert_eq!(stat(&core, "retries"), 1.0);
}

pub async fn a_timeout_aborts_the_signal() {
    let core = new_core(
        provider("globalThis.__signal = req.signal; return new Promise(() => {});"),
        options(&[
            ("timeoutMs", 30.0),
            ("maxRetries", 0.0),
            ("batchDelayMs", 0.0),
        ]),
    )
    .unwrap();
    let error = translate(&core, item("x")).await.unwrap_err();
    assert_eq!(code(&error), "timeout");
    let signal = Reflect::get(&js_sys::global(), &"__signal".into()).unwrap();
    assert_eq!(
        Reflect::get(&signal, &"aborted".into()).unwrap(),
        JsValue::TRUE
    );
}

pub async fn dispose_settles_everything() {
    let core = new_core(
        provider("return new Promise(() => {});"),
        JsValue::UNDEFINED,
    )
    .unwrap();
    let a = translate(&core, item("a"));
    let b = translate(&core, item("b"));
    core.dispose();
    assert_eq!(code(&a.await.unwrap_err()), "disposed");
    assert_eq!(code(&b.await.unwrap_err()), "disposed");
    assert_eq!(
        code(&translate(&core, item("c")).await.unwrap_err()),
        "disposed"
    );
}

pub async fn garbage_in_gives_errors_not_panics() {
    let bad_options = new_core(echo_provider(), options(&[("rate", -1.0)]))
        .err()
        .unwrap();
    assert_eq!(code(&bad_options), "invalid_options");
    assert!(new_core(JsValue::from(5), JsValue::UNDEFINED).is_err());
    assert!(new_core(echo_provider(), JsValue::from("fast")).is_err());
    let core = new_core(
        provider("if (req.texts[0] === 'throw') throw 'sync'; if (req.texts[0] === 'num') return 42; return null;"),
        options(&[("maxRetries", 0.0), ("batchDelayMs", 0.0)]),
    )
    .unwrap();
    for garbage in [
        JsValue::NULL,
        JsValue::from(3),
        object(&[("text", 7.into())]),
    ] {
        assert_eq!(
            code(&translate(&core, garbage).await.unwrap_err()),
            "invalid_input"
        );
    }
    for text in ["throw", "num", "null"] {
        let mut it = item(text);
        Reflect::set(&it, &"llm".into(), &JsValue::FALSE).unwrap();
        it = it.clone();
        assert_eq!(
            code(&translate(&core, it).await.unwrap_err()),
            "provider_error"
        );
    }
    // The module is still healthy: a new pacer works.
    let fine = new_core(echo_provider(), options(&[("batchDelayMs", 0.0)])).unwrap();
    assert_eq!(
        translate(&fine, item("ok"))
            .await
            .unwrap()
            .as_string()
            .unwrap(),
        "«ok»"
    );
}

/// Declares every shared case as a wasm-bindgen test of the including file's mode.
#[macro_export]
macro_rules! pacer_cases {
    ($($case:ident),* $(,)?) => {
        $(
            #[wasm_bindgen_test::wasm_bindgen_test]
            async fn $case() {
                common::$case().await
            }
        )*
    };
}

pub async fn a_persistent_store_answers_before_the_provider() {
    let store: JsValue = js_sys::eval(
        "(() => { const m = new Map([['9b8ea9be5963e961c9631c9bfedf9b193acd9eb660007d3d18a59ae4fd1c8964', 'Hallo, Welt!']]);
                  return { map: m, get: async k => m.get(k), set: async (k, v) => { m.set(k, v); } }; })()",
    )
    .unwrap();
    let opts = object(&[("cache", store.clone()), ("batchDelayMs", JsValue::from(0))]);
    let core = new_core(echo_provider(), opts).unwrap();
    let mut hello = item("Hello, world!");
    Reflect::set(&hello, &"providerId".into(), &"openai".into()).unwrap();
    hello = hello.clone();
    let hit = translate(&core, hello).await.unwrap();
    assert_eq!(hit.as_string().unwrap(), "Hallo, Welt!");
    assert_eq!(stat(&core, "providerCalls"), 0.0);
    assert_eq!(
        translate(&core, item("new"))
            .await
            .unwrap()
            .as_string()
            .unwrap(),
        "«new»"
    );
    // The write is fire and forget: give it a turn of the event loop.
    gloo_timers::future::TimeoutFuture::new(0).await;
    let map = Reflect::get(&store, &"map".into()).unwrap();
    assert_eq!(
        Reflect::get(&map, &"size".into()).unwrap(),
        JsValue::from(2)
    );
}

pub async fn snapshot_round_trips_and_bad_snapshots_are_rejected() {
    let core = new_core(
        echo_provider(),
        options(&[("capacity", 3.0), ("rate", 0.001)]),
    )
    .unwrap();
    let snapshot = core.snapshot().unwrap();
    let tokens = Reflect::get(&snapshot, &"tokens".into())
        .unwrap()
        .as_f64()
        .unwrap();
    assert!(
        (tokens - 3.0).abs() < 0.01,
        "a new pacer's bucket is full: {tokens}"
    );
    Reflect::set(&snapshot, &"tokens".into(), &JsValue::from(0.0)).unwrap();
    let restored = new_core(
        echo_provider(),
        object(&[
            ("capacity", 3.into()),
            ("rate", 0.001.into()),
            ("restore", snapshot.clone()),
        ]),
    )
    .unwrap();
    let after = restored.snapshot().unwrap();
    let tokens = Reflect::get(&after, &"tokens".into())
        .unwrap()
        .as_f64()
        .unwrap();
    assert!(
        tokens < 0.1,
        "the restored bucket is empty, not refilled: {tokens}"
    );

    let future = js_sys::JSON::parse(
        &js_sys::JSON::stringify(&snapshot)
            .unwrap()
            .as_string()
            .unwrap(),
    )
    .unwrap();
    Reflect::set(
        &future,
        &"wallTime".into(),
        &JsValue::from(js_sys::Date::now() + 3_600_000.0),
    )
    .unwrap();
    for bad in [
        future,
        JsValue::from("snapshot"),
        object(&[("tokens", 1.into())]),
    ] {
        let error = new_core(echo_provider(), object(&[("restore", bad)]))
            .err()
            .unwrap();
        assert_eq!(code(&error), "invalid_options");
    }
}
