//! Matrix products on strided views of plain slices, through the `gemm` crate (candle's own
//! matrix product kernels, AVX-512 where the CPU has it).
//!
//! Calling `gemm` directly rather than through candle tensors saves a copy of every input and
//! output, and lets attention read each head's queries, keys and values where the QKV product
//! left them (strides) instead of gathering them first.
#![allow(unsafe_code)]

use gemm::Parallelism;

/// A `rows × columns` matrix inside a slice: element (i, j) is at
/// `offset + i × row_stride + j × column_stride`.
#[derive(Debug, Clone, Copy)]
pub(super) struct View<'a> {
    pub data: &'a [f32],
    pub offset: usize,
    pub rows: usize,
    pub columns: usize,
    pub row_stride: usize,
    pub column_stride: usize,
}

impl<'a> View<'a> {
    /// A contiguous row-major matrix: all of `data`, `columns` wide.
    pub(super) fn row_major(data: &'a [f32], columns: usize) -> View<'a> {
        View {
            data,
            offset: 0,
            rows: data.len() / columns.max(1),
            columns,
            row_stride: columns,
            column_stride: 1,
        }
    }

    /// Whether every element the view names lies inside its slice.
    fn in_bounds(&self) -> bool {
        if self.rows == 0 || self.columns == 0 {
            return true;
        }
        let last = (self.rows - 1)
            .checked_mul(self.row_stride)
            .zip((self.columns - 1).checked_mul(self.column_stride))
            .and_then(|(a, b)| a.checked_add(b))
            .and_then(|a| a.checked_add(self.offset));
        last.is_some_and(|last| last < self.data.len())
    }
}

/// `dst ← lhs · rhs`, `dst` being `lhs.rows × rhs.columns` at `dst[offset..]` with rows
/// `dst_row_stride` apart (at least `rhs.columns`, so no two elements coincide); splits the
/// work over the current rayon pool's threads.
///
/// # Panics
/// When the shapes do not agree or a view reaches past its slice.
pub(super) fn matmul(
    dst: &mut [f32],
    dst_offset: usize,
    dst_row_stride: usize,
    lhs: View<'_>,
    rhs: View<'_>,
) {
    let (m, k, n) = (lhs.rows, lhs.columns, rhs.columns);
    assert_eq!(k, rhs.rows, "matmul: lhs is {m}×{k}, rhs {}×{n}", rhs.rows);
    assert!(dst_row_stride >= n, "matmul: destination rows overlap");
    assert!(
        lhs.in_bounds() && rhs.in_bounds(),
        "matmul: a view is out of bounds"
    );
    let dst_view = View {
        data: dst,
        offset: dst_offset,
        rows: m,
        columns: n,
        row_stride: dst_row_stride,
        column_stride: 1,
    };
    assert!(
        dst_view.in_bounds(),
        "matmul: the destination is out of bounds"
    );
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        for row in 0..m {
            let at = dst_offset + row * dst_row_stride;
            dst[at..at + n].fill(0.0);
        }
        return;
    }
    let threads = rayon::current_num_threads();
    let parallelism = if threads > 1 {
        Parallelism::Rayon(threads)
    } else {
        Parallelism::None
    };
    let stride = |s: usize| isize::try_from(s).expect("a stride fits in isize");
    // SAFETY: the asserts above keep every element gemm reads (lhs, rhs) or writes (dst: m × n,
    // rows `dst_row_stride` ≥ n apart, columns adjacent, so each element written once) inside
    // its slice; `dst` is borrowed mutably and the inputs shared, so they cannot overlap; with
    // `read_dst` false gemm writes dst without reading it (alpha is ignored).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr().add(dst_offset),
            1,
            stride(dst_row_stride),
            false,
            lhs.data.as_ptr().add(lhs.offset),
            stride(lhs.column_stride),
            stride(lhs.row_stride),
            rhs.data.as_ptr().add(rhs.offset),
            stride(rhs.column_stride),
            stride(rhs.row_stride),
            0.0,
            1.0,
            false,
            false,
            false,
            parallelism,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The product by its definition, in f64.
    fn naive(lhs: &View<'_>, rhs: &View<'_>) -> Vec<f64> {
        let at = |v: &View<'_>, i: usize, j: usize| {
            f64::from(v.data[v.offset + i * v.row_stride + j * v.column_stride])
        };
        let mut out = vec![0.0; lhs.rows * rhs.columns];
        for i in 0..lhs.rows {
            for j in 0..rhs.columns {
                out[i * rhs.columns + j] = (0..lhs.columns)
                    .map(|p| at(lhs, i, p) * at(rhs, p, j))
                    .sum();
            }
        }
        out
    }

    #[test]
    fn strided_views_multiply_as_their_elements_say() {
        let data: Vec<f32> = (0..600)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 17.0)
            .collect();
        // lhs: 7×5 starting at 3, rows 20 apart; rhs: a transposed 5×6 (columns 11 apart).
        let lhs = View {
            data: &data,
            offset: 3,
            rows: 7,
            columns: 5,
            row_stride: 20,
            column_stride: 1,
        };
        let rhs = View {
            data: &data,
            offset: 200,
            rows: 5,
            columns: 6,
            row_stride: 1,
            column_stride: 11,
        };
        let mut dst = vec![f32::NAN; 2 + 7 * 9];
        matmul(&mut dst, 2, 9, lhs, rhs);
        let expected = naive(&lhs, &rhs);
        for i in 0..7 {
            for j in 0..6 {
                let got = f64::from(dst[2 + i * 9 + j]);
                assert!((got - expected[i * 6 + j]).abs() < 1e-4, "({i}, {j})");
            }
            // The gaps between destination rows are left alone.
            assert!(dst[2 + i * 9 + 6..2 + i * 9 + 9].iter().all(|v| v.is_nan()));
        }
        assert!(dst[0].is_nan() && dst[1].is_nan());
    }

    #[test]
    fn a_row_major_product_matches_on_several_threads() {
        let a: Vec<f32> = (0..64 * 48).map(|i| (i % 13) as f32 * 0.25 - 1.0).collect();
        let b: Vec<f32> = (0..48 * 40).map(|i| (i % 7) as f32 * 0.5 - 1.5).collect();
        let (lhs, rhs) = (View::row_major(&a, 48), View::row_major(&b, 40));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let mut dst = vec![0f32; 64 * 40];
        pool.install(|| matmul(&mut dst, 0, 40, lhs, rhs));
        for (got, want) in dst.iter().zip(naive(&lhs, &rhs)) {
            assert!((f64::from(*got) - want).abs() < 1e-3);
        }
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn a_view_past_its_slice_is_refused() {
        let data = [1f32; 10];
        let lhs = View::row_major(&data, 5);
        let rhs = View {
            data: &data,
            offset: 6,
            rows: 5,
            columns: 1,
            row_stride: 1,
            column_stride: 1,
        };
        matmul(&mut [0f32; 2], 0, 1, lhs, rhs);
    }
}
