//! Tests of the endpoint's adaptive in-flight limit (`super`).

use super::*;

#[test]
fn a_refusal_brings_the_limit_to_the_others_in_flight_and_growth_holds_a_window() {
    let e = Endpoint::new("test", 64);
    assert_eq!(e.limit(), 64);
    let mut permits: Vec<_> = (0..40).map(|_| e.acquire_until(None).unwrap()).collect();
    // A refusal with 39 others in flight: 39, not a blind half.
    assert!(
        permits
            .pop()
            .unwrap()
            .congested(LimitReason::RateLimited, "a", false)
    );
    assert_eq!(e.limit(), 39);
    // The refusals of one wave come back one by one: each leaves the
    // limit at the requests the server still holds.
    while permits.len() > 8 {
        assert!(
            permits
                .pop()
                .unwrap()
                .congested(LimitReason::RateLimited, "a", false)
        );
    }
    assert_eq!(e.limit(), 8);
    // Answers to requests sent before the decrease do not grow it.
    for p in permits.drain(..) {
        p.succeeded("a");
    }
    assert_eq!(e.limit(), 8);
    // Answers while the limit is not in use do not grow it.
    for _ in 0..40 {
        e.acquire_until(None).unwrap().succeeded("a");
    }
    assert_eq!(e.limit(), 8, "not grown while not in use");
    // In use (7 held, the 8th answered): growth holds one window, then
    // adds one slot a window.
    let mut held: Vec<_> = (0..7).map(|_| e.acquire_until(None).unwrap()).collect();
    for _ in 0..15 {
        e.acquire_until(None).unwrap().succeeded("a");
    }
    assert_eq!(e.limit(), 8, "held for a window");
    e.acquire_until(None).unwrap().succeeded("a");
    assert_eq!(e.limit(), 9);
    held.push(e.acquire_until(None).unwrap());
    for _ in 0..9 {
        e.acquire_until(None).unwrap().succeeded("a");
    }
    assert_eq!(e.limit(), 10);
    drop(held);
    // Alone and refused: nothing to queue behind, and nothing said about
    // how many at once the endpoint takes (issue 28): the limit stays.
    let p = e.acquire_until(None).unwrap();
    assert!(!p.congested(LimitReason::Overloaded, "a", false));
    assert_eq!(e.limit(), 10);
    assert_eq!(e.peak_in_flight(), 40);
}

/// Issue 28: one 429 on a plan call, alone in flight, pinned a round of
/// 2048 members to one request at a time; and a refusal never brings the
/// limit below what the endpoint held without refusals.
#[test]
fn a_lone_refusal_keeps_the_limit_and_what_was_held_is_a_floor() {
    let e = Endpoint::new("test", 64);
    e.acquire_until(None)
        .unwrap()
        .congested(LimitReason::RateLimited, "plan", false);
    assert_eq!(e.limit(), 64, "a lone refusal");
    // 20 held at once, all answered.
    let permits: Vec<_> = (0..20).map(|_| e.acquire_until(None).unwrap()).collect();
    for p in permits {
        p.succeeded("a");
    }
    // 30 in flight, and every one refused, one after another (a rate
    // limit's wave): the limit comes down no lower than 20.
    let mut permits: Vec<_> = (0..30).map(|_| e.acquire_until(None).unwrap()).collect();
    while let Some(p) = permits.pop() {
        p.congested(LimitReason::RateLimited, "a", false);
    }
    assert_eq!(e.limit(), 20);
    // A new wave refused at 4 in flight, within what was held: maybe
    // noise (two arrivals at once); the floor holds.
    let mut permits: Vec<_> = (0..4).map(|_| e.acquire_until(None).unwrap()).collect();
    while let Some(p) = permits.pop() {
        p.congested(LimitReason::RateLimited, "a", false);
    }
    assert_eq!(e.limit(), 20);
    // A second one, with no answer showing 20 again: the floor is stale
    // and halves (a server that really takes fewer now is followed down,
    // a wave at a time).
    let mut permits: Vec<_> = (0..4).map(|_| e.acquire_until(None).unwrap()).collect();
    while let Some(p) = permits.pop() {
        p.congested(LimitReason::RateLimited, "a", false);
    }
    assert_eq!(e.limit(), 10);
}

/// Issue 14: a wave of refusals was told as one change per step down
/// (15 to 40 a wave); now as the first step at once and the rest as
/// one change when the wave is over, every change starting where the
/// one before ended.
#[test]
fn a_wave_of_refusals_is_told_as_two_changes() {
    let e = Arc::new(Endpoint::new("test", 64));
    let told = Arc::new(Mutex::new(Vec::new()));
    let t = Arc::clone(&told);
    let _watch = e.watch(Arc::new(move |c: &LimitChange| {
        t.lock().push((c.from, c.to, c.reason))
    }));
    let mut permits: Vec<_> = (0..40).map(|_| e.acquire_until(None).unwrap()).collect();
    // 32 of the 40 are refused, one after another.
    for _ in 0..32 {
        let p = permits.pop().unwrap();
        assert!(p.congested(LimitReason::RateLimited, "a", false));
    }
    assert_eq!(e.limit(), 8);
    assert_eq!(
        *told.lock(),
        vec![(64, 39, LimitReason::RateLimited)],
        "the first step at once, the rest held while the wave is out"
    );
    // A retry sent during the wave neither ends it nor is part of it.
    permits.pop().unwrap().succeeded("a");
    drop(e.acquire_until(None).unwrap());
    assert_eq!(told.lock().len(), 1);
    for p in permits.drain(..) {
        p.succeeded("a");
    }
    assert_eq!(
        *told.lock(),
        vec![
            (64, 39, LimitReason::RateLimited),
            (39, 8, LimitReason::RateLimited)
        ],
        "the wave is over: its other 30 steps as one change"
    );
    // A refusal of a request sent after the wave is a wave of its own.
    let mut permits: Vec<_> = (0..8).map(|_| e.acquire_until(None).unwrap()).collect();
    permits
        .pop()
        .unwrap()
        .congested(LimitReason::Overloaded, "a", false);
    permits
        .pop()
        .unwrap()
        .congested(LimitReason::Overloaded, "a", false);
    assert_eq!(
        told.lock()[2..],
        [(8, 7, LimitReason::Overloaded)],
        "told at once"
    );
    drop(permits);
    // The second refusal found the limit at what the 7 answers above
    // showed the endpoint held at once: a floor, no step down.
    assert_eq!(told.lock()[2..], [(8, 7, LimitReason::Overloaded)]);
    assert_eq!(e.changes(), 33, "every step is still counted");
}

#[test]
fn answers_far_slower_than_the_floor_decrease_the_limit() {
    let e = Endpoint::new("test", 16);
    for _ in 0..5 {
        let mut p = e.acquire_until(None).unwrap();
        p.sending();
        std::thread::sleep(Duration::from_millis(2));
        p.succeeded("a");
    }
    assert_eq!(e.limit(), 16);
    for _ in 0..30 {
        let p = e.acquire_until(None).unwrap();
        std::thread::sleep(Duration::from_millis(120));
        p.succeeded("a");
        if e.limit() < 16 {
            break;
        }
    }
    assert_eq!(e.limit(), 1, "one in flight, halved");
}

#[test]
fn endpoints_are_shared_by_url_and_key() {
    let a = Endpoint::shared("http://127.0.0.1:1/v1/x", Some("k1"), 8);
    let b = Endpoint::shared("http://127.0.0.1:1/v1/x", Some("k1"), 8);
    let c = Endpoint::shared("http://127.0.0.1:1/v1/x", Some("k2"), 8);
    assert!(Arc::ptr_eq(&a, &b));
    assert!(!Arc::ptr_eq(&a, &c));
    let changes = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&changes);
    let watch = b.watch(Arc::new(move |c: &LimitChange| seen.lock().push(c.clone())));
    let other = a.acquire_until(None).unwrap();
    let p = a.acquire_until(None).unwrap();
    p.congested(LimitReason::RateLimited, "m1", false);
    drop((p, other));
    assert_eq!(changes.lock().len(), 1);
    assert_eq!(changes.lock()[0].to, 1);
    drop(watch);
    for _ in 0..2 {
        a.acquire_until(None).unwrap().succeeded("m1");
    }
    assert_eq!(a.limit(), 2, "grown again, after a window's hold");
    let other = a.acquire_until(None).unwrap();
    let p = a.acquire_until(None).unwrap();
    p.congested(LimitReason::RateLimited, "m1", false);
    drop(other);
    assert_eq!(a.limit(), 1);
    assert_eq!(
        changes.lock().len(),
        1,
        "no calls after the watch is dropped"
    );
    assert!(!format!("{a:?}").contains("k1"));
}

/// Issue 28, finding 6: a wave of 429s with `Retry-After` (each agent
/// refused once) walked the limit from 1024 down to 1, and the round then
/// grew back one slot a window (2.6 s became 219.6 s). A refusal that says
/// when to come back is about time: the pause answers it, the limit stays;
/// one without it still brings the limit down.
#[test]
fn a_refusal_with_retry_after_leaves_the_limit() {
    let e = Endpoint::new("test", 64);
    let mut permits: Vec<_> = (0..64).map(|_| e.acquire_until(None).unwrap()).collect();
    while let Some(p) = permits.pop() {
        assert!(
            !p.congested(LimitReason::RateLimited, "a", true),
            "no queue"
        );
    }
    assert_eq!(e.limit(), 64);
    assert_eq!(e.changes(), 0);
    let mut permits: Vec<_> = (0..64).map(|_| e.acquire_until(None).unwrap()).collect();
    while let Some(p) = permits.pop() {
        p.congested(LimitReason::RateLimited, "a", false);
    }
    assert_eq!(e.limit(), 1);
}
