//! Numbers as the report writes them.

use hierarag_analysis::Estimate;

/// A value with `digits` decimals; `–` for a missing or non-finite one.
pub(crate) fn num(value: Option<f64>, digits: usize) -> String {
    match value {
        Some(v) if v.is_finite() => format!("{:.digits$}", v + 0.0),
        _ => "–".into(),
    }
}

/// A signed value (`+0.035`, `−0.077`).
pub(crate) fn signed(value: f64, digits: usize) -> String {
    if !value.is_finite() {
        return "–".into();
    }
    let text = format!("{:+.digits$}", value + 0.0);
    text.replacen('-', "−", 1)
}

/// An interval as `[lo, hi]`, or empty.
pub(crate) fn interval(estimate: Option<&Estimate>, digits: usize) -> String {
    match estimate.and_then(|e| e.ci) {
        Some([lo, hi]) if lo.is_finite() && hi.is_finite() => {
            format!("[{}, {}]", num(Some(lo), digits), num(Some(hi), digits))
        }
        _ => String::new(),
    }
}

/// A value followed by its interval: `0.053 [0.031, 0.071]`.
pub(crate) fn with_interval(estimate: Option<&Estimate>, digits: usize) -> String {
    let value = num(estimate.map(|e| e.value), digits);
    let ci = interval(estimate, digits);
    if ci.is_empty() {
        value
    } else {
        format!("{value} {ci}")
    }
}

/// A p-value: `<0.001` or three decimals.
pub(crate) fn p_value(p: Option<f64>) -> String {
    match p {
        Some(p) if p.is_finite() && p < 0.001 => "<0.001".into(),
        other => num(other, 3),
    }
}

/// Δ with its interval in ratios.
pub(crate) fn delta(estimate: Option<&Estimate>) -> String {
    let Some(estimate) = estimate else {
        return "–".into();
    };
    let value = hierarag_analysis::format_delta(estimate.value);
    match estimate.ci {
        Some([lo, hi]) if lo.is_finite() && hi.is_finite() => {
            format!("{value} [{lo:.2}×, {hi:.2}×]")
        }
        _ => value,
    }
}

/// Seconds as `12.3 s` or `4 min 05 s`.
pub(crate) fn seconds(s: f64) -> String {
    if s < 60.0 {
        format!("{s:.1} s")
    } else {
        let whole = s.round() as u64;
        format!("{} min {:02} s", whole / 60, whole % 60)
    }
}
