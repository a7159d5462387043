//! The element-wise parts of the encoder (bias, GELU, softmax, layer norm), in plain Rust.
//!
//! They run on the calling thread on purpose: candle's element-wise CPU ops share one global,
//! spinning thread pool, which serialises batches running side by side (see `threads.rs`).
//! Loops are written so that the compiler can vectorise them: no branches in the inner loops,
//! and sums kept in several accumulators. Each entry point has its loops compiled three times
//! (`multiversion!`): for AVX-512, for AVX2, and for the baseline, and runs the widest the CPU
//! has. The arithmetic is the same in each (no operation is fused or reordered), so the results
//! are the same bits on every CPU.
#![allow(unsafe_code)]

/// `pub(super) fn $name(args) { body }`, its body compiled for the widest vector instructions
/// the CPU has, chosen at run time.
macro_rules! multiversion {
    ($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        $(#[$doc])*
        pub(super) fn $name($($arg: $ty),*) {
            #[inline(always)]
            fn loops($($arg: $ty),*) $body

            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
                fn avx512($($arg: $ty),*) {
                    loops($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                fn avx2($($arg: $ty),*) {
                    loops($($arg),*)
                }
                use std::arch::is_x86_feature_detected as has;
                if has!("avx512f") && has!("avx512bw") && has!("avx512dq") && has!("avx512vl") {
                    // SAFETY: the CPU has every feature `avx512` is compiled for.
                    return unsafe { avx512($($arg),*) };
                }
                if has!("avx2") && has!("fma") {
                    // SAFETY: the CPU has every feature `avx2` is compiled for.
                    return unsafe { avx2($($arg),*) };
                }
            }
            loops($($arg),*)
        }
    };
}

/// `ln 2`, split so that `n * LN2_HI` is exact for the `n` that `exp` sees.
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;

/// e^x for the finite x softmax and GELU give it (x ≤ 0); results below 2^-126 flush to
/// 2^-126 · e^r rather than going subnormal, which a normalised softmax cannot tell apart.
///
/// Cephes' `expf`: x = n·ln 2 + r with |r| ≤ ln2/2, a degree-6 polynomial for e^r, and 2^n
/// built in the exponent bits. Within 2 ulp of the exact value; branch-free, so it vectorises.
#[inline(always)]
pub(super) fn exp(x: f32) -> f32 {
    // 1.5 · 2^23: adding and subtracting it rounds to the nearest integer without a branch.
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 88.0);
    let shifted = x * std::f32::consts::LOG2_E + ROUND;
    let n = shifted - ROUND;
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = 1.987_569_1e-4_f32;
    let p = p * r + 1.398_199_9e-3;
    let p = p * r + 8.333_452e-3;
    let p = p * r + 4.166_579_6e-2;
    let p = p * r + 1.666_666_5e-1;
    let p = p * r + 0.5;
    let e_r = p * r * r + r + 1.0;
    // The low mantissa bits of `shifted` hold n (as 2^22 + n); n ∈ [-126, 127] after the
    // clamp, so n + 127 is a valid normal exponent, and shifting it into place drops the rest.
    // Integer operations only: a float-to-int cast would not vectorise.
    let two_n = f32::from_bits(shifted.to_bits().wrapping_add(127) << 23);
    e_r * two_n
}

/// erf(x) by Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7 in exact arithmetic),
/// the formula PyTorch's vectorised CPU `erf` uses, so GELU rounds much as it does there.
#[inline(always)]
pub(super) fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (0.327_591_1 * a + 1.0);
    let r = 1.061_405_4_f32;
    let r = r * t - 1.453_152;
    let r = r * t + 1.421_413_8;
    let r = r * t - 0.284_496_74;
    let r = r * t + 0.254_829_6;
    let magnitude = 1.0 - r * t * exp(-(a * a));
    magnitude.copysign(x)
}

multiversion! {
    /// `x ← gelu(x + bias)` on every row of `rows` (row length `bias.len()`), GELU being the
    /// exact (erf) one BERT uses: x · ½ · (1 + erf(x / √2)).
    fn add_bias_gelu(rows: &mut [f32], bias: &[f32]) {
        for row in rows.chunks_exact_mut(bias.len()) {
            for (value, &b) in row.iter_mut().zip(bias) {
                let x = *value + b;
                *value = x * 0.5 * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2));
            }
        }
    }
}

multiversion! {
    /// `x ← layer_norm(x + y + bias)` on every row: the residual connection and normalisation
    /// that end each half of a BERT layer. Mean and variance are summed in f64.
    fn add_layer_norm(
        x: &mut [f32],
        y: &[f32],
        bias: &[f32],
        gamma: &[f32],
        beta: &[f32],
        eps: f64,
    ) {
        let width = gamma.len();
        for (row, y_row) in x.chunks_exact_mut(width).zip(y.chunks_exact(width)) {
            for ((value, &y), &b) in row.iter_mut().zip(y_row).zip(bias) {
                *value += y + b;
            }
            layer_norm_row_loops(row, gamma, beta, eps);
        }
    }
}

multiversion! {
    /// `x ← layer_norm(x)` on every row (row length `gamma.len()`): the embeddings'
    /// normalisation.
    fn layer_norm(x: &mut [f32], gamma: &[f32], beta: &[f32], eps: f64) {
        for row in x.chunks_exact_mut(gamma.len()) {
            layer_norm_row_loops(row, gamma, beta, eps);
        }
    }
}

/// `row ← (row − mean) / √(var + eps) · gamma + beta`, with the biased variance, as torch.
#[inline(always)]
fn layer_norm_row_loops(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f64) {
    let n = row.len() as f64;
    let mean = sum_f64(row, f64::from) / n;
    let var = sum_f64(row, |v| (f64::from(v) - mean).powi(2)) / n;
    let inv_std = 1.0 / (var + eps).sqrt();
    for ((value, &g), &b) in row.iter_mut().zip(gamma).zip(beta) {
        *value = ((f64::from(*value) - mean) * inv_std) as f32 * g + b;
    }
}

multiversion! {
    /// Softmax of every row of `scores` (row length `width`), in place.
    fn softmax_rows(scores: &mut [f32], width: usize) {
        for row in scores.chunks_exact_mut(width) {
            let max = max(row);
            for value in row.iter_mut() {
                *value = exp(*value - max);
            }
            let inv_sum = 1.0 / sum(row);
            for value in row.iter_mut() {
                *value *= inv_sum;
            }
        }
    }
}

/// The sum of `term(v)` over `values` in f64, in eight interleaved accumulators so that the
/// loop vectorises.
#[inline(always)]
fn sum_f64(values: &[f32], term: impl Fn(f32) -> f64) -> f64 {
    let mut lanes = [0f64; 8];
    let chunks = values.chunks_exact(8);
    let tail: f64 = chunks.remainder().iter().map(|&v| term(v)).sum();
    for chunk in chunks {
        for (lane, &value) in lanes.iter_mut().zip(chunk) {
            *lane += term(value);
        }
    }
    lanes.iter().sum::<f64>() + tail
}

/// The largest of `values` (−∞ for none), in eight interleaved lanes so that the loop
/// vectorises; the same value as a sequential fold, since taking a maximum does not round.
#[inline(always)]
fn max(values: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; 8];
    let chunks = values.chunks_exact(8);
    let tail = chunks
        .remainder()
        .iter()
        .copied()
        .fold(f32::NEG_INFINITY, f32::max);
    for chunk in chunks {
        for (lane, &value) in lanes.iter_mut().zip(chunk) {
            *lane = lane.max(value);
        }
    }
    lanes.iter().copied().fold(tail, f32::max)
}

/// The sum of `values`, in eight interleaved accumulators so that the loop vectorises.
#[inline(always)]
fn sum(values: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let chunks = values.chunks_exact(8);
    let tail: f32 = chunks.remainder().iter().sum();
    for chunk in chunks {
        for (lane, &value) in lanes.iter_mut().zip(chunk) {
            *lane += value;
        }
    }
    lanes.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf in f64 by its Maclaurin series (|x| ≤ 3) or continued-fraction tail, for reference.
    fn erf_f64(x: f64) -> f64 {
        if x.abs() > 3.0 {
            // erfc(x) = exp(-x²)/(x√π) · 1/(1 + 1/(2x²)/(1 + 2/(2x²)/(1 + …))), Lentz-free form.
            let a = x.abs();
            let mut fraction = 0.0;
            for k in (1..60).rev() {
                fraction = (k as f64 / 2.0) / (a + fraction);
            }
            let erfc = (-a * a).exp() / std::f64::consts::PI.sqrt() / (a + fraction);
            return (1.0 - erfc).copysign(x);
        }
        let mut term = x;
        let mut total = x;
        for n in 1..200 {
            term *= -x * x / n as f64;
            total += term / (2 * n + 1) as f64;
        }
        total * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn exp_is_within_two_ulp_over_the_range_softmax_uses() {
        let mut worst = 0f64;
        for i in 0..=200_000 {
            let x = -87.0 + 87.0 * i as f32 / 200_000.0;
            let exact = f64::from(x).exp();
            let relative = (f64::from(exp(x)) - exact).abs() / exact;
            worst = worst.max(relative);
        }
        assert!(worst < 2.5e-7, "max relative error {worst:e}");
        assert_eq!(exp(0.0), 1.0);
    }

    #[test]
    fn erf_is_within_a_few_1e_7_of_the_exact_value() {
        let mut worst = 0f64;
        for i in 0..=160_000 {
            let x = -8.0 + 16.0 * i as f32 / 160_000.0;
            worst = worst.max((f64::from(erf(x)) - erf_f64(f64::from(x))).abs());
        }
        assert!(worst < 7e-7, "max absolute error {worst:e}");
        assert_eq!(erf(0.0), 0.0);
        assert_eq!(erf(-10.0), -1.0);
    }

    #[test]
    fn gelu_matches_its_definition() {
        let mut rows = vec![-3.0, -0.5, 0.0, 0.5, 3.0, 10.0];
        add_bias_gelu(&mut rows, &[0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        for (x, got) in [-3.0f64, -0.5, 0.0, 0.5, 3.0, 10.0].iter().zip(&rows) {
            let exact = x * 0.5 * (1.0 + erf_f64(x / std::f64::consts::SQRT_2));
            assert!((f64::from(*got) - exact).abs() < 1e-6, "gelu({x}) = {got}");
        }
        // The bias is added first.
        let mut shifted = vec![-1.0];
        add_bias_gelu(&mut shifted, &[1.5]);
        assert!((shifted[0] - 0.345_731_4).abs() < 1e-6, "{}", shifted[0]);
    }

    #[test]
    fn softmax_rows_sum_to_one_and_keep_order() {
        let mut scores = vec![1.0, 2.0, 3.0, 0.0, -1000.0, 0.0, 5.0, 5.0, 5.0, 5.0];
        softmax_rows(&mut scores, 5);
        for row in scores.chunks(5) {
            assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        }
        assert!(scores[0] < scores[1] && scores[1] < scores[2]);
        assert!(scores[4] < 1e-30);
        let expected = 1.0 / (1.0 + (-1f64).exp() + (-2f64).exp() + (-3f64).exp());
        assert!((f64::from(scores[2]) - expected).abs() < 1e-7);
        assert_eq!(scores[6], scores[9]);
    }

    #[test]
    fn layer_norm_centres_and_scales() {
        let mut x = vec![1.0, 2.0, 3.0, 4.0];
        add_layer_norm(
            &mut x,
            &[0.0, 0.0, 0.0, 0.0],
            &[1.0, 1.0, 1.0, 1.0],
            &[2.0, 2.0, 2.0, 2.0],
            &[0.5, 0.5, 0.5, 0.5],
            1e-12,
        );
        // (2,3,4,5): mean 3.5, biased variance 1.25.
        let inv_std = 1.0 / 1.25f64.sqrt();
        for (value, raw) in x.iter().zip([2.0, 3.0, 4.0, 5.0]) {
            let expected = (raw - 3.5) * inv_std * 2.0 + 0.5;
            assert!((f64::from(*value) - expected).abs() < 1e-6);
        }
    }

    #[test]
    fn max_finds_the_largest_value_wherever_it_is() {
        for at in 0..19 {
            let mut values: Vec<f32> = (0..19).map(|v| -(v as f32)).collect();
            values[at] = 7.5;
            assert_eq!(max(&values), 7.5);
        }
        assert_eq!(max(&[]), f32::NEG_INFINITY);
    }

    #[test]
    fn sum_adds_every_value() {
        let values: Vec<f32> = (1..=19).map(|v| v as f32).collect();
        assert_eq!(sum(&values), 190.0);
        assert_eq!(sum(&[]), 0.0);
    }
}
