! Fortran round trip through the h5tile module: each rank writes the columns it owns of a
! Fortran array a(nx, ny) (ny split over ranks), then reads back rows of another split and
! checks every value; the shape seen by C (and h5py) is the reverse, (ny, nx).
program fortran_roundtrip
  use mpi
  use h5tile
  use fortran_checks
  use, intrinsic :: iso_c_binding
  implicit none
  integer, parameter :: nx = 7, ny = 10
  integer :: rank, nranks, status, dtype, ndim, i, j, j0, nj, i0, ni, bad, k
  type(c_ptr) :: req
  integer(c_int64_t) :: shape(32)
  real(c_double), allocatable, target, asynchronous :: a(:, :)
  real(c_double), allocatable, target :: b(:, :)
  character(len=256) :: path, copy

  ! Plain MPI_Init: a write over a communicator completes before it returns.
  call test_start(rank, nranks)
  path = at("fortran.h5")

  call split(ny, nranks, rank, j0, nj)
  allocate(a(nx, max(nj, 1)))
  do j = 1, nj
    do i = 1, nx
      a(i, j) = value_at(i - 1, j0 + j - 1)
    end do
  end do
  status = h5tile_write(MPI_COMM_WORLD, trim(path), "/field", H5TILE_FLOAT64, &
    [int(nx, c_int64_t), int(ny, c_int64_t)], [0_c_int64_t, int(j0, c_int64_t)], &
    [int(nx, c_int64_t), int(nj, c_int64_t)], c_loc(a))
  call expect(status, H5TILE_OK, "write")

  status = h5tile_inspect(trim(path), "/field", dtype, ndim, shape)
  call expect(status, H5TILE_OK, "inspect")
  call check(dtype == H5TILE_FLOAT64 .and. ndim == 2 .and. shape(1) == nx .and. shape(2) == ny, &
    "inspect: dtype, ndim and Fortran-order shape")

  ! Read back another decomposition: rows i0 .. i0+ni-1 of every column.
  call split(nx, nranks, nranks - 1 - rank, i0, ni)
  allocate(b(max(ni, 1), ny))
  status = h5tile_read(MPI_COMM_WORLD, trim(path), "/field", H5TILE_FLOAT64, &
    [int(i0, c_int64_t), 0_c_int64_t], [int(ni, c_int64_t), int(ny, c_int64_t)], c_loc(b))
  call expect(status, H5TILE_OK, "read")
  bad = 0
  do j = 1, ny
    do i = 1, ni
      if (b(i, j) /= value_at(i0 + i - 1, j - 1)) bad = bad + 1
    end do
  end do
  call check(bad == 0, itoa(bad) // " wrong values")

  ! A bad call: the dataset name is a group; every rank gets the same status and a message.
  status = h5tile_read(MPI_COMM_WORLD, trim(path), "/nope", H5TILE_FLOAT64, &
    [0_c_int64_t, 0_c_int64_t], [1_c_int64_t, 1_c_int64_t], c_loc(b))
  call expect(status, H5TILE_ERR_NOT_FOUND, "read of a missing dataset")
  call expect_message("read of a missing dataset")

  ! The same columns, doubled, written in the background and completed by a fence; a second
  ! write to another dataset file completed by h5tile_wait; then read back.
  a = 2 * a
  status = h5tile_write_async(MPI_COMM_WORLD, trim(path), "/field", H5TILE_FLOAT64, &
    [int(nx, c_int64_t), int(ny, c_int64_t)], [0_c_int64_t, int(j0, c_int64_t)], &
    [int(nx, c_int64_t), int(nj, c_int64_t)], c_loc(a), req)
  call expect(status, H5TILE_OK, "write_async")
  call expect(h5tile_fence(MPI_COMM_WORLD), H5TILE_OK, "fence")
  call expect(h5tile_wait(req), H5TILE_OK, "wait after the fence")
  status = h5tile_write_async(MPI_COMM_WORLD, trim(path) // ".copy", "/field", H5TILE_FLOAT64, &
    [int(nx, c_int64_t), int(ny, c_int64_t)], [0_c_int64_t, int(j0, c_int64_t)], &
    [int(nx, c_int64_t), int(nj, c_int64_t)], c_loc(a), req)
  call expect(status, H5TILE_OK, "second write_async")
  call expect(h5tile_wait(req), H5TILE_OK, "wait")
  do k = 1, 2
    b = 0
    copy = trim(path)
    if (k == 2) copy = trim(path) // ".copy"
    status = h5tile_read(MPI_COMM_WORLD, trim(copy), "/field", H5TILE_FLOAT64, &
      [int(i0, c_int64_t), 0_c_int64_t], [int(ni, c_int64_t), int(ny, c_int64_t)], c_loc(b))
    call expect(status, H5TILE_OK, "read after write_async")
    do j = 1, ny
      do i = 1, ni
        if (b(i, j) /= 2 * value_at(i0 + i - 1, j - 1)) bad = bad + 1
      end do
    end do
  end do
  call check(bad == 0, itoa(bad) // " wrong values after write_async")

  ! The end of the main program frees none of its arrays: freed here, or LeakSanitizer
  ! (make test-asan) reports them.
  deallocate(a, b)
  call test_end("fortran round trip OK on")

contains

  real(c_double) function value_at(i, j)
    integer, intent(in) :: i, j
    value_at = 1000.0d0 * j + i
  end function
end program
