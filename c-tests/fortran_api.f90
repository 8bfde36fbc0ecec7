! Every function of the Fortran module h5tile, on real ranks and real files, with shapes and
! offsets in Fortran order: version and status names; option defaults and their effect
! (H5TILE_NO_OVERWRITE, H5TILE_KEEP_OTHERS, H5TILE_ALLOW_PARTIAL, H5TILE_LAYOUT_SINGLE,
! H5TILE_LAYOUT_SUBFILES with ranks_per_file and H5TILE_NO_SYNC,
! H5TILE_READ_FILL_MISSING, the dtype batches deliver); h5tile_partition's tiles covering the
! shape exactly once; h5tile_write / h5tile_write_tiles and their async forms read back value
! by value, with integer(c_int64_t) and with default-kind integer shapes; batches delivering every chunk once with its offset, shape and data; bad calls
! returning their exact status code with a message; and h5tile_last_errno giving the operating
! system's error number of a failure on every rank.
!   fortran_api SCRATCH_DIR VERSION     (VERSION: the version find_package(H5Tile) found)
program fortran_api
  use mpi
  use h5tile
  use fortran_checks
  use, intrinsic :: iso_c_binding
  implicit none
  integer, parameter :: nx = 7, ny = 10, nz = 3
  integer(c_int64_t), parameter :: gshape(3) = [integer(c_int64_t) :: nx, ny, nz]
  integer(c_int64_t), parameter :: origin(3) = 0
  integer :: ierr, rank, nranks
  character(len=512) :: version
  real(c_double), allocatable, target :: mine(:, :, :), whole(:, :, :)
  integer(c_int64_t) :: my_offset(3), my_shape(3)
  type(h5tile_write_options) :: wo
  type(h5tile_read_options) :: ro

  call test_start(rank, nranks, MPI_THREAD_MULTIPLE)
  call get_command_argument(2, version)
  allocate(whole(nx, ny, nz))

  call test_version_and_names()
  call test_option_defaults()
  call test_partition()
  call test_write_and_read()
  call test_write_options()
  call test_single_layout()
  call test_subfiles_layout()
  call test_allow_partial()
  call test_write_tiles()
  call test_write_async()
  call test_default_kind_shapes()
  call test_fill_missing()
  call test_batches()
  call test_batches_alone()
  call test_bad_calls()
  call test_os_errno()

  ! The end of the main program frees none of its arrays: freed here, or LeakSanitizer
  ! (make test-asan) reports them.
  deallocate(mine, whole)
  call test_end("fortran API OK on")

contains

  subroutine test_version_and_names()
    integer, parameter :: codes(14) = [H5TILE_OK, H5TILE_ERR_INVALID_ARGUMENT, &
      H5TILE_ERR_IS_DIRECTORY, H5TILE_ERR_NOT_FOUND, H5TILE_ERR_NOT_A_DATASET, &
      H5TILE_ERR_DTYPE, H5TILE_ERR_SHAPE, H5TILE_ERR_EXISTS, H5TILE_ERR_IO, H5TILE_ERR_HDF5, &
      H5TILE_ERR_MPI, H5TILE_ERR_CUDA, H5TILE_ERR_MISSING_TILE, H5TILE_ERR_PANIC]
    character(len=*), parameter :: names(14) = [character(len=27) :: "H5TILE_OK", &
      "H5TILE_ERR_INVALID_ARGUMENT", "H5TILE_ERR_IS_DIRECTORY", "H5TILE_ERR_NOT_FOUND", &
      "H5TILE_ERR_NOT_A_DATASET", "H5TILE_ERR_DTYPE", "H5TILE_ERR_SHAPE", &
      "H5TILE_ERR_EXISTS", "H5TILE_ERR_IO", "H5TILE_ERR_HDF5", "H5TILE_ERR_MPI", &
      "H5TILE_ERR_CUDA", "H5TILE_ERR_MISSING_TILE", "H5TILE_ERR_PANIC"]
    integer :: i
    call expect_text(h5tile_version(), trim(version), "h5tile_version")
    do i = 1, size(codes)
      call expect_text(h5tile_status_name(codes(i)), trim(names(i)), "h5tile_status_name")
    end do
    call expect_text(h5tile_status_name(42), "unknown status", "name of 42")
    call expect_text(h5tile_status_name(-1), "unknown status", "name of -1")
  end subroutine

  subroutine test_option_defaults()
    wo = h5tile_write_options_default()
    ro = h5tile_read_options_default()
    call check(wo%size == c_sizeof(wo) .and. wo%layout == H5TILE_LAYOUT_AUTO .and. &
      wo%flags == 0 .and. wo%gds == H5TILE_GDS_FROM_ENVIRONMENT, "write options defaults")
    call check(ro%size == c_sizeof(ro) .and. ro%flags == 0 .and. &
      ro%dtype == H5TILE_AS_STORED .and. ro%gds == H5TILE_GDS_FROM_ENVIRONMENT, &
      "read options defaults")
  end subroutine

  ! Tiles of every rank count from 1 to 7 cover the shape exactly once; the tiles are in
  ! Fortran order; this rank's tile is the one it writes.
  subroutine test_partition()
    integer :: hits(nx, ny, nz), np, r
    integer(c_int64_t) :: off(3), ext(3), off2(2), ext2(2)
    do np = 1, 7
      hits = 0
      do r = 0, np - 1
        call expect(h5tile_partition(np, r, gshape, off, ext), H5TILE_OK, "partition")
        call check(all(off >= 0 .and. ext >= 0 .and. off + ext <= gshape), "tile inside")
        if (all(ext > 0)) hits(off(1) + 1:off(1) + ext(1), off(2) + 1:off(2) + ext(2), &
          off(3) + 1:off(3) + ext(3)) = hits(off(1) + 1:off(1) + ext(1), &
          off(2) + 1:off(2) + ext(2), off(3) + 1:off(3) + ext(3)) + 1
      end do
      call check(all(hits == 1), "partition tiles cover the shape exactly once")
    end do
    ! Only the second axis can be split: the tile must come back split along it.
    call expect(h5tile_partition(2, 1, [1_c_int64_t, 8_c_int64_t], off2, ext2), H5TILE_OK, &
      "partition of (1, 8)")
    call check(all(off2 == [0, 4]) .and. all(ext2 == [1, 4]), "partition in Fortran order")
    call expect(h5tile_partition(nranks, rank, gshape, my_offset, my_shape), H5TILE_OK, &
      "partition over the ranks")
    allocate(mine(max(my_shape(1), 1_c_int64_t), max(my_shape(2), 1_c_int64_t), &
      max(my_shape(3), 1_c_int64_t)))
    call fill(mine, my_offset, my_shape, 1.0d0)
  end subroutine

  ! Defaults (no opts): a virtual dataset with its tile folder, read back in Fortran order
  ! by the module and in C order by the library itself.
  subroutine test_write_and_read()
    integer :: dtype, ndim
    integer(c_int64_t) :: shape(32)
    call expect(h5tile_write(MPI_COMM_WORLD, at("a.h5"), "/field", H5TILE_FLOAT64, gshape, &
      my_offset, my_shape, c_loc(mine)), H5TILE_OK, "write")
    call expect_text(h5tile_last_error(), "", "message after a success")
    call expect(h5tile_inspect(at("a.h5"), "/field", dtype, ndim, shape), H5TILE_OK, "inspect")
    call check(dtype == H5TILE_FLOAT64 .and. ndim == 3 .and. all(shape(1:3) == gshape), &
      "inspect: dtype, ndim, Fortran-order shape")
    call check(exists(at("a.h5.tiles")), "the VDS layout has its tile folder")
    call read_whole("a.h5", "/field", 1.0d0, "read")
    whole = -1
    call expect(c_read_f(MPI_COMM_WORLD, at("a.h5") // c_null_char, "/field" // c_null_char, &
      H5TILE_FLOAT64, 3_c_size_t, origin, [integer(c_int64_t) :: nz, ny, nx], c_loc(whole), &
      c_null_ptr), H5TILE_OK, "C-order read")
    call check_values(whole, origin, gshape, 1.0d0, "C-order read (C shape (nz, ny, nx))")
  end subroutine

  subroutine test_write_options()
    mine = 2 * mine
    ! H5TILE_NO_OVERWRITE: refused on every rank, the file left as it was.
    wo = h5tile_write_options_default()
    wo%flags = H5TILE_NO_OVERWRITE
    call expect(h5tile_write(MPI_COMM_WORLD, at("a.h5"), "/field", H5TILE_FLOAT64, gshape, &
      my_offset, my_shape, c_loc(mine), wo), H5TILE_ERR_EXISTS, "write with NO_OVERWRITE")
    call read_whole("a.h5", "/field", 1.0d0, "read after a refused NO_OVERWRITE write")
    ! H5TILE_KEEP_OTHERS adds a second dataset beside the first.
    wo%flags = H5TILE_KEEP_OTHERS
    call expect(h5tile_write(MPI_COMM_WORLD, at("a.h5"), "/other", H5TILE_FLOAT64, gshape, &
      my_offset, my_shape, c_loc(mine), opts=wo), H5TILE_OK, "write with KEEP_OTHERS")
    call read_whole("a.h5", "/field", 1.0d0, "first dataset after KEEP_OTHERS")
    call read_whole("a.h5", "/other", 2.0d0, "second dataset after KEEP_OTHERS")
    ! Without it the file holds the dataset written alone.
    call expect(h5tile_write(MPI_COMM_WORLD, at("b.h5"), "/field", H5TILE_FLOAT64, gshape, &
      my_offset, my_shape, c_loc(mine)), H5TILE_OK, "write b")
    call expect(h5tile_write(MPI_COMM_WORLD, at("b.h5"), "/other", H5TILE_FLOAT64, gshape, &
      my_offset, my_shape, c_loc(mine), h5tile_write_options_default()), H5TILE_OK, &
      "write b without KEEP_OTHERS")
    call expect(h5tile_read(MPI_COMM_WORLD, at("b.h5"), "/field", H5TILE_FLOAT64, origin, &
      gshape, c_loc(whole)), H5TILE_ERR_NOT_FOUND, "the replaced file's first dataset")
    mine = mine / 2
  end subroutine

  ! H5TILE_LAYOUT_SINGLE: one file, no tile folder, the same values.
  subroutine test_single_layout()
    wo = h5tile_write_options_default()
    wo%layout = H5TILE_LAYOUT_SINGLE
    call expect(h5tile_write(MPI_COMM_WORLD, at("single.h5"), "/field", H5TILE_FLOAT64, &
      gshape, my_offset, my_shape, c_loc(mine), wo), H5TILE_OK, "write SINGLE")
    call check(.not. exists(at("single.h5.tiles")), "SINGLE makes no tile folder")
    call read_whole("single.h5", "/field", 1.0d0, "read SINGLE")
  end subroutine

  ! H5TILE_LAYOUT_SUBFILES with ranks_per_file = 1 and H5TILE_NO_SYNC: one subfile a rank in
  ! the tile folder, the same values.
  subroutine test_subfiles_layout()
    wo = h5tile_write_options_default()
    call check(wo%ranks_per_file == 0, "ranks_per_file defaults to 0")
    wo%layout = H5TILE_LAYOUT_SUBFILES
    wo%flags = H5TILE_NO_SYNC
    wo%ranks_per_file = 1
    call expect(h5tile_write(MPI_COMM_WORLD, at("subfiles.h5"), "/field", H5TILE_FLOAT64, &
      gshape, my_offset, my_shape, c_loc(mine), wo), H5TILE_OK, "write SUBFILES")
    call check(exists(at("subfiles.h5.tiles")), "SUBFILES keeps its subfiles in the tile folder")
    call read_whole("subfiles.h5", "/field", 1.0d0, "read SUBFILES")
  end subroutine

  ! Tiles of the shape less its last x plane: a gap, refused unless H5TILE_ALLOW_PARTIAL, which
  ! reads back as zero.
  subroutine test_allow_partial()
    integer(c_int64_t) :: off(3), ext(3)
    real(c_double), allocatable, target :: part(:, :, :)
    call expect(h5tile_partition(nranks, rank, [gshape(1) - 1, gshape(2), gshape(3)], off, &
      ext), H5TILE_OK, "partition without the last plane")
    allocate(part(max(ext(1), 1_c_int64_t), max(ext(2), 1_c_int64_t), max(ext(3), 1_c_int64_t)))
    call fill(part, off, ext, 1.0d0)
    call expect(h5tile_write(MPI_COMM_WORLD, at("partial.h5"), "/field", H5TILE_FLOAT64, &
      gshape, off, ext, c_loc(part)), H5TILE_ERR_SHAPE, "write with a gap")
    wo = h5tile_write_options_default()
    wo%flags = H5TILE_ALLOW_PARTIAL
    call expect(h5tile_write(MPI_COMM_WORLD, at("partial.h5"), "/field", H5TILE_FLOAT64, &
      gshape, off, ext, c_loc(part), wo), H5TILE_OK, "write with ALLOW_PARTIAL")
    whole = -1
    call expect(h5tile_read(MPI_COMM_WORLD, at("partial.h5"), "/field", H5TILE_FLOAT64, &
      origin, gshape, c_loc(whole)), H5TILE_OK, "read partial")
    call check_values(whole(1:nx - 1, :, :), origin, [gshape(1) - 1, gshape(2), gshape(3)], &
      1.0d0, "written part")
    call check(all(whole(nx, :, :) == 0), "the gap reads as zero")
  end subroutine

  ! Several tiles per rank (2*nranks+1 tiles of h5tile_partition; with more than one rank the
  ! last one has none), then the same doubled through h5tile_write_tiles_async.
  subroutine test_write_tiles()
    type :: block
      real(c_double), allocatable :: v(:, :, :)
    end type
    type(block), allocatable, target :: blocks(:)
    integer(c_int64_t), allocatable :: offs(:, :), exts(:, :)
    type(c_ptr), allocatable :: bufs(:)
    type(h5tile_request) :: req
    integer :: nt, t, m, owners
    nt = 2 * nranks + 1
    owners = max(nranks - 1, 1)
    m = 0
    do t = 0, nt - 1
      if (mod(t, owners) == rank) m = m + 1
    end do
    allocate(blocks(m), offs(3, m), exts(3, m), bufs(m))
    m = 0
    do t = 0, nt - 1
      if (mod(t, owners) /= rank) cycle
      m = m + 1
      call expect(h5tile_partition(nt, t, gshape, offs(:, m), exts(:, m)), H5TILE_OK, &
        "partition into tiles")
      allocate(blocks(m)%v(max(exts(1, m), 1_c_int64_t), max(exts(2, m), 1_c_int64_t), &
        max(exts(3, m), 1_c_int64_t)))
      call fill(blocks(m)%v, offs(:, m), exts(:, m), 1.0d0)
      bufs(m) = c_null_ptr
      if (all(exts(:, m) > 0)) bufs(m) = c_loc(blocks(m)%v)
    end do
    call expect(h5tile_write_tiles(MPI_COMM_WORLD, at("tiles.h5"), "/field", H5TILE_FLOAT64, &
      gshape, offs, exts, bufs), H5TILE_OK, "write_tiles")
    call read_whole("tiles.h5", "/field", 1.0d0, "read after write_tiles")

    do t = 1, m
      blocks(t)%v = 2 * blocks(t)%v
    end do
    wo = h5tile_write_options_default()
    wo%layout = H5TILE_LAYOUT_SINGLE
    call expect(h5tile_write_tiles_async(MPI_COMM_WORLD, at("tiles_async.h5"), "/field", &
      H5TILE_FLOAT64, gshape, offs, exts, bufs, req, wo), H5TILE_OK, "write_tiles_async")
    call expect(h5tile_wait(req), H5TILE_OK, "wait for write_tiles_async")
    call check(.not. exists(at("tiles_async.h5.tiles")), "write_tiles_async took its options")
    call read_whole("tiles_async.h5", "/field", 2.0d0, "read after write_tiles_async")

    ! Overlapping tiles fail on every rank; offsets and shapes not (ndim, ntiles) are refused.
    if (rank == 0) then
      call expect(h5tile_write_tiles(MPI_COMM_WORLD, at("overlap.h5"), "/field", &
        H5TILE_FLOAT64, gshape, reshape([origin, origin], [3, 2]), &
        reshape([gshape, gshape], [3, 2]), [c_loc(whole), c_loc(whole)]), H5TILE_ERR_SHAPE, &
        "write_tiles with overlapping tiles")
    else
      call expect(h5tile_write_tiles(MPI_COMM_WORLD, at("overlap.h5"), "/field", &
        H5TILE_FLOAT64, gshape, offs(:, 1:0), exts(:, 1:0), bufs(1:0)), H5TILE_ERR_SHAPE, &
        "write_tiles with overlapping tiles elsewhere")
    end if
    call expect(h5tile_write_tiles(MPI_COMM_WORLD, at("bad.h5"), "/field", H5TILE_FLOAT64, &
      gshape, offs, exts, [bufs, c_null_ptr]), H5TILE_ERR_INVALID_ARGUMENT, &
      "write_tiles with more buffers than tiles")
    call expect_message("write_tiles with more buffers than tiles")
  end subroutine

  ! h5tile_write_async with a type(h5tile_request): completed by h5tile_fence, then by
  ! h5tile_wait at once; its options take effect.
  subroutine test_write_async()
    type(h5tile_request) :: req
    integer :: status
    real(c_double), allocatable, target, asynchronous :: a(:, :, :)
    allocate(a, source=mine)
    a = 3 * a
    wo = h5tile_write_options_default()
    wo%layout = H5TILE_LAYOUT_SINGLE
    call expect(h5tile_write_async(MPI_COMM_WORLD, at("async.h5"), "/field", H5TILE_FLOAT64, &
      gshape, my_offset, my_shape, c_loc(a), req, wo), H5TILE_OK, "write_async")
    call expect(h5tile_fence(MPI_COMM_WORLD), H5TILE_OK, "fence")
    call expect(h5tile_wait(req), H5TILE_OK, "wait after the fence")
    call check(.not. exists(at("async.h5.tiles")), "write_async took its options")
    call read_whole("async.h5", "/field", 3.0d0, "read after write_async")
    wo%flags = H5TILE_NO_OVERWRITE
    status = h5tile_write_async(MPI_COMM_WORLD, at("async.h5"), "/field", H5TILE_FLOAT64, &
      gshape, my_offset, my_shape, c_loc(mine), req, opts=wo)
    if (status == H5TILE_OK) status = h5tile_wait(req)
    call expect(status, H5TILE_ERR_EXISTS, "write_async with NO_OVERWRITE")
    call read_whole("async.h5", "/field", 3.0d0, "read after a refused write_async")
    ! The request was completed: waiting again is a NULL request.
    call expect(h5tile_wait(req), H5TILE_ERR_INVALID_ARGUMENT, "wait for a completed request")
  end subroutine

  ! Rank 0's tile file removed: a read fails with H5TILE_ERR_MISSING_TILE, and with
  ! H5TILE_READ_FILL_MISSING reads that tile as zero.
  subroutine test_fill_missing()
    integer(c_int64_t) :: off(3), ext(3)
    call expect(h5tile_write(MPI_COMM_WORLD, at("missing.h5"), "/field", H5TILE_FLOAT64, &
      gshape, my_offset, my_shape, c_loc(mine)), H5TILE_OK, "write missing.h5")
    if (rank == 0) call shell("rm '" // at("missing.h5.tiles") // "'/field.*.r0.t0.h5")
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call expect(h5tile_read(MPI_COMM_WORLD, at("missing.h5"), "/field", H5TILE_FLOAT64, &
      origin, gshape, c_loc(whole)), H5TILE_ERR_MISSING_TILE, "read with a missing tile")
    call expect_message("read with a missing tile")
    ro = h5tile_read_options_default()
    ro%flags = H5TILE_READ_FILL_MISSING
    ro%dtype = H5TILE_FLOAT64
    whole = -1
    call expect(h5tile_read(MPI_COMM_WORLD, at("missing.h5"), "/field", H5TILE_FLOAT64, &
      origin, gshape, c_loc(whole), ro), H5TILE_OK, "read with READ_FILL_MISSING")
    call expect(h5tile_partition(nranks, 0, gshape, off, ext), H5TILE_OK, "rank 0's tile")
    call check(all(whole(off(1) + 1:off(1) + ext(1), off(2) + 1:off(2) + ext(2), &
      off(3) + 1:off(3) + ext(3)) == 0), "the missing tile reads as zero")
    call fill(whole(off(1) + 1:off(1) + ext(1), off(2) + 1:off(2) + ext(2), &
      off(3) + 1:off(3) + ext(3)), off, ext, 1.0d0)
    call check_values(whole, origin, gshape, 1.0d0, "the other tiles with READ_FILL_MISSING")
  end subroutine

  ! Chunks of (3, 4, 2) over the ranks: each rank gets a contiguous run in Fortran order, each
  ! with its offset, clipped shape and values; together every element exactly once.
  subroutine test_batches()
    integer(c_int64_t), parameter :: chunk(3) = [3, 4, 2]
    integer(c_int64_t), parameter :: nchunks_all = 18
    type(h5tile_batches) :: it
    real(c_double), target :: buf(3 * 4 * 2)
    integer(c_int64_t) :: off(3), ext(3), nchunks, got, ordinal, last
    integer(c_size_t) :: max_bytes
    integer :: dtype, hits(nx, ny, nz), total(nx, ny, nz)
    logical :: done
    call expect(h5tile_batches_open(MPI_COMM_WORLD, at("a.h5"), "/field", chunk, it), &
      H5TILE_OK, "batches_open")
    call expect(h5tile_batches_info(it, dtype, max_bytes, nchunks), H5TILE_OK, "batches_info")
    call check(dtype == H5TILE_FLOAT64 .and. max_bytes == 3 * 4 * 2 * 8, "batches_info")
    if (nchunks > 0) then
      ! A buffer too small is refused and the iterator does not advance.
      call expect(h5tile_batches_next(it, c_loc(buf), 8_c_size_t, off, ext, done), &
        H5TILE_ERR_INVALID_ARGUMENT, "batches_next with a small buffer")
      call expect_message("batches_next with a small buffer")
    end if
    hits = 0
    got = 0
    last = -1
    do
      buf = -1
      call expect(h5tile_batches_next(it, c_loc(buf), c_sizeof(buf), off, ext, done), &
        H5TILE_OK, "batches_next")
      if (done) exit
      got = got + 1
      call check(all(mod(off, chunk) == 0) .and. all(ext == min(chunk, gshape - off)), &
        "chunk offset and clipped shape")
      ordinal = off(1) / chunk(1) + 3 * (off(2) / chunk(2) + 3 * (off(3) / chunk(3)))
      call check(last < 0 .or. ordinal == last + 1, "chunks in Fortran order, contiguous")
      last = ordinal
      call check_values(reshape(buf(1:product(ext)), ext), off, ext, 1.0d0, "chunk values")
      hits(off(1) + 1:off(1) + ext(1), off(2) + 1:off(2) + ext(2), &
        off(3) + 1:off(3) + ext(3)) = hits(off(1) + 1:off(1) + ext(1), &
        off(2) + 1:off(2) + ext(2), off(3) + 1:off(3) + ext(3)) + 1
    end do
    call check(got == nchunks, "batches_info's count of chunks")
    call expect(h5tile_batches_next(it, c_loc(buf), c_sizeof(buf), off, ext, done), &
      H5TILE_OK, "batches_next after the end")
    call check(done, "done stays true")
    call h5tile_batches_free(it)
    call h5tile_batches_free(it)
    call expect(h5tile_batches_next(it, c_loc(buf), c_sizeof(buf), off, ext, done), &
      H5TILE_ERR_INVALID_ARGUMENT, "batches_next on a freed iterator")
    call MPI_Allreduce(hits, total, nx * ny * nz, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call check(all(total == 1), "every element in exactly one chunk of one rank")
    call MPI_Allreduce(MPI_IN_PLACE, got, 1, MPI_INTEGER8, MPI_SUM, MPI_COMM_WORLD, ierr)
    call check(got == nchunks_all, "every chunk delivered once")
  end subroutine

  ! MPI_COMM_NULL: this process gets every chunk; converted to int32 (opts%dtype), which
  ! narrows the float64 data and so is refused without H5TILE_READ_NARROWING, and seen
  ! without a copy (batches_next_view).
  subroutine test_batches_alone()
    integer(c_int64_t), parameter :: chunk(3) = [4, 4, 4]
    type(h5tile_batches) :: it
    type(c_ptr) :: data
    integer(c_int32_t), pointer :: view(:, :, :)
    integer(c_int64_t) :: off(3), ext(3), nchunks, got
    integer(c_size_t) :: max_bytes
    integer :: dtype, hits(nx, ny, nz), i, j, k, bad
    logical :: done
    ro = h5tile_read_options_default()
    ro%dtype = H5TILE_INT32
    call expect(h5tile_batches_open(MPI_COMM_NULL, at("single.h5"), "/field", chunk, it, ro), &
      H5TILE_ERR_DTYPE, "batches_open alone, narrowing without the flag")
    ro%flags = H5TILE_READ_NARROWING
    call expect(h5tile_batches_open(MPI_COMM_NULL, at("single.h5"), "/field", chunk, it, ro), &
      H5TILE_OK, "batches_open alone")
    call expect(h5tile_batches_info(it, nchunks=nchunks), H5TILE_OK, "batches_info count")
    call expect(h5tile_batches_info(it, max_chunk_bytes=max_bytes, dtype=dtype), H5TILE_OK, &
      "batches_info")
    ! 2 x 3 x 1 chunks, the largest (4, 4, 3) int32 values.
    call check(nchunks == 2 * 3 * 1 .and. dtype == H5TILE_INT32 .and. &
      max_bytes == 4 * 4 * 3 * 4, "batches_info alone")
    hits = 0
    got = 0
    bad = 0
    do
      call expect(h5tile_batches_next_view(it, data, off, ext, done), H5TILE_OK, "next_view")
      if (done) exit
      got = got + 1
      call check(all(ext == min(chunk, gshape - off)), "clipped shape")
      call c_f_pointer(data, view, ext)
      do k = 1, int(ext(3))
        do j = 1, int(ext(2))
          do i = 1, int(ext(1))
            if (view(i, j, k) /= &
              int(value_at(off(1) + i - 1, off(2) + j - 1, off(3) + k - 1))) bad = bad + 1
            hits(off(1) + i, off(2) + j, off(3) + k) = &
              hits(off(1) + i, off(2) + j, off(3) + k) + 1
          end do
        end do
      end do
    end do
    call check(.not. c_associated(data), "no data once done")
    call check(bad == 0, "int32 values of next_view")
    call check(got == nchunks .and. all(hits == 1), "every chunk to this process, once")
    call h5tile_batches_free(it)
    ! Bad opens: the exact codes, and no iterator.
    call expect(h5tile_batches_open(MPI_COMM_WORLD, at("a.h5"), "/nope", chunk, it), &
      H5TILE_ERR_NOT_FOUND, "batches_open of a missing dataset")
    call expect(h5tile_batches_open(MPI_COMM_WORLD, at("a.h5"), "/field", chunk(1:2), it), &
      H5TILE_ERR_INVALID_ARGUMENT, "batches_open with a 2-d chunk")
    call expect(h5tile_batches_open(MPI_COMM_WORLD, at("a.h5"), "/field", [1_c_int64_t, &
      0_c_int64_t, 1_c_int64_t], it), H5TILE_ERR_INVALID_ARGUMENT, "batches_open, zero chunk")
    call expect(h5tile_batches_info(it, nchunks=nchunks), H5TILE_ERR_INVALID_ARGUMENT, &
      "batches_info without an iterator")
  end subroutine

  subroutine test_bad_calls()
    integer(c_int64_t) :: off(3), ext(3), off2(2)
    call expect(h5tile_read(MPI_COMM_WORLD, at("a.h5"), "/field", H5TILE_FLOAT64, &
      [0_c_int64_t, 0_c_int64_t, 1_c_int64_t], gshape, c_loc(whole)), H5TILE_ERR_SHAPE, &
      "read outside the dataset")
    call expect_message("read outside the dataset")
    call expect(h5tile_read(MPI_COMM_WORLD, at("nothing.h5"), "/field", H5TILE_FLOAT64, &
      origin, gshape, c_loc(whole)), H5TILE_ERR_NOT_FOUND, "read of a missing file")
    call expect(h5tile_read(MPI_COMM_WORLD, at("a.h5"), "/field", H5TILE_FLOAT64, &
      [0_c_int64_t, 0_c_int64_t], gshape, c_loc(whole)), H5TILE_ERR_INVALID_ARGUMENT, &
      "read with 2 offsets and 3 extents")
    call expect_message("read with 2 offsets and 3 extents")
    call expect(h5tile_write(MPI_COMM_WORLD, at("c.h5"), "/field", 99, gshape, my_offset, &
      my_shape, c_loc(mine)), H5TILE_ERR_DTYPE, "write with an unknown dtype")
    wo = h5tile_write_options_default()
    wo%size = 0
    call expect(h5tile_write(MPI_COMM_WORLD, at("c.h5"), "/field", H5TILE_FLOAT64, gshape, &
      my_offset, my_shape, c_loc(mine), wo), H5TILE_ERR_INVALID_ARGUMENT, &
      "write options of size 0")
    wo = h5tile_write_options_default()
    wo%layout = 7
    call expect(h5tile_write(MPI_COMM_WORLD, at("c.h5"), "/field", H5TILE_FLOAT64, gshape, &
      my_offset, my_shape, c_loc(mine), wo), H5TILE_ERR_INVALID_ARGUMENT, "unknown layout")
    call check(.not. exists(at("c.h5")), "nothing written by bad writes")
    ro = h5tile_read_options_default()
    ro%flags = 8
    call expect(h5tile_read(MPI_COMM_WORLD, at("a.h5"), "/field", H5TILE_FLOAT64, origin, &
      gshape, c_loc(whole), ro), H5TILE_ERR_INVALID_ARGUMENT, "unknown read flag")
    call expect(h5tile_partition(3, 3, gshape, off, ext), H5TILE_ERR_INVALID_ARGUMENT, &
      "partition of rank 3 of 3")
    call expect_message("partition of rank 3 of 3")
    call expect(h5tile_partition(3, -1, gshape, off, ext), H5TILE_ERR_INVALID_ARGUMENT, &
      "partition of rank -1")
    call expect(h5tile_partition(3, 0, gshape, off2, ext), H5TILE_ERR_INVALID_ARGUMENT, &
      "partition with 2 offsets")
    call expect_message("partition with 2 offsets")
    ! And a success clears the message.
    call expect(h5tile_partition(3, 0, gshape, off, ext), H5TILE_OK, "partition")
    call expect_text(h5tile_last_error(), "", "message after a success")
  end subroutine

  ! h5tile_last_errno: the operating system's error number behind the last failure, the same
  ! on every rank of a collective call (those told of another rank's failure too); 0 after a
  ! success and after a failure with no operating-system cause.
  subroutine test_os_errno()
    ! Linux's errno values (no Fortran module names them): ENOTDIR is 20, ENAMETOOLONG 36.
    integer, parameter :: ENOTDIR = 20, ENAMETOOLONG = 36
    integer(c_int64_t) :: off(3), ext(3)
    ! a.h5 is a regular file: a path under it is not a directory.
    call expect(h5tile_read(MPI_COMM_WORLD, at("a.h5/under.h5"), "/field", H5TILE_FLOAT64, &
      origin, gshape, c_loc(whole)), H5TILE_ERR_IO, "read of a path under a regular file")
    call check(h5tile_last_errno() == ENOTDIR, "errno of a read under a regular file: " // &
      itoa(h5tile_last_errno()) // ", expected ENOTDIR (20): " // h5tile_last_error())
    ! A file name of 300 bytes, beyond the 255 a Linux file system takes.
    call expect(h5tile_write(MPI_COMM_WORLD, at(repeat("n", 300) // ".h5"), "/field", &
      H5TILE_FLOAT64, gshape, my_offset, my_shape, c_loc(mine)), H5TILE_ERR_IO, &
      "write of a name too long")
    call check(h5tile_last_errno() == ENAMETOOLONG, "errno of a write of a name too long: " // &
      itoa(h5tile_last_errno()) // ", expected ENAMETOOLONG (36): " // h5tile_last_error())
    call expect(h5tile_partition(3, 0, gshape, off, ext), H5TILE_OK, "partition")
    call check(h5tile_last_errno() == 0, "errno after a success")
    call expect(h5tile_read(MPI_COMM_WORLD, at("a.h5"), "/nope", H5TILE_FLOAT64, origin, &
      gshape, c_loc(whole)), H5TILE_ERR_NOT_FOUND, "read of a missing dataset")
    call check(h5tile_last_errno() == 0, "errno of a failure with no operating-system cause: " &
      // itoa(h5tile_last_errno()))
  end subroutine

  ! --- helpers ---

  real(c_double) function value_at(i, j, k)
    integer(c_int64_t), intent(in) :: i, j, k
    value_at = real(i + 100 * j + 10000 * k, c_double)
  end function

  subroutine fill(a, off, ext, scale)
    real(c_double), intent(out) :: a(:, :, :)
    integer(c_int64_t), intent(in) :: off(3), ext(3)
    real(c_double), intent(in) :: scale
    integer(c_int64_t) :: i, j, k
    a = 0
    do k = 1, ext(3)
      do j = 1, ext(2)
        do i = 1, ext(1)
          a(i, j, k) = scale * value_at(off(1) + i - 1, off(2) + j - 1, off(3) + k - 1)
        end do
      end do
    end do
  end subroutine

  subroutine check_values(a, off, ext, scale, what)
    real(c_double), intent(in) :: a(:, :, :)
    integer(c_int64_t), intent(in) :: off(3), ext(3)
    real(c_double), intent(in) :: scale
    character(len=*), intent(in) :: what
    integer(c_int64_t) :: i, j, k
    integer :: bad
    bad = 0
    do k = 1, ext(3)
      do j = 1, ext(2)
        do i = 1, ext(1)
          if (a(i, j, k) /= scale * value_at(off(1) + i - 1, off(2) + j - 1, off(3) + k - 1)) &
            bad = bad + 1
        end do
      end do
    end do
    if (bad /= 0) print *, "rank", rank, ":", bad, "wrong values"
    call check(bad == 0, what)
  end subroutine

  ! Every rank reads the whole dataset and checks every value.
  ! Shapes and offsets as default-kind integers: every generic taking them has that form too
  ! (write, write_tiles, both async forms, read, batches_open), with the same effect.
  subroutine test_default_kind_shapes()
    integer :: g(3), off(3), ext(3), offs(3, 1), exts(3, 1), chunk(3), status
    type(h5tile_request) :: req
    type(c_ptr) :: bare
    type(h5tile_batches) :: it
    integer(c_int64_t) :: coff(3), cext(3)
    logical :: done
    real(c_double), allocatable, target, asynchronous :: a(:, :, :), b(:, :, :)
    real(c_double), target :: buf(nx * ny * nz)
    g = int(gshape)
    off = int(my_offset)
    ext = int(my_shape)
    offs(:, 1) = off
    exts(:, 1) = ext
    allocate(a, source=5 * mine)
    allocate(b, source=7 * mine)
    call expect(h5tile_write(MPI_COMM_WORLD, at("kind.h5"), "/w", H5TILE_FLOAT64, g, off, ext, &
      c_loc(a)), H5TILE_OK, "write with default-kind shapes")
    call read_whole("kind.h5", "/w", 5.0d0, "read after write with default-kind shapes")
    call expect(h5tile_write_tiles(MPI_COMM_WORLD, at("kind.h5"), "/w", H5TILE_FLOAT64, g, offs, &
      exts, [c_loc(b)]), H5TILE_OK, "write_tiles with default-kind shapes")
    call read_whole("kind.h5", "/w", 7.0d0, "read after write_tiles with default-kind shapes")
    call expect(h5tile_write_async(MPI_COMM_WORLD, at("kind.h5"), "/w", H5TILE_FLOAT64, g, off, &
      ext, c_loc(a), req), H5TILE_OK, "write_async with default-kind shapes")
    call expect(h5tile_wait(req), H5TILE_OK, "wait for write_async with default-kind shapes")
    call read_whole("kind.h5", "/w", 5.0d0, "read after write_async with default-kind shapes")
    call expect(h5tile_write_async(MPI_COMM_WORLD, at("kind.h5"), "/w", H5TILE_FLOAT64, g, off, &
      ext, c_loc(b), bare), H5TILE_OK, "write_async (c_ptr request) with default-kind shapes")
    call expect(h5tile_wait(bare), H5TILE_OK, "wait for the c_ptr request")
    call read_whole("kind.h5", "/w", 7.0d0, "read after the c_ptr request's write")
    call expect(h5tile_write_tiles_async(MPI_COMM_WORLD, at("kind.h5"), "/w", H5TILE_FLOAT64, &
      g, offs, exts, [c_loc(a)], req), H5TILE_OK, "write_tiles_async with default-kind shapes")
    call expect(h5tile_wait(req), H5TILE_OK, "wait for write_tiles_async")
    whole = -1
    call expect(h5tile_read(MPI_COMM_WORLD, at("kind.h5"), "/w", H5TILE_FLOAT64, [0, 0, 0], g, &
      c_loc(whole)), H5TILE_OK, "read with default-kind shapes")
    call check_values(whole, origin, gshape, 5.0d0, "read with default-kind shapes")
    chunk = [nx, ny, nz]
    call expect(h5tile_batches_open(MPI_COMM_NULL, at("kind.h5"), "/w", chunk, it), H5TILE_OK, &
      "batches_open with a default-kind chunk shape")
    call expect(h5tile_batches_next(it, c_loc(buf), c_sizeof(buf), coff, cext, done), H5TILE_OK, &
      "the one batch of a default-kind chunk shape")
    call check(.not. done .and. all(coff == 0) .and. all(cext == gshape), &
      "one batch covers the dataset")
    call check_values(reshape(buf, [nx, ny, nz]), origin, gshape, 5.0d0, &
      "batch with a default-kind chunk shape")
    call h5tile_batches_free(it)
    ! A short offset is still refused by the module, naming the counts.
    status = h5tile_write(MPI_COMM_WORLD, at("kind.h5"), "/w", H5TILE_FLOAT64, g, off(1:2), ext, &
      c_loc(a))
    call expect(status, H5TILE_ERR_INVALID_ARGUMENT, "default-kind offset of 2 entries")
    call check(index(h5tile_last_error(), "the offset and shape have 2 and 3 entries") > 0, &
      "the module's message names the counts")
    deallocate(a, b)
  end subroutine

  subroutine read_whole(file, dataset, scale, what)
    character(len=*), intent(in) :: file, dataset, what
    real(c_double), intent(in) :: scale
    whole = -1
    call expect(h5tile_read(MPI_COMM_WORLD, at(file), dataset, H5TILE_FLOAT64, origin, gshape, &
      c_loc(whole)), H5TILE_OK, what)
    call check_values(whole, origin, gshape, scale, what)
  end subroutine
end program
