! stencil2d PX PY ITERS   (use mpi)
!
! 2D Jacobi stencil on a PX x PY mesh of ranks (non-periodic; neighbours
! computed by hand, rank = cx*PY + cy, i.e. row-major like MPI_Cart_create
! with dims = [PX, PY]).  Each rank owns a 24 x 24 block (weak scaling).
! Each iteration: MPI_Irecv from every existing neighbour, MPI_Isend to every
! existing neighbour (faces of 24 doubles), one MPI_Waitall, Jacobi update;
! every 5th iteration an MPI_Allreduce of the residual.  At the end the
! decomposition-independent field hash is summed with MPI_Reduce and rank 0
! compares it with a serial recomputation of the whole domain.
!
! Per-rank calls: Init 1, Finalize 1, Irecv = Isend = ITERS*neighbours,
! Waitall ITERS, Allreduce ITERS/5, Reduce 1.
module st2d
  implicit none
  integer, parameter :: nloc = 24
  integer(kind=8), parameter :: hp = 2147483647_8
contains
  real(kind=8) function init_value(gx, gy)
    integer, intent(in) :: gx, gy
    init_value = dble(mod(gx * 73 + gy * 151, 1009)) / 1009.0d0
  end function init_value

  ! hash of one point, independent of the decomposition
  integer(kind=8) function point_hash(v, gx, gy, gnx)
    real(kind=8), intent(in) :: v
    integer, intent(in) :: gx, gy, gnx
    integer(kind=8) :: bits, lo, hi
    bits = transfer(v, bits)
    lo = ibits(bits, 0, 32)
    hi = ibits(bits, 32, 32)
    point_hash = mod(mod(lo * 1000003_8 + hi, hp) * 31_8 + int(gy, 8) * gnx + gx, hp)
  end function point_hash

  ! one Jacobi sweep on u(0:nx+1, 0:ny+1) -> v, returns the residual
  real(kind=8) function jacobi(u, v, nx, ny)
    integer, intent(in) :: nx, ny
    real(kind=8), intent(in) :: u(0:nx + 1, 0:ny + 1)
    real(kind=8), intent(inout) :: v(0:nx + 1, 0:ny + 1)
    integer :: i, j
    jacobi = 0.0d0
    do j = 1, ny
      do i = 1, nx
        v(i, j) = 0.25d0 * (u(i - 1, j) + u(i + 1, j) + u(i, j - 1) + u(i, j + 1))
        jacobi = jacobi + (v(i, j) - u(i, j))**2
      end do
    end do
  end function jacobi
end module st2d

program stencil2d
  use mpi
  use st2d
  implicit none
  integer :: ierr, me, np, px, py, iters, cx, cy, it, nreq, i, j, d, gnx, gny
  integer :: nb(4)           ! west, east, south, north (MPI_PROC_NULL if none)
  integer :: req(8)
  character(len=32) :: arg
  real(kind=8), allocatable :: u(:, :), v(:, :), g(:, :), gv(:, :)
  real(kind=8), asynchronous :: sbuf(nloc, 4), rbuf(nloc, 4)
  real(kind=8) :: res, gres
  integer(kind=8) :: h, hsum, ref

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, me, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  if (command_argument_count() /= 3) call usage()
  call get_command_argument(1, arg)
  read(arg, *, iostat=ierr) px
  if (ierr /= 0) call usage()
  call get_command_argument(2, arg)
  read(arg, *, iostat=ierr) py
  if (ierr /= 0) call usage()
  call get_command_argument(3, arg)
  read(arg, *, iostat=ierr) iters
  if (ierr /= 0 .or. px < 1 .or. py < 1 .or. iters < 0) call usage()
  if (px * py /= np) call usage()

  cx = me / py
  cy = mod(me, py)
  nb = MPI_PROC_NULL
  if (cx > 0) nb(1) = (cx - 1) * py + cy
  if (cx < px - 1) nb(2) = (cx + 1) * py + cy
  if (cy > 0) nb(3) = cx * py + cy - 1
  if (cy < py - 1) nb(4) = cx * py + cy + 1
  gnx = px * nloc
  gny = py * nloc

  allocate(u(0:nloc + 1, 0:nloc + 1), v(0:nloc + 1, 0:nloc + 1))
  u = 0.0d0
  v = 0.0d0
  do j = 1, nloc
    do i = 1, nloc
      u(i, j) = init_value(cx * nloc + i - 1, cy * nloc + j - 1)
    end do
  end do

  gres = -1.0d0
  do it = 1, iters
    nreq = 0
    ! receives: from the west comes what it sent east (tag 2), etc.
    do d = 1, 4
      if (nb(d) /= MPI_PROC_NULL) then
        nreq = nreq + 1
        call MPI_Irecv(rbuf(:, d), nloc, MPI_DOUBLE_PRECISION, nb(d), opposite(d), &
                       MPI_COMM_WORLD, req(nreq), ierr)
      end if
    end do
    sbuf(:, 1) = u(1, 1:nloc)
    sbuf(:, 2) = u(nloc, 1:nloc)
    sbuf(:, 3) = u(1:nloc, 1)
    sbuf(:, 4) = u(1:nloc, nloc)
    do d = 1, 4
      if (nb(d) /= MPI_PROC_NULL) then
        nreq = nreq + 1
        call MPI_Isend(sbuf(:, d), nloc, MPI_DOUBLE_PRECISION, nb(d), d, MPI_COMM_WORLD, &
                       req(nreq), ierr)
      end if
    end do
    call MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE, ierr)
    if (nb(1) /= MPI_PROC_NULL) u(0, 1:nloc) = rbuf(:, 1)
    if (nb(2) /= MPI_PROC_NULL) u(nloc + 1, 1:nloc) = rbuf(:, 2)
    if (nb(3) /= MPI_PROC_NULL) u(1:nloc, 0) = rbuf(:, 3)
    if (nb(4) /= MPI_PROC_NULL) u(1:nloc, nloc + 1) = rbuf(:, 4)
    res = jacobi(u, v, nloc, nloc)
    u(1:nloc, 1:nloc) = v(1:nloc, 1:nloc)
    if (mod(it, 5) == 0) then
      call MPI_Allreduce(res, gres, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
      if (gres < res) call fail('allreduced residual smaller than local one')
    end if
  end do

  h = 0
  do j = 1, nloc
    do i = 1, nloc
      h = h + point_hash(u(i, j), cx * nloc + i - 1, cy * nloc + j - 1, gnx)
    end do
  end do
  call MPI_Reduce(h, hsum, 1, MPI_INTEGER8, MPI_SUM, 0, MPI_COMM_WORLD, ierr)

  if (me == 0) then
    ! serial reference on the whole domain
    allocate(g(0:gnx + 1, 0:gny + 1), gv(0:gnx + 1, 0:gny + 1))
    g = 0.0d0
    gv = 0.0d0
    do j = 1, gny
      do i = 1, gnx
        g(i, j) = init_value(i - 1, j - 1)
      end do
    end do
    do it = 1, iters
      res = jacobi(g, gv, gnx, gny)
      g(1:gnx, 1:gny) = gv(1:gnx, 1:gny)
    end do
    ref = 0
    do j = 1, gny
      do i = 1, gnx
        ref = ref + point_hash(g(i, j), i - 1, j - 1, gnx)
      end do
    end do
    if (ref /= hsum) call fail('hash differs from the serial reference')
    write(*, '(a,i0,a,i0,a,i0,a,i0,a,i0)') 'stencil2d grid=', px, 'x', py, ' global=', gnx, &
        'x', gny, ' iters=', iters
    if (gres >= 0.0d0) then
      write(*, '(a,es12.6)') 'residual=', gres
    else
      write(*, '(a)') 'residual=none'
    end if
    write(*, '(a,i0,a)') 'hash=', mod(hsum, hp), ' verify=ok'
  end if
  call MPI_Finalize(ierr)

contains
  integer function opposite(d)
    integer, intent(in) :: d
    opposite = merge(d + 1, d - 1, mod(d, 2) == 1)
  end function opposite

  subroutine usage()
    if (me == 0) write(0, '(a)') 'usage: stencil2d PX PY ITERS  (PX*PY == number of ranks)'
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end subroutine usage

  subroutine fail(msg)
    character(len=*), intent(in) :: msg
    write(0, '(a,i0,2a)') 'rank ', me, ': check failed: ', msg
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end subroutine fail
end program stencil2d
