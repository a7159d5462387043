//! Descriptive statistics with numpy's semantics: mean, standard deviation, range, percentiles.

/// The arithmetic mean, as `numpy.mean`.
///
/// Returns `None` when `values` is empty. A NaN among the values makes the mean NaN.
pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    Some(values.iter().sum::<f64>() / values.len() as f64)
}

/// The standard deviation with `ddof` delta degrees of freedom, as `numpy.std(values, ddof=ddof)`:
/// 0 is the population standard deviation (numpy's default), 1 the sample one.
///
/// Returns `None` when `values.len() <= ddof`, where the divisor `n − ddof` would not be
/// positive. Constant values give `Some(0.0)`.
pub fn std_dev(values: &[f64], ddof: u32) -> Option<f64> {
    let n = values.len();
    if n <= ddof as usize {
        return None;
    }
    let mean = mean(values)?;
    // Two passes, like numpy: summing squared deviations from the mean keeps the digits that the
    // one-pass Σx² − n·x̄² formula cancels away when the values share a large offset.
    let sum_sq: f64 = values.iter().map(|x| (x - mean) * (x - mean)).sum();
    Some((sum_sq / (n - ddof as usize) as f64).sqrt())
}

/// The range `max − min`, as `numpy.ptp`.
///
/// Returns `None` when `values` is empty; a NaN among the values makes the range NaN.
pub fn range(values: &[f64]) -> Option<f64> {
    let first = *values.first()?;
    if values.iter().any(|x| x.is_nan()) {
        return Some(f64::NAN);
    }
    let (min, max) = values
        .iter()
        .fold((first, first), |(min, max), &x| (min.min(x), max.max(x)));
    Some(max - min)
}

/// The `q`-th percentile (`q` in `0..=100`), as `numpy.percentile(values, q)` with its default
/// `method="linear"`: the sorted values are interpolated linearly at position `q/100 · (n − 1)`.
///
/// Returns `None` when `values` is empty or `q` is NaN or outside `0..=100`. As in numpy, a NaN
/// among the values makes the result NaN (see [`percentile_interval`](crate::percentile_interval)
/// for a version that skips them).
pub fn percentile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() || !(0.0..=100.0).contains(&q) {
        return None;
    }
    if values.iter().any(|x| x.is_nan()) {
        return Some(f64::NAN);
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(percentile_of_sorted(&sorted, q))
}

/// [`percentile`] of values already sorted ascending, non-empty and free of NaN.
pub(crate) fn percentile_of_sorted(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    // numpy divides q by 100 first and then multiplies by n − 1; doing the same keeps the
    // interpolation weight identical to the last bit.
    let virtual_index = (n - 1) as f64 * (q / 100.0);
    let previous = virtual_index.floor();
    let gamma = virtual_index - previous;
    let previous = (previous as usize).min(n - 1);
    let next = (previous + 1).min(n - 1);
    lerp(sorted[previous], sorted[next], gamma)
}

/// numpy's `_lerp`: interpolating from the nearer end keeps the result exact at both ends and
/// monotone in `t`.
fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let diff = b - a;
    if t >= 0.5 {
        b - diff * (1.0 - t)
    } else {
        a + diff * t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lerp_is_exact_at_both_ends() {
        assert_eq!(lerp(0.1, 0.7, 0.0), 0.1);
        assert_eq!(lerp(0.1, 0.7, 1.0), 0.7);
    }
}
