/*
 * probewait [-d DELAY_MS] [-c CASE|all] [-p POLL_US]      (3 or 4 ranks)
 *
 *   -d DELAY_MS  the delay D in milliseconds (default 50, 0 allowed)
 *   -c CASE      one of the cases below, or all (default): every case in
 *                the order listed
 *   -p POLL_US   nanosleep between two unsuccessful MPI_Iprobe calls of
 *                ls_iprobe (default 100; 0 = busy polling)
 *
 * Wait states around message probing with delays of known length, modelled
 * on the test cases of K. Haus, "Extending a Performance Analysis Tool to
 * Handle MPI Message Probing" (bachelor thesis, FH Aachen / JSC 2024,
 * sections 4.2.4-4.2.6).  Every case is preceded by an MPI_Barrier of all
 * ranks, so the cases start together (up to the barrier's exit skew) and run
 * one after the other.  Delays are nanosleeps (sleep_us).  Each message is
 * LEN(case) = 2 + case-number ints (2..8 ints, at most 32 bytes: eager on
 * both MPICH and Open MPI), whose values are a function of (case, sender,
 * tag, index); the receiver learns the length from the probe (or the
 * status), and checks length, source, tag and every value.
 *
 * Cases (D = DELAY_MS; times measured from the end of the case's barrier):
 *
 *   ls_probe           rank 0: sleep D, MPI_Send(1, tag 1).
 *                      rank 1: MPI_Probe(0, 1), MPI_Recv of the probed size.
 *                      -> rank 1 waits ~D in MPI_Probe: Late Sender (in a
 *                         probe).  The MPI_Recv after it does not wait, nor
 *                         does the (eager) MPI_Send.
 *   ls_iprobe          the same, but rank 1 polls MPI_Iprobe(0, 1) (with
 *                      POLL_US of nanosleep between unsuccessful polls) until
 *                      it succeeds, then MPI_Recv.
 *                      -> rank 1 spends ~D in the polling loop, from the
 *                         first (unsuccessful) MPI_Iprobe to the successful
 *                         one: Late Sender seen by a polling loop.  The time
 *                         inside MPI is only the polls' own cost unless
 *                         -p 0.  The number of MPI_Iprobe calls depends on
 *                         timing (about D / (POLL_US + poll cost) + 1).
 *   ls_mprobe          the same with MPI_Mprobe(0, 1) + MPI_Mrecv.
 *                      -> rank 1 waits ~D in MPI_Mprobe (Late Sender); the
 *                         MPI_Mrecv does not wait.
 *   wrong_order        rank 0: sleep D, MPI_Send(1, tag 1).
 *                      rank 2: MPI_Send(1, tag 2) at once.
 *                      rank 1: MPI_Recv(0, 1), then MPI_Recv(2, 2).
 *                      -> rank 1 waits ~D in the first MPI_Recv: Late
 *                         Sender / Wrong Order (rank 2's message, sent ~D
 *                         earlier than rank 0's, was already waiting to be
 *                         received).  The second MPI_Recv does not wait.
 *   wrong_order_probe  as wrong_order, but rank 1 calls MPI_Probe(0, 1)
 *                      first, then MPI_Recv(0, 1), then MPI_Recv(2, 2).
 *                      -> rank 1 waits ~D in MPI_Probe: Late Sender / Wrong
 *                         Order in a probe; neither MPI_Recv waits.
 *   ls_lr              rank 0: sleep D, MPI_Ssend(1, tag 3).
 *                      rank 1: MPI_Probe(0, 3), sleep D/2, MPI_Recv(0, 3).
 *                      -> rank 1 waits ~D in MPI_Probe (Late Sender); rank 0
 *                         waits ~D/2 in MPI_Ssend (Late Receiver: the
 *                         matching receive starts D/2 after the send).  The
 *                         MPI_Recv does not wait.
 *   lr_ssend           rank 0: MPI_Ssend(1, tag 4) at once.
 *                      rank 1: sleep D, MPI_Recv(0, 4).
 *                      -> rank 0 waits ~D in MPI_Ssend: Late Receiver.  The
 *                         MPI_Recv does not wait.
 *
 * Ranks without a role in a case (rank 2 except in the wrong_order cases,
 * rank 3 always, rank 0 after its eager send) go on to the next case's
 * MPI_Barrier (or the final MPI_Reduce) and wait there for the rest (Wait at
 * Barrier of up to ~D, ~1.5 D after ls_lr).  Rank 3 (np = 4) only ever takes
 * part in the barriers and the reduction: a bystander that must show no
 * point-to-point wait states.
 *
 * Implementation notes (MPICH 4.0 ch4:ucx and Open MPI 4.1 ob1/vader, both
 * without asynchronous progress): the standard sends are eager at these
 * sizes and complete at once, so rank 0's MPI_Send never waits.  MPI_Ssend
 * completes only when rank 1 matches the message in MPI_Recv (probing does
 * not match), which is what makes ls_lr's Late Receiver D/2 long.
 * Measured on 2 cores (3-4 ranks, README launch settings): Open MPI gives
 * the values above within 0.5 ms (D = 50: waits of 50.1 ms, ls_lr's Ssend
 * 25.1 ms).  MPICH busy-polls without yielding, so with more ranks than
 * cores a blocking call also contains scheduling delays of the spinning
 * ranks: waits of D + 0..25 ms, and ls_lr's D/2 sleep can stretch to ~D
 * (rank 1 gets no core back after its nanosleep), which makes rank 0's
 * Ssend wait ~D instead of D/2.  The difference of the enter times
 * (send - probe/receive) stays close to D on both.
 *
 * With PROBEWAIT_TIMING set, every rank prints on stderr one line per
 * timed call: "probewait-timing CASE RANK CALL enter_s dur_ms [polls N
 * in_mpi_ms M]", enter_s from CLOCK_MONOTONIC (comparable across the ranks
 * of one node); stdout stays deterministic.
 *
 * After the cases, the per-rank hashes of the received messages are summed
 * with MPI_Reduce on rank 0, which recomputes the sum and prints it.
 *
 * Per-rank calls with -c all (7 cases):
 *   every rank: Init 1, Barrier 7, Reduce 1, Finalize 1
 *   rank 0: Send 5 (ls_probe, ls_iprobe, ls_mprobe, wrong_order,
 *           wrong_order_probe), Ssend 2 (ls_lr, lr_ssend)
 *   rank 1: Probe 3 (ls_probe, wrong_order_probe, ls_lr), Iprobe >= 1,
 *           Mprobe 1, Mrecv 1, Recv 8 (1+1+0+2+2+1+1)
 *   rank 2: Send 2 (wrong_order, wrong_order_probe)
 *   rank 3: nothing else.
 * With one case: Barrier 1 and the calls of that case as listed above.
 */
#include "common.h"
#include <unistd.h>

enum { LS_PROBE, LS_IPROBE, LS_MPROBE, WRONG_ORDER, WRONG_ORDER_PROBE, LS_LR, LR_SSEND, NCASES };
static const char *const case_names[NCASES] = {"ls_probe",          "ls_iprobe", "ls_mprobe", "wrong_order",
                                               "wrong_order_probe", "ls_lr",     "lr_ssend"};

static int rank, np, delay_ms = 50, poll_us = 100;
static const MPI_Comm comm = MPI_COMM_WORLD;

static int msg_len(int c) { return 2 + c; }
static int msg_val(int c, int sender, int tag, int i) { return 100000 * (c + 1) + 1000 * sender + 10 * tag + i; }

/* Hash of one message, folded in receive order on rank 1 and recomputed on
 * rank 0. */
static uint64_t absorb(uint64_t h, int c, int sender, int tag)
{
    for (int i = 0; i < msg_len(c); i++) h = mix64(h ^ (uint64_t)msg_val(c, sender, tag, i));
    return mix64(h + 0x51ed27);
}

/* The messages rank 1 receives in case c, in order: {sender, tag}. */
static int case_msgs(int c, int out[2][2])
{
    switch (c) {
    case WRONG_ORDER:
    case WRONG_ORDER_PROBE:
        out[0][0] = 0, out[0][1] = 1, out[1][0] = 2, out[1][1] = 2;
        return 2;
    case LS_LR: out[0][0] = 0, out[0][1] = 3; return 1;
    case LR_SSEND: out[0][0] = 0, out[0][1] = 4; return 1;
    default: out[0][0] = 0, out[0][1] = 1; return 1;
    }
}

/* ---- optional timing (PROBEWAIT_TIMING) ---- */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
struct tlog {
    int c;
    const char *call;
    double t0, t1, in_mpi;
    long polls;
};
static struct tlog tlogs[64];
static int ntlog;
static void tlog_add(int c, const char *call, double t0, double t1, long polls, double in_mpi)
{
    if (ntlog < 64) tlogs[ntlog++] = (struct tlog){c, call, t0, t1, in_mpi, polls};
}
#define TIMED(c, call, stmt)                          \
    do {                                              \
        double t0_ = now_s();                         \
        stmt;                                         \
        tlog_add((c), (call), t0_, now_s(), 0, 0.0); \
    } while (0)

static void send_msg(int c, int tag, int ssend)
{
    int buf[16];
    for (int i = 0; i < msg_len(c); i++) buf[i] = msg_val(c, rank, tag, i);
    if (ssend) TIMED(c, "Ssend", MPI_Ssend(buf, msg_len(c), MPI_INT, 1, tag, comm));
    else TIMED(c, "Send", MPI_Send(buf, msg_len(c), MPI_INT, 1, tag, comm));
}

static void check_status(int c, const char *what, const MPI_Status *st, int src, int tag)
{
    int count;
    MPI_Get_count(st, MPI_INT, &count);
    CHECK(st->MPI_SOURCE == src && st->MPI_TAG == tag && count == msg_len(c),
          "%s %s: source %d tag %d count %d, expected %d/%d/%d", case_names[c], what, st->MPI_SOURCE, st->MPI_TAG,
          count, src, tag, msg_len(c));
}

static uint64_t check_data(uint64_t h, int c, const int *buf, int src, int tag)
{
    for (int i = 0; i < msg_len(c); i++)
        CHECK(buf[i] == msg_val(c, src, tag, i), "%s: message %d/%d element %d = %d, expected %d", case_names[c], src,
              tag, i, buf[i], msg_val(c, src, tag, i));
    return absorb(h, c, src, tag);
}

/* Blocking receive of a message of known source and tag into a buffer of the
 * size learned from `probed` (or of the expected size if probed is NULL). */
static uint64_t recv_msg(uint64_t h, int c, int src, int tag, const MPI_Status *probed)
{
    int count = msg_len(c), buf[16];
    MPI_Status st;
    if (probed) MPI_Get_count(probed, MPI_INT, &count);
    CHECK(count >= 0 && count <= 16, "%s: probed count %d", case_names[c], count);
    TIMED(c, "Recv", MPI_Recv(buf, count, MPI_INT, src, tag, comm, &st));
    check_status(c, "Recv", &st, src, tag);
    return check_data(h, c, buf, src, tag);
}

static uint64_t run_case(int c, uint64_t h)
{
    const long d_us = 1000L * delay_ms;
    MPI_Status st;
    switch (c) {
    case LS_PROBE:
        if (rank == 0) {
            sleep_us(d_us);
            send_msg(c, 1, 0);
        } else if (rank == 1) {
            TIMED(c, "Probe", MPI_Probe(0, 1, comm, &st));
            check_status(c, "Probe", &st, 0, 1);
            h = recv_msg(h, c, 0, 1, &st);
        }
        break;
    case LS_IPROBE:
        if (rank == 0) {
            sleep_us(d_us);
            send_msg(c, 1, 0);
        } else if (rank == 1) {
            int flag = 0;
            long polls = 0;
            double in_mpi = 0, t0 = now_s();
            for (;;) {
                double a = now_s();
                MPI_Iprobe(0, 1, comm, &flag, &st);
                in_mpi += now_s() - a;
                polls++;
                if (flag) break;
                if (poll_us > 0) sleep_us(poll_us);
            }
            tlog_add(c, "Iprobe-loop", t0, now_s(), polls, in_mpi);
            check_status(c, "Iprobe", &st, 0, 1);
            h = recv_msg(h, c, 0, 1, &st);
        }
        break;
    case LS_MPROBE:
        if (rank == 0) {
            sleep_us(d_us);
            send_msg(c, 1, 0);
        } else if (rank == 1) {
            MPI_Message msg;
            int count, buf[16];
            TIMED(c, "Mprobe", MPI_Mprobe(0, 1, comm, &msg, &st));
            check_status(c, "Mprobe", &st, 0, 1);
            MPI_Get_count(&st, MPI_INT, &count);
            CHECK(count >= 0 && count <= 16, "%s: probed count %d", case_names[c], count);
            TIMED(c, "Mrecv", MPI_Mrecv(buf, count, MPI_INT, &msg, &st));
            check_status(c, "Mrecv", &st, 0, 1);
            h = check_data(h, c, buf, 0, 1);
        }
        break;
    case WRONG_ORDER:
    case WRONG_ORDER_PROBE:
        if (rank == 0) {
            sleep_us(d_us);
            send_msg(c, 1, 0);
        } else if (rank == 2) {
            send_msg(c, 2, 0);
        } else if (rank == 1) {
            const MPI_Status *probed = NULL;
            if (c == WRONG_ORDER_PROBE) {
                TIMED(c, "Probe", MPI_Probe(0, 1, comm, &st));
                check_status(c, "Probe", &st, 0, 1);
                probed = &st;
            }
            h = recv_msg(h, c, 0, 1, probed);
            h = recv_msg(h, c, 2, 2, NULL);
        }
        break;
    case LS_LR:
        if (rank == 0) {
            sleep_us(d_us);
            send_msg(c, 3, 1);
        } else if (rank == 1) {
            TIMED(c, "Probe", MPI_Probe(0, 3, comm, &st));
            check_status(c, "Probe", &st, 0, 3);
            sleep_us(d_us / 2);
            h = recv_msg(h, c, 0, 3, &st);
        }
        break;
    case LR_SSEND:
        if (rank == 0) {
            send_msg(c, 4, 1);
        } else if (rank == 1) {
            sleep_us(d_us);
            h = recv_msg(h, c, 0, 4, NULL);
        }
        break;
    }
    return h;
}

static void usage(void)
{
    if (rank == 0) {
        fprintf(stderr, "usage: probewait [-d DELAY_MS] [-c CASE|all] [-p POLL_US]   (3 or 4 ranks)\n  cases:");
        for (int c = 0; c < NCASES; c++) fprintf(stderr, " %s", case_names[c]);
        fprintf(stderr, "\n");
    }
    abort_config();
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &np);

    int only = -1, opt; /* -1 = all */
    while ((opt = getopt(argc, argv, "d:c:p:")) != -1) {
        switch (opt) {
        case 'd': delay_ms = parse_int(optarg, "DELAY_MS", 1); break;
        case 'p': poll_us = parse_int(optarg, "POLL_US", 1); break;
        case 'c':
            if (!strcmp(optarg, "all")) {
                only = -1;
                break;
            }
            only = -2;
            for (int c = 0; c < NCASES; c++)
                if (!strcmp(optarg, case_names[c])) only = c;
            if (only == -2) {
                if (rank == 0) fprintf(stderr, "probewait: unknown case '%s'\n", optarg);
                usage();
            }
            break;
        default: usage();
        }
    }
    if (optind != argc) usage();
    if (np != 3 && np != 4) {
        if (rank == 0) fprintf(stderr, "probewait: needs 3 or 4 processes, got %d\n", np);
        abort_config();
    }

    uint64_t h = 0, hsum = 0;
    for (int c = 0; c < NCASES; c++) {
        if (only >= 0 && c != only) continue;
        MPI_Barrier(comm);
        h = run_case(c, h);
    }
    MPI_Reduce(&h, &hsum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, comm);

    if (getenv("PROBEWAIT_TIMING")) {
        char line[256];
        for (int i = 0; i < ntlog; i++) {
            const struct tlog *t = &tlogs[i];
            int n = snprintf(line, sizeof line, "probewait-timing %s %d %s %.6f %.3f", case_names[t->c], rank,
                             t->call, t->t0, 1e3 * (t->t1 - t->t0));
            if (t->polls)
                snprintf(line + n, sizeof line - (size_t)n, " polls %ld in_mpi_ms %.3f", t->polls, 1e3 * t->in_mpi);
            fprintf(stderr, "%s\n", line);
        }
    }

    if (rank == 0) {
        uint64_t ref = 0;
        int nmsg = 0;
        printf("probewait np=%d delay_ms=%d poll_us=%d cases=", np, delay_ms, poll_us);
        for (int c = 0, first = 1; c < NCASES; c++) {
            if (only >= 0 && c != only) continue;
            printf("%s%s", first ? "" : ",", case_names[c]);
            first = 0;
            int m[2][2], k = case_msgs(c, m);
            for (int j = 0; j < k; j++) ref = absorb(ref, c, m[j][0], m[j][1]);
            nmsg += k;
        }
        printf("\n");
        CHECK(ref == hsum, "checksum %016llx differs from the recomputation %016llx", (unsigned long long)hsum,
              (unsigned long long)ref);
        printf("messages=%d checksum=%016llx verify=ok\n", nmsg, (unsigned long long)hsum);
    }
    MPI_Finalize();
    return 0;
}
