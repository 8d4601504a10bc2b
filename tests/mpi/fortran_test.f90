! A Fortran MPI program (mpif.h, whose entry points are mpi_barrier_,
! mpi_bcast_): its calls must go through libnumacoll_mpi (checked by the test from the
! NUMACOLL_MPI_STATS=1 report: "fortran N" with N > 0) and give correct results.
program fortran_test
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, nprocs, i, it, bad, total, sub
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
