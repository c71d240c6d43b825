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
    let mut before = Sim::new(Default::default(), a_429_then_echoes());
    before.translate(&single("x"));
    before.drive_until(ms(5_000.0));
    let snapshot = before.engine.snapshot(50_000.0);
    assert_eq!(snapshot.providers.len(), 1);
    assert_eq!(snapshot.providers[0].adaptive_rate, Some(4.0));

    // Restarted 10 s later: 30 - 5 - 10 = 15 s of pause remain, and up to 3 s more (a
    // Retry-After's wait is lengthened by up to a tenth, so clients do not herd).
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
        (15_000.0..=18_002.0).contains(&starts[0]),
        "first call at {} ms",
        starts[0]
    );
    // 4/s, burst 1, grown by 15% after the first success: 1000 / 4.6 ms apart.
    assert!(
        starts[1] - starts[0] >= 217.0,
        "the adaptive rate holds: {starts:?}"
    );
    let restored = after.engine.snapshot(0.0);
    assert!(restored.providers[0].adaptive_rate.is_some());
}

/// A provider whose first call meets a 429 with Retry-After 30 s; then it echoes.
fn a_429_then_echoes() -> impl FnMut(&Call, batch_pacer::Instant) -> Answer {
    let mut first = true;
    move |call: &Call, _| {
        if std::mem::take(&mut first) {
            return Answer::After(
                Duration::from_millis(1.0),
                Err(http_error(429, Some(30_000.0))),
            );
        }
        Answer::After(Duration::from_millis(1.0), Ok(echo_reply(call)))
    }
}

/// A pacer on the defaults whose provider met one 429 (Retry-After 30 s) and then got
/// back to the full rate: driven until the `adaptiveRate` event with no rate.
fn back_at_full_rate_after_a_429() -> Sim {
    let mut sim = Sim::new(Default::default(), a_429_then_echoes());
    let texts: Vec<String> = (0..400).map(|i| format!("t{i}")).collect();
    for t in &texts {
        sim.translate(&single(t));
    }
    let back = |sim: &Sim| {
        sim.events
            .iter()
            .any(|(_, e)| matches!(e, batch_pacer::Event::AdaptiveRate { rate: None, .. }))
    };
    while !back(&sim) {
        assert!(
            sim.now < ms(120_000.0),
            "the provider never got back to full rate"
        );
        sim.drive_until(sim.now + Duration::from_millis(100.0));
    }
    sim
}

#[test]
fn a_provider_back_at_full_rate_is_restored_without_a_burst() {
    let before = back_at_full_rate_after_a_429();
    let snapshot = before.engine.snapshot(1_000_000.0);
    assert!(
        snapshot.tokens > 30.0,
        "the pacer's bucket refilled during the pause: {}",
        snapshot.tokens
    );
    assert_eq!(snapshot.providers[0].adaptive_rate, Some(8.0));

    // Restarted at once: the pacer's bucket is nearly full, the provider's burst is not.
    let mut after = Sim::new(Default::default(), echo_provider(1.0));
    after
        .engine
        .restore(&snapshot, snapshot.elapsed(1_000_000.0).unwrap());
    for i in 0..100 {
        after.translate(&single(&format!("u{i}")));
    }
    after.drive_until(ms(1_000.0));
    let starts = after.starts_ms();
    // No burst, and no stall either: the restored pacer sends at its rate at once.
    assert!(
        (8..=9).contains(&starts.len()),
        "at least 8 and at most 1 + 8 calls in the first second, got {}: {starts:?}",
        starts.len()
    );
}

#[test]
fn lowering_the_rate_to_a_slowed_providers_rate_gives_it_no_burst() {
    let mut sim = Sim::new(Default::default(), a_429_then_echoes());
    sim.translate(&single("first"));
    sim.drive_until(ms(10_000.0));
    // Slowed to 4/s and paused; the pacer's bucket refills meanwhile.
    for i in 0..100 {
        sim.translate(&single(&format!("t{i}")));
    }
    sim.engine
        .set_options(sim.now, &[("rate", batch_pacer::OptionValue::Number(4.0))])
        .unwrap();
    // The 30 s pause ends between 30 and 33 s (lengthened by up to a tenth).
    sim.drive_until(ms(34_000.0));
    let starts = sim.starts_ms();
    let resumed = *starts.iter().find(|s| **s >= 30_000.0).unwrap();
    assert!(resumed <= 33_001.0, "resumed at {resumed} ms");
    let after_pause = starts
        .iter()
        .filter(|s| (resumed..resumed + 1000.0).contains(*s))
        .count();
    assert!(
        (4..=6).contains(&after_pause),
        "at least 4 and at most 1 + 4 calls in the second after the pause, got {after_pause}"
    );
}

/// Call starts in the first second after a 429 pause ends, for a pacer with `opts`
/// restored `elapsed_ms` after a snapshot of provider "p" at `adaptive_rate`, paused for
/// `paused_ms` more, with 100 single items queued.
fn starts_after_the_pause(
    opts: batch_pacer::Options,
    adaptive_rate: f64,
    paused_ms: f64,
    elapsed_ms: f64,
) -> usize {
    use batch_pacer::{ProviderSnapshot, Snapshot};
    let snapshot = Snapshot {
        wall_time_ms: 0.0,
        tokens: 60.0,
        providers: vec![ProviderSnapshot {
            provider_id: "p".into(),
            paused_for: Duration::from_millis(paused_ms),
            adaptive_rate: Some(adaptive_rate),
            adaptive_ceiling: 8.0,
            daily_block: None,
            limits: None,
            batch_limit: None,
            length_ratios: vec![],
            tokens: None,
        }],
    };
    let mut sim = Sim::new(opts, echo_provider(1.0));
    sim.engine
        .restore(&snapshot, Duration::from_millis(elapsed_ms));
    let texts: Vec<String> = (0..100).map(|i| format!("u{i}")).collect();
    for t in &texts {
        sim.translate(&single(t));
    }
    let pause_end = paused_ms - elapsed_ms;
    sim.drive_until(ms(pause_end + 1_000.0));
    sim.starts_ms().len()
}

#[test]
fn a_recovering_provider_restored_mid_pause_earns_nothing_while_paused() {
    // Saved while recovering (back at 8/s) and paused for 60 s more; restarted 30 s later.
    let starts = starts_after_the_pause(Default::default(), 8.0, 60_000.0, 30_000.0);
    assert!(
        (8..=9).contains(&starts),
        "{starts} calls in the second after the pause: 8/s, from one token"
    );
}

#[test]
fn a_slowed_provider_restored_mid_pause_under_a_lower_rate_gets_no_burst_at_its_end() {
    // Slowed to 4/s by a 429 (Retry-After 30 s); restarted 10 s later with rate 4.
    let starts = starts_after_the_pause(options(&[("rate", 4.0)]), 4.0, 30_000.0, 10_000.0);
    assert!(
        (4..=5).contains(&starts),
        "{starts} calls in the second after the pause: 4/s, from one token"
    );
}

#[test]
fn a_restarted_pacer_respects_the_limits_reported_before_the_restart() {
    use batch_pacer::{Call, Report, ReportedLimits};
    // The provider reports on each reply what is left of its window of 30 requests (and
    // the whole window, as x-ratelimit-limit-requests gives it): 1, whole in 58 s.
    let reply = |call: &Call, _| {
        let report = Report {
            limits: ReportedLimits {
                requests_remaining: Some(if call.texts[0] == "first" { 29.0 } else { 1.0 }),
                requests_reset: Some(Duration::from_millis(58_000.0)),
                requests_limit: Some(30.0),
                ..Default::default()
            },
            ..Default::default()
        };
        Answer::Reported(Duration::from_millis(10.0), Ok(echo_reply(call)), report)
    };
    let opts = options(&[("rate", 100.0), ("capacity", 100.0)]);
    let mut before = Sim::new(opts.clone(), reply);
    before.translate(&single("first"));
    before.drive_until(ms(20.0));
    before.translate(&single("second"));
    before.drive_until(ms(40.0));
    let snapshot = before.engine.snapshot(1_000.0);
    let limits = snapshot.providers[0].limits.clone().expect("limits kept");
    let requests = limits.requests.expect("the requests window");
    assert_eq!((requests.remaining.round(), requests.whole), (1.0, 30.0));
    // Restored 1 s later in a fresh pacer with a full bucket of 100: its first burst is
    // what the window has room for, not 100 calls.
    let mut after = Sim::new(opts, echo_provider(10.0));
    after
        .engine
        .restore(&snapshot, Duration::from_millis(1_000.0));
    let texts: Vec<String> = (0..40).map(|i| format!("u{i}")).collect();
    for t in &texts {
        after.translate(&single(t));
    }
    after.drive_until(ms(100.0));
    assert_eq!(
        after.calls.len(),
        1,
        "one request's room, not a burst of 40"
    );
    after.drive();
    assert_eq!(after.calls.len(), 40, "the rest as the window refills");
}
