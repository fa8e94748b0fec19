/* Subject kernel for the compiled engine's tests and benchmarks: a log barrier with a
 * cyclic coupling (see gradcheck_abi.h). Some work per evaluation (a log and a sin per
 * entry), a domain (x > 0), and integer parameters that may be NULL. */
#include <math.h>
#include <stddef.h>
#include "gradcheck_abi.h"

static int64_t logbarrier_period(const int64_t *iparams)
{
    return (iparams != NULL && iparams[0] > 0) ? iparams[0] : 1;
}

double gc_logbarrier_loss(const double *x, int64_t n, const int64_t *iparams)
{
    int64_t k = logbarrier_period(iparams);
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        double c = 1.0 + (double)(i % k);
        double next = x[(i + 1) % n];
        s += c * (0.5 * x[i] * x[i] - log(x[i])) + sin(x[i] * next);
    }
    return s;
}

static void logbarrier_grad_impl(const double *x, int64_t n, const int64_t *iparams,
                                 double *g, int drop_wrap)
{
    int64_t k = logbarrier_period(iparams);
    for (int64_t i = 0; i < n; ++i) {
        double c = 1.0 + (double)(i % k);
        g[i] = c * (x[i] - 1.0 / x[i]);
    }
    for (int64_t i = 0; i < n; ++i) {
        int64_t j = (i + 1) % n;
        double w = cos(x[i] * x[j]);
        g[i] += w * x[j];
        if (!(drop_wrap && j == 0)) g[j] += w * x[i];
    }
}

void gc_logbarrier_grad(const double *x, int64_t n, const int64_t *iparams, double *g)
{
    logbarrier_grad_impl(x, n, iparams, g, 0);
}

void gc_logbarrier_grad_firstbug(const double *x, int64_t n, const int64_t *iparams, double *g)
{
    logbarrier_grad_impl(x, n, iparams, g, 1);
}
