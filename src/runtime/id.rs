//! Run ids: sortable by time, and collision-free.
//!
//! A run id is the UTC time to the millisecond, then the rest of a
//! UUIDv7 (its 74 random and counter bits, in hex): two runs started in
//! the same millisecond, in one process or in two, never get one id, and
//! ids of one process sort in the order they were made.

/// `YYYYMMDD-HHMMSS-mmm-xxxxxxxxxxxxxxxxxxxx`.
pub(crate) fn new_run_id() -> String {
    let uuid = uuid::Uuid::now_v7();
    let bytes = uuid.as_bytes();
    // The first 48 bits of a UUIDv7 are the Unix time in milliseconds.
    let ms = bytes[..6]
        .iter()
        .fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
    let secs = ms / 1000;
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    let mut tail = String::with_capacity(20);
    for b in &bytes[6..] {
        tail.push_str(&format!("{b:02x}"));
    }
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}-{:03}-{tail}",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60,
        ms % 1000
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(20_513), (2026, 3, 1));
    }

    #[test]
    fn ids_sort_by_time_and_never_collide() {
        // Issue 8: 16 random bits let two runs of one millisecond share an id.
        let ids: Vec<String> = (0..20_000).map(|_| new_run_id()).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(sorted, ids, "ids of one process sort in the order made");
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len());
        assert_eq!(ids[0].len(), "20260101-000000-000-".len() + 20);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let (y, _, _) = civil_from_days((now / 86_400) as i64);
        assert!(ids[0].starts_with(&y.to_string()), "{}", ids[0]);
    }
}
