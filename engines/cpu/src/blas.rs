//! The BLAS provider ([`CpuProvider::Blas`](crate::CpuProvider::Blas)):
//! matrix products through the system's CBLAS (OpenBLAS, linked at build
//! time by `build.rs`), and the two calls it is made of for code of one's
//! own ([`gemm`], [`set_threads`]).
//!
//! OpenBLAS keeps one thread count for the whole process. The provider sets
//! it to one when the first BLAS domain starts and spreads a large product
//! over the domain's own pool instead: the result is split into blocks of
//! rows or columns, one `?gemm` call per pool thread, so a product's threads
//! are the domain's, pinned as the domain is, and two domains never share
//! OpenBLAS's pool. (Measured against OpenBLAS's own threads in
//! `compare`'s `gemm` case; docs/performance.md has the figures.)
//!
//! Every call is checked before it is made: the operands' strides must be a
//! form CBLAS has (rows or columns contiguous, leading dimension at least
//! the extent it steps over), the extents must fit CBLAS's `int`, and the
//! element type must be one of the four BLAS types by [`TypeId`]. Anything
//! else is computed by faer, so the provider never refuses a product.

use std::any::TypeId;
use std::ffi::{c_int, c_void};
use std::sync::Once;

use faer::{Accum, MatMut, MatRef, Par};

use super::parallel::{real_multiply_adds, PARALLEL_BATCH};
use weft_core::{c32, c64, Field};

/// `CBLAS_ORDER::CblasRowMajor`.
const ROW_MAJOR: c_int = 101;
/// `CBLAS_TRANSPOSE::CblasNoTrans`.
const NO_TRANS: c_int = 111;
/// `CBLAS_TRANSPOSE::CblasTrans`.
const TRANS: c_int = 112;

extern "C" {
    fn cblas_sgemm(
        order: c_int,
        trans_a: c_int,
        trans_b: c_int,
        m: c_int,
        n: c_int,
        k: c_int,
        alpha: f32,
        a: *const f32,
        lda: c_int,
        b: *const f32,
        ldb: c_int,
        beta: f32,
        c: *mut f32,
        ldc: c_int,
    );
    fn cblas_dgemm(
        order: c_int,
        trans_a: c_int,
        trans_b: c_int,
        m: c_int,
        n: c_int,
        k: c_int,
        alpha: f64,
        a: *const f64,
        lda: c_int,
        b: *const f64,
        ldb: c_int,
        beta: f64,
        c: *mut f64,
        ldc: c_int,
    );
    fn cblas_cgemm(
        order: c_int,
        trans_a: c_int,
        trans_b: c_int,
        m: c_int,
        n: c_int,
        k: c_int,
        alpha: *const c_void,
        a: *const c_void,
        lda: c_int,
        b: *const c_void,
        ldb: c_int,
        beta: *const c_void,
        c: *mut c_void,
        ldc: c_int,
    );
    fn cblas_zgemm(
        order: c_int,
        trans_a: c_int,
        trans_b: c_int,
        m: c_int,
        n: c_int,
        k: c_int,
        alpha: *const c_void,
        a: *const c_void,
        lda: c_int,
        b: *const c_void,
        ldb: c_int,
        beta: *const c_void,
        c: *mut c_void,
        ldc: c_int,
    );
    fn openblas_set_num_threads(threads: c_int);
}

/// Sets OpenBLAS to one thread, once per process: weft's pools are the
/// provider's threads.
pub(super) fn single_threaded() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| set_threads(1));
}

/// Sets OpenBLAS's thread count for the whole process (at least 1). The
/// BLAS provider sets it to 1 when the first BLAS domain starts and runs
/// OpenBLAS inside its pool tasks; code that raises it (to call [`gemm`]
/// with OpenBLAS's own threads, as `compare`'s baseline does) should set
/// it back to 1 before a BLAS domain computes again, or each of the
/// domain's pool threads starts that many of OpenBLAS's.
pub fn set_threads(threads: usize) {
    let threads = c_int::try_from(threads.max(1)).unwrap_or(c_int::MAX);
    // SAFETY: `openblas_set_num_threads` takes a plain int and only sets
    // OpenBLAS's thread count.
    unsafe { openblas_set_num_threads(threads) };
}

/// `c = a @ b` over `threads` threads of the current rayon pool (on this
/// thread alone below [`PARALLEL_BATCH`] real multiply-adds: a woken
/// thread would arrive when the product is done).
pub(super) fn product<T: Field>(
    c: MatMut<'_, T>,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    threads: usize,
) {
    if threads <= 1 || real_multiply_adds::<T>(c.nrows(), a.ncols(), c.ncols()) < PARALLEL_BATCH {
        return gemm(c, a, b);
    }
    // Blocks of rows of `c` (and `a`) or of columns (and `b`), whichever
    // is longer, half the threads to each side.
    let (m, n) = (c.nrows(), c.ncols());
    let left = threads / 2;
    if m >= n {
        let mid = m * left / threads;
        if mid == 0 {
            return gemm(c, a, b);
        }
        let (c0, c1) = c.split_at_row_mut(mid);
        let (a0, a1) = a.split_at_row(mid);
        rayon::join(
            || product(c0, a0, b, left),
            || product(c1, a1, b, threads - left),
        );
    } else {
        let mid = n * left / threads;
        if mid == 0 {
            return gemm(c, a, b);
        }
        let (c0, c1) = c.split_at_col_mut(mid);
        let (b0, b1) = b.split_at_col(mid);
        rayon::join(
            || product(c0, a, b0, left),
            || product(c1, a, b1, threads - left),
        );
    }
}

/// `c = a @ b` by one CBLAS call from this thread (OpenBLAS's own
/// threads, if [`set_threads`] raised them), or by faer on this thread
/// where CBLAS has no form for the operands or the type.
///
/// # Panics
///
/// If the shapes do not multiply: `a` is `m × k`, `b` `k × n`, `c`
/// `m × n`.
pub fn gemm<T: Field>(c: MatMut<'_, T>, a: MatRef<'_, T>, b: MatRef<'_, T>) {
    let (m, n, k) = (c.nrows(), c.ncols(), a.ncols());
    assert!(
        a.nrows() == m && b.nrows() == k && b.ncols() == n,
        "blas::gemm: {}×{} @ {}×{} into {m}×{n}",
        a.nrows(),
        k,
        b.nrows(),
        b.ncols()
    );
    let shape = |x: usize| c_int::try_from(x).ok().filter(|_| k > 0);
    let call = match (
        shape(m),
        shape(n),
        shape(k),
        operand(a.nrows(), k, a.row_stride(), a.col_stride()),
        operand(k, n, b.row_stride(), b.col_stride()),
        operand(m, n, c.row_stride(), c.col_stride()),
    ) {
        (Some(m), Some(n), Some(k), Some(a_form), Some(b_form), Some((NO_TRANS, ldc))) => {
            Some(Call {
                m,
                n,
                k,
                a: a_form,
                b: b_form,
                ldc,
            })
        }
        _ => None,
    };
    let done = call.is_some_and(|call| {
        call.run(
            a.as_ptr().cast(),
            b.as_ptr().cast(),
            c.as_ptr_mut().cast(),
            TypeId::of::<T>(),
        )
    });
    if !done {
        faer::linalg::matmul::matmul(c, Accum::Replace, a, b, T::ONE, Par::Seq);
    }
}

/// The CBLAS form of an `rows × cols` operand with these strides, in
/// row-major terms: `(NO_TRANS, ld)` for contiguous rows `ld` apart,
/// `(TRANS, ld)` for contiguous columns `ld` apart.
fn operand(
    rows: usize,
    cols: usize,
    row_stride: isize,
    col_stride: isize,
) -> Option<(c_int, c_int)> {
    let fits = |ld: isize, extent: usize| {
        let ld = c_int::try_from(ld).ok()?;
        (usize::try_from(ld).ok()? >= extent.max(1)).then_some(ld)
    };
    // A single row (column) has no row (column) stride that matters: it
    // is given the least leading dimension CBLAS takes.
    let least = |extent: usize| isize::try_from(extent.max(1)).unwrap_or(isize::MAX);
    let rows_form = (col_stride == 1 || cols == 1)
        .then(|| fits(if rows <= 1 { least(cols) } else { row_stride }, cols))
        .flatten()
        .map(|ld| (NO_TRANS, ld));
    rows_form.or_else(|| {
        (row_stride == 1 || rows == 1)
            .then(|| fits(if cols <= 1 { least(rows) } else { col_stride }, rows))
            .flatten()
            .map(|ld| (TRANS, ld))
    })
}

/// A checked `?gemm`: extents that fit CBLAS's `int`, operand forms from
/// [`operand`], a row-major result `ldc` apart.
#[derive(Clone, Copy)]
struct Call {
    m: c_int,
    n: c_int,
    k: c_int,
    a: (c_int, c_int),
    b: (c_int, c_int),
    ldc: c_int,
}

impl Call {
    /// Runs the call for the element type `ty` on these base pointers;
    /// `false` (nothing done) for a type CBLAS does not have.
    fn run(self, a: *const c_void, b: *const c_void, c: *mut c_void, ty: TypeId) -> bool {
        let Call { m, n, k, ldc, .. } = self;
        let ((ta, lda), (tb, ldb)) = (self.a, self.b);
        macro_rules! gemm {
            ($f:ident, $one:expr, $zero:expr) => {
                $f(
                    ROW_MAJOR,
                    ta,
                    tb,
                    m,
                    n,
                    k,
                    $one,
                    a.cast(),
                    lda,
                    b.cast(),
                    ldb,
                    $zero,
                    c.cast(),
                    ldc,
                )
            };
        }
        let (one32, zero32) = (c32::new(1.0, 0.0), c32::new(0.0, 0.0));
        let (one64, zero64) = (c64::new(1.0, 0.0), c64::new(0.0, 0.0));
        // SAFETY: (all four arms) `a`, `b` and `c` are the base pointers of
        // faer views of `m × k`, `k × n` and `m × n` elements of the type
        // that `ty` names (compared by `TypeId`, so the casts are to the
        // element's own type; c32 and c64 are `repr(C)` pairs of re, im,
        // CBLAS's complex layout). Each operand's form came from `operand`
        // on the view's own extents and strides, so CBLAS reads exactly the
        // view's elements: contiguous along one axis, `ld` apart along the
        // other, with `ld` at least that axis's extent. `c` comes from a
        // `MatMut`, borrowed exclusively, so it overlaps neither input.
        // With beta 0, CBLAS writes every element of `c` without reading
        // it. The complex scalars live to the end of this function.
        unsafe {
            if ty == TypeId::of::<f32>() {
                gemm!(cblas_sgemm, 1.0, 0.0);
            } else if ty == TypeId::of::<f64>() {
                gemm!(cblas_dgemm, 1.0, 0.0);
            } else if ty == TypeId::of::<c32>() {
                gemm!(
                    cblas_cgemm,
                    (&raw const one32).cast(),
                    (&raw const zero32).cast()
                );
            } else if ty == TypeId::of::<c64>() {
                gemm!(
                    cblas_zgemm,
                    (&raw const one64).cast(),
                    (&raw const zero64).cast()
                );
            } else {
                return false;
            }
        }
        #[cfg(test)]
        tests::CALLS.with(|calls| calls.set(calls.get() + 1));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        /// CBLAS calls made on this thread, so a test can tell that a
        /// product went to BLAS and not to the fallback.
        pub(super) static CALLS: Cell<usize> = const { Cell::new(0) };
    }

    fn calls() -> usize {
        CALLS.with(Cell::get)
    }

    #[test]
    fn products_reach_cblas_in_both_forms_and_fall_back_without_one() {
        let (m, k, n) = (5, 7, 3);
        let a: Vec<f64> = (0..m * k).map(|i| i as f64 * 0.5).collect();
        let b: Vec<f64> = (0..k * n).map(|i| 1.0 - i as f64 * 0.25).collect();
        let mut want = vec![0.0; m * n];
        faer::linalg::matmul::matmul(
            MatMut::from_row_major_slice_mut(&mut want, m, n),
            Accum::Replace,
            MatRef::from_row_major_slice(&a, m, k),
            MatRef::from_row_major_slice(&b, k, n),
            1.0,
            Par::Seq,
        );
        // `a` read row-major, `b` through a column-major copy (TRANS).
        let bt: Vec<f64> = (0..n)
            .flat_map(|j| (0..k).map(move |p| (p, j)))
            .map(|(p, j)| b[p * n + j])
            .collect();
        let forms = [
            MatRef::from_row_major_slice(&b, k, n),
            MatRef::from_column_major_slice(&bt, k, n),
        ];
        for b_view in forms {
            let before = calls();
            let mut c = vec![f64::NAN; m * n];
            gemm(
                MatMut::from_row_major_slice_mut(&mut c, m, n),
                MatRef::from_row_major_slice(&a, m, k),
                b_view,
            );
            assert!(calls() > before, "not computed by CBLAS");
            for (g, w) in c.iter().zip(&want) {
                assert!((g - w).abs() <= 1e-12 * (1.0 + w.abs()), "{g} vs {w}");
            }
        }
        // Columns read backwards (stride -1): no CBLAS form, faer computes
        // it; the result is the product with `a`'s columns reversed.
        let reversed = MatRef::from_row_major_slice(&a, m, k).reverse_cols();
        let before = calls();
        let mut c = vec![f64::NAN; m * n];
        gemm(
            MatMut::from_row_major_slice_mut(&mut c, m, n),
            reversed,
            forms[0],
        );
        assert_eq!(calls(), before, "a stride CBLAS has no form for");
        for i in 0..m {
            for j in 0..n {
                let w: f64 = (0..k).map(|p| a[i * k + (k - 1 - p)] * b[p * n + j]).sum();
                assert!((c[i * n + j] - w).abs() <= 1e-12 * (1.0 + w.abs()));
            }
        }
    }

    #[test]
    fn shapes_that_do_not_multiply_panic_before_any_call() {
        let (a, b, mut c) = (vec![1.0f64; 6], vec![1.0f64; 6], vec![0.0f64; 4]);
        let before = calls();
        let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            gemm(
                MatMut::from_row_major_slice_mut(&mut c, 2, 2),
                MatRef::from_row_major_slice(&a, 2, 3),
                MatRef::from_row_major_slice(&b, 2, 3),
            );
        }));
        assert!(refused.is_err());
        assert_eq!(calls(), before);
    }

    #[test]
    fn operand_forms_follow_the_strides() {
        // Row-major 3×4, rows 4 apart (or further: a sub-block).
        assert_eq!(operand(3, 4, 4, 1), Some((NO_TRANS, 4)));
        assert_eq!(operand(3, 4, 9, 1), Some((NO_TRANS, 9)));
        // Column-major 3×4: the transpose of a row-major 4×3.
        assert_eq!(operand(3, 4, 1, 3), Some((TRANS, 3)));
        // One row or one column: its other stride does not matter.
        assert_eq!(operand(1, 4, 0, 1), Some((NO_TRANS, 4)));
        assert_eq!(operand(4, 1, 1, 0), Some((NO_TRANS, 1)));
        // Neither axis contiguous, overlapping rows, a negative stride.
        assert_eq!(operand(3, 4, 8, 2), None);
        assert_eq!(operand(3, 4, 2, 1), None);
        assert_eq!(operand(3, 4, -4, 1), None);
    }
}
