! A Fortran MPI program (mpif.h, whose entry points are mpi_barrier_, mpi_bcast_,
! mpi_allreduce_, mpi_reduce_, mpi_scan_, mpi_reduce_scatter_block_; the subroutine reductions_usempi through `use mpi`): its calls
! must go through libnumacoll_mpi (checked by the test from the NUMACOLL_MPI_STATS=1 report:
! "fortran N" with N > 0, and how many allreduces and reduces numacoll ran) and give correct
! results.

! The Fortran types numacoll maps beyond the basic ones, through `use mpi`: MPI_INTEGER8
! (sums past 32 bits), MPI_LOGICAL (LAND, LOR, LXOR), MPI_2REAL and MPI_2INTEGER (MINLOC and
! MAXLOC, ties to the smaller index), MPI_2DOUBLE_PRECISION (MAXLOC to the last rank):
! 7 allreduces, 1 reduce; bad counts wrong values
subroutine reductions_kinds(bad)
  use mpi
  implicit none
  integer, intent(inout) :: bad
  integer :: ierr, rank, nprocs, i
  integer(kind=8) :: i8(5), big
  logical :: l(4)
  real :: r2(2, 3)
  integer :: i2(2, 2)
  double precision :: d2(2, 2)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  big = 2_8**40
  do i = 1, 5
    i8(i) = big * i + rank
  end do
  call MPI_Allreduce(MPI_IN_PLACE, i8, 5, MPI_INTEGER8, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, 5
    if (i8(i) /= big * i * nprocs + nprocs * (nprocs - 1) / 2) bad = bad + 1
  end do
  ! l(1) true on rank 0 only; l(2) true everywhere; l(3) false everywhere; l(4) on odd ranks
  l = (/ rank == 0, .true., .false., mod(rank, 2) == 1 /)
  call MPI_Allreduce(MPI_IN_PLACE, l, 4, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  if ((l(1) .neqv. (nprocs == 1)) .or. .not. l(2) .or. l(3) .or. l(4)) bad = bad + 1
  l = (/ rank == 0, .true., .false., mod(rank, 2) == 1 /)
  call MPI_Allreduce(MPI_IN_PLACE, l, 4, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, ierr)
  if (.not. l(1) .or. .not. l(2) .or. l(3) .or. (l(4) .neqv. (nprocs > 1))) bad = bad + 1
  l = (/ rank == 0, .true., .false., mod(rank, 2) == 1 /)
  call MPI_Allreduce(MPI_IN_PLACE, l, 4, MPI_LOGICAL, MPI_LXOR, MPI_COMM_WORLD, ierr)
  if (.not. l(1) .or. (l(2) .neqv. (mod(nprocs, 2) == 1)) .or. l(3) .or. &
      (l(4) .neqv. (mod(nprocs / 2, 2) == 1))) bad = bad + 1
  ! (value, index) pairs: value rank mod 2 (ties), the rank's own index, and one pair whose
  ! value is the rank
  do i = 1, 3
    r2(1, i) = real(mod(rank + i, 2))
    r2(2, i) = real(rank)
  end do
  call MPI_Allreduce(MPI_IN_PLACE, r2, 3, MPI_2REAL, MPI_MINLOC, MPI_COMM_WORLD, ierr)
  do i = 1, 3 ! the smallest value is 0, first held by rank mod(i, 2) (ties: smaller index)
    if (r2(1, i) /= 0.0 .or. r2(2, i) /= real(mod(i, 2))) bad = bad + 1
  end do
  do i = 1, 3
    r2(1, i) = real(mod(rank + i, 2))
    r2(2, i) = real(rank)
  end do
  call MPI_Allreduce(MPI_IN_PLACE, r2, 3, MPI_2REAL, MPI_MAXLOC, MPI_COMM_WORLD, ierr)
  do i = 1, 3 ! the largest is 1 where some rank has it, first held by rank mod(i + 1, 2)
    if (nprocs > 1 .and. (r2(1, i) /= 1.0 .or. r2(2, i) /= real(mod(i + 1, 2)))) bad = bad + 1
  end do
  i2(:, 1) = (/ 7, rank /)      ! all tie: index 0
  i2(:, 2) = (/ -rank, rank /)  ! smallest on the last rank
  call MPI_Allreduce(MPI_IN_PLACE, i2, 2, MPI_2INTEGER, MPI_MINLOC, MPI_COMM_WORLD, ierr)
  if (any(i2(:, 1) /= (/ 7, 0 /)) .or. any(i2(:, 2) /= (/ 1 - nprocs, nprocs - 1 /))) &
    bad = bad + 1
  d2(:, 1) = (/ 10.5d0 * rank, dble(rank) /) ! the largest on the last rank
  d2(:, 2) = (/ -1.0d0, dble(rank) /)         ! all tie: index 0
  if (rank == nprocs - 1) then
    call MPI_Reduce(MPI_IN_PLACE, d2, 2, MPI_2DOUBLE_PRECISION, MPI_MAXLOC, nprocs - 1, &
                    MPI_COMM_WORLD, ierr)
    if (any(d2(:, 1) /= (/ 10.5d0 * (nprocs - 1), dble(nprocs - 1) /)) .or. &
        any(d2(:, 2) /= (/ -1.0d0, 0.0d0 /))) bad = bad + 1
  else
    call MPI_Reduce(d2, d2, 2, MPI_2DOUBLE_PRECISION, MPI_MAXLOC, nprocs - 1, &
                    MPI_COMM_WORLD, ierr)
  end if
  if (ierr /= MPI_SUCCESS) bad = bad + 1
end subroutine reductions_kinds

! MPI_ALLREDUCE / MPI_REDUCE through `use mpi`: 4 allreduces, 2 reduces; bad counts wrong values
subroutine reductions_usempi(bad)
  use mpi
  implicit none
  integer, intent(inout) :: bad
  integer :: ierr, rank, nprocs, i, iv(33)
  double precision :: dv(1001), want
  real :: rv(7)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  do i = 1, 1001
    dv(i) = 0.25d0 * (rank + 1) * i
  end do
  call MPI_Allreduce(MPI_IN_PLACE, dv, 1001, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, 1001
    want = 0.25d0 * i * (nprocs * (nprocs + 1) / 2)
    if (dv(i) /= want) bad = bad + 1
  end do
  iv = rank + 1
  call MPI_Allreduce(MPI_IN_PLACE, iv, 33, MPI_INTEGER, MPI_PROD, MPI_COMM_WORLD, ierr)
  if (any(iv /= product((/ (i, i = 1, nprocs) /)))) bad = bad + 1
  rv = real(rank) - 0.5
  call MPI_Allreduce(MPI_IN_PLACE, rv, 7, MPI_REAL, MPI_MAX, MPI_COMM_WORLD, ierr)
  if (any(rv /= real(nprocs - 1) - 0.5)) bad = bad + 1
  call MPI_Allreduce(MPI_IN_PLACE, rv, 7, MPI_REAL, MPI_MIN, MPI_COMM_WORLD, ierr)
  if (any(rv /= real(nprocs - 1) - 0.5)) bad = bad + 1
  iv = rank
  if (rank == nprocs - 1) then
    call MPI_Reduce(MPI_IN_PLACE, iv, 33, MPI_INTEGER, MPI_MAX, nprocs - 1, MPI_COMM_WORLD, ierr)
    if (any(iv /= nprocs - 1)) bad = bad + 1
  else
    call MPI_Reduce(iv, iv, 33, MPI_INTEGER, MPI_MAX, nprocs - 1, MPI_COMM_WORLD, ierr)
  end if
  dv = 1.5d0
  call MPI_Reduce(dv, dv(2), 1000, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. any(dv(2:) /= 1.5d0 * nprocs)) bad = bad + 1
  if (ierr /= MPI_SUCCESS) bad = bad + 1
end subroutine reductions_usempi

program fortran_test
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, nprocs, i, it, bad, total, sub
  real :: rsum
  integer :: ibuf(1000)
  double precision :: dbuf(17)
  ! MPI_BOTTOM with absolute addresses: a struct of two separate arrays
  integer :: abuf(5), stype, blens(2), types(2)
  double precision :: bbuf(3)
  integer(kind=MPI_ADDRESS_KIND) :: disps(2)
  ! the gather family: 2 doubles a rank, counts and displacements of MPI_SCATTERV
  double precision :: gbuf(64)
  integer :: scnt(32), sdsp(32)
  ! MPI_ALLTOALLW: counts, byte displacements and a datatype per block
  integer :: wbuf(64), wcnt(32), wsd(32), wrd(32), wtyp(32)
  ! the neighbourhood collectives on a ring (1-D periodic Cartesian)
  integer :: ring, nb(2), nbr(4), ncnt(2), ntyp(2)
  integer(kind=MPI_ADDRESS_KIND) :: nsd(2), nrd(2)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  bad = 0
  do it = 1, 50
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    if (ierr /= MPI_SUCCESS) bad = bad + 1
    if (rank == mod(it, nprocs)) then
      do i = 1, 1000
        ibuf(i) = i * it
      end do
      dbuf = 0.5d0 * it
    else
      ibuf = -1
      dbuf = -1.0d0
    end if
    call MPI_Bcast(ibuf, 1000, MPI_INTEGER, mod(it, nprocs), MPI_COMM_WORLD, ierr)
    call MPI_Bcast(dbuf, 17, MPI_DOUBLE_PRECISION, mod(it, nprocs), MPI_COMM_WORLD, ierr)
    do i = 1, 1000
      if (ibuf(i) /= i * it) bad = bad + 1
    end do
    if (any(dbuf /= 0.5d0 * it)) bad = bad + 1
  end do
  ! MPI_BOTTOM: the Fortran constant is an address in the MPI's Fortran library that the
  ! wrapper must map to C's MPI_BOTTOM, else the absolute displacements point nowhere
  call MPI_Get_address(abuf, disps(1), ierr)
  call MPI_Get_address(bbuf, disps(2), ierr)
  blens = (/ 5, 3 /)
  types = (/ MPI_INTEGER, MPI_DOUBLE_PRECISION /)
  call MPI_Type_create_struct(2, blens, disps, types, stype, ierr)
  call MPI_Type_commit(stype, ierr)
  do it = 1, 6
    if (rank == mod(it, nprocs)) then
      do i = 1, 5
        abuf(i) = 100 * it + i
      end do
      bbuf = 0.25d0 * it
    else
      abuf = -1
      bbuf = -1.0d0
    end if
    call MPI_Bcast(MPI_BOTTOM, 1, stype, mod(it, nprocs), MPI_COMM_WORLD, ierr)
    if (ierr /= MPI_SUCCESS) bad = bad + 1
    do i = 1, 5
      if (abuf(i) /= 100 * it + i) bad = bad + 1
    end do
    if (any(bbuf /= 0.25d0 * it)) bad = bad + 1
  end do
  call MPI_Type_free(stype, ierr)
  ! MPI_ALLREDUCE / MPI_REDUCE through mpif.h: 3 allreduces, 2 reduces
  do i = 1, 17
    dbuf(i) = 0.5d0 * rank + i
  end do
  call MPI_Allreduce(MPI_IN_PLACE, dbuf, 17, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, 17
    if (dbuf(i) /= 0.25d0 * nprocs * (nprocs - 1) + nprocs * i) bad = bad + 1
  end do
  ibuf = rank * 3 + 1
  call MPI_Allreduce(ibuf, ibuf(501), 500, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (any(ibuf(501:) /= 3 * nprocs * (nprocs - 1) / 2 + nprocs)) bad = bad + 1
  call MPI_Allreduce(real(rank) * 2.5, rsum, 1, MPI_REAL, MPI_MAX, MPI_COMM_WORLD, ierr)
  if (rsum /= real(nprocs - 1) * 2.5) bad = bad + 1
  ibuf(1:10) = rank + 100
  call MPI_Reduce(ibuf, ibuf(11), 10, MPI_INTEGER, MPI_MIN, nprocs - 1, MPI_COMM_WORLD, ierr)
  if (rank == nprocs - 1 .and. any(ibuf(11:20) /= 100)) bad = bad + 1
  dbuf = rank + 1.0d0
  if (rank == 0) then
    call MPI_Reduce(MPI_IN_PLACE, dbuf, 17, MPI_DOUBLE_PRECISION, MPI_PROD, 0, MPI_COMM_WORLD, ierr)
    if (any(dbuf /= product((/ (dble(i), i = 1, nprocs) /)))) bad = bad + 1
  else
    call MPI_Reduce(dbuf, dbuf, 17, MPI_DOUBLE_PRECISION, MPI_PROD, 0, MPI_COMM_WORLD, ierr)
  end if
  ! MPI_SCAN in place and MPI_REDUCE_SCATTER_BLOCK through mpif.h: one of each
  ibuf(1:10) = rank + 1
  call MPI_Scan(MPI_IN_PLACE, ibuf, 10, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS .or. any(ibuf(1:10) /= (rank + 1) * (rank + 2) / 2)) bad = bad + 1
  do i = 1, 4 * nprocs
    ibuf(i) = i + rank
  end do
  call MPI_Reduce_scatter_block(ibuf, ibuf(501), 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, 4
    if (ibuf(500 + i) /= nprocs * (4 * rank + i) + nprocs * (nprocs - 1) / 2) bad = bad + 1
  end do
  ! MPI_ALLGATHER, MPI_GATHER (MPI_IN_PLACE at the root: the wrapper maps Fortran's constant)
  ! and MPI_SCATTERV (rank i gets i + 1 integers) through mpif.h: one call each
  ibuf(1:3) = rank * 10 + (/ 1, 2, 3 /)
  call MPI_Allgather(ibuf, 3, MPI_INTEGER, ibuf(101), 3, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do i = 0, nprocs - 1
    if (any(ibuf(101 + 3 * i:103 + 3 * i) /= i * 10 + (/ 1, 2, 3 /))) bad = bad + 1
  end do
  gbuf = -1.0d0
  gbuf(2 * rank + 1:2 * rank + 2) = rank + 0.5d0
  if (rank == nprocs - 1) then
    call MPI_Gather(MPI_IN_PLACE, 2, MPI_DOUBLE_PRECISION, gbuf, 2, MPI_DOUBLE_PRECISION, &
                    nprocs - 1, MPI_COMM_WORLD, ierr)
    do i = 0, nprocs - 1
      if (any(gbuf(2 * i + 1:2 * i + 2) /= i + 0.5d0)) bad = bad + 1
    end do
  else
    call MPI_Gather(gbuf(2 * rank + 1), 2, MPI_DOUBLE_PRECISION, gbuf, 2, &
                    MPI_DOUBLE_PRECISION, nprocs - 1, MPI_COMM_WORLD, ierr)
  end if
  do i = 1, nprocs
    scnt(i) = i
    sdsp(i) = (i - 1) * nprocs
  end do
  do i = 1, 1000
    ibuf(i) = i
  end do
  call MPI_Scatterv(ibuf, scnt, sdsp, MPI_INTEGER, ibuf(901), rank + 1, MPI_INTEGER, 0, &
                    MPI_COMM_WORLD, ierr)
  do i = 1, rank + 1
    if (ibuf(900 + i) /= rank * nprocs + i) bad = bad + 1
  end do
  ! MPI_ALLTOALL through mpif.h: rank r sends rank d the 2 integers 100 * r + 10 * d + (1, 2)
  do i = 0, nprocs - 1
    ibuf(601 + 2 * i:602 + 2 * i) = 100 * rank + 10 * i + (/ 1, 2 /)
  end do
  ibuf(701:700 + 2 * nprocs) = -1
  call MPI_Alltoall(ibuf(601), 2, MPI_INTEGER, ibuf(701), 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  do i = 0, nprocs - 1
    if (any(ibuf(701 + 2 * i:702 + 2 * i) /= 100 * i + 10 * rank + (/ 1, 2 /))) bad = bad + 1
  end do
  ! MPI_ALLTOALLW through mpif.h: rank r sends rank d the integer 1000 * r + d (MPI_INTEGER
  ! blocks at byte displacements 4 * d), received at byte 8 * r: the integers between stay
  do i = 0, nprocs - 1
    ibuf(801 + i) = 1000 * rank + i
    wcnt(i + 1) = 1
    wsd(i + 1) = 4 * i
    wrd(i + 1) = 8 * i
    wtyp(i + 1) = MPI_INTEGER
  end do
  wbuf = -1
  call MPI_Alltoallw(ibuf(801), wcnt, wsd, wtyp, wbuf, wcnt, wrd, wtyp, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  do i = 0, nprocs - 1
    if (wbuf(2 * i + 1) /= 1000 * i + rank .or. wbuf(2 * i + 2) /= -1) bad = bad + 1
  end do
  ! MPI_NEIGHBOR_ALLTOALL on a ring: rank r sends 10 r + 1 to its - neighbour, 10 r + 2 to
  ! its + one, and receives the - neighbour's + block and the + neighbour's - block; then
  ! MPI_NEIGHBOR_ALLTOALLW the same in MPI_INTEGER blocks at byte displacements 0 and 8
  call MPI_Cart_create(MPI_COMM_WORLD, 1, (/ nprocs /), (/ .true. /), .false., ring, ierr)
  nb = (/ 10 * rank + 1, 10 * rank + 2 /)
  nbr = -1
  call MPI_Neighbor_alltoall(nb, 1, MPI_INTEGER, nbr, 1, MPI_INTEGER, ring, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  if (nprocs >= 3) then
    if (nbr(1) /= 10 * mod(rank + nprocs - 1, nprocs) + 2) bad = bad + 1
    if (nbr(2) /= 10 * mod(rank + 1, nprocs) + 1) bad = bad + 1
  end if
  ncnt = 1
  ntyp = MPI_INTEGER
  nsd = (/ 0_MPI_ADDRESS_KIND, 4_MPI_ADDRESS_KIND /)
  nrd = (/ 0_MPI_ADDRESS_KIND, 8_MPI_ADDRESS_KIND /)
  nbr = -1
  call MPI_Neighbor_alltoallw(nb, ncnt, nsd, ntyp, nbr, ncnt, nrd, ntyp, ring, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  if (nprocs >= 3) then
    if (nbr(1) /= 10 * mod(rank + nprocs - 1, nprocs) + 2 .or. nbr(2) /= -1) bad = bad + 1
    if (nbr(3) /= 10 * mod(rank + 1, nprocs) + 1 .or. nbr(4) /= -1) bad = bad + 1
  end if
  call MPI_Comm_free(ring, ierr)
  call reductions_usempi(bad)
  call reductions_kinds(bad)
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, sub, ierr)
  do it = 1, 20
    call MPI_Barrier(sub, ierr)
  end do
  call MPI_Comm_free(sub, ierr)
  call MPI_Allreduce(bad, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (total == 0) then
      print '(a,i0,a)', 'fortran: PASS (', nprocs, ' processes)'
    else
      print '(a,i0,a)', 'fortran: FAIL (', total, ' wrong values)'
    end if
  end if
  call MPI_Finalize(ierr)
  if (total /= 0) stop 1
end program fortran_test
