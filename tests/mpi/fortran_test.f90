! A Fortran MPI program (mpif.h, whose entry points are mpi_barrier_, mpi_bcast_,
! mpi_allreduce_, mpi_reduce_; the subroutine reductions_usempi through `use mpi`): its calls
! must go through libnumacoll_mpi (checked by the test from the NUMACOLL_MPI_STATS=1 report:
! "fortran N" with N > 0, and how many allreduces and reduces numacoll ran) and give correct
! results.

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
  call reductions_usempi(bad)
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
