//! Surviving a stopped service worker: snapshot, then restore in a fresh engine.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use batch_pacer::{Call, Duration, Reply};
use sim::*;

fn single(text: &str) -> batch_pacer::Item<'_> {
    let mut it = item(text);
    it.compat.llm = false;
    it
}

#[test]
fn a_restored_pacer_does_not_burst_again() {
    let opts = options(&[("rate", 1.0), ("capacity", 5.0)]);
    let mut before = Sim::new(opts.clone(), echo_provider(1.0));
    let texts: Vec<String> = (0..5).map(|i| format!("t{i}")).collect();
    for t in &texts {
        before.translate(&single(t));
    }
    before.drive();
    let snapshot = before.engine.snapshot(1_000_000.0);
    assert!(
        snapshot.tokens < 0.1,
        "the burst drained the bucket: {}",
        snapshot.tokens
    );

    // The worker restarts 2 s later (wall clock): 2 tokens earned, not a full bucket.
    let mut after = Sim::new(opts, echo_provider(1.0));
    after
        .engine
        .restore(&snapshot, snapshot.elapsed(1_002_000.0).unwrap());
    for t in &texts {
        after.translate(&single(t));
    }
    after.drive();
    // The first pacer's calls ended 1 ms after its burst: 0.001 token more than 2.
    let starts: Vec<f64> = after
        .starts_ms()
        .iter()
        .map(|s| (s / 10.0).round() * 10.0)
        .collect();
    assert_eq!(starts, vec![0.0, 0.0, 1000.0, 2000.0, 3000.0]);
}

#[test]
fn a_restored_pacer_keeps_what_is_left_of_a_429_pause_and_its_adaptive_rate() {
    let mut first = true;
    let mut before = Sim::new(Default::default(), move |call: &Call, _| {
        if first {
            first = false;
            return Answer::After(
                Duration::from_millis(1.0),
                Err(http_error(429, Some(30_000.0))),
            );
        }
        Answer::After(Duration::from_millis(1.0), Ok(echo_reply(call)))
    });
    before.translate(&single("x"));
    before.drive_until(ms(5_000.0));
    let snapshot = before.engine.snapshot(50_000.0);
    assert_eq!(snapshot.providers.len(), 1);
    assert_eq!(snapshot.providers[0].adaptive_rate, Some(4.0));

    // Restarted 10 s later: 30 - 5 - 10 = 15 s of pause remain.
    let mut after = Sim::new(Default::default(), |call: &Call, _| {
        Answer::After(
            Duration::from_millis(1.0),
            Ok(Reply::Text(call.text.clone())),
        )
    });
    after
        .engine
        .restore(&snapshot, snapshot.elapsed(60_000.0).unwrap());
    after.translate(&single("y"));
    after.translate(&single("z"));
    after.drive();
    let starts = after.starts_ms();
    assert!(
        (starts[0] - 15_001.0).abs() < 2.0,
        "first call at {} ms",
        starts[0]
    );
    // 4/s, burst 1, grown by 5% after the first success: 1000 / 4.2 ms apart.
    assert!(
        starts[1] - starts[0] >= 238.0,
        "the adaptive rate holds: {starts:?}"
    );
    let restored = after.engine.snapshot(0.0);
    assert!(restored.providers[0].adaptive_rate.is_some());
}
