!> Fortran interface to h5tile (tiled, collective HDF5 I/O for MPI programs): every function
!> of h5tile.h, documented there.
!>
!> Shapes and offsets are given in Fortran order (first index fastest) with 0-based offsets,
!> exactly as the arrays are declared; the module reverses them for the C library, as HDF5's
!> own Fortran API does, so a Fortran array a(nx, ny) appears in h5py as shape (ny, nx).
!> Buffers are passed as c_loc(array) of contiguous arrays. `comm` is an ordinary Fortran
!> communicator handle; MPI_COMM_NULL means "this process alone" (MPI need not be initialised).
!> Every function returns an h5tile status (H5TILE_OK = 0); h5tile_last_error() says why.
!>
!> Options: start from h5tile_write_options_default() / h5tile_read_options_default(), set
!> fields, and pass the result as the optional `opts` argument (absent: the defaults); a
!> series' retention likewise from h5tile_series_options_default(), as `sopts`.
!> Write requests (h5tile_write_async, h5tile_write_tiles_async, h5tile_checkpoint_commit_async),
!> batched reads (h5tile_batches_open) and checkpoints being assembled (h5tile_checkpoint_begin,
!> h5tile_series_begin) are opaque handles of type h5tile_request, h5tile_batches and
!> h5tile_checkpoint.
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
    H5TILE_ERR_MISSING_TILE = 12, H5TILE_ERR_CORRUPT = 13, H5TILE_ERR_PANIC = 99
  ! END status codes
  ! Element types (the `dtype` arguments).
  integer(c_int), parameter, public :: H5TILE_BOOL = 0, H5TILE_INT8 = 1, H5TILE_INT16 = 2, &
    H5TILE_INT32 = 3, H5TILE_INT64 = 4, H5TILE_UINT8 = 5, H5TILE_UINT16 = 6, &
    H5TILE_UINT32 = 7, H5TILE_UINT64 = 8, H5TILE_FLOAT16 = 9, H5TILE_FLOAT32 = 10, &
    H5TILE_FLOAT64 = 11, H5TILE_COMPLEX64 = 12, H5TILE_COMPLEX128 = 13
  ! Layouts (h5tile_write_options%layout): a virtual dataset over one file per tile in the
  ! folder <path>.tiles, one self-contained file, or a virtual dataset over one file per group
  ! of ranks (per node, or ranks_per_file ranks of a node); AUTO (the default) chooses VDS
  ! where every rank is on one node, SUBFILES where they span nodes.
  integer(c_int), parameter, public :: H5TILE_LAYOUT_VDS = 0, H5TILE_LAYOUT_SINGLE = 1, &
    H5TILE_LAYOUT_SUBFILES = 2, H5TILE_LAYOUT_AUTO = 3
  ! Write flags (h5tile_write_options%flags), combined with ior.
  integer(c_int), parameter, public :: H5TILE_NO_OVERWRITE = 1, H5TILE_ALLOW_PARTIAL = 2, &
    H5TILE_KEEP_OTHERS = 4, H5TILE_NO_SYNC = 8, H5TILE_SHUFFLE = 16, H5TILE_SNAPSHOT = 32
  ! Codecs (h5tile_write_options%compression; NONE: uncompressed unless the environment's
  ! H5TILE_COMPRESSION names one) and their level in compression_level (0: the default).
  integer(c_int), parameter, public :: H5TILE_COMPRESS_NONE = 0, H5TILE_COMPRESS_ZSTD = 1, &
    H5TILE_COMPRESS_LZ4 = 2, H5TILE_COMPRESS_DEFLATE = 3
  ! Read flags (h5tile_read_options%flags).
  integer(c_int), parameter, public :: H5TILE_READ_FILL_MISSING = 1
  integer(c_int), parameter, public :: H5TILE_READ_NO_VERIFY = 2
  integer(c_int), parameter, public :: H5TILE_READ_NARROWING = 4
  ! h5tile_read_options%dtype: deliver elements in the dataset's own type.
  integer(c_int), parameter, public :: H5TILE_AS_STORED = -1
  ! How device memory moves (the options' gds field).
  integer(c_int), parameter, public :: H5TILE_GDS_FROM_ENVIRONMENT = 0, H5TILE_GDS_AUTO = 1, &
    H5TILE_GDS_ON = 2, H5TILE_GDS_OFF = 3
  ! h5tile_series_latest flag: also pass over checkpoints whose checksums or tile files fail.
  integer(c_int), parameter, public :: H5TILE_SERIES_VERIFY = 1

  !> Options of the writes: h5tile_write_options of h5tile.h, field by field. Start from
  !> h5tile_write_options_default(), then set layout, flags (an ior of H5TILE_NO_OVERWRITE,
  !> H5TILE_ALLOW_PARTIAL, H5TILE_KEEP_OTHERS, H5TILE_NO_SYNC, H5TILE_SHUFFLE, H5TILE_SNAPSHOT),
  !> gds, ranks_per_file, compression, compression_level or staging_bytes (the most memory
  !> snapshots hold; 0: H5TILE_STAGING_BYTES, else the library's default); never change size.
  !> With H5TILE_SNAPSHOT an asynchronous write returns once the arrays are copied: they may
  !> change at once.
  type, bind(C), public :: h5tile_write_options
    integer(c_size_t) :: size
    integer(c_int) :: layout
    integer(c_int32_t) :: flags
    integer(c_int32_t) :: gds
    integer(c_int64_t) :: ranks_per_file
    integer(c_int32_t) :: compression
    integer(c_int32_t) :: compression_level
    integer(c_int64_t) :: staging_bytes
  end type

  !> Options of h5tile_read and h5tile_batches_open: h5tile_read_options of h5tile.h. Start
  !> from h5tile_read_options_default(), then set flags (H5TILE_READ_FILL_MISSING, H5TILE_READ_NO_VERIFY,
  !> H5TILE_READ_NARROWING), dtype
  !> (the type batches deliver; H5TILE_AS_STORED by default) or gds; never change size.
  type, bind(C), public :: h5tile_read_options
    integer(c_size_t) :: size
    integer(c_int32_t) :: flags
    integer(c_int) :: dtype
    integer(c_int32_t) :: gds
  end type

  !> Options of h5tile_series_begin (which checkpoints a series keeps): h5tile_series_options
  !> of h5tile.h. Start from h5tile_series_options_default() (keep every checkpoint), then set
  !> keep_last (keep the newest keep_last) and keep_every (also keep every step that is a
  !> multiple of it); never change size.
  type, bind(C), public :: h5tile_series_options
    integer(c_size_t) :: size
    integer(c_int64_t) :: keep_last
    integer(c_int64_t) :: keep_every
  end type

  !> A write started by h5tile_write_async, h5tile_write_tiles_async or
  !> h5tile_checkpoint_commit_async (opaque); h5tile_wait completes and frees it.
  type, public :: h5tile_request
    private
    type(c_ptr) :: ptr = c_null_ptr
  end type

  !> An open batched read (opaque), from h5tile_batches_open; free it with h5tile_batches_free.
  type, public :: h5tile_batches
    private
    type(c_ptr) :: ptr = c_null_ptr
    integer :: ndim = 0
  end type

  !> A checkpoint being assembled (opaque), from h5tile_checkpoint_begin or
  !> h5tile_series_begin; h5tile_checkpoint_commit, _commit_async or _abort frees it.
  type, public :: h5tile_checkpoint
    private
    type(c_ptr) :: ptr = c_null_ptr
  end type

  public :: h5tile_version, h5tile_last_error, h5tile_last_errno, h5tile_status_name
  public :: h5tile_write_options_default, h5tile_read_options_default
  public :: h5tile_write, h5tile_write_tiles, h5tile_write_async, h5tile_write_tiles_async
  public :: h5tile_wait, h5tile_test, h5tile_fence, h5tile_read, h5tile_inspect, h5tile_partition
  public :: h5tile_reserve_staging
  public :: h5tile_batches_open, h5tile_batches_next, h5tile_batches_next_view
  public :: h5tile_batches_info, h5tile_batches_free
  public :: h5tile_series_options_default
  public :: h5tile_checkpoint_begin, h5tile_checkpoint_add, h5tile_checkpoint_attr
  public :: h5tile_checkpoint_attr_string, h5tile_checkpoint_commit
  public :: h5tile_checkpoint_commit_async, h5tile_checkpoint_abort, h5tile_attr_read
  public :: h5tile_series_begin, h5tile_series_latest, h5tile_series_skipped

  ! Shapes and offsets are integer(c_int64_t) or default-kind integer (c_int32_t), all
  ! arguments of one call the same kind: every procedure taking them is a generic over both.
  interface h5tile_write
    module procedure write_i64, write_i32
  end interface

  interface h5tile_write_tiles
    module procedure write_tiles_i64, write_tiles_i32
  end interface

  !> The request is a type(h5tile_request); a type(c_ptr) is still accepted.
  interface h5tile_write_async
    module procedure write_async_i64, write_async_c_ptr_i64, write_async_i32, write_async_c_ptr_i32
  end interface

  interface h5tile_write_tiles_async
    module procedure write_tiles_async_i64, write_tiles_async_i32
  end interface

  interface h5tile_read
    module procedure read_i64, read_i32
  end interface

  interface h5tile_batches_open
    module procedure batches_open_i64, batches_open_i32
  end interface

  interface h5tile_wait
    module procedure wait_request, wait_c_ptr
  end interface

  interface h5tile_checkpoint_add
    module procedure checkpoint_add_i64, checkpoint_add_i32
  end interface

  !> The element type comes from the values' kind: integer(c_int32_t) H5TILE_INT32,
  !> integer(c_int64_t) H5TILE_INT64, real(c_float) H5TILE_FLOAT32, real(c_double)
  !> H5TILE_FLOAT64, each a scalar or a 1-D array. Other types: the form with dtype, count
  !> and a type(c_ptr) to the values, as the C function takes them.
  interface h5tile_checkpoint_attr
    module procedure attr_i32, attr_i32_1d, attr_i64, attr_i64_1d, attr_r32, attr_r32_1d, &
      attr_r64, attr_r64_1d, attr_c_ptr
  end interface

  !> As h5tile_checkpoint_attr: the element type from the kind of `values`, count =
  !> size(values) (1 for a scalar); or dtype, count and a type(c_ptr).
  interface h5tile_attr_read
    module procedure attr_read_i32, attr_read_i32_1d, attr_read_i64, attr_read_i64_1d, &
      attr_read_r32, attr_read_r32_1d, attr_read_r64, attr_read_r64_1d, attr_read_c_ptr
  end interface

  ! The step is integer(c_int64_t) or default-kind integer.
  interface h5tile_series_begin
    module procedure series_begin_i64, series_begin_i32
  end interface

  interface h5tile_series_latest
    module procedure series_latest_i64, series_latest_i32
  end interface

  ! Independent writers and one commit: the C functions as they are (strings end in
  ! c_null_char, e.g. trim(path)//c_null_char; the transaction, its token and the records are
  ! type(c_ptr) with their lengths). Fortran solvers write under MPI; these serve a process
  ! that writes tiles for a runtime of its own (see docs/api.md).
  public :: h5tile_txn_begin, h5tile_txn_resume, h5tile_txn_declare, h5tile_txn_attr
  public :: h5tile_txn_attr_string, h5tile_txn_token, h5tile_txn_write_tile
  public :: h5tile_txn_record_free, h5tile_txn_commit, h5tile_txn_abort, h5tile_txn_free
  public :: h5tile_tiles
  interface
    integer(c_int) function h5tile_txn_begin(path, opts, tx) bind(C, name="h5tile_txn_begin")
      import :: c_int, c_char, c_ptr, h5tile_write_options
      character(kind=c_char), dimension(*), intent(in) :: path
      type(h5tile_write_options), intent(in) :: opts
      type(c_ptr), intent(out) :: tx
    end function
    integer(c_int) function h5tile_txn_resume(token, token_len, tx) &
        bind(C, name="h5tile_txn_resume")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: token
      integer(c_size_t), value :: token_len
      type(c_ptr), intent(out) :: tx
    end function
    integer(c_int) function h5tile_txn_declare(tx, dataset, dtype, ndim, global_shape) &
        bind(C, name="h5tile_txn_declare")
      import :: c_int, c_char, c_ptr, c_size_t, c_int64_t
      type(c_ptr), value :: tx
      character(kind=c_char), dimension(*), intent(in) :: dataset
      integer(c_int), value :: dtype
      integer(c_size_t), value :: ndim
      integer(c_int64_t), dimension(*), intent(in) :: global_shape
    end function
    integer(c_int) function h5tile_txn_attr(tx, object, name, dtype, count, values) &
        bind(C, name="h5tile_txn_attr")
      import :: c_int, c_char, c_ptr, c_size_t
      type(c_ptr), value :: tx
      character(kind=c_char), dimension(*), intent(in) :: object, name
      integer(c_int), value :: dtype
      integer(c_size_t), value :: count
      type(c_ptr), value :: values
    end function
    integer(c_int) function h5tile_txn_attr_string(tx, object, name, value) &
        bind(C, name="h5tile_txn_attr_string")
      import :: c_int, c_char, c_ptr
      type(c_ptr), value :: tx
      character(kind=c_char), dimension(*), intent(in) :: object, name, value
    end function
    integer(c_int) function h5tile_txn_token(tx, token, token_len) &
        bind(C, name="h5tile_txn_token")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: tx
      type(c_ptr), intent(out) :: token
      integer(c_size_t), intent(out) :: token_len
    end function
    integer(c_int) function h5tile_txn_write_tile(token, token_len, dataset, ndim, &
        tile_offset, tile_shape, buf, record, record_len) bind(C, name="h5tile_txn_write_tile")
      import :: c_int, c_char, c_ptr, c_size_t, c_int64_t
      type(c_ptr), value :: token
      integer(c_size_t), value :: token_len
      character(kind=c_char), dimension(*), intent(in) :: dataset
      integer(c_size_t), value :: ndim
      integer(c_int64_t), dimension(*), intent(in) :: tile_offset, tile_shape
      type(c_ptr), value :: buf
      type(c_ptr), intent(out) :: record
      integer(c_size_t), intent(out) :: record_len
    end function
    subroutine h5tile_txn_record_free(record) bind(C, name="h5tile_txn_record_free")
      import :: c_ptr
      type(c_ptr), value :: record
    end subroutine
    integer(c_int) function h5tile_txn_commit(tx, nrecords, records, record_lens) &
        bind(C, name="h5tile_txn_commit")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: tx
      integer(c_size_t), value :: nrecords
      type(c_ptr), dimension(*), intent(in) :: records
      integer(c_size_t), dimension(*), intent(in) :: record_lens
    end function
    integer(c_int) function h5tile_txn_abort(tx) bind(C, name="h5tile_txn_abort")
      import :: c_int, c_ptr
      type(c_ptr), value :: tx
    end function
    subroutine h5tile_txn_free(tx) bind(C, name="h5tile_txn_free")
      import :: c_ptr
      type(c_ptr), value :: tx
    end subroutine
    integer(c_int) function h5tile_tiles(path, dataset, capacity, ntiles, offsets, shapes) &
        bind(C, name="h5tile_tiles")
      import :: c_int, c_char, c_size_t, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: path, dataset
      integer(c_size_t), value :: capacity
      integer(c_size_t), intent(out) :: ntiles
      integer(c_int64_t), dimension(*), intent(out) :: offsets, shapes
    end function
  end interface

  ! Why the module itself refused the last call (array arguments of mismatched sizes, a
  ! negative step or count, a path too short for its text) before or after reaching the
  ! library; empty otherwise. Every call resets it; h5tile_last_error prefers it.
  character(len=:), allocatable :: local_error

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

    integer(c_int) function c_write_tiles_f(comm, path, dataset, dtype, ndim, global_shape, &
        ntiles, tile_offsets, tile_shapes, bufs, opts) bind(C, name="h5tile_write_tiles_f")
      import :: c_int, c_char, c_size_t, c_int64_t, c_ptr
      integer(c_int), value :: comm, dtype
      character(kind=c_char), dimension(*), intent(in) :: path, dataset
      integer(c_size_t), value :: ndim, ntiles
      integer(c_int64_t), dimension(*), intent(in) :: global_shape, tile_offsets, tile_shapes
      type(c_ptr), dimension(*), intent(in) :: bufs
      type(c_ptr), value :: opts
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

    integer(c_int) function c_write_tiles_async_f(comm, path, dataset, dtype, ndim, &
        global_shape, ntiles, tile_offsets, tile_shapes, bufs, opts, req) &
        bind(C, name="h5tile_write_tiles_async_f")
      import :: c_int, c_char, c_size_t, c_int64_t, c_ptr
      integer(c_int), value :: comm, dtype
      character(kind=c_char), dimension(*), intent(in) :: path, dataset
      integer(c_size_t), value :: ndim, ntiles
      integer(c_int64_t), dimension(*), intent(in) :: global_shape, tile_offsets, tile_shapes
      type(c_ptr), dimension(*), intent(in) :: bufs
      type(c_ptr), value :: opts
      type(c_ptr), intent(out) :: req
    end function

    integer(c_int) function c_wait(req) bind(C, name="h5tile_wait")
      import :: c_int, c_ptr
      type(c_ptr), value :: req
    end function

    integer(c_int) function c_test(req, done) bind(C, name="h5tile_test")
      import :: c_int, c_ptr
      type(c_ptr), value :: req
      integer(c_int), intent(out) :: done
    end function

    integer(c_int) function c_fence_f(comm) bind(C, name="h5tile_fence_f")
      import :: c_int
      integer(c_int), value :: comm
    end function

    integer(c_int) function c_reserve_staging(tile_bytes, count, staging_bytes) &
        bind(C, name="h5tile_reserve_staging")
      import :: c_int, c_int64_t, c_size_t
      integer(c_int64_t), intent(in) :: tile_bytes(*)
      integer(c_size_t), value :: count
      integer(c_int64_t), value :: staging_bytes
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

    integer(c_int) function c_partition(nranks, rank, ndim, global_shape, tile_offset, &
        tile_shape) bind(C, name="h5tile_partition")
      import :: c_int, c_size_t, c_int64_t
      integer(c_size_t), value :: nranks, rank, ndim
      integer(c_int64_t), dimension(*), intent(in) :: global_shape
      integer(c_int64_t), dimension(*), intent(out) :: tile_offset, tile_shape
    end function

    integer(c_int) function c_batches_open_f(comm, path, dataset, ndim, chunk_shape, opts, &
        out) bind(C, name="h5tile_batches_open_f")
      import :: c_int, c_char, c_size_t, c_int64_t, c_ptr
      integer(c_int), value :: comm
      character(kind=c_char), dimension(*), intent(in) :: path, dataset
      integer(c_size_t), value :: ndim
      integer(c_int64_t), dimension(*), intent(in) :: chunk_shape
      type(c_ptr), value :: opts
      type(c_ptr), intent(out) :: out
    end function

    integer(c_int) function c_batches_next(it, buf, buf_bytes, chunk_offset, chunk_shape, &
        done) bind(C, name="h5tile_batches_next")
      import :: c_int, c_size_t, c_int64_t, c_ptr, c_bool
      type(c_ptr), value :: it, buf
      integer(c_size_t), value :: buf_bytes
      integer(c_int64_t), dimension(*), intent(out) :: chunk_offset, chunk_shape
      logical(c_bool), intent(out) :: done
    end function

    integer(c_int) function c_batches_next_view(it, data, chunk_offset, chunk_shape, done) &
        bind(C, name="h5tile_batches_next_view")
      import :: c_int, c_int64_t, c_ptr, c_bool
      type(c_ptr), value :: it
      type(c_ptr), intent(out) :: data
      integer(c_int64_t), dimension(*), intent(out) :: chunk_offset, chunk_shape
      logical(c_bool), intent(out) :: done
    end function

    integer(c_int) function c_batches_info(it, dtype, max_chunk_bytes, nchunks) &
        bind(C, name="h5tile_batches_info")
      import :: c_int, c_size_t, c_int64_t, c_ptr
      type(c_ptr), value :: it
      integer(c_int), intent(out) :: dtype
      integer(c_size_t), intent(out) :: max_chunk_bytes
      integer(c_int64_t), intent(out) :: nchunks
    end function

    subroutine c_batches_free(it) bind(C, name="h5tile_batches_free")
      import :: c_ptr
      type(c_ptr), value :: it
    end subroutine

    integer(c_int) function c_checkpoint_begin_f(comm, path, opts, out) &
        bind(C, name="h5tile_checkpoint_begin_f")
      import :: c_int, c_char, c_ptr
      integer(c_int), value :: comm
      character(kind=c_char), dimension(*), intent(in) :: path
      type(c_ptr), value :: opts
      type(c_ptr), intent(out) :: out
    end function

    integer(c_int) function c_checkpoint_fail(ck, why) bind(C, name="h5tile_checkpoint_fail")
      import :: c_int, c_char, c_ptr
      type(c_ptr), value :: ck
      character(kind=c_char), dimension(*), intent(in) :: why
    end function

    integer(c_int) function c_checkpoint_add(ck, dataset, dtype, ndim, global_shape, &
        tile_offset, tile_shape, buf) bind(C, name="h5tile_checkpoint_add")
      import :: c_int, c_char, c_size_t, c_int64_t, c_ptr
      type(c_ptr), value :: ck
      character(kind=c_char), dimension(*), intent(in) :: dataset
      integer(c_int), value :: dtype
      integer(c_size_t), value :: ndim
      integer(c_int64_t), dimension(*), intent(in) :: global_shape, tile_offset, tile_shape
      type(c_ptr), value :: buf
    end function

    integer(c_int) function c_checkpoint_attr(ck, object, name, dtype, count, values) &
        bind(C, name="h5tile_checkpoint_attr")
      import :: c_int, c_char, c_size_t, c_ptr
      type(c_ptr), value :: ck
      character(kind=c_char), dimension(*), intent(in) :: object, name
      integer(c_int), value :: dtype
      integer(c_size_t), value :: count
      type(c_ptr), value :: values
    end function

    integer(c_int) function c_checkpoint_attr_string(ck, object, name, value) &
        bind(C, name="h5tile_checkpoint_attr_string")
      import :: c_int, c_char, c_ptr
      type(c_ptr), value :: ck
      character(kind=c_char), dimension(*), intent(in) :: object, name, value
    end function

    integer(c_int) function c_checkpoint_commit(ck) bind(C, name="h5tile_checkpoint_commit")
      import :: c_int, c_ptr
      type(c_ptr), value :: ck
    end function

    integer(c_int) function c_checkpoint_commit_async(ck, req) &
        bind(C, name="h5tile_checkpoint_commit_async")
      import :: c_int, c_ptr
      type(c_ptr), value :: ck
      type(c_ptr), intent(out) :: req
    end function

    subroutine c_checkpoint_abort(ck) bind(C, name="h5tile_checkpoint_abort")
      import :: c_ptr
      type(c_ptr), value :: ck
    end subroutine

    integer(c_int) function c_attr_read_f(comm, path, object, name, dtype, count, values) &
        bind(C, name="h5tile_attr_read_f")
      import :: c_int, c_char, c_size_t, c_ptr
      integer(c_int), value :: comm, dtype
      character(kind=c_char), dimension(*), intent(in) :: path, object, name
      integer(c_size_t), value :: count
      type(c_ptr), value :: values
    end function

    integer(c_int) function c_series_begin_f(comm, dir, step, sopts, opts, out) &
        bind(C, name="h5tile_series_begin_f")
      import :: c_int, c_char, c_int64_t, c_ptr
      integer(c_int), value :: comm
      character(kind=c_char), dimension(*), intent(in) :: dir
      integer(c_int64_t), value :: step
      type(c_ptr), value :: sopts, opts
      type(c_ptr), intent(out) :: out
    end function

    integer(c_int) function c_series_latest_f(comm, dir, flags, step, path, path_bytes) &
        bind(C, name="h5tile_series_latest_f")
      import :: c_int, c_char, c_int32_t, c_int64_t, c_size_t, c_ptr
      integer(c_int), value :: comm
      character(kind=c_char), dimension(*), intent(in) :: dir
      integer(c_int32_t), value :: flags
      integer(c_int64_t), intent(out) :: step
      type(c_ptr), value :: path
      integer(c_size_t), value :: path_bytes
    end function

    integer(c_int) function c_series_options_init(opts, size) &
        bind(C, name="h5tile_series_options_init")
      import :: c_int, c_size_t, h5tile_series_options
      type(h5tile_series_options), intent(out) :: opts
      integer(c_size_t), value :: size
    end function

    integer(c_int) function c_write_options_init(opts, size) &
        bind(C, name="h5tile_write_options_init")
      import :: c_int, c_size_t, h5tile_write_options
      type(h5tile_write_options), intent(out) :: opts
      integer(c_size_t), value :: size
    end function

    integer(c_int) function c_read_options_init(opts, size) &
        bind(C, name="h5tile_read_options_init")
      import :: c_int, c_size_t, h5tile_read_options
      type(h5tile_read_options), intent(out) :: opts
      integer(c_size_t), value :: size
    end function

    type(c_ptr) function c_version() bind(C, name="h5tile_version")
      import :: c_ptr
    end function

    type(c_ptr) function c_last_error() bind(C, name="h5tile_last_error")
      import :: c_ptr
    end function

    type(c_ptr) function c_series_skipped() bind(C, name="h5tile_series_skipped")
      import :: c_ptr
    end function

    integer(c_int) function c_last_errno() bind(C, name="h5tile_last_errno")
      import :: c_int
    end function

    type(c_ptr) function c_status_name(status) bind(C, name="h5tile_status_name")
      import :: c_int, c_ptr
      integer(c_int), value :: status
    end function

    integer(c_size_t) function c_strlen(s) bind(C, name="strlen")
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
    end function
  end interface

contains

  !> The library version, "MAJOR.MINOR.PATCH".
  function h5tile_version() result(version)
    character(len=:), allocatable :: version
    version = fstring(c_version())
  end function

  !> The message of the last failed call on this thread ("" after a success).
  function h5tile_last_error() result(msg)
    character(len=:), allocatable :: msg
    if (allocated(local_error)) then
      if (len(local_error) > 0) then
        msg = local_error
        return
      end if
    end if
    msg = fstring(c_last_error())
  end function

  !> What the last h5tile_series_latest on this thread passed over with H5TILE_SERIES_VERIFY:
  !> each newer complete checkpoint that failed verification, and why; "" where none was.
  function h5tile_series_skipped() result(msg)
    character(len=:), allocatable :: msg
    msg = fstring(c_series_skipped())
  end function

  !> The operating system's error number (errno, e.g. EACCES = 13) behind the last failed call
  !> on this thread; 0 after a success, a failure with no such cause, or one the module found.
  integer function h5tile_last_errno()
    h5tile_last_errno = 0
    if (allocated(local_error)) then
      if (len(local_error) > 0) return
    end if
    h5tile_last_errno = int(c_last_errno())
  end function

  !> The name of a status code, e.g. "H5TILE_ERR_SHAPE" ("unknown status" for other values).
  function h5tile_status_name(status) result(name)
    integer, intent(in) :: status
    character(len=:), allocatable :: name
    name = fstring(c_status_name(int(status, c_int)))
  end function

  !> Default write options (VDS layout, overwrite allowed, full coverage required), for a
  !> struct of this module's size (the library fills it: h5tile_write_options_init).
  function h5tile_write_options_default() result(opts)
    type(h5tile_write_options) :: opts
    integer(c_int) :: status
    status = c_write_options_init(opts, c_sizeof(opts))
    if (status /= H5TILE_OK) opts%size = 0
  end function

  !> Default read options (a missing virtual-dataset source is an error, elements as stored),
  !> for a struct of this module's size (the library fills it: h5tile_read_options_init).
  function h5tile_read_options_default() result(opts)
    type(h5tile_read_options) :: opts
    integer(c_int) :: status
    status = c_read_options_init(opts, c_sizeof(opts))
    if (status /= H5TILE_OK) opts%size = 0
  end function

  !> Default series options (keep every checkpoint), for a struct of this module's size (the
  !> library fills it: h5tile_series_options_init).
  function h5tile_series_options_default() result(opts)
    type(h5tile_series_options) :: opts
    integer(c_int) :: status
    status = c_series_options_init(opts, c_sizeof(opts))
    if (status /= H5TILE_OK) opts%size = 0
  end function

  !> Collective: writes this rank's tile of a global array as `dataset` in the file `path`
  !> (see h5tile_write in h5tile.h). A zero extent in tile_shape means "no data".
  integer function write_i64(comm, path, dataset, dtype, global_shape, tile_offset, &
      tile_shape, buf, opts) result(status)
    integer, intent(in) :: comm, dtype
    character(len=*), intent(in) :: path, dataset
    integer(c_int64_t), intent(in) :: global_shape(:), tile_offset(:), tile_shape(:)
    type(c_ptr), intent(in) :: buf
    type(h5tile_write_options), intent(in), optional :: opts
    type(h5tile_write_options), target :: o
    integer(c_size_t) :: n
    n = size(global_shape, kind=c_size_t)
    status = check_tile(n, tile_offset, tile_shape)
    if (status /= H5TILE_OK) return
    status = c_write_f(int(comm, c_int), cstr(path), cstr(dataset), int(dtype, c_int), n, &
      reversed(global_shape), reversed(tile_offset), reversed(tile_shape), buf, &
      write_opts(opts, o))
  end function

  !> Collective: h5tile_write with any number of tiles on this rank (0 is allowed): tile t
  !> has offset tile_offsets(:, t), shape tile_shapes(:, t) (both (ndim, ntiles) arrays in
  !> Fortran order) and buffer bufs(t); ntiles = size(bufs). See h5tile_write_tiles.
  integer function write_tiles_i64(comm, path, dataset, dtype, global_shape, tile_offsets, &
      tile_shapes, bufs, opts) result(status)
    integer, intent(in) :: comm, dtype
    character(len=*), intent(in) :: path, dataset
    integer(c_int64_t), intent(in) :: global_shape(:), tile_offsets(:, :), tile_shapes(:, :)
    type(c_ptr), intent(in) :: bufs(:)
    type(h5tile_write_options), intent(in), optional :: opts
    type(h5tile_write_options), target :: o
    integer(c_size_t) :: n, nt
    n = size(global_shape, kind=c_size_t)
    nt = size(bufs, kind=c_size_t)
    status = check_tiles(n, nt, tile_offsets, tile_shapes)
    if (status /= H5TILE_OK) return
    status = c_write_tiles_f(int(comm, c_int), cstr(path), cstr(dataset), int(dtype, c_int), &
      n, reversed(global_shape), nt, reversed_columns(tile_offsets), &
      reversed_columns(tile_shapes), bufs, write_opts(opts, o))
  end function

  !> h5tile_write that returns before the data is written (see h5tile_write_async in
  !> h5tile.h): buf must stay untouched until h5tile_wait(req) or h5tile_fence completes it.
  !> The array behind buf should carry the ASYNCHRONOUS (or TARGET) attribute.
  integer function write_async_i64(comm, path, dataset, dtype, global_shape, tile_offset, &
      tile_shape, buf, req, opts) result(status)
    integer, intent(in) :: comm, dtype
    character(len=*), intent(in) :: path, dataset
    integer(c_int64_t), intent(in) :: global_shape(:), tile_offset(:), tile_shape(:)
    type(c_ptr), intent(in) :: buf
    type(h5tile_request), intent(out) :: req
    type(h5tile_write_options), intent(in), optional :: opts
    status = write_async_c_ptr_i64(comm, path, dataset, dtype, global_shape, tile_offset, &
      tile_shape, buf, req%ptr, opts)
  end function

  ! h5tile_write_async with the request as a bare type(c_ptr) (the module's first form).
  integer function write_async_c_ptr_i64(comm, path, dataset, dtype, global_shape, tile_offset, &
      tile_shape, buf, req, opts) result(status)
    integer, intent(in) :: comm, dtype
    character(len=*), intent(in) :: path, dataset
    integer(c_int64_t), intent(in) :: global_shape(:), tile_offset(:), tile_shape(:)
    type(c_ptr), intent(in) :: buf
    type(c_ptr), intent(out) :: req
    type(h5tile_write_options), intent(in), optional :: opts
    type(h5tile_write_options), target :: o
    integer(c_size_t) :: n
    req = c_null_ptr
    n = size(global_shape, kind=c_size_t)
    status = check_tile(n, tile_offset, tile_shape)
    if (status /= H5TILE_OK) return
    status = c_write_async_f(int(comm, c_int), cstr(path), cstr(dataset), int(dtype, c_int), &
      n, reversed(global_shape), reversed(tile_offset), reversed(tile_shape), buf, &
      write_opts(opts, o), req)
  end function

  !> h5tile_write_tiles that returns before the data is written, as h5tile_write_async: the
  !> arrays behind bufs must stay untouched until the request completes (bufs itself may be
  !> reused at once).
  integer function write_tiles_async_i64(comm, path, dataset, dtype, global_shape, &
      tile_offsets, tile_shapes, bufs, req, opts) result(status)
    integer, intent(in) :: comm, dtype
    character(len=*), intent(in) :: path, dataset
    integer(c_int64_t), intent(in) :: global_shape(:), tile_offsets(:, :), tile_shapes(:, :)
    type(c_ptr), intent(in) :: bufs(:)
    type(h5tile_request), intent(out) :: req
    type(h5tile_write_options), intent(in), optional :: opts
    type(h5tile_write_options), target :: o
    integer(c_size_t) :: n, nt
    n = size(global_shape, kind=c_size_t)
    nt = size(bufs, kind=c_size_t)
    status = check_tiles(n, nt, tile_offsets, tile_shapes)
    if (status /= H5TILE_OK) return
    status = c_write_tiles_async_f(int(comm, c_int), cstr(path), cstr(dataset), &
      int(dtype, c_int), n, reversed(global_shape), nt, reversed_columns(tile_offsets), &
      reversed_columns(tile_shapes), bufs, write_opts(opts, o), req%ptr)
  end function

  !> Completes and frees the request of h5tile_write_async or h5tile_write_tiles_async; the
  !> write's status. Not collective.
  integer function wait_request(req) result(status)
    type(h5tile_request), intent(inout) :: req
    status = wait_c_ptr(req%ptr)
  end function

  ! h5tile_wait for a request kept as a bare type(c_ptr).
  integer function wait_c_ptr(req) result(status)
    type(c_ptr), intent(inout) :: req
    call reset_error()
    status = c_wait(req)
    req = c_null_ptr
  end function

  !> Whether the write req has completed (done .true.), without waiting: a solver polls
  !> between steps. Not collective; h5tile_wait still completes and frees the request.
  integer function h5tile_test(req, done) result(status)
    type(h5tile_request), intent(in) :: req
    logical, intent(out) :: done
    integer(c_int) :: d
    call reset_error()
    status = c_test(req%ptr, d)
    done = d /= 0
  end function

  !> Collective: completes every write this process started; the first failure of any rank.
  integer function h5tile_fence(comm) result(status)
    integer, intent(in) :: comm
    call reset_error()
    status = c_fence_f(int(comm, c_int))
  end function

  !> This process: faults in staging memory for snapshots of tiles of tile_bytes(:) bytes
  !> each, ahead of the first (see h5tile_reserve_staging in h5tile.h); staging_bytes is the
  !> budget (absent or 0: H5TILE_STAGING_BYTES, else the default).
  integer function h5tile_reserve_staging(tile_bytes, staging_bytes) result(status)
    integer(c_int64_t), intent(in) :: tile_bytes(:)
    integer(c_int64_t), intent(in), optional :: staging_bytes
    integer(c_int64_t) :: budget
    call reset_error()
    budget = 0
    if (present(staging_bytes)) budget = staging_bytes
    status = c_reserve_staging(tile_bytes, int(size(tile_bytes), c_size_t), budget)
  end function

  !> Collective: reads the tile at tile_offset (0-based) of extent tile_shape of `dataset`
  !> into buf, converting the element type where HDF5 can (see h5tile_read in h5tile.h).
  integer function read_i64(comm, path, dataset, dtype, tile_offset, tile_shape, buf, &
      opts) result(status)
    integer, intent(in) :: comm, dtype
    character(len=*), intent(in) :: path, dataset
    integer(c_int64_t), intent(in) :: tile_offset(:), tile_shape(:)
    type(c_ptr), intent(in) :: buf
    type(h5tile_read_options), intent(in), optional :: opts
    type(h5tile_read_options), target :: o
    integer(c_size_t) :: n
    n = size(tile_offset, kind=c_size_t)
    status = check_tile(n, tile_offset, tile_shape)
    if (status /= H5TILE_OK) return
    status = c_read_f(int(comm, c_int), cstr(path), cstr(dataset), int(dtype, c_int), n, &
      reversed(tile_offset), reversed(tile_shape), buf, read_opts(opts, o))
  end function

  !> Element type, rank and extents (Fortran order) of `dataset`; shape needs 32 entries.
  integer function h5tile_inspect(path, dataset, dtype, ndim, shape) result(status)
    character(len=*), intent(in) :: path, dataset
    integer, intent(out) :: dtype, ndim
    integer(c_int64_t), intent(out) :: shape(32)
    integer(c_int) :: d
    integer(c_size_t) :: n
    integer(c_int64_t) :: c_shape(32)
    call reset_error()
    c_shape = 0
    status = c_inspect(cstr(path), cstr(dataset), d, n, c_shape)
    dtype = d
    ndim = int(n)
    shape = 0
    if (status == H5TILE_OK) shape(1:ndim) = reversed(c_shape(1:ndim))
  end function

  !> A balanced block decomposition of global_shape over nranks ranks: the tile of `rank`
  !> (0 <= rank < nranks), Fortran order in and out (see h5tile_partition). Not collective.
  integer function h5tile_partition(nranks, rank, global_shape, tile_offset, tile_shape) &
      result(status)
    integer, intent(in) :: nranks, rank
    integer(c_int64_t), intent(in) :: global_shape(:)
    integer(c_int64_t), intent(out) :: tile_offset(:), tile_shape(:)
    integer(c_int64_t) :: offset(size(global_shape)), extent(size(global_shape))
    integer(c_size_t) :: n
    tile_offset = 0
    tile_shape = 0
    n = size(global_shape, kind=c_size_t)
    status = check_tile(n, tile_offset, tile_shape)
    if (status /= H5TILE_OK) return
    if (nranks < 1 .or. rank < 0 .or. rank >= nranks) then
      status = refuse("rank " // itoa(rank) // " is not in 0.." // itoa(nranks))
      return
    end if
    status = c_partition(int(nranks, c_size_t), int(rank, c_size_t), n, &
      reversed(global_shape), offset, extent)
    if (status /= H5TILE_OK) return
    tile_offset = reversed(offset)
    tile_shape = reversed(extent)
  end function

  !> Collective: opens `dataset` for reading in chunks of chunk_shape (Fortran order; see
  !> h5tile_batches_open). Chunks come in Fortran order of their offsets (first axis fastest),
  !> each rank getting a contiguous, balanced run of them (all of them with MPI_COMM_NULL).
  integer function batches_open_i64(comm, path, dataset, chunk_shape, it, opts) &
      result(status)
    integer, intent(in) :: comm
    character(len=*), intent(in) :: path, dataset
    integer(c_int64_t), intent(in) :: chunk_shape(:)
    type(h5tile_batches), intent(out) :: it
    type(h5tile_read_options), intent(in), optional :: opts
    type(h5tile_read_options), target :: o
    integer(c_size_t) :: n
    call reset_error()
    n = size(chunk_shape, kind=c_size_t)
    status = c_batches_open_f(int(comm, c_int), cstr(path), cstr(dataset), n, &
      reversed(chunk_shape), read_opts(opts, o), it%ptr)
    if (status == H5TILE_OK) it%ndim = int(n)
  end function

  !> This rank's next chunk, copied into buf (buf_bytes long, e.g. c_sizeof(array)), with its
  !> offset and clipped shape in Fortran order (room for ndim values each), done = .false.;
  !> once every chunk was delivered, done = .true. Not collective. See h5tile_batches_next.
  integer function h5tile_batches_next(it, buf, buf_bytes, chunk_offset, chunk_shape, done) &
      result(status)
    type(h5tile_batches), intent(in) :: it
    type(c_ptr), intent(in) :: buf
    integer(c_size_t), intent(in) :: buf_bytes
    integer(c_int64_t), intent(out) :: chunk_offset(:), chunk_shape(:)
    logical, intent(out) :: done
    integer(c_int64_t) :: offset(max(it%ndim, 1)), extent(max(it%ndim, 1))
    logical(c_bool) :: finished
    done = .false.
    status = check_chunk(it, chunk_offset, chunk_shape)
    if (status /= H5TILE_OK) return
    finished = .false.
    status = c_batches_next(it%ptr, buf, buf_bytes, offset, extent, finished)
    if (status /= H5TILE_OK) return
    done = finished
    if (.not. done) call place_chunk(it%ndim, offset, extent, chunk_offset, chunk_shape)
  end function

  !> h5tile_batches_next without a copy: data points to the chunk (valid until the next call
  !> on `it`); map it with c_f_pointer(data, array, chunk_shape(1:ndim)). c_null_ptr once done.
  integer function h5tile_batches_next_view(it, data, chunk_offset, chunk_shape, done) &
      result(status)
    type(h5tile_batches), intent(in) :: it
    type(c_ptr), intent(out) :: data
    integer(c_int64_t), intent(out) :: chunk_offset(:), chunk_shape(:)
    logical, intent(out) :: done
    integer(c_int64_t) :: offset(max(it%ndim, 1)), extent(max(it%ndim, 1))
    logical(c_bool) :: finished
    data = c_null_ptr
    done = .false.
    status = check_chunk(it, chunk_offset, chunk_shape)
    if (status /= H5TILE_OK) return
    finished = .false.
    status = c_batches_next_view(it%ptr, data, offset, extent, finished)
    if (status /= H5TILE_OK) return
    done = finished
    if (.not. done) call place_chunk(it%ndim, offset, extent, chunk_offset, chunk_shape)
  end function

  !> What an iterator delivers: element type, bytes of its largest chunk (enough for every
  !> buf) and how many chunks this rank gets. Every argument after `it` is optional.
  integer function h5tile_batches_info(it, dtype, max_chunk_bytes, nchunks) result(status)
    type(h5tile_batches), intent(in) :: it
    integer, intent(out), optional :: dtype
    integer(c_size_t), intent(out), optional :: max_chunk_bytes
    integer(c_int64_t), intent(out), optional :: nchunks
    integer(c_int) :: d
    integer(c_size_t) :: bytes
    integer(c_int64_t) :: count
    call reset_error()
    d = 0
    bytes = 0
    count = 0
    status = c_batches_info(it%ptr, d, bytes, count)
    if (present(dtype)) dtype = d
    if (present(max_chunk_bytes)) max_chunk_bytes = bytes
    if (present(nchunks)) nchunks = count
  end function

  !> Frees an iterator (an unopened or freed one is fine), also before its last chunk.
  subroutine h5tile_batches_free(it)
    type(h5tile_batches), intent(inout) :: it
    call c_batches_free(it%ptr)
    it%ptr = c_null_ptr
    it%ndim = 0
  end subroutine

  ! --- checkpoints and series ---

  !> Begins a checkpoint of the file `path` (see h5tile_checkpoint_begin in h5tile.h): its
  !> datasets (h5tile_checkpoint_add) and attributes (h5tile_checkpoint_attr, _attr_string)
  !> are gathered on each rank and written all at once by h5tile_checkpoint_commit, collective
  !> over `comm`; readers and a crash see the old file or the new one. `opts` as for
  !> h5tile_write (layout included). Not collective; `comm` must stay valid until the commit.
  integer function h5tile_checkpoint_begin(comm, path, ck, opts) result(status)
    integer, intent(in) :: comm
    character(len=*), intent(in) :: path
    type(h5tile_checkpoint), intent(out) :: ck
    type(h5tile_write_options), intent(in), optional :: opts
    type(h5tile_write_options), target :: o
    call reset_error()
    status = c_checkpoint_begin_f(int(comm, c_int), cstr(path), write_opts(opts, o), ck%ptr)
  end function

  !> Adds this rank's tile of `dataset` to the checkpoint, shapes and offsets as h5tile_write
  !> takes them (Fortran order, 0-based offsets). The array behind buf must stay untouched
  !> until the commit completes (give it the TARGET or ASYNCHRONOUS attribute). Call it once
  !> per tile (several for several tiles of one dataset), and on ranks that hold none of a
  !> dataset once with a zero-extent tile. Not collective; a failure (also an offset or shape
  !> the module refuses) is returned again by the commit, on every rank, which then writes
  !> nothing: a program may check the commit's status alone.
  integer function checkpoint_add_i64(ck, dataset, dtype, global_shape, tile_offset, &
      tile_shape, buf) result(status)
    type(h5tile_checkpoint), intent(in) :: ck
    character(len=*), intent(in) :: dataset
    integer, intent(in) :: dtype
    integer(c_int64_t), intent(in) :: global_shape(:), tile_offset(:), tile_shape(:)
    type(c_ptr), intent(in) :: buf
    integer(c_size_t) :: n
    integer(c_int) :: recorded
    n = size(global_shape, kind=c_size_t)
    status = check_tile(n, tile_offset, tile_shape)
    if (status /= H5TILE_OK) then
      ! Refused here, and marked in the checkpoint too, so that its commit fails on every
      ! rank as after any failed add.
      recorded = c_checkpoint_fail(ck%ptr, cstr("h5tile_checkpoint_add of '" // dataset // &
        "': " // local_error))
      return
    end if
    status = c_checkpoint_add(ck%ptr, cstr(dataset), int(dtype, c_int), n, &
      reversed(global_shape), reversed(tile_offset), reversed(tile_shape), buf)
  end function

  !> Sets attribute `name` of `object` ("/" for the file, or a group or dataset path) to
  !> `count` values of type `dtype` at `values` (copied now). Every rank passes the same
  !> attributes; rank 0's are stored. Not collective. The generic h5tile_checkpoint_attr also
  !> takes the values themselves, typed.
  integer function attr_c_ptr(ck, object, name, dtype, count, values) result(status)
    type(h5tile_checkpoint), intent(in) :: ck
    character(len=*), intent(in) :: object, name
    integer, intent(in) :: dtype, count
    type(c_ptr), intent(in) :: values
    call reset_error()
    if (count < 0) then
      status = refuse("count is " // itoa(count))
      return
    end if
    status = c_checkpoint_attr(ck%ptr, cstr(object), cstr(name), int(dtype, c_int), &
      int(count, c_size_t), values)
  end function

  integer function attr_i32(ck, object, name, value) result(status)
    type(h5tile_checkpoint), intent(in) :: ck
    character(len=*), intent(in) :: object, name
    integer(c_int32_t), intent(in), target :: value
    status = attr_c_ptr(ck, object, name, H5TILE_INT32, 1, c_loc(value))
  end function

  integer function attr_i32_1d(ck, object, name, values) result(status)
    type(h5tile_checkpoint), intent(in) :: ck
    character(len=*), intent(in) :: object, name
    integer(c_int32_t), intent(in), target, contiguous :: values(:)
    type(c_ptr) :: p
    p = c_null_ptr
    if (size(values) > 0) p = c_loc(values)
    status = attr_c_ptr(ck, object, name, H5TILE_INT32, size(values), p)
  end function

  integer function attr_i64(ck, object, name, value) result(status)
    type(h5tile_checkpoint), intent(in) :: ck
    character(len=*), intent(in) :: object, name
    integer(c_int64_t), intent(in), target :: value
    status = attr_c_ptr(ck, object, name, H5TILE_INT64, 1, c_loc(value))
  end function

  integer function attr_i64_1d(ck, object, name, values) result(status)
    type(h5tile_checkpoint), intent(in) :: ck
    character(len=*), intent(in) :: object, name
    integer(c_int64_t), intent(in), target, contiguous :: values(:)
    type(c_ptr) :: p
    p = c_null_ptr
    if (size(values) > 0) p = c_loc(values)
    status = attr_c_ptr(ck, object, name, H5TILE_INT64, size(values), p)
  end function

  integer function attr_r32(ck, object, name, value) result(status)
    type(h5tile_checkpoint), intent(in) :: ck
    character(len=*), intent(in) :: object, name
    real(c_float), intent(in), target :: value
    status = attr_c_ptr(ck, object, name, H5TILE_FLOAT32, 1, c_loc(value))
  end function

  integer function attr_r32_1d(ck, object, name, values) result(status)
    type(h5tile_checkpoint), intent(in) :: ck
    character(len=*), intent(in) :: object, name
    real(c_float), intent(in), target, contiguous :: values(:)
    type(c_ptr) :: p
    p = c_null_ptr
    if (size(values) > 0) p = c_loc(values)
    status = attr_c_ptr(ck, object, name, H5TILE_FLOAT32, size(values), p)
  end function

  integer function attr_r64(ck, object, name, value) result(status)
    type(h5tile_checkpoint), intent(in) :: ck
    character(len=*), intent(in) :: object, name
    real(c_double), intent(in), target :: value
    status = attr_c_ptr(ck, object, name, H5TILE_FLOAT64, 1, c_loc(value))
  end function

  integer function attr_r64_1d(ck, object, name, values) result(status)
    type(h5tile_checkpoint), intent(in) :: ck
    character(len=*), intent(in) :: object, name
    real(c_double), intent(in), target, contiguous :: values(:)
    type(c_ptr) :: p
    p = c_null_ptr
    if (size(values) > 0) p = c_loc(values)
    status = attr_c_ptr(ck, object, name, H5TILE_FLOAT64, size(values), p)
  end function

  !> Sets attribute `name` of `object` to the text `value` (as h5py stores a str; trailing
  !> blanks are kept: pass trim(value) to drop them). As h5tile_checkpoint_attr.
  integer function h5tile_checkpoint_attr_string(ck, object, name, value) result(status)
    type(h5tile_checkpoint), intent(in) :: ck
    character(len=*), intent(in) :: object, name, value
    call reset_error()
    status = c_checkpoint_attr_string(ck%ptr, cstr(object), cstr(name), cstr(value))
  end function

  !> Collective over the checkpoint's communicator: writes every dataset and attribute of ck
  !> and makes them visible at once (see h5tile_checkpoint_commit in h5tile.h); the same
  !> status on every rank. Frees ck, whatever the outcome. In a series, the checkpoint is then
  !> recorded as the latest and those the series options no longer keep are removed.
  integer function h5tile_checkpoint_commit(ck) result(status)
    type(h5tile_checkpoint), intent(inout) :: ck
    call reset_error()
    status = c_checkpoint_commit(ck%ptr)
    ck%ptr = c_null_ptr
  end function

  !> h5tile_checkpoint_commit that returns before the data is written: h5tile_wait(req) or
  !> h5tile_fence completes it. The arrays added must stay untouched until then. Frees ck.
  integer function h5tile_checkpoint_commit_async(ck, req) result(status)
    type(h5tile_checkpoint), intent(inout) :: ck
    type(h5tile_request), intent(out) :: req
    call reset_error()
    status = c_checkpoint_commit_async(ck%ptr, req%ptr)
    ck%ptr = c_null_ptr
  end function

  !> Frees ck without writing anything (one never begun, or already freed, is fine). Not
  !> collective: when one rank aborts, every rank must.
  subroutine h5tile_checkpoint_abort(ck)
    type(h5tile_checkpoint), intent(inout) :: ck
    call c_checkpoint_abort(ck%ptr)
    ck%ptr = c_null_ptr
  end subroutine

  !> Collective: reads attribute `name` of `object` ("/" for the file) of the file `path` as
  !> `count` values of type `dtype` (HDF5 converting numbers) into the memory at `values`.
  !> Every rank gets the values and the same status: H5TILE_ERR_NOT_FOUND (no file, object or
  !> attribute), H5TILE_ERR_DTYPE (text, or a type that does not convert), H5TILE_ERR_SHAPE
  !> (the attribute holds another number of values). The generic h5tile_attr_read also takes
  !> the values themselves, typed (count = size(values)); they are left as they were on failure.
  integer function attr_read_c_ptr(comm, path, object, name, dtype, count, values) &
      result(status)
    integer, intent(in) :: comm
    character(len=*), intent(in) :: path, object, name
    integer, intent(in) :: dtype, count
    type(c_ptr), intent(in) :: values
    call reset_error()
    if (count < 0) then
      status = refuse("count is " // itoa(count))
      return
    end if
    status = c_attr_read_f(int(comm, c_int), cstr(path), cstr(object), cstr(name), &
      int(dtype, c_int), int(count, c_size_t), values)
  end function

  integer function attr_read_i32(comm, path, object, name, value) result(status)
    integer, intent(in) :: comm
    character(len=*), intent(in) :: path, object, name
    integer(c_int32_t), intent(inout), target :: value
    status = attr_read_c_ptr(comm, path, object, name, H5TILE_INT32, 1, c_loc(value))
  end function

  integer function attr_read_i32_1d(comm, path, object, name, values) result(status)
    integer, intent(in) :: comm
    character(len=*), intent(in) :: path, object, name
    integer(c_int32_t), intent(inout), target, contiguous :: values(:)
    type(c_ptr) :: p
    p = c_null_ptr
    if (size(values) > 0) p = c_loc(values)
    status = attr_read_c_ptr(comm, path, object, name, H5TILE_INT32, size(values), p)
  end function

  integer function attr_read_i64(comm, path, object, name, value) result(status)
    integer, intent(in) :: comm
    character(len=*), intent(in) :: path, object, name
    integer(c_int64_t), intent(inout), target :: value
    status = attr_read_c_ptr(comm, path, object, name, H5TILE_INT64, 1, c_loc(value))
  end function

  integer function attr_read_i64_1d(comm, path, object, name, values) result(status)
    integer, intent(in) :: comm
    character(len=*), intent(in) :: path, object, name
    integer(c_int64_t), intent(inout), target, contiguous :: values(:)
    type(c_ptr) :: p
    p = c_null_ptr
    if (size(values) > 0) p = c_loc(values)
    status = attr_read_c_ptr(comm, path, object, name, H5TILE_INT64, size(values), p)
  end function

  integer function attr_read_r32(comm, path, object, name, value) result(status)
    integer, intent(in) :: comm
    character(len=*), intent(in) :: path, object, name
    real(c_float), intent(inout), target :: value
    status = attr_read_c_ptr(comm, path, object, name, H5TILE_FLOAT32, 1, c_loc(value))
  end function

  integer function attr_read_r32_1d(comm, path, object, name, values) result(status)
    integer, intent(in) :: comm
    character(len=*), intent(in) :: path, object, name
    real(c_float), intent(inout), target, contiguous :: values(:)
    type(c_ptr) :: p
    p = c_null_ptr
    if (size(values) > 0) p = c_loc(values)
    status = attr_read_c_ptr(comm, path, object, name, H5TILE_FLOAT32, size(values), p)
  end function

  integer function attr_read_r64(comm, path, object, name, value) result(status)
    integer, intent(in) :: comm
    character(len=*), intent(in) :: path, object, name
    real(c_double), intent(inout), target :: value
    status = attr_read_c_ptr(comm, path, object, name, H5TILE_FLOAT64, 1, c_loc(value))
  end function

  integer function attr_read_r64_1d(comm, path, object, name, values) result(status)
    integer, intent(in) :: comm
    character(len=*), intent(in) :: path, object, name
    real(c_double), intent(inout), target, contiguous :: values(:)
    type(c_ptr) :: p
    p = c_null_ptr
    if (size(values) > 0) p = c_loc(values)
    status = attr_read_c_ptr(comm, path, object, name, H5TILE_FLOAT64, size(values), p)
  end function

  !> Begins the checkpoint of `step` (>= 0) in the series kept in the folder `dir` (created if
  !> missing): h5tile_checkpoint_begin of the file dir/ckpt.<step>.h5, the step zero-padded to
  !> 12 digits. After its commit the series records it as the latest complete checkpoint and
  !> removes those `sopts` (absent: keep every one) no longer keeps, never the latest. `opts`
  !> as for h5tile_checkpoint_begin. Not collective.
  integer function series_begin_i64(comm, dir, step, ck, sopts, opts) result(status)
    integer, intent(in) :: comm
    character(len=*), intent(in) :: dir
    integer(c_int64_t), intent(in) :: step
    type(h5tile_checkpoint), intent(out) :: ck
    type(h5tile_series_options), intent(in), optional :: sopts
    type(h5tile_write_options), intent(in), optional :: opts
    type(h5tile_series_options), target :: s
    type(h5tile_write_options), target :: o
    type(c_ptr) :: sp
    call reset_error()
    if (step < 0) then
      status = refuse("step is " // itoa64(step) // "; steps are 0 or more")
      return
    end if
    sp = c_null_ptr
    if (present(sopts)) then
      s = sopts
      sp = c_loc(s)
    end if
    status = c_series_begin_f(int(comm, c_int), cstr(dir), step, sp, write_opts(opts, o), &
      ck%ptr)
  end function

  !> Collective: the newest complete checkpoint of the series in `dir` (passing over those a
  !> crash left incomplete and, with flags = H5TILE_SERIES_VERIFY, those whose checksums or
  !> tile files fail): its step, and its path in `path` (optional; blank-padded). The same
  !> answer on every rank. H5TILE_ERR_NOT_FOUND when there is none (or no folder);
  !> H5TILE_ERR_INVALID_ARGUMENT when the path is longer than len(path) (step is still set).
  integer function series_latest_i64(comm, dir, step, path, flags) result(status)
    integer, intent(in) :: comm
    character(len=*), intent(in) :: dir
    integer(c_int64_t), intent(out) :: step
    character(len=*), intent(out), optional :: path
    integer, intent(in), optional :: flags
    character(kind=c_char), allocatable, target :: text(:)
    integer(c_int32_t) :: f
    integer :: i, n
    call reset_error()
    step = 0
    f = 0
    if (present(flags)) f = int(flags, c_int32_t)
    if (.not. present(path)) then
      status = c_series_latest_f(int(comm, c_int), cstr(dir), f, step, c_null_ptr, 0_c_size_t)
      return
    end if
    path = ""
    ! Room for any path the system takes, so that one too long for `path` is named here.
    allocate(text(max(len(path), 4096) + 1))
    status = c_series_latest_f(int(comm, c_int), cstr(dir), f, step, c_loc(text), &
      size(text, kind=c_size_t))
    if (status /= H5TILE_OK) return
    n = 0
    do while (text(n + 1) /= c_null_char)
      n = n + 1
    end do
    if (n > len(path)) then
      status = refuse("path has room for " // itoa(len(path)) // " characters; the latest " &
        // "checkpoint's path has " // itoa(n))
      return
    end if
    do i = 1, n
      path(i:i) = text(i)
    end do
  end function

  ! --- helpers ---

  ! The C address of the caller's options (a copy in `o`), or NULL when absent.
  ! The default-kind (c_int32_t) forms of the generics above: the same calls, widened.

  integer function write_i32(comm, path, dataset, dtype, global_shape, tile_offset, &
      tile_shape, buf, opts) result(status)
    integer, intent(in) :: comm, dtype
    character(len=*), intent(in) :: path, dataset
    integer(c_int32_t), intent(in) :: global_shape(:), tile_offset(:), tile_shape(:)
    type(c_ptr), intent(in) :: buf
    type(h5tile_write_options), intent(in), optional :: opts
    status = write_i64(comm, path, dataset, dtype, wide(global_shape), wide(tile_offset), &
      wide(tile_shape), buf, opts)
  end function

  integer function write_tiles_i32(comm, path, dataset, dtype, global_shape, tile_offsets, &
      tile_shapes, bufs, opts) result(status)
    integer, intent(in) :: comm, dtype
    character(len=*), intent(in) :: path, dataset
    integer(c_int32_t), intent(in) :: global_shape(:), tile_offsets(:, :), tile_shapes(:, :)
    type(c_ptr), intent(in) :: bufs(:)
    type(h5tile_write_options), intent(in), optional :: opts
    status = write_tiles_i64(comm, path, dataset, dtype, wide(global_shape), &
      int(tile_offsets, c_int64_t), int(tile_shapes, c_int64_t), bufs, opts)
  end function

  integer function write_async_i32(comm, path, dataset, dtype, global_shape, tile_offset, &
      tile_shape, buf, req, opts) result(status)
    integer, intent(in) :: comm, dtype
    character(len=*), intent(in) :: path, dataset
    integer(c_int32_t), intent(in) :: global_shape(:), tile_offset(:), tile_shape(:)
    type(c_ptr), intent(in) :: buf
    type(h5tile_request), intent(out) :: req
    type(h5tile_write_options), intent(in), optional :: opts
    status = write_async_c_ptr_i64(comm, path, dataset, dtype, wide(global_shape), &
      wide(tile_offset), wide(tile_shape), buf, req%ptr, opts)
  end function

  integer function write_async_c_ptr_i32(comm, path, dataset, dtype, global_shape, &
      tile_offset, tile_shape, buf, req, opts) result(status)
    integer, intent(in) :: comm, dtype
    character(len=*), intent(in) :: path, dataset
    integer(c_int32_t), intent(in) :: global_shape(:), tile_offset(:), tile_shape(:)
    type(c_ptr), intent(in) :: buf
    type(c_ptr), intent(out) :: req
    type(h5tile_write_options), intent(in), optional :: opts
    status = write_async_c_ptr_i64(comm, path, dataset, dtype, wide(global_shape), &
      wide(tile_offset), wide(tile_shape), buf, req, opts)
  end function

  integer function write_tiles_async_i32(comm, path, dataset, dtype, global_shape, &
      tile_offsets, tile_shapes, bufs, req, opts) result(status)
    integer, intent(in) :: comm, dtype
    character(len=*), intent(in) :: path, dataset
    integer(c_int32_t), intent(in) :: global_shape(:), tile_offsets(:, :), tile_shapes(:, :)
    type(c_ptr), intent(in) :: bufs(:)
    type(h5tile_request), intent(out) :: req
    type(h5tile_write_options), intent(in), optional :: opts
    status = write_tiles_async_i64(comm, path, dataset, dtype, wide(global_shape), &
      int(tile_offsets, c_int64_t), int(tile_shapes, c_int64_t), bufs, req, opts)
  end function

  integer function read_i32(comm, path, dataset, dtype, tile_offset, tile_shape, buf, opts) &
      result(status)
    integer, intent(in) :: comm, dtype
    character(len=*), intent(in) :: path, dataset
    integer(c_int32_t), intent(in) :: tile_offset(:), tile_shape(:)
    type(c_ptr), intent(in) :: buf
    type(h5tile_read_options), intent(in), optional :: opts
    status = read_i64(comm, path, dataset, dtype, wide(tile_offset), wide(tile_shape), buf, opts)
  end function

  integer function batches_open_i32(comm, path, dataset, chunk_shape, it, opts) result(status)
    integer, intent(in) :: comm
    character(len=*), intent(in) :: path, dataset
    integer(c_int32_t), intent(in) :: chunk_shape(:)
    type(h5tile_batches), intent(out) :: it
    type(h5tile_read_options), intent(in), optional :: opts
    status = batches_open_i64(comm, path, dataset, wide(chunk_shape), it, opts)
  end function

  integer function checkpoint_add_i32(ck, dataset, dtype, global_shape, tile_offset, &
      tile_shape, buf) result(status)
    type(h5tile_checkpoint), intent(in) :: ck
    character(len=*), intent(in) :: dataset
    integer, intent(in) :: dtype
    integer(c_int32_t), intent(in) :: global_shape(:), tile_offset(:), tile_shape(:)
    type(c_ptr), intent(in) :: buf
    status = checkpoint_add_i64(ck, dataset, dtype, wide(global_shape), wide(tile_offset), &
      wide(tile_shape), buf)
  end function

  integer function series_begin_i32(comm, dir, step, ck, sopts, opts) result(status)
    integer, intent(in) :: comm
    character(len=*), intent(in) :: dir
    integer(c_int32_t), intent(in) :: step
    type(h5tile_checkpoint), intent(out) :: ck
    type(h5tile_series_options), intent(in), optional :: sopts
    type(h5tile_write_options), intent(in), optional :: opts
    status = series_begin_i64(comm, dir, int(step, c_int64_t), ck, sopts, opts)
  end function

  integer function series_latest_i32(comm, dir, step, path, flags) result(status)
    integer, intent(in) :: comm
    character(len=*), intent(in) :: dir
    integer(c_int32_t), intent(out) :: step
    character(len=*), intent(out), optional :: path
    integer, intent(in), optional :: flags
    integer(c_int64_t) :: wide_step
    status = series_latest_i64(comm, dir, wide_step, path, flags)
    step = int(min(wide_step, int(huge(step), c_int64_t)), c_int32_t)
    if (wide_step > huge(step) .and. status == H5TILE_OK) status = refuse("step " // &
      itoa64(wide_step) // " does not fit a default integer: pass an integer(c_int64_t)")
  end function

  pure function wide(v) result(w)
    integer(c_int32_t), intent(in) :: v(:)
    integer(c_int64_t) :: w(size(v))
    w = int(v, c_int64_t)
  end function

  function write_opts(opts, o) result(p)
    type(h5tile_write_options), intent(in), optional :: opts
    type(h5tile_write_options), intent(inout), target :: o
    type(c_ptr) :: p
    p = c_null_ptr
    if (present(opts)) then
      o = opts
      p = c_loc(o)
    end if
  end function

  function read_opts(opts, o) result(p)
    type(h5tile_read_options), intent(in), optional :: opts
    type(h5tile_read_options), intent(inout), target :: o
    type(c_ptr) :: p
    p = c_null_ptr
    if (present(opts)) then
      o = opts
      p = c_loc(o)
    end if
  end function

  integer function check_tile(n, tile_offset, tile_shape) result(status)
    integer(c_size_t), intent(in) :: n
    integer(c_int64_t), intent(in) :: tile_offset(:), tile_shape(:)
    call reset_error()
    status = H5TILE_OK
    if (size(tile_offset) /= n .or. size(tile_shape) /= n) status = refuse( &
      "the offset and shape have " // itoa(size(tile_offset)) // " and " // &
      itoa(size(tile_shape)) // " entries; they need " // itoa(int(n)))
  end function

  integer function check_tiles(n, nt, tile_offsets, tile_shapes) result(status)
    integer(c_size_t), intent(in) :: n, nt
    integer(c_int64_t), intent(in) :: tile_offsets(:, :), tile_shapes(:, :)
    call reset_error()
    status = H5TILE_OK
    if (any(shape(tile_offsets) /= [n, nt]) .or. any(shape(tile_shapes) /= [n, nt])) &
      status = refuse("tile_offsets and tile_shapes must be (ndim, ntiles) = (" // &
        itoa(int(n)) // ", " // itoa(int(nt)) // ") arrays (ntiles = size(bufs))")
  end function

  integer function check_chunk(it, chunk_offset, chunk_shape) result(status)
    type(h5tile_batches), intent(in) :: it
    integer(c_int64_t), intent(in) :: chunk_offset(:), chunk_shape(:)
    call reset_error()
    status = H5TILE_OK
    if (size(chunk_offset) < it%ndim .or. size(chunk_shape) < it%ndim) status = refuse( &
      "chunk_offset and chunk_shape need room for " // itoa(it%ndim) // " values")
  end function

  subroutine place_chunk(ndim, offset, extent, chunk_offset, chunk_shape)
    integer, intent(in) :: ndim
    integer(c_int64_t), intent(in) :: offset(:), extent(:)
    integer(c_int64_t), intent(out) :: chunk_offset(:), chunk_shape(:)
    chunk_offset = 0
    chunk_shape = 0
    chunk_offset(1:ndim) = reversed(offset(1:ndim))
    chunk_shape(1:ndim) = reversed(extent(1:ndim))
  end subroutine

  integer function refuse(msg) result(status)
    character(len=*), intent(in) :: msg
    local_error = msg
    status = H5TILE_ERR_INVALID_ARGUMENT
  end function

  subroutine reset_error()
    local_error = ""
  end subroutine

  function itoa(i) result(s)
    integer, intent(in) :: i
    character(len=:), allocatable :: s
    character(len=24) :: buf
    write (buf, "(i0)") i
    s = trim(buf)
  end function

  function itoa64(i) result(s)
    integer(c_int64_t), intent(in) :: i
    character(len=:), allocatable :: s
    character(len=24) :: buf
    write (buf, "(i0)") i
    s = trim(buf)
  end function

  function fstring(p) result(s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    if (.not. c_associated(p)) then
      s = ""
      return
    end if
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: s)
    do i = 1, n
      s(i:i) = chars(i)
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

  ! Each column (one tile's values) reversed: (ndim, ntiles) in Fortran order is C's
  ! [ntiles][ndim] with every row in C order.
  pure function reversed_columns(a) result(r)
    integer(c_int64_t), intent(in) :: a(:, :)
    integer(c_int64_t) :: r(size(a, 1), size(a, 2))
    r = a(size(a, 1):1:-1, :)
  end function
end module h5tile
