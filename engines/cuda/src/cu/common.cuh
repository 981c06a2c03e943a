// What every kernel file builds on: the strided walk, the complex type,
// the math of both real types, and the macros that name a kernel.
//
// The kernels are compiled by NVRTC once per element type, from the files
// of this folder in the order `kernels.rs` gives (`SOURCES`), after a
// prelude the engine writes: `ELEMENT` and `REAL` (the element type and
// its real type), `SUFFIX` (every kernel name ends in `_f32`, `_f64`,
// `_c32`, `_c64`, `_i32`, `_i64` or `_bool`), the kind: `KIND_FIELD`
// (floats and complexes, these also `KIND_COMPLEX`), `KIND_INTEGER` (int,
// long long) or `KIND_BOOL` (a byte, 0 or 1), and the op codes the kernels
// switch on (`BINARY_ADD`, `UNARY_EXP`, `COMPARE_LT`, `REDUCE_SUM`, ...),
// made from the Rust enums by `codes.rs`. A kernel a kind has no use for is
// not compiled for it. No headers: NVRTC provides the device math
// functions.

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

// The element type and its real type (after `cx`, which they may name).
typedef ELEMENT T;
typedef REAL R;

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

#define GRID_STRIDE(i, n)                                                        \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (long long)gridDim.x * blockDim.x)

#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define K(name) CAT(name, SUFFIX)
