//! One gate for a call: the call that starts is the call whose cost was checked, against
//! every budget that applies. Priorities deal a call from several due batches; the call
//! so dealt must still fit the pacer's token budget and the shared budget, and rule 1.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use batch_pacer::budget::SharedBudget;
use batch_pacer::quota::{input_tokens, raw_cost};
use batch_pacer::{Call, Instant};
use proptest::prelude::*;
use sim::*;

/// A text of about `length` characters, distinct by `k`.
fn text(k: usize, length: usize) -> String {
    let mut t = format!("item {k}: ");
    while t.len() < length {
        t.push_str("words of a paragraph ");
    }
    t.truncate(length);
    t
}

fn echo_now(call: &Call, _: Instant) -> Answer {
    Answer::After(Duration::from_millis(40.0), Ok(echo_reply(call)))
}

/// Each call's start (ms) and estimated cost, as the budgets charge it (no usage is
/// reported, so the estimate is the charge).
fn charges(sim: &Sim) -> Vec<(f64, f64)> {
    sim.calls
        .iter()
        .map(|c| {
            let input: f64 = c
                .texts
                .iter()
                .map(|t| f64::from(input_tokens(t) as f32))
                .sum();
            (c.at.as_millis(), raw_cost(input, 0.0, c.is_batch))
        })
        .collect()
}

/// In every window, what started costs at most a full bucket plus its refill.
fn within(charges: &[(f64, f64)], per_minute: f64) -> Result<(), String> {
    for i in 0..charges.len() {
        let mut spent = 0.0;
        for j in i..charges.len() {
            spent += charges[j].1;
            let window = (charges[j].0 - charges[i].0) / 1000.0;
            let allowed = per_minute + per_minute / 60.0 * window;
            if spent > allowed * (1.0 + 1e-6) + 1e-6 {
                return Err(format!(
                    "{spent} tokens in [{}, {}] ms exceed {allowed}",
                    charges[i].0, charges[j].0
                ));
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn every_call_fits_rule_1_the_token_budget_and_the_shared_budget(
        per_minute in 1500.0..6000.0f64,
        shared_extra in 0.0..1.0f64,
        rate in prop::sample::select(vec![0.5, 2.0, 8.0]),
        capacity in 1..8u32,
        items in 1..6u32,
        arrivals in prop::collection::vec((0..3u8, 20..400usize, 0..3000u32, any::<bool>()), 4..40),
    ) {
        let shared_per_minute = per_minute * (1.0 + shared_extra);
        let budget = SharedBudget::new(100.0, 100.0, shared_per_minute);
        let opts = marker_options(&[
            ("rate", rate),
            ("capacity", capacity.into()),
            ("tokensPerMinute", per_minute),
            ("maxItemsPerBatch", items.into()),
        ]);
        let make = || {
            let mut sim = Sim::new(opts.clone(), echo_now);
            sim.engine.share_budget(budget.clone());
            sim
        };
        let (mut page, mut subtitles) = (make(), make());
        let mut order: Vec<_> = arrivals.iter().enumerate().collect();
        order.sort_by_key(|(_, a)| a.2);
        let mut next = 0;
        let mut tickets = Vec::new();
        let mut t = 0.0;
        while t <= 400_000.0 {
            while next < order.len() && f64::from(order[next].1 .2) <= t {
                let (k, &(priority, length, _, second)) = order[next];
                let body = text(k, length);
                let mut it = item(&body);
                it.priority = f64::from(priority);
                let sim = if second { &mut subtitles } else { &mut page };
                tickets.push((second, sim.translate(&it), body.clone()));
                next += 1;
            }
            page.drive_until(ms(t));
            subtitles.drive_until(ms(t));
            t += 50.0;
        }
        for (second, ticket, body) in &tickets {
            let sim = if *second { &subtitles } else { &page };
            prop_assert_eq!(sim.ok(*ticket), echo(body));
        }
        for sim in [&page, &subtitles] {
            // Rule 1 for each pacer's own bucket.
            let starts = sim.starts_ms();
            for i in 0..starts.len() {
                for j in i..starts.len() {
                    let allowed = f64::from(capacity) + rate * (starts[j] - starts[i]) / 1000.0;
                    prop_assert!(((j - i + 1) as f64) <= allowed + 1e-6);
                }
            }
            // Each pacer's token budget.
            within(&charges(sim), per_minute).map_err(TestCaseError::fail)?;
        }
        // The shared budget, both pacers together.
        let mut both = charges(&page);
        both.extend(charges(&subtitles));
        both.sort_by(|a, b| a.0.total_cmp(&b.0));
        within(&both, shared_per_minute).map_err(TestCaseError::fail)?;
    }
}
