//! When to try again: exponential backoff with full jitter, and the server's `Retry-After`.

use std::time::{Duration, SystemTime};

use rand::Rng;

/// How many attempts a request gets and how long to wait between them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Attempts per request, the first included (at least 1).
    pub max_attempts: u32,
    /// The backoff ceiling after the first failure; it doubles after each further one.
    pub base_delay: Duration,
    /// The backoff ceiling never grows past this.
    pub max_delay: Duration,
    /// A server's `Retry-After` is honoured up to this long.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
            max_retry_after: Duration::from_secs(300),
        }
    }
}

impl RetryPolicy {
    /// The wait after `failed_attempts` failures (1 after the first): a uniform draw from
    /// `[0, min(max_delay, base_delay · 2^(failed_attempts − 1))]` ("full jitter", so that many
    /// clients that failed together do not retry together), but never less than the server's
    /// `Retry-After`.
    pub fn delay(
        &self,
        failed_attempts: u32,
        retry_after: Option<Duration>,
        rng: &mut impl Rng,
    ) -> Duration {
        let doublings = failed_attempts.saturating_sub(1).min(30);
        let ceiling = self
            .base_delay
            .saturating_mul(1 << doublings)
            .min(self.max_delay);
        let jitter = ceiling.mul_f64(rng.random::<f64>());
        match retry_after {
            Some(wait) => jitter.max(wait.min(self.max_retry_after)),
            None => jitter,
        }
    }
}

/// Reads a `Retry-After` header: delay seconds (`120`, also `1.5`) or an HTTP date, which
/// counts from `now` (a date in the past means "now").
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
            max_retry_after: Duration::from_secs(30),
        }
    }

    #[test]
    fn backoff_stays_under_a_doubling_ceiling_capped_at_max_delay() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for (failed, ceiling_ms) in [
            (1, 100),
            (2, 200),
            (3, 400),
            (4, 800),
            (5, 1000),
            (40, 1000),
        ] {
            let draws: Vec<Duration> = (0..200)
                .map(|_| policy().delay(failed, None, &mut rng))
                .collect();
            let ceiling = Duration::from_millis(ceiling_ms);
            assert!(draws.iter().all(|d| *d <= ceiling), "{failed}: {draws:?}");
            // Full jitter spreads the draws over the whole range.
            assert!(draws.iter().any(|d| *d < ceiling / 4), "{failed}");
            assert!(draws.iter().any(|d| *d > ceiling * 3 / 4), "{failed}");
        }
    }

    #[test]
    fn retry_after_is_a_floor_capped_by_max_retry_after() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for _ in 0..50 {
            let wait = policy().delay(1, Some(Duration::from_secs(2)), &mut rng);
            assert_eq!(wait, Duration::from_secs(2));
        }
        let wait = policy().delay(1, Some(Duration::from_secs(3600)), &mut rng);
        assert_eq!(wait, Duration::from_secs(30));
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").unwrap();
        let cases = [
            ("120", Some(Duration::from_secs(120))),
            (" 0 ", Some(Duration::ZERO)),
            ("1.5", Some(Duration::from_millis(1500))),
            ("-3", None),
            ("soon", None),
            (
                "Wed, 21 Oct 2015 07:28:07 GMT",
                Some(Duration::from_secs(7)),
            ),
            ("Wed, 21 Oct 2015 07:27:00 GMT", Some(Duration::ZERO)),
        ];
        for (value, expected) in cases {
            assert_eq!(parse_retry_after(value, now), expected, "{value:?}");
        }
    }
}
