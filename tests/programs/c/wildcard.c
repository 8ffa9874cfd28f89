/*
 * wildcard [ITERS]   (default ITERS = 3, needs np >= 2)
 *
 * Receives with MPI_ANY_SOURCE / MPI_ANY_TAG; all checksums are sums, so
 * independent of arrival order.  Per iteration:
 *   A. every rank != 0 MPI_Send's one message (tag depends on sender and
 *      iteration) to rank 0, which does np-1 MPI_Recv(MPI_ANY_SOURCE,
 *      MPI_ANY_TAG) and validates source, tag and payload from the status.
 *      Then one MPI_Barrier (so that phase-B messages cannot match the
 *      MPI_ANY_TAG receives of phase A).
 *   B. rank 0 posts np-1 MPI_Irecv(MPI_ANY_SOURCE, TAG_B) and completes them
 *      with exactly np-1 MPI_Waitany calls; the others MPI_Send to rank 0.
 *   C. all-to-all: every rank posts np-1 MPI_Irecv(MPI_ANY_SOURCE, TAG_C),
 *      MPI_Isend's to every other rank, completes the receives with an
 *      MPI_Waitsome loop and the sends with one MPI_Waitall.
 *   D. same as C with tag TAG_D and an MPI_Testsome polling loop.
 * Finally the per-rank hashes are summed with MPI_Reduce.
 *
 * Per-rank calls (np ranks): Init 1, Finalize 1, Reduce 1, per iteration:
 *   rank 0:  Recv np-1, Irecv 3(np-1), Waitany np-1, Isend 2(np-1),
 *            Waitall 2, Barrier 1, Waitsome >=1, Testsome >=1
 *   others:  Send 2,    Irecv 2(np-1),               Isend 2(np-1),
 *            Waitall 2, Barrier 1, Waitsome >=1, Testsome >=1
 */
#include "common.h"

enum { TAG_B = 200, TAG_C = 201, TAG_D = 202 };
static int rank, np;

static int tag_a(int src, int it) { return 1 + (src * 7 + it * 3) % 50; }
static int payload(int src, int dst, int it, int phase) { return src * 1000003 + dst * 1009 + it * 17 + phase; }

static uint64_t absorb(int src, int tag, int data)
{
    return mix64(((uint64_t)src << 40) ^ ((uint64_t)tag << 20) ^ (uint64_t)(uint32_t)data);
}

/* Phases C and D: all-to-all with wildcard receives. */
static uint64_t exchange(int it, int phase, int tag, int use_testsome)
{
    const int n = np - 1;
    int *rbuf = malloc(sizeof(int) * (size_t)n), *sbuf = malloc(sizeof(int) * (size_t)n);
    int *idx = malloc(sizeof(int) * (size_t)n), *seen = calloc((size_t)np, sizeof(int));
    MPI_Request *rreq = malloc(sizeof(MPI_Request) * (size_t)n), *sreq = malloc(sizeof(MPI_Request) * (size_t)n);
    MPI_Status *sts = malloc(sizeof(MPI_Status) * (size_t)n);
    uint64_t h = 0;
    for (int i = 0; i < n; i++) MPI_Irecv(&rbuf[i], 1, MPI_INT, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &rreq[i]);
    for (int i = 0, q = 0; q < np; q++) {
        if (q == rank) continue;
        sbuf[i] = payload(rank, q, it, phase);
        MPI_Isend(&sbuf[i], 1, MPI_INT, q, tag, MPI_COMM_WORLD, &sreq[i]);
        i++;
    }
    int done = 0;
    do {
        int outcount;
        if (use_testsome) MPI_Testsome(n, rreq, &outcount, idx, sts);
        else MPI_Waitsome(n, rreq, &outcount, idx, sts);
        CHECK(outcount != MPI_UNDEFINED, "no active requests left but %d of %d done", done, n);
        for (int k = 0; k < outcount; k++) {
            int src = sts[k].MPI_SOURCE, d = rbuf[idx[k]];
            CHECK(src >= 0 && src < np && src != rank && !seen[src], "unexpected/duplicate source %d", src);
            CHECK(sts[k].MPI_TAG == tag, "tag %d", sts[k].MPI_TAG);
            CHECK(d == payload(src, rank, it, phase), "phase %d payload from %d: %d", phase, src, d);
            seen[src] = 1;
            h += absorb(src, tag, d);
        }
        done += outcount;
    } while (done < n);
    MPI_Waitall(n, sreq, MPI_STATUSES_IGNORE);
    free(rbuf); free(sbuf); free(idx); free(seen); free(rreq); free(sreq); free(sts);
    return h;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc > 2 || np < 2) {
        if (rank == 0) fprintf(stderr, "usage: wildcard [ITERS]  (np >= 2)\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int iters = argc == 2 ? parse_int(argv[1], "ITERS", 0) : 3;
    const MPI_Comm comm = MPI_COMM_WORLD;
    int *seen = malloc(sizeof(int) * (size_t)np), *rbuf = malloc(sizeof(int) * (size_t)np);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)np);
    uint64_t h = 0;

    for (int it = 0; it < iters; it++) {
        /* Phase A */
        if (rank == 0) {
            memset(seen, 0, sizeof(int) * (size_t)np);
            for (int k = 0; k < np - 1; k++) {
                int d;
                MPI_Status st;
                MPI_Recv(&d, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st);
                int src = st.MPI_SOURCE;
                CHECK(src > 0 && src < np && !seen[src], "phase A: unexpected/duplicate source %d", src);
                CHECK(st.MPI_TAG == tag_a(src, it), "phase A: tag %d from %d", st.MPI_TAG, src);
                CHECK(d == payload(src, 0, it, 0), "phase A: payload %d from %d", d, src);
                seen[src] = 1;
                h += absorb(src, st.MPI_TAG, d);
            }
        } else {
            int d = payload(rank, 0, it, 0);
            MPI_Send(&d, 1, MPI_INT, 0, tag_a(rank, it), comm);
        }
        MPI_Barrier(comm);

        /* Phase B */
        if (rank == 0) {
            memset(seen, 0, sizeof(int) * (size_t)np);
            for (int k = 0; k < np - 1; k++) MPI_Irecv(&rbuf[k], 1, MPI_INT, MPI_ANY_SOURCE, TAG_B, comm, &reqs[k]);
            for (int k = 0; k < np - 1; k++) {
                int index;
                MPI_Status st;
                MPI_Waitany(np - 1, reqs, &index, &st);
                CHECK(index >= 0 && index < np - 1 && reqs[index] == MPI_REQUEST_NULL, "waitany index %d", index);
                int src = st.MPI_SOURCE, d = rbuf[index];
                CHECK(src > 0 && src < np && !seen[src], "phase B: unexpected/duplicate source %d", src);
                CHECK(d == payload(src, 0, it, 1), "phase B: payload %d from %d", d, src);
                seen[src] = 1;
                h += absorb(src, st.MPI_TAG, d);
            }
        } else {
            int d = payload(rank, 0, it, 1);
            MPI_Send(&d, 1, MPI_INT, 0, TAG_B, comm);
        }

        /* Phases C and D */
        h += exchange(it, 2, TAG_C, 0);
        h += exchange(it, 3, TAG_D, 1);
    }
    uint64_t hsum = 0;
    MPI_Reduce(&h, &hsum, 1, MPI_UINT64_T, MPI_SUM, 0, comm);
    if (rank == 0) printf("wildcard np=%d iters=%d hash=%016llx verify=ok\n", np, iters, (unsigned long long)hsum);
    free(seen); free(rbuf); free(reqs);
    MPI_Finalize();
    return 0;
}
