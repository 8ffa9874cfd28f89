C     coverage_f77: MPI coverage test in fixed-form Fortran 77 style
C     (include 'mpif.h').  Needs 2 <= np <= 16.  Every received value
C     is validated (MPI_ABORT on mismatch); rank 0 prints a checksum.
C
C     Per-rank call counts (see manifest.toml):
C       Init 1, Finalize 1, Send 1, Ssend 1, Bsend 1, Rsend 1, Recv 5,
C       Sendrecv 2, Sendrecv_replace 1, Isend 8, Issend 1, Ibsend 1,
C       Irsend 1, Irecv 8, Send_init 1, Ssend_init 1, Recv_init 2,
C       Start 2, Startall 1, Request_free 4, Wait 19, Waitall 3,
C       Waitany 2, Waitsome >=1, Test >=2, Testall >=1, Testany >=2,
C       Testsome >=1, Probe 1, Iprobe >=1, Mprobe 1, Improbe >=1,
C       Mrecv 1, Imrecv 1, Barrier 3, Bcast 2, Reduce 2, Allreduce 3,
C       every other blocking collective 1, every I-collective 1,
C       Comm_dup 1, Comm_split 1, Comm_split_type 1, Comm_create 1,
C       Intercomm_create 1, Intercomm_merge 1 (Comm_free 2 more),
C       Cart_create 1, Neighbor_allgather 1, Cart_sub 1,
C       Graph_create 1, Dist_graph_create 1,
C       Dist_graph_create_adjacent 1, Comm_free 8 (+1 on even ranks),
C       Win_create 1, Win_fence 2, Put 1, Win_post 1, Win_start 1,
C       Accumulate 1, Win_complete 1, Win_wait 1, Win_lock 1, Get 1,
C       Win_unlock 1, Win_free 1 (and the window groups' Comm_group 1,
C       Group_incl 2, Group_free 3, recorded without detail),
C       File_open 1, File_write_at 1, File_read_at 1, File_close 1,
C       File_delete 1 on rank 0 (coverage_f77.dat in the working
C       directory).
      program covf77
      implicit none
      include 'mpif.h'
      integer me, np, left, right
      common /ids/ me, np, left, right
      integer*8 h
      common /hsh/ h
      integer sb(64), rb(64), sb2(64), rb2(64)
      integer req(4), sreq(4), idx(4)
      common /abuf/ sb, rb, sb2, rb2, req, sreq, idx
      integer bbuf(4096)
      common /bsbuf/ bbuf
      integer ierr, i, k, n, ndone, outcnt, aidx, cnt, provided
      integer status(MPI_STATUS_SIZE)
      integer stats(MPI_STATUS_SIZE, 4)
      integer msg
      integer ival(3), rival(3)
      double precision dval(2), rdval(2)
      common /botm/ dval, rdval, ival, rival
      integer(kind=MPI_ADDRESS_KIND) disp(2)
      integer blens(2), types(2), stype, rtype
      logical flag
      integer val
      external val
      integer*8 hsum
      integer ctype(3)
      common /ctypes/ ctype
      integer dup, split, shm, even, cart, crow, graph, dg, dga
      integer inter, merged
      integer wgrp, egrp, evens(16), ne, dims(2)
      logical periods(2), remain(2)
      integer gindex(16), gedges(32), nnb, isrc(1), idst(1), ideg(1)
      integer indeg, outdeg, iw1(1), iw2(1), nbrs(4)
      logical weighted
      double precision win(8), wput(2), wacc, wget
      common /rma/ win, wput, wacc, wget
      integer wh, glft, grgt
      integer(kind=MPI_ADDRESS_KIND) wsize, tdisp
      integer fio, iob(4), iob2(4)
      integer(kind=MPI_OFFSET_KIND) ioff

      call MPI_INIT(ierr)
      call MPI_COMM_RANK(MPI_COMM_WORLD, me, ierr)
      call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
      if (np .lt. 2 .or. np .gt. 16) then
         if (me .eq. 0) write(0,*) 'coverage_f77 needs 2..16 ranks'
         call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
      end if
      right = mod(me + 1, np)
      left = mod(me + np - 1, np)
      h = 0
      provided = 0

C     ---------------- blocking point-to-point ----------------
C     Send / Recv in token order
      do i = 1, 4
         sb(i) = val(me, 1, i)
      end do
      if (me .eq. 0) then
         call MPI_SEND(sb, 4, MPI_INTEGER, right, 1, MPI_COMM_WORLD,
     &                 ierr)
         call MPI_RECV(rb, 4, MPI_INTEGER, left, 1, MPI_COMM_WORLD,
     &                 status, ierr)
      else
         call MPI_RECV(rb, 4, MPI_INTEGER, left, 1, MPI_COMM_WORLD,
     &                 status, ierr)
         call MPI_SEND(sb, 4, MPI_INTEGER, right, 1, MPI_COMM_WORLD,
     &                 ierr)
      end if
      call chk(status(MPI_SOURCE) .eq. left .and.
     &         status(MPI_TAG) .eq. 1, 'recv status')
      call chkbuf(rb, 4, left, 1, 'send/recv')
C     Ssend / Recv in token order
      do i = 1, 4
         sb(i) = val(me, 2, i)
      end do
      if (me .eq. 0) then
         call MPI_SSEND(sb, 4, MPI_INTEGER, right, 2, MPI_COMM_WORLD,
     &                  ierr)
         call MPI_RECV(rb, 4, MPI_INTEGER, left, 2, MPI_COMM_WORLD,
     &                 MPI_STATUS_IGNORE, ierr)
      else
         call MPI_RECV(rb, 4, MPI_INTEGER, left, 2, MPI_COMM_WORLD,
     &                 MPI_STATUS_IGNORE, ierr)
         call MPI_SSEND(sb, 4, MPI_INTEGER, right, 2, MPI_COMM_WORLD,
     &                  ierr)
      end if
      call chkbuf(rb, 4, left, 2, 'ssend/recv')
C     Bsend / Recv
      call MPI_BUFFER_ATTACH(bbuf, 4 * 4096, ierr)
      do i = 1, 4
         sb(i) = val(me, 3, i)
      end do
      call MPI_BSEND(sb, 4, MPI_INTEGER, right, 3, MPI_COMM_WORLD, ierr)
      call MPI_RECV(rb, 4, MPI_INTEGER, left, 3, MPI_COMM_WORLD,
     &              MPI_STATUS_IGNORE, ierr)
      call chkbuf(rb, 4, left, 3, 'bsend/recv')
C     Pcontrol: a profiler context boundary (level 1)
      call MPI_PCONTROL(1)
C     Rsend after a pre-posted Irecv and a Barrier
      do i = 1, 4
         sb(i) = val(me, 4, i)
      end do
      call MPI_IRECV(rb, 4, MPI_INTEGER, left, 4, MPI_COMM_WORLD,
     &               req(1), ierr)
      call MPI_BARRIER(MPI_COMM_WORLD, ierr)
      call MPI_RSEND(sb, 4, MPI_INTEGER, right, 4, MPI_COMM_WORLD, ierr)
      call MPI_WAIT(req(1), MPI_STATUS_IGNORE, ierr)
      call chkbuf(rb, 4, left, 4, 'rsend')
C     Sendrecv, Sendrecv_replace
      do i = 1, 4
         sb(i) = val(me, 5, i)
      end do
      call MPI_SENDRECV(sb, 4, MPI_INTEGER, right, 5, rb, 4,
     &     MPI_INTEGER, left, 5, MPI_COMM_WORLD, status, ierr)
      call chk(status(MPI_SOURCE) .eq. left, 'sendrecv status')
      call chkbuf(rb, 4, left, 5, 'sendrecv')
      do i = 1, 4
         rb(i) = val(me, 6, i)
      end do
      call MPI_SENDRECV_REPLACE(rb, 4, MPI_INTEGER, right, 6, left, 6,
     &     MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call chkbuf(rb, 4, left, 6, 'sendrecv_replace')

C     ---------------- nonblocking point-to-point ----------------
C     Irecv / Isend / Waitall(MPI_STATUSES_IGNORE)
      do i = 1, 4
         sb(i) = val(me, 7, i)
      end do
      call MPI_IRECV(rb, 4, MPI_INTEGER, left, 7, MPI_COMM_WORLD,
     &               req(1), ierr)
      call MPI_ISEND(sb, 4, MPI_INTEGER, right, 7, MPI_COMM_WORLD,
     &               req(2), ierr)
      call MPI_WAITALL(2, req, MPI_STATUSES_IGNORE, ierr)
      call chkbuf(rb, 4, left, 7, 'isend/waitall')
C     Irecv / Issend / Waitany x2 (indices are 1-based)
      do i = 1, 4
         sb(i) = val(me, 8, i)
      end do
      call MPI_IRECV(rb, 4, MPI_INTEGER, left, 8, MPI_COMM_WORLD,
     &               req(1), ierr)
      call MPI_ISSEND(sb, 4, MPI_INTEGER, right, 8, MPI_COMM_WORLD,
     &                req(2), ierr)
      do k = 1, 2
         call MPI_WAITANY(2, req, idx(k), status, ierr)
         call chk(idx(k) .eq. 1 .or. idx(k) .eq. 2, 'waitany index')
         call chk(req(idx(k)) .eq. MPI_REQUEST_NULL, 'waitany req')
         if (idx(k) .eq. 1) call chk(status(MPI_SOURCE) .eq. left
     &        .and. status(MPI_TAG) .eq. 8, 'waitany status')
      end do
      call chk(idx(1) + idx(2) .eq. 3, 'waitany distinct indices')
      call chkbuf(rb, 4, left, 8, 'issend/waitany')
C     Irecv / Ibsend / Waitsome loop
      do i = 1, 4
         sb(i) = val(me, 9, i)
      end do
      call MPI_IRECV(rb, 4, MPI_INTEGER, left, 9, MPI_COMM_WORLD,
     &               req(1), ierr)
      call MPI_IBSEND(sb, 4, MPI_INTEGER, right, 9, MPI_COMM_WORLD,
     &                req(2), ierr)
      ndone = 0
   10 continue
      call MPI_WAITSOME(2, req, outcnt, idx, stats, ierr)
      call chk(outcnt .ge. 1 .and. outcnt .le. 2, 'waitsome count')
      do k = 1, outcnt
         call chk(idx(k) .eq. 1 .or. idx(k) .eq. 2, 'waitsome index')
      end do
      ndone = ndone + outcnt
      if (ndone .lt. 2) goto 10
      call chkbuf(rb, 4, left, 9, 'ibsend/waitsome')
C     Irecv / Barrier / Irsend / Test loops
      do i = 1, 4
         sb(i) = val(me, 10, i)
      end do
      call MPI_IRECV(rb, 4, MPI_INTEGER, left, 10, MPI_COMM_WORLD,
     &               req(1), ierr)
      call MPI_BARRIER(MPI_COMM_WORLD, ierr)
      call MPI_IRSEND(sb, 4, MPI_INTEGER, right, 10, MPI_COMM_WORLD,
     &                req(2), ierr)
   20 continue
      call MPI_TEST(req(1), flag, status, ierr)
      if (.not. flag) goto 20
      call chk(status(MPI_SOURCE) .eq. left, 'test status')
   21 continue
      call MPI_TEST(req(2), flag, MPI_STATUS_IGNORE, ierr)
      if (.not. flag) goto 21
      call chkbuf(rb, 4, left, 10, 'irsend/test')
C     Irecv / Isend / Testall loop
      do i = 1, 4
         sb(i) = val(me, 11, i)
      end do
      call MPI_IRECV(rb, 4, MPI_INTEGER, left, 11, MPI_COMM_WORLD,
     &               req(1), ierr)
      call MPI_ISEND(sb, 4, MPI_INTEGER, right, 11, MPI_COMM_WORLD,
     &               req(2), ierr)
   30 continue
      call MPI_TESTALL(2, req, flag, stats, ierr)
      if (.not. flag) goto 30
      call chk(stats(MPI_SOURCE, 1) .eq. left, 'testall status')
      call chkbuf(rb, 4, left, 11, 'isend/testall')
C     Irecv / Isend / Testany loop
      do i = 1, 4
         sb(i) = val(me, 12, i)
      end do
      call MPI_IRECV(rb, 4, MPI_INTEGER, left, 12, MPI_COMM_WORLD,
     &               req(1), ierr)
      call MPI_ISEND(sb, 4, MPI_INTEGER, right, 12, MPI_COMM_WORLD,
     &               req(2), ierr)
      ndone = 0
   40 continue
      call MPI_TESTANY(2, req, aidx, flag, status, ierr)
      if (flag) then
         call chk(aidx .eq. 1 .or. aidx .eq. 2, 'testany index')
         ndone = ndone + 1
      end if
      if (ndone .lt. 2) goto 40
      call chkbuf(rb, 4, left, 12, 'isend/testany')
C     Irecv / Isend / Testsome loop
      do i = 1, 4
         sb(i) = val(me, 13, i)
      end do
      call MPI_IRECV(rb, 4, MPI_INTEGER, left, 13, MPI_COMM_WORLD,
     &               req(1), ierr)
      call MPI_ISEND(sb, 4, MPI_INTEGER, right, 13, MPI_COMM_WORLD,
     &               req(2), ierr)
      ndone = 0
   50 continue
      call MPI_TESTSOME(2, req, outcnt, idx, MPI_STATUSES_IGNORE, ierr)
      call chk(outcnt .ne. MPI_UNDEFINED, 'testsome outcount')
      ndone = ndone + outcnt
      if (ndone .lt. 2) goto 50
      call chkbuf(rb, 4, left, 13, 'isend/testsome')

C     ---------------- persistent requests ----------------
      do i = 1, 4
         sb(i) = val(me, 41, i)
         sb2(i) = val(me, 42, i)
      end do
      call MPI_RECV_INIT(rb, 4, MPI_INTEGER, left, 41, MPI_COMM_WORLD,
     &                   req(1), ierr)
      call MPI_RECV_INIT(rb2, 4, MPI_INTEGER, right, 42,
     &                   MPI_COMM_WORLD, req(2), ierr)
      call MPI_SEND_INIT(sb, 4, MPI_INTEGER, right, 41, MPI_COMM_WORLD,
     &                   req(3), ierr)
      call MPI_SSEND_INIT(sb2, 4, MPI_INTEGER, left, 42,
     &                    MPI_COMM_WORLD, req(4), ierr)
      call MPI_STARTALL(2, req, ierr)
      call MPI_START(req(3), ierr)
      call MPI_START(req(4), ierr)
      call MPI_WAITALL(4, req, stats, ierr)
      call chk(stats(MPI_SOURCE, 1) .eq. left .and.
     &         stats(MPI_SOURCE, 2) .eq. right, 'persistent status')
      call chkbuf(rb, 4, left, 41, 'persistent from left')
      call chkbuf(rb2, 4, right, 42, 'persistent from right')
      do k = 1, 4
         call MPI_REQUEST_FREE(req(k), ierr)
         call chk(req(k) .eq. MPI_REQUEST_NULL, 'request_free')
      end do

C     ---------------- probes ----------------
      do k = 1, 4
         do i = 1, 4
            sb(16 * (k - 1) + i) = val(me, 50 + k, i)
         end do
         call MPI_ISEND(sb(16 * (k - 1) + 1), k, MPI_INTEGER, right,
     &                  50 + k, MPI_COMM_WORLD, sreq(k), ierr)
      end do
      call MPI_PROBE(MPI_ANY_SOURCE, 51, MPI_COMM_WORLD, status, ierr)
      call chk(status(MPI_SOURCE) .eq. left, 'probe source')
      call MPI_GET_COUNT(status, MPI_INTEGER, cnt, ierr)
      call chk(cnt .eq. 1, 'probe count')
      call MPI_RECV(rb, cnt, MPI_INTEGER, left, 51, MPI_COMM_WORLD,
     &              status, ierr)
      call chkbuf(rb, 1, left, 51, 'probe/recv')
   60 continue
      call MPI_IPROBE(left, 52, MPI_COMM_WORLD, flag, status, ierr)
      if (.not. flag) goto 60
      call MPI_GET_COUNT(status, MPI_INTEGER, cnt, ierr)
      call chk(cnt .eq. 2, 'iprobe count')
      call MPI_RECV(rb, cnt, MPI_INTEGER, left, 52, MPI_COMM_WORLD,
     &              MPI_STATUS_IGNORE, ierr)
      call chkbuf(rb, 2, left, 52, 'iprobe/recv')
      call MPI_MPROBE(left, 53, MPI_COMM_WORLD, msg, status, ierr)
      call MPI_GET_COUNT(status, MPI_INTEGER, cnt, ierr)
      call chk(cnt .eq. 3, 'mprobe count')
      call MPI_MRECV(rb, cnt, MPI_INTEGER, msg, status, ierr)
      call chk(msg .eq. MPI_MESSAGE_NULL, 'mrecv message handle')
      call chkbuf(rb, 3, left, 53, 'mprobe/mrecv')
   70 continue
      call MPI_IMPROBE(left, 54, MPI_COMM_WORLD, flag, msg, status,
     &                 ierr)
      if (.not. flag) goto 70
      call MPI_GET_COUNT(status, MPI_INTEGER, cnt, ierr)
      call chk(cnt .eq. 4, 'improbe count')
      call MPI_IMRECV(rb, cnt, MPI_INTEGER, msg, req(1), ierr)
      call MPI_WAIT(req(1), status, ierr)
      call chk(status(MPI_TAG) .eq. 54, 'imrecv status')
      call chkbuf(rb, 4, left, 54, 'improbe/imrecv')
      call MPI_WAITALL(4, sreq, MPI_STATUSES_IGNORE, ierr)

C     ---------------- MPI_BOTTOM with absolute-address struct types
      ival(1) = me
      ival(2) = 7 * me + 1
      ival(3) = -me
      dval(1) = 0.5d0 * me
      dval(2) = 1.0d0 / (me + 1)
      blens(1) = 3
      blens(2) = 2
      types(1) = MPI_INTEGER
      types(2) = MPI_DOUBLE_PRECISION
      call MPI_GET_ADDRESS(ival, disp(1), ierr)
      call MPI_GET_ADDRESS(dval, disp(2), ierr)
      call MPI_TYPE_CREATE_STRUCT(2, blens, disp, types, stype, ierr)
      call MPI_TYPE_COMMIT(stype, ierr)
      call MPI_GET_ADDRESS(rival, disp(1), ierr)
      call MPI_GET_ADDRESS(rdval, disp(2), ierr)
      call MPI_TYPE_CREATE_STRUCT(2, blens, disp, types, rtype, ierr)
      call MPI_TYPE_COMMIT(rtype, ierr)
      rival(1) = -99
      rdval(1) = -99.0d0
      call MPI_SENDRECV(MPI_BOTTOM, 1, stype, right, 61, MPI_BOTTOM,
     &     1, rtype, left, 61, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call chk(rival(1) .eq. left .and. rival(2) .eq. 7 * left + 1
     &     .and. rival(3) .eq. -left .and. rdval(1) .eq. 0.5d0 * left
     &     .and. rdval(2) .eq. 1.0d0 / (left + 1),
     &     'MPI_BOTTOM sendrecv')
      call absorb(rival(2))
      if (me .eq. 0) then
         call MPI_BCAST(MPI_BOTTOM, 1, stype, 0, MPI_COMM_WORLD, ierr)
      else
         call MPI_BCAST(MPI_BOTTOM, 1, rtype, 0, MPI_COMM_WORLD, ierr)
         call chk(rival(1) .eq. 0 .and. rival(2) .eq. 1 .and.
     &        rival(3) .eq. 0 .and. rdval(1) .eq. 0.0d0 .and.
     &        rdval(2) .eq. 1.0d0, 'MPI_BOTTOM bcast')
      end if
      call MPI_TYPE_FREE(stype, ierr)
      call MPI_TYPE_FREE(rtype, ierr)

C     ---------------- collectives ----------------
      do k = 1, 3
         call MPI_TYPE_CONTIGUOUS(k, MPI_INTEGER, ctype(k), ierr)
         call MPI_TYPE_COMMIT(ctype(k), ierr)
      end do
      call colls(.false.)
      call colls(.true.)
      do k = 1, 3
         call MPI_TYPE_FREE(ctype(k), ierr)
      end do

C     ---------------- communicators and topologies ----------------
      call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
      k = 1
      call MPI_ALLREDUCE(MPI_IN_PLACE, k, 1, MPI_INTEGER, MPI_SUM, dup,
     &                   ierr)
      call chk(k .eq. np, 'allreduce on dup')
      call MPI_COMM_SPLIT(MPI_COMM_WORLD, mod(me, 2), me, split, ierr)
      call MPI_ALLREDUCE(me, k, 1, MPI_INTEGER, MPI_SUM, split, ierr)
      n = 0
      do i = mod(me, 2), np - 1, 2
         n = n + i
      end do
      call chk(k .eq. n, 'allreduce on split')
      call absorb(k)
      call MPI_COMM_SPLIT_TYPE(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, me,
     &                         MPI_INFO_NULL, shm, ierr)
      call MPI_COMM_SIZE(shm, n, ierr)
      call chk(n .ge. 1 .and. n .le. np, 'split_type size')
      ne = (np + 1) / 2
      do i = 1, ne
         evens(i) = 2 * (i - 1)
      end do
      call MPI_COMM_GROUP(MPI_COMM_WORLD, wgrp, ierr)
      call MPI_GROUP_INCL(wgrp, ne, evens, egrp, ierr)
      call MPI_COMM_CREATE(MPI_COMM_WORLD, egrp, even, ierr)
      if (mod(me, 2) .eq. 0) then
         call MPI_COMM_SIZE(even, n, ierr)
         call chk(n .eq. ne, 'comm_create size')
      else
         call chk(even .eq. MPI_COMM_NULL, 'comm_create null')
      end if
      call MPI_GROUP_FREE(egrp, ierr)
      call MPI_GROUP_FREE(wgrp, ierr)
      dims(1) = 0
      dims(2) = 0
      call MPI_DIMS_CREATE(np, 2, dims, ierr)
      periods(1) = .true.
      periods(2) = .false.
      call MPI_CART_CREATE(MPI_COMM_WORLD, 2, dims, periods, .false.,
     &                     cart, ierr)
      remain(1) = .false.
      remain(2) = .true.
      call MPI_CART_SUB(cart, remain, crow, ierr)
      call MPI_COMM_SIZE(crow, n, ierr)
      call chk(n .eq. dims(2), 'cart_sub size')
C     the grid's four neighbours' ranks by one neighbourhood allgather
C     (the non-periodic edges' slots, MPI_PROC_NULL, keep their -1)
      do i = 1, 4
         nbrs(i) = -1
      end do
      call MPI_NEIGHBOR_ALLGATHER(me, 1, MPI_INTEGER, nbrs, 1,
     &                            MPI_INTEGER, cart, ierr)
      call MPI_CART_SHIFT(cart, 0, 1, isrc(1), idst(1), ierr)
      call chk(nbrs(1) .eq. isrc(1) .and. nbrs(2) .eq. idst(1),
     &         'neighbor_allgather')
C     ring graph (duplicate neighbours removed for np = 2)
      n = 0
      do i = 0, np - 1
         n = n + 1
         gedges(n) = mod(i + np - 1, np)
         if (mod(i + 1, np) .ne. gedges(n)) then
            n = n + 1
            gedges(n) = mod(i + 1, np)
         end if
         gindex(i + 1) = n
      end do
      call MPI_GRAPH_CREATE(MPI_COMM_WORLD, np, gindex, gedges,
     &                      .false., graph, ierr)
      call MPI_GRAPH_NEIGHBORS_COUNT(graph, me, nnb, ierr)
      call chk(nnb .eq. min(2, np - 1), 'graph neighbours')
      isrc(1) = me
      ideg(1) = 1
      idst(1) = right
      call MPI_DIST_GRAPH_CREATE(MPI_COMM_WORLD, 1, isrc, ideg, idst,
     &     MPI_UNWEIGHTED, MPI_INFO_NULL, .false., dg, ierr)
      call MPI_DIST_GRAPH_NEIGHBORS_COUNT(dg, indeg, outdeg, weighted,
     &                                    ierr)
      call chk(indeg .eq. 1 .and. outdeg .eq. 1 .and. .not. weighted,
     &         'dist_graph degrees')
      isrc(1) = left
      call MPI_DIST_GRAPH_CREATE_ADJACENT(MPI_COMM_WORLD, 1, isrc,
     &     MPI_UNWEIGHTED, 1, idst, MPI_UNWEIGHTED, MPI_INFO_NULL,
     &     .false., dga, ierr)
      call MPI_DIST_GRAPH_NEIGHBORS(dga, 1, isrc, iw1, 1, idst, iw2,
     &     ierr)
      call chk(isrc(1) .eq. left .and. idst(1) .eq. right,
     &         'dist_graph_adjacent neighbours')
      call MPI_COMM_FREE(dup, ierr)
C     The two halves of split (even and odd ranks) joined and merged.
      call MPI_INTERCOMM_CREATE(split, 0, MPI_COMM_WORLD,
     &     1 - mod(me, 2), 5, inter, ierr)
      call MPI_INTERCOMM_MERGE(inter, mod(me, 2) .eq. 1, merged, ierr)
      call MPI_COMM_FREE(merged, ierr)
      call MPI_COMM_FREE(inter, ierr)
      call MPI_COMM_FREE(split, ierr)
      call MPI_COMM_FREE(shm, ierr)
      if (even .ne. MPI_COMM_NULL) call MPI_COMM_FREE(even, ierr)
      call MPI_COMM_FREE(crow, ierr)
      call MPI_COMM_FREE(cart, ierr)
      call MPI_COMM_FREE(graph, ierr)
      call MPI_COMM_FREE(dg, ierr)
      call MPI_COMM_FREE(dga, ierr)
      call chk(dga .eq. MPI_COMM_NULL, 'comm_free handle')

C     ---------------- one-sided communication ----------------
C     The window (in a common block, so that the compiler reloads it
C     after the synchronisation calls) holds 8 doubles.
      do i = 1, 8
         win(i) = 0.0d0
      end do
      wsize = 64
      call MPI_WIN_CREATE(win, wsize, 8, MPI_INFO_NULL,
     &                    MPI_COMM_WORLD, wh, ierr)
C     Fence epoch: Put 2 doubles to the right neighbour's win(1:2)
      call MPI_WIN_FENCE(0, wh, ierr)
      wput(1) = dble(me + 1)
      wput(2) = dble(me + 2)
      tdisp = 0
      call MPI_PUT(wput, 2, MPI_DOUBLE_PRECISION, right, tdisp, 2,
     &             MPI_DOUBLE_PRECISION, wh, ierr)
      call MPI_WIN_FENCE(0, wh, ierr)
      call chk(win(1) .eq. dble(left + 1) .and.
     &         win(2) .eq. dble(left + 2), 'put/fence')
C     PSCW epoch: exposed to the left, accessing the right neighbour;
C     Accumulate (MPI_SUM) rank into the right neighbour's win(3)
      call MPI_COMM_GROUP(MPI_COMM_WORLD, wgrp, ierr)
      isrc(1) = left
      call MPI_GROUP_INCL(wgrp, 1, isrc, glft, ierr)
      idst(1) = right
      call MPI_GROUP_INCL(wgrp, 1, idst, grgt, ierr)
      call MPI_WIN_POST(glft, 0, wh, ierr)
      call MPI_WIN_START(grgt, 0, wh, ierr)
      wacc = dble(me)
      tdisp = 2
      call MPI_ACCUMULATE(wacc, 1, MPI_DOUBLE_PRECISION, right, tdisp,
     &     1, MPI_DOUBLE_PRECISION, MPI_SUM, wh, ierr)
      call MPI_WIN_COMPLETE(wh, ierr)
      call MPI_WIN_WAIT(wh, ierr)
      call chk(win(3) .eq. dble(left), 'accumulate/pscw')
      call MPI_GROUP_FREE(glft, ierr)
      call MPI_GROUP_FREE(grgt, ierr)
      call MPI_GROUP_FREE(wgrp, ierr)
C     Passive target: Get back what this rank put in the fence epoch
      wget = -1.0d0
      tdisp = 0
      call MPI_WIN_LOCK(MPI_LOCK_SHARED, right, 0, wh, ierr)
      call MPI_GET(wget, 1, MPI_DOUBLE_PRECISION, right, tdisp, 1,
     &             MPI_DOUBLE_PRECISION, wh, ierr)
      call MPI_WIN_UNLOCK(right, wh, ierr)
      call chk(wget .eq. dble(me + 1), 'get/lock')
      call MPI_WIN_FREE(wh, ierr)
      call chk(wh .eq. MPI_WIN_NULL, 'win_free handle')

C     ---------------- MPI-IO ----------------
C     Each rank writes 4 integers at byte 16*rank of one file, reads
C     them back and closes it; rank 0 deletes it. The write is
C     independent: after MPI_FILE_WRITE_AT_ALL, Open MPI 4.1's ompio
C     returns on ranks whose data its aggregator has not written yet.
      call MPI_FILE_OPEN(MPI_COMM_WORLD, 'coverage_f77.dat',
     &                   MPI_MODE_CREATE + MPI_MODE_RDWR,
     &                   MPI_INFO_NULL, fio, ierr)
      do i = 1, 4
         iob(i) = me + i - 1
         iob2(i) = -1
      end do
      ioff = 16 * me
      call MPI_FILE_WRITE_AT(fio, ioff, iob, 4, MPI_INTEGER,
     &                       MPI_STATUS_IGNORE, ierr)
      call MPI_FILE_READ_AT(fio, ioff, iob2, 4, MPI_INTEGER,
     &                      MPI_STATUS_IGNORE, ierr)
      do i = 1, 4
         call chk(iob2(i) .eq. iob(i), 'file write/read')
      end do
      call MPI_FILE_CLOSE(fio, ierr)
      if (me .eq. 0) then
         call MPI_FILE_DELETE('coverage_f77.dat', MPI_INFO_NULL, ierr)
      end if

      call MPI_BUFFER_DETACH(bbuf, n, ierr)
      hsum = 0
      call MPI_REDUCE(h, hsum, 1, MPI_INTEGER8, MPI_SUM, 0,
     &                MPI_COMM_WORLD, ierr)
      if (me .eq. 0) write(*, '(a,i0,a,i0,a)') 'coverage_f77 np=', np,
     &     ' checksum=', hsum, ' verify=ok'
      call MPI_FINALIZE(ierr)
      end

C     value sent by rank a in section b, element c
      integer function val(a, b, c)
      implicit none
      integer a, b, c
      val = a * 100000 + b * 100 + c
      end

      subroutine chk(ok, what)
      implicit none
      include 'mpif.h'
      logical ok
      character*(*) what
      integer ierr, me
      if (.not. ok) then
         call MPI_COMM_RANK(MPI_COMM_WORLD, me, ierr)
         write(0, *) 'rank ', me, ': check failed: ', what
         call MPI_ABORT(MPI_COMM_WORLD, 2, ierr)
      end if
      end

      subroutine absorb(v)
      implicit none
      integer v
      integer*8 h
      common /hsh/ h
      h = mod(h * 131_8 + int(v, 8) + 7_8, 1000000007_8)
      end

C     check buf(1:n) == val(src, sec, 1:n) and fold it into the hash
      subroutine chkbuf(buf, n, src, sec, what)
      implicit none
      integer n, buf(n), src, sec, i, val
      external val
      character*(*) what
      do i = 1, n
         call chk(buf(i) .eq. val(src, sec, i), what)
         call absorb(buf(i))
      end do
      end

C     Every collective once; nb = .true. uses the I-form + MPI_WAIT.
      subroutine colls(nb)
      implicit none
      include 'mpif.h'
      logical nb
      integer me, np, left, right
      common /ids/ me, np, left, right
      integer ctype(3)
      common /ctypes/ ctype
      integer sb(256), rb(256)
      integer sc(16), sd(16), rc(16), rd(16), st(16), rt(16)
      common /cbuf/ sb, rb
      integer ierr, req, i, q, e, s, root, tot, off, val
      external val

      s = 100
      if (nb) s = 200
C     Barrier
      if (nb) then
         call MPI_IBARRIER(MPI_COMM_WORLD, req, ierr)
         call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
      else
         call MPI_BARRIER(MPI_COMM_WORLD, ierr)
      end if
C     Bcast from the last rank
      root = np - 1
      do i = 1, 5
         rb(i) = -1
         if (me .eq. root) rb(i) = val(root, s + 1, i)
      end do
      if (nb) then
         call MPI_IBCAST(rb, 5, MPI_INTEGER, root, MPI_COMM_WORLD, req,
     &                   ierr)
         call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
      else
         call MPI_BCAST(rb, 5, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
      end if
      call chkbuf(rb, 5, root, s + 1, 'bcast')
C     Reduce with MPI_IN_PLACE at the root (rank 0)
      do i = 1, 4
         sb(i) = val(me, s + 2, i)
         rb(i) = sb(i)
      end do
      if (me .eq. 0) then
         if (nb) then
            call MPI_IREDUCE(MPI_IN_PLACE, rb, 4, MPI_INTEGER, MPI_SUM,
     &                       0, MPI_COMM_WORLD, req, ierr)
            call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
         else
            call MPI_REDUCE(MPI_IN_PLACE, rb, 4, MPI_INTEGER, MPI_SUM,
     &                      0, MPI_COMM_WORLD, ierr)
         end if
         do i = 1, 4
            e = 0
            do q = 0, np - 1
               e = e + val(q, s + 2, i)
            end do
            call chk(rb(i) .eq. e, 'reduce in place')
            call absorb(rb(i))
         end do
      else
         if (nb) then
            call MPI_IREDUCE(sb, rb, 4, MPI_INTEGER, MPI_SUM, 0,
     &                       MPI_COMM_WORLD, req, ierr)
            call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
         else
            call MPI_REDUCE(sb, rb, 4, MPI_INTEGER, MPI_SUM, 0,
     &                      MPI_COMM_WORLD, ierr)
         end if
      end if
C     Allreduce with MPI_IN_PLACE
      do i = 1, 3
         rb(i) = val(me, s + 3, i)
      end do
      if (nb) then
         call MPI_IALLREDUCE(MPI_IN_PLACE, rb, 3, MPI_INTEGER, MPI_SUM,
     &                       MPI_COMM_WORLD, req, ierr)
         call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
      else
         call MPI_ALLREDUCE(MPI_IN_PLACE, rb, 3, MPI_INTEGER, MPI_SUM,
     &                      MPI_COMM_WORLD, ierr)
      end if
      do i = 1, 3
         e = 0
         do q = 0, np - 1
            e = e + val(q, s + 3, i)
         end do
         call chk(rb(i) .eq. e, 'allreduce in place')
         call absorb(rb(i))
      end do
C     Gather to rank 1: 2 per rank
      root = 1
      do i = 1, 2
         sb(i) = val(me, s + 4, i)
      end do
      if (nb) then
         call MPI_IGATHER(sb, 2, MPI_INTEGER, rb, 2, MPI_INTEGER, root,
     &                    MPI_COMM_WORLD, req, ierr)
         call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
      else
         call MPI_GATHER(sb, 2, MPI_INTEGER, rb, 2, MPI_INTEGER, root,
     &                   MPI_COMM_WORLD, ierr)
      end if
      if (me .eq. root) then
         do q = 0, np - 1
            call chkbuf(rb(2 * q + 1), 2, q, s + 4, 'gather')
         end do
      end if
C     Gatherv to rank 0: q sends mod(q,3)+1, one-element gaps
      tot = 0
      do q = 0, np - 1
         rc(q + 1) = mod(q, 3) + 1
         rd(q + 1) = tot
         tot = tot + rc(q + 1) + 1
      end do
      do i = 1, mod(me, 3) + 1
         sb(i) = val(me, s + 5, i)
      end do
      if (nb) then
         call MPI_IGATHERV(sb, mod(me, 3) + 1, MPI_INTEGER, rb, rc, rd,
     &                     MPI_INTEGER, 0, MPI_COMM_WORLD, req, ierr)
         call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
      else
         call MPI_GATHERV(sb, mod(me, 3) + 1, MPI_INTEGER, rb, rc, rd,
     &                    MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
      end if
      if (me .eq. 0) then
         do q = 0, np - 1
            call chkbuf(rb(rd(q + 1) + 1), rc(q + 1), q, s + 5,
     &                  'gatherv')
         end do
      end if
C     Scatter from rank 0: 3 per rank
      if (me .eq. 0) then
         do q = 0, np - 1
            do i = 1, 3
               sb(3 * q + i) = val(q, s + 6, i)
            end do
         end do
      end if
      if (nb) then
         call MPI_ISCATTER(sb, 3, MPI_INTEGER, rb, 3, MPI_INTEGER, 0,
     &                     MPI_COMM_WORLD, req, ierr)
         call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
      else
         call MPI_SCATTER(sb, 3, MPI_INTEGER, rb, 3, MPI_INTEGER, 0,
     &                    MPI_COMM_WORLD, ierr)
      end if
      call chkbuf(rb, 3, me, s + 6, 'scatter')
C     Scatterv from the last rank: q gets mod(q,4)+1, reversed order
      root = np - 1
      tot = 0
      do q = np - 1, 0, -1
         sc(q + 1) = mod(q, 4) + 1
         sd(q + 1) = tot
         tot = tot + sc(q + 1)
      end do
      if (me .eq. root) then
         do q = 0, np - 1
            do i = 1, sc(q + 1)
               sb(sd(q + 1) + i) = val(q, s + 7, i)
            end do
         end do
      end if
      if (nb) then
         call MPI_ISCATTERV(sb, sc, sd, MPI_INTEGER, rb, mod(me, 4) + 1,
     &        MPI_INTEGER, root, MPI_COMM_WORLD, req, ierr)
         call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
      else
         call MPI_SCATTERV(sb, sc, sd, MPI_INTEGER, rb, mod(me, 4) + 1,
     &        MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
      end if
      call chkbuf(rb, mod(me, 4) + 1, me, s + 7, 'scatterv')
C     Allgather: 2 per rank
      do i = 1, 2
         sb(i) = val(me, s + 8, i)
      end do
      if (nb) then
         call MPI_IALLGATHER(sb, 2, MPI_INTEGER, rb, 2, MPI_INTEGER,
     &                       MPI_COMM_WORLD, req, ierr)
         call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
      else
         call MPI_ALLGATHER(sb, 2, MPI_INTEGER, rb, 2, MPI_INTEGER,
     &                      MPI_COMM_WORLD, ierr)
      end if
      do q = 0, np - 1
         call chkbuf(rb(2 * q + 1), 2, q, s + 8, 'allgather')
      end do
C     Allgatherv: q contributes mod(q,2)+1
      tot = 0
      do q = 0, np - 1
         rc(q + 1) = mod(q, 2) + 1
         rd(q + 1) = tot
         tot = tot + rc(q + 1)
      end do
      do i = 1, mod(me, 2) + 1
         sb(i) = val(me, s + 9, i)
      end do
      if (nb) then
         call MPI_IALLGATHERV(sb, mod(me, 2) + 1, MPI_INTEGER, rb, rc,
     &        rd, MPI_INTEGER, MPI_COMM_WORLD, req, ierr)
         call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
      else
         call MPI_ALLGATHERV(sb, mod(me, 2) + 1, MPI_INTEGER, rb, rc,
     &        rd, MPI_INTEGER, MPI_COMM_WORLD, ierr)
      end if
      do q = 0, np - 1
         call chkbuf(rb(rd(q + 1) + 1), rc(q + 1), q, s + 9,
     &               'allgatherv')
      end do
C     Alltoall: 2 per pair, value identifies (sender, receiver)
      do q = 0, np - 1
         do i = 1, 2
            sb(2 * q + i) = val(me * np + q, s + 10, i)
         end do
      end do
      if (nb) then
         call MPI_IALLTOALL(sb, 2, MPI_INTEGER, rb, 2, MPI_INTEGER,
     &                      MPI_COMM_WORLD, req, ierr)
         call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
      else
         call MPI_ALLTOALL(sb, 2, MPI_INTEGER, rb, 2, MPI_INTEGER,
     &                     MPI_COMM_WORLD, ierr)
      end if
      do q = 0, np - 1
         call chkbuf(rb(2 * q + 1), 2, q * np + me, s + 10, 'alltoall')
      end do
C     Alltoallv: a sends mod(a+b,3)+1 to b
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
            sb(sd(q + 1) + i) = val(me * np + q, s + 11, i)
         end do
      end do
      if (nb) then
         call MPI_IALLTOALLV(sb, sc, sd, MPI_INTEGER, rb, rc, rd,
     &        MPI_INTEGER, MPI_COMM_WORLD, req, ierr)
         call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
      else
         call MPI_ALLTOALLV(sb, sc, sd, MPI_INTEGER, rb, rc, rd,
     &        MPI_INTEGER, MPI_COMM_WORLD, ierr)
      end if
      do q = 0, np - 1
         call chkbuf(rb(rd(q + 1) + 1), rc(q + 1), q * np + me, s + 11,
     &               'alltoallv')
      end do
C     Alltoallw: a sends one ctype(mod(a+2b,3)+1) to b, b receives
C     mod(a+2b,3)+1 MPI_INTEGERs; displacements in bytes.
C     The I-form sends MPI_INTEGERs instead: Open MPI 4.1.4's Fortran
C     MPI_IALLTOALLW crashes in MPI_WAIT when given derived datatypes
C     (the binding's release_arrays overwrite the retained type arrays).
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
            sb(tot + i) = val(me * np + q, s + 12, i)
         end do
         tot = tot + e
         rc(q + 1) = mod(q + 2 * me, 3) + 1
         rt(q + 1) = MPI_INTEGER
         rd(q + 1) = 4 * off
         off = off + rc(q + 1)
      end do
      if (nb) then
         call MPI_IALLTOALLW(sb, sc, sd, st, rb, rc, rd, rt,
     &        MPI_COMM_WORLD, req, ierr)
         call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
      else
         call MPI_ALLTOALLW(sb, sc, sd, st, rb, rc, rd, rt,
     &        MPI_COMM_WORLD, ierr)
      end if
      do q = 0, np - 1
         call chkbuf(rb(rd(q + 1) / 4 + 1), rc(q + 1), q * np + me,
     &               s + 12, 'alltoallw')
      end do
C     Reduce_scatter: q gets mod(q,3)+1 elements
      tot = 0
      off = 0
      do q = 0, np - 1
         rc(q + 1) = mod(q, 3) + 1
         if (q .eq. me) off = tot
         tot = tot + rc(q + 1)
      end do
      do i = 1, tot
         sb(i) = val(me, s + 13, i)
      end do
      if (nb) then
         call MPI_IREDUCE_SCATTER(sb, rb, rc, MPI_INTEGER, MPI_SUM,
     &        MPI_COMM_WORLD, req, ierr)
         call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
      else
         call MPI_REDUCE_SCATTER(sb, rb, rc, MPI_INTEGER, MPI_SUM,
     &        MPI_COMM_WORLD, ierr)
      end if
      do i = 1, rc(me + 1)
         e = 0
         do q = 0, np - 1
            e = e + val(q, s + 13, off + i)
         end do
         call chk(rb(i) .eq. e, 'reduce_scatter')
         call absorb(rb(i))
      end do
C     Reduce_scatter_block: 2 per rank
      do i = 1, 2 * np
         sb(i) = val(me, s + 14, i)
      end do
      if (nb) then
         call MPI_IREDUCE_SCATTER_BLOCK(sb, rb, 2, MPI_INTEGER, MPI_SUM,
     &        MPI_COMM_WORLD, req, ierr)
         call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
      else
         call MPI_REDUCE_SCATTER_BLOCK(sb, rb, 2, MPI_INTEGER, MPI_SUM,
     &        MPI_COMM_WORLD, ierr)
      end if
      do i = 1, 2
         e = 0
         do q = 0, np - 1
            e = e + val(q, s + 14, 2 * me + i)
         end do
         call chk(rb(i) .eq. e, 'reduce_scatter_block')
         call absorb(rb(i))
      end do
C     Scan and Exscan
      do i = 1, 2
         sb(i) = val(me, s + 15, i)
      end do
      if (nb) then
         call MPI_ISCAN(sb, rb, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD,
     &                  req, ierr)
         call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
      else
         call MPI_SCAN(sb, rb, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD,
     &                 ierr)
      end if
      do i = 1, 2
         e = 0
         do q = 0, me
            e = e + val(q, s + 15, i)
         end do
         call chk(rb(i) .eq. e, 'scan')
         call absorb(rb(i))
      end do
      if (nb) then
         call MPI_IEXSCAN(sb, rb, 2, MPI_INTEGER, MPI_SUM,
     &                    MPI_COMM_WORLD, req, ierr)
         call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
      else
         call MPI_EXSCAN(sb, rb, 2, MPI_INTEGER, MPI_SUM,
     &                   MPI_COMM_WORLD, ierr)
      end if
      if (me .gt. 0) then
         do i = 1, 2
            e = 0
            do q = 0, me - 1
               e = e + val(q, s + 15, i)
            end do
            call chk(rb(i) .eq. e, 'exscan')
            call absorb(rb(i))
         end do
      end if
      end
