//! One budget for two flows: a page pacer and a subtitle pacer that send to the same
//! account share its request and token budget, and each provider's 429 pause.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use batch_pacer::budget::SharedBudget;
use batch_pacer::Call;
use sim::*;

/// Two pacers on one budget, stepped together on one virtual clock.
fn pair(budget: &SharedBudget, provider: fn(&Call, Instant) -> Answer) -> (Sim, Sim) {
    let make = || {
        let mut sim = Sim::new(marker_options(&[("maxItemsPerBatch", 1.0)]), provider);
        sim.engine.share_budget(budget.clone());
        sim
    };
    (make(), make())
}

fn step_both(a: &mut Sim, b: &mut Sim, until_ms: f64) {
    let mut t = 0.0;
    while t <= until_ms {
        a.drive_until(ms(t));
        b.drive_until(ms(t));
        t += 10.0;
    }
}

use batch_pacer::Instant;

fn echo_now(call: &Call, _: Instant) -> Answer {
    Answer::After(Duration::from_millis(5.0), Ok(echo_reply(call)))
}

#[test]
fn two_pacers_on_one_budget_never_exceed_it_together() {
    // The account allows 2 calls a second with a burst of 2; each pacer alone would
    // allow 8 a second with a burst of 60.
    let budget = SharedBudget::new(2.0, 2.0, 0.0);
    let (mut page, mut subtitles) = pair(&budget, echo_now);
    let texts: Vec<String> = (0..20).map(|i| format!("line {i}")).collect();
    let a: Vec<_> = texts.iter().map(|t| page.translate(&item(t))).collect();
    let b: Vec<_> = texts
        .iter()
        .map(|t| subtitles.translate(&item(t)))
        .collect();
    step_both(&mut page, &mut subtitles, 30_000.0);
    for (t, text) in a.iter().zip(&texts) {
        assert_eq!(page.ok(*t), echo(text));
    }
    for (t, text) in b.iter().zip(&texts) {
        assert_eq!(subtitles.ok(*t), echo(text));
    }
    let mut starts: Vec<f64> = page.starts_ms();
    starts.extend(subtitles.starts_ms());
    starts.sort_by(f64::total_cmp);
    // Rule 1 over both pacers: in any window of w seconds, at most 2 + 2·w calls.
    for (i, first) in starts.iter().enumerate() {
        for (j, last) in starts.iter().enumerate().skip(i) {
            let w = (last - first) / 1000.0;
            let count = (j - i + 1) as f64;
            assert!(count <= 2.0 + 2.0 * w + 1e-6, "{count} calls in {w} s");
        }
    }
    // The backlog of 40 drains at the budget's rate, not slower.
    assert!(*starts.last().unwrap() <= 19_500.0, "{starts:?}");
}

fn rate_limited_once(call: &Call, _: Instant) -> Answer {
    if call.texts[0] == "first" && call.attempt == 0 {
        Answer::After(
            Duration::from_millis(5.0),
            Err(http_error(429, Some(10_000.0))),
        )
    } else {
        Answer::After(Duration::from_millis(5.0), Ok(echo_reply(call)))
    }
}

#[test]
fn a_429_met_by_one_pacer_pauses_the_provider_for_both() {
    let budget = SharedBudget::new(8.0, 60.0, 0.0);
    let (mut page, mut subtitles) = pair(&budget, rate_limited_once);
    let first = page.translate(&item("first"));
    step_both(&mut page, &mut subtitles, 1_000.0);
    let other = subtitles.translate(&item("other"));
    step_both(&mut page, &mut subtitles, 20_000.0);
    assert_eq!(page.ok(first), echo("first"));
    assert_eq!(subtitles.ok(other), echo("other"));
    // The subtitle pacer waited for the page pacer's pause (from 5 ms to 10.005 s).
    let start = subtitles.starts_ms()[0];
    assert!(start >= 10_005.0, "sent at {start} ms, inside the pause");
}

#[test]
fn pacers_with_their_own_budgets_do_not_share() {
    let (mut page, mut subtitles) = (
        Sim::new(
            marker_options(&[("rate", 2.0), ("capacity", 2.0), ("maxItemsPerBatch", 1.0)]),
            echo_now,
        ),
        Sim::new(
            marker_options(&[("rate", 2.0), ("capacity", 2.0), ("maxItemsPerBatch", 1.0)]),
            echo_now,
        ),
    );
    for i in 0..4 {
        page.translate(&item(&format!("p{i}")));
        subtitles.translate(&item(&format!("s{i}")));
    }
    step_both(&mut page, &mut subtitles, 200.0);
    // Each has its own burst of two, so four calls start at once between them.
    let at_once = page.starts_ms().len() + subtitles.starts_ms().len();
    assert_eq!(at_once, 4);
}
