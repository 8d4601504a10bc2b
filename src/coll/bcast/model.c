/*
 * The cost model of the pipelined broadcast (paper 3, digest section 3) and the choice of
 * the fragment size f and the slot count s from it. Pure functions: no I/O, no state.
 *
 * Notation: t = time per byte copied, t_WO = wait for a set's readers, t_A = the atomic
 * decrement, t_W = wait for one notification, b = s f the queue size, m the message.
 */
#include "bcast.h"

#include <math.h>

nc_bcast_model_t nc_bcast_model_paper(void)
{
    const double t = 1e-9;
    nc_bcast_model_t md = {.t = t, .t_wo = 100 * t, .t_a = 10 * t, .t_w = 50 * t};
    return md;
}

nc_bcast_model_t nc_bcast_model_from(double t, double t_w)
{
    nc_bcast_model_t md = {.t = t, .t_wo = 2 * t_w, .t_a = 0.2 * t_w, .t_w = t_w};
    return md;
}

/* Fallback constants when a measurement fails: memcpy at about 10 GB/s (t = 0.1 ns/byte)
 * and a notification wait (one cache-line transfer between cores plus the loop) of about
 * 0.2 us; t_WO and t_A as ratios of t_W taken from the paper. */
nc_bcast_model_t nc_bcast_model_default(void)
{
    return nc_bcast_model_from(1e-10, 2e-7);
}

double nc_bcast_model_time(const nc_bcast_model_t *md, double m, double f, double s)
{
    if (m <= 0 || f <= 0 || s < 1) return 0.0;
    double b = s * f;
    double nf = ceil(m / f);
    if (s == 1) /* one buffer: every fragment waits for the readers */
        return nf * (md->t_wo + md->t_a) + nf * md->t_w + 2 * m * md->t;
    if (m <= f) /* no pipelining */
        return md->t_wo + md->t_w + md->t_a + 2 * m * md->t;
    if (m <= b) /* the whole message fits the queue: one wait for the set */
        return md->t_wo + md->t_a + f * md->t + nf * md->t_w + m * md->t;
    return ceil(m / b) * (md->t_wo + md->t_a + f * md->t) + nf * md->t_w + m * md->t;
}

size_t nc_bcast_model_fragment(const nc_bcast_model_t *md, size_t b, size_t page)
{
    if (page == 0) page = 4096;
    double f = sqrt((double)b * md->t_w / md->t);
    size_t fi = (size_t)ceil(f);
    if (fi < page) fi = page;
    return (fi + page - 1) / page * page;
}

size_t nc_bcast_model_slots(size_t b, size_t f, size_t min_s)
{
    size_t s = f ? b / f : min_s;
    return s < min_s ? min_s : s;
}
