! coverage_usempi: MPI coverage test using the `use mpi` module.
! Needs 2 <= np <= 16.  Same structure and per-rank call counts as
! coverage_f77.f except that it starts with MPI_Init_thread instead of
! MPI_Init.  Every received value is validated (MPI_Abort on mismatch);
! rank 0 prints a checksum.
!
! Per-rank call counts (see manifest.toml):
!   Init_thread 1, Finalize 1, Send 1, Ssend 1, Bsend 1, Rsend 1, Recv 5,
!   Sendrecv 2, Sendrecv_replace 1, Isend 8, Issend 1, Ibsend 1, Irsend 1,
!   Irecv 8, Send_init 1, Ssend_init 1, Recv_init 2, Start 2, Startall 1,
!   Request_free 4, Wait 19, Waitall 3, Waitany 2, Waitsome >=1, Test >=2,
!   Testall >=1, Testany >=2, Testsome >=1, Probe 1, Iprobe >=1, Mprobe 1,
!   Improbe >=1, Mrecv 1, Imrecv 1, Barrier 3, Bcast 2, Reduce 2,
!   Allreduce 3, every other blocking collective 1, every I-collective 1,
!   Comm_dup 1, Comm_split 1, Comm_split_type 1, Comm_create 1,
!   Intercomm_create 1, Intercomm_merge 1 (Comm_free 2 more),
!   Cart_create 1, Neighbor_allgather 1, Cart_sub 1, Graph_create 1,
!   Dist_graph_create 1,
!   Dist_graph_create_adjacent 1, Comm_free 8 (+1 on even ranks),
!   Win_create 1, Win_fence 2, Put 1, Win_post 1, Win_start 1, Accumulate 1,
!   Win_complete 1, Win_wait 1, Win_lock 1, Get 1, Win_unlock 1, Win_free 1
!   (and the window groups' Comm_group 1, Group_incl 2, Group_free 3,
!   recorded without detail), File_open 1, File_write_at 1,
!   File_read_at 1, File_close 1, File_delete 1 on rank 0 (it writes and
!   deletes coverage_usempi.dat in the working directory).
module cov_state
  use mpi
  implicit none
  integer :: me, np, left, right
  integer(kind=8) :: h = 0
  ! buffers used by nonblocking operations
  integer, asynchronous :: sb(64), rb(64), sb2(64), rb2(64)
  integer, asynchronous :: csb(256), crb(256)
  integer :: bbuf(4096)
  integer :: ctype(3)
  ! MPI_BOTTOM struct members (accessed by MPI through absolute addresses)
  integer, volatile :: ival(3), rival(3)
  double precision, volatile :: dval(2), rdval(2)
  ! one-sided window and origin buffers (accessed by MPI between calls)
  double precision, asynchronous :: win(8), wput(2), wacc, wget
contains
  integer function val(a, b, c)
    integer, intent(in) :: a, b, c
    val = a * 100000 + b * 100 + c
  end function val

  subroutine chk(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    integer :: ierr
    if (.not. ok) then
      write(0, '(a,i0,2a)') 'rank ', me, ': check failed: ', what
      call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
    end if
  end subroutine chk

  subroutine absorb(v)
    integer, intent(in) :: v
    h = mod(h * 131_8 + int(v, 8) + 7_8, 1000000007_8)
  end subroutine absorb

  subroutine chkbuf(buf, n, src, sec, what)
    integer, intent(in) :: n, buf(n), src, sec
    character(len=*), intent(in) :: what
    integer :: i
    do i = 1, n
      call chk(buf(i) == val(src, sec, i), what)
      call absorb(buf(i))
    end do
  end subroutine chkbuf

  ! Every collective once; nb = .true. uses the I-form + MPI_Wait.
  subroutine colls(nb)
    logical, intent(in) :: nb
    integer :: sc(16), sd(16), rc(16), rd(16), st(16), rt(16)
    integer :: ierr, req, i, q, e, s, root, tot, off

    s = merge(200, 100, nb)
    ! Barrier
    if (nb) then
      call MPI_Ibarrier(MPI_COMM_WORLD, req, ierr)
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_Barrier(MPI_COMM_WORLD, ierr)
    end if
    ! Bcast from the last rank
    root = np - 1
    do i = 1, 5
      crb(i) = -1
      if (me == root) crb(i) = val(root, s + 1, i)
    end do
    if (nb) then
      call MPI_Ibcast(crb, 5, MPI_INTEGER, root, MPI_COMM_WORLD, req, ierr)
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_Bcast(crb, 5, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    end if
    call chkbuf(crb, 5, root, s + 1, 'bcast')
    ! Reduce with MPI_IN_PLACE at the root (rank 0)
    do i = 1, 4
      csb(i) = val(me, s + 2, i)
      crb(i) = csb(i)
    end do
    if (me == 0) then
      if (nb) then
        call MPI_Ireduce(MPI_IN_PLACE, crb, 4, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, req, ierr)
        call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
      else
        call MPI_Reduce(MPI_IN_PLACE, crb, 4, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
      end if
      do i = 1, 4
        e = 0
        do q = 0, np - 1
          e = e + val(q, s + 2, i)
        end do
        call chk(crb(i) == e, 'reduce in place')
        call absorb(crb(i))
      end do
    else
      if (nb) then
        call MPI_Ireduce(csb, crb, 4, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, req, ierr)
        call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
      else
        call MPI_Reduce(csb, crb, 4, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
      end if
    end if
    ! Allreduce with MPI_IN_PLACE
    do i = 1, 3
      crb(i) = val(me, s + 3, i)
    end do
    if (nb) then
      call MPI_Iallreduce(MPI_IN_PLACE, crb, 3, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_Allreduce(MPI_IN_PLACE, crb, 3, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    end if
    do i = 1, 3
      e = 0
      do q = 0, np - 1
        e = e + val(q, s + 3, i)
      end do
      call chk(crb(i) == e, 'allreduce in place')
      call absorb(crb(i))
    end do
    ! Gather to rank 1: 2 per rank
    root = 1
    do i = 1, 2
      csb(i) = val(me, s + 4, i)
    end do
    if (nb) then
      call MPI_Igather(csb, 2, MPI_INTEGER, crb, 2, MPI_INTEGER, root, MPI_COMM_WORLD, req, ierr)
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_Gather(csb, 2, MPI_INTEGER, crb, 2, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    end if
    if (me == root) then
      do q = 0, np - 1
        call chkbuf(crb(2 * q + 1:), 2, q, s + 4, 'gather')
      end do
    end if
    ! Gatherv to rank 0: q sends mod(q,3)+1, one-element gaps
    tot = 0
    do q = 0, np - 1
      rc(q + 1) = mod(q, 3) + 1
      rd(q + 1) = tot
      tot = tot + rc(q + 1) + 1
    end do
    do i = 1, mod(me, 3) + 1
      csb(i) = val(me, s + 5, i)
    end do
    if (nb) then
      call MPI_Igatherv(csb, mod(me, 3) + 1, MPI_INTEGER, crb, rc, rd, MPI_INTEGER, 0, &
                        MPI_COMM_WORLD, req, ierr)
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_Gatherv(csb, mod(me, 3) + 1, MPI_INTEGER, crb, rc, rd, MPI_INTEGER, 0, &
                       MPI_COMM_WORLD, ierr)
    end if
    if (me == 0) then
      do q = 0, np - 1
        call chkbuf(crb(rd(q + 1) + 1:), rc(q + 1), q, s + 5, 'gatherv')
      end do
    end if
    ! Scatter from rank 0: 3 per rank
    if (me == 0) then
      do q = 0, np - 1
        do i = 1, 3
          csb(3 * q + i) = val(q, s + 6, i)
        end do
      end do
    end if
    if (nb) then
      call MPI_Iscatter(csb, 3, MPI_INTEGER, crb, 3, MPI_INTEGER, 0, MPI_COMM_WORLD, req, ierr)
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_Scatter(csb, 3, MPI_INTEGER, crb, 3, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    end if
    call chkbuf(crb, 3, me, s + 6, 'scatter')
    ! Scatterv from the last rank: q gets mod(q,4)+1, reversed order
    root = np - 1
    tot = 0
    do q = np - 1, 0, -1
      sc(q + 1) = mod(q, 4) + 1
      sd(q + 1) = tot
      tot = tot + sc(q + 1)
    end do
    if (me == root) then
      do q = 0, np - 1
        do i = 1, sc(q + 1)
          csb(sd(q + 1) + i) = val(q, s + 7, i)
        end do
      end do
    end if
    if (nb) then
      call MPI_Iscatterv(csb, sc, sd, MPI_INTEGER, crb, mod(me, 4) + 1, MPI_INTEGER, root, &
                         MPI_COMM_WORLD, req, ierr)
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_Scatterv(csb, sc, sd, MPI_INTEGER, crb, mod(me, 4) + 1, MPI_INTEGER, root, &
                        MPI_COMM_WORLD, ierr)
    end if
    call chkbuf(crb, mod(me, 4) + 1, me, s + 7, 'scatterv')
    ! Allgather: 2 per rank
    do i = 1, 2
      csb(i) = val(me, s + 8, i)
    end do
    if (nb) then
      call MPI_Iallgather(csb, 2, MPI_INTEGER, crb, 2, MPI_INTEGER, MPI_COMM_WORLD, req, ierr)
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_Allgather(csb, 2, MPI_INTEGER, crb, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    end if
    do q = 0, np - 1
      call chkbuf(crb(2 * q + 1:), 2, q, s + 8, 'allgather')
    end do
    ! Allgatherv: q contributes mod(q,2)+1
    tot = 0
    do q = 0, np - 1
      rc(q + 1) = mod(q, 2) + 1
      rd(q + 1) = tot
      tot = tot + rc(q + 1)
    end do
    do i = 1, mod(me, 2) + 1
      csb(i) = val(me, s + 9, i)
    end do
    if (nb) then
      call MPI_Iallgatherv(csb, mod(me, 2) + 1, MPI_INTEGER, crb, rc, rd, MPI_INTEGER, &
                           MPI_COMM_WORLD, req, ierr)
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_Allgatherv(csb, mod(me, 2) + 1, MPI_INTEGER, crb, rc, rd, MPI_INTEGER, &
                          MPI_COMM_WORLD, ierr)
    end if
    do q = 0, np - 1
      call chkbuf(crb(rd(q + 1) + 1:), rc(q + 1), q, s + 9, 'allgatherv')
    end do
    ! Alltoall: 2 per pair, value identifies (sender, receiver)
    do q = 0, np - 1
      do i = 1, 2
        csb(2 * q + i) = val(me * np + q, s + 10, i)
      end do
    end do
    if (nb) then
      call MPI_Ialltoall(csb, 2, MPI_INTEGER, crb, 2, MPI_INTEGER, MPI_COMM_WORLD, req, ierr)
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_Alltoall(csb, 2, MPI_INTEGER, crb, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    end if
    do q = 0, np - 1
      call chkbuf(crb(2 * q + 1:), 2, q * np + me, s + 10, 'alltoall')
    end do
    ! Alltoallv: a sends mod(a+b,3)+1 to b
    tot = 0
    off = 0
    do q = 0, np - 1
      sc(q + 1) = mod(me + q, 3) + 1
      sd(q + 1) = tot
      tot = tot + sc(q + 1)
      rc(q + 1) = mod(q + me, 3) + 1
      rd(q + 1) = off
      off = off + rc(q + 1)
      do i = 1, sc(q + 1)
        csb(sd(q + 1) + i) = val(me * np + q, s + 11, i)
      end do
    end do
    if (nb) then
      call MPI_Ialltoallv(csb, sc, sd, MPI_INTEGER, crb, rc, rd, MPI_INTEGER, MPI_COMM_WORLD, &
                          req, ierr)
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_Alltoallv(csb, sc, sd, MPI_INTEGER, crb, rc, rd, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    end if
    do q = 0, np - 1
      call chkbuf(crb(rd(q + 1) + 1:), rc(q + 1), q * np + me, s + 11, 'alltoallv')
    end do
    ! Alltoallw: a sends one ctype(mod(a+2b,3)+1) to b, b receives mod(a+2b,3)+1
    ! MPI_INTEGERs; displacements in bytes.  The I-form sends MPI_INTEGERs
    ! instead: Open MPI 4.1.4's Fortran MPI_Ialltoallw crashes in MPI_Wait when
    ! given derived datatypes.
    tot = 0
    off = 0
    do q = 0, np - 1
      e = mod(me + 2 * q, 3) + 1
      sc(q + 1) = 1
      st(q + 1) = ctype(e)
      if (nb) then
        sc(q + 1) = e
        st(q + 1) = MPI_INTEGER
      end if
      sd(q + 1) = 4 * tot
      do i = 1, e
        csb(tot + i) = val(me * np + q, s + 12, i)
      end do
      tot = tot + e
      rc(q + 1) = mod(q + 2 * me, 3) + 1
      rt(q + 1) = MPI_INTEGER
      rd(q + 1) = 4 * off
      off = off + rc(q + 1)
    end do
    if (nb) then
      call MPI_Ialltoallw(csb, sc, sd, st, crb, rc, rd, rt, MPI_COMM_WORLD, req, ierr)
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_Alltoallw(csb, sc, sd, st, crb, rc, rd, rt, MPI_COMM_WORLD, ierr)
    end if
    do q = 0, np - 1
      call chkbuf(crb(rd(q + 1) / 4 + 1:), rc(q + 1), q * np + me, s + 12, 'alltoallw')
    end do
    ! Reduce_scatter: q gets mod(q,3)+1 elements
    tot = 0
    off = 0
    do q = 0, np - 1
      rc(q + 1) = mod(q, 3) + 1
      if (q == me) off = tot
      tot = tot + rc(q + 1)
    end do
    do i = 1, tot
      csb(i) = val(me, s + 13, i)
    end do
    if (nb) then
      call MPI_Ireduce_scatter(csb, crb, rc, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_Reduce_scatter(csb, crb, rc, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    end if
    do i = 1, rc(me + 1)
      e = 0
      do q = 0, np - 1
        e = e + val(q, s + 13, off + i)
      end do
      call chk(crb(i) == e, 'reduce_scatter')
      call absorb(crb(i))
    end do
    ! Reduce_scatter_block: 2 per rank
    do i = 1, 2 * np
      csb(i) = val(me, s + 14, i)
    end do
    if (nb) then
      call MPI_Ireduce_scatter_block(csb, crb, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_Reduce_scatter_block(csb, crb, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    end if
    do i = 1, 2
      e = 0
      do q = 0, np - 1
        e = e + val(q, s + 14, 2 * me + i)
      end do
      call chk(crb(i) == e, 'reduce_scatter_block')
      call absorb(crb(i))
    end do
    ! Scan and Exscan
    do i = 1, 2
      csb(i) = val(me, s + 15, i)
    end do
    if (nb) then
      call MPI_Iscan(csb, crb, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_Scan(csb, crb, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    end if
    do i = 1, 2
      e = 0
      do q = 0, me
        e = e + val(q, s + 15, i)
      end do
      call chk(crb(i) == e, 'scan')
      call absorb(crb(i))
    end do
    if (nb) then
      call MPI_Iexscan(csb, crb, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_Exscan(csb, crb, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    end if
    if (me > 0) then
      do i = 1, 2
        e = 0
        do q = 0, me - 1
          e = e + val(q, s + 15, i)
        end do
        call chk(crb(i) == e, 'exscan')
        call absorb(crb(i))
      end do
    end if
  end subroutine colls
end module cov_state

program coverage_usempi
  use mpi
  use cov_state
  implicit none
  integer :: ierr, i, k, n, ndone, outcnt, aidx, cnt, provided
  integer :: req(4), sreq(4), idx(4)
  integer :: status(MPI_STATUS_SIZE), stats(MPI_STATUS_SIZE, 4)
  integer :: msg
  integer(kind=MPI_ADDRESS_KIND) :: disp(2)
  integer :: blens(2), types(2), stype, rtype
  logical :: flag
  integer(kind=8) :: hsum
  integer :: dup, split, shm, even, cart, crow, graph, dg, dga
  integer :: inter, merged
  integer :: wgrp, egrp, evens(16), ne, dims(2)
  logical :: periods(2), remain(2)
  integer :: gindex(16), gedges(32), nnb, isrc(1), idst(1), ideg(1), nbrs(4)
  integer :: indeg, outdeg, iw1(1), iw2(1)
  logical :: weighted
  integer :: wh, glft, grgt
  integer(kind=MPI_ADDRESS_KIND) :: wsize, tdisp
  integer :: fio, iob(4), iob2(4)
  integer(kind=MPI_OFFSET_KIND) :: ioff

  call MPI_Init_thread(MPI_THREAD_FUNNELED, provided, ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, me, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  if (np < 2 .or. np > 16) then
    if (me == 0) write(0, *) 'coverage_usempi needs 2..16 ranks'
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  call chk(provided >= MPI_THREAD_SINGLE .and. provided <= MPI_THREAD_MULTIPLE, 'provided')
  right = mod(me + 1, np)
  left = mod(me + np - 1, np)

  ! ---------------- blocking point-to-point ----------------
  ! Send / Recv in token order
  sb(1:4) = [(val(me, 1, i), i = 1, 4)]
  if (me == 0) then
    call MPI_Send(sb, 4, MPI_INTEGER, right, 1, MPI_COMM_WORLD, ierr)
    call MPI_Recv(rb, 4, MPI_INTEGER, left, 1, MPI_COMM_WORLD, status, ierr)
  else
    call MPI_Recv(rb, 4, MPI_INTEGER, left, 1, MPI_COMM_WORLD, status, ierr)
    call MPI_Send(sb, 4, MPI_INTEGER, right, 1, MPI_COMM_WORLD, ierr)
  end if
  call chk(status(MPI_SOURCE) == left .and. status(MPI_TAG) == 1, 'recv status')
  call chkbuf(rb, 4, left, 1, 'send/recv')
  ! Ssend / Recv in token order
  sb(1:4) = [(val(me, 2, i), i = 1, 4)]
  if (me == 0) then
    call MPI_Ssend(sb, 4, MPI_INTEGER, right, 2, MPI_COMM_WORLD, ierr)
    call MPI_Recv(rb, 4, MPI_INTEGER, left, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  else
    call MPI_Recv(rb, 4, MPI_INTEGER, left, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call MPI_Ssend(sb, 4, MPI_INTEGER, right, 2, MPI_COMM_WORLD, ierr)
  end if
  call chkbuf(rb, 4, left, 2, 'ssend/recv')
  ! Bsend / Recv
  call MPI_Buffer_attach(bbuf, 4 * size(bbuf), ierr)
  sb(1:4) = [(val(me, 3, i), i = 1, 4)]
  call MPI_Bsend(sb, 4, MPI_INTEGER, right, 3, MPI_COMM_WORLD, ierr)
  call MPI_Recv(rb, 4, MPI_INTEGER, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call chkbuf(rb, 4, left, 3, 'bsend/recv')
  ! Pcontrol: a profiler context boundary (level 1)
  call MPI_Pcontrol(1)
  ! Rsend after a pre-posted Irecv and a Barrier
  sb(1:4) = [(val(me, 4, i), i = 1, 4)]
  call MPI_Irecv(rb, 4, MPI_INTEGER, left, 4, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Rsend(sb, 4, MPI_INTEGER, right, 4, MPI_COMM_WORLD, ierr)
  call MPI_Wait(req(1), MPI_STATUS_IGNORE, ierr)
  call chkbuf(rb, 4, left, 4, 'rsend')
  ! Sendrecv, Sendrecv_replace
  sb(1:4) = [(val(me, 5, i), i = 1, 4)]
  call MPI_Sendrecv(sb, 4, MPI_INTEGER, right, 5, rb, 4, MPI_INTEGER, left, 5, &
                    MPI_COMM_WORLD, status, ierr)
  call chk(status(MPI_SOURCE) == left, 'sendrecv status')
  call chkbuf(rb, 4, left, 5, 'sendrecv')
  rb(1:4) = [(val(me, 6, i), i = 1, 4)]
  call MPI_Sendrecv_replace(rb, 4, MPI_INTEGER, right, 6, left, 6, MPI_COMM_WORLD, &
                            MPI_STATUS_IGNORE, ierr)
  call chkbuf(rb, 4, left, 6, 'sendrecv_replace')

  ! ---------------- nonblocking point-to-point ----------------
  ! Irecv / Isend / Waitall(MPI_STATUSES_IGNORE)
  sb(1:4) = [(val(me, 7, i), i = 1, 4)]
  call MPI_Irecv(rb, 4, MPI_INTEGER, left, 7, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Isend(sb, 4, MPI_INTEGER, right, 7, MPI_COMM_WORLD, req(2), ierr)
  call MPI_Waitall(2, req, MPI_STATUSES_IGNORE, ierr)
  call chkbuf(rb, 4, left, 7, 'isend/waitall')
  ! Irecv / Issend / Waitany x2 (indices are 1-based)
  sb(1:4) = [(val(me, 8, i), i = 1, 4)]
  call MPI_Irecv(rb, 4, MPI_INTEGER, left, 8, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Issend(sb, 4, MPI_INTEGER, right, 8, MPI_COMM_WORLD, req(2), ierr)
  do k = 1, 2
    call MPI_Waitany(2, req, idx(k), status, ierr)
    call chk(idx(k) == 1 .or. idx(k) == 2, 'waitany index')
    call chk(req(idx(k)) == MPI_REQUEST_NULL, 'waitany request')
    if (idx(k) == 1) call chk(status(MPI_SOURCE) == left .and. status(MPI_TAG) == 8, &
                              'waitany status')
  end do
  call chk(idx(1) + idx(2) == 3, 'waitany distinct indices')
  call chkbuf(rb, 4, left, 8, 'issend/waitany')
  ! Irecv / Ibsend / Waitsome loop
  sb(1:4) = [(val(me, 9, i), i = 1, 4)]
  call MPI_Irecv(rb, 4, MPI_INTEGER, left, 9, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Ibsend(sb, 4, MPI_INTEGER, right, 9, MPI_COMM_WORLD, req(2), ierr)
  ndone = 0
  do while (ndone < 2)
    call MPI_Waitsome(2, req, outcnt, idx, stats, ierr)
    call chk(outcnt >= 1 .and. outcnt <= 2, 'waitsome count')
    do k = 1, outcnt
      call chk(idx(k) == 1 .or. idx(k) == 2, 'waitsome index')
    end do
    ndone = ndone + outcnt
  end do
  call chkbuf(rb, 4, left, 9, 'ibsend/waitsome')
  ! Irecv / Barrier / Irsend / Test loops
  sb(1:4) = [(val(me, 10, i), i = 1, 4)]
  call MPI_Irecv(rb, 4, MPI_INTEGER, left, 10, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Irsend(sb, 4, MPI_INTEGER, right, 10, MPI_COMM_WORLD, req(2), ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Test(req(1), flag, status, ierr)
  end do
  call chk(status(MPI_SOURCE) == left, 'test status')
  flag = .false.
  do while (.not. flag)
    call MPI_Test(req(2), flag, MPI_STATUS_IGNORE, ierr)
  end do
  call chkbuf(rb, 4, left, 10, 'irsend/test')
  ! Irecv / Isend / Testall loop
  sb(1:4) = [(val(me, 11, i), i = 1, 4)]
  call MPI_Irecv(rb, 4, MPI_INTEGER, left, 11, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Isend(sb, 4, MPI_INTEGER, right, 11, MPI_COMM_WORLD, req(2), ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Testall(2, req, flag, stats, ierr)
  end do
  call chk(stats(MPI_SOURCE, 1) == left, 'testall status')
  call chkbuf(rb, 4, left, 11, 'isend/testall')
  ! Irecv / Isend / Testany loop
  sb(1:4) = [(val(me, 12, i), i = 1, 4)]
  call MPI_Irecv(rb, 4, MPI_INTEGER, left, 12, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Isend(sb, 4, MPI_INTEGER, right, 12, MPI_COMM_WORLD, req(2), ierr)
  ndone = 0
  do while (ndone < 2)
    call MPI_Testany(2, req, aidx, flag, status, ierr)
    if (flag) then
      call chk(aidx == 1 .or. aidx == 2, 'testany index')
      ndone = ndone + 1
    end if
  end do
  call chkbuf(rb, 4, left, 12, 'isend/testany')
  ! Irecv / Isend / Testsome loop
  sb(1:4) = [(val(me, 13, i), i = 1, 4)]
  call MPI_Irecv(rb, 4, MPI_INTEGER, left, 13, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Isend(sb, 4, MPI_INTEGER, right, 13, MPI_COMM_WORLD, req(2), ierr)
  ndone = 0
  do while (ndone < 2)
    call MPI_Testsome(2, req, outcnt, idx, MPI_STATUSES_IGNORE, ierr)
    call chk(outcnt /= MPI_UNDEFINED, 'testsome outcount')
    ndone = ndone + outcnt
  end do
  call chkbuf(rb, 4, left, 13, 'isend/testsome')

  ! ---------------- persistent requests ----------------
  sb(1:4) = [(val(me, 41, i), i = 1, 4)]
  sb2(1:4) = [(val(me, 42, i), i = 1, 4)]
  call MPI_Recv_init(rb, 4, MPI_INTEGER, left, 41, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Recv_init(rb2, 4, MPI_INTEGER, right, 42, MPI_COMM_WORLD, req(2), ierr)
  call MPI_Send_init(sb, 4, MPI_INTEGER, right, 41, MPI_COMM_WORLD, req(3), ierr)
  call MPI_Ssend_init(sb2, 4, MPI_INTEGER, left, 42, MPI_COMM_WORLD, req(4), ierr)
  call MPI_Startall(2, req, ierr)
  call MPI_Start(req(3), ierr)
  call MPI_Start(req(4), ierr)
  call MPI_Waitall(4, req, stats, ierr)
  call chk(stats(MPI_SOURCE, 1) == left .and. stats(MPI_SOURCE, 2) == right, 'persistent status')
  call chkbuf(rb, 4, left, 41, 'persistent from left')
  call chkbuf(rb2, 4, right, 42, 'persistent from right')
  do k = 1, 4
    call MPI_Request_free(req(k), ierr)
    call chk(req(k) == MPI_REQUEST_NULL, 'request_free')
  end do

  ! ---------------- probes ----------------
  do k = 1, 4
    do i = 1, 4
      sb(16 * (k - 1) + i) = val(me, 50 + k, i)
    end do
    call MPI_Isend(sb(16 * (k - 1) + 1), k, MPI_INTEGER, right, 50 + k, MPI_COMM_WORLD, &
                   sreq(k), ierr)
  end do
  call MPI_Probe(MPI_ANY_SOURCE, 51, MPI_COMM_WORLD, status, ierr)
  call chk(status(MPI_SOURCE) == left, 'probe source')
  call MPI_Get_count(status, MPI_INTEGER, cnt, ierr)
  call chk(cnt == 1, 'probe count')
  call MPI_Recv(rb, cnt, MPI_INTEGER, left, 51, MPI_COMM_WORLD, status, ierr)
  call chkbuf(rb, 1, left, 51, 'probe/recv')
  flag = .false.
  do while (.not. flag)
    call MPI_Iprobe(left, 52, MPI_COMM_WORLD, flag, status, ierr)
  end do
  call MPI_Get_count(status, MPI_INTEGER, cnt, ierr)
  call chk(cnt == 2, 'iprobe count')
  call MPI_Recv(rb, cnt, MPI_INTEGER, left, 52, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call chkbuf(rb, 2, left, 52, 'iprobe/recv')
  call MPI_Mprobe(left, 53, MPI_COMM_WORLD, msg, status, ierr)
  call MPI_Get_count(status, MPI_INTEGER, cnt, ierr)
  call chk(cnt == 3, 'mprobe count')
  call MPI_Mrecv(rb, cnt, MPI_INTEGER, msg, status, ierr)
  call chk(msg == MPI_MESSAGE_NULL, 'mrecv message handle')
  call chkbuf(rb, 3, left, 53, 'mprobe/mrecv')
  flag = .false.
  do while (.not. flag)
    call MPI_Improbe(left, 54, MPI_COMM_WORLD, flag, msg, status, ierr)
  end do
  call MPI_Get_count(status, MPI_INTEGER, cnt, ierr)
  call chk(cnt == 4, 'improbe count')
  call MPI_Imrecv(rb, cnt, MPI_INTEGER, msg, req(1), ierr)
  call MPI_Wait(req(1), status, ierr)
  call chk(status(MPI_TAG) == 54, 'imrecv status')
  call chkbuf(rb, 4, left, 54, 'improbe/imrecv')
  call MPI_Waitall(4, sreq, MPI_STATUSES_IGNORE, ierr)

  ! ---------------- MPI_BOTTOM with absolute-address struct types ----------------
  ival = [me, 7 * me + 1, -me]
  dval = [0.5d0 * me, 1.0d0 / (me + 1)]
  blens = [3, 2]
  types = [MPI_INTEGER, MPI_DOUBLE_PRECISION]
  call MPI_Get_address(ival, disp(1), ierr)
  call MPI_Get_address(dval, disp(2), ierr)
  call MPI_Type_create_struct(2, blens, disp, types, stype, ierr)
  call MPI_Type_commit(stype, ierr)
  call MPI_Get_address(rival, disp(1), ierr)
  call MPI_Get_address(rdval, disp(2), ierr)
  call MPI_Type_create_struct(2, blens, disp, types, rtype, ierr)
  call MPI_Type_commit(rtype, ierr)
  rival(1) = -99
  rdval(1) = -99.0d0
  call MPI_Sendrecv(MPI_BOTTOM, 1, stype, right, 61, MPI_BOTTOM, 1, rtype, left, 61, &
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call chk(rival(1) == left .and. rival(2) == 7 * left + 1 .and. rival(3) == -left .and. &
           rdval(1) == 0.5d0 * left .and. rdval(2) == 1.0d0 / (left + 1), 'MPI_BOTTOM sendrecv')
  call absorb(rival(2))
  if (me == 0) then
    call MPI_Bcast(MPI_BOTTOM, 1, stype, 0, MPI_COMM_WORLD, ierr)
  else
    call MPI_Bcast(MPI_BOTTOM, 1, rtype, 0, MPI_COMM_WORLD, ierr)
    call chk(rival(1) == 0 .and. rival(2) == 1 .and. rival(3) == 0 .and. rdval(1) == 0.0d0 &
             .and. rdval(2) == 1.0d0, 'MPI_BOTTOM bcast')
  end if
  call MPI_Type_free(stype, ierr)
  call MPI_Type_free(rtype, ierr)

  ! ---------------- collectives ----------------
  do k = 1, 3
    call MPI_Type_contiguous(k, MPI_INTEGER, ctype(k), ierr)
    call MPI_Type_commit(ctype(k), ierr)
  end do
  call colls(.false.)
  call colls(.true.)
  do k = 1, 3
    call MPI_Type_free(ctype(k), ierr)
  end do

  ! ---------------- communicators and topologies ----------------
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  k = 1
  call MPI_Allreduce(MPI_IN_PLACE, k, 1, MPI_INTEGER, MPI_SUM, dup, ierr)
  call chk(k == np, 'allreduce on dup')
  call MPI_Comm_split(MPI_COMM_WORLD, mod(me, 2), me, split, ierr)
  call MPI_Allreduce(me, k, 1, MPI_INTEGER, MPI_SUM, split, ierr)
  call chk(k == sum([(i, i = mod(me, 2), np - 1, 2)]), 'allreduce on split')
  call absorb(k)
  call MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, shm, ierr)
  call MPI_Comm_size(shm, n, ierr)
  call chk(n >= 1 .and. n <= np, 'split_type size')
  ne = (np + 1) / 2
  evens(1:ne) = [(2 * (i - 1), i = 1, ne)]
  call MPI_Comm_group(MPI_COMM_WORLD, wgrp, ierr)
  call MPI_Group_incl(wgrp, ne, evens, egrp, ierr)
  call MPI_Comm_create(MPI_COMM_WORLD, egrp, even, ierr)
  if (mod(me, 2) == 0) then
    call MPI_Comm_size(even, n, ierr)
    call chk(n == ne, 'comm_create size')
  else
    call chk(even == MPI_COMM_NULL, 'comm_create null')
  end if
  call MPI_Group_free(egrp, ierr)
  call MPI_Group_free(wgrp, ierr)
  dims = 0
  call MPI_Dims_create(np, 2, dims, ierr)
  periods = [.true., .false.]
  call MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, .false., cart, ierr)
  remain = [.false., .true.]
  call MPI_Cart_sub(cart, remain, crow, ierr)
  call MPI_Comm_size(crow, n, ierr)
  call chk(n == dims(2), 'cart_sub size')
  ! the grid's four neighbours' ranks by one neighbourhood allgather (the
  ! non-periodic edges' slots, MPI_PROC_NULL, keep their -1)
  nbrs = -1
  call MPI_Neighbor_allgather(me, 1, MPI_INTEGER, nbrs, 1, MPI_INTEGER, cart, ierr)
  call MPI_Cart_shift(cart, 0, 1, isrc(1), idst(1), ierr)
  call chk(nbrs(1) == isrc(1) .and. nbrs(2) == idst(1), 'neighbor_allgather')
  ! ring graph (duplicate neighbours removed for np = 2)
  n = 0
  do i = 0, np - 1
    n = n + 1
    gedges(n) = mod(i + np - 1, np)
    if (mod(i + 1, np) /= gedges(n)) then
      n = n + 1
      gedges(n) = mod(i + 1, np)
    end if
    gindex(i + 1) = n
  end do
  call MPI_Graph_create(MPI_COMM_WORLD, np, gindex, gedges, .false., graph, ierr)
  call MPI_Graph_neighbors_count(graph, me, nnb, ierr)
  call chk(nnb == min(2, np - 1), 'graph neighbours')
  isrc(1) = me
  ideg(1) = 1
  idst(1) = right
  call MPI_Dist_graph_create(MPI_COMM_WORLD, 1, isrc, ideg, idst, MPI_UNWEIGHTED, &
                             MPI_INFO_NULL, .false., dg, ierr)
  call MPI_Dist_graph_neighbors_count(dg, indeg, outdeg, weighted, ierr)
  call chk(indeg == 1 .and. outdeg == 1 .and. .not. weighted, 'dist_graph degrees')
  isrc(1) = left
  call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, isrc, MPI_UNWEIGHTED, 1, idst, &
                                      MPI_UNWEIGHTED, MPI_INFO_NULL, .false., dga, ierr)
  call MPI_Dist_graph_neighbors(dga, 1, isrc, iw1, 1, idst, iw2, ierr)
  call chk(isrc(1) == left .and. idst(1) == right, 'dist_graph_adjacent neighbours')
  call MPI_Comm_free(dup, ierr)
  ! The two halves of split (even and odd ranks) joined and merged.
  call MPI_Intercomm_create(split, 0, MPI_COMM_WORLD, 1 - mod(me, 2), 5, inter, ierr)
  call MPI_Intercomm_merge(inter, mod(me, 2) == 1, merged, ierr)
  call MPI_Comm_free(merged, ierr)
  call MPI_Comm_free(inter, ierr)
  call MPI_Comm_free(split, ierr)
  call MPI_Comm_free(shm, ierr)
  if (even /= MPI_COMM_NULL) call MPI_Comm_free(even, ierr)
  call MPI_Comm_free(crow, ierr)
  call MPI_Comm_free(cart, ierr)
  call MPI_Comm_free(graph, ierr)
  call MPI_Comm_free(dg, ierr)
  call MPI_Comm_free(dga, ierr)
  call chk(dga == MPI_COMM_NULL, 'comm_free handle')

  ! ---------------- one-sided communication ----------------
  win = 0.0d0
  wsize = 64
  call MPI_Win_create(win, wsize, 8, MPI_INFO_NULL, MPI_COMM_WORLD, wh, ierr)
  ! Fence epoch: Put 2 doubles to the right neighbour's win(1:2)
  call MPI_Win_fence(0, wh, ierr)
  wput = [dble(me + 1), dble(me + 2)]
  tdisp = 0
  call MPI_Put(wput, 2, MPI_DOUBLE_PRECISION, right, tdisp, 2, MPI_DOUBLE_PRECISION, wh, ierr)
  call MPI_Win_fence(0, wh, ierr)
  call chk(win(1) == dble(left + 1) .and. win(2) == dble(left + 2), 'put/fence')
  ! PSCW epoch: exposed to the left, accessing the right neighbour;
  ! Accumulate (MPI_SUM) rank into the right neighbour's win(3)
  call MPI_Comm_group(MPI_COMM_WORLD, wgrp, ierr)
  call MPI_Group_incl(wgrp, 1, [left], glft, ierr)
  call MPI_Group_incl(wgrp, 1, [right], grgt, ierr)
  call MPI_Win_post(glft, 0, wh, ierr)
  call MPI_Win_start(grgt, 0, wh, ierr)
  wacc = dble(me)
  tdisp = 2
  call MPI_Accumulate(wacc, 1, MPI_DOUBLE_PRECISION, right, tdisp, 1, MPI_DOUBLE_PRECISION, &
                      MPI_SUM, wh, ierr)
  call MPI_Win_complete(wh, ierr)
  call MPI_Win_wait(wh, ierr)
  call chk(win(3) == dble(left), 'accumulate/pscw')
  call MPI_Group_free(glft, ierr)
  call MPI_Group_free(grgt, ierr)
  call MPI_Group_free(wgrp, ierr)
  ! Passive target: Get back what this rank put in the fence epoch
  wget = -1.0d0
  tdisp = 0
  call MPI_Win_lock(MPI_LOCK_SHARED, right, 0, wh, ierr)
  call MPI_Get(wget, 1, MPI_DOUBLE_PRECISION, right, tdisp, 1, MPI_DOUBLE_PRECISION, wh, ierr)
  call MPI_Win_unlock(right, wh, ierr)
  call chk(wget == dble(me + 1), 'get/lock')
  call MPI_Win_free(wh, ierr)
  call chk(wh == MPI_WIN_NULL, 'win_free handle')

  ! ---------------- MPI-IO ----------------
  ! Each rank writes 4 integers at byte 16*rank of one file, reads them
  ! back and closes it; rank 0 deletes the file. The write is independent:
  ! after MPI_File_write_at_all, Open MPI 4.1's ompio returns on ranks
  ! whose data its aggregator has not written yet, and their own
  ! MPI_File_read_at then reads nothing.
  call MPI_File_open(MPI_COMM_WORLD, 'coverage_usempi.dat', MPI_MODE_CREATE + MPI_MODE_RDWR, &
                     MPI_INFO_NULL, fio, ierr)
  iob = [me, me + 1, me + 2, me + 3]
  iob2 = -1
  ioff = 16 * me
  call MPI_File_write_at(fio, ioff, iob, 4, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
  call MPI_File_read_at(fio, ioff, iob2, 4, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
  call chk(all(iob2 == iob), 'file write/read')
  call MPI_File_close(fio, ierr)
  if (me == 0) call MPI_File_delete('coverage_usempi.dat', MPI_INFO_NULL, ierr)

  call MPI_Buffer_detach(bbuf, n, ierr)
  hsum = 0
  call MPI_Reduce(h, hsum, 1, MPI_INTEGER8, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (me == 0) write(*, '(a,i0,a,i0,a)') 'coverage_usempi np=', np, ' checksum=', hsum, ' verify=ok'
  call MPI_Finalize(ierr)
end program coverage_usempi
