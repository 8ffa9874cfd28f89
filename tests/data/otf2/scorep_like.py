#!/usr/bin/python3
"""Writes a small OTF2 archive the way Score-P records MPI, with OTF2's own
Python bindings (Debian: python3-otf2), so that `rankscale import --format
otf2` is tested on an archive that rankscale's writer did not produce.

Two ranks, one thread each, inside a user function `main` (which the import
skips). Times are nanoseconds from 1,000,000:

rank 0: MPI_Send to 1 (tag 5, 64 bytes); MPI_Irecv (request 7); MPI_Wait
        completing it: from 1, tag 6, 32 bytes; MPI_Allreduce of 8 bytes;
        MPI_Bcast of 16 bytes from root 1.
rank 1: MPI_Recv from 0 (tag 5, 64 bytes); MPI_Isend to 0 (tag 6, 32 bytes,
        request 3); MPI_Wait completing it; MPI_Allreduce; MPI_Bcast (root).

The collectives' records hold the bytes Score-P records (the bytes that
leave and reach the rank over all its partners, itself included): the
Allreduce 16 sent and 16 received on each rank, the Bcast 32 sent and 16
received at its root and 16 received elsewhere.

Usage: scorep_like.py OUTPUT_DIR   (writes OUTPUT_DIR/traces.otf2)
"""

import sys

import _otf2
import otf2
from otf2.enums import CollectiveOp, GroupType, Paradigm, RegionRole

T0 = 1_000_000

with otf2.writer.open(sys.argv[1], timer_resolution=1_000_000_000) as trace:
    d = trace.definitions
    node = d.system_tree_node("machine")
    groups = [d.location_group(f"MPI Rank {r}", system_tree_parent=node) for r in range(2)]
    locs = [d.location("Master thread", group=g) for g in groups]
    region = {
        name: d.region(name, paradigm=Paradigm.MPI, region_role=role)
        for name, role in [
            ("MPI_Send", RegionRole.POINT2POINT),
            ("MPI_Recv", RegionRole.POINT2POINT),
            ("MPI_Isend", RegionRole.POINT2POINT),
            ("MPI_Irecv", RegionRole.POINT2POINT),
            ("MPI_Wait", RegionRole.POINT2POINT),
            ("MPI_Allreduce", RegionRole.COLL_ALL2ALL),
            ("MPI_Bcast", RegionRole.COLL_ONE2ALL),
        ]
    }
    main = d.region("main", paradigm=Paradigm.USER, region_role=RegionRole.FUNCTION)
    locations = d.group("MPI locations", group_type=GroupType.COMM_LOCATIONS,
                        paradigm=Paradigm.MPI, members=locs)
    world_group = d.group("MPI_COMM_WORLD group", group_type=GroupType.COMM_GROUP,
                          paradigm=Paradigm.MPI, members=[0, 1])
    world = d.comm("MPI_COMM_WORLD", group=world_group)

    w = [trace.event_writer_from_location(l) for l in locs]

    def call(r, name, start, end, before=(), after=()):
        w[r].enter(T0 + start, region[name])
        for rec in before:
            rec(T0 + start)
        for rec in after:
            rec(T0 + end)
        w[r].leave(T0 + end, region[name])

    for r in range(2):
        w[r].enter(T0, main)
    # rank 0
    call(0, "MPI_Send", 100, 200, before=[lambda t: w[0].mpi_send(t, 1, world, 5, 64)])
    call(0, "MPI_Irecv", 300, 310, before=[lambda t: w[0].mpi_irecv_request(t, 7)])
    call(0, "MPI_Wait", 400, 900, after=[lambda t: w[0].mpi_irecv(t, 1, world, 6, 32, 7)])
    call(0, "MPI_Allreduce", 1000, 1500, before=[lambda t: w[0].mpi_collective_begin(t)],
         after=[lambda t: w[0].mpi_collective_end(t, CollectiveOp.ALLREDUCE, world, _otf2.UNDEFINED_UINT32, 16, 16)])
    call(0, "MPI_Bcast", 1600, 1700, before=[lambda t: w[0].mpi_collective_begin(t)],
         after=[lambda t: w[0].mpi_collective_end(t, CollectiveOp.BCAST, world, 1, 0, 16)])
    # rank 1
    call(1, "MPI_Recv", 150, 250, after=[lambda t: w[1].mpi_recv(t, 0, world, 5, 64)])
    call(1, "MPI_Isend", 600, 650, before=[lambda t: w[1].mpi_isend(t, 0, world, 6, 32, 3)])
    call(1, "MPI_Wait", 700, 800, after=[lambda t: w[1].mpi_isend_complete(t, 3)])
    call(1, "MPI_Allreduce", 1400, 1500, before=[lambda t: w[1].mpi_collective_begin(t)],
         after=[lambda t: w[1].mpi_collective_end(t, CollectiveOp.ALLREDUCE, world, _otf2.UNDEFINED_UINT32, 16, 16)])
    call(1, "MPI_Bcast", 1550, 1650, before=[lambda t: w[1].mpi_collective_begin(t)],
         after=[lambda t: w[1].mpi_collective_end(t, CollectiveOp.BCAST, world, 1, 32, 16)])
    for r in range(2):
        w[r].leave(T0 + 2000, main)
