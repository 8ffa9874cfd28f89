! detail_f: calls that rankscale records in detail and whose Fortran entry
! points are easy to miss, on a ring of an even number np >= 4 of ranks (a ring of 2 has
! one neighbour twice).
! Built twice (tests/programs/build.sh): detail_f with `use mpi`,
! detail_f08 (-DF08) with `use mpi_f08`; with -DMPI4 (MPICH 4, which has
! MPI 4's calls) also the MPI 4 section. Open MPI's Fortran bindings call
! PMPI_* directly, and MPICH's `use mpi_f08` routines without a choice
! buffer do too, so each of these calls is recorded only if the shim has
! its Fortran entry point (tests/interception.rs holds every rank to the
! counts below, and the lossless and replay tests replay it).
!
! Per-rank calls, once each unless said (tests/programs/manifest.toml):
!   Init, Finalize, Query_thread (not recorded), Comm_dup_with_info,
!   Comm_create_group, Comm_idup, Dist_graph_create_adjacent,
!   Neighbor_alltoallw, Ineighbor_alltoallw, Allreduce 3 (one on each new
!   communicator), Wait 2 (Comm_idup, Ineighbor_alltoallw), Comm_free 4;
!   without detail: Comm_rank, Comm_size, Comm_group, Group_free.
! With -DMPI4, in addition:
!   Barrier_init, Start 2, Wait +2, Request_free 3 (the barrier, both
!   partitioned requests), Comm_idup_with_info, Wait +1,
!   Comm_create_from_group, Intercomm_create_from_groups, Sendrecv (on the
!   intercommunicator), Allreduce +2, Comm_free +3, Psend_init,
!   Precv_init, Startall, Pready, Pready_range, Pready_list, Parrived at
!   least 4 (polled), Waitall; without detail: Session_init,
!   Session_finalize, Comm_rank +1, Group_incl, Group_range_incl 2,
!   Group_free +3.
program detail_f
#ifdef F08
  use mpi_f08
#else
  use mpi
#endif
  implicit none
  integer :: ierr, me, np, provided, s, t, i, p
#ifdef F08
  type(MPI_Comm) :: dupc, grpc, idupc, cart
  type(MPI_Group) :: wgrp
  type(MPI_Request) :: req
  type(MPI_Datatype) :: stypes(2), rtypes(2)
#else
  integer :: dupc, grpc, idupc, cart, wgrp, req
  integer :: stypes(2), rtypes(2)
#endif
  ! Written by MPI in a nonblocking call, read after its completion, which
  ! the compiler does not see: volatile.
  integer :: sbuf(2), scounts(2), rcounts(2)
  integer, volatile :: rbuf(2)
  integer(kind=MPI_ADDRESS_KIND) :: sdispls(2), rdispls(2)
  integer :: nbrs(2)
#ifdef MPI4
  integer, parameter :: nparts = 4
#ifdef F08
  type(MPI_Comm) :: info_dupc, fromc, halves
  type(MPI_Group) :: mine, other, parity
  type(MPI_Request) :: breq, preqs(2)
  type(MPI_Session) :: session
#else
  integer :: info_dupc, fromc, halves, mine, other, parity, breq, preqs(2)
  integer :: session
#endif
  integer :: ranks(64), range(3, 1), half, r, out, in, want
  integer :: psend(2 * nparts), list(1)
  integer, volatile :: precv(2 * nparts)
  logical :: lower
  ! MPICH 4.0.2's `use mpi` declares MPI_PARRIVED's flag INTEGER, its
  ! `use mpi_f08` LOGICAL (the standard).
#ifdef F08
  logical :: arrived
#else
  integer :: arrived
#endif
#endif

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, me, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  if (np < 4 .or. mod(np, 2) /= 0 .or. np > 64) then
    print *, 'detail_f needs an even number of ranks, 4 to 64'
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  call MPI_Query_thread(provided, ierr)

  ! Communicators from the constructors without a Fortran binding of their own
  ! before issue 39: each one is used, so that check and replay must know it.
  call MPI_Comm_dup_with_info(MPI_COMM_WORLD, MPI_INFO_NULL, dupc, ierr)
  call MPI_Comm_group(MPI_COMM_WORLD, wgrp, ierr)
  call MPI_Comm_create_group(MPI_COMM_WORLD, wgrp, 7, grpc, ierr)
  call MPI_Comm_idup(MPI_COMM_WORLD, idupc, req, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  call MPI_Allreduce(me, s, 1, MPI_INTEGER, MPI_SUM, dupc, ierr)
  call check(s == np * (np - 1) / 2, 'Allreduce on Comm_dup_with_info')
  call MPI_Allreduce(me, s, 1, MPI_INTEGER, MPI_SUM, grpc, ierr)
  call check(s == np * (np - 1) / 2, 'Allreduce on Comm_create_group')
  call MPI_Allreduce(me, s, 1, MPI_INTEGER, MPI_SUM, idupc, ierr)
  call check(s == np * (np - 1) / 2, 'Allreduce on Comm_idup')

  ! Neighbour exchange on a ring: one integer to each neighbour, lower
  ! first. A distributed graph: MPICH 4.0.2's `use mpi_f08`
  ! MPI_Neighbor_alltoallw asks for a distributed graph's degrees and aborts
  ! on a Cartesian communicator (untraced too).
  nbrs(1) = mod(me + np - 1, np)
  nbrs(2) = mod(me + 1, np)
  call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, nbrs, MPI_UNWEIGHTED, &
                                      2, nbrs, MPI_UNWEIGHTED, MPI_INFO_NULL, &
                                      .false., cart, ierr)
  do i = 1, 2
    sbuf(i) = me * 10 + i
    rbuf(i) = -1
    scounts(i) = 1
    rcounts(i) = 1
    sdispls(i) = (i - 1) * 4
    rdispls(i) = (i - 1) * 4
    stypes(i) = MPI_INTEGER
    rtypes(i) = MPI_INTEGER
  end do
  call MPI_Neighbor_alltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts, &
                              rdispls, rtypes, cart, ierr)
  ! From the lower neighbour its upper value (2), from the upper one its lower (1).
  call check(rbuf(1) == mod(me + np - 1, np) * 10 + 2, 'Neighbor_alltoallw lower')
  call check(rbuf(2) == mod(me + 1, np) * 10 + 1, 'Neighbor_alltoallw upper')
  rbuf = -1
  call MPI_Ineighbor_alltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts, &
                               rdispls, rtypes, cart, req, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  call check(rbuf(1) == mod(me + np - 1, np) * 10 + 2, 'Ineighbor_alltoallw lower')
  call check(rbuf(2) == mod(me + 1, np) * 10 + 1, 'Ineighbor_alltoallw upper')

#ifdef MPI4
  ! Persistent barrier, run twice.
  call MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, breq, ierr)
  call MPI_Start(breq, ierr)
  call MPI_Wait(breq, MPI_STATUS_IGNORE, ierr)
  call MPI_Start(breq, ierr)
  call MPI_Wait(breq, MPI_STATUS_IGNORE, ierr)
  call MPI_Request_free(breq, ierr)

  call MPI_Comm_idup_with_info(MPI_COMM_WORLD, MPI_INFO_NULL, info_dupc, req, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)

  ! A communicator of this rank's parity, from a group.
  t = 0
  want = 0
  do i = mod(me, 2), np - 1, 2
    t = t + 1
    ranks(t) = i
    want = want + i
  end do
  call MPI_Group_incl(wgrp, t, ranks, parity, ierr)
  call MPI_Comm_create_from_group(parity, 'detail-parity', MPI_INFO_NULL, &
                                  MPI_ERRORS_ARE_FATAL, fromc, ierr)
  call MPI_Allreduce(me, s, 1, MPI_INTEGER, MPI_SUM, fromc, ierr)
  call check(s == want, 'Allreduce on Comm_create_from_group')
  call MPI_Allreduce(me, s, 1, MPI_INTEGER, MPI_SUM, info_dupc, ierr)
  call check(s == np * (np - 1) / 2, 'Allreduce on Comm_idup_with_info')

  ! The lower and upper halves of the world, as an intercommunicator.
  half = np / 2
  lower = me < half
  if (lower) then
    range(:, 1) = (/ 0, half - 1, 1 /)
  else
    range(:, 1) = (/ half, np - 1, 1 /)
  end if
  call MPI_Group_range_incl(wgrp, 1, range, mine, ierr)
  if (lower) then
    range(:, 1) = (/ half, np - 1, 1 /)
  else
    range(:, 1) = (/ 0, half - 1, 1 /)
  end if
  call MPI_Group_range_incl(wgrp, 1, range, other, ierr)
  call MPI_Intercomm_create_from_groups(mine, 0, other, 0, 'detail-halves', &
                                        MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, halves, ierr)
  call MPI_Comm_rank(halves, r, ierr)
  out = me
  in = -1
  call MPI_Sendrecv(out, 1, MPI_INTEGER, r, 9, in, 1, MPI_INTEGER, r, 9, halves, &
                    MPI_STATUS_IGNORE, ierr)
  if (lower) then
    call check(in == me + half, 'Sendrecv across the halves')
  else
    call check(in == me - half, 'Sendrecv across the halves')
  end if

  ! Partitioned: nparts partitions of 2 integers to the next rank.
  call MPI_Psend_init(psend, nparts, 2_MPI_COUNT_KIND, MPI_INTEGER, mod(me + 1, np), 5, &
                      MPI_COMM_WORLD, MPI_INFO_NULL, preqs(1), ierr)
  call MPI_Precv_init(precv, nparts, 2_MPI_COUNT_KIND, MPI_INTEGER, mod(me + np - 1, np), 5, &
                      MPI_COMM_WORLD, MPI_INFO_NULL, preqs(2), ierr)
  do i = 1, 2 * nparts
    psend(i) = me * 100 + i
    precv(i) = -1
  end do
  call MPI_Startall(2, preqs, ierr)
  call MPI_Pready(0, preqs(1), ierr)
  call MPI_Pready_range(1, 2, preqs(1), ierr)
  list(1) = 3
  call MPI_Pready_list(1, list, preqs(1), ierr)
  do p = 0, nparts - 1
#ifdef F08
    arrived = .false.
    do while (.not. arrived)
      call MPI_Parrived(preqs(2), p, arrived, ierr)
    end do
#else
    arrived = 0
    do while (arrived == 0)
      call MPI_Parrived(preqs(2), p, arrived, ierr)
    end do
#endif
  end do
  call MPI_Waitall(2, preqs, MPI_STATUSES_IGNORE, ierr)
  do i = 1, 2 * nparts
    call check(precv(i) == mod(me + np - 1, np) * 100 + i, 'partitioned data')
  end do
  call MPI_Request_free(preqs(1), ierr)
  call MPI_Request_free(preqs(2), ierr)

  ! A session beside the world model.
  call MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, session, ierr)
  call MPI_Session_finalize(session, ierr)

  call MPI_Comm_free(halves, ierr)
  call MPI_Comm_free(fromc, ierr)
  call MPI_Comm_free(info_dupc, ierr)
  call MPI_Group_free(mine, ierr)
  call MPI_Group_free(other, ierr)
  call MPI_Group_free(parity, ierr)
#endif

  call MPI_Comm_free(cart, ierr)
  call MPI_Comm_free(idupc, ierr)
  call MPI_Comm_free(grpc, ierr)
  call MPI_Comm_free(dupc, ierr)
  call MPI_Group_free(wgrp, ierr)
  if (me == 0) print '(a, i0, a)', 'detail_f: ', np, ' ranks: ok'
  call MPI_Finalize(ierr)

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    integer :: e
    if (.not. ok) then
      print '(a, i0, 2a)', 'detail_f: rank ', me, ': wrong result of ', what
      call MPI_Abort(MPI_COMM_WORLD, 1, e)
    end if
  end subroutine check

end program detail_f
