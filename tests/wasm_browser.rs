//! The wasm binding end to end in a real browser (browser mode).
#![cfg(target_arch = "wasm32")]

mod common;

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

pacer_cases!(
    batches_and_aligns,
    batches_and_aligns_in_the_separator_layout,
    a_429_pauses_then_succeeds,
    a_timeout_aborts_the_signal,
    dispose_settles_everything,
    garbage_in_gives_errors_not_panics,
    a_persistent_store_answers_before_the_provider,
    snapshot_round_trips_and_bad_snapshots_are_rejected,
);
