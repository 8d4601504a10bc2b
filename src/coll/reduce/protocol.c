/*
 * The chunk protocol of every reduction algorithm (steps 1-3 and 5 of reduce_internal.h)
 * and a call's loop over its chunks.
 */
#include "reduce_internal.h"

#include <string.h>

int rd_wait_all(rd_call_t *call, int line, uint64_t target, const char *what)
{
    const nc_reduce_team_t *r = call->state;
    for (int m = 0; m < call->nprocs; m++) {
        _Atomic uint64_t *flag = rd_flag(r, m, line);
        /* Wait: member m alone writes its flag (release, after the writes it announces);
         * once we load a value >= target (acquire), those writes of every chunk up to
         * target are visible to us */
        if (atomic_load_explicit(flag, memory_order_acquire) >= target) continue;
        nc_wait_t w;
        nc_wait_init(&w, call->team, what);
        while (atomic_load_explicit(flag, memory_order_acquire) < target) {
            int rc = nc_wait_step(&w);
            if (rc) return rc;
        }
    }
    return NUMACOLL_OK;
}

void rd_fold(const rd_call_t *call, uint64_t chunk, size_t first_in_chunk, size_t n, char *out)
{
    const nc_reduce_team_t *r = call->state;
    size_t off = first_in_chunk * call->esize;
    if (call->nprocs == 1) {
        memcpy(out, rd_in(r, 0, chunk) + off, n * call->esize);
        return;
    }
    /* ((x_0 op x_1) op x_2) ... in rank order, the one order of every algorithm */
    call->kernel(out, rd_in(r, 0, chunk) + off, rd_in(r, 1, chunk) + off, n);
    for (int m = 2; m < call->nprocs; m++)
        call->kernel(out, out, rd_in(r, m, chunk) + off, n);
}

/* Step 1: wait until every member is done with the chunk that used this slot before */
static int wait_reuse(rd_call_t *call, uint64_t chunk)
{
    nc_reduce_team_t *r = call->state;
    if (chunk <= r->slots || r->done_min >= chunk - r->slots) return NUMACOLL_OK;
    int rc = rd_wait_all(call, RD_LINE_DONE, chunk - r->slots, call->who);
    if (rc) return rc;
    /* every member's done is now >= chunk - slots; remember it to skip the next checks */
    r->done_min = chunk - r->slots;
    return NUMACOLL_OK;
}

/* Step 3 on the call's first chunk: every member's signature of it equals ours */
static int check_signatures(rd_call_t *call, uint64_t chunk)
{
    const nc_reduce_team_t *r = call->state;
    unsigned slot = (unsigned)(chunk % r->slots);
    for (int m = 0; m < call->nprocs; m++) {
        /* relaxed: ordered by rd_wait_all's acquire of m's posted >= chunk, and m rewrites
         * sig[slot] only for chunk + slots, after our done says chunk */
        uint64_t theirs = atomic_load_explicit(rd_sig(r, m, slot), memory_order_relaxed);
        if (theirs != call->sig)
            return nc_error(NUMACOLL_ERR_ARG,
                            "%s: rank %d passed other arguments than rank %d (count, datatype, "
                            "op%s or algorithm differ); every member must pass the same",
                            call->who, m, call->me, call->root >= 0 ? ", root" : "");
    }
    return NUMACOLL_OK;
}

int rd_run_chunks(rd_call_t *call, int alg)
{
    nc_reduce_team_t *r = call->state;
    const size_t per_chunk = r->fragment / call->esize;
    const rd_step_fn step = rd_algorithms[alg].step;
    size_t first = 0;
    int rc = NUMACOLL_OK;
    /* a call of 0 elements runs one empty chunk: the signatures are still compared */
    do {
        rd_chunk_t chunk = {.number = r->next_chunk, .first = first,
                            .n = call->count - first < per_chunk ? call->count - first
                                                                  : per_chunk};
        rc = wait_reuse(call, chunk.number);
        if (rc) return rc; /* a dead member or a timeout: the team is broken */
        unsigned slot = (unsigned)(chunk.number % r->slots);
        memcpy(rd_in(r, call->me, chunk.number), call->input + first * call->esize,
               chunk.n * call->esize);
        atomic_store_explicit(rd_sig(r, call->me, slot), call->sig, memory_order_relaxed);
        /* release: our input and signature of the chunk before the flag that announces them */
        atomic_store_explicit(rd_flag(r, call->me, RD_LINE_POSTED), chunk.number,
                              memory_order_release);
        r->next_chunk++;
        int mismatch = NUMACOLL_OK;
        if (first == 0) {
            rc = rd_wait_all(call, RD_LINE_POSTED, chunk.number, call->who);
            if (rc) return rc;
            mismatch = check_signatures(call, chunk.number);
        }
        /* every member sees a mismatch if there is one (each compares all signatures with
         * its own), so all leave after this chunk and keep counting chunks alike */
        if (mismatch == NUMACOLL_OK) rc = step(call, &chunk);
        if (rc) return rc;
        if (mismatch) /* keep the reduced flags counting chunks as the done flags do */
            atomic_store_explicit(rd_flag(r, call->me, RD_LINE_REDUCED), chunk.number,
                                  memory_order_release);
        /* release: all our reads of the chunk's slots before the flag that frees them */
        atomic_store_explicit(rd_flag(r, call->me, RD_LINE_DONE), chunk.number,
                              memory_order_release);
        if (mismatch) return mismatch;
        first += chunk.n;
    } while (first < call->count);
    return NUMACOLL_OK;
}
