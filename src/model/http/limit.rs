//! The adaptive in-flight limit of an endpoint (the hard cap an explicit
//! `max_in_flight` sets on one model is [`super::cap`]; the changes
//! watchers are told of are [`super::watch`]).
//!
//! [`Endpoint`] is the adaptive limit of one endpoint (base URL + key),
//! shared by every model that points at it, in this process: an AIMD
//! window, as TCP's congestion control and Netflix's concurrency-limits
//! keep one. It starts generous (at its ceiling: a round goes out whole).
//! A 429 or 503 brings it down to the requests the server took: the others
//! still in flight when the refusal came back (never below one, nor below
//! the most the endpoint demonstrably held without a refusal: answered
//! requests all in flight at one moment; a request refused while alone
//! says nothing about concurrency and leaves the limit where it is, its
//! retry backs off instead, and a refusal with `Retry-After` is about
//! time, answered by the pause, not by the limit); no blind
//! halving, which against a server that refuses above K saws between K/2
//! and K. Answers arriving well slower than their recent floor (a server
//! queueing) halve it, at most once per window (the answers to requests
//! sent before the last decrease do not count again). After a decrease it
//! holds for one window of successes, then grows by one slot per window of
//! successes that came back while the limit was full (a limit not in use
//! is not grown). A `Retry-After` pauses every new request to the endpoint
//! until it ends.
//!
//! Watchers hear of a wave of refusals as one or two changes, not one per
//! step down: the wave's first refusal is told at once (the limit to the
//! requests then in flight), and the steps down the refusals of requests
//! already in flight when it began make are told as one change when the
//! last of those requests has come back (or before any other change, so
//! that every change told starts where the one before it ended).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

pub use super::watch::{LimitChange, LimitReason, LimitWatch, LimitWatcher};
use fds::fd_capped;

/// The ceiling of an endpoint's adaptive limit when no model sets
/// `max_in_flight` (a model's explicit value is a hard cap of its own).
pub(crate) const DEFAULT_CEILING: usize = 1024;

/// An answer slower than this many times the endpoint's latency floor (on
/// average, and by at least [`LATENCY_SLACK`]) means the server is queueing.
const LATENCY_FACTOR: f64 = 3.0;

/// Latency growth below this is noise, whatever the factor.
const LATENCY_SLACK: Duration = Duration::from_millis(50);

/// Weight of one answer in the latency average.
const EWMA_WEIGHT: f64 = 0.1;

/// How fast the latency floor forgets its minimum, per answer (so that a
/// server that became slower for good sets a new floor).
const FLOOR_DRIFT: f64 = 0.01;

/// Answered requests remembered to tell what the endpoint held at once.
const HISTORY: usize = DEFAULT_CEILING;

/// The key of an endpoint in the registry: the URL and a hash of the key
/// (the key itself is never kept twice, nor printed).
#[derive(Clone, PartialEq, Eq, Hash)]
struct EndpointKey {
    url: String,
    key_hash: u64,
}

static REGISTRY: LazyLock<Mutex<HashMap<EndpointKey, Weak<Endpoint>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The adaptive limit of one endpoint, shared by every model using it,
/// and the endpoint's connection pool (the connections a round opens are
/// reused by the next, whichever model name sends it).
pub(crate) struct Endpoint {
    /// The URL without credentials (events and logs).
    name: String,
    agents: super::agents::Agents,
    state: Mutex<State>,
    freed: Condvar,
    watchers: Mutex<Vec<(u64, LimitWatcher)>>,
    next_watch: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.state.lock();
        f.debug_struct("Endpoint")
            .field("name", &self.name)
            .field("limit", &s.limit())
            .field("in_flight", &s.in_flight)
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct State {
    /// The limit, before the ceiling clamps it.
    window: usize,
    ceiling: usize,
    in_flight: usize,
    peak_in_flight: usize,
    /// When the last decrease happened: answers to requests sent before it
    /// neither grow the window nor halve it again for latency.
    last_decrease: Option<Instant>,
    /// Successes (of requests sent after the last decrease) since the
    /// window last changed; the window grows by one when they reach it.
    /// Starts at minus one window after a decrease: growth holds a window.
    credit: i64,
    /// No request is sent before this (`Retry-After`).
    paused_until: Option<Instant>,
    /// The refusals in progress, if any, and the changes they made that
    /// no watcher was told of yet.
    wave: Option<Wave>,
    /// How many waves began so far (a permit keeps the count it saw).
    waves: u64,
    /// The lowest recent latency, in seconds.
    floor: Option<f64>,
    /// The average recent latency, in seconds.
    average: Option<f64>,
    changes: u64,
    /// The most requests in flight at once that the endpoint demonstrably
    /// held: answered requests all in flight at one moment (when one of
    /// them was sent), with no refusal since it was sent. A refusal brings the limit no lower than it; a wave of
    /// refusals that begins at or below it halves it.
    held: usize,
    /// A wave began at or below `held` (the next one halves it).
    doubted: bool,
    /// How many times that happened (a permit keeps the count it saw: a
    /// refusal of a request sent before the doubt is the same crowd).
    doubts: u64,
    /// When the last [`HISTORY`] answered requests were sent and answered.
    answered: std::collections::VecDeque<(Instant, Instant)>,
}

impl State {
    fn limit(&self) -> usize {
        self.window.clamp(1, self.ceiling)
    }

    /// The change the current wave made that is not told yet (taken: the
    /// caller tells it).
    fn untold(&mut self) -> Option<LimitChange> {
        self.wave.as_mut().and_then(|w| w.untold.take())
    }
}

/// A wave of refusals: it began with a refusal while other requests were
/// in flight, and ends when the last of them has come back.
#[derive(Debug)]
struct Wave {
    /// Its number (`State::waves` when it began).
    number: u64,
    /// Requests in flight when it began that have not come back yet.
    outstanding: usize,
    /// Steps down since the last change told, as one change.
    untold: Option<LimitChange>,
}

/// A held slot of an [`Endpoint`]. Report how the request went with
/// [`EndpointPermit::succeeded`] or [`EndpointPermit::congested`];
/// dropping it frees the slot either way.
pub(crate) struct EndpointPermit<'a> {
    endpoint: &'a Endpoint,
    sent: Instant,
    /// `State::waves` when the slot was taken: a request in flight when a
    /// wave began has a lower count than the wave's number.
    waves: u64,
    /// `State::doubts` when the slot was taken.
    doubts: u64,
}

impl Endpoint {
    /// The endpoint at `url` with the API key `key`, shared with every
    /// other model in this process that uses the same pair; its ceiling
    /// rises to `ceiling` if that is higher than what it had (its pool of
    /// idle connections keeps the size it was made with: at least
    /// [`DEFAULT_CEILING`]).
    pub(crate) fn shared(url: &str, key: Option<&str>, ceiling: usize) -> Arc<Endpoint> {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.unwrap_or("").hash(&mut h);
        let k = EndpointKey {
            url: url.to_string(),
            key_hash: h.finish(),
        };
        let ceiling = fd_capped(&super::redact_url(url), ceiling);
        let mut registry = REGISTRY.lock();
        registry.retain(|_, e| e.strong_count() > 0);
        if let Some(e) = registry.get(&k).and_then(Weak::upgrade) {
            let mut s = e.state.lock();
            if ceiling > s.ceiling {
                // Still pristine: start at the new ceiling too.
                if s.last_decrease.is_none() && s.window == s.ceiling {
                    s.window = ceiling;
                }
                s.ceiling = ceiling;
            }
            drop(s);
            return e;
        }
        let e = Arc::new(Endpoint::new(&super::redact_url(url), ceiling));
        registry.insert(k, Arc::downgrade(&e));
        e
    }

    /// A limit of its own (not in the registry), starting at `ceiling`
    /// (at most what the process's open-file limit leaves room for).
    pub(crate) fn new(name: &str, ceiling: usize) -> Endpoint {
        let ceiling = fd_capped(name, ceiling);
        Endpoint {
            name: name.to_string(),
            agents: super::agents::Agents::new(ceiling.max(DEFAULT_CEILING)),
            state: Mutex::new(State {
                window: ceiling,
                ceiling,
                in_flight: 0,
                peak_in_flight: 0,
                last_decrease: None,
                credit: 0,
                paused_until: None,
                wave: None,
                waves: 0,
                floor: None,
                average: None,
                changes: 0,
                held: 0,
                doubted: false,
                doubts: 0,
                answered: std::collections::VecDeque::new(),
            }),
            freed: Condvar::new(),
            watchers: Mutex::new(Vec::new()),
            next_watch: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The endpoint's URL, without credentials.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Ends the watch `id`.
    pub(crate) fn unwatch(&self, id: u64) {
        self.watchers.lock().retain(|(w, _)| *w != id);
    }

    /// Closes the endpoint's idle connections in the background (see
    /// [`super::agents::Agents::release_idle`]).
    pub(crate) fn release_idle(&self, keep: &str) {
        self.agents.release_idle(keep);
    }

    /// The current limit.
    pub(crate) fn limit(&self) -> usize {
        self.state.lock().limit()
    }

    /// The most requests in flight at once so far.
    pub(crate) fn peak_in_flight(&self) -> usize {
        self.state.lock().peak_in_flight
    }

    /// How many times the limit changed so far.
    pub(crate) fn changes(&self) -> u64 {
        self.state.lock().changes
    }

    /// Calls `f` on every change of the limit until the watch is dropped.
    pub(crate) fn watch(self: &Arc<Self>, f: LimitWatcher) -> LimitWatch {
        let id = self
            .next_watch
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.watchers.lock().push((id, f));
        LimitWatch {
            endpoint: Arc::clone(self),
            id,
        }
    }

    /// How long new requests must still wait for a `Retry-After`.
    pub(crate) fn pause_left(&self) -> Option<Duration> {
        let s = self.state.lock();
        s.paused_until
            .map(|t| t.saturating_duration_since(Instant::now()))
            .filter(|d| !d.is_zero())
    }

    /// No new request before `until` (the server sent `Retry-After`).
    pub(crate) fn pause_until(&self, until: Instant) {
        let mut s = self.state.lock();
        if s.paused_until.is_none_or(|t| t < until) {
            s.paused_until = Some(until);
        }
    }

    /// Blocks until a slot is free and takes it; gives up at `deadline`.
    pub(crate) fn acquire_until(&self, deadline: Option<Instant>) -> Option<EndpointPermit<'_>> {
        let mut s = self.state.lock();
        while s.in_flight >= s.limit() {
            match deadline {
                None => self.freed.wait(&mut s),
                Some(d) => {
                    if self.freed.wait_until(&mut s, d).timed_out() && s.in_flight >= s.limit() {
                        return None;
                    }
                }
            }
        }
        s.in_flight += 1;
        s.peak_in_flight = s.peak_in_flight.max(s.in_flight);
        Some(EndpointPermit {
            endpoint: self,
            sent: Instant::now(),
            waves: s.waves,
            doubts: s.doubts,
        })
    }

    /// Tells every watcher of `changes`, in order.
    fn notify_all(&self, changes: impl IntoIterator<Item = LimitChange>) {
        for change in changes {
            self.notify(change);
        }
    }

    fn notify(&self, change: LimitChange) {
        let watchers: Vec<LimitWatcher> = self
            .watchers
            .lock()
            .iter()
            .map(|(_, f)| Arc::clone(f))
            .collect();
        log::info!(
            "{}: in-flight limit {} -> {} ({}, {} in flight)",
            change.endpoint,
            change.from,
            change.to,
            change.reason.as_str(),
            change.in_flight
        );
        for f in watchers {
            f(&change);
        }
    }
}

impl EndpointPermit<'_> {
    /// The HTTP agent the calls of the agent named `caller` go out
    /// through: its shard of the endpoint's connection pool.
    pub(crate) fn agent(&self, caller: &str) -> ureq::Agent {
        self.endpoint.agents.for_caller(caller)
    }

    /// Restarts the latency clock (the request is about to go out).
    pub(crate) fn sending(&mut self) {
        self.sent = Instant::now();
    }

    /// The server answered (status 2xx) after `latency` since sending:
    /// grow by one slot a window (after a window's hold following a
    /// decrease), unless the answer was well slower than the recent floor.
    pub(crate) fn succeeded(&self, agent: &str) {
        let latency = self.sent.elapsed().as_secs_f64();
        let e = self.endpoint;
        let mut s = e.state.lock();
        let floor = match s.floor {
            Some(f) if latency >= f => f + (latency - f) * FLOOR_DRIFT,
            _ => latency,
        };
        s.floor = Some(floor);
        let average = s
            .average
            .map_or(latency, |a| a + (latency - a) * EWMA_WEIGHT);
        s.average = Some(average);
        // What the endpoint demonstrably held: this request and the
        // answered ones in flight when it was sent (counting every
        // request then in flight would count those about to be refused;
        // refusals of others meanwhile take nothing from what was held).
        let now = Instant::now();
        if s.answered.len() >= HISTORY {
            s.answered.pop_front();
        }
        s.answered.push_back((self.sent, now));
        let sent = self.sent;
        let together = s
            .answered
            .iter()
            .filter(|&&(from, to)| from <= sent && to >= sent)
            .count();
        if together >= s.held {
            s.doubted = false;
        }
        s.held = s.held.max(together);
        if !self.after_last_decrease(&s) {
            return;
        }
        let slow = average > floor * LATENCY_FACTOR
            && average - floor > LATENCY_SLACK.as_secs_f64()
            && latency > floor * LATENCY_FACTOR;
        if slow {
            let base = s.in_flight.min(s.limit()).max(1);
            let change = decrease(
                &mut s,
                &e.name,
                (base / 2).max(1),
                LimitReason::Latency,
                agent,
            );
            // The average restarts from the floor: the slower answers
            // already counted once.
            s.average = Some(floor);
            let untold = s.untold();
            drop(s);
            e.notify_all(untold.into_iter().chain(change));
            return;
        }
        // Only a limit in use grows: answers while fewer were in flight
        // say nothing about one more (the end of a round would otherwise
        // grow it past what the server takes, untested).
        if s.window >= s.ceiling || s.in_flight < s.limit() {
            return;
        }
        s.credit += 1;
        if s.credit < s.window as i64 {
            return;
        }
        let before = s.limit();
        s.window += 1;
        s.credit = 0;
        s.changes += 1;
        let change = LimitChange {
            endpoint: e.name.clone(),
            from: before,
            to: s.limit(),
            in_flight: s.in_flight,
            reason: LimitReason::Growth,
            agent: agent.to_string(),
        };
        let untold = s.untold();
        drop(s);
        e.notify_all(untold.into_iter().chain([change]));
    }

    /// The server answered 429 or 503: the limit comes down to the other
    /// requests in flight now (those the server took; at least one), but
    /// not below what the endpoint demonstrably held, and not at all for
    /// a request refused alone.
    /// Returns whether the retry should wait for one of them to end (a
    /// slot) rather than sleep a backoff: it should when the limit came
    /// down to them.
    ///
    /// The first refusal of a wave is told at once; the steps down of
    /// refusals of requests sent before it are told together when the
    /// wave ends (see the module's docs).
    pub(crate) fn congested(&self, reason: LimitReason, agent: &str, retry_after: bool) -> bool {
        // A refusal that says when to come back is about time, not about
        // how many at once: the `Retry-After` pause (every new request to
        // the endpoint waits it out) is the answer to it, and the limit
        // stays (issue 28: a wave of them, each agent refused once, took
        // a round of 1024 members from 2.6 s to 219.6 s).
        if retry_after {
            return false;
        }
        let e = self.endpoint;
        let mut s = e.state.lock();
        let others = s.in_flight.saturating_sub(1);
        let waves = self.waves;
        let new_wave = s.wave.as_ref().is_none_or(|w| waves >= w.number);
        // Two waves that begin at or below what the endpoint held, with
        // no answer between them showing it again, say that is stale: it
        // halves (a wave at a time, not a refusal at a time). One such
        // wave may be two requests arriving together at a server that
        // counts the refused one too.
        if new_wave && s.in_flight <= s.held {
            if !s.doubted {
                s.doubted = true;
                s.doubts += 1;
            } else if self.doubts == s.doubts {
                // Sent after the first: a wave of its own.
                s.held = others.max(s.held / 2);
                s.doubted = false;
            }
        }
        // Refused alone: nothing says how many at once the endpoint takes
        // (a rate limit, a plan call refused once): the retry backs off,
        // the limit stays. Else it comes down to the others in flight, but
        // never below what the endpoint demonstrably held.
        let to = others.max(s.held).max(1);
        let change = if others > 0 && to < s.limit() {
            decrease(&mut s, &e.name, to, reason, agent)
        } else {
            None
        };
        // The retry queues for a slot only where the limit came down to
        // the others: above them (a floor of what was held) a slot is free
        // at once, and the retry would meet the same crowd; it backs off.
        let queue = others > 0 && s.limit() <= others;
        let mut tell = Vec::new();
        if let Some(change) = change {
            let waves = self.waves;
            match s.wave.as_mut() {
                // Sent before the wave began: one of its refusals.
                Some(w) if waves < w.number => {
                    w.untold = Some(match w.untold.take() {
                        Some(first) => LimitChange {
                            from: first.from,
                            ..change
                        },
                        None => change,
                    });
                }
                // A wave of its own, with every request now in flight.
                _ => {
                    tell.extend(s.untold());
                    s.waves += 1;
                    s.wave = Some(Wave {
                        number: s.waves,
                        outstanding: s.in_flight,
                        untold: None,
                    });
                    tell.push(change);
                }
            }
        }
        drop(s);
        e.notify_all(tell);
        queue
    }

    fn after_last_decrease(&self, s: &State) -> bool {
        s.last_decrease.is_none_or(|t| self.sent >= t)
    }
}

/// Lowers the window to `to` (if that is lower) and holds growth for a
/// window.
fn decrease(
    s: &mut State,
    name: &str,
    to: usize,
    reason: LimitReason,
    agent: &str,
) -> Option<LimitChange> {
    let before = s.limit();
    s.window = s.window.min(to).max(1);
    s.last_decrease = Some(Instant::now());
    s.credit = -(s.window as i64);
    let after = s.limit();
    (after != before).then(|| {
        s.changes += 1;
        LimitChange {
            endpoint: name.to_string(),
            from: before,
            to: after,
            in_flight: s.in_flight,
            reason,
            agent: agent.to_string(),
        }
    })
}

impl Drop for EndpointPermit<'_> {
    fn drop(&mut self) {
        let mut s = self.endpoint.state.lock();
        s.in_flight -= 1;
        // The last request of a wave came back: the wave is over, and its
        // steps down not told yet are told as one change.
        let mut untold = None;
        if let Some(w) = s.wave.as_mut().filter(|w| self.waves < w.number) {
            w.outstanding = w.outstanding.saturating_sub(1);
            if w.outstanding == 0 {
                untold = s.wave.take().and_then(|w| w.untold);
            }
        }
        let free = s.limit().saturating_sub(s.in_flight);
        drop(s);
        self.endpoint.notify_all(untold);
        // Growth can free more than one slot at once.
        if free > 1 {
            self.endpoint.freed.notify_all();
        } else {
            self.endpoint.freed.notify_one();
        }
    }
}

mod fds;
#[cfg(test)]
mod tests;
