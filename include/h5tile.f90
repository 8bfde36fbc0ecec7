!> Fortran interface to h5tile (tiled, collective HDF5 I/O for MPI programs).
!>
!> Shapes and offsets are given in Fortran order (first index fastest) with 0-based offsets,
!> exactly as the arrays are declared; the module reverses them for the C library, as HDF5's
!> own Fortran API does, so a Fortran array a(nx, ny) appears in h5py as shape (ny, nx).
!> Buffers are passed as c_loc(array) of contiguous arrays. `comm` is an ordinary Fortran
!> communicator handle; MPI_COMM_NULL means "this process alone" (MPI need not be initialised).
!> Every function returns an h5tile status (H5TILE_OK = 0); h5tile_last_error() says why.
module h5tile
  use, intrinsic :: iso_c_binding
  implicit none
  private

  ! Status codes: generated from src/status.rs (`make header` rewrites this block).
  ! BEGIN status codes
  integer(c_int), parameter, public :: H5TILE_OK = 0, H5TILE_ERR_INVALID_ARGUMENT = 1, &
    H5TILE_ERR_IS_DIRECTORY = 2, H5TILE_ERR_NOT_FOUND = 3, H5TILE_ERR_NOT_A_DATASET = 4, &
    H5TILE_ERR_DTYPE = 5, H5TILE_ERR_SHAPE = 6, H5TILE_ERR_EXISTS = 7, H5TILE_ERR_IO = 8, &
    H5TILE_ERR_HDF5 = 9, H5TILE_ERR_MPI = 10, H5TILE_ERR_CUDA = 11, &
    H5TILE_ERR_MISSING_TILE = 12, H5TILE_ERR_PANIC = 99
  ! END status codes
  integer(c_int), parameter, public :: H5TILE_BOOL = 0, H5TILE_INT8 = 1, H5TILE_INT16 = 2, &
    H5TILE_INT32 = 3, H5TILE_INT64 = 4, H5TILE_UINT8 = 5, H5TILE_UINT16 = 6, &
    H5TILE_UINT32 = 7, H5TILE_UINT64 = 8, H5TILE_FLOAT16 = 9, H5TILE_FLOAT32 = 10, &
    H5TILE_FLOAT64 = 11, H5TILE_COMPLEX64 = 12, H5TILE_COMPLEX128 = 13

  public :: h5tile_write, h5tile_read, h5tile_inspect, h5tile_last_error
  public :: h5tile_write_async, h5tile_wait, h5tile_fence

  interface
    integer(c_int) function c_write_f(comm, path, dataset, dtype, ndim, global_shape, &
        tile_offset, tile_shape, buf, opts) bind(C, name="h5tile_write_f")
      import :: c_int, c_char, c_size_t, c_int64_t, c_ptr
      integer(c_int), value :: comm, dtype
      character(kind=c_char), dimension(*), intent(in) :: path, dataset
      integer(c_size_t), value :: ndim
      integer(c_int64_t), dimension(*), intent(in) :: global_shape, tile_offset, tile_shape
      type(c_ptr), value :: buf, opts
    end function

    integer(c_int) function c_write_async_f(comm, path, dataset, dtype, ndim, global_shape, &
        tile_offset, tile_shape, buf, opts, req) bind(C, name="h5tile_write_async_f")
      import :: c_int, c_char, c_size_t, c_int64_t, c_ptr
      integer(c_int), value :: comm, dtype
      character(kind=c_char), dimension(*), intent(in) :: path, dataset
      integer(c_size_t), value :: ndim
      integer(c_int64_t), dimension(*), intent(in) :: global_shape, tile_offset, tile_shape
      type(c_ptr), value :: buf, opts
      type(c_ptr), intent(out) :: req
    end function

    integer(c_int) function c_wait(req) bind(C, name="h5tile_wait")
      import :: c_int, c_ptr
      type(c_ptr), value :: req
    end function

    integer(c_int) function c_fence_f(comm) bind(C, name="h5tile_fence_f")
      import :: c_int
      integer(c_int), value :: comm
    end function

    integer(c_int) function c_read_f(comm, path, dataset, dtype, ndim, tile_offset, &
        tile_shape, buf, opts) bind(C, name="h5tile_read_f")
      import :: c_int, c_char, c_size_t, c_int64_t, c_ptr
      integer(c_int), value :: comm, dtype
      character(kind=c_char), dimension(*), intent(in) :: path, dataset
      integer(c_size_t), value :: ndim
      integer(c_int64_t), dimension(*), intent(in) :: tile_offset, tile_shape
      type(c_ptr), value :: buf, opts
    end function

    integer(c_int) function c_inspect(path, dataset, dtype, ndim, shape) &
        bind(C, name="h5tile_inspect")
      import :: c_int, c_char, c_size_t, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: path, dataset
      integer(c_int), intent(out) :: dtype
      integer(c_size_t), intent(out) :: ndim
      integer(c_int64_t), dimension(*), intent(out) :: shape
    end function

    type(c_ptr) function c_last_error() bind(C, name="h5tile_last_error")
      import :: c_ptr
    end function

    integer(c_size_t) function c_strlen(s) bind(C, name="strlen")
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
    end function
  end interface

contains

  !> Collective: writes this rank's tile of a global array as `dataset` in the file `path`
  !> (see h5tile_write in h5tile.h). A zero extent in tile_shape means "no data".
  integer function h5tile_write(comm, path, dataset, dtype, global_shape, tile_offset, &
      tile_shape, buf) result(status)
    integer, intent(in) :: comm, dtype
    character(len=*), intent(in) :: path, dataset
    integer(c_int64_t), intent(in) :: global_shape(:), tile_offset(:), tile_shape(:)
    type(c_ptr), intent(in) :: buf
    integer(c_size_t) :: n
    n = size(global_shape, kind=c_size_t)
    if (size(tile_offset) /= n .or. size(tile_shape) /= n) then
      status = H5TILE_ERR_INVALID_ARGUMENT
      return
    end if
    status = c_write_f(int(comm, c_int), cstr(path), cstr(dataset), int(dtype, c_int), n, &
      reversed(global_shape), reversed(tile_offset), reversed(tile_shape), buf, c_null_ptr)
  end function

  !> h5tile_write that returns before the data is written (see h5tile_write_async in
  !> h5tile.h): buf must stay untouched until h5tile_wait(req) or h5tile_fence completes it.
  !> The array behind buf should carry the ASYNCHRONOUS (or TARGET) attribute.
  integer function h5tile_write_async(comm, path, dataset, dtype, global_shape, tile_offset, &
      tile_shape, buf, req) result(status)
    integer, intent(in) :: comm, dtype
    character(len=*), intent(in) :: path, dataset
    integer(c_int64_t), intent(in) :: global_shape(:), tile_offset(:), tile_shape(:)
    type(c_ptr), intent(in) :: buf
    type(c_ptr), intent(out) :: req
    integer(c_size_t) :: n
    req = c_null_ptr
    n = size(global_shape, kind=c_size_t)
    if (size(tile_offset) /= n .or. size(tile_shape) /= n) then
      status = H5TILE_ERR_INVALID_ARGUMENT
      return
    end if
    status = c_write_async_f(int(comm, c_int), cstr(path), cstr(dataset), int(dtype, c_int), &
      n, reversed(global_shape), reversed(tile_offset), reversed(tile_shape), buf, c_null_ptr, req)
  end function

  !> Completes and frees the request of h5tile_write_async; the write's status.
  integer function h5tile_wait(req) result(status)
    type(c_ptr), intent(inout) :: req
    status = c_wait(req)
    req = c_null_ptr
  end function

  !> Collective: completes every write this process started; the first failure of any rank.
  integer function h5tile_fence(comm) result(status)
    integer, intent(in) :: comm
    status = c_fence_f(int(comm, c_int))
  end function

  !> Collective: reads the tile at tile_offset (0-based) of extent tile_shape of `dataset`
  !> into buf, converting the element type where HDF5 can (see h5tile_read in h5tile.h).
  integer function h5tile_read(comm, path, dataset, dtype, tile_offset, tile_shape, buf) &
      result(status)
    integer, intent(in) :: comm, dtype
    character(len=*), intent(in) :: path, dataset
    integer(c_int64_t), intent(in) :: tile_offset(:), tile_shape(:)
    type(c_ptr), intent(in) :: buf
    integer(c_size_t) :: n
    n = size(tile_offset, kind=c_size_t)
    if (size(tile_shape) /= n) then
      status = H5TILE_ERR_INVALID_ARGUMENT
      return
    end if
    status = c_read_f(int(comm, c_int), cstr(path), cstr(dataset), int(dtype, c_int), n, &
      reversed(tile_offset), reversed(tile_shape), buf, c_null_ptr)
  end function

  !> Element type, rank and extents (Fortran order) of `dataset`; shape needs 32 entries.
  integer function h5tile_inspect(path, dataset, dtype, ndim, shape) result(status)
    character(len=*), intent(in) :: path, dataset
    integer, intent(out) :: dtype, ndim
    integer(c_int64_t), intent(out) :: shape(32)
    integer(c_int) :: d
    integer(c_size_t) :: n
    integer(c_int64_t) :: c_shape(32)
    c_shape = 0
    status = c_inspect(cstr(path), cstr(dataset), d, n, c_shape)
    dtype = d
    ndim = int(n)
    shape = 0
    if (status == H5TILE_OK) shape(1:ndim) = reversed(c_shape(1:ndim))
  end function

  !> The message of the last failed call on this thread ("" after a success).
  function h5tile_last_error() result(msg)
    character(len=:), allocatable :: msg
    type(c_ptr) :: p
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    p = c_last_error()
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: msg)
    do i = 1, n
      msg(i:i) = chars(i)
    end do
  end function

  pure function cstr(s) result(c)
    character(len=*), intent(in) :: s
    character(kind=c_char, len=len(s) + 1) :: c
    c = s // c_null_char
  end function

  pure function reversed(a) result(r)
    integer(c_int64_t), intent(in) :: a(:)
    integer(c_int64_t) :: r(size(a))
    r = a(size(a):1:-1)
  end function
end module h5tile
