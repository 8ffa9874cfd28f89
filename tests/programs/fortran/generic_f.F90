! generic_f: calls that rankscale records without detail, and the
! one-sided calls it records in detail (issue 36), made from Fortran, on a
! ring of np >= 2 ranks. Built twice (tests/programs/build.sh):
! generic_f with `use mpi`, generic_f08 (-DF08) with `use mpi_f08`. On MPICH they reach the
! C wrappers; Open MPI's Fortran bindings call PMPI_* directly, so there the
! shim's generated Fortran entry points record them. Both must record the
! same raw log (tests/interception.rs). Run it in a scratch directory: it
! writes (and deletes on close) the file generic_f.tmp.
!
! Per-rank calls, once each unless said:
!   detailed: Init, Finalize, Irecv, Wait 2 (the cancelled receive, the
!     Rput), Barrier 3, Win_create, Win_fence 2, Put, Win_lock_all, Rput,
!     Win_unlock_all, Win_free;
!   without detail: Comm_rank, Comm_size, Comm_set_name, Comm_get_name,
!     Type_vector, Type_commit, Type_size, Type_free, Comm_group, Group_size, Group_free,
!     Info_create, Info_set, Info_free, File_open, File_write_at_all,
!     File_close, Cancel, Test_cancelled.
program generic_f
#ifdef F08
  use mpi_f08
#else
  use mpi
#endif
  implicit none
  integer, parameter :: n = 8
  integer :: ierr, me, np, right, left, i, tsize, gsize, rlen
#ifdef F08
  type(MPI_Datatype) :: vec
  type(MPI_Group) :: grp
  type(MPI_Info) :: info
  type(MPI_Win) :: win
  type(MPI_Request) :: req
  type(MPI_File) :: fh
  type(MPI_Status) :: status
#else
  integer :: vec, grp, info, win, req, fh
  integer :: status(MPI_STATUS_SIZE)
#endif
  logical :: flag
  double precision, volatile :: winmem(2 * n)
  double precision :: put(n)
  integer :: ibuf(n), rbuf(n)
  character(len=MPI_MAX_OBJECT_NAME) :: cname
  integer(kind=MPI_ADDRESS_KIND) :: wsize, disp
  integer(kind=MPI_OFFSET_KIND) :: offset

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, me, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  if (np < 2) then
    print *, 'generic_f needs 2 ranks or more'
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  right = mod(me + 1, np)
  left = mod(me + np - 1, np)

  ! Names (CHARACTER arguments: a hidden length each).
  call MPI_Comm_set_name(MPI_COMM_WORLD, 'generic-world', ierr)
  call MPI_Comm_get_name(MPI_COMM_WORLD, cname, rlen, ierr)
  if (cname(1:rlen) /= 'generic-world') call fail('Comm_get_name')

  ! A derived datatype: every other integer of 2*n.
  call MPI_Type_vector(n, 1, 2, MPI_INTEGER, vec, ierr)
  call MPI_Type_commit(vec, ierr)
  call MPI_Type_size(vec, tsize, ierr)
  if (tsize /= 4 * n) call fail('Type_size')
  call MPI_Type_free(vec, ierr)

  ! Groups and info objects.
  call MPI_Comm_group(MPI_COMM_WORLD, grp, ierr)
  call MPI_Group_size(grp, gsize, ierr)
  if (gsize /= np) call fail('Group_size')
  call MPI_Group_free(grp, ierr)
  call MPI_Info_create(info, ierr)
  call MPI_Info_set(info, 'rankscale', 'generic', ierr)
  call MPI_Info_free(info, ierr)

  ! One-sided: n doubles into the right neighbour's window with MPI_Put
  ! between fences, n more with the request-based MPI_Rput in a passive
  ! target epoch (where MPI allows it).
  winmem = 0
  do i = 1, n
    put(i) = me + i
  end do
  wsize = 16 * n
  call MPI_Win_create(winmem, wsize, 8, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  disp = 0
  call MPI_Put(put, n, MPI_DOUBLE_PRECISION, right, disp, n, MPI_DOUBLE_PRECISION, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  call MPI_Win_lock_all(0, win, ierr)
  disp = n
  call MPI_Rput(put, n, MPI_DOUBLE_PRECISION, right, disp, n, MPI_DOUBLE_PRECISION, win, &
                req, ierr)
  call MPI_Wait(req, status, ierr)
  call MPI_Win_unlock_all(win, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (winmem(i) /= left + i .or. winmem(n + i) /= left + i) then
      print *, me, i, winmem(i), winmem(n + i)
      call fail('window')
    end if
  end do
  call MPI_Win_free(win, ierr)

  ! MPI-IO: every rank writes n integers at its own offset.
  ibuf = me
  call MPI_File_open(MPI_COMM_WORLD, 'generic_f.tmp', &
                     ior(MPI_MODE_CREATE, ior(MPI_MODE_WRONLY, MPI_MODE_DELETE_ON_CLOSE)), &
                     MPI_INFO_NULL, fh, ierr)
  offset = 4 * n * me
  call MPI_File_write_at_all(fh, offset, ibuf, n, MPI_INTEGER, status, ierr)
  call MPI_File_close(fh, ierr)

  ! A receive that no one matches, cancelled.
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Irecv(rbuf, n, MPI_INTEGER, left, 99, MPI_COMM_WORLD, req, ierr)
  call MPI_Cancel(req, ierr)
  call MPI_Wait(req, status, ierr)
  call MPI_Test_cancelled(status, flag, ierr)
  if (.not. flag) call fail('Test_cancelled')
  call MPI_Barrier(MPI_COMM_WORLD, ierr)

  if (me == 0) print '(a)', 'generic_f: all results right'
  call MPI_Finalize(ierr)

contains

  subroutine fail(what)
    character(len=*), intent(in) :: what
    integer :: e
    print *, 'rank', me, ': wrong result of ', what
    call MPI_Abort(MPI_COMM_WORLD, 2, e)
  end subroutine fail

end program generic_f
