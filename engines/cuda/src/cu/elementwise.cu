// The elementwise kernels: unary and binary ops, comparisons, selection,
// clamping and conversions between the element types.

// Unary ops of the floats and complexes (`abs` of a complex in its own
// type: |z| + 0i; the magnitude kernel gives it in the real type).
template <typename F> __device__ __forceinline__ F unary(F x, int op) {
    switch (op) {
    case UNARY_NEG: return -x;
    case UNARY_ABS: return r_fabs(x);
    case UNARY_SIGN: return x > (F)0 ? (F)1 : (x < (F)0 ? (F)-1 : x);
    case UNARY_CONJ: return x;
    case UNARY_EXP: return r_exp(x);
    case UNARY_LOG: return r_log(x);
    case UNARY_EXPM1: return r_expm1(x);
    case UNARY_LOG1P: return r_log1p(x);
    case UNARY_SQRT: return r_sqrt(x);
    case UNARY_RSQRT: return (F)1 / r_sqrt(x);
    case UNARY_SIN: return r_sin(x);
    case UNARY_COS: return r_cos(x);
    case UNARY_TANH:
    default: return r_tanh(x);
    }
}
template <typename F> __device__ __forceinline__ cx<F> unary(cx<F> z, int op) {
    cx<F> one = mk<F>((F)1, (F)0);
    switch (op) {
    case UNARY_NEG: return -z;
    case UNARY_ABS: return mk<F>(magnitude(z), (F)0);
    case UNARY_SIGN: {
        F n = magnitude(z);
        return n == (F)0 ? z : mk<F>(z.re / n, z.im / n);
    }
    case UNARY_CONJ: return mk<F>(z.re, -z.im);
    case UNARY_EXP: return c_exp(z);
    case UNARY_LOG: return c_log(z);
    case UNARY_EXPM1: return c_exp(z) - one;
    case UNARY_LOG1P: return c_log(one + z);
    case UNARY_SQRT: return c_sqrt(z);
    case UNARY_RSQRT: return one / c_sqrt(z);
    case UNARY_SIN: return mk<F>(r_sin(z.re) * r_cosh(z.im), r_cos(z.re) * r_sinh(z.im));
    case UNARY_COS: return mk<F>(r_cos(z.re) * r_cosh(z.im), -r_sin(z.re) * r_sinh(z.im));
    case UNARY_TANH:
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

// Binary ops of the floats and complexes (floor_div and rem of real
// floats only).
// Maximum and minimum propagate NaN; the host refuses them for complex types.
template <typename F> __device__ __forceinline__ F binary(F a, F b, int op) {
    switch (op) {
    case BINARY_ADD: return a + b;
    case BINARY_SUB: return a - b;
    case BINARY_MUL: return a * b;
    case BINARY_DIV: return a / b;
    case BINARY_MAXIMUM: return (a != a || b != b) ? a + b : (a >= b ? a : b);
    case BINARY_MINIMUM: return (a != a || b != b) ? a + b : (a <= b ? a : b);
    case BINARY_FLOOR_DIV: {
        F q, r;
        floor_divmod(a, b, &q, &r);
        return q;
    }
    case BINARY_REM: {
        F q, r;
        floor_divmod(a, b, &q, &r);
        return r;
    }
    case BINARY_POW:
    default: return r_pow(a, b);
    }
}
template <typename F> __device__ __forceinline__ cx<F> binary(cx<F> a, cx<F> b, int op) {
    switch (op) {
    case BINARY_ADD: return a + b;
    case BINARY_SUB: return a - b;
    case BINARY_MUL: return a * b;
    case BINARY_DIV: return a / b;
    case BINARY_POW: {
        if (a.re == (F)0 && a.im == (F)0) {
            return (b.re == (F)0 && b.im == (F)0) ? mk<F>((F)1, (F)0) : mk<F>((F)0, (F)0);
        }
        return c_exp(b * c_log(a));
    }
    default: return a;
    }
}

// Integer binary ops: every one but div. Arithmetic wraps (through
// the unsigned type `U`), as NumPy's; the host refused zero divisors and
// negative exponents before the launch.
template <typename I, typename U> __device__ __forceinline__ I int_binary(I a, I b, int op) {
    switch (op) {
    case BINARY_ADD: return (I)((U)a + (U)b);
    case BINARY_SUB: return (I)((U)a - (U)b);
    case BINARY_MUL: return (I)((U)a * (U)b);
    case BINARY_MAXIMUM: return a >= b ? a : b;
    case BINARY_MINIMUM: return a <= b ? a : b;
    case BINARY_POW: {
        U result = 1, base = (U)a;
        unsigned long long e = (unsigned long long)b;
        while (e > 0) {
            if (e & 1) result *= base;
            base *= base;
            e >>= 1;
        }
        return (I)result;
    }
    case BINARY_FLOOR_DIV: {
        // MIN / -1 wraps to MIN, as NumPy's.
        if (b == (I)-1) return (I)((U)0 - (U)a);
        I q = a / b;
        return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
    }
    case BINARY_REM: {
        if (b == (I)-1) return 0;
        I r = a % b;
        return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    }
    case BINARY_AND: return a & b;
    case BINARY_OR: return a | b;
    case BINARY_XOR:
    default: return a ^ b;
    }
}
__device__ __forceinline__ int binary(int a, int b, int op) {
    return int_binary<int, unsigned int>(a, b, op);
}
__device__ __forceinline__ long long binary(long long a, long long b, int op) {
    return int_binary<long long, unsigned long long>(a, b, op);
}
// bool: and, or and xor of bytes 0 and 1.
__device__ __forceinline__ unsigned char binary(unsigned char a, unsigned char b, int op) {
    return op == BINARY_AND ? (a & b) : (op == BINARY_OR ? (a | b) : (a ^ b));
}

// Integer unary ops: neg and abs (both wrapping), sign, conj (the value)
// and not (bitwise).
template <typename I, typename U> __device__ __forceinline__ I int_unary(I x, int op) {
    switch (op) {
    case UNARY_NEG: return (I)((U)0 - (U)x);
    case UNARY_ABS: return x < 0 ? (I)((U)0 - (U)x) : x;
    case UNARY_SIGN: return x > 0 ? (I)1 : (x < 0 ? (I)-1 : (I)0);
    case UNARY_NOT: return ~x;
    default: return x;
    }
}
__device__ __forceinline__ int unary(int x, int op) { return int_unary<int, unsigned int>(x, op); }
__device__ __forceinline__ long long unary(long long x, int op) {
    return int_unary<long long, unsigned long long>(x, op);
}
// bool: not.
__device__ __forceinline__ unsigned char unary(unsigned char x, int) { return x ? 0 : 1; }

// Comparisons. NaN compares unequal to everything; complexes have eq and
// ne only (the host refuses the others).
template <typename F> __device__ __forceinline__ bool compare(F a, F b, int op) {
    switch (op) {
    case COMPARE_EQ: return a == b;
    case COMPARE_NE: return a != b;
    case COMPARE_LT: return a < b;
    case COMPARE_LE: return a <= b;
    case COMPARE_GT: return a > b;
    case COMPARE_GE:
    default: return a >= b;
    }
}
template <typename F> __device__ __forceinline__ bool compare(cx<F> a, cx<F> b, int op) {
    bool eq = a.re == b.re && a.im == b.im;
    return op == COMPARE_NE ? !eq : eq;
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
