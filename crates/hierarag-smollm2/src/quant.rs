//! Quantized weight matrices and the products `x · Wᵀ` the transformer runs on.
//!
//! The weights stay in the GGUF's own precision: Q4_1 (4-bit, with a per-block scale and
//! minimum) for the layers and Q8_0 for the tied embedding/output matrix, so decoding, which is
//! bound by memory, streams as many bytes a token as llama.cpp does. At load every matrix is
//! repacked into tiles of [`TILE`] rows: per block of 32 columns, the eight rows' scales side by
//! side, then their quants interleaved four columns at a time, so that one `vpdpbusd` (or
//! `pmaddubsw` + `pmaddwd` without VNNI) multiplies four columns of all eight rows by the same
//! four activations and leaves one output per lane — no horizontal sums.
//!
//! The activations are quantized to 8 bits per block of 32 the way ggml does on x86 (scale
//! `max|x| / 127`, round half to even, the block sum for Q4_1's minimum), and each block's
//! integer dot product is exact; the blocks are then summed in f32 in block order. The SIMD
//! kernels and the scalar one ([`Level::Scalar`], also the fallback on other CPUs) perform the
//! same f32 operations in the same order, so they give identical results (tested).
//!
//! Threads: the tiles are split over candle's barrier pool (`CANDLE_NUM_THREADS`), the same
//! threads candle's own matmuls use.

use std::sync::OnceLock;

use half::f16;

/// Weight rows per tile: one f32 lane of a 256-bit register each.
pub(crate) const TILE: usize = 8;
/// Values per quantization block.
pub(crate) const QK: usize = 32;
/// Activation rows multiplied together against one weight tile (prefill), reusing the unpacked
/// weights.
const ROWS: usize = 2;
/// Groups of four columns in a block: the lanes of ggml's per-block products.
const GROUPS: usize = QK / 4;

/// The storage type of a packed matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QuantType {
    /// `w = d · q + m`, q in 0..=15 (ggml's `block_q4_1`).
    Q4_1,
    /// `w = d · q`, q in -127..=127 (ggml's `block_q8_0`).
    Q8_0,
}

/// The instruction set the kernels run with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) enum Level {
    Scalar,
    /// AVX2 + FMA + F16C: `pmaddubsw`/`pmaddwd` for the 8-bit products.
    Avx2,
    /// AVX2 plus AVX-512 VNNI on 256-bit registers: `vpdpbusd`.
    Vnni,
}

impl Level {
    /// The best level this CPU supports (detected once).
    pub(crate) fn detect() -> Level {
        static LEVEL: OnceLock<Level> = OnceLock::new();
        *LEVEL.get_or_init(|| {
            #[cfg(target_arch = "x86_64")]
            {
                let avx2 = is_x86_feature_detected!("avx2")
                    && is_x86_feature_detected!("fma")
                    && is_x86_feature_detected!("f16c");
                if avx2
                    && is_x86_feature_detected!("avx512f")
                    && is_x86_feature_detected!("avx512vl")
                    && is_x86_feature_detected!("avx512vnni")
                {
                    return Level::Vnni;
                }
                if avx2 {
                    return Level::Avx2;
                }
            }
            Level::Scalar
        })
    }

    /// Every level this CPU can run, the scalar one first (for tests).
    #[cfg(test)]
    pub(crate) fn available() -> Vec<Level> {
        let best = Level::detect();
        [Level::Scalar, Level::Avx2, Level::Vnni]
            .into_iter()
            .filter(|level| *level as u8 <= best as u8)
            .collect()
    }
}

/// A `rows × cols` weight matrix in tiles of [`TILE`] rows.
///
/// Per tile and block (in that order): `scales` holds the eight rows' `d` (and for Q4_1 then
/// their `m`) as f16; `quants` holds the block's 32 columns of the eight rows in groups of four
/// columns, row after row within a group (`[group][row][4]`). Q8_0 quants are the signed values;
/// Q4_1 packs two groups per byte: group `c` in the low nibbles and group `c + 4` in the high.
#[derive(Debug)]
pub(crate) struct PackedMatrix {
    kind: QuantType,
    rows: usize,
    cols: usize,
    scales: Vec<f16>,
    quants: Vec<u8>,
}

/// GGUF block sizes in bytes.
const Q4_1_BYTES: usize = 4 + QK / 2;
const Q8_0_BYTES: usize = 2 + QK;

impl PackedMatrix {
    /// Repacks `rows × cols` ggml blocks (`raw`, row-major as stored in the GGUF).
    pub(crate) fn from_ggml(
        kind: QuantType,
        rows: usize,
        cols: usize,
        raw: &[u8],
    ) -> Result<PackedMatrix, String> {
        if !cols.is_multiple_of(QK) || !rows.is_multiple_of(TILE) {
            return Err(format!(
                "a {rows}×{cols} matrix cannot be packed: columns must be a multiple of {QK} and \
                 rows of {TILE}"
            ));
        }
        let nb = cols / QK;
        let block_bytes = match kind {
            QuantType::Q4_1 => Q4_1_BYTES,
            QuantType::Q8_0 => Q8_0_BYTES,
        };
        if raw.len() != rows * nb * block_bytes {
            return Err(format!(
                "a {rows}×{cols} {kind:?} matrix takes {} bytes; {} were given",
                rows * nb * block_bytes,
                raw.len()
            ));
        }
        let tiles = rows / TILE;
        let scales_per_block = kind.scales_per_row() * TILE;
        let quants_per_block = kind.quant_bytes() * TILE;
        let mut scales = vec![f16::ZERO; tiles * nb * scales_per_block];
        let mut quants = vec![0u8; tiles * nb * quants_per_block];
        for row in 0..rows {
            let (tile, r) = (row / TILE, row % TILE);
            for b in 0..nb {
                let block = &raw[(row * nb + b) * block_bytes..(row * nb + b + 1) * block_bytes];
                let half = |at: usize| f16::from_le_bytes([block[at], block[at + 1]]);
                let s = &mut scales[(tile * nb + b) * scales_per_block..];
                let q = &mut quants[(tile * nb + b) * quants_per_block..];
                match kind {
                    QuantType::Q4_1 => {
                        s[r] = half(0);
                        s[TILE + r] = half(2);
                        // ggml: byte j holds value j (low nibble) and value j + 16 (high).
                        let values: [u8; QK] = std::array::from_fn(|j| {
                            let byte = block[4 + j % 16];
                            if j < 16 { byte & 0x0F } else { byte >> 4 }
                        });
                        for c in 0..4 {
                            for t in 0..4 {
                                q[c * TILE * 4 + r * 4 + t] =
                                    values[4 * c + t] | (values[16 + 4 * c + t] << 4);
                            }
                        }
                    }
                    QuantType::Q8_0 => {
                        s[r] = half(0);
                        for g in 0..QK / 4 {
                            for t in 0..4 {
                                q[g * TILE * 4 + r * 4 + t] = block[2 + 4 * g + t];
                            }
                        }
                    }
                }
            }
        }
        Ok(PackedMatrix {
            kind,
            rows,
            cols,
            scales,
            quants,
        })
    }

    fn blocks(&self) -> usize {
        self.cols / QK
    }

    /// `x · Wᵀ` for `m = x.len() / cols` rows of `x`: `m × rows` values, row-major.
    pub(crate) fn matmul(&self, x: &[f32]) -> Vec<f32> {
        self.matmul_with(Level::detect(), x)
    }

    pub(crate) fn matmul_with(&self, level: Level, x: &[f32]) -> Vec<f32> {
        assert_eq!(x.len() % self.cols, 0, "input is not rows of {}", self.cols);
        let m = x.len() / self.cols;
        let act = Activations::quantize(x, self.cols);
        let n = self.rows;
        let mut out = vec![0f32; m * n];
        let tiles = n / TILE;
        let out_addr = out.as_mut_ptr() as usize;
        let work = |tile: usize| {
            {
                let mut row = 0;
                while row < m {
                    let count = (m - row).min(ROWS);
                    // SAFETY: `out` holds `m × n` values and outlives the pool call, which
                    // returns only when every item is done; each (tile, row) pair is computed by
                    // one work item, which writes only that tile's TILE outputs of the row.
                    unsafe {
                        let out = (out_addr as *mut f32).add(row * n);
                        self.tile_product(level, tile, &act, row, count, out);
                    }
                    row += count;
                }
            }
        };
        pool_for_each(tiles, tiles * m >= 64, work);
        out
    }

    /// Writes outputs `tile·8 .. tile·8+8` of activation rows `row .. row+count`
    /// (`count ≤ ROWS`) to `out`, which points at the first of `count` output rows of
    /// `self.rows` values.
    ///
    /// # Safety
    /// `out` must be valid for writes of `count × self.rows` values, and `level` supported by
    /// this CPU.
    unsafe fn tile_product(
        &self,
        level: Level,
        tile: usize,
        act: &Activations,
        row: usize,
        count: usize,
        out: *mut f32,
    ) {
        let n = self.rows;
        #[cfg(not(target_arch = "x86_64"))]
        let _ = level;
        #[cfg(target_arch = "x86_64")]
        if level != Level::Scalar {
            type Kernel = unsafe fn(&PackedMatrix, usize, &Activations, usize, *mut f32);
            let (one, many): (Kernel, Kernel) = match (level == Level::Vnni, self.kind) {
                (true, QuantType::Q4_1) => (x86::q4_1_vnni::<1>, x86::q4_1_vnni::<ROWS>),
                (false, QuantType::Q4_1) => (x86::q4_1_avx2::<1>, x86::q4_1_avx2::<ROWS>),
                (true, QuantType::Q8_0) => (x86::q8_0_vnni::<1>, x86::q8_0_vnni::<ROWS>),
                (false, QuantType::Q8_0) => (x86::q8_0_avx2::<1>, x86::q8_0_avx2::<ROWS>),
            };
            if count == ROWS {
                // SAFETY: the caller gives `out` for `count` (= ROWS) rows of `n` values and a
                // `level` this CPU supports, which is what the kernel's features need.
                unsafe { many(self, tile, act, row, out) };
            } else {
                for r in 0..count {
                    // SAFETY: as above, one row at a time: `out.add(r * n)` stays within the
                    // `count × n` values the caller gave (r < count).
                    unsafe { one(self, tile, act, row + r, out.add(r * n)) };
                }
            }
            return;
        }
        for r in 0..count {
            // SAFETY: `out.add(r * n)` is the start of row r of the `count × n` values the
            // caller gave, valid for the `n` writes `tile_scalar` makes.
            unsafe { self.tile_scalar(tile, act, row + r, out.add(r * n)) };
        }
    }

    /// The reference: the same integer sums and the same f32 operations, one lane at a time.
    ///
    /// # Safety
    /// `out` must be valid for writes of `self.rows` values.
    unsafe fn tile_scalar(&self, tile: usize, act: &Activations, row: usize, out: *mut f32) {
        let nb = self.blocks();
        let spb = self.kind.scales_per_row() * TILE;
        let qpb = self.kind.quant_bytes() * TILE;
        let a_qs = &act.qs[row * self.cols..(row + 1) * self.cols];
        for r in 0..TILE {
            let mut acc = [0f32; GROUPS];
            let mut summ = 0f32;
            for b in 0..nb {
                let s = &self.scales[(tile * nb + b) * spb..(tile * nb + b + 1) * spb];
                let q = &self.quants[(tile * nb + b) * qpb..(tile * nb + b + 1) * qpb];
                let a = &a_qs[b * QK..(b + 1) * QK];
                let ab = row * nb + b;
                let scale = s[r].to_f32() * act.d[ab];
                for (g, acc) in acc.iter_mut().enumerate() {
                    let mut isum = 0i32;
                    for t in 0..4 {
                        let k = 4 * g + t;
                        let w = match self.kind {
                            QuantType::Q4_1 => {
                                let byte = q[(g % 4) * TILE * 4 + r * 4 + t];
                                i32::from(if g < 4 { byte & 0x0F } else { byte >> 4 })
                            }
                            QuantType::Q8_0 => i32::from(q[g * TILE * 4 + r * 4 + t] as i8),
                        };
                        isum += w * i32::from(a[k]);
                    }
                    *acc = scale.mul_add(isum as f32, *acc);
                }
                if self.kind == QuantType::Q4_1 {
                    summ = s[TILE + r].to_f32().mul_add(act.s[ab], summ);
                }
            }
            let total =
                ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
            let value = match self.kind {
                QuantType::Q4_1 => total + summ,
                QuantType::Q8_0 => total,
            };
            // SAFETY: `tile * TILE + r < self.rows` (tiles cover the rows exactly, r < TILE),
            // and the caller gave `out` for `self.rows` writes.
            unsafe { *out.add(tile * TILE + r) = value };
        }
    }
}

impl QuantType {
    /// f16 scales per row and block.
    fn scales_per_row(self) -> usize {
        match self {
            QuantType::Q4_1 => 2,
            QuantType::Q8_0 => 1,
        }
    }

    /// Quant bytes per row and block.
    fn quant_bytes(self) -> usize {
        match self {
            QuantType::Q4_1 => QK / 2,
            QuantType::Q8_0 => QK,
        }
    }
}

/// Rows of activations quantized to 8 bits per block of 32, as ggml's `quantize_row_q8_1` on
/// x86: `d = max|x| / 127` (kept as f16), `q = round_half_even(x · 127 / max|x|)`, and
/// `s = d · Σq` (f16) for Q4_1's minimum term.
#[derive(Debug)]
pub(crate) struct Activations {
    /// `[row][block]`, the f16 scale as f32.
    d: Vec<f32>,
    /// `[row][block]`, `d · Σq` rounded to f16, as f32.
    s: Vec<f32>,
    /// `[row][column]`.
    qs: Vec<i8>,
}

impl Activations {
    pub(crate) fn quantize(x: &[f32], cols: usize) -> Activations {
        let blocks = x.len() / QK;
        let mut act = Activations {
            d: Vec::with_capacity(blocks),
            s: Vec::with_capacity(blocks),
            qs: Vec::with_capacity(x.len()),
        };
        debug_assert_eq!(cols % QK, 0);
        for block in x.chunks_exact(QK) {
            let amax = block.iter().fold(0f32, |m, v| m.max(v.abs()));
            let d = amax / 127.0;
            let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
            let mut sum = 0i32;
            for &v in block {
                let q = round_half_even(v * id) as i32;
                sum += q;
                act.qs.push(q as i8);
            }
            act.d.push(f16::from_f32(d).to_f32());
            act.s.push(f16::from_f32(d * sum as f32).to_f32());
        }
        act
    }
}

/// Runs `work(0) .. work(n_items - 1)` on candle's barrier pool when `parallel` (the calling
/// thread takes part), else in order on the calling thread.
pub(crate) fn pool_for_each(n_items: usize, parallel: bool, work: impl Fn(usize) + Sync) {
    let range = |items: std::ops::Range<usize>| items.for_each(&work);
    if parallel {
        candle_core::utils::barrier_pool().execute_chunked(n_items, range);
    } else {
        range(0..n_items);
    }
}

/// `v.round_ties_even()` for `|v| ≤ 2²²` in the default rounding mode: adding 1.5 · 2²³ leaves
/// no fraction bits, so the addition itself rounds (half to even), and vectorizes where the
/// library call (`rintf`) does not.
#[inline(always)]
fn round_half_even(v: f32) -> f32 {
    const MAGIC: f32 = 12_582_912.0;
    (v + MAGIC) - MAGIC
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! The kernels: `R` activation rows against one tile of eight weight rows, one weight row
    //! per lane. Per lane they do what `PackedMatrix::tile_scalar` does.

    use std::arch::x86_64::*;

    use super::{Activations, GROUPS, PackedMatrix, QK, TILE};

    /// Four activations (columns `4g .. 4g+4` of a block) in every lane.
    #[inline(always)]
    unsafe fn broadcast4(a: *const i8, g: usize) -> __m256i {
        // SAFETY: the caller's `a` points at a block of QK activations and g < GROUPS, so the
        // four bytes at `4g` are inside it; the read is unaligned on purpose.
        unsafe { _mm256_set1_epi32(a.add(4 * g).cast::<i32>().read_unaligned()) }
    }

    /// Per lane, the sum of four u8 × i8 products, with VNNI.
    #[inline(always)]
    unsafe fn dot_vnni(w: __m256i, a: __m256i) -> __m256i {
        // SAFETY: register-only intrinsics; called only from kernels compiled with (and
        // chosen at run time for) avx512vnni and avx512vl.
        unsafe { _mm256_dpbusd_epi32(_mm256_setzero_si256(), w, a) }
    }

    /// The same with AVX2 (each pair of products fits in i16 for the weights used here).
    #[inline(always)]
    unsafe fn dot_avx2(w: __m256i, a: __m256i) -> __m256i {
        // SAFETY: register-only intrinsics; called only from kernels compiled with (and
        // chosen at run time for) avx2.
        unsafe { _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), _mm256_set1_epi16(1)) }
    }

    /// Eight rows' f16 values as f32.
    #[inline(always)]
    unsafe fn load_f16x8(p: *const half::f16) -> __m256 {
        // SAFETY: the caller's `p` points at eight f16 values (one per row of a tile) in the
        // packed scales; the load is unaligned on purpose; f16c is enabled by the kernels.
        unsafe { _mm256_cvtph_ps(_mm_loadu_si128(p.cast())) }
    }

    /// The eight group sums in ggml's `hsum_float_8` order.
    #[inline(always)]
    unsafe fn sum_groups(a: &[__m256; GROUPS]) -> __m256 {
        // SAFETY: register-only AVX intrinsics on values the caller holds; the kernels that
        // call it enable avx2.
        unsafe {
            let even = _mm256_add_ps(_mm256_add_ps(a[0], a[4]), _mm256_add_ps(a[2], a[6]));
            let odd = _mm256_add_ps(_mm256_add_ps(a[1], a[5]), _mm256_add_ps(a[3], a[7]));
            _mm256_add_ps(even, odd)
        }
    }

    macro_rules! kernels {
        ($q4_1:ident, $q8_0:ident, $features:literal, $dot:ident) => {
            /// Q4_1 weights (nibbles, unsigned) against 8-bit activations.
            #[target_feature(enable = $features)]
            pub(super) unsafe fn $q4_1<const R: usize>(
                w: &PackedMatrix,
                tile: usize,
                act: &Activations,
                row: usize,
                out: *mut f32,
            ) {
                // SAFETY: `tile < rows / TILE` and `row + R ≤` the activation rows (the
                // caller's loop), so every offset into `scales`, `quants`, `act.qs`, `act.d`
                // and `act.s` is inside the packed layout `PackedMatrix::from_ggml` and
                // `Activations::quantize` made; `out` is valid for `R × n` writes (the
                // caller's contract); the features are enabled on this function and checked
                // at run time before it is chosen.
                unsafe {
                    let nb = w.cols / QK;
                    let n = w.rows;
                    let scales = w.scales.as_ptr().add(tile * nb * 2 * TILE);
                    let quants = w.quants.as_ptr().add(tile * nb * (QK / 2) * TILE);
                    let mask = _mm256_set1_epi8(0x0F);
                    let mut acc = [[_mm256_setzero_ps(); GROUPS]; R];
                    let mut summ = [_mm256_setzero_ps(); R];
                    for b in 0..nb {
                        let s = scales.add(b * 2 * TILE);
                        let d = load_f16x8(s);
                        let m = load_f16x8(s.add(TILE));
                        let q = quants.add(b * (QK / 2) * TILE);
                        let mut wq = [_mm256_setzero_si256(); GROUPS];
                        for c in 0..4 {
                            let raw = _mm256_loadu_si256(q.add(c * 32).cast());
                            wq[c] = _mm256_and_si256(raw, mask);
                            wq[c + 4] = _mm256_and_si256(_mm256_srli_epi16::<4>(raw), mask);
                        }
                        for r in 0..R {
                            let ab = (row + r) * nb + b;
                            let a = act.qs.as_ptr().add(ab * QK);
                            let scale = _mm256_mul_ps(d, _mm256_set1_ps(*act.d.get_unchecked(ab)));
                            for g in 0..GROUPS {
                                let isum = _mm256_cvtepi32_ps($dot(wq[g], broadcast4(a, g)));
                                acc[r][g] = _mm256_fmadd_ps(scale, isum, acc[r][g]);
                            }
                            let s = _mm256_set1_ps(*act.s.get_unchecked(ab));
                            summ[r] = _mm256_fmadd_ps(m, s, summ[r]);
                        }
                    }
                    for r in 0..R {
                        let total = _mm256_add_ps(sum_groups(&acc[r]), summ[r]);
                        _mm256_storeu_ps(out.add(r * n + tile * TILE), total);
                    }
                }
            }

            /// Q8_0 weights (signed) against 8-bit activations: the weight's sign moves onto
            /// the activation (`|w| · sign(a, w)`), so the products are unsigned × signed.
            #[target_feature(enable = $features)]
            pub(super) unsafe fn $q8_0<const R: usize>(
                w: &PackedMatrix,
                tile: usize,
                act: &Activations,
                row: usize,
                out: *mut f32,
            ) {
                // SAFETY: as for the Q4_1 kernel: offsets within the packed layout, `out`
                // valid for `R × n` writes, features enabled and checked at run time.
                unsafe {
                    let nb = w.cols / QK;
                    let n = w.rows;
                    let scales = w.scales.as_ptr().add(tile * nb * TILE);
                    let quants = w.quants.as_ptr().add(tile * nb * QK * TILE);
                    let mut acc = [[_mm256_setzero_ps(); GROUPS]; R];
                    for b in 0..nb {
                        let d = load_f16x8(scales.add(b * TILE));
                        let q = quants.add(b * QK * TILE);
                        let mut wq = [_mm256_setzero_si256(); GROUPS];
                        let mut wabs = [_mm256_setzero_si256(); GROUPS];
                        for g in 0..GROUPS {
                            wq[g] = _mm256_loadu_si256(q.add(g * 32).cast());
                            wabs[g] = _mm256_sign_epi8(wq[g], wq[g]);
                        }
                        for r in 0..R {
                            let ab = (row + r) * nb + b;
                            let a = act.qs.as_ptr().add(ab * QK);
                            let scale = _mm256_mul_ps(d, _mm256_set1_ps(*act.d.get_unchecked(ab)));
                            for g in 0..GROUPS {
                                let signed = _mm256_sign_epi8(broadcast4(a, g), wq[g]);
                                let isum = _mm256_cvtepi32_ps($dot(wabs[g], signed));
                                acc[r][g] = _mm256_fmadd_ps(scale, isum, acc[r][g]);
                            }
                        }
                    }
                    for r in 0..R {
                        _mm256_storeu_ps(out.add(r * n + tile * TILE), sum_groups(&acc[r]));
                    }
                }
            }
        };
    }

    kernels!(
        q4_1_vnni,
        q8_0_vnni,
        "avx2,fma,f16c,avx512f,avx512vl,avx512vnni",
        dot_vnni
    );
    kernels!(q4_1_avx2, q8_0_avx2, "avx2,fma,f16c", dot_avx2);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Random ggml blocks of `kind` for a `rows × cols` matrix, and their f32 values.
    fn random_matrix(kind: QuantType, rows: usize, cols: usize, seed: u64) -> (Vec<u8>, Vec<f32>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut raw = Vec::new();
        let mut dense = Vec::new();
        for _ in 0..rows * cols / QK {
            let d = f16::from_f32(rng.random_range(0.001..0.05));
            match kind {
                QuantType::Q4_1 => {
                    let m = f16::from_f32(rng.random_range(-0.4..0.0));
                    raw.extend_from_slice(&d.to_le_bytes());
                    raw.extend_from_slice(&m.to_le_bytes());
                    let q: Vec<u8> = (0..QK).map(|_| rng.random_range(0..16u8)).collect();
                    for j in 0..16 {
                        raw.push(q[j] | (q[j + 16] << 4));
                    }
                    dense.extend(q.iter().map(|&v| d.to_f32() * f32::from(v) + m.to_f32()));
                }
                QuantType::Q8_0 => {
                    raw.extend_from_slice(&d.to_le_bytes());
                    let q: Vec<i8> = (0..QK).map(|_| rng.random_range(-127..=127i8)).collect();
                    raw.extend(q.iter().map(|&v| v as u8));
                    dense.extend(q.iter().map(|&v| d.to_f32() * f32::from(v)));
                }
            }
        }
        (raw, dense)
    }

    fn random_input(m: usize, cols: usize, seed: u64) -> Vec<f32> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..m * cols).map(|_| rng.random_range(-2.0..2.0)).collect()
    }

    #[test]
    fn every_level_equals_the_scalar_reference_bit_for_bit() {
        for kind in [QuantType::Q4_1, QuantType::Q8_0] {
            let (rows, cols) = (24, 96);
            let (raw, _) = random_matrix(kind, rows, cols, 1);
            let w = PackedMatrix::from_ggml(kind, rows, cols, &raw).unwrap();
            // 1 row (decode), 4 (one full group), 7 (a group and three single rows).
            for m in [1, 4, 7, 70] {
                let x = random_input(m, cols, m as u64);
                let reference = w.matmul_with(Level::Scalar, &x);
                for level in Level::available() {
                    let got = w.matmul_with(level, &x);
                    let same = got
                        .iter()
                        .zip(&reference)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(
                        same,
                        "{kind:?}, {m} rows, {level:?} differs from the scalar kernel"
                    );
                }
            }
        }
    }

    #[test]
    fn products_approximate_the_dense_matrix() {
        for kind in [QuantType::Q4_1, QuantType::Q8_0] {
            let (rows, cols) = (16, 256);
            let (raw, dense) = random_matrix(kind, rows, cols, 7);
            let w = PackedMatrix::from_ggml(kind, rows, cols, &raw).unwrap();
            let x = random_input(3, cols, 9);
            let got = w.matmul(&x);
            for i in 0..3 {
                for j in 0..rows {
                    let exact: f32 = (0..cols)
                        .map(|k| x[i * cols + k] * dense[j * cols + k])
                        .sum();
                    let scale: f32 = (0..cols)
                        .map(|k| (x[i * cols + k] * dense[j * cols + k]).abs())
                        .sum();
                    let err = (got[i * rows + j] - exact).abs();
                    // 8-bit activations: about 1/254 of each term at worst.
                    assert!(
                        err <= scale / 100.0,
                        "{kind:?} ({i}, {j}): {} vs {exact}",
                        got[i * rows + j]
                    );
                }
            }
        }
    }

    #[test]
    fn activations_quantize_as_ggml_does() {
        // max 127 → d = 1 and id = 1: ties round to even (0.5 → 0, 1.5 → 2, 2.5 → 2).
        let mut x = vec![0f32; QK];
        x[..5].copy_from_slice(&[127.0, 0.5, 1.5, 2.5, -127.0]);
        let act = Activations::quantize(&x, QK);
        assert_eq!(&act.qs[..5], &[127, 0, 2, 2, -127]);
        assert_eq!((act.d[0], act.s[0]), (1.0, 4.0));
        // 0.3 / 127 is not an f16: d is kept rounded, as ggml stores it.
        let act = Activations::quantize(&[0.3; QK], QK);
        assert_eq!(act.qs, vec![127; QK]);
        assert_eq!(act.d[0], f16::from_f32(0.3 / 127.0).to_f32());
        assert_ne!(act.d[0], 0.3 / 127.0);
        for v in [
            -127.0f32, -2.5, -0.5, -0.49, 0.0, 0.5, 1.5, 2.5, 3.5, 126.5, 127.0,
        ] {
            assert_eq!(round_half_even(v), v.round_ties_even(), "{v}");
        }
        let zeros = Activations::quantize(&[0.0; QK], QK);
        assert_eq!(zeros.qs, vec![0; QK]);
        assert_eq!(zeros.d[0], 0.0);
    }

    #[test]
    fn shapes_that_do_not_tile_are_refused() {
        assert!(PackedMatrix::from_ggml(QuantType::Q8_0, 4, 32, &[0; 4 * 34]).is_err());
        assert!(PackedMatrix::from_ggml(QuantType::Q8_0, 8, 32, &[0; 10]).is_err());
    }
}
