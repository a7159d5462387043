//! Causal grouped-query attention over the KV cache, computed as llama.cpp's CPU flash
//! attention does, on the same threads as the matmuls.
//!
//! llama.cpp's server enables flash attention on CPU by default, and its kernel makes choices
//! that move the logits by more than rounding noise, so the embedded model copies them: one
//! query row at a time, the keys in order, an online softmax (a new maximum rescales what is
//! accumulated), and the weighted sum of values **accumulated in f16** — every step rounded to
//! half precision, as `ggml_vec_mad_f16`/`ggml_vec_scale_f16` store it — divided by the sum of
//! weights at the end. Each `Q·K` dot product sums in the lane order of `ggml_vec_dot_f16` on
//! AVX2 (four 8-lane accumulators). The exponentials are the C library's `expf`, as in ggml.
//! The AVX2 version and the scalar one (other CPUs) give identical results (tested).
//!
//! Rows are split over candle's barrier pool; nothing here allocates per step.

use half::f16;

use crate::quant::pool_for_each;

/// Query rows per work item.
const CHUNK_ROWS: usize = 16;

/// Shapes of one attention call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    pub n_head: usize,
    pub n_kv_head: usize,
    pub head_dim: usize,
    /// Positions the cache has room for (its stride between heads).
    pub max_context: usize,
    /// Positions cached before this call's tokens.
    pub pos: usize,
    /// Tokens in this call.
    pub s: usize,
}

/// Attention of `s` new tokens at positions `pos .. pos + s`; query `t` sees positions
/// `0 ..= pos + t` of the cache.
///
/// `q` is `(n_head, s, head_dim)`; `k_cache` and `v_cache` are `(n_kv_head, max_context,
/// head_dim)` with positions `0 .. pos + s` filled; every value of `q`, `k_cache` and `v_cache`
/// is an f16 value. Returns `(s, n_head · head_dim)`.
pub(crate) fn attend(shape: Shape, q: &[f32], k_cache: &[f32], v_cache: &[f32]) -> Vec<f32> {
    attend_with(simd(), shape, q, k_cache, v_cache)
}

/// Whether this CPU runs the AVX2/F16C/FMA rows.
fn simd() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
            && is_x86_feature_detected!("f16c")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

fn attend_with(simd: bool, shape: Shape, q: &[f32], k_cache: &[f32], v_cache: &[f32]) -> Vec<f32> {
    let Shape {
        n_head,
        n_kv_head,
        head_dim: hd,
        max_context,
        pos,
        s,
    } = shape;
    assert!(
        hd == HEAD_DIM,
        "attention is written for heads of {HEAD_DIM} values, not {hd}"
    );
    let group = n_head / n_kv_head;
    let rows = n_head * s;
    let n_embd = n_head * hd;
    let scale = 1.0 / (hd as f32).sqrt();
    let mut out = vec![0f32; s * n_embd];
    let out_addr = out.as_mut_ptr() as usize;
    let work = |chunk: usize| {
        for row in chunk * CHUNK_ROWS..rows.min((chunk + 1) * CHUNK_ROWS) {
            let (head, t) = (row / s, row % s);
            let kv = head / group;
            let visible = pos + t + 1;
            let keys = &k_cache[kv * max_context * hd..(kv * max_context + visible) * hd];
            let values = &v_cache[kv * max_context * hd..(kv * max_context + visible) * hd];
            let q_row: &[f32; HEAD_DIM] = q[row * hd..(row + 1) * hd].try_into().expect("head");
            // SAFETY: `out` is `s × n_embd` and outlives the pool call; row `(head, t)` is
            // computed by exactly one work item, which alone writes `out[t][head · hd ..][..hd]`.
            let dst = unsafe {
                &mut *((out_addr as *mut f32).add(t * n_embd + head * hd) as *mut [f32; HEAD_DIM])
            };
            #[cfg(target_arch = "x86_64")]
            if simd {
                // SAFETY: `simd` is true only where the CPU has AVX2, FMA and F16C.
                unsafe { x86::attend_row(q_row, keys, values, scale, dst) };
                continue;
            }
            let _ = simd;
            attend_row_scalar(q_row, keys, values, scale, dst);
        }
    };
    pool_for_each(rows.div_ceil(CHUNK_ROWS), rows * (pos + s) >= 4096, work);
    out
}

/// Values per head (SmolLM2's; the lane order of the dot product below assumes it).
const HEAD_DIM: usize = 64;

fn round_f16(v: f32) -> f32 {
    f16::from_f32(v).to_f32()
}

/// `ggml_vec_dot_f16` for 64 values on AVX2: lane `l` of accumulator `j` sums elements
/// `32·step + 8·j + l`; then `acc0 + acc2`, `acc1 + acc3`, their sum, the two 128-bit halves,
/// and two horizontal adds.
fn dot_scalar(k: &[f32], q: &[f32; HEAD_DIM]) -> f32 {
    let mut acc = [[0f32; 8]; 4];
    for step in 0..2 {
        for (j, lanes) in acc.iter_mut().enumerate() {
            for (l, lane) in lanes.iter_mut().enumerate() {
                let i = 32 * step + 8 * j + l;
                *lane = k[i].mul_add(q[i], *lane);
            }
        }
    }
    let mut x = [0f32; 8];
    for l in 0..8 {
        x[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
    }
    let t: Vec<f32> = (0..4).map(|l| x[l] + x[l + 4]).collect();
    (t[0] + t[1]) + (t[2] + t[3])
}

/// One query row: ggml's online softmax with an f16 accumulator (see the module notes).
fn attend_row_scalar(
    q: &[f32; HEAD_DIM],
    keys: &[f32],
    values: &[f32],
    scale: f32,
    out: &mut [f32; HEAD_DIM],
) {
    let mut acc = [0f32; HEAD_DIM];
    let (mut max, mut sum) = (f32::NEG_INFINITY, 0f32);
    for (k, v) in keys
        .chunks_exact(HEAD_DIM)
        .zip(values.chunks_exact(HEAD_DIM))
    {
        let score = dot_scalar(k, q) * scale;
        let (mut ms, mut vs) = (1f32, 1f32);
        if score > max {
            ms = (max - score).exp();
            max = score;
            for a in acc.iter_mut() {
                *a = round_f16(*a * ms);
            }
        } else {
            vs = (score - max).exp();
        }
        for (a, &v) in acc.iter_mut().zip(v) {
            *a = round_f16(v.mul_add(vs, *a));
        }
        sum = sum.mul_add(ms, vs);
    }
    let inv = if sum == 0.0 { 0.0 } else { 1.0 / sum };
    for (o, a) in out.iter_mut().zip(acc) {
        *o = a * inv;
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::HEAD_DIM;

    /// Rounds eight lanes to f16 and back (round to nearest even, as `_mm256_cvtps_ph(x, 0)`).
    #[inline(always)]
    unsafe fn round_f16(x: __m256) -> __m256 {
        unsafe { _mm256_cvtph_ps(_mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x)) }
    }

    /// `attend_row_scalar`, eight lanes at a time.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn attend_row(
        q: &[f32; HEAD_DIM],
        keys: &[f32],
        values: &[f32],
        scale: f32,
        out: &mut [f32; HEAD_DIM],
    ) {
        unsafe {
            let qv: [__m256; 8] = std::array::from_fn(|i| _mm256_loadu_ps(q.as_ptr().add(8 * i)));
            let mut acc = [_mm256_setzero_ps(); 8];
            let (mut max, mut sum) = (f32::NEG_INFINITY, 0f32);
            for (k, v) in keys
                .chunks_exact(HEAD_DIM)
                .zip(values.chunks_exact(HEAD_DIM))
            {
                let (k, v) = (k.as_ptr(), v.as_ptr());
                let mut d = [_mm256_setzero_ps(); 4];
                for step in 0..2 {
                    for (j, dj) in d.iter_mut().enumerate() {
                        let i = 4 * step + j;
                        *dj = _mm256_fmadd_ps(_mm256_loadu_ps(k.add(8 * i)), qv[i], *dj);
                    }
                }
                let x = _mm256_add_ps(_mm256_add_ps(d[0], d[2]), _mm256_add_ps(d[1], d[3]));
                let t0 = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps::<1>(x));
                let t1 = _mm_hadd_ps(t0, t0);
                let score = _mm_cvtss_f32(_mm_hadd_ps(t1, t1)) * scale;
                let (mut ms, mut vs) = (1f32, 1f32);
                if score > max {
                    ms = (max - score).exp();
                    max = score;
                    let msv = _mm256_set1_ps(ms);
                    for a in acc.iter_mut() {
                        *a = round_f16(_mm256_mul_ps(*a, msv));
                    }
                } else {
                    vs = (score - max).exp();
                }
                let vsv = _mm256_set1_ps(vs);
                for (i, a) in acc.iter_mut().enumerate() {
                    *a = round_f16(_mm256_fmadd_ps(_mm256_loadu_ps(v.add(8 * i)), vsv, *a));
                }
                sum = sum.mul_add(ms, vs);
            }
            let inv = _mm256_set1_ps(if sum == 0.0 { 0.0 } else { 1.0 / sum });
            for (i, a) in acc.iter().enumerate() {
                _mm256_storeu_ps(out.as_mut_ptr().add(8 * i), _mm256_mul_ps(*a, inv));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The textbook computation, one query row at a time, in f64.
    fn naive(shape: Shape, q: &[f32], k: &[f32], v: &[f32]) -> Vec<f64> {
        let Shape {
            n_head,
            n_kv_head,
            head_dim: hd,
            max_context,
            pos,
            s,
        } = shape;
        let group = n_head / n_kv_head;
        let mut out = vec![0f64; s * n_head * hd];
        for head in 0..n_head {
            let kv = head / group;
            for t in 0..s {
                let qr = &q[(head * s + t) * hd..(head * s + t + 1) * hd];
                let visible = pos + t + 1;
                let scores: Vec<f64> = (0..visible)
                    .map(|p| {
                        let kr = &k[(kv * max_context + p) * hd..(kv * max_context + p + 1) * hd];
                        qr.iter()
                            .zip(kr)
                            .map(|(a, b)| f64::from(*a) * f64::from(*b))
                            .sum::<f64>()
                            / (hd as f64).sqrt()
                    })
                    .collect();
                let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = scores.iter().map(|x| (x - max).exp()).collect();
                let z: f64 = e.iter().sum();
                for d in 0..hd {
                    out[t * n_head * hd + head * hd + d] = (0..visible)
                        .map(|p| e[p] / z * f64::from(v[(kv * max_context + p) * hd + d]))
                        .sum();
                }
            }
        }
        out
    }

    #[test]
    fn matches_the_textbook_computation_for_prefill_and_decode() {
        let mut seed = 1u32;
        let mut next = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            round_f16((seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5)
        };
        let (n_head, n_kv_head, hd, max_context) = (6, 2, HEAD_DIM, 200);
        let k: Vec<f32> = (0..n_kv_head * max_context * hd).map(|_| next()).collect();
        let v: Vec<f32> = (0..n_kv_head * max_context * hd).map(|_| next()).collect();
        // A prompt of several chunks, a continuation, one decode step.
        for (pos, s) in [(0, 40), (40, 5), (150, 1)] {
            let shape = Shape {
                n_head,
                n_kv_head,
                head_dim: hd,
                max_context,
                pos,
                s,
            };
            let q: Vec<f32> = (0..n_head * s * hd)
                .map(|_| round_f16(next() * 4.0))
                .collect();
            let got = attend_with(false, shape, &q, &k, &v);
            let want = naive(shape, &q, &k, &v);
            // The accumulator is f16: a few units of 2⁻¹¹ of the values (|v| ≤ 0.5).
            for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (f64::from(*a) - b).abs() < 2e-3,
                    "pos {pos}, s {s}, [{i}]: {a} vs {b}"
                );
            }
            if simd() {
                let fast = attend_with(true, shape, &q, &k, &v);
                let same = fast
                    .iter()
                    .zip(&got)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(
                    same,
                    "pos {pos}, s {s}: the AVX2 rows differ from the scalar ones"
                );
            }
        }
    }

    #[test]
    fn the_dot_product_sums_in_ggml_lane_order() {
        // 1 + 2⁻²⁴ is lost when added to 1 directly but kept when the small terms meet first:
        // element 0 (lane 0 of accumulator 0) is 1; elements 16 and 48 (lane 0 of accumulator
        // 2, both steps) are 2⁻²⁴ each, summed with accumulator 0 before anything else.
        let mut k = [0f32; HEAD_DIM];
        let q = [1f32; HEAD_DIM];
        k[0] = 1.0;
        k[16] = 2f32.powi(-24);
        k[48] = 2f32.powi(-24);
        assert_eq!(dot_scalar(&k, &q), 1.0 + 2f32.powi(-23));
    }
}
