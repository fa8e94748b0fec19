/*
 * Subject kernel: a transposed matmul C = A^T B and its backward (see gradcheck_abi.h).
 *
 * DELIBERATE TEST SUBJECT. gc_matmul_tn_grad_parity carries a planted shape-parity defect,
 * modelled on a real one (a framework's CPU `a.transpose().matmul(b)` that was wrong for a
 * subset of shapes sharing a parity condition). Do not "fix" it: the tests and the demo
 * check that a shape sweep finds exactly the shapes it breaks.
 *
 * Layout: A is k x m and B is k x n, both row-major; x = concat(A.ravel(), B.ravel()),
 * n_x = k*m + k*n; iparams = (m, k, n). The loss is sum_ij C[i,j] * G[i,j] with a fixed
 * "upstream gradient" G[i,j] = 0.25 * ((3i + 5j) mod 7) - 0.625, which is never 0 (the
 * values are -0.625, -0.375, ..., 0.875), so every term of the backward matters.
 *
 * The backward is dA = B G^T (k x m) and dB = A G (k x n), both of the form
 * out[p, r] = sum_s M[p, s] W[r, s]. The kernel below computes them with the (r, s) loop
 * unrolled by 2 in both directions, plus three remainder pieces: the last s for paired r
 * (S odd), the last r for paired s (R odd), and the corner (R and S both odd). The parity
 * variant forgets the corner. For dA, R = m and S = n; for dB, R = n and S = m: so when m
 * and n are both odd, the last column of dA misses B[p, n-1] G[m-1, n-1] and the last
 * column of dB misses A[p, m-1] G[m-1, n-1], for every row p. Every other shape is exact.
 */
#include "gradcheck_abi.h"

static double upstream(int64_t i, int64_t j)
{
    return 0.25 * (double)((3 * i + 5 * j) % 7) - 0.625;
}

void gc_matmul_tn_forward(const double *x, int64_t n_x, const int64_t *iparams,
                          double *y, int64_t n_y)
{
    (void)n_x;
    (void)n_y;
    const int64_t m = iparams[0], k = iparams[1], n = iparams[2];
    const double *A = x, *B = x + k * m;
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            double s = 0.0;
            for (int64_t p = 0; p < k; ++p) s += A[p * m + i] * B[p * n + j];
            y[i * n + j] = s;
        }
}

double gc_matmul_tn_loss(const double *x, int64_t n_x, const int64_t *iparams)
{
    (void)n_x;
    const int64_t m = iparams[0], k = iparams[1], n = iparams[2];
    const double *A = x, *B = x + k * m;
    double loss = 0.0;  /* no scratch: C is formed entry by entry (re-entrant) */
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            double s = 0.0;
            for (int64_t p = 0; p < k; ++p) s += A[p * m + i] * B[p * n + j];
            loss += s * upstream(i, j);
        }
    return loss;
}

/* W(r, s): G[r, s], or G[s, r] when transposed. */
static double weight(int64_t r, int64_t s, int transposed)
{
    return transposed ? upstream(s, r) : upstream(r, s);
}

/* out (k x R) = M (k x S) W^T, unrolled by 2 over r and s; drop_corner plants the defect. */
static void gemm_nt_unrolled(const double *M, int64_t k, int64_t R, int64_t S, int transposed,
                             double *out, int drop_corner)
{
    const int64_t R2 = R - R % 2, S2 = S - S % 2;
    for (int64_t p = 0; p < k; ++p) {
        const double *mp = M + p * S;
        double *op = out + p * R;
        for (int64_t r = 0; r < R2; r += 2) {
            double acc0 = 0.0, acc1 = 0.0;
            for (int64_t s = 0; s < S2; s += 2) {
                acc0 += mp[s] * weight(r, s, transposed) + mp[s + 1] * weight(r, s + 1, transposed);
                acc1 += mp[s] * weight(r + 1, s, transposed) + mp[s + 1] * weight(r + 1, s + 1, transposed);
            }
            if (S2 < S) {  /* remainder in s for the paired r */
                acc0 += mp[S2] * weight(r, S2, transposed);
                acc1 += mp[S2] * weight(r + 1, S2, transposed);
            }
            op[r] = acc0;
            op[r + 1] = acc1;
        }
        if (R2 < R) {  /* remainder in r */
            double acc = 0.0;
            for (int64_t s = 0; s < S2; s += 2)
                acc += mp[s] * weight(R2, s, transposed) + mp[s + 1] * weight(R2, s + 1, transposed);
            if (S2 < S && !drop_corner)  /* the corner: both remainders at once */
                acc += mp[S2] * weight(R2, S2, transposed);
            op[R2] = acc;
        }
    }
}

static void matmul_tn_grad_impl(const double *x, const int64_t *iparams, double *g, int drop_corner)
{
    const int64_t m = iparams[0], k = iparams[1], n = iparams[2];
    const double *A = x, *B = x + k * m;
    /* dA[p, i] = sum_j B[p, j] G[i, j]: R = m, S = n, W[r, s] = G[r, s]. */
    gemm_nt_unrolled(B, k, m, n, 0, g, drop_corner);
    /* dB[p, j] = sum_i A[p, i] G[i, j]: R = n, S = m, W[r, s] = G[s, r]. */
    gemm_nt_unrolled(A, k, n, m, 1, g + k * m, drop_corner);
}

void gc_matmul_tn_grad(const double *x, int64_t n_x, const int64_t *iparams, double *g)
{
    (void)n_x;
    matmul_tn_grad_impl(x, iparams, g, 0);
}

void gc_matmul_tn_grad_parity(const double *x, int64_t n_x, const int64_t *iparams, double *g)
{
    (void)n_x;
    matmul_tn_grad_impl(x, iparams, g, 1);
}
