/*
 * The chunk protocol of every reduction algorithm (steps 1-3 and 5 of reduce_internal.h),
 * the fold in rank order, and a call's loop over its chunks.
 */
#include "reduce_internal.h"

#include <string.h>

int rd_wait_flag(rd_call_t *call, int member, _Atomic uint64_t *flag, uint64_t target)
{
    if (atomic_load_explicit(flag, memory_order_acquire) >= target) return NUMACOLL_OK;
    nc_wait_t w;
    nc_wait_init(&w, call->team, call->who);
    w.waiting_for = member;
    /* @p member wakes us (nc_flag_post) if we sleep on the flag in the kernel */
    uint64_t v;
    while ((v = atomic_load_explicit(flag, memory_order_acquire)) < target) {
        int rc = nc_wait_step_on(&w, flag, v);
        if (rc) return rc;
    }
    return NUMACOLL_OK;
}

int rd_wait_all(rd_call_t *call, int line, uint64_t target)
{
    /* Wait: member m alone writes its flag (release, after the writes it announces); once
     * we load a value >= target (acquire), those writes of every chunk up to target are
     * visible to us */
    for (int m = 0; m < call->nprocs; m++) {
        int rc = rd_wait_flag(call, m, rd_flag(call->state, m, line), target);
        if (rc) return rc;
    }
    return NUMACOLL_OK;
}

int rd_wait_posted(rd_call_t *call, const rd_chunk_t *chunk)
{
    /* Wait: member m alone writes its slot's stamp, with release after its input and
     * signature of the chunk; a stamp >= chunk (acquire) makes both visible. The stamp
     * cannot pass chunk + slots - 1 before our done says chunk (step 1), so the slot still
     * holds this chunk when we read it. */
    for (int m = 0; m < call->nprocs; m++) {
        if (m == call->me) continue;
        _Atomic uint64_t *stamp = rd_stamp(call->state, m, chunk->slot);
        if (atomic_load_explicit(stamp, memory_order_acquire) >= chunk->number) continue;
        int rc = rd_wait_flag(call, m, stamp, chunk->number);
        if (rc) return rc;
    }
    return NUMACOLL_OK;
}

void rd_fold(const rd_call_t *call, const rd_chunk_t *chunk, size_t first, size_t n, char *out,
             int own_from_input)
{
    const nc_reduce_team_t *r = call->state;
    const size_t es = call->esize, off = first * es;
    const char *own = own_from_input ? call->input + (chunk->first + first) * es
                                     : rd_in(r, call->me, chunk->slot) + off;
#define INPUT(m) ((m) == call->me ? own : rd_in(r, (m), chunk->slot) + off)
    if (call->nprocs == 1) {
        if (out != own) memcpy(out, own, n * es);
        return;
    }
    /* ((x_0 op x_1) op x_2) ... in rank order, the one order of every algorithm */
    call->kernel(out, INPUT(0), INPUT(1), n);
    for (int m = 2; m < call->nprocs; m++)
        call->kernel(out, out, INPUT(m), n);
#undef INPUT
}

void rd_post_whole(rd_call_t *call, const rd_chunk_t *chunk)
{
    rd_copy_shared(call, rd_in(call->state, call->me, chunk->slot),
                   call->input + chunk->first * call->esize, chunk->n * call->esize);
}

/* Step 1: wait until every member is done with the chunk that used this slot before */
static int wait_reuse(rd_call_t *call, uint64_t chunk)
{
    nc_reduce_team_t *r = call->state;
    if (chunk <= r->slots || r->done_min >= chunk - r->slots) return NUMACOLL_OK;
    /* done_min is a lower bound of every member's done; wait for chunk - slots, or for
     * more where that costs nothing, to skip the checks of the next chunks */
    int rc = rd_wait_all(call, RD_LINE_DONE, chunk - r->slots);
    if (rc) return rc;
    uint64_t low = UINT64_MAX;
    for (int m = 0; m < call->nprocs; m++) {
        /* relaxed: only a lower bound is taken from it; rd_wait_all's acquire of every
         * member's done >= chunk - slots is what orders our writes to the slot */
        uint64_t d = atomic_load_explicit(rd_flag(r, m, RD_LINE_DONE), memory_order_relaxed);
        if (d < low) low = d;
    }
    r->done_min = low;
    return NUMACOLL_OK;
}

/* Step 3 on the call's first chunk: every member's signature of it equals ours. A member
 * without the pages of its slots posted RD_SIG_NOMEM instead: then every member fails the
 * call with NUMACOLL_ERR_UNSUPPORTED (that member keeps rd_state_ready's message), before
 * any data moved, and a caller may run it another way on every member alike. */
static int check_signatures(rd_call_t *call, const rd_chunk_t *chunk)
{
    const nc_reduce_team_t *r = call->state;
    int first_odd = -1, badarg = -1;
    for (int m = 0; m < call->nprocs; m++) {
        /* relaxed: ordered by rd_wait_posted's acquire of m's stamp, and m rewrites the
         * signature only for chunk + slots, after our done says chunk */
        uint64_t theirs = atomic_load_explicit(rd_sig(r, m, chunk->slot), memory_order_relaxed);
        if (call->keep_sigs) r->sigs[m] = theirs;
        if (theirs == RD_SIG_BADARG) {
            if (badarg < 0) badarg = m;
            continue;
        }
        if (theirs == RD_SIG_NOMEM) {
            if (m == call->me) return NUMACOLL_ERR_UNSUPPORTED; /* message already set */
            return nc_error(NUMACOLL_ERR_UNSUPPORTED,
                            "%s: rank %d could not get the memory of its reduction buffers for "
                            "chunks of more than %zu bytes; this reduction did not happen on "
                            "any member",
                            call->who, m, r->eager);
        }
        if (theirs != call->sig && first_odd < 0) first_odd = m;
    }
    if (call->sig == RD_SIG_BADARG) return NUMACOLL_ERR_ARG; /* our own message stays */
    if (badarg >= 0)
        return nc_error(NUMACOLL_ERR_ARG,
                        "%s: rank %d could not take part: invalid arguments or no memory there "
                        "(its own error says which); this call did not happen on any member",
                        call->who, badarg);
    if (first_odd < 0) return NUMACOLL_OK;
    return nc_error(NUMACOLL_ERR_ARG,
                    "%s: rank %d passed other arguments than rank %d (count, datatype, op%s or "
                    "algorithm differ); every member must pass the same",
                    call->who, first_odd, call->me, call->root >= 0 ? ", root" : "");
}

int rd_run_chunks(rd_call_t *call, int alg)
{
    call->chunk_elems = 0;
    return rd_run_chunks_of(call, &rd_algorithms[alg]);
}

int rd_run_chunks_of(rd_call_t *call, const rd_algorithm_t *algorithm)
{
    nc_reduce_team_t *r = call->state;
    /* elements per chunk (the call's own cut, or a message of one chunk that needs no
     * division, or the fragment's) */
    const size_t per_chunk = call->chunk_elems ? call->chunk_elems
                             : call->count * call->esize <= r->fragment
                                 ? call->count
                                 : r->fragment / call->esize;
    size_t first = 0;
    int rc = NUMACOLL_OK;
    /* A reduce's non-root that reads nothing (flat) and posts one chunk leaves right after
     * posting, as a native MPI's non-root leaves after its send: waiting for the others'
     * posts only to compare signatures would double the call. The root and the members of
     * longer calls still compare every signature, so a mismatch fails there, the chunk
     * counts stay alike (every member of a mismatched call stops after its first chunk),
     * and this member's next calls work. */
    /* It waits like the others while a member may still lack the pages its chunks need
     * (RD_SIG_NOMEM is seen by those who wait): its chunk within every member's eager
     * pages, or every member's slots complete. */
    const size_t bytes = call->chunk_elems ? call->slot_bytes : call->count * call->esize;
    const int leave_after_post = call->root >= 0 && call->me != call->root &&
                                 algorithm->step == rd_step_flat && bytes <= r->fragment &&
                                 (bytes <= r->eager || r->all_ready);
    const int nomem = call->sig == RD_SIG_NOMEM;
    /* a call of 0 elements runs one empty chunk: the signatures are still compared */
    do {
        rd_chunk_t chunk = {.number = r->next_chunk,
                            .first = first,
                            .n = call->count - first < per_chunk ? call->count - first
                                                                  : per_chunk,
                            .slot = r->next_slot};
        rc = wait_reuse(call, chunk.number);
        if (rc) return rc; /* a dead member or a timeout: the team is broken */
        if (chunk.n && !nomem) algorithm->post(call, &chunk); /* 0 elements: no data */
        atomic_store_explicit(rd_sig(r, call->me, chunk.slot), call->sig, memory_order_relaxed);
        /* release: our input and signature of the chunk before the stamp that posts them */
        nc_flag_post(call->team, rd_stamp(r, call->me, chunk.slot), chunk.number);
        r->next_chunk++;
        r->next_slot = r->next_slot + 1 == r->slots ? 0 : r->next_slot + 1;
        int mismatch = NUMACOLL_OK;
        if (first == 0 && !leave_after_post) {
            rc = rd_wait_posted(call, &chunk);
            if (rc) return rc;
            mismatch = check_signatures(call, &chunk);
            /* every member posted the call's signature, so every one got its pages */
            if (mismatch == NUMACOLL_OK && bytes > r->eager) r->all_ready = 1;
        }
        /* every member sees a mismatch if there is one (each compares all signatures with
         * its own), so all leave after this chunk and keep counting chunks alike */
        if (mismatch == NUMACOLL_OK && chunk.n) rc = algorithm->step(call, &chunk);
        if (rc) return rc;
        if (mismatch) /* keep the reduced flags counting chunks as the done flags do */
            nc_flag_post(call->team, rd_flag(r, call->me, RD_LINE_REDUCED), chunk.number);
        /* release: all our reads of the chunk's slots before the flag that frees them */
        nc_flag_post(call->team, rd_flag(r, call->me, RD_LINE_DONE), chunk.number);
        if (mismatch) return mismatch;
        first += chunk.n;
    } while (first < call->count);
    return NUMACOLL_OK;
}
