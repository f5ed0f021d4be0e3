//! What runs a round's members: a rayon pool, the run's own pool of
//! threads, or the choice between them by the round's width.
//!
//! Both executors give a member a thread of its own for the whole of its
//! call (model calls block on I/O): the pool is sized to the round's width
//! (capped by `max_parallel`), its threads are named, started once for the
//! run and ended before the run returns.
//!
//! The rule `auto` follows, and the figures behind it, are on
//! [`Executor::auto_limit`].

use crate::record::Executor;

impl Executor {
    /// The members rayon runs per core under [`Executor::Auto`] (see
    /// [`Executor::auto_limit`] for the figures behind it).
    pub const AUTO_RAYON_PER_CORE: usize = 64;

    /// The most members [`Executor::Auto`] runs on rayon however many cores
    /// the machine has: the widest round measured good on rayon (16 cores,
    /// 1024 members); past it the rule would extrapolate.
    pub const AUTO_RAYON_MAX: usize = 1024;

    /// The widest round [`Executor::Auto`] runs on rayon on this machine:
    /// [`Executor::AUTO_RAYON_PER_CORE`] × the cores the process may use
    /// (`std::thread::available_parallelism`), at most
    /// [`Executor::AUTO_RAYON_MAX`]: 128 members on 2 cores, 1024 on 16
    /// and more. Each round is judged by its own width: its
    /// assignments (a member may have several), capped by `max_parallel`;
    /// the first round wider than this ends rayon's threads and runs, with
    /// every later round of the run, on the own pool.
    ///
    /// rayon's idle workers look for work in every other worker's queue,
    /// so a round of N blocked members costs O(N) searching per idle
    /// worker: nothing while N is a small multiple of the cores, a collapse
    /// when it is not. Measured with a pool of N threads and N jobs that
    /// each block 100 ms (the round's wall over 100 ms; a thread per job
    /// in brackets): on 2 cores rayon was 1.01 at 64 (1.03), 1.27–1.79 at
    /// 512 (1.33–1.38) and 27–273 at 2048 (2.7–3.3); on 16 cores 1.00 at
    /// 64 (1.02), 1.04 at 512 (1.14–1.33), 2.3–3.4 at 2048 (2.1–2.7) and
    /// 770 at 4096 (2.8–4.0). rayon is as good or better up to between 64
    /// and 512 members per 2 cores and between 512 and 2048 per 16 cores;
    /// 64 per core stays below both edges. `boardroom bench --executor
    /// rayon,threads,auto` measures the three side by side on any machine;
    /// on 2 cores (whole sim runs, 100 ms a call) rayon's round/L was 1.03
    /// at 64 members, 1.13 at 256, 1.70–1.94 at 512 and 417 at 2048, the
    /// own pool's 1.03, 1.13, 1.16–1.20 and 1.93.
    #[must_use]
    pub fn auto_limit() -> usize {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        Self::AUTO_RAYON_PER_CORE
            .saturating_mul(cores)
            .min(Self::AUTO_RAYON_MAX)
    }

    /// The executor that runs rounds `width` members wide: `Auto` becomes
    /// `Rayon` up to [`Executor::auto_limit`], `Threads` above; the others
    /// stay what they are.
    #[must_use]
    pub fn resolve(self, width: usize) -> Executor {
        match self {
            Executor::Auto if width <= Self::auto_limit() => Executor::Rayon,
            Executor::Auto => Executor::Threads,
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_auto_splits_at_the_limit() {
        for e in [Executor::Auto, Executor::Rayon, Executor::Threads] {
            assert_eq!(e.as_str().parse::<Executor>(), Ok(e));
            let json = serde_json::to_string(&e).unwrap();
            assert_eq!(json, format!("\"{e}\""));
        }
        let limit = Executor::auto_limit();
        assert!(limit >= Executor::AUTO_RAYON_PER_CORE);
        assert!(limit <= Executor::AUTO_RAYON_MAX);
        assert_eq!(Executor::Auto.resolve(limit), Executor::Rayon);
        assert_eq!(Executor::Auto.resolve(limit + 1), Executor::Threads);
        assert_eq!(Executor::Rayon.resolve(limit + 1), Executor::Rayon);
        assert_eq!(Executor::Threads.resolve(1), Executor::Threads);
    }
}
