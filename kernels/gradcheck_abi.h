/*
 * gradcheck native calling convention (version 1).
 *
 * A C loss is checked through a pair of functions that share one signature family.
 * Every symbol carries a project prefix (gc_) because numba keys cffi functions by
 * their bare name: two unprefixed "loss" functions from different modules collide.
 *
 *   double gc_NAME_loss(const double *x, int64_t n, const int64_t *iparams);
 *       Returns the scalar loss at x[0..n). Must not write to x. Must be re-entrant
 *       (no static scratch): the compiled engine calls it from several threads at once,
 *       each with its own private copy of x.
 *
 *   void gc_NAME_grad(const double *x, int64_t n, const int64_t *iparams, double *g);
 *       Writes the claimed gradient d loss / d x into g[0..n).
 *
 * Array-valued functions use a forward / vector-Jacobian-product pair instead:
 *
 *   void gc_NAME_forward(const double *x, int64_t n, const int64_t *iparams,
 *                        double *y, int64_t m);
 *   void gc_NAME_vjp(const double *x, int64_t n, const int64_t *iparams,
 *                    const double *ybar, int64_t m, double *g);
 *
 * iparams carries integer parameters (shapes, flags) and may be NULL when unused.
 * x is always a C-contiguous float64 array; the checker flattens and restores shapes.
 */
#ifndef GRADCHECK_ABI_H
#define GRADCHECK_ABI_H
#include <stdint.h>

/* Subject kernel: the extended Rosenbrock function
 *   f(x) = sum_{i<n-1} 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2
 * gc_rosenbrock_grad is correct; gc_rosenbrock_grad_lastbug deliberately drops the
 * 200 (x[n-1] - x[n-2]^2) term of the last entry: a planted bug at exactly one entry,
 * used by the tests and the demo as a negative control for native code. */
double gc_rosenbrock_loss(const double *x, int64_t n, const int64_t *iparams);
void gc_rosenbrock_grad(const double *x, int64_t n, const int64_t *iparams, double *g);
void gc_rosenbrock_grad_lastbug(const double *x, int64_t n, const int64_t *iparams, double *g);

/* Subject kernel (kernels/subjects_engine.c): a log barrier with a cyclic coupling,
 *   f(x) = sum_i c_i (x[i]^2 / 2 - log x[i]) + sin(x[i] x[(i+1) mod n]),
 *   c_i = 1 + (i mod k), k = iparams[0] when iparams is not NULL, else 1.
 * Defined for x > 0 (NaN or -inf elsewhere). gc_logbarrier_grad is correct;
 * gc_logbarrier_grad_firstbug deliberately drops the wrap-around term cos(x[n-1] x[0]) x[n-1]
 * of entry 0: a planted bug at exactly one entry (negative control of the compiled engine). */
double gc_logbarrier_loss(const double *x, int64_t n, const int64_t *iparams);
void gc_logbarrier_grad(const double *x, int64_t n, const int64_t *iparams, double *g);
void gc_logbarrier_grad_firstbug(const double *x, int64_t n, const int64_t *iparams, double *g);

/* Subject kernel (kernels/matmul_tn.c): a transposed matmul C = A^T B with A (k x m) and
 * B (k x n) row-major, x = concat(A.ravel(), B.ravel()), iparams = (m, k, n). The loss is
 * sum(C * G) for a fixed upstream gradient G[i,j] = 0.25 ((3i + 5j) mod 7) - 0.625;
 * gc_matmul_tn_forward writes C (m x n, row-major) into y.
 * gc_matmul_tn_grad is correct. gc_matmul_tn_grad_parity is a DELIBERATE TEST SUBJECT with a
 * shape-parity defect: its 2x2-unrolled backward forgets the corner remainder, so when m and
 * n are both odd the last column of dA and the last column of dB are wrong (every row);
 * every other shape is exact. */
void gc_matmul_tn_forward(const double *x, int64_t n, const int64_t *iparams, double *y, int64_t m);
double gc_matmul_tn_loss(const double *x, int64_t n, const int64_t *iparams);
void gc_matmul_tn_grad(const double *x, int64_t n, const int64_t *iparams, double *g);
void gc_matmul_tn_grad_parity(const double *x, int64_t n, const int64_t *iparams, double *g);

/* Subject kernels (kernels/rope_bf16.c): a bfloat16 rotary-embedding pair. bfloat16 values
 * are uint16_t bit patterns. x is (rows, dim) row-major, dim even; row r is rotated by the
 * angles positions[r] * base^(-2i/dim) applied to the half-split pairs (x[i], x[i + dim/2]);
 * every output is rounded once, nearest-even. gc_rope_bf16_fast computes the angle in float32;
 * gc_rope_bf16_reference rounds the angle to bfloat16 before cos/sin (a fallback that keeps
 * positions/angles in bfloat16): at large positions the reference is the inaccurate side.
 * gc_bf16_from_f32 is the kernels' float32 -> bfloat16 rounding (RNE on the bits). */
void gc_rope_bf16_fast(const uint16_t *x, const int64_t *positions, int64_t rows, int64_t dim, float base, uint16_t *out);
void gc_rope_bf16_reference(const uint16_t *x, const int64_t *positions, int64_t rows, int64_t dim, float base, uint16_t *out);
void gc_bf16_from_f32(const float *x, int64_t n, uint16_t *out);

/* Subject kernels (kernels/dot_bf16.c): out[r] = sum_k a[r, k] v[k] in bfloat16 (bit patterns),
 * a (rows, n) row-major. gc_matvec_bf16_fast is DELIBERATELY BROKEN: it accumulates in
 * bfloat16 (rounds the running sum after every addition); gc_matvec_bf16_reference
 * accumulates in float32 and rounds once. */
void gc_matvec_bf16_fast(const uint16_t *a, const uint16_t *v, int64_t rows, int64_t n, uint16_t *out);
void gc_matvec_bf16_reference(const uint16_t *a, const uint16_t *v, int64_t rows, int64_t n, uint16_t *out);

#endif
