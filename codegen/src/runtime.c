/* ------------------------------------------------------------------------
 * The runtime of a rankscale benchmark (the same in every generated file).
 *
 * The trace's parameters are kept compressed, as the trace keeps them: each
 * parameter has, per rank, one value sequence (segments and repeat blocks)
 * that the program reads in execution order. Ranklists are sections of
 * strided ranks. Computation is a sleep drawn from the trace's histograms.
 * The functions are `static inline` because a benchmark uses only some of
 * them, and -Wall warns of unused static functions but not inline ones.
 * ------------------------------------------------------------------------ */

static int rs_rank, rs_size;
static double rs_compute_scale = RS_COMPUTE_SCALE;
static double rs_bytes_scale = RS_BYTES_SCALE;
static int rs_no_compute = RS_NO_COMPUTE;
/* --report-compute: each rank says what computation it drew (ns before
 * --compute-scale, and how many draws), to compare with replay's
 * `computation_drawn_ns`: with the same seed they are the same. */
static int rs_report_compute;
static double rs_drawn_ns;
static long long rs_draws;
static char rs_in[RS_NRL]; /* whether this rank is in each ranklist */
static MPI_Status *volatile rs_statuses_ignore; /* MPI_STATUSES_IGNORE, see rs_unweighted */

/* Stops the whole job with a message naming the rank: the trace and this
 * program disagree (a corrupt table, or a rank count that is not the
 * trace's). */
static inline void rs_fail(const char *what, long long a, long long b)
{
    fprintf(stderr, "bench: rank %d: %s (%lld, %lld)\n", rs_rank, what, a, b);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

/* The place of rank r in the ranklist at w (from 0 for its lowest rank), or
 * -1 when r is not in it: sections of start + sum(i_k * stride_k),
 * 0 <= i_k < iterations_k, outermost first, in ascending order (compress's
 * RankList::index_of). */
static inline int64_t rs_rl_index(const int64_t *w, int64_t r)
{
    int64_t nsec = *w++, before = 0;
    for (int64_t s = 0; s < nsec; s++) {
        int64_t d = w[0], rem = r - w[1], place = 0, size = 1;
        int ok = rem >= 0;
        for (int64_t k = 0; k < d; k++) {
            int64_t it = w[2 + 2 * k], st = w[3 + 2 * k];
            int64_t i = st > 0 && ok ? rem / st : 0;
            if (i >= it)
                ok = 0;
            else
                rem -= i * st;
            place = place * it + i;
            size *= it;
        }
        if (ok && rem == 0)
            return before + place;
        before += size;
        w += 2 + 2 * d;
    }
    return -1;
}

/* Whether rank r is in the ranklist at w. */
static inline int rs_rl_has(const int64_t *w, int64_t r)
{
    return rs_rl_index(w, r) >= 0;
}

/* Value i of n blocks at w (a segment: 0 start stride len; a repeat:
 * 1 words reps shift period_len nblocks blocks...). Wrapping arithmetic. */
static inline int rs_blocks(const int64_t *w, int64_t n, uint64_t i, int64_t *out)
{
    for (int64_t b = 0; b < n; b++) {
        if (w[0] == 0) {
            uint64_t len = (uint64_t)w[3];
            if (i < len) {
                *out = (int64_t)((uint64_t)w[1] + (uint64_t)w[2] * i);
                return 1;
            }
            i -= len;
            w += 4;
        } else {
            uint64_t words = (uint64_t)w[1], reps = (uint64_t)w[2], plen = (uint64_t)w[4];
            if (plen == 0)
                return 0;
            if (i < reps * plen) {
                int64_t v;
                if (!rs_blocks(w + 6, w[5], i % plen, &v))
                    return 0;
                *out = (int64_t)((uint64_t)v + (uint64_t)w[3] * (i / plen));
                return 1;
            }
            i -= reps * plen;
            w += 2 + words;
        }
    }
    return 0;
}

/* A parameter as this rank reads it: k phases (1 without phase split),
 * each a value sequence, minus the rank for absolute peers. */
#define RS_MAXPH 16
typedef struct {
    int ready, k;
    int64_t sub[RS_MAXPH];
    uint64_t n;
    /* Per phase, a cursor over the sequence's top-level blocks: the
     * block holding the next value, the blocks left from it on, and the
     * index of its first value. Values are read in order, so each block
     * is passed once, and a value costs the depth of its repeat blocks,
     * not the number of blocks before it. */
    const int64_t *blk[RS_MAXPH];
    int64_t left[RS_MAXPH];
    uint64_t base[RS_MAXPH];
} rs_param;
static rs_param rs_params[RS_NPARAM];

/* The variant of the parameter at p that holds this rank. */
static inline int rs_pick(const int64_t *p, rs_param *q, int ph)
{
    for (int64_t v = 0; v < p[0]; v++) {
        const int64_t *e = p + 1 + 3 * v;
        if (rs_rl_has(RS_RL + e[0], rs_rank)) {
            const int64_t *seq = RS_SQ + e[2];
            q->sub[ph] = e[1] ? rs_rank : 0;
            q->left[ph] = seq[0];
            q->blk[ph] = seq + 1;
            q->base[ph] = 0;
            return 1;
        }
    }
    return 0;
}

/* Value i of phase ph, i at least the last one asked for. */
static inline int rs_seek(rs_param *q, int ph, uint64_t i, int64_t *out)
{
    while (q->left[ph] > 0) {
        const int64_t *w = q->blk[ph];
        uint64_t len = w[0] == 0 ? (uint64_t)w[3] : (uint64_t)w[2] * (uint64_t)w[4];
        if (i - q->base[ph] < len)
            return rs_blocks(w, 1, i - q->base[ph], out);
        q->base[ph] += len;
        q->blk[ph] += w[0] == 0 ? 4 : 2 + w[1];
        q->left[ph]--;
    }
    return 0;
}

/* The next value of parameter pid on this rank. */
static inline int64_t rs_next(int pid)
{
    rs_param *q = &rs_params[pid];
    if (!q->ready) {
        const int64_t *p = RS_PA + RS_PA_AT[pid];
        if (rs_pick(p, q, 0)) {
            q->k = 1;
        } else {
            const int64_t *g = p + 1 + 3 * p[0];
            int64_t ng = *g++;
            for (int64_t j = 0; j < ng && !q->k; j++) {
                if (rs_rl_has(RS_RL + g[0], rs_rank)) {
                    if (g[1] < 1 || g[1] > RS_MAXPH)
                        rs_fail("bad phase count", pid, g[1]);
                    for (int64_t ph = 0; ph < g[1]; ph++)
                        if (!rs_pick(RS_PA + g[2 + ph], q, (int)ph))
                            rs_fail("a phase has no value for this rank", pid, ph);
                    q->k = (int)g[1];
                }
                g += 2 + g[1];
            }
            if (!q->k)
                rs_fail("no value of a parameter for this rank", pid, 0);
        }
        q->ready = 1;
    }
    uint64_t n = q->n++;
    int ph = (int)(n % (uint64_t)q->k);
    int64_t v;
    if (!rs_seek(q, ph, n / (uint64_t)q->k, &v))
        rs_fail("a parameter ran out of values", pid, (long long)n);
    return (int64_t)((uint64_t)v - (uint64_t)q->sub[ph]);
}

/* A list parameter (length, then one column per item), read into scratch
 * slot `slot`; returns the number of entries. */
static int64_t *rs_lists[16];
static int64_t rs_list_cap[16];
static inline int64_t rs_list(int slot, int lens, int width, int ncols, const int *cols)
{
    int64_t len = rs_next(lens), items = len * width;
    if (len < 0 || items > ncols)
        rs_fail("a list is longer than its columns", lens, len);
    if (items > rs_list_cap[slot]) {
        rs_lists[slot] = realloc(rs_lists[slot], sizeof(int64_t) * (size_t)items);
        if (!rs_lists[slot])
            rs_fail("out of memory for a list", lens, len);
        rs_list_cap[slot] = items;
    }
    for (int64_t c = 0; c < items; c++)
        rs_lists[slot][c] = rs_next(cols[c]);
    return len;
}

/* A list as C ints (at least `min` entries, zero-filled), in slot `slot`. */
static int *rs_ints_buf[8];
static int64_t rs_ints_cap[8];
static inline int *rs_ints(int slot, const int64_t *v, int64_t n, int64_t min, int scale)
{
    int64_t m = n > min ? n : min;
    if (m < 1)
        m = 1;
    if (m > rs_ints_cap[slot]) {
        rs_ints_buf[slot] = realloc(rs_ints_buf[slot], sizeof(int) * (size_t)m);
        if (!rs_ints_buf[slot])
            rs_fail("out of memory for counts", n, m);
        rs_ints_cap[slot] = m;
    }
    for (int64_t i = 0; i < m; i++) {
        int64_t x = i < n ? v[i] : 0;
        if (scale) {
            double s = (double)x * rs_bytes_scale + 0.5;
            x = s < 0 ? 0 : s > 2147483647.0 ? 2147483647 : (int64_t)s;
        }
        rs_ints_buf[slot][i] = (int)x;
    }
    return rs_ints_buf[slot];
}

/* Displacements (prefix sums) of n counts, in slot `slot`. */
static inline int *rs_displs(int slot, const int *counts, int64_t n)
{
    int64_t zero = 0;
    int *d = rs_ints(slot, &zero, 0, n, 0);
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        d[i] = (int)at;
        at += counts[i];
    }
    return d;
}

/* The in- and out-degree of a communicator's virtual topology (the lengths
 * of a neighbourhood collective's lists), asked through PMPI_ so that a
 * traced run of the benchmark records only the application's calls. */
static inline void rs_degrees(MPI_Comm c, int *indeg, int *outdeg)
{
    int kind = MPI_UNDEFINED, n = 0, me = 0, weighted = 0;
    *indeg = *outdeg = 0;
    PMPI_Topo_test(c, &kind);
    if (kind == MPI_CART) {
        PMPI_Cartdim_get(c, &n);
        *indeg = *outdeg = 2 * n;
    } else if (kind == MPI_GRAPH) {
        PMPI_Comm_rank(c, &me);
        PMPI_Graph_neighbors_count(c, me, &n);
        *indeg = *outdeg = n;
    } else if (kind == MPI_DIST_GRAPH) {
        PMPI_Dist_graph_neighbors_count(c, indeg, outdeg, &weighted);
    }
}

static inline int64_t rs_sum(const int *v, int64_t n)
{
    int64_t s = 0;
    for (int64_t i = 0; i < n; i++)
        s += v[i];
    return s;
}

/* A recorded element count scaled by --bytes-scale. */
static inline int rs_count(int64_t c)
{
    double s = (double)c * rs_bytes_scale + 0.5;
    return s < 0 ? 0 : s > 2147483647.0 ? 2147483647 : (int)s;
}

/* The application's predefined datatype when this MPI has it with the
 * recorded size, else a contiguous type of that many bytes. */
static MPI_Datatype rs_bytes_types[64];
static int64_t rs_bytes_sizes[64];
static inline MPI_Datatype rs_dt(MPI_Datatype t, int64_t dsize)
{
    if (t != MPI_DATATYPE_NULL) {
        int s = 0;
        if (MPI_Type_size(t, &s) == MPI_SUCCESS && s == dsize)
            return t;
    }
    if (dsize <= 1)
        return MPI_BYTE;
    for (int i = 0; i < 64; i++) {
        if (rs_bytes_sizes[i] == dsize)
            return rs_bytes_types[i];
        if (rs_bytes_sizes[i] == 0) {
            MPI_Type_contiguous((int)dsize, MPI_BYTE, &rs_bytes_types[i]);
            MPI_Type_commit(&rs_bytes_types[i]);
            rs_bytes_sizes[i] = dsize;
            return rs_bytes_types[i];
        }
    }
    rs_fail("more than 64 datatype sizes", dsize, 0);
    return MPI_BYTE;
}

/* Alltoallw's per-peer datatypes (stand-ins of the recorded sizes), in
 * slot `slot`, kept with request `owner` when it is one (>= 0). */
static MPI_Datatype *rs_types_buf[2];
static int64_t rs_types_cap[2];
static inline void *rs_keep(int64_t id, const void *v, size_t bytes);
static inline MPI_Datatype *rs_types(int64_t owner, int slot, const int64_t *dsizes, int64_t n, int64_t np)
{
    int64_t m = np < 1 ? 1 : np;
    if (m > rs_types_cap[slot]) {
        rs_types_buf[slot] = realloc(rs_types_buf[slot], sizeof(MPI_Datatype) * (size_t)m);
        if (!rs_types_buf[slot])
            rs_fail("out of memory for datatypes", n, np);
        rs_types_cap[slot] = m;
    }
    for (int64_t i = 0; i < m; i++)
        rs_types_buf[slot][i] = rs_dt(MPI_DATATYPE_NULL, i < n ? dsizes[i] : 1);
    if (owner < 0)
        return rs_types_buf[slot];
    return rs_keep(owner, rs_types_buf[slot], sizeof(MPI_Datatype) * (size_t)m);
}

/* n zeroed MPI_Aint displacements (Neighbor_alltoallw's), kept with
 * request `owner` when it is one (>= 0). */
static MPI_Aint *rs_aints_buf[2];
static int64_t rs_aints_cap[2];
static inline MPI_Aint *rs_aints(int64_t owner, int slot, int64_t n)
{
    int64_t m = n < 1 ? 1 : n;
    if (m > rs_aints_cap[slot]) {
        rs_aints_buf[slot] = realloc(rs_aints_buf[slot], sizeof(MPI_Aint) * (size_t)m);
        if (!rs_aints_buf[slot])
            rs_fail("out of memory for displacements", n, m);
        rs_aints_cap[slot] = m;
    }
    for (int64_t i = 0; i < m; i++)
        rs_aints_buf[slot][i] = 0;
    if (owner < 0)
        return rs_aints_buf[slot];
    return rs_keep(owner, rs_aints_buf[slot], sizeof(MPI_Aint) * (size_t)m);
}

/* Bytes one element of t spans in a buffer of several (its extent). */
static inline size_t rs_span(MPI_Datatype t)
{
    MPI_Aint lb = 0, extent = 0;
    int s = 0;
    MPI_Type_get_extent(t, &lb, &extent);
    MPI_Type_size(t, &s);
    int64_t ub = (int64_t)(lb + extent);
    if (ub < s)
        ub = s;
    return ub < 1 ? 1 : (size_t)ub;
}

/* The blocking calls' buffers: slot 0 sends, slot 1 receives, grown as
 * needed and zero-filled (the payload does not matter). */
static char *rs_bufs[2];
static size_t rs_buf_cap[2];
static inline void *rs_buf(int slot, int64_t count, MPI_Datatype t)
{
    size_t bytes = (size_t)(count < 1 ? 1 : count) * rs_span(t);
    if (bytes > rs_buf_cap[slot]) {
        char *p = realloc(rs_bufs[slot], bytes);
        if (!p)
            rs_fail("out of memory for a buffer", count, (long long)bytes);
        memset(p + rs_buf_cap[slot], 0, bytes - rs_buf_cap[slot]);
        rs_bufs[slot] = p;
        rs_buf_cap[slot] = bytes;
    }
    return rs_bufs[slot];
}

/* Requests by their trace id, in a ring; each keeps its own buffer until
 * it completes. */
#define RS_RING 65536
static MPI_Request rs_rq[RS_RING];
static int64_t rs_rqid[RS_RING];
static void *rs_rqmem[RS_RING];

static inline size_t rs_slot(int64_t id)
{
    size_t s = (size_t)((uint64_t)id & (RS_RING - 1));
    if (rs_rqid[s] != id)
        rs_fail("a request the trace has not created, or one overwritten", id, rs_rqid[s]);
    return s;
}

/* Completions of racy calls (Waitany, Waitsome, Test*) may come out
 * otherwise than in the trace; a later call's list then names a request
 * this run has already completed, which it skips and counts here. */
static long long rs_drift;

/* A buffer for a new request's `count` elements of t. */
static inline void *rs_rqbuf(int64_t id, int64_t count, MPI_Datatype t)
{
    size_t s = (size_t)((uint64_t)id & (RS_RING - 1));
    if (rs_rqid[s] >= 0)
        rs_fail("more live requests than the ring holds", id, rs_rqid[s]);
    rs_rqid[s] = id;
    rs_rqmem[s] = calloc((size_t)(count < 1 ? 1 : count), rs_span(t));
    if (!rs_rqmem[s])
        rs_fail("out of memory for a request buffer", id, count);
    return rs_rqmem[s];
}

/* The handle of the request rs_rqbuf just gave a buffer to. */
static inline MPI_Request *rs_req(int64_t id)
{
    return &rs_rq[rs_slot(id)];
}

/* Arrays a nonblocking collective's arguments point to (counts,
 * displacements, datatypes), kept with its request until it completes. */
typedef struct rs_aux {
    struct rs_aux *next;
    char data[];
} rs_aux;
static rs_aux *rs_rqaux[RS_RING];
static inline void *rs_keep(int64_t id, const void *v, size_t bytes)
{
    size_t s = (size_t)((uint64_t)id & (RS_RING - 1));
    rs_aux *a = malloc(sizeof(rs_aux) + (bytes ? bytes : 1));
    if (!a)
        rs_fail("out of memory for a request's arrays", id, (long long)bytes);
    memcpy(a->data, v, bytes);
    a->next = rs_rqaux[s];
    rs_rqaux[s] = a;
    return a->data;
}
static inline int *rs_keep_ints(int64_t id, const int *v, int64_t n)
{
    return rs_keep(id, v, sizeof(int) * (size_t)(n < 1 ? 1 : n));
}

/* Forgets a request whose handle MPI has set to MPI_REQUEST_NULL. */
static inline void rs_settle(size_t s)
{
    if (rs_rq[s] == MPI_REQUEST_NULL) {
        free(rs_rqmem[s]);
        rs_rqmem[s] = NULL;
        rs_rqid[s] = -1;
        while (rs_rqaux[s]) {
            rs_aux *a = rs_rqaux[s];
            rs_rqaux[s] = a->next;
            free(a);
        }
    }
}

enum { RS_WAIT, RS_WAITALL, RS_WAITANY, RS_WAITSOME, RS_TEST, RS_TESTALL, RS_TESTANY, RS_TESTSOME,
       RS_START, RS_STARTALL, RS_FREE, RS_CANCEL };

/* A completion (or start, or free) call on the requests with these ids. */
static MPI_Request *rs_rqarr;
static int *rs_idx;
static int64_t rs_rqarr_cap;
static inline void rs_requests(int op, const int64_t *ids, int64_t n)
{
    if (n + 1 > rs_rqarr_cap) {
        rs_rqarr = realloc(rs_rqarr, sizeof(MPI_Request) * (size_t)(n + 1));
        rs_idx = realloc(rs_idx, sizeof(int) * (size_t)(n + 1));
        if (!rs_rqarr || !rs_idx)
            rs_fail("out of memory for requests", n, 0);
        rs_rqarr_cap = n + 1;
    }
    MPI_Request *a = rs_rqarr;
    for (int64_t i = 0; i < n; i++) {
        size_t s = (size_t)((uint64_t)ids[i] & (RS_RING - 1));
        if (rs_rqid[s] == ids[i]) {
            a[i] = rs_rq[s];
        } else {
            a[i] = MPI_REQUEST_NULL;
            rs_drift++;
        }
    }
    if (n == 0)
        a[0] = MPI_REQUEST_NULL;
    int k = (int)n, idx = 0, flag = 0, outc = 0;
    switch (op) {
    case RS_WAIT: MPI_Wait(&a[0], MPI_STATUS_IGNORE); break;
    case RS_WAITALL: MPI_Waitall(k, a, rs_statuses_ignore); break;
    case RS_WAITANY: MPI_Waitany(k, a, &idx, MPI_STATUS_IGNORE); break;
    case RS_WAITSOME: MPI_Waitsome(k, a, &outc, rs_idx, rs_statuses_ignore); break;
    case RS_TEST: MPI_Test(&a[0], &flag, MPI_STATUS_IGNORE); break;
    case RS_TESTALL: MPI_Testall(k, a, &flag, rs_statuses_ignore); break;
    case RS_TESTANY: MPI_Testany(k, a, &idx, &flag, MPI_STATUS_IGNORE); break;
    case RS_TESTSOME: MPI_Testsome(k, a, &outc, rs_idx, rs_statuses_ignore); break;
    case RS_START: MPI_Start(&a[0]); break;
    case RS_CANCEL:
        if (a[0] != MPI_REQUEST_NULL)
            MPI_Cancel(&a[0]);
        break;
    case RS_STARTALL: MPI_Startall(k, a); break;
    case RS_FREE:
        MPI_Request_free(&a[0]);
        /* An active request may still use its buffer: keep it. */
        if (n > 0) {
            size_t s = rs_slot(ids[0]);
            rs_rqmem[s] = NULL;
        }
        break;
    }
    for (int64_t i = 0; i < n; i++) {
        size_t s = (size_t)((uint64_t)ids[i] & (RS_RING - 1));
        if (rs_rqid[s] == ids[i]) {
            rs_rq[s] = a[i];
            rs_settle(s);
        }
    }
}

/* Matched messages (Mprobe, Improbe) by their trace id, for the Mrecv or
 * Imrecv that takes them. */
#define RS_MSGS 4096
static MPI_Message rs_msgs[RS_MSGS];
static MPI_Message rs_null_msg, rs_no_proc_msg;
static inline MPI_Message *rs_msg(int64_t id)
{
    return &rs_msgs[(uint64_t)id & (RS_MSGS - 1)];
}

/* The status of the probe that matched message id. */
static MPI_Status rs_msg_st[RS_MSGS];
static inline MPI_Status *rs_msg_status(int64_t id)
{
    return &rs_msg_st[(uint64_t)id & (RS_MSGS - 1)];
}

/* The count an Mrecv or Imrecv of message id takes: the recorded one,
 * or, where this run's probe matched a larger message (a racy wildcard
 * probe), enough for it (one more drifted outcome). */
static inline int rs_msg_fit(int64_t id, int n, MPI_Datatype t)
{
    int got = 0, s = 0;
    MPI_Type_size(t, &s);
    if (*rs_msg(id) == MPI_MESSAGE_NULL || *rs_msg(id) == MPI_MESSAGE_NO_PROC || s <= 0)
        return n;
    MPI_Get_count(rs_msg_status(id), MPI_BYTE, &got);
    if (got > (int64_t)n * s) {
        rs_drift++;
        return (got + s - 1) / s;
    }
    return n;
}

/* The message an Mrecv or Imrecv takes; MPI_MESSAGE_NO_PROC (and one more
 * drifted outcome) where this run's probe found none. */
static inline MPI_Message *rs_taken_msg(int64_t id)
{
    MPI_Message *m = rs_msg(id);
    if (*m == MPI_MESSAGE_NULL) {
        *m = MPI_MESSAGE_NO_PROC;
        rs_drift++;
    }
    return m;
}

/* MPI_UNWEIGHTED and MPI_STATUSES_IGNORE, behind volatile pointers: the
 * MPI libraries define them as zero-length arrays, which GCC's
 * -Wstringop-overflow and -Wstringop-overread take for buffers too small. */
static int *volatile rs_unweighted;

/* The group of these world ranks (MPI_Comm_create's argument). */
static inline MPI_Group rs_group(const int *members, int64_t n)
{
    MPI_Group world, g;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, (int)n, members, &g);
    MPI_Group_free(&world);
    return g;
}

/* ------------------------------------------------------------------------
 * MPI-IO, as replay issues it (replay/src/exec/io.rs): files by their
 * trace id (in the communicators' id space), made only in a scratch
 * directory and only under the names `rankscale-<16 hex digits of the
 * recorded path hash>`. The directory: --iodir DIR or
 * RANKSCALE_REPLAY_IODIR, an existing directory that is kept; else, when
 * the benchmark has MPI-IO (RS_IO), rank 0 makes a fresh
 * rankscale-bench-io-XXXXXX in $TMPDIR (else /tmp), sends its path to
 * every rank on a duplicate of MPI_COMM_WORLD, and removes it with
 * everything in it once every rank has finished. The housekeeping goes
 * through PMPI_ and plain C, so a traced benchmark records only the
 * application's calls.
 * ------------------------------------------------------------------------ */
static const char *rs_iodir_opt; /* --iodir */
static char rs_iodir[4096];
static int rs_iomade;            /* rank 0 made rs_iodir, removed at the end */
static MPI_Comm rs_iodup;        /* the duplicate its path went out on */
static double rs_io_bytes[2];    /* read, written (count times datatype size) */
static long long rs_io_moved;    /* individual pointers moved to the recorded place */

typedef struct {
    MPI_File fh;
    void *split; /* the buffer of the split collective under way, to its _end */
} rs_fileh;
/* Makes room for index `id` in `t`, a table of `n` pointers kept by
 * trace id (communicators, files, windows), the new slots NULL; `one`
 * and `many` name its items in the messages. Ids 0 and 1 are the
 * predefined ones, never created. */
#define RS_SLOT(t, n, id, one, many)                                       \
    do {                                                                   \
        if ((id) < 2)                                                      \
            rs_fail(one " with a reserved id", (id), 0);                   \
        if ((id) >= (n)) {                                                 \
            int64_t rs_n_ = (id) + 16;                                     \
            (t) = realloc((t), sizeof *(t) * (size_t)rs_n_);               \
            if (!(t))                                                      \
                rs_fail("out of memory for " many, (id), 0);               \
            for (int64_t rs_i_ = (n); rs_i_ < rs_n_; rs_i_++)              \
                (t)[rs_i_] = NULL;                                         \
            (n) = rs_n_;                                                   \
        }                                                                  \
    } while (0)

static rs_fileh **rs_files;
static int64_t rs_nfiles;

/* Stops the job when an MPI-IO call fails (files return errors by
 * default rather than abort), with MPI's own message. */
static inline void rs_io(const char *call, int rc)
{
    if (rc == MPI_SUCCESS)
        return;
    char msg[MPI_MAX_ERROR_STRING + 1];
    int len = 0;
    msg[0] = 0;
    PMPI_Error_string(rc, msg, &len);
    fprintf(stderr, "bench: rank %d: %s failed: %s\n", rs_rank, call, msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

/* The scratch directory, on every rank (collective over the world when it
 * is made here). */
static inline void rs_io_setup(void)
{
    const char *given = rs_iodir_opt;
    if (!given || !*given)
        given = getenv("RANKSCALE_REPLAY_IODIR");
    struct stat st;
    if (given && *given) {
        if (stat(given, &st) != 0 || !S_ISDIR(st.st_mode) || strlen(given) >= sizeof rs_iodir) {
            fprintf(stderr, "bench: rank %d: the MPI-IO scratch directory %s (--iodir or "
                            "RANKSCALE_REPLAY_IODIR) is not a directory\n", rs_rank, given);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        snprintf(rs_iodir, sizeof rs_iodir, "%s", given);
        return;
    }
    PMPI_Comm_dup(MPI_COMM_WORLD, &rs_iodup);
    rs_iomade = 1;
    int len = -1;
    if (rs_rank == 0) {
        const char *tmp = getenv("TMPDIR");
        if (!tmp || !*tmp)
            tmp = "/tmp";
        int n = snprintf(rs_iodir, sizeof rs_iodir, "%s/rankscale-bench-io-XXXXXX", tmp);
        if (n > 0 && (size_t)n < sizeof rs_iodir && mkdtemp(rs_iodir))
            len = (int)strlen(rs_iodir);
        else
            fprintf(stderr, "bench: could not make a scratch directory for MPI-IO in %s: %s\n",
                    tmp, strerror(errno));
    }
    PMPI_Bcast(&len, 1, MPI_INT, 0, rs_iodup);
    if (len < 0)
        MPI_Abort(MPI_COMM_WORLD, 2);
    PMPI_Bcast(rs_iodir, len + 1, MPI_CHAR, 0, rs_iodup);
    if (stat(rs_iodir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "bench: rank %d: the scratch directory %s that rank 0 made for MPI-IO is "
                        "not there on this rank's node (the temporary directory is local to a "
                        "node): give --iodir (or RANKSCALE_REPLAY_IODIR) a directory on a file "
                        "system every node shares\n", rs_rank, rs_iodir);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* Removes `path` and, if it is a directory, everything in it. */
static int rs_rmtree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode))
        return unlink(path);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        size_t n = strlen(path) + strlen(de->d_name) + 2;
        char *p = malloc(n);
        if (!p) {
            rc = -1;
            break;
        }
        snprintf(p, n, "%s/%s", path, de->d_name);
        if (rs_rmtree(p) != 0)
            rc = -1;
        free(p);
    }
    closedir(d);
    return rmdir(path) != 0 ? -1 : rc;
}

/* After every rank's last call (collective over the world): the bytes the
 * accesses moved, and the removal of a scratch directory made here. */
static inline void rs_io_finish(void)
{
    double all[2] = {0, 0};
    PMPI_Reduce(rs_io_bytes, all, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rs_rank == 0)
        printf("bench: MPI-IO: %.0f bytes written, %.0f bytes read (all ranks) in %s%s\n", all[1],
               all[0], rs_iodir, rs_iomade ? " (removed)" : "");
    if (rs_io_moved > 0)
        fprintf(stderr, "bench: rank %d: %lld accesses found the individual file pointer "
                        "elsewhere than the application's and moved it there\n", rs_rank,
                rs_io_moved);
    if (!rs_iomade)
        return;
    PMPI_Barrier(rs_iodup);
    if (rs_rank == 0 && rs_rmtree(rs_iodir) != 0)
        fprintf(stderr, "bench: warning: could not remove the MPI-IO scratch directory %s: %s\n",
                rs_iodir, strerror(errno));
    PMPI_Comm_free(&rs_iodup);
    rs_iomade = 0;
}

/* The scratch file of path hash `hash`. */
static inline void rs_iopath(char *p, size_t n, int64_t hash)
{
    if (!rs_iodir[0])
        rs_fail("an MPI-IO call, but no scratch directory was set up for it", hash, 0);
    snprintf(p, n, "%s/rankscale-%016llx", rs_iodir, (unsigned long long)(uint64_t)hash);
}

/* Makes the scratch file p empty if it is not there (not truncating one
 * that is): the application found its file there. */
static inline void rs_touch(const char *p)
{
    FILE *f = fopen(p, "a");
    if (!f) {
        fprintf(stderr, "bench: rank %d: making the empty scratch file %s: %s\n", rs_rank, p,
                strerror(errno));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    fclose(f);
}

/* The trace's access-mode bits (trace::Io::MODE_*) as this library's. */
static inline int rs_amode(int64_t bits)
{
    return (bits & 1 ? MPI_MODE_RDONLY : 0) | (bits & 2 ? MPI_MODE_WRONLY : 0) |
           (bits & 4 ? MPI_MODE_RDWR : 0) | (bits & 8 ? MPI_MODE_CREATE : 0) |
           (bits & 16 ? MPI_MODE_EXCL : 0) | (bits & 32 ? MPI_MODE_DELETE_ON_CLOSE : 0) |
           (bits & 64 ? MPI_MODE_UNIQUE_OPEN : 0) | (bits & 128 ? MPI_MODE_SEQUENTIAL : 0) |
           (bits & 256 ? MPI_MODE_APPEND : 0);
}

/* The trace's whence (trace::Io::SEEK_*) as this library's. */
static inline int rs_whence(int64_t w)
{
    return w == 0 ? MPI_SEEK_SET : w == 1 ? MPI_SEEK_CUR : w == 2 ? MPI_SEEK_END : (int)w;
}

static inline rs_fileh *rs_file(int64_t id)
{
    if (id < 0 || id >= rs_nfiles || !rs_files[id])
        rs_fail("a file that is not open at this point", id, rs_nfiles);
    return rs_files[id];
}

/* File_open of the scratch file of path hash `hash` over c, with the
 * recorded access mode, as file `id`. An exclusive open's leftover (of an
 * earlier run in a given directory) goes first, on c's rank 0; a file the
 * application opened without MPI_MODE_CREATE is made empty if this run
 * has not made it. */
static inline void rs_file_open(int64_t id, MPI_Comm c, int64_t amode, int64_t hash)
{
    char p[sizeof rs_iodir + 32];
    rs_iopath(p, sizeof p, hash);
    if (amode & 16) {
        int me = 0;
        PMPI_Comm_rank(c, &me);
        if (me == 0 && access(p, F_OK) == 0 && unlink(p) != 0)
            rs_fail("could not remove a scratch file before an exclusive open", hash, errno);
        PMPI_Barrier(c);
    } else if (!(amode & 8)) {
        rs_touch(p);
    }
    RS_SLOT(rs_files, rs_nfiles, id, "a file", "files");
    rs_fileh *f = calloc(1, sizeof *f);
    if (!f)
        rs_fail("out of memory for a file", id, 0);
    rs_io("MPI_File_open", MPI_File_open(c, p, rs_amode(amode), MPI_INFO_NULL, &f->fh));
    rs_files[id] = f;
}

static inline void rs_file_close(int64_t id)
{
    rs_fileh *f = rs_file(id);
    rs_io("MPI_File_close", MPI_File_close(&f->fh));
    free(f->split);
    free(f);
    rs_files[id] = NULL;
}

/* File_delete of the scratch file of path hash `hash`, made empty first
 * if this run has not made it (the application's was there). */
static inline void rs_file_delete(int64_t hash)
{
    char p[sizeof rs_iodir + 32];
    rs_iopath(p, sizeof p, hash);
    rs_touch(p);
    rs_io("MPI_File_delete", MPI_File_delete(p, MPI_INFO_NULL));
}

/* File_set_view with stand-ins of the recorded sizes and bounds: an etype
 * of `etype` bytes, and a filetype of `filetype` bytes of data at the end
 * of lb .. lb + extent (so that the data reaches as far into the file as
 * the application's), made once per shape. */
typedef struct {
    int64_t key[4];
    MPI_Datatype et, ft;
} rs_viewt;
static rs_viewt *rs_views;
static int64_t rs_nviews;
static inline void rs_file_view(rs_fileh *f, int64_t disp, int64_t etype, int64_t filetype,
                                int64_t lb, int64_t extent)
{
    int64_t i = 0;
    while (i < rs_nviews && !(rs_views[i].key[0] == etype && rs_views[i].key[1] == filetype &&
                              rs_views[i].key[2] == lb && rs_views[i].key[3] == extent))
        i++;
    if (i == rs_nviews) {
        rs_views = realloc(rs_views, sizeof(rs_viewt) * (size_t)(rs_nviews + 1));
        if (!rs_views)
            rs_fail("out of memory for views", rs_nviews, 0);
        rs_viewt *v = &rs_views[rs_nviews++];
        v->key[0] = etype;
        v->key[1] = filetype;
        v->key[2] = lb;
        v->key[3] = extent;
        MPI_Datatype data;
        MPI_Aint at = (MPI_Aint)(lb + (extent > filetype ? extent - filetype : 0));
        PMPI_Type_contiguous((int)etype, MPI_BYTE, &v->et);
        PMPI_Type_commit(&v->et);
        PMPI_Type_create_hindexed_block(1, (int)filetype, &at, MPI_BYTE, &data);
        PMPI_Type_create_resized(data, (MPI_Aint)lb, (MPI_Aint)extent, &v->ft);
        PMPI_Type_free(&data);
        PMPI_Type_commit(&v->ft);
    }
    rs_io("MPI_File_set_view", MPI_File_set_view(f->fh, (MPI_Offset)disp, rs_views[i].et,
                                                 rs_views[i].ft, "native", MPI_INFO_NULL));
}

/* A data access's offset in etypes: the recorded one, which the trace
 * keeps relative to the caller's block (minus its rank in the file times
 * the access's etypes, where the etypes divide its bytes; trace's codec),
 * made absolute again from the recorded count and datatype size. */
static inline MPI_Offset rs_io_offset(int64_t stored, int64_t cr, int64_t count, int64_t dsize,
                                      int64_t etype)
{
    int64_t bytes = count * dsize;
    if (etype > 0 && bytes % etype == 0)
        return (MPI_Offset)(stored + (cr > 0 ? cr : 0) * (bytes / etype));
    return (MPI_Offset)stored;
}

/* Before an access through the individual file pointer: a pointer that is
 * not where the application's was (a read that found fewer bytes moved it
 * less) moves there, outside the traced API, and counts. */
static inline void rs_reposition(rs_fileh *f, MPI_Offset o)
{
    MPI_Offset at = 0;
    if (PMPI_File_get_position(f->fh, &at) != MPI_SUCCESS || at == o)
        return;
    rs_io("MPI_File_seek (to the application's position)", PMPI_File_seek(f->fh, o, MPI_SEEK_SET));
    rs_io_moved++;
}

/* Counts the bytes an access asked MPI to move (write: 1). */
static inline void rs_io_count(int write, int n, MPI_Datatype t)
{
    int s = 0;
    PMPI_Type_size(t, &s);
    rs_io_bytes[write != 0] += (double)n * (double)s;
}

/* A split collective's buffer, kept with the file from _begin to _end. */
static inline void *rs_split_buf(rs_fileh *f, int64_t count, MPI_Datatype t)
{
    if (f->split)
        rs_fail("a split collective while another is under way on the file", count, 0);
    f->split = calloc((size_t)(count < 1 ? 1 : count), rs_span(t));
    if (!f->split)
        rs_fail("out of memory for a split collective's buffer", count, 0);
    return f->split;
}

/* The buffer of the split collective an _end completes (the caller frees
 * it after the call). */
static inline void *rs_split_take(rs_fileh *f)
{
    void *b = f->split;
    if (!b)
        rs_fail("a split collective's _end without its _begin", 0, 0);
    f->split = NULL;
    return b;
}

/* Before MPI_Finalize: rank 0's time since MPI_Init beside the
 * application's, and how many racy completions differed. */
static double rs_t0;
static inline void rs_finish(void)
{
    /* The slowest rank's time, as replay reports it; through PMPI, so that
     * a tracer preloaded into the benchmark does not see it. */
    double mine = MPI_Wtime() - rs_t0, slowest = mine;
    PMPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rs_rank == 0)
        printf("bench: %d ranks, %.3f s on the slowest rank (the traced application: %.3f s)\n",
               rs_size, slowest, RS_APP_S);
    if (rs_report_compute)
        printf("bench: rank %d drew %.0f ns of computation in %lld draws\n", rs_rank,
               rs_drawn_ns, rs_draws);
    if (rs_drift > 0)
        fprintf(stderr,
                "bench: rank %d: %lld racy completions (Waitany, Waitsome, Test*, Win_test) "
                "completed otherwise than in the trace\n",
                rs_rank, rs_drift);
    if (RS_IO)
        rs_io_finish();
}

/* Communicators by their trace id: 0 is MPI_COMM_WORLD, 1 MPI_COMM_SELF.
 * Each in a cell of its own, whose address does not move when the table
 * grows: MPI_Comm_idup may write it when its request completes. */
static MPI_Comm **rs_comms;
static int64_t rs_ncomms;
static inline MPI_Comm rs_comm(int64_t id)
{
    if (id == 0)
        return MPI_COMM_WORLD;
    if (id == 1)
        return MPI_COMM_SELF;
    if (id < 0 || id >= rs_ncomms || !rs_comms[id] || *rs_comms[id] == MPI_COMM_NULL)
        rs_fail("a communicator the trace has not created", id, rs_ncomms);
    return *rs_comms[id];
}
static inline MPI_Comm *rs_newcomm(int64_t id)
{
    RS_SLOT(rs_comms, rs_ncomms, id, "a created communicator", "communicators");
    if (!rs_comms[id]) {
        rs_comms[id] = malloc(sizeof(MPI_Comm));
        if (!rs_comms[id])
            rs_fail("out of memory for communicators", id, 0);
        *rs_comms[id] = MPI_COMM_NULL;
    }
    return rs_comms[id];
}
static MPI_Comm rs_null_comm;

/* A peer argument: the recorded sentinels, else the caller's rank in the
 * communicator plus the recorded offset. */
static inline int rs_peer(int64_t peer, int64_t local, int64_t comm_rank)
{
    if (peer == INT64_MIN)
        return MPI_ANY_SOURCE;
    if (peer == INT64_MIN + 1)
        return MPI_PROC_NULL;
    return (int)(comm_rank + local);
}
static inline int rs_tag(int64_t tag)
{
    return tag == INT64_MIN ? MPI_ANY_TAG : (int)tag;
}
/* A colour or key that was the caller's own rank in the parent. */
static inline int rs_self(int64_t v, int64_t comm_rank)
{
    return v == INT64_MIN + 2 ? (int)comm_rank : (int)v;
}

/* A reduction the application defined: replayed as one that keeps the
 * result (the bytes moved are the same, the arithmetic is not). */
static inline void rs_keep_op(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)in;
    (void)inout;
    (void)len;
    (void)t;
}
static MPI_Op rs_user_op = MPI_OP_NULL;

/* Computation, drawn as replay and the simulator draw it (compress's
 * ComputeDraws): the k-th execution of an event node in a path class takes
 * the histogram bin at the k-th quantile of the golden-ratio sequence
 * (stratified over each round of the executions per rank), the same bin on
 * every rank at the same step; the place in the bin, whose expectation is
 * the bin's mean, is stratified over the rank's executions in that bin,
 * from an offset of the rank's own (a bin of one log2 class) or shared by
 * the ranks and moved by the rank's own up to 1/width either way (a
 * coarsened bin). */
/* Per event node and path class, 6 words: the executions so far, then the
 * executions each of the histogram's (at most 5) bins took. */
static uint64_t rs_tm_k[18 * RS_NTM];
/* Per event node, this rank's place among the ranks that compute by its
 * timing. */
static uint64_t rs_tm_slot[RS_NTM];
#define RS_GOLDEN 0x9e3779b97f4a7c15ULL
static inline uint64_t rs_mix64(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}
static inline uint64_t rs_gcd(uint64_t a, uint64_t b)
{
    while (b != 0) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}
/* The place of execution p among total in the deal of the node and path
 * class whose quantiles start at `start`: (a * p + b) mod total with a prime
 * to total, a permutation (compress's draws `dealt`); total when p is past
 * the end. */
static inline uint64_t rs_dealt(uint64_t start, uint64_t p, uint64_t total)
{
    if (p >= total)
        return total;
    uint64_t key = rs_mix64(start ^ 0xd1b54a32d192ed03ULL);
    uint64_t b = rs_mix64(key) % total, a = key % total;
    if (a == 0)
        a = 1;
    while (rs_gcd(a, total) != 1)
        a = a % (total - 1) + 1;
    __extension__ typedef unsigned __int128 rs_u128;
    return (uint64_t)(((rs_u128)a * p + b) % total);
}
static inline double rs_unit64(uint64_t x)
{
    return (double)(x >> 11) / 9007199254740992.0;
}
/* The executions per rank of `total` samples that `share` ranks made,
 * rounded, at least 1 (compress's draws `per_rank`). */
static inline uint64_t rs_per_rank(uint64_t total, uint64_t share)
{
    if (share < 1)
        share = 1;
    uint64_t m = (total + share / 2) / share;
    return m < 1 ? 1 : m;
}
/* The k-th quantile from `start` of a rank that executes m times in a
 * round: the golden-ratio point, moved into its stratum of the round for m
 * up to 64 (compress's draws `quantile`). */
static inline double rs_quantile(uint64_t start, uint64_t k, uint64_t m)
{
    uint64_t x = start + k * RS_GOLDEN;
    if (m > 64 || m <= 1)
        return rs_unit64(x);
    uint64_t round = k - k % m, below = 0;
    for (uint64_t j = round; j < round + m; j++)
        below += start + j * RS_GOLDEN < x;
    double offset = rs_unit64((start + round * RS_GOLDEN) ^ 0x94d049bb133111ebULL);
    return ((double)below + offset) / (double)m;
}
/* The place in its bin of this rank's j-th execution there, of m per rank,
 * in a histogram of bins `width` log2 classes wide (compress's draws
 * `within_place`). */
static inline double rs_place(uint64_t start, uint64_t j, uint64_t m, uint64_t width)
{
    const uint64_t own_key = 0xbf58476d1ce4e5b9ULL;
    double own = rs_quantile(rs_mix64(start ^ own_key ^ ((uint64_t)rs_rank + 1) * RS_GOLDEN), j, m);
    if (width <= 1)
        return own;
    double v = rs_quantile(rs_mix64(start ^ own_key), j, m) + 2.0 * (own - 0.5) / (double)width;
    if (v < 0)
        return -v;
    if (v >= 1.0) {
        v = 2.0 - v;
        return v < 1.0 - DBL_EPSILON ? v : 1.0 - DBL_EPSILON;
    }
    return v;
}
/* The bin that holds sample `at` among the rank's own bins (own != 0: those
 * whose neighbourhood holds fewer samples than `share`) or the others; the
 * last of them past their end. A histogram is its bins and width in log2
 * classes, then 5 words a bin: count, min, max, mean, its neighbourhood's
 * samples. */
#define RS_BIN(d, b, w) ((d)[2 + 5 * (b) + (w)])
static inline int rs_tm_bin(const double *d, double at, double share, int own)
{
    int n = (int)d[0], last = n - 1;
    for (int b = 0; b < n; b++) {
        if ((RS_BIN(d, b, 4) < share) != (own != 0))
            continue;
        if (at < RS_BIN(d, b, 0))
            return b;
        at -= RS_BIN(d, b, 0);
        last = b;
    }
    return last;
}
/* A bin whose neighbourhood holds fewer samples than the ranks of the
 * histogram (`share`) is one rank's, and its samples are dealt: execution k
 * of the rank at place `slot` is place k * share + slot of the deal, and the
 * places below the count of such samples take them; the other bins are
 * taken at the quantile the ranks share. `steps` are the rank's draws of
 * the node and class so far. */
static inline double rs_draw(const double *d, uint64_t start, uint64_t *steps, double share,
                             uint64_t slot)
{
    int n = (int)d[0];
    double total = 0, rare = 0;
    for (int b = 0; b < n; b++) {
        total += RS_BIN(d, b, 0);
        if (RS_BIN(d, b, 4) < share)
            rare += RS_BIN(d, b, 0);
    }
    if (total <= 0)
        return 0;
    uint64_t k = steps[0]++, sh = share < 1 ? 1 : (uint64_t)share;
    int b = -1;
    if (rare > 0) {
        uint64_t at = rs_dealt(start, k * sh + slot, (uint64_t)total);
        if ((double)at < rare)
            b = rs_tm_bin(d, (double)at, share, 1);
    }
    if (b < 0) {
        double u = rs_quantile(start, k, rs_per_rank((uint64_t)total, sh));
        b = rs_tm_bin(d, floor(u * (total - rare)), share, 0);
    }
    double lo = RS_BIN(d, b, 1), hi = RS_BIN(d, b, 2), avg = RS_BIN(d, b, 3);
    if (hi <= lo || avg <= lo)
        return lo;
    double k_ = (hi - lo) / (avg - lo) - 1.0;
    if (k_ < 0)
        k_ = 0;
    uint64_t j = b < 5 ? steps[1 + b]++ : k;
    double v = rs_place(start, j, rs_per_rank((uint64_t)RS_BIN(d, b, 0), sh), (uint64_t)d[1]);
    return floor(lo + (hi - lo) * pow(v, k_) + 0.5);
}
static inline double rs_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}
/* What the computation's waits overran so far, ns, still to be taken off
 * later ones (replay's `pace` module: the recorded computation already holds
 * the application's own lateness, so the benchmark's must not add to it). */
static double rs_late_ns = 0;
/* The computation before event node `node` in path class `cls` (0 first
 * iteration, 1 steady, 2 last): a sleep, then a spin for the last 100 us,
 * less what the earlier waits overran. */
static inline void rs_compute(int node, int cls)
{
    if (rs_no_compute)
        return;
    const double *d = RS_TM + RS_TM_AT[4 * node + cls];
    if (d[0] == 0)
        d = RS_TM + RS_TM_AT[4 * node + 3];
    double drawn = rs_draw(d, RS_TM_Q[3 * node + cls], rs_tm_k + 6 * (3 * node + cls),
                           RS_TM_SHARE[node], rs_tm_slot[node]);
    rs_drawn_ns += drawn;
    rs_draws++;
    double ns = drawn * rs_compute_scale;
    double paid = ns < rs_late_ns ? ns : rs_late_ns;
    ns -= paid;
    rs_late_ns -= paid;
    if (ns <= 0)
        return;
    double until = rs_now() + ns;
    if (ns > 200e3) {
        double s = ns - 100e3;
        struct timespec ts = {(time_t)(s / 1e9), (long)fmod(s, 1e9)};
        nanosleep(&ts, NULL);
    }
    double now;
    while ((now = rs_now()) < until) {
    }
    rs_late_ns += now - until;
}
#define RS_CLS(i, n) ((i) == 0 ? 0 : (i) == (n) - 1 ? 2 : 1)

/* After MPI_Init: this rank, the rank count the trace was recorded at, the
 * options (--no-compute, --compute-scale X, --bytes-scale X,
 * --report-compute, --iodir DIR) and, with MPI-IO, the scratch directory. */
static inline void rs_setup(int argc, char **argv)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &rs_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &rs_size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--no-compute"))
            rs_no_compute = 1;
        else if (!strcmp(argv[i], "--compute-scale") && i + 1 < argc)
            rs_compute_scale = atof(argv[++i]);
        else if (!strcmp(argv[i], "--bytes-scale") && i + 1 < argc)
            rs_bytes_scale = atof(argv[++i]);
        else if (!strcmp(argv[i], "--report-compute"))
            rs_report_compute = 1;
        else if (!strcmp(argv[i], "--iodir") && i + 1 < argc)
            rs_iodir_opt = argv[++i];
        else {
            if (rs_rank == 0)
                fprintf(stderr, "bench: unknown option %s (--no-compute, --compute-scale X, "
                                "--bytes-scale X, --report-compute, --iodir DIR)\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (rs_size != RS_RANKS) {
        if (rs_rank == 0)
            fprintf(stderr, "bench: this benchmark is for %d ranks; the job has %d\n", RS_RANKS,
                    rs_size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (size_t s = 0; s < RS_RING; s++) {
        rs_rq[s] = MPI_REQUEST_NULL;
        rs_rqid[s] = -1;
    }
    for (int i = 0; i < RS_NRL; i++)
        rs_in[i] = (char)rs_rl_has(RS_RL + RS_RL_AT[i], rs_rank);
    for (int i = 0; i < RS_NTM; i++) {
        int64_t place = rs_rl_index(RS_RL + RS_RL_AT[RS_TM_RL[i]], rs_rank);
        rs_tm_slot[i] = place < 0 ? 0 : (uint64_t)place;
    }
    rs_null_comm = MPI_COMM_NULL;
    rs_null_msg = MPI_MESSAGE_NULL;
    rs_no_proc_msg = MPI_MESSAGE_NO_PROC;
    rs_unweighted = MPI_UNWEIGHTED;
    rs_statuses_ignore = MPI_STATUSES_IGNORE;
    for (int i = 0; i < RS_MSGS; i++)
        rs_msgs[i] = MPI_MESSAGE_NULL;
    MPI_Op_create(rs_keep_op, 1, &rs_user_op);
    if (RS_IO)
        rs_io_setup();
    /* Every rank starts the clock together, as replay does. */
    PMPI_Barrier(MPI_COMM_WORLD);
    rs_t0 = MPI_Wtime();
}

/* ------------------------------------------------------------------------
 * One-sided communication: windows by their trace id (in the
 * communicators' id space), with the memory the benchmark exposes, and the
 * messages (outside the traced API, on a duplicate of the window's
 * communicator) that force Win_test's outcomes as replay forces them
 * (replay/src/exec/rma.rs): at Win_post a target tells each origin whether
 * its epoch has tests that came back false (RS_PSCW, from the trace); an
 * origin told so holds its Win_complete until the target has issued the
 * last of them. Holds can form a cycle, which no order of calls keeps: a
 * waiting origin sends its target a probe (initiator, ordinal of the wait,
 * lowest rank on the path), every waiting origin passes the probes it
 * receives on to its own target, and an origin whose probe comes back is on
 * a cycle; the lowest rank on it gives its hold up at once (Chandy, Misra
 * and Haas's edge chasing, as replay does), and a hold no probe frees gives
 * up after 1 s plus twice the application's time. After its Win_complete
 * an origin sends each target a token, which the target awaits before the
 * test that came back true. A test that still comes out otherwise is counted in
 * rs_drift; tests after one that ended the epoch early are not issued.
 * ------------------------------------------------------------------------ */
enum { RS_TOKEN = 36, RS_NOTICE = 37, RS_RELEASE = 38, RS_PROBE = 39 };
typedef struct rs_probe {
    struct rs_probe *next;
    MPI_Request req;
    int p[3];
} rs_probe;
typedef struct rs_pend {
    struct rs_pend *next;
    int target;
    char data[];
} rs_pend;
typedef struct {
    MPI_Win win;
    void *mem;
    void *att[16];
    MPI_Aint attsz[16];
    int natt;
    MPI_Win board; /* of a dynamic window: each rank's attached address */
    MPI_Aint *slot;
    MPI_Comm tokens;
    int *access, naccess;
    int *exposure, nexposure, open, false_tests;
    int *owed; /* releases of given-up holds still to come, by rank */
    int me, waits;        /* rank in the window; holds waited on so far */
    int *sent, *got;      /* probes sent to and received from each rank */
    rs_probe *probes;     /* probes sent, until Win_free */
    rs_pend *pending;
} rs_window;
static rs_window **rs_wins;
static int64_t rs_nwins;
static int64_t rs_posts; /* this rank's Win_post calls so far */
static const int rs_hold = 1, rs_free_ = 0;

static inline rs_window *rs_win(int64_t id)
{
    if (id < 0 || id >= rs_nwins || !rs_wins[id])
        rs_fail("a window the trace has not created", id, rs_nwins);
    return rs_wins[id];
}

/* The trace's assert bits (trace::Rma::MODE_*) as this library's. */
static inline int rs_assert(int64_t bits)
{
    return (bits & 1 ? MPI_MODE_NOCHECK : 0) | (bits & 2 ? MPI_MODE_NOPRECEDE : 0) |
           (bits & 4 ? MPI_MODE_NOPUT : 0) | (bits & 8 ? MPI_MODE_NOSTORE : 0) |
           (bits & 16 ? MPI_MODE_NOSUCCEED : 0);
}

/* A window constructor (kind 0 Win_create, 1 Win_allocate, 2
 * Win_allocate_shared, 3 Win_create_dynamic) of `size` bytes. */
static inline void rs_win_create(int kind, int64_t id, int64_t size, int disp_unit, MPI_Comm c)
{
    RS_SLOT(rs_wins, rs_nwins, id, "a window", "windows");
    rs_window *w = calloc(1, sizeof *w);
    if (!w)
        rs_fail("out of memory for a window", id, 0);
    if (rs_bytes_scale > 1.0)
        size = (int64_t)ceil((double)size * rs_bytes_scale);
    if (size < 0)
        size = 0;
    void *base = NULL;
    if (kind == 0) {
        w->mem = calloc((size_t)(size < 1 ? 1 : size), 1);
        if (!w->mem)
            rs_fail("out of memory for a window", id, size);
        MPI_Win_create(w->mem, (MPI_Aint)size, disp_unit, MPI_INFO_NULL, c, &w->win);
    } else if (kind == 1) {
        MPI_Win_allocate((MPI_Aint)size, disp_unit, MPI_INFO_NULL, c, &base, &w->win);
    } else if (kind == 2) {
        MPI_Win_allocate_shared((MPI_Aint)size, disp_unit, MPI_INFO_NULL, c, &base, &w->win);
    } else {
        MPI_Win_create_dynamic(MPI_INFO_NULL, c, &w->win);
        w->slot = calloc(1, sizeof(MPI_Aint));
        if (!w->slot)
            rs_fail("out of memory for a window", id, 0);
        PMPI_Win_create(w->slot, (MPI_Aint)sizeof(MPI_Aint), (int)sizeof(MPI_Aint),
                        MPI_INFO_NULL, c, &w->board);
    }
    PMPI_Comm_dup(c, &w->tokens);
    int n = 0;
    PMPI_Comm_size(c, &n);
    w->owed = calloc((size_t)(n < 1 ? 1 : n), sizeof(int));
    w->sent = calloc((size_t)(n < 1 ? 1 : n), sizeof(int));
    w->got = calloc((size_t)(n < 1 ? 1 : n), sizeof(int));
    if (!w->owed || !w->sent || !w->got)
        rs_fail("out of memory for a window", id, n);
    PMPI_Comm_rank(w->tokens, &w->me);
    rs_wins[id] = w;
}

/* A target displacement: of a dynamic window, the target's attached
 * address (published on the window's board) plus the recorded offset. */
static inline MPI_Aint rs_disp(rs_window *w, int target, int64_t disp)
{
    if (!w->slot || target == MPI_PROC_NULL)
        return (MPI_Aint)disp;
    MPI_Aint a = 0;
    PMPI_Win_lock(MPI_LOCK_SHARED, target, 0, w->board);
    PMPI_Get(&a, 1, MPI_AINT, target, 0, 1, MPI_AINT, w->board);
    PMPI_Win_unlock(target, w->board);
    return a + (MPI_Aint)disp;
}

/* An origin buffer of an operation without a request, kept until a
 * synchronisation completes it. */
static inline void *rs_wbuf(rs_window *w, int target, int64_t count, MPI_Datatype t)
{
    size_t bytes = (size_t)(count < 1 ? 1 : count) * rs_span(t);
    rs_pend *p = calloc(1, sizeof(rs_pend) + bytes);
    if (!p)
        rs_fail("out of memory for a one-sided buffer", count, (long long)bytes);
    p->target = target;
    p->next = w->pending;
    w->pending = p;
    return p->data;
}

/* After a synchronisation: the buffers of the operations it completed
 * (on `target`, or on all for -1). */
static inline void rs_wdone(rs_window *w, int target)
{
    rs_pend **pp = &w->pending;
    while (*pp) {
        rs_pend *p = *pp;
        if (target < 0 || p->target == target) {
            *pp = p->next;
            free(p);
        } else {
            pp = &p->next;
        }
    }
}

/* The ranks cr + rel[i] of the window's group, as a group. */
static inline MPI_Group rs_wgroup(rs_window *w, const int64_t *rel, int64_t n, int64_t cr,
                                  int **keep)
{
    MPI_Group all, g;
    int *ranks = malloc(sizeof(int) * (size_t)(n < 1 ? 1 : n));
    if (!ranks)
        rs_fail("out of memory for a group", n, 0);
    for (int64_t i = 0; i < n; i++)
        ranks[i] = (int)(cr + rel[i]);
    PMPI_Win_get_group(w->win, &all);
    PMPI_Group_incl(all, (int)n, ranks, &g);
    PMPI_Group_free(&all);
    free(*keep);
    *keep = ranks;
    return g;
}

/* How many tests of this rank's next exposure epoch came back false
 * (RS_PSCW's rows are sorted by rank and ordinal: a cursor walks them). */
static int64_t rs_pscw_at;
static inline int rs_pscw_next(void)
{
    int64_t k = rs_posts++;
    while (rs_pscw_at < RS_NPSCW &&
           (RS_PSCW[3 * rs_pscw_at] < rs_rank ||
            (RS_PSCW[3 * rs_pscw_at] == rs_rank && RS_PSCW[3 * rs_pscw_at + 1] < k)))
        rs_pscw_at++;
    if (rs_pscw_at < RS_NPSCW && RS_PSCW[3 * rs_pscw_at] == rs_rank &&
        RS_PSCW[3 * rs_pscw_at + 1] == k)
        return (int)RS_PSCW[3 * rs_pscw_at + 2];
    return 0;
}

static inline void rs_post(rs_window *w, MPI_Group g, int assert_, int64_t n)
{
    MPI_Win_post(g, assert_, w->win);
    PMPI_Group_free(&g);
    w->nexposure = (int)n;
    w->open = 1;
    w->false_tests = rs_pscw_next();
    for (int i = 0; i < w->nexposure; i++) {
        MPI_Request r;
        PMPI_Isend(w->false_tests > 0 ? &rs_hold : &rs_free_, 1, MPI_INT, w->exposure[i],
                   RS_NOTICE, w->tokens, &r);
        PMPI_Request_free(&r);
    }
}

static inline void rs_start(rs_window *w, MPI_Group g, int assert_, int64_t n)
{
    MPI_Win_start(g, assert_, w->win);
    PMPI_Group_free(&g);
    w->naccess = (int)n;
}

/* Polls r until it completes (1) or `until` (MPI_Wtime) passes (0). */
static inline int rs_await(MPI_Request *r, double until)
{
    for (;;) {
        int f = 0;
        PMPI_Test(r, &f, MPI_STATUS_IGNORE);
        if (f)
            return 1;
        if (until > 0 && MPI_Wtime() >= until)
            return 0;
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
}

/* Sends probe (from, wait, lowest) to t. */
static inline void rs_probe_send(rs_window *w, int t, int from, int wait, int lowest)
{
    rs_probe *p = calloc(1, sizeof *p);
    if (!p)
        rs_fail("out of memory for a probe", t, 0);
    p->p[0] = from;
    p->p[1] = wait;
    p->p[2] = lowest;
    PMPI_Isend(p->p, 3, MPI_INT, t, RS_PROBE, w->tokens, &p->req);
    p->next = w->probes;
    w->probes = p;
    w->sent[t]++;
}

/* During wait `wait` on a hold by t: receives the probes that arrived,
 * passes the others' on to t, and returns 1 if this wait's own probe came
 * back with this rank the lowest on its cycle. */
static inline int rs_probe_serve(rs_window *w, int t, int wait)
{
    int give_up = 0;
    for (;;) {
        int f = 0, p[3];
        MPI_Status st;
        PMPI_Iprobe(MPI_ANY_SOURCE, RS_PROBE, w->tokens, &f, &st);
        if (!f)
            return give_up;
        PMPI_Recv(p, 3, MPI_INT, st.MPI_SOURCE, RS_PROBE, w->tokens, MPI_STATUS_IGNORE);
        w->got[st.MPI_SOURCE]++;
        if (p[0] == w->me)
            give_up |= p[1] == wait && p[2] == w->me;
        else
            rs_probe_send(w, t, p[0], p[1], p[2] < w->me ? p[2] : w->me);
    }
}

/* Polls the release r of a hold by t, serving probes: 1 once released, 0
 * to give the hold up (the deadline passed, or this rank is the lowest on
 * a cycle of holds). */
static inline int rs_await_hold(rs_window *w, int t, MPI_Request *r, double until)
{
    for (rs_probe **pp = &w->probes; *pp;) { /* forget the probes sent */
        rs_probe *p = *pp;
        int f = 0;
        PMPI_Test(&p->req, &f, MPI_STATUS_IGNORE);
        if (f) {
            *pp = p->next;
            free(p);
        } else {
            pp = &p->next;
        }
    }
    int wait = ++w->waits;
    rs_probe_send(w, t, w->me, wait, w->me);
    for (;;) {
        int f = 0;
        PMPI_Test(r, &f, MPI_STATUS_IGNORE);
        if (f)
            return 1;
        if (rs_probe_serve(w, t, wait) || MPI_Wtime() >= until)
            return 0;
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
}

/* At Win_free (collective): the probes still addressed to this rank, as
 * the others' counts say, are received, and its own sends complete. */
static inline void rs_probe_settle(rs_window *w)
{
    int n = 0;
    PMPI_Comm_size(w->tokens, &n);
    int *due = calloc((size_t)(n < 1 ? 1 : n), sizeof(int));
    if (!due)
        rs_fail("out of memory for a window", n, 0);
    PMPI_Alltoall(w->sent, 1, MPI_INT, due, 1, MPI_INT, w->tokens);
    for (int src = 0; src < n; src++)
        for (int k = w->got[src]; k < due[src]; k++) {
            int p[3];
            PMPI_Recv(p, 3, MPI_INT, src, RS_PROBE, w->tokens, MPI_STATUS_IGNORE);
        }
    free(due);
    while (w->probes) {
        rs_probe *p = w->probes;
        w->probes = p->next;
        PMPI_Wait(&p->req, MPI_STATUS_IGNORE);
        free(p);
    }
}

static inline void rs_complete(rs_window *w)
{
    for (int i = 0; i < w->naccess; i++) {
        int t = w->access[i], hold = 0;
        MPI_Request r;
        PMPI_Irecv(&hold, 1, MPI_INT, t, RS_NOTICE, w->tokens, &r);
        rs_await(&r, 0);
        if (!hold)
            continue;
        int owed = w->owed[t];
        w->owed[t] = 0;
        for (int k = 0; k <= owed; k++) {
            PMPI_Irecv(NULL, 0, MPI_INT, t, RS_RELEASE, w->tokens, &r);
            if (!rs_await_hold(w, t, &r, MPI_Wtime() + 1.0 + 2.0 * RS_APP_S * rs_compute_scale)) {
                PMPI_Cancel(&r);
                PMPI_Wait(&r, MPI_STATUS_IGNORE);
                w->owed[t]++;
                rs_drift++;
                break;
            }
        }
    }
    MPI_Win_complete(w->win);
    rs_wdone(w, -1);
    for (int i = 0; i < w->naccess; i++) {
        MPI_Request r;
        PMPI_Isend(NULL, 0, MPI_INT, w->access[i], RS_TOKEN, w->tokens, &r);
        PMPI_Request_free(&r);
    }
    w->naccess = 0;
}

static inline void rs_release(rs_window *w)
{
    for (int i = 0; i < w->nexposure; i++) {
        MPI_Request r;
        PMPI_Isend(NULL, 0, MPI_INT, w->exposure[i], RS_RELEASE, w->tokens, &r);
        PMPI_Request_free(&r);
    }
}

/* The tokens of the exposure epoch's origins (their Win_complete
 * returned). */
static inline void rs_tokens(rs_window *w)
{
    for (int i = 0; i < w->nexposure; i++) {
        MPI_Request r;
        PMPI_Irecv(NULL, 0, MPI_INT, w->exposure[i], RS_TOKEN, w->tokens, &r);
        rs_await(&r, 0);
    }
}

static inline void rs_wait(rs_window *w)
{
    MPI_Win_wait(w->win);
    if (w->open)
        rs_tokens(w);
    w->open = 0;
}

/* Win_test, which the trace says returned `flag`. */
static inline void rs_test(rs_window *w, int64_t flag)
{
    if (!w->open) { /* ended at an earlier test: cannot be issued */
        rs_drift++;
        return;
    }
    if (flag)
        rs_tokens(w);
    int f = 0;
    MPI_Win_test(w->win, &f);
    if (f && !flag) {
        rs_drift++;
        if (w->false_tests > 0) {
            w->false_tests = 0;
            rs_release(w);
        }
        rs_tokens(w);
        w->open = 0;
    } else if (f) {
        w->open = 0;
    } else if (flag) {
        rs_drift++;
        PMPI_Win_wait(w->win);
        w->open = 0;
    } else if (w->false_tests > 0 && --w->false_tests == 0) {
        rs_release(w);
    }
}

static inline void rs_attach(rs_window *w, int64_t size)
{
    if (rs_bytes_scale > 1.0)
        size = (int64_t)ceil((double)size * rs_bytes_scale);
    if (w->natt == 16)
        rs_fail("more than 16 attached memory regions", size, 0);
    void *m = calloc((size_t)(size < 1 ? 1 : size), 1);
    if (!m)
        rs_fail("out of memory for attached memory", size, 0);
    MPI_Win_attach(w->win, m, (MPI_Aint)(size < 0 ? 0 : size));
    w->att[w->natt] = m;
    w->attsz[w->natt++] = (MPI_Aint)size;
    if (w->slot) {
        int me = 0;
        PMPI_Comm_rank(w->tokens, &me);
        PMPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w->board);
        *w->slot = (MPI_Aint)(uintptr_t)m;
        PMPI_Win_unlock(me, w->board);
    }
}

static inline void rs_detach(rs_window *w, int64_t size)
{
    if (w->natt == 0)
        rs_fail("Win_detach with no memory attached", size, 0);
    int i = 0;
    while (i < w->natt && w->attsz[i] != (MPI_Aint)size)
        i++;
    if (i == w->natt)
        i = 0;
    MPI_Win_detach(w->win, w->att[i]);
    free(w->att[i]);
    for (int j = i + 1; j < w->natt; j++) {
        w->att[j - 1] = w->att[j];
        w->attsz[j - 1] = w->attsz[j];
    }
    w->natt--;
}

static inline void rs_win_free(int64_t id)
{
    rs_window *w = rs_win(id);
    MPI_Win_free(&w->win);
    if (w->slot)
        PMPI_Win_free(&w->board);
    rs_probe_settle(w);
    /* The releases of holds given up: sent before the collective settle. */
    int n = 0;
    PMPI_Comm_size(w->tokens, &n);
    for (int t = 0; t < n; t++)
        for (int k = 0; k < w->owed[t]; k++)
            PMPI_Recv(NULL, 0, MPI_INT, t, RS_RELEASE, w->tokens, MPI_STATUS_IGNORE);
    PMPI_Comm_free(&w->tokens);
    rs_wdone(w, -1);
    for (int i = 0; i < w->natt; i++)
        free(w->att[i]);
    free(w->mem);
    free(w->slot);
    free(w->access);
    free(w->exposure);
    free(w->owed);
    free(w->sent);
    free(w->got);
    free(w);
    rs_wins[id] = NULL;
}
