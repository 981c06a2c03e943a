// The creation kernels: fills, ranges and identities.

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
