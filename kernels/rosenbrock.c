/* Subject kernel: extended Rosenbrock loss and gradients (see gradcheck_abi.h). */
#include "gradcheck_abi.h"

double gc_rosenbrock_loss(const double *x, int64_t n, const int64_t *iparams)
{
    (void)iparams;
    double s = 0.0;
    for (int64_t i = 0; i + 1 < n; ++i) {
        double a = x[i + 1] - x[i] * x[i];
        double b = 1.0 - x[i];
        s += 100.0 * a * a + b * b;
    }
    return s;
}

static void rosenbrock_grad_impl(const double *x, int64_t n, double *g, int drop_last)
{
    for (int64_t i = 0; i < n; ++i) g[i] = 0.0;
    for (int64_t i = 0; i + 1 < n; ++i) {
        double a = x[i + 1] - x[i] * x[i];
        g[i] += -400.0 * x[i] * a - 2.0 * (1.0 - x[i]);
        if (!(drop_last && i + 2 == n)) g[i + 1] += 200.0 * a;
    }
}

void gc_rosenbrock_grad(const double *x, int64_t n, const int64_t *iparams, double *g)
{
    (void)iparams;
    rosenbrock_grad_impl(x, n, g, 0);
}

void gc_rosenbrock_grad_lastbug(const double *x, int64_t n, const int64_t *iparams, double *g)
{
    (void)iparams;
    rosenbrock_grad_impl(x, n, g, 1);
}
