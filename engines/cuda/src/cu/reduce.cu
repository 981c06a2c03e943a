// The row reductions: sum, prod, max, min, mean, any and all (of bool:
// the host converts to it first), the norm, and argmax and argmin.
template <typename F> __device__ __forceinline__ F identity(int op) {
    switch (op) {
    case REDUCE_PROD: return (F)1;
    case REDUCE_MAX: return -r_inf((F)0);
    case REDUCE_MIN: return r_inf((F)0);
    default: return (F)0;
    }
}
template <typename F> __device__ __forceinline__ cx<F> identity_cx(int op) {
    return mk<F>(op == REDUCE_PROD ? (F)1 : (F)0, (F)0);
}
__device__ __forceinline__ void set_identity(float &x, int op) { x = identity<float>(op); }
__device__ __forceinline__ void set_identity(double &x, int op) { x = identity<double>(op); }
template <typename F> __device__ __forceinline__ void set_identity(cx<F> &x, int op) {
    x = identity_cx<F>(op);
}
template <typename F> __device__ __forceinline__ F combine(F a, F b, int op) {
    switch (op) {
    case REDUCE_PROD: return a * b;
    case REDUCE_MAX: return binary(a, b, BINARY_MAXIMUM);
    case REDUCE_MIN: return binary(a, b, BINARY_MINIMUM);
    default: return a + b;
    }
}
template <typename F> __device__ __forceinline__ cx<F> combine(cx<F> a, cx<F> b, int op) {
    return op == REDUCE_PROD ? a * b : a + b;
}
// Integers: sum and prod wrap; max, min. Bool: max and any are or, min
// and all are and.
__device__ __forceinline__ void set_identity(int &x, int op) {
    x = op == REDUCE_PROD ? 1
        : (op == REDUCE_MAX ? (int)(-0x7fffffff - 1) : (op == REDUCE_MIN ? 0x7fffffff : 0));
}
__device__ __forceinline__ void set_identity(long long &x, int op) {
    x = op == REDUCE_PROD ? 1
        : (op == REDUCE_MAX ? (long long)(-0x7fffffffffffffffLL - 1)
                            : (op == REDUCE_MIN ? 0x7fffffffffffffffLL : 0));
}
__device__ __forceinline__ void set_identity(unsigned char &x, int op) {
    x = (op == REDUCE_MIN || op == REDUCE_ALL) ? 1 : 0;
}
// The binary op that combines two integers for reduction `op`.
__device__ __forceinline__ int int_combiner(int op) {
    switch (op) {
    case REDUCE_PROD: return BINARY_MUL;
    case REDUCE_MAX: return BINARY_MAXIMUM;
    case REDUCE_MIN: return BINARY_MINIMUM;
    default: return BINARY_ADD;
    }
}
__device__ __forceinline__ int combine(int a, int b, int op) {
    return binary(a, b, int_combiner(op));
}
__device__ __forceinline__ long long combine(long long a, long long b, int op) {
    return binary(a, b, int_combiner(op));
}
__device__ __forceinline__ unsigned char combine(unsigned char a, unsigned char b, int op) {
    return (op == REDUCE_MIN || op == REDUCE_ALL) ? (a & b) : (a | b);
}
template <typename F> __device__ __forceinline__ F divide(F a, double n) { return a / (F)n; }
template <typename F> __device__ __forceinline__ cx<F> divide(cx<F> a, double n) {
    return scale(a, (F)1 / (F)n);
}

#define REDUCE_THREADS 256

// The first segment of this block's turn, and the segment and lane of
// this thread in it.
#define SEGMENTS(first, seg, lane, total, width)                                                \
    const long long per_block = REDUCE_THREADS / (width);                                       \
    const int lane = threadIdx.x % (width);                                                     \
    for (long long first = (long long)blockIdx.x * per_block, seg = first + threadIdx.x / (width); \
         first < (total); first += (long long)gridDim.x * per_block, seg = first + threadIdx.x / (width))

// Rows of `len` contiguous elements (the reduced axes moved last), each cut
// into `parts` equal ranges, a segment each: segment `b` is range
// `b % parts` of row `b / parts`, reduced into out[b]. A segment is taken
// by `width` consecutive threads (a power of two dividing the block, no
// wider than the segment needs, so a block packs REDUCE_THREADS / width
// short rows instead of one); the grid loops over the segments beyond it.
// One part gives the rows' results; several give partials that a second
// launch combines. A mean divides by `count` (the row's full length), a
// sum of partials not. Threads past the last segment still take part in
// every barrier.
__device__ __forceinline__ void part_range(long long b, long long parts, long long len,
                                           long long *begin, long long *end) {
    long long per = (len + parts - 1) / parts;
    long long part = b % parts;
    *begin = part * per < len ? part * per : len;
    *end = *begin + per < len ? *begin + per : len;
}

extern "C" __global__ void K(reduce)(T *out, const T *a, long long rows, long long len,
                                    long long parts, int width, int op, double count) {
    __shared__ T part[REDUCE_THREADS];
    SEGMENTS(first, b, lane, rows * parts, width) {
        T acc;
        set_identity(acc, op);
        if (b < rows * parts) {
            const T *x = a + (b / parts) * len;
            long long begin, end;
            part_range(b, parts, len, &begin, &end);
            for (long long j = begin + lane; j < end; j += width) acc = combine(acc, x[j], op);
        }
        part[threadIdx.x] = acc;
        __syncthreads();
        for (int s = width / 2; s > 0; s >>= 1) {
            if (lane < s) part[threadIdx.x] = combine(part[threadIdx.x], part[threadIdx.x + s], op);
            __syncthreads();
        }
        if (lane == 0 && b < rows * parts)
            out[b] = op == REDUCE_MEAN ? divide(part[threadIdx.x], count) : part[threadIdx.x];
        __syncthreads();
    }
}

#ifndef KIND_COMPLEX
// Whether (v, i) beats (best, at) for argmax (`want_max`) or argmin: a
// NaN beats every number, the earlier index wins ties (NumPy's rule).
__device__ __forceinline__ bool beats(T v, long long i, T best, long long at, int want_max) {
    bool v_nan = v != v, best_nan = best != best;
    if (best_nan) return v_nan && i < at;
    if (v_nan) return true;
    if (v == best) return i < at;
    return want_max ? v > best : v < best;
}

// The index of each row's extremum, `width` threads per row (`parts` is
// 1, `len` at least 1).
extern "C" __global__ void K(arg_reduce)(long long *out, const T *a, long long rows,
                                        long long len, long long parts, int width, int want_max) {
    __shared__ T vals[REDUCE_THREADS];
    __shared__ long long at[REDUCE_THREADS];
    SEGMENTS(first, r, lane, rows, width) {
        long long best = -1;
        T bv = a[0];
        if (r < rows) {
            const T *x = a + r * len;
            for (long long j = lane; j < len; j += width) {
                if (best < 0 || beats(x[j], j, bv, best, want_max)) {
                    bv = x[j];
                    best = j;
                }
            }
        }
        vals[threadIdx.x] = bv;
        at[threadIdx.x] = best;
        __syncthreads();
        for (int s = width / 2; s > 0; s >>= 1) {
            if (lane < s) {
                long long j = at[threadIdx.x + s];
                if (j >= 0 && (at[threadIdx.x] < 0 ||
                               beats(vals[threadIdx.x + s], j, vals[threadIdx.x], at[threadIdx.x], want_max))) {
                    vals[threadIdx.x] = vals[threadIdx.x + s];
                    at[threadIdx.x] = j;
                }
            }
            __syncthreads();
        }
        if (lane == 0 && r < rows) out[r] = at[threadIdx.x];
        __syncthreads();
    }
}
#endif

#ifdef KIND_FIELD
// Sums of |x|² per part, in the real type (`squared`: the input already
// holds such sums, as real numbers), and their square roots if `root`.
extern "C" __global__ void K(norm)(R *out, const T *a, long long rows, long long len,
                                  long long parts, int width, int squared, int root) {
    __shared__ R part[REDUCE_THREADS];
    SEGMENTS(first, b, lane, rows * parts, width) {
        R acc = (R)0;
        if (b < rows * parts) {
            const T *x = a + (b / parts) * len;
            long long begin, end;
            part_range(b, parts, len, &begin, &end);
            for (long long j = begin + lane; j < end; j += width)
                acc += squared ? magnitude(x[j]) : magnitude2(x[j]);
        }
        part[threadIdx.x] = acc;
        __syncthreads();
        for (int s = width / 2; s > 0; s >>= 1) {
            if (lane < s) part[threadIdx.x] += part[threadIdx.x + s];
            __syncthreads();
        }
        if (lane == 0 && b < rows * parts) out[b] = root ? r_sqrt(part[threadIdx.x]) : part[threadIdx.x];
        __syncthreads();
    }
}
#endif
