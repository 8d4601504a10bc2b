! mpi_f08 bindings: MPI_Barrier / MPI_Bcast / MPI_Allreduce / MPI_Reduce / MPI_Allgather /
! MPI_Gather / MPI_Scatter / MPI_Alltoall / MPI_Alltoallw / MPI_Reduce_scatter_block /
! MPI_Scan / MPI_Neighbor_allgather / MPI_Neighbor_alltoall through the f08 module must
! reach libnumacoll_mpi (20 allreduces and 10 reduces before the final one, one call of
! each of the others; the neighbourhood ones on an open line, whose ends have
! MPI_PROC_NULL neighbours)
program f08_test
  use mpi_f08
  implicit none
  integer :: rank, nprocs, it, bad, total
  integer :: v(4), i
  double precision :: d(300)
  real :: r(5)
  integer :: g(64), wcnt(32), wsd(32), wrd(32)
  type(MPI_Datatype) :: wtyp(32)
  type(MPI_Comm) :: line
  integer :: nb(2), nbr(2), left, right
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  bad = 0
  do it = 1, 30
    call MPI_Barrier(MPI_COMM_WORLD)
    v = -1
    if (rank == 0) v = it
    call MPI_Bcast(v, 4, MPI_INTEGER, 0, MPI_COMM_WORLD)
    if (any(v /= it)) bad = bad + 1
  end do
  do it = 1, 10
    do i = 1, 300
      d(i) = 0.5d0 * (rank + 1) * (i + it)
    end do
    call MPI_Allreduce(MPI_IN_PLACE, d, 300, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
    do i = 1, 300
      if (d(i) /= 0.25d0 * nprocs * (nprocs + 1) * (i + it)) bad = bad + 1
    end do
    v = rank * it
    call MPI_Allreduce(v, v(3), 2, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD)
    if (any(v(3:4) /= (nprocs - 1) * it)) bad = bad + 1
    r = rank + 0.5
    if (rank == mod(it, nprocs)) then
      call MPI_Reduce(MPI_IN_PLACE, r, 5, MPI_REAL, MPI_SUM, mod(it, nprocs), MPI_COMM_WORLD)
      if (any(r /= 0.5 * nprocs * nprocs)) bad = bad + 1
    else
      call MPI_Reduce(r, r, 5, MPI_REAL, MPI_SUM, mod(it, nprocs), MPI_COMM_WORLD)
    end if
  end do
  ! the gather family: each rank's 2 integers to everyone, then to the last rank
  v(1:2) = (/ rank, -rank /)
  call MPI_Allgather(v, 2, MPI_INTEGER, g, 2, MPI_INTEGER, MPI_COMM_WORLD)
  do i = 0, nprocs - 1
    if (g(2 * i + 1) /= i .or. g(2 * i + 2) /= -i) bad = bad + 1
  end do
  g = -7
  v(1:2) = (/ 3 * rank, 1 /)
  call MPI_Gather(v, 2, MPI_INTEGER, g, 2, MPI_INTEGER, nprocs - 1, MPI_COMM_WORLD)
  if (rank == nprocs - 1) then
    do i = 0, nprocs - 1
      if (g(2 * i + 1) /= 3 * i .or. g(2 * i + 2) /= 1) bad = bad + 1
    end do
  end if
  ! MPI_Alltoall: rank r sends rank d the integer 10 * r + d
  do i = 0, nprocs - 1
    g(i + 1) = 10 * rank + i
  end do
  g(33:32 + nprocs) = -1
  call MPI_Alltoall(g, 1, MPI_INTEGER, g(33), 1, MPI_INTEGER, MPI_COMM_WORLD)
  do i = 0, nprocs - 1
    if (g(33 + i) /= 10 * i + rank) bad = bad + 1
  end do
  ! MPI_Alltoallw: rank r sends rank d the integer 100 * r + d (byte displacements 4 * d),
  ! received at byte 8 * r of g(33:): the integers between stay
  do i = 0, nprocs - 1
    g(i + 1) = 100 * rank + i
    wcnt(i + 1) = 1
    wsd(i + 1) = 4 * i
    wrd(i + 1) = 8 * i
    wtyp(i + 1) = MPI_INTEGER
  end do
  g(33:64) = -1
  call MPI_Alltoallw(g, wcnt, wsd, wtyp, g(33), wcnt, wrd, wtyp, MPI_COMM_WORLD)
  do i = 0, nprocs - 1
    if (g(33 + 2 * i) /= 100 * i + rank .or. g(34 + 2 * i) /= -1) bad = bad + 1
  end do
  ! MPI_Scatter from rank 0: rank d gets 7 * d + 1
  do i = 0, nprocs - 1
    g(i + 1) = 7 * i + 1
  end do
  v = -1
  call MPI_Scatter(g, 1, MPI_INTEGER, v, 1, MPI_INTEGER, 0, MPI_COMM_WORLD)
  if (v(1) /= 7 * rank + 1 .or. v(2) /= -1) bad = bad + 1
  ! MPI_Reduce_scatter_block: element j of every rank is rank + j; rank d gets the sum of
  ! its element d over the ranks
  do i = 0, nprocs - 1
    g(i + 1) = rank + i
  end do
  v = -1
  call MPI_Reduce_scatter_block(g, v, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (v(1) /= nprocs * (nprocs - 1) / 2 + nprocs * rank .or. v(2) /= -1) bad = bad + 1
  ! MPI_Scan: the prefix sums of rank + 1
  v(1) = rank + 1
  call MPI_Scan(v, v(3), 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (v(3) /= (rank + 1) * (rank + 2) / 2) bad = bad + 1
  ! the neighbourhood collectives on an open line: the ends' missing neighbours are
  ! MPI_PROC_NULL, whose slots stay as they were
  call MPI_Cart_create(MPI_COMM_WORLD, 1, (/ nprocs /), (/ .false. /), .false., line)
  call MPI_Cart_shift(line, 0, 1, left, right)
  nb = (/ 1000 + rank, 2000 + rank /)
  nbr = -5
  call MPI_Neighbor_allgather(nb, 1, MPI_INTEGER, nbr, 1, MPI_INTEGER, line)
  if (left /= MPI_PROC_NULL .and. nbr(1) /= 1000 + left) bad = bad + 1
  if (left == MPI_PROC_NULL .and. nbr(1) /= -5) bad = bad + 1
  if (right /= MPI_PROC_NULL .and. nbr(2) /= 1000 + right) bad = bad + 1
  if (right == MPI_PROC_NULL .and. nbr(2) /= -5) bad = bad + 1
  ! the block for the left neighbour is nb(1), for the right one nb(2): a rank receives
  ! its left neighbour's nb(2) and its right neighbour's nb(1)
  nbr = -5
  call MPI_Neighbor_alltoall(nb, 1, MPI_INTEGER, nbr, 1, MPI_INTEGER, line)
  if (left /= MPI_PROC_NULL .and. nbr(1) /= 2000 + left) bad = bad + 1
  if (left == MPI_PROC_NULL .and. nbr(1) /= -5) bad = bad + 1
  if (right /= MPI_PROC_NULL .and. nbr(2) /= 1000 + right) bad = bad + 1
  if (right == MPI_PROC_NULL .and. nbr(2) /= -5) bad = bad + 1
  call MPI_Comm_free(line)
  call MPI_Allreduce(bad, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0 .and. total == 0) print '(a)', 'f08: PASS'
  if (rank == 0 .and. total /= 0) print '(a,i0)', 'f08: FAIL ', total
  call MPI_Finalize()
  if (total /= 0) stop 1
end program f08_test
