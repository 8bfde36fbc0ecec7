! docs/install.md's options and batches, and its checkpoint and restart: what they assume
! (this rank's columns j0+1..j0+nj of a 64x48 array a), then their lines; a failed status
! stops the program.
program example
  use mpi
  use h5tile
  use, intrinsic :: iso_c_binding
  implicit none
  integer(c_int64_t) :: nx = 64, ny = 48, j0, nj
  real(c_double), allocatable, target :: a(:, :)
  integer :: ierr, rank, nranks, status
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  j0 = rank * ny / nranks
  nj = (rank + 1) * ny / nranks - j0
  allocate(a(nx, nj))
  a = rank
  block
! EXAMPLE
  end block
  if (status /= H5TILE_OK) error stop h5tile_last_error()
  call MPI_Finalize(ierr)
end program
