//! Quotas as providers count them: settings and billing errors reject a provider's queue
//! in one step, a spent daily quota blocks it until the reset, reported limits hold
//! calls before any 429, a token budget paces by tokens, a 413 splits the batch.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use batch_pacer::{BlockReason, Call, Event, Failure, Instant, Quota, Reply};
use sim::*;

fn texts(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("paragraph {i}")).collect()
}

/// A provider failing every call to `bad` with `failure`, answering others correctly.
fn failing_for(
    bad: &'static str,
    failure: impl Fn() -> Failure<String> + 'static,
) -> impl FnMut(&Call, Instant) -> Answer {
    move |call: &Call, _| {
        let outcome = if call.compat.provider_id == bad {
            Err(failure())
        } else {
            Ok(echo_reply(call))
        };
        Answer::After(Duration::from_millis(20.0), outcome)
    }
}

#[test]
fn a_settings_error_rejects_the_providers_queue_in_one_step() {
    for status in [401, 403, 404] {
        let mut sim = Sim::new(
            marker_options(&[("rate", 1.0), ("capacity", 1.0)]),
            failing_for("bad", move || http_error(status, None)),
        );
        let texts = texts(12);
        let bad: Vec<_> = texts
            .iter()
            .map(|t| sim.translate(&item_for("bad", t)))
            .collect();
        let good: Vec<_> = texts[..4]
            .iter()
            .map(|t| sim.translate(&item_for("good", t)))
            .collect();
        sim.drive();
        for t in &bad {
            assert_eq!(sim.code(*t), ErrorCode::ProviderError);
            let error = sim.result(*t).as_ref().unwrap_err();
            assert_eq!(error.status, Some(status));
            assert!(error.message.contains("check"), "{}", error.message);
        }
        for (t, text) in good.iter().zip(&texts) {
            assert_eq!(sim.ok(*t), echo(text));
        }
        let bad_calls = sim.calls.iter().filter(|c| c.provider_id == "bad").count();
        assert_eq!(bad_calls, 1, "status {status}: one call, not one per batch");
        assert!(sim.events.iter().any(|(_, e)| matches!(
            e,
            Event::Blocked { reason: BlockReason::Settings, status: Some(s), .. } if *s == status
        )));
        // The user may have fixed the key: a later item is sent again.
        let later = sim.translate(&item_for("bad", "again"));
        sim.drive();
        assert_eq!(sim.code(later), ErrorCode::ProviderError);
        assert_eq!(
            sim.calls.iter().filter(|c| c.provider_id == "bad").count(),
            2
        );
    }
}

#[test]
fn a_billing_error_rejects_the_queue_without_retries() {
    let billing = || {
        let mut f = http_error(429, None);
        f.quota = Some(Quota::Billing);
        f
    };
    let mut sim = Sim::new(
        marker_options(&[("rate", 1.0), ("capacity", 1.0)]),
        failing_for("p", billing),
    );
    let tickets: Vec<_> = texts(9).iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for t in &tickets {
        let error = sim.result(*t).as_ref().unwrap_err();
        assert_eq!(
            (error.code, error.status),
            (ErrorCode::ProviderError, Some(429))
        );
        assert!(error.message.contains("out of credit"), "{}", error.message);
    }
    assert_eq!(sim.calls.len(), 1);
    assert_eq!(sim.engine.stats().retries, 0);
}

#[test]
fn a_daily_quota_blocks_the_provider_until_its_reset() {
    let daily = || {
        let mut f = http_error(429, Some(3_600_000.0));
        f.quota = Some(Quota::Daily);
        f
    };
    let calls = std::rc::Rc::new(std::cell::Cell::new(0));
    let count = calls.clone();
    let mut sim = Sim::new(marker_options(&[]), move |call: &Call, _| {
        count.set(count.get() + 1);
        let outcome = if count.get() == 1 {
            Err(daily())
        } else {
            Ok(echo_reply(call))
        };
        Answer::After(Duration::from_millis(20.0), outcome)
    });
    let first: Vec<_> = texts(6).iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for t in &first {
        let error = sim.result(*t).as_ref().unwrap_err();
        assert_eq!(
            (error.code, error.status),
            (ErrorCode::ProviderError, Some(429))
        );
        let retry_in = error.retry_in.expect("the reset is known");
        assert!(retry_in.as_millis() > 3_500_000.0, "{retry_in:?}");
    }
    // Until the reset, items reject without a call, whatever their group.
    sim.drive_until(ms(1_800_000.0));
    let blocked = sim.translate(&item("during the block"));
    sim.drive_until(ms(1_800_100.0));
    assert_eq!(sim.code(blocked), ErrorCode::ProviderError);
    assert_eq!(calls.get(), 1);
    // A snapshot keeps it.
    let snapshot = sim.engine.snapshot(0.0);
    let saved = snapshot.providers[0].daily_block.as_ref().expect("saved");
    assert!(saved.reset_known && saved.blocked_for.as_millis() > 1_700_000.0);
    // After the reset, calls go out again.
    sim.drive_until(ms(3_700_000.0));
    let after = sim.translate(&item("after the reset"));
    sim.drive();
    assert_eq!(sim.ok(after), echo("after the reset"));
}

#[test]
fn a_retry_after_over_five_minutes_is_a_daily_block_too() {
    let mut sim = Sim::new(
        marker_options(&[]),
        failing_for("p", || http_error(429, Some(600_000.0))),
    );
    let t = sim.translate(&item("x"));
    sim.drive_until(ms(1000.0));
    assert_eq!(sim.code(t), ErrorCode::ProviderError);
    let again = sim.translate(&item("y"));
    sim.drive_until(ms(2000.0));
    assert_eq!(sim.code(again), ErrorCode::ProviderError);
    assert_eq!(sim.calls.len(), 1, "no call during the block");
}

#[test]
fn usage_is_counted_in_the_statistics() {
    let mut sim = Sim::new(marker_options(&[]), echo_provider(5.0));
    let t = sim.translate(&item("x"));
    sim.drive_until(ms(100.0));
    let id = sim.calls[0].id;
    let report = batch_pacer::Report {
        usage: Some(batch_pacer::Usage {
            input_tokens: 120.0,
            output_tokens: 30.0,
        }),
        ..Default::default()
    };
    sim.engine
        .handle_response_reported(ms(101.0), id, Ok(Reply::Text("X".into())), report);
    sim.drain();
    assert_eq!(sim.ok(t), "X");
    let stats = sim.engine.stats();
    assert_eq!((stats.input_tokens, stats.output_tokens), (120, 30));
}
