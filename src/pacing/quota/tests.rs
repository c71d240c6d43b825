//! The unit tests of a provider's quota: reported windows, the calls started since, and
//! the scaling of estimates.

use super::*;

fn at(ms: f64) -> Instant {
    Instant::from_millis(ms)
}

/// A report read as by a pacer alone, for a call that was not admitted.
fn report(
    quota: &mut ProviderQuota,
    now: Instant,
    ticket: u64,
    cost: f64,
    limits: &ReportedLimits,
) {
    quota.report(now, (ticket, cost), limits, &Reading::default());
}

fn limits(requests: Option<(f64, f64)>, tokens: Option<(f64, f64)>) -> ReportedLimits {
    ReportedLimits {
        requests_remaining: requests.map(|r| r.0),
        requests_reset: requests.map(|r| Duration::from_millis(r.1)),
        tokens_remaining: tokens.map(|t| t.0),
        tokens_reset: tokens.map(|t| Duration::from_millis(t.1)),
        requests_limit: None,
        tokens_limit: None,
    }
}

#[test]
fn reported_limits_hold_calls_until_there_is_room() {
    let mut quota = ProviderQuota::default();
    let ticket = quota.spend(at(0.0), 100.0);
    let reported = limits(Some((1.0, 2000.0)), Some((500.0, 1000.0)));
    report(&mut quota, at(0.0), ticket, 100.0, &reported);
    assert_eq!(quota.held(at(0.0), 400.0), None);
    assert_eq!(quota.held(at(0.0), 600.0), Some((at(1000.0), Held::Tokens)));
    quota.spend(at(0.0), 400.0);
    assert_eq!(
        quota.held(at(10.0), 10.0),
        Some((at(2000.0), Held::Requests))
    );
    assert_eq!(quota.held(at(2000.0), 10.0), None);
}

#[test]
fn a_window_reported_whole_refills_in_proportion_until_its_reset() {
    // 30 a minute, reported whole: none is left for 60 s.
    let mut quota = ProviderQuota::default();
    let first = quota.spend(at(0.0), 0.0);
    let whole = ReportedLimits {
        requests_limit: Some(30.0),
        ..limits(Some((0.0, 60_000.0)), None)
    };
    report(&mut quota, at(300.0), first, 0.0, &whole);
    // Not the whole minute: one request's room comes back every 2 s.
    assert_eq!(
        quota.held(at(300.0), 0.0),
        Some((at(2300.0), Held::Requests))
    );
    assert_eq!(quota.held(at(2300.0), 0.0), None);
}

#[test]
fn without_the_whole_window_calls_wait_for_the_reset_and_nothing_is_guessed() {
    // An earlier report left 900,000 tokens; this one leaves 100 for 5 s.
    let mut quota = ProviderQuota::default();
    let first = quota.spend(at(0.0), 0.0);
    report(
        &mut quota,
        at(0.0),
        first,
        0.0,
        &limits(None, Some((900_000.0, 1000.0))),
    );
    let second = quota.spend(at(0.0), 0.0);
    report(
        &mut quota,
        at(100.0),
        second,
        0.0,
        &limits(None, Some((100.0, 5000.0))),
    );
    assert_eq!(
        quota.held(at(100.0), 4000.0),
        Some((at(5100.0), Held::Tokens))
    );
    assert_eq!(quota.held(at(5100.0), 4000.0), None);
    // No room left, no window: the next call waits the reset out (1.5 s).
    let mut quota = ProviderQuota::default();
    let first = quota.spend(at(0.0), 0.0);
    report(
        &mut quota,
        at(0.0),
        first,
        0.0,
        &limits(None, Some((0.0, 1500.0))),
    );
    assert_eq!(quota.held(at(0.0), 10.0), Some((at(1500.0), Held::Tokens)));
}

#[test]
fn calls_started_after_the_reporting_call_count_against_its_report() {
    let mut quota = ProviderQuota::default();
    let first = quota.spend(at(0.0), 0.0);
    report(
        &mut quota,
        at(0.0),
        first,
        0.0,
        &limits(Some((9.0, 10_000.0)), None),
    );
    let reporting = quota.spend(at(0.0), 0.0);
    let later: Vec<u64> = (0..3).map(|_| quota.spend(at(0.0), 0.0)).collect();
    // The report of `reporting` knew nothing of the three calls after it.
    report(
        &mut quota,
        at(100.0),
        reporting,
        0.0,
        &limits(Some((3.0, 10_000.0)), None),
    );
    assert_eq!(
        quota.held(at(100.0), 0.0).map(|h| h.1),
        Some(Held::Requests)
    );
    // A report older than the one held changes nothing.
    report(
        &mut quota,
        at(200.0),
        first,
        0.0,
        &limits(Some((9.0, 10_000.0)), None),
    );
    assert_eq!(
        quota.held(at(200.0), 0.0).map(|h| h.1),
        Some(Held::Requests)
    );
    // The latest call's report knows them all.
    let last = *later.last().unwrap();
    report(
        &mut quota,
        at(300.0),
        last,
        0.0,
        &limits(Some((2.0, 10_000.0)), None),
    );
    assert_eq!(quota.held(at(300.0), 0.0), None);
}

#[test]
fn contradictory_reports_are_clamped_or_ignored() {
    let mut quota = ProviderQuota::default();
    let ticket = quota.spend(at(0.0), 0.0);
    // Remaining that is not a count is ignored.
    report(
        &mut quota,
        at(0.0),
        ticket,
        0.0,
        &limits(Some((f64::NAN, 1000.0)), None),
    );
    report(
        &mut quota,
        at(0.0),
        ticket,
        0.0,
        &limits(Some((-3.0, 1000.0)), None),
    );
    assert_eq!(quota.held(at(0.0), 0.0), None);
    // A reset years away holds no longer than the longest reset.
    let years = 3.0e11;
    report(
        &mut quota,
        at(0.0),
        ticket,
        0.0,
        &limits(Some((0.0, years)), None),
    );
    let (until, _) = quota.held(at(0.0), 0.0).unwrap();
    assert!(until <= at(0.0) + MAX_RESET, "{until:?}");
    // A reset in the past (0) reads as an unknown one: a second, not a stall.
    let mut quota = ProviderQuota::default();
    let ticket = quota.spend(at(0.0), 0.0);
    report(
        &mut quota,
        at(0.0),
        ticket,
        0.0,
        &limits(Some((0.0, 0.0)), None),
    );
    assert_eq!(quota.held(at(0.0), 0.0), Some((at(1000.0), Held::Requests)));
}

#[test]
fn usage_scales_the_estimates() {
    let mut quota = ProviderQuota::default();
    for _ in 0..20 {
        quota.learn(
            100.0,
            &Usage {
                input_tokens: 150.0,
                output_tokens: 50.0,
            },
        );
    }
    assert!((quota.cost(100.0) - 200.0).abs() < 1.0);
    // A call counted higher than the average raises the estimate at once, then it
    // eases back: an estimate below what the provider counts would be a 429.
    let usage = |total: f64| Usage {
        input_tokens: total,
        output_tokens: 0.0,
    };
    quota.learn(100.0, &usage(210.0));
    assert!((quota.cost(100.0) - 210.0).abs() < 1e-9);
    for _ in 0..20 {
        quota.learn(100.0, &usage(200.0));
    }
    assert!((quota.cost(100.0) - 200.0).abs() < 1.0);
}
