// The structural kernels: strided copies (permutations, slices,
// reversals, broadcasts, diagonals, concatenations), gathers, scatters
// and triangles.

// dst[b1 + Σ index·s1] = src[b0 + Σ index·s0]: permutations, slices,
// reversals, broadcasts, diagonals, and the parts of a concatenation.
extern "C" __global__ void K(strided_copy)(T *dst, const T *src, Dims d) {
    GRID_STRIDE(i, d.n) {
        long long from, to;
        offsets(d, i, &from, &to);
        dst[to] = src[from];
    }
}

// Gather along an axis (and compress: one row, `post` 1):
// out[(p·m + k)·post + q] = x[(p·extent + at[k])·post + q]. The host
// checked every position against `extent` before it uploaded `at`.
extern "C" __global__ void K(take)(T *out, const T *x, const long long *at, long long pre,
                                  long long m, long long post, long long extent) {
    GRID_STRIDE(i, pre * m * post) {
        long long q = i % post, r = i / post;
        long long k = r % m, p = r / m;
        out[i] = x[(p * extent + at[k]) * post + q];
    }
}

// Scatter into `out` in place, one thread per (p, target, q), so no two
// threads write one element. `plan` holds the `u` distinct targets along
// the axis, then `u + 1` offsets into the update positions that follow
// (update k of the `n` along the axis, in the index tensor's order):
// target t's updates are src[start[t]..start[t + 1]], at least one. A set
// writes the last of them; an add adds them all to what is there in that
// order, as the CPU does.
extern "C" __global__ void K(put)(T *out, const T *upd, const long long *plan, long long pre,
                                 long long u, long long n, long long post, long long extent,
                                 int add) {
    const long long *dst = plan, *start = plan + u, *src = plan + 2 * u + 1;
    GRID_STRIDE(i, pre * u * post) {
        long long q = i % post, r = i / post;
        long long t = r % u, p = r / u;
        T *o = out + (p * extent + dst[t]) * post + q;
        const T *from = upd + p * n * post + q;
        if (!add) {
            *o = from[src[start[t + 1] - 1] * post];
        } else {
            T acc = *o;
            for (long long j = start[t]; j < start[t + 1]; j++) acc = binary(acc, from[src[j] * post], BINARY_ADD);
            *o = acc;
        }
    }
}

// The lower (j - i <= k) or upper (j - i >= k) triangle of each of the
// `rows × cols` matrices, zeros elsewhere.
extern "C" __global__ void K(triangle)(T *out, const T *a, long long rows, long long cols,
                                      long long k, int upper, long long n) {
    GRID_STRIDE(idx, n) {
        long long i = (idx / cols) % rows, j = idx % cols;
        long long d = j - i;
        if (upper ? d >= k : d <= k) {
            out[idx] = a[idx];
        } else {
            from_real(out[idx], 0.0);
        }
    }
}
