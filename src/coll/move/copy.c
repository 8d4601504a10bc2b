/*
 * Path "copy": an owner's stream (head, entries, the blocks that do not go by single copy)
 * through its NUMA-local slots, chunk by chunk (the protocol in move_internal.h); a reader
 * copies the ranges it needs out of the slots. Two copies per byte, one shared-memory
 * hand-over per chunk: the path of small and medium blocks.
 */
#include "move_internal.h"

#include <string.h>

static size_t head_bytes(uint32_t nent)
{
    return MV_HEAD_BYTES + (size_t)nent * MV_ENTRY_BYTES;
}

/* Copy stream bytes [a, b) of our call into @p dst; the members that read them: *lo..*hi */
static void fill(mv_call_t *c, size_t a, size_t b, char *dst, int *lo, int *hi)
{
    const size_t hb = head_bytes(c->nent);
    *lo = c->lo, *hi = c->hi;
    if (a < MV_HEAD_BYTES) {
        size_t n = (b < MV_HEAD_BYTES ? b : MV_HEAD_BYTES) - a;
        memcpy(dst, (const char *)&c->head + a, n);
        dst += n, a += n;
    }
    if (a < b && a < hb) {
        size_t n = (b < hb ? b : hb) - a;
        memcpy(dst, (const char *)c->ent + (a - MV_HEAD_BYTES), n);
        dst += n, a += n;
    }
    if (a >= b) return;
    /* data: only the destinations whose blocks the chunk holds read it, when the head is
     * not in it (a one-block stream has the same readers throughout) */
    int first = -1, last = -1;
    size_t pos = hb;
    for (uint32_t d = 0; d < c->nent && a < b; d++) {
        if (!mv_in_stream(&c->ent[d]) || c->ent[d].size == 0) continue;
        size_t end = pos + c->ent[d].size;
        if (a < end) {
            size_t n = (b < end ? b : end) - a;
            /* a slot's lines were last written one ring ago and its readers may still
             * cache them: plain stores would take each line back from them one at a time,
             * non-temporal stores replace the lines without reading them (and fence) */
            if (c->ent[d].size >= c->state->stream_min)
                nc_copy_stream(dst, c->src[d] + (a - pos), n);
            else
                memcpy(dst, c->src[d] + (a - pos), n);
            dst += n, a += n;
            if (first < 0) first = (int)d;
            last = (int)d;
        }
        pos = end;
    }
    if (c->multi && first >= 0)
        *lo = mv_member_of(c->me, (uint32_t)first), *hi = mv_member_of(c->me, (uint32_t)last);
}

int mv_copy_write(mv_call_t *c)
{
    nc_move_team_t *s = c->state;
    int progress = 0;
    while (c->next_chunk < c->nchunks) {
        uint64_t i = c->next_chunk;
        unsigned slot = mv_slot_of(c, s, i);
        mv_slot_rec_t *rec = &s->rec[slot];
        /* step 1: every member that read the slot's previous chunk is done with it */
        for (int m = rec->lo; m <= rec->hi; m++) {
            if (m == c->me || s->seen[m] >= rec->stamp) continue; /* known to be past it */
            _Atomic uint64_t *f = mv_consumed(s, m, c->me);
            /* acquire: m's reads of the old chunk happened before its store of consumed
             * (release), so our writes below cannot change what it reads */
            uint64_t v = atomic_load_explicit(f, memory_order_acquire);
            s->seen[m] = v; /* the acquire above covers every chunk up to v */
            if (v < rec->stamp) {
                mv_blocked(c, f, v, m);
                return progress;
            }
            rec->lo = m + 1; /* checked: not again */
        }
        /* step 2: the chunk's bytes, then its stamp (release) */
        size_t a = (size_t)i * c->chunk;
        size_t b = c->len - a < c->chunk ? c->len : a + c->chunk;
        int lo, hi;
        *mv_slot_chunk(s, c->me, slot) = c->chunk; /* before the stamp: readers learn C */
        fill(c, a, b, mv_slot(s, c->me, slot) + MV_SLOT_HEADER, &lo, &hi);
        if (a < head_bytes(c->nent)) lo = c->lo, hi = c->hi; /* every reader reads the head */
        rec->stamp = mv_stamp(c->k, i);
        rec->lo = lo, rec->hi = hi;
        rec->big = MV_SLOT_HEADER + (b - a) > s->eager; /* mv_state_give_back checks it */
        nc_flag_post(c->team, mv_slot_stamp(s, c->me, slot), rec->stamp);
        c->next_chunk++;
        progress = 1;
    }
    return progress;
}

int mv_copy_read_begin(mv_call_t *c, mv_read_t *rd, const mv_head_t *h, const mv_entry_t *e)
{
    (void)c, (void)h;
    rd->off = (size_t)(e->where & ~MV_IN_STREAM);
    rd->len = (size_t)e->size;
    rd->got = 0;
    rd->into = rd->dst;
    rd->phase = MV_READ_DATA;
    return NUMACOLL_OK;
}

/* we are done with every chunk of our owner's stream up to chunk @p i of this call */
static void publish_consumed(mv_call_t *c, int owner, uint64_t i)
{
    /* release: our reads of those chunks before the flag that lets the owner reuse them */
    nc_flag_post(c->team, mv_consumed(c->state, c->me, owner), mv_stamp(c->k, i));
}

int mv_copy_pull(mv_call_t *c, mv_read_t *rd)
{
    nc_move_team_t *s = c->state;
    const int o = rd->owner;
    while (rd->got < rd->len) {
        size_t pos = rd->off + rd->got;
        /* C not read yet: we read the head, in the first 32 bytes, chunk 0 for every C */
        const size_t cs = rd->chunk ? rd->chunk : s->chunk;
        uint64_t i = pos < cs ? 0 : pos / cs;
        size_t in = pos - (size_t)i * cs;
        if (rd->last_chunk != UINT64_MAX && i > rd->last_chunk) {
            publish_consumed(c, o, rd->last_chunk);
            rd->last_chunk = UINT64_MAX;
        }
        unsigned slot = mv_slot_of(c, s, i);
        _Atomic uint64_t *stamp = mv_slot_stamp(s, o, slot);
        const uint64_t want = mv_stamp(c->k, i);
        /* Wait (in the engine's loop): the owner alone writes the stamp, with release after
         * the chunk's bytes; stamp >= want (acquire) makes them visible. It cannot pass
         * want before our consumed says so, as long as the owner counts us among the
         * chunk's readers. */
        uint64_t v = atomic_load_explicit(stamp, memory_order_acquire);
        if (v < want) {
            mv_blocked(c, stamp, v, o);
            return 0;
        }
        if (v != want)
            return nc_error(NUMACOLL_ERR_ARG,
                            "%s: rank %d overwrote chunk %llu of its stream before rank %d read "
                            "it: the members disagree about the call (different roots, or "
                            "different collectives); every member must pass the same",
                            c->who, o, (unsigned long long)i, c->me);
        if (!rd->chunk) {
            /* the owner's C, written before the stamp we loaded with acquire */
            uint64_t oc = *mv_slot_chunk(s, o, slot);
            if (oc != s->chunk && oc != s->eager - MV_SLOT_HEADER)
                return nc_error(NUMACOLL_ERR_ARG,
                                "%s: rank %d streams in chunks of %llu bytes, rank %d allows %zu "
                                "or %zu: the members disagree about the buffers",
                                c->who, o, (unsigned long long)oc, c->me, s->chunk,
                                s->eager - MV_SLOT_HEADER);
            rd->chunk = (size_t)oc;
        }
        size_t n = rd->chunk - in;
        if (n > rd->len - rd->got) n = rd->len - rd->got;
        memcpy(rd->into + rd->got, mv_slot(s, o, slot) + MV_SLOT_HEADER + in, n);
        rd->got += n;
        rd->last_chunk = i;
    }
    return 1;
}

void mv_copy_leave(mv_call_t *c, mv_read_t *rd)
{
    rd->last_chunk = UINT64_MAX;
    rd->phase = MV_READ_DONE;
    publish_consumed(c, rd->owner, MV_END - 1); /* mv_stamp(k, MV_END - 1): st(k, MV_END) */
}
