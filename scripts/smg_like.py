#!/usr/bin/python3
"""Writes a pertext trace shaped like the published SMG2000 traces, at any
size, for the analysis-at-scale benchmark (`scripts/bench.sh scale`).

The published 1,024-rank SMG2000 set (Alawneh et al.) holds about 8 M
events; it cannot be fetched from this machine, so the benchmark measures
`import` and `analyze` on a trace of the same form and size:

- ranks on a non-periodic 3D grid (16x8x8 at 1,024 ranks), so that faces,
  edges and corners have 3 to 6 neighbours, as the solver's boxes do;
- per V-cycle, 8 levels; each level one context (a `DEL<n>` line, with
  the running count the published files have): receives posted from every
  neighbour, then sends to every neighbour, all completing together (their
  spans overlap), messages halving from level to level; then a context of
  two Allreduces (the last rank writes `-1` and no `m`, as theirs does);
- times on one clock, with seeded jitter, and one slow rank in every 97th
  context, so that timing statistics and slow-instance detection have real
  work.

Usage: smg_like.py OUTPUT_DIR RANKS CYCLES   (writes Process<r>.txt)
"""

import os
import random
import sys


def grid(p):
    """The most cubic 3D grid of p ranks, largest dimension first."""
    best = None
    for x in range(1, p + 1):
        if p % x:
            continue
        for y in range(1, p // x + 1):
            if (p // x) % y:
                continue
            z = p // x // y
            dims = sorted((x, y, z), reverse=True)
            if best is None or dims[0] - dims[2] < best[0] - best[2]:
                best = dims
    return best


def main():
    out, p, cycles = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    os.makedirs(out, exist_ok=True)
    nx, ny, nz = grid(p)
    levels = 8
    for r in range(p):
        rng = random.Random(r)
        x, y, z = r % nx, (r // nx) % ny, r // (nx * ny)
        peers = []
        for dx, dy, dz in ((-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 1, 0), (0, 0, -1), (0, 0, 1)):
            a, b, c = x + dx, y + dy, z + dz
            if 0 <= a < nx and 0 <= b < ny and 0 <= c < nz:
                peers.append(a + nx * (b + ny * c))
        delim = 1000 * r + 17
        m = 1
        t0 = 5_200_671_752_900
        lines = []
        ctx = 0
        for cycle in range(cycles):
            for level in range(levels):
                base = t0 + (cycle * (levels + 1) + level) * 400_000
                lines.append(f"DEL{delim}")
                delim += 1
                ctx += 1
                # One rank, a different one each time, is slow in every
                # 97th context.
                slow = 150_000 if ctx % 97 == 0 and r == (ctx // 97 * 131) % p else 0
                t = base + rng.randrange(0, 3_000)
                end = base + 250_000 + rng.randrange(0, 20_000) + slow
                size = 8 * 4096 >> level
                for q in peers:
                    lines.append(f"Recv {q} t1 {t} t2 {end} t {level} l {size} m {m}")
                    t += 1_000 + rng.randrange(0, 500)
                m += 1
                for q in peers:
                    lines.append(f"Send {q} t1 {t} t2 {end + 2_000} t {level} l {size} m {m}")
                    t += 1_000 + rng.randrange(0, 500)
                m += 1
            base = t0 + (cycle * (levels + 1) + levels) * 400_000
            lines.append(f"DEL{delim}")
            delim += 1
            t = base + rng.randrange(0, 5_000)
            for _ in range(2):
                who, ident = (-1, "") if r == p - 1 else (r + 1, f" m {m}")
                end = t + 9_000 + rng.randrange(0, 3_000)
                lines.append(f"ALLREDUCE {who} t1 {t} t2 {end} s 32 r 32{ident}")
                m += 1
                t = end + 3_000
        with open(os.path.join(out, f"Process{r}.txt"), "w") as f:
            f.write("\n".join(lines))
            f.write("\n")


if __name__ == "__main__":
    main()
