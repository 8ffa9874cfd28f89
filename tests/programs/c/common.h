/* Shared helpers for the rankscale MPI test programs (header only). */
#ifndef RANKSCALE_TEST_COMMON_H
#define RANKSCALE_TEST_COMMON_H

#include <errno.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* GCC >= 11 warns when small-integer sentinel pointers (MPICH's
 * MPI_STATUSES_IGNORE == (MPI_Status *)1, Open MPI's MPI_UNWEIGHTED == (int *)2)
 * are passed to prototypes declared with array parameters ("accessing 20
 * bytes in a region of size 0").  The sentinels are exercised on purpose, so
 * silence these false positives. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#pragma GCC diagnostic ignored "-Wstringop-overread"
#endif

/* splitmix64 finaliser: a cheap, well-mixed 64-bit hash. */
static inline uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static inline uint64_t dbits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* Validation failure: report and abort the whole job with a non-zero code. */
#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            int check_rank_;                                                    \
            MPI_Comm_rank(MPI_COMM_WORLD, &check_rank_);                        \
            fprintf(stderr, "[rank %d] %s:%d: check failed: %s: ", check_rank_, \
                    __FILE__, __LINE__, #cond);                                 \
            fprintf(stderr, __VA_ARGS__);                                       \
            fprintf(stderr, "\n");                                              \
            fflush(stderr);                                                     \
            MPI_Abort(MPI_COMM_WORLD, 2);                                       \
        }                                                                       \
    } while (0)

/* Checks an MPI-IO return code: files return errors by default
 * (MPI_ERRORS_RETURN), so a failing call would go unnoticed. */
#define IO(call)                                                                   \
    do {                                                                           \
        int rc_ = (call);                                                          \
        if (rc_ != MPI_SUCCESS) {                                                  \
            char s_[MPI_MAX_ERROR_STRING];                                         \
            int l_ = 0;                                                            \
            MPI_Error_string(rc_, s_, &l_);                                        \
            CHECK(rc_ == MPI_SUCCESS, "%s: %s", #call, s_);                        \
        }                                                                          \
    } while (0)

/* Parse a strictly positive (or non-negative if allow_zero) integer argument. */
static inline int parse_int(const char *s, const char *what, int allow_zero)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < (allow_zero ? 0 : 1) || v > 1000000000L) {
        int r;
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
        if (r == 0) fprintf(stderr, "invalid %s: '%s'\n", what, s);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return (int)v;
}

/* Sleeps `us` microseconds (the emulated computation of the timing test
 * programs), resuming after signals. */
static inline void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000}, rem;
    while (nanosleep(&ts, &rem) != 0 && errno == EINTR) ts = rem;
}

/* Refuses a configuration after rank 0 has printed the reason: aborts the
 * job with exit code 1.  Rank 0 waits 0.1 s so that the launcher forwards
 * its message before the abort tears the job down (MPICH's hydra otherwise
 * sometimes drops it); the other ranks wait 0.5 s, so that their own
 * MPI_Abort does not kill rank 0 before it has printed. */
static inline void abort_config(void)
{
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    sleep_us(r == 0 ? 100000 : 500000);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* The rank reached from `rank` by one step in direction `dir` on a periodic
 * px x py grid of row-major ranks: 0 up, 1 down (x), 2 left, 3 right (y). */
static inline int torus_neighbour(int rank, int dir, int px, int py)
{
    int x = rank / py, y = rank % py;
    switch (dir) {
    case 0: x = (x + px - 1) % px; break;
    case 1: x = (x + 1) % px; break;
    case 2: y = (y + py - 1) % py; break;
    default: y = (y + 1) % py; break;
    }
    return x * py + y;
}

#endif
