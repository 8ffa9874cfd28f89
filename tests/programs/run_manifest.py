#!/usr/bin/env python3
"""Run every configuration of manifest.toml untraced and time it.

usage: run_manifest.py mpich|openmpi BINDIR [--only NAME ...] [--env K=V ...]
                       [--timeout SECONDS] [--show-output]

Uses the launcher settings that work for oversubscribed local runs on a
small machine (see README.md).  Exits non-zero if any run fails (non-zero
exit code, timeout, or empty output from rank 0).  Extra --env variables
are exported to every rank (e.g. --env LD_PRELOAD=/path/librankscale.so).
"""
import argparse
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent


def launcher(impl, np, env_pairs):
    if impl == "openmpi":
        cmd = ["mpirun.openmpi", "-np", str(np), "--oversubscribe",
               "--mca", "pml", "ob1", "--mca", "btl", "self,vader",
               "--bind-to", "none", "--mca", "mpi_yield_when_idle", "1"]
        for k, v in env_pairs:
            cmd += ["-x", f"{k}={v}"]
    elif impl == "mpich":
        cmd = ["mpirun.mpich", "-np", str(np),
               "-genv", "MPIR_CVAR_NOLOCAL", "1", "-genv", "UCX_TLS", "self,sm"]
        for k, v in env_pairs:
            cmd += ["-genv", k, v]
    else:
        raise SystemExit(f"unknown implementation {impl!r}")
    return cmd


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("impl", choices=["mpich", "openmpi"])
    ap.add_argument("bindir", type=Path)
    ap.add_argument("--manifest", type=Path, default=HERE / "manifest.toml")
    ap.add_argument("--only", action="append", default=[], help="run only these names")
    ap.add_argument("--env", action="append", default=[], help="K=V exported to all ranks")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--show-output", action="store_true")
    args = ap.parse_args()

    env_pairs = []
    for kv in args.env:
        if "=" not in kv:
            raise SystemExit(f"--env expects K=V, got {kv!r}")
        env_pairs.append(tuple(kv.split("=", 1)))

    env = dict(os.environ)
    env.setdefault("HWLOC_COMPONENTS", "-pci,-linuxio")
    if args.impl == "openmpi":
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")

    runs = tomllib.loads(args.manifest.read_text())["run"]
    if args.only:
        runs = [r for r in runs if r["name"] in args.only]
        if not runs:
            raise SystemExit("no matching runs")

    failures = 0
    t_all = time.monotonic()
    for run in runs:
        binary = args.bindir / run["binary"]
        cmd = launcher(args.impl, run["np"], env_pairs) + [str(binary)] + run["args"]
        t0 = time.monotonic()
        try:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True,
                               timeout=args.timeout)
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            rc, out, err = "timeout", e.stdout or "", e.stderr or ""
            if isinstance(out, bytes):
                out = out.decode(errors="replace")
            if isinstance(err, bytes):
                err = err.decode(errors="replace")
        dt = time.monotonic() - t0
        ok = rc == 0 and out.strip() != ""
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {dt:7.2f}s  {run['name']:<28} np={run['np']}"
              + ("" if ok else f"  rc={rc}"))
        if args.show_output or not ok:
            for line in out.splitlines():
                print(f"        | {line}")
        if not ok:
            for line in err.splitlines()[-20:]:
                print(f"      ! | {line}")
    total = time.monotonic() - t_all
    print(f"{len(runs) - failures}/{len(runs)} runs passed, total wall time {total:.1f}s ({args.impl})")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
