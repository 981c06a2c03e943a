// weft's CUDA kernels, compiled by NVRTC once per element type: the engine
// prepends `typedef <element> T;`, `typedef <real> R;`, the element type's
// suffix macro (every kernel name ends in `_f32`, `_f64`, `_c32`, `_c64`,
// `_i32`, `_i64` or `_bool`) and its kind: KIND_FIELD (floats and
// complexes, these also KIND_COMPLEX), KIND_INTEGER (int, long long) or
// KIND_BOOL (a byte, 0 or 1).
// A kernel a kind has no use for is not compiled for it. No headers: NVRTC
// provides the device math functions.
//
// Op codes match the engine's tables in `exec.rs` (`binary_code`,
// `compare_code`, `unary_code`, `reduce_code`), by hand for now.

#define MAXR 8

// A strided walk over up to three operands: element `i` of a `shape`
// (row-major) sits at `b_k + sum(index[d] * s_k[d])` in operand k.
struct Dims {
    long long n;
    long long rank;
    long long shape[MAXR];
    long long s0[MAXR];
    long long s1[MAXR];
    long long s2[MAXR];
    long long b0;
    long long b1;
    long long b2;
};

// Aligned to its size, so that one element is one 8- or 16-byte load.
template <typename F> struct alignas(2 * sizeof(F)) cx {
    F re;
    F im;
};

#define REAL_FN(name, f32fn, f64fn)                                              \
    __device__ __forceinline__ float name(float x) { return f32fn(x); }        \
    __device__ __forceinline__ double name(double x) { return f64fn(x); }
REAL_FN(r_exp, expf, exp)
REAL_FN(r_log, logf, log)
REAL_FN(r_expm1, expm1f, expm1)
REAL_FN(r_log1p, log1pf, log1p)
REAL_FN(r_sqrt, sqrtf, sqrt)
REAL_FN(r_sin, sinf, sin)
REAL_FN(r_cos, cosf, cos)
REAL_FN(r_tanh, tanhf, tanh)
REAL_FN(r_sinh, sinhf, sinh)
REAL_FN(r_cosh, coshf, cosh)
REAL_FN(r_fabs, fabsf, fabs)
REAL_FN(r_floor, floorf, floor)
__device__ __forceinline__ float r_fmod(float a, float b) { return fmodf(a, b); }
__device__ __forceinline__ double r_fmod(double a, double b) { return fmod(a, b); }
__device__ __forceinline__ float r_hypot(float a, float b) { return hypotf(a, b); }
__device__ __forceinline__ double r_hypot(double a, double b) { return hypot(a, b); }
__device__ __forceinline__ float r_atan2(float a, float b) { return atan2f(a, b); }
__device__ __forceinline__ double r_atan2(double a, double b) { return atan2(a, b); }
__device__ __forceinline__ float r_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double r_pow(double a, double b) { return pow(a, b); }
__device__ __forceinline__ float r_inf(float) { return __int_as_float(0x7f800000); }
__device__ __forceinline__ double r_inf(double) { return __longlong_as_double(0x7ff0000000000000LL); }
__device__ __forceinline__ float r_copysign(float a, float b) { return copysignf(a, b); }
__device__ __forceinline__ double r_copysign(double a, double b) { return copysign(a, b); }

template <typename F> __device__ __forceinline__ cx<F> mk(F re, F im) {
    cx<F> z;
    z.re = re;
    z.im = im;
    return z;
}

// Conversions from the host's (re, im) pair of doubles.
template <typename F> __device__ __forceinline__ void from_pair(F &out, double re, double) {
    out = (F)re;
}
template <typename F> __device__ __forceinline__ void from_pair(cx<F> &out, double re, double im) {
    out = mk<F>((F)re, (F)im);
}
template <typename F> __device__ __forceinline__ void from_real(F &out, double re) { out = (F)re; }
template <typename F> __device__ __forceinline__ void from_real(cx<F> &out, double re) {
    out = mk<F>((F)re, (F)0);
}

template <typename F> __device__ __forceinline__ cx<F> operator+(cx<F> a, cx<F> b) {
    return mk<F>(a.re + b.re, a.im + b.im);
}
template <typename F> __device__ __forceinline__ cx<F> operator-(cx<F> a, cx<F> b) {
    return mk<F>(a.re - b.re, a.im - b.im);
}
template <typename F> __device__ __forceinline__ cx<F> operator-(cx<F> a) {
    return mk<F>(-a.re, -a.im);
}
template <typename F> __device__ __forceinline__ cx<F> operator*(cx<F> a, cx<F> b) {
    return mk<F>(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}
template <typename F> __device__ __forceinline__ cx<F> operator/(cx<F> a, cx<F> b) {
    F d = b.re * b.re + b.im * b.im;
    return mk<F>((a.re * b.re + a.im * b.im) / d, (a.im * b.re - a.re * b.im) / d);
}
template <typename F> __device__ __forceinline__ cx<F> scale(cx<F> a, F s) {
    return mk<F>(a.re * s, a.im * s);
}

template <typename F> __device__ __forceinline__ F magnitude(F x) { return r_fabs(x); }
template <typename F> __device__ __forceinline__ F magnitude(cx<F> z) { return r_hypot(z.re, z.im); }
template <typename F> __device__ __forceinline__ F magnitude2(F x) { return x * x; }
template <typename F> __device__ __forceinline__ F magnitude2(cx<F> z) {
    return z.re * z.re + z.im * z.im;
}

template <typename F> __device__ __forceinline__ cx<F> c_exp(cx<F> z) {
    F e = r_exp(z.re);
    return mk<F>(e * r_cos(z.im), e * r_sin(z.im));
}
template <typename F> __device__ __forceinline__ cx<F> c_log(cx<F> z) {
    return mk<F>(r_log(r_hypot(z.re, z.im)), r_atan2(z.im, z.re));
}
template <typename F> __device__ __forceinline__ cx<F> c_sqrt(cx<F> z) {
    F r = r_hypot(z.re, z.im);
    if (r == (F)0) return mk<F>((F)0, (F)0);
    F t = r_sqrt((r + r_fabs(z.re)) / (F)2);
    if (z.re >= (F)0) return mk<F>(t, z.im / ((F)2 * t));
    return mk<F>(r_fabs(z.im) / ((F)2 * t), r_copysign(t, z.im));
}

// Unary op codes: 0 neg, 1 abs (same type: |z| + 0i), 2 sign, 3 conj,
// 4 exp, 5 log, 6 expm1, 7 log1p, 8 sqrt, 9 rsqrt, 10 sin, 11 cos, 12 tanh.
template <typename F> __device__ __forceinline__ F unary(F x, int op) {
    switch (op) {
    case 0: return -x;
    case 1: return r_fabs(x);
    case 2: return x > (F)0 ? (F)1 : (x < (F)0 ? (F)-1 : x);
    case 3: return x;
    case 4: return r_exp(x);
    case 5: return r_log(x);
    case 6: return r_expm1(x);
    case 7: return r_log1p(x);
    case 8: return r_sqrt(x);
    case 9: return (F)1 / r_sqrt(x);
    case 10: return r_sin(x);
    case 11: return r_cos(x);
    default: return r_tanh(x);
    }
}
template <typename F> __device__ __forceinline__ cx<F> unary(cx<F> z, int op) {
    cx<F> one = mk<F>((F)1, (F)0);
    switch (op) {
    case 0: return -z;
    case 1: return mk<F>(magnitude(z), (F)0);
    case 2: {
        F n = magnitude(z);
        return n == (F)0 ? z : mk<F>(z.re / n, z.im / n);
    }
    case 3: return mk<F>(z.re, -z.im);
    case 4: return c_exp(z);
    case 5: return c_log(z);
    case 6: return c_exp(z) - one;
    case 7: return c_log(one + z);
    case 8: return c_sqrt(z);
    case 9: return one / c_sqrt(z);
    case 10: return mk<F>(r_sin(z.re) * r_cosh(z.im), r_cos(z.re) * r_sinh(z.im));
    case 11: return mk<F>(r_cos(z.re) * r_cosh(z.im), -r_sin(z.re) * r_sinh(z.im));
    default: {
        F d = r_cosh((F)2 * z.re) + r_cos((F)2 * z.im);
        return mk<F>(r_sinh((F)2 * z.re) / d, r_sin((F)2 * z.im) / d);
    }
    }
}

// floor(a / b) and a - b·floor(a / b) of real floats, as NumPy's divmod
// (CPython's algorithm: the remainder from fmod moved to the divisor's
// sign, the quotient from it); a zero divisor gives a / b and NaN.
template <typename F> __device__ __forceinline__ void floor_divmod(F a, F b, F *q, F *r) {
    if (b == (F)0) {
        *q = a / b;
        *r = r_inf((F)0) - r_inf((F)0);
        return;
    }
    F rem = r_fmod(a, b);
    F div = (a - rem) / b;
    if (rem != (F)0) {
        if ((b < (F)0) != (rem < (F)0)) {
            rem += b;
            div -= (F)1;
        }
    } else {
        rem = r_copysign((F)0, b);
    }
    F quotient;
    if (div != (F)0) {
        F fl = r_floor(div);
        quotient = div - fl > (F)0.5 ? fl + (F)1 : fl;
    } else {
        quotient = r_copysign((F)0, a / b);
    }
    *q = quotient;
    *r = rem;
}

// Binary op codes: 0 add, 1 sub, 2 mul, 3 div, 4 maximum, 5 minimum, 6 pow,
// 7 floor_div, 8 rem (real floats).
// Maximum and minimum propagate NaN; the host refuses them for complex types.
template <typename F> __device__ __forceinline__ F binary(F a, F b, int op) {
    switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 4: return (a != a || b != b) ? a + b : (a >= b ? a : b);
    case 5: return (a != a || b != b) ? a + b : (a <= b ? a : b);
    case 7: {
        F q, r;
        floor_divmod(a, b, &q, &r);
        return q;
    }
    case 8: {
        F q, r;
        floor_divmod(a, b, &q, &r);
        return r;
    }
    default: return r_pow(a, b);
    }
}
template <typename F> __device__ __forceinline__ cx<F> binary(cx<F> a, cx<F> b, int op) {
    switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 6: {
        if (a.re == (F)0 && a.im == (F)0) {
            return (b.re == (F)0 && b.im == (F)0) ? mk<F>((F)1, (F)0) : mk<F>((F)0, (F)0);
        }
        return c_exp(b * c_log(a));
    }
    default: return a;
    }
}

// Integer binary codes: 0 add, 1 sub, 2 mul, 4 maximum, 5 minimum, 6 pow,
// 7 floor_div, 8 rem, 9 and, 10 or, 11 xor. Arithmetic wraps (through
// the unsigned type `U`), as NumPy's; the host refused zero divisors and
// negative exponents before the launch.
template <typename I, typename U> __device__ __forceinline__ I int_binary(I a, I b, int op) {
    switch (op) {
    case 0: return (I)((U)a + (U)b);
    case 1: return (I)((U)a - (U)b);
    case 2: return (I)((U)a * (U)b);
    case 4: return a >= b ? a : b;
    case 5: return a <= b ? a : b;
    case 6: {
        U result = 1, base = (U)a;
        unsigned long long e = (unsigned long long)b;
        while (e > 0) {
            if (e & 1) result *= base;
            base *= base;
            e >>= 1;
        }
        return (I)result;
    }
    case 7: {
        // MIN / -1 wraps to MIN, as NumPy's.
        if (b == (I)-1) return (I)((U)0 - (U)a);
        I q = a / b;
        return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
    }
    case 8: {
        if (b == (I)-1) return 0;
        I r = a % b;
        return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    }
    case 9: return a & b;
    case 10: return a | b;
    default: return a ^ b;
    }
}
__device__ __forceinline__ int binary(int a, int b, int op) {
    return int_binary<int, unsigned int>(a, b, op);
}
__device__ __forceinline__ long long binary(long long a, long long b, int op) {
    return int_binary<long long, unsigned long long>(a, b, op);
}
// bool: 9 and, 10 or, 11 xor of bytes 0 and 1.
__device__ __forceinline__ unsigned char binary(unsigned char a, unsigned char b, int op) {
    return op == 9 ? (a & b) : (op == 10 ? (a | b) : (a ^ b));
}

// Integer unary codes: 0 neg, 1 abs (both wrapping), 2 sign, 3 conj (the
// value), 13 not (bitwise).
template <typename I, typename U> __device__ __forceinline__ I int_unary(I x, int op) {
    switch (op) {
    case 0: return (I)((U)0 - (U)x);
    case 1: return x < 0 ? (I)((U)0 - (U)x) : x;
    case 2: return x > 0 ? (I)1 : (x < 0 ? (I)-1 : (I)0);
    case 13: return ~x;
    default: return x;
    }
}
__device__ __forceinline__ int unary(int x, int op) { return int_unary<int, unsigned int>(x, op); }
__device__ __forceinline__ long long unary(long long x, int op) {
    return int_unary<long long, unsigned long long>(x, op);
}
// bool: 13 not.
__device__ __forceinline__ unsigned char unary(unsigned char x, int) { return x ? 0 : 1; }

// Reduction op codes: 0 sum, 1 prod, 2 max, 3 min, 4 mean, 5 any, 6 all
// (of bool: the host converts to it first).
template <typename F> __device__ __forceinline__ F identity(int op) {
    switch (op) {
    case 1: return (F)1;
    case 2: return -r_inf((F)0);
    case 3: return r_inf((F)0);
    default: return (F)0;
    }
}
template <typename F> __device__ __forceinline__ cx<F> identity_cx(int op) {
    return mk<F>(op == 1 ? (F)1 : (F)0, (F)0);
}
__device__ __forceinline__ void set_identity(float &x, int op) { x = identity<float>(op); }
__device__ __forceinline__ void set_identity(double &x, int op) { x = identity<double>(op); }
template <typename F> __device__ __forceinline__ void set_identity(cx<F> &x, int op) {
    x = identity_cx<F>(op);
}
template <typename F> __device__ __forceinline__ F combine(F a, F b, int op) {
    switch (op) {
    case 1: return a * b;
    case 2: return binary(a, b, 4);
    case 3: return binary(a, b, 5);
    default: return a + b;
    }
}
template <typename F> __device__ __forceinline__ cx<F> combine(cx<F> a, cx<F> b, int op) {
    return op == 1 ? a * b : a + b;
}
// Integers: 0 sum and 1 prod wrap, 2 max, 3 min. Bool: 2 max and 5 any
// are or, 3 min and 6 all are and.
__device__ __forceinline__ void set_identity(int &x, int op) {
    x = op == 1 ? 1 : (op == 2 ? (int)(-0x7fffffff - 1) : (op == 3 ? 0x7fffffff : 0));
}
__device__ __forceinline__ void set_identity(long long &x, int op) {
    x = op == 1 ? 1
        : (op == 2 ? (long long)(-0x7fffffffffffffffLL - 1) : (op == 3 ? 0x7fffffffffffffffLL : 0));
}
__device__ __forceinline__ void set_identity(unsigned char &x, int op) {
    x = (op == 3 || op == 6) ? 1 : 0;
}
__device__ __forceinline__ int combine(int a, int b, int op) {
    return op == 0 ? binary(a, b, 0) : (op == 1 ? binary(a, b, 2) : binary(a, b, op == 2 ? 4 : 5));
}
__device__ __forceinline__ long long combine(long long a, long long b, int op) {
    return op == 0 ? binary(a, b, 0) : (op == 1 ? binary(a, b, 2) : binary(a, b, op == 2 ? 4 : 5));
}
__device__ __forceinline__ unsigned char combine(unsigned char a, unsigned char b, int op) {
    return (op == 3 || op == 6) ? (a & b) : (a | b);
}
template <typename F> __device__ __forceinline__ F divide(F a, double n) { return a / (F)n; }
template <typename F> __device__ __forceinline__ cx<F> divide(cx<F> a, double n) {
    return scale(a, (F)1 / (F)n);
}

// Element `i`'s offsets in operands 0 and 1: the index is split into
// coordinates once (one division per axis, its remainder by a multiply)
// for both operands. A walk the host merged to one axis (every contiguous
// walk) takes no division at all.
__device__ __forceinline__ void offsets(const Dims &d, long long i, long long *o0,
                                        long long *o1) {
    if (d.rank == 1) {
        *o0 = d.b0 + i * d.s0[0];
        *o1 = d.b1 + i * d.s1[0];
        return;
    }
    long long a = d.b0, b = d.b1;
    for (long long k = d.rank - 1; k >= 0; --k) {
        long long q = i / d.shape[k];
        long long c = i - q * d.shape[k];
        i = q;
        a += c * d.s0[k];
        b += c * d.s1[k];
    }
    *o0 = a;
    *o1 = b;
}

// Element `i`'s offsets in operands 0, 1 and 2 (a select's mask and its
// two sources).
__device__ __forceinline__ void offsets3(const Dims &d, long long i, long long *o0,
                                         long long *o1, long long *o2) {
    long long a = d.b0, b = d.b1, c = d.b2;
    for (long long k = d.rank - 1; k >= 0; --k) {
        long long q = i / d.shape[k];
        long long r = i - q * d.shape[k];
        i = q;
        a += r * d.s0[k];
        b += r * d.s1[k];
        c += r * d.s2[k];
    }
    *o0 = a;
    *o1 = b;
    *o2 = c;
}

// Comparison codes: 0 eq, 1 ne, 2 lt, 3 le, 4 gt, 5 ge. NaN compares
// unequal to everything; complexes have eq and ne only (the host refuses
// the others).
template <typename F> __device__ __forceinline__ bool compare(F a, F b, int op) {
    switch (op) {
    case 0: return a == b;
    case 1: return a != b;
    case 2: return a < b;
    case 3: return a <= b;
    case 4: return a > b;
    default: return a >= b;
    }
}
template <typename F> __device__ __forceinline__ bool compare(cx<F> a, cx<F> b, int op) {
    bool eq = a.re == b.re && a.im == b.im;
    return op == 1 ? !eq : eq;
}

template <typename F> __device__ __forceinline__ F clamp(F x, F lo, F hi) {
    if (x == x) {
        x = x < lo ? lo : x;
        x = x > hi ? hi : x;
    }
    return x;
}
// Complexes have no order: the host refuses to clamp them.
template <typename F> __device__ __forceinline__ cx<F> clamp(cx<F> z, cx<F>, cx<F>) { return z; }

// Conversions between the element types, as Rust's `as`: a real to a
// narrower real rounds to nearest, a complex to anything else drops the
// imaginary part, a real to a complex has imaginary part 0, a float to an
// integer truncates toward zero and saturates (NaN gives 0), an integer to
// a narrower one wraps, anything to bool is whether it is nonzero, and
// bool to a number 0 or 1. `To<U>::from(x)` converts `x` to `U`.
__device__ __forceinline__ long long to_i64(double x) {
    if (x != x) return 0;
    if (x >= 9223372036854775808.0) return 0x7fffffffffffffffLL;
    if (x <= -9223372036854775808.0) return (long long)(-0x7fffffffffffffffLL - 1);
    return (long long)x;
}
__device__ __forceinline__ int to_i32(double x) {
    if (x != x) return 0;
    if (x >= 2147483648.0) return 0x7fffffff;
    if (x <= -2147483648.0) return (int)(-0x7fffffff - 1);
    return (int)x;
}
template <typename U> struct To {
    template <typename G> static __device__ __forceinline__ U from(G x) { return (U)x; }
    template <typename G> static __device__ __forceinline__ U from(cx<G> z) { return (U)z.re; }
};
template <typename F> struct To<cx<F> > {
    template <typename G> static __device__ __forceinline__ cx<F> from(G x) {
        return mk<F>((F)x, (F)0);
    }
    template <typename G> static __device__ __forceinline__ cx<F> from(cx<G> z) {
        return mk<F>((F)z.re, (F)z.im);
    }
};
template <> struct To<long long> {
    template <typename G> static __device__ __forceinline__ long long from(G x) {
        return (long long)x;
    }
    static __device__ __forceinline__ long long from(float x) { return to_i64((double)x); }
    static __device__ __forceinline__ long long from(double x) { return to_i64(x); }
    template <typename G> static __device__ __forceinline__ long long from(cx<G> z) {
        return from(z.re);
    }
};
template <> struct To<int> {
    // Wrapping: two's complement, through the unsigned types.
    template <typename G> static __device__ __forceinline__ int from(G x) {
        return (int)(unsigned int)(unsigned long long)(long long)x;
    }
    static __device__ __forceinline__ int from(float x) { return to_i32((double)x); }
    static __device__ __forceinline__ int from(double x) { return to_i32(x); }
    template <typename G> static __device__ __forceinline__ int from(cx<G> z) {
        return from(z.re);
    }
};
template <> struct To<unsigned char> {
    template <typename G> static __device__ __forceinline__ unsigned char from(G x) {
        return x != (G)0 ? 1 : 0;
    }
    template <typename G> static __device__ __forceinline__ unsigned char from(cx<G> z) {
        return (z.re != (G)0 || z.im != (G)0) ? 1 : 0;
    }
};

#define GRID_STRIDE(i, n)                                                        \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (long long)gridDim.x * blockDim.x)

#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define K(name) CAT(name, SUFFIX)

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
            for (long long j = start[t]; j < start[t + 1]; j++) acc = binary(acc, from[src[j] * post], 0);
            *o = acc;
        }
    }
}

// out[i] = a[...] op b[...], out contiguous, a and b broadcast by strides.
extern "C" __global__ void K(binary)(T *out, const T *a, const T *b, int op, Dims d) {
    GRID_STRIDE(i, d.n) {
        long long oa, ob;
        offsets(d, i, &oa, &ob);
        out[i] = binary(a[oa], b[ob], op);
    }
}

#ifdef KIND_FIELD
// out[i] = a[i] op s (or s op a[i]), the scalar given as (re, im).
extern "C" __global__ void K(binary_scalar)(T *out, const T *a, double re, double im, int op,
                                           int scalar_first, long long n) {
    T s;
    from_pair(s, re, im);
    GRID_STRIDE(i, n) { out[i] = scalar_first ? binary(s, a[i], op) : binary(a[i], s, op); }
}

#endif

extern "C" __global__ void K(unary)(T *out, const T *a, int op, long long n) {
    GRID_STRIDE(i, n) { out[i] = unary(a[i], op); }
}

#ifdef KIND_FIELD

// |z| into the real type (abs of a complex tensor).
extern "C" __global__ void K(magnitude)(R *out, const T *a, long long n) {
    GRID_STRIDE(i, n) { out[i] = magnitude(a[i]); }
}

#endif

// out[i] = (a[...] op b[...]) as a byte 0 or 1 (a `bool` tensor).
extern "C" __global__ void K(compare)(unsigned char *out, const T *a, const T *b, int op, Dims d) {
    GRID_STRIDE(i, d.n) {
        long long oa, ob;
        offsets(d, i, &oa, &ob);
        out[i] = compare(a[oa], b[ob], op) ? 1 : 0;
    }
}

// out[i] = mask[...] ? a[...] : b[...], the three broadcast by strides.
extern "C" __global__ void K(select)(T *out, const unsigned char *mask, const T *a, const T *b,
                                    Dims d) {
    GRID_STRIDE(i, d.n) {
        long long om, oa, ob;
        offsets3(d, i, &om, &oa, &ob);
        out[i] = mask[om] ? a[oa] : b[ob];
    }
}

#ifdef KIND_FIELD
// Each element limited to [lo, hi] (real types; NaN stays NaN; hi wins
// where lo > hi, as max then min).
extern "C" __global__ void K(clamp)(T *out, const T *a, double lo, double hi, long long n) {
    T l, h;
    from_real(l, lo);
    from_real(h, hi);
    GRID_STRIDE(i, n) { out[i] = clamp(a[i], l, h); }
}

#endif

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

// The elements converted to each other element type.
#define CAST_TO(name, U)                                                         \
    extern "C" __global__ void K(name)(U * out, const T *a, long long n) {      \
        GRID_STRIDE(i, n) { out[i] = To<U>::from(a[i]); }                       \
    }
CAST_TO(cast_f32, float)
CAST_TO(cast_f64, double)
CAST_TO(cast_c32, cx<float>)
CAST_TO(cast_c64, cx<double>)
CAST_TO(cast_i32, int)
CAST_TO(cast_i64, long long)
CAST_TO(cast_bool, unsigned char)

#ifdef KIND_FIELD
extern "C" __global__ void K(fill)(T *out, double re, double im, long long n) {
    T v;
    from_pair(v, re, im);
    GRID_STRIDE(i, n) { out[i] = v; }
}

extern "C" __global__ void K(arange)(T *out, double start, double step, long long n) {
    GRID_STRIDE(i, n) { from_real(out[i], start + step * (double)i); }
}
#else
// The value given exactly, as a 64-bit integer (0 or 1 for bool).
extern "C" __global__ void K(fill_int)(T *out, long long v, long long n) {
    GRID_STRIDE(i, n) { out[i] = (T)v; }
}
#endif

#ifdef KIND_INTEGER
// first + by·i, exact: the host checked that every value fits the type.
extern "C" __global__ void K(arange_int)(T *out, long long first, long long by, long long n) {
    GRID_STRIDE(i, n) { out[i] = (T)(first + by * i); }
}
#endif

extern "C" __global__ void K(eye)(T *out, long long rows, long long cols) {
    GRID_STRIDE(i, rows * cols) { from_real(out[i], (i / cols == i % cols) ? 1.0 : 0.0); }
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
            out[b] = op == 4 ? divide(part[threadIdx.x], count) : part[threadIdx.x];
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
