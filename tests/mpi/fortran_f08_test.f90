! mpi_f08 bindings: MPI_Barrier / MPI_Bcast through the f08 module must reach libnumacoll_mpi
program f08_test
  use mpi_f08
  implicit none
  integer :: rank, nprocs, it, bad, total
  integer :: v(4)
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
  call MPI_Allreduce(bad, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0 .and. total == 0) print '(a)', 'f08: PASS'
  if (rank == 0 .and. total /= 0) print '(a,i0)', 'f08: FAIL ', total
  call MPI_Finalize()
  if (total /= 0) stop 1
end program f08_test
