! Checkpoints and series through the Fortran module, shapes and offsets in Fortran order:
!   1. one commit of two fields, a real64 u(nx, ny) split by h5tile_partition and an int32
!      vector split by ranks with default-kind shapes, and attributes of every typed form
!      (int32, int64, real32, real64; scalars and 1-D arrays, strided ones too), a string, and
!      the dtype/count/c_ptr form (uint8); a name set twice keeps the second value;
!   2. read back on another decomposition by h5tile_read, u seen by the library's own C-order
!      read as (ny, nx); every attribute by h5tile_attr_read, also converted (int64 to real64,
!      real64 to real32) and into a strided array; its errors: another count H5TILE_ERR_SHAPE,
!      text H5TILE_ERR_DTYPE, no attribute, object or file H5TILE_ERR_NOT_FOUND, the values
!      left as they were;
!   3. a failed add (another type on rank 0; an offset the module refuses) fails the commit on
!      every rank and leaves the file as it was; an aborted checkpoint writes nothing; abort and
!      commit of a checkpoint never begun or already freed;
!   4. h5tile_checkpoint_commit_async completed by h5tile_wait;
!   5. a series over steps 1..5 with keep_last = 2 (steps as integer(c_int64_t) and default
!      integers): after each commit the steps kept are those the rule names; h5tile_series_latest
!      gives step 5 and its path (blank-padded), with and without H5TILE_SERIES_VERIFY, into
!      either kind of step, with no path; restart from it; a path too short, unknown flags, a
!      negative step, a folder with no checkpoint.
! h5py_fortran_checkpoint.py then checks the files with h5py.
!   fortran_checkpoint SCRATCH_DIR
program fortran_checkpoint
  use mpi
  use h5tile
  use fortran_checks
  use, intrinsic :: iso_c_binding
  implicit none
  integer, parameter :: nx = 6, ny = 5
  integer(c_int64_t), parameter :: gshape(2) = [integer(c_int64_t) :: nx, ny]
  integer :: ierr, rank, nranks, nn, k0, nk
  integer(c_int64_t) :: my_offset(2), my_shape(2)
  real(c_double), allocatable, target :: u(:, :)
  integer(c_int32_t), allocatable, target :: v(:)

  call test_start(rank, nranks, MPI_THREAD_MULTIPLE)

  ! This rank's tile of u (h5tile_partition) and its run of the vector /group/n.
  call expect(h5tile_partition(nranks, rank, gshape, my_offset, my_shape), H5TILE_OK, &
    "partition")
  allocate(u(max(my_shape(1), 1_c_int64_t), max(my_shape(2), 1_c_int64_t)))
  nn = 2 * nranks + 1
  call split(nn, nranks, rank, k0, nk)
  allocate(v(max(nk, 1)))

  call test_commit()
  call test_read_back()
  call test_attr_errors()
  call test_failed_commits()
  call test_abort()
  call test_commit_async()
  call test_series()

  deallocate(u, v)
  call test_end("fortran checkpoints OK on")

contains

  real(c_double) function u_value(version, i, j)
    integer, intent(in) :: version, i, j
    u_value = 100000.0d0 * version + 1000.0d0 * j + i
  end function

  ! Fills this rank's buffers with version `version` of both fields.
  subroutine fill(version)
    integer, intent(in) :: version
    integer :: i, j, k
    do j = 1, int(my_shape(2))
      do i = 1, int(my_shape(1))
        u(i, j) = u_value(version, int(my_offset(1)) + i - 1, int(my_offset(2)) + j - 1)
      end do
    end do
    do k = 1, nk
      v(k) = 10 * version + k0 + k - 1
    end do
  end subroutine

  ! Adds both fields (version `version`) and every attribute to ck.
  subroutine add_fields(ck, version)
    type(h5tile_checkpoint), intent(in) :: ck
    integer, intent(in) :: version
    integer(c_int8_t), target :: flags(3)
    real(c_double) :: spaced(5)
    call fill(version)
    call expect(h5tile_checkpoint_add(ck, "/u", H5TILE_FLOAT64, gshape, my_offset, my_shape, &
      c_loc(u)), H5TILE_OK, "add /u")
    ! Default-kind shapes.
    call expect(h5tile_checkpoint_add(ck, "/group/n", H5TILE_INT32, [nn], [k0], [nk], c_loc(v)), &
      H5TILE_OK, "add /group/n")
    ! Set twice: the second value is kept.
    call expect(h5tile_checkpoint_attr(ck, "/", "step", -1_c_int64_t), H5TILE_OK, "attr step")
    call expect(h5tile_checkpoint_attr(ck, "/", "step", int(version, c_int64_t)), H5TILE_OK, &
      "attr step again")
    ! A strided array: its elements 1, 3, 5.
    spaced = [version + 0.5d0, -1d0, version + 0.25d0, -1d0, version + 0.125d0]
    call expect(h5tile_checkpoint_attr(ck, "/", "times", spaced(1:5:2)), H5TILE_OK, "attr times")
    call expect(h5tile_checkpoint_attr(ck, "/", "shape", gshape), H5TILE_OK, "attr shape")
    call expect(h5tile_checkpoint_attr_string(ck, "/u", "units", "m/s"), H5TILE_OK, &
      "attr units")
    call expect(h5tile_checkpoint_attr(ck, "/u", "cfl", 0.5_c_float), H5TILE_OK, "attr cfl")
    call expect(h5tile_checkpoint_attr(ck, "/group", "ranks", int(nranks, c_int32_t)), &
      H5TILE_OK, "attr ranks")
    call expect(h5tile_checkpoint_attr(ck, "/group", "tiles", [1_c_int32_t, 2_c_int32_t, &
      3_c_int32_t]), H5TILE_OK, "attr tiles")
    call expect(h5tile_checkpoint_attr(ck, "/group/n", "weights", [1.5_c_float, 2.5_c_float]), &
      H5TILE_OK, "attr weights")
    ! Any element type: dtype, count and the values' address (uint8 200 from the byte -56).
    flags = [1_c_int8_t, 2_c_int8_t, -56_c_int8_t]
    call expect(h5tile_checkpoint_attr(ck, "/", "flags", H5TILE_UINT8, 3, c_loc(flags)), &
      H5TILE_OK, "attr flags")
  end subroutine

  ! Begins a checkpoint of `file` (with the write options wo where given), and adds both
  ! fields (version `version`) and every attribute to it.
  subroutine begin_with_fields(file, version, ck, what, wo)
    character(len=*), intent(in) :: file, what
    integer, intent(in) :: version
    type(h5tile_checkpoint), intent(out) :: ck
    type(h5tile_write_options), intent(in), optional :: wo
    call expect(h5tile_checkpoint_begin(MPI_COMM_WORLD, at(file), ck, wo), H5TILE_OK, what)
    call add_fields(ck, version)
  end subroutine

  subroutine test_commit()
    type(h5tile_checkpoint) :: ck
    call begin_with_fields("ck.h5", 1, ck, "begin")
    call expect(h5tile_checkpoint_commit(ck), H5TILE_OK, "commit")
    call expect_text(h5tile_last_error(), "", "message after a commit")
    call check(exists(at("ck.h5.tiles")), "the VDS layout has its tile folder")
  end subroutine

  ! Every rank reads rows i0+1..i0+ni of u (another decomposition) and the whole vector.
  subroutine check_fields(path, version, what)
    character(len=*), intent(in) :: path, what
    integer, intent(in) :: version
    real(c_double), allocatable, target :: b(:, :)
    integer(c_int32_t), target :: whole_n(nn)
    integer :: i, j, i0, ni, bad
    integer(c_int64_t) :: at_version
    call split(nx, nranks, nranks - 1 - rank, i0, ni)
    allocate(b(max(ni, 1), ny))
    b = -1
    call expect(h5tile_read(MPI_COMM_WORLD, path, "/u", H5TILE_FLOAT64, &
      [int(i0, c_int64_t), 0_c_int64_t], [int(ni, c_int64_t), int(ny, c_int64_t)], c_loc(b)), &
      H5TILE_OK, what // ": read /u")
    bad = 0
    do j = 1, ny
      do i = 1, ni
        if (b(i, j) /= u_value(version, i0 + i - 1, j - 1)) bad = bad + 1
      end do
    end do
    call check(bad == 0, what // ": values of /u")
    whole_n = -1
    call expect(h5tile_read(MPI_COMM_WORLD, path, "/group/n", H5TILE_INT32, [0], [nn], &
      c_loc(whole_n)), H5TILE_OK, what // ": read /group/n")
    call check(all(whole_n == [(10 * version + i, i = 0, nn - 1)]), what // ": values of /group/n")
    at_version = -1
    call expect(h5tile_attr_read(MPI_COMM_WORLD, path, "/", "step", at_version), H5TILE_OK, &
      what // ": attr_read step")
    call check(at_version == version, what // ": attribute step")
    deallocate(b)
  end subroutine

  subroutine test_read_back()
    real(c_double), target :: cwhole(nx * ny)
    integer :: dtype, ndim, i, j
    integer(c_int64_t) :: shape(32), step64, shape_attr(2)
    integer(c_int32_t) :: ranks32, tiles(3)
    real(c_double) :: step_as_real, times(3), spaced(5)
    real(c_float) :: times32(3), cfl, weights(2)
    integer(c_int8_t), target :: flags(3)
    call check_fields(at("ck.h5"), 1, "ck.h5")
    call expect(h5tile_inspect(at("ck.h5"), "/u", dtype, ndim, shape), H5TILE_OK, "inspect")
    call check(dtype == H5TILE_FLOAT64 .and. ndim == 2 .and. all(shape(1:2) == gshape), &
      "inspect: dtype, ndim, Fortran-order shape")
    ! C order: (ny, nx), element [j][i] = u(i+1, j+1).
    cwhole = -1
    call expect(c_read_f(MPI_COMM_WORLD, at("ck.h5") // c_null_char, "/u" // c_null_char, &
      H5TILE_FLOAT64, 2_c_size_t, [0_c_int64_t, 0_c_int64_t], &
      [int(ny, c_int64_t), int(nx, c_int64_t)], c_loc(cwhole), c_null_ptr), H5TILE_OK, &
      "C-order read of /u as (ny, nx)")
    call check(all(cwhole == [((u_value(1, i, j), i = 0, nx - 1), j = 0, ny - 1)]), &
      "the library sees u(nx, ny) as (ny, nx)")

    call expect(h5tile_attr_read(MPI_COMM_WORLD, at("ck.h5"), "/", "step", step64), H5TILE_OK, &
      "step as int64")
    call check(step64 == 1, "step as int64")
    call expect(h5tile_attr_read(MPI_COMM_WORLD, at("ck.h5"), "/", "step", step_as_real), &
      H5TILE_OK, "step as real64")
    call check(step_as_real == 1, "step converted to real64")
    call expect(h5tile_attr_read(MPI_COMM_WORLD, at("ck.h5"), "/", "times", times), H5TILE_OK, &
      "times")
    call check(all(times == [1.5d0, 1.25d0, 1.125d0]), "times")
    call expect(h5tile_attr_read(MPI_COMM_WORLD, at("ck.h5"), "/", "times", times32), &
      H5TILE_OK, "times as real32")
    call check(all(times32 == [1.5, 1.25, 1.125]), "times converted to real32")
    spaced = -1
    call expect(h5tile_attr_read(MPI_COMM_WORLD, at("ck.h5"), "/", "times", spaced(1:5:2)), &
      H5TILE_OK, "times into a strided array")
    call check(all(spaced == [1.5d0, -1d0, 1.25d0, -1d0, 1.125d0]), "times into elements 1, 3, 5")
    call expect(h5tile_attr_read(MPI_COMM_WORLD, at("ck.h5"), "/", "shape", shape_attr), &
      H5TILE_OK, "shape")
    call check(all(shape_attr == gshape), "shape")
    call expect(h5tile_attr_read(MPI_COMM_WORLD, at("ck.h5"), "/u", "cfl", cfl), H5TILE_OK, "cfl")
    call check(cfl == 0.5, "cfl")
    call expect(h5tile_attr_read(MPI_COMM_WORLD, at("ck.h5"), "/group", "ranks", ranks32), &
      H5TILE_OK, "ranks")
    call check(ranks32 == nranks, "ranks")
    call expect(h5tile_attr_read(MPI_COMM_WORLD, at("ck.h5"), "/group", "tiles", tiles), &
      H5TILE_OK, "tiles")
    call check(all(tiles == [1, 2, 3]), "tiles")
    call expect(h5tile_attr_read(MPI_COMM_WORLD, at("ck.h5"), "/group/n", "weights", weights), &
      H5TILE_OK, "weights")
    call check(all(weights == [1.5, 2.5]), "weights")
    flags = 0
    call expect(h5tile_attr_read(MPI_COMM_WORLD, at("ck.h5"), "/", "flags", H5TILE_UINT8, 3, &
      c_loc(flags)), H5TILE_OK, "flags")
    call check(all(flags == [1_c_int8_t, 2_c_int8_t, -56_c_int8_t]), "flags")
  end subroutine

  subroutine test_attr_errors()
    real(c_double) :: two(2), one
    integer(c_int64_t) :: three(3)
    two = -7
    call expect(h5tile_attr_read(MPI_COMM_WORLD, at("ck.h5"), "/", "times", two), &
      H5TILE_ERR_SHAPE, "3 values read into 2")
    call expect_message("3 values read into 2")
    call check(all(two == -7), "values left as they were")
    one = -7
    call expect(h5tile_attr_read(MPI_COMM_WORLD, at("ck.h5"), "/", "times", one), &
      H5TILE_ERR_SHAPE, "3 values read into a scalar")
    call check(one == -7, "scalar left as it was")
    call expect(h5tile_attr_read(MPI_COMM_WORLD, at("ck.h5"), "/", "step", three), &
      H5TILE_ERR_SHAPE, "1 value read into 3")
    call expect(h5tile_attr_read(MPI_COMM_WORLD, at("ck.h5"), "/u", "units", one), &
      H5TILE_ERR_DTYPE, "text read as numbers")
    call expect(h5tile_attr_read(MPI_COMM_WORLD, at("ck.h5"), "/", "nothing", one), &
      H5TILE_ERR_NOT_FOUND, "no such attribute")
    call expect(h5tile_attr_read(MPI_COMM_WORLD, at("ck.h5"), "/nowhere", "step", one), &
      H5TILE_ERR_NOT_FOUND, "no such object")
    call expect(h5tile_attr_read(MPI_COMM_WORLD, at("none.h5"), "/", "step", one), &
      H5TILE_ERR_NOT_FOUND, "no such file")
    call expect(h5tile_attr_read(MPI_COMM_WORLD, at("ck.h5"), "/", "step", H5TILE_INT64, -1, &
      c_null_ptr), H5TILE_ERR_INVALID_ARGUMENT, "a negative count")
  end subroutine

  ! A failed add fails the commit on every rank, and the file keeps version 1.
  subroutine test_failed_commits()
    type(h5tile_checkpoint) :: ck
    call begin_with_fields("ck.h5", 2, ck, "begin 2")
    if (rank == 0) call expect(h5tile_checkpoint_add(ck, "/u", H5TILE_FLOAT32, gshape, &
      [0_c_int64_t, 0_c_int64_t], [0_c_int64_t, 0_c_int64_t], c_loc(u)), &
      H5TILE_ERR_INVALID_ARGUMENT, "add of /u as float32")
    call expect(h5tile_checkpoint_commit(ck), H5TILE_ERR_INVALID_ARGUMENT, &
      "commit after a failed add")
    call check(index(h5tile_last_error(), "was added as float64") > 0, &
      "the commit's message names the failed add")
    call check_fields(at("ck.h5"), 1, "ck.h5 after a failed commit")
    ! An offset of one entry for a 2-D dataset: refused by the module, and by the commit.
    call begin_with_fields("ck.h5", 3, ck, "begin 3")
    if (rank == nranks - 1) then
      call expect(h5tile_checkpoint_add(ck, "/w", H5TILE_FLOAT64, gshape, [0_c_int64_t], &
        my_shape, c_loc(u)), H5TILE_ERR_INVALID_ARGUMENT, "add with a short offset")
      call check(index(h5tile_last_error(), "the offset and shape have 1 and 2 entries") > 0, &
        "the module's message names the counts")
    end if
    call expect(h5tile_checkpoint_commit(ck), H5TILE_ERR_INVALID_ARGUMENT, &
      "commit after an add the module refused")
    call check(index(h5tile_last_error(), "the offset and shape have 1 and 2 entries") > 0, &
      "the commit's message names the add the module refused")
    call check_fields(at("ck.h5"), 1, "ck.h5 after the second failed commit")
    ! The checkpoint was freed: committing it again is refused.
    call expect(h5tile_checkpoint_commit(ck), H5TILE_ERR_INVALID_ARGUMENT, "commit again")
  end subroutine

  subroutine test_abort()
    type(h5tile_checkpoint) :: ck, never
    call h5tile_checkpoint_abort(never)
    call expect(h5tile_checkpoint_commit(never), H5TILE_ERR_INVALID_ARGUMENT, &
      "commit of a checkpoint never begun")
    call expect(h5tile_checkpoint_add(never, "/u", H5TILE_FLOAT64, gshape, my_offset, my_shape, &
      c_loc(u)), H5TILE_ERR_INVALID_ARGUMENT, "add to a checkpoint never begun")
    call begin_with_fields("ck.h5", 4, ck, "begin 4")
    call h5tile_checkpoint_abort(ck)
    call h5tile_checkpoint_abort(ck)
    call begin_with_fields("aborted.h5", 4, ck, "begin aborted.h5")
    call h5tile_checkpoint_abort(ck)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call check(.not. exists(at("aborted.h5")), "an aborted checkpoint writes no file")
    call check(.not. exists(at("aborted.h5.tiles")), "nor its tile folder")
    call check_fields(at("ck.h5"), 1, "ck.h5 after an abort")
  end subroutine

  subroutine test_commit_async()
    type(h5tile_checkpoint) :: ck
    type(h5tile_request) :: req
    type(h5tile_write_options) :: wo
    wo = h5tile_write_options_default()
    wo%layout = H5TILE_LAYOUT_SINGLE
    call begin_with_fields("async.h5", 5, ck, "begin async.h5", wo)
    call expect(h5tile_checkpoint_commit_async(ck, req), H5TILE_OK, "commit_async")
    call expect(h5tile_wait(req), H5TILE_OK, "wait")
    call check(.not. exists(at("async.h5.tiles")), "the single-file layout's options were used")
    call check_fields(at("async.h5"), 5, "async.h5")
  end subroutine

  subroutine test_series()
    type(h5tile_checkpoint) :: ck
    type(h5tile_series_options) :: so
    integer :: step, s, step32
    integer(c_int64_t) :: latest
    character(len=1024) :: path
    character(len=:), allocatable :: want
    character(len=8) :: short
    so = h5tile_series_options_default()
    call check(so%size == c_sizeof(so) .and. so%keep_last == 0 .and. so%keep_every == 0, &
      "series options defaults")
    so%keep_last = 2
    do step = 1, 5
      if (mod(step, 2) == 1) then
        call expect(h5tile_series_begin(MPI_COMM_WORLD, at("series"), int(step, c_int64_t), ck, &
          so), H5TILE_OK, "series_begin")
      else
        call expect(h5tile_series_begin(MPI_COMM_WORLD, at("series"), step, ck, sopts=so), &
          H5TILE_OK, "series_begin with a default-kind step")
      end if
      call add_fields(ck, 100 + step)
      call expect(h5tile_checkpoint_commit(ck), H5TILE_OK, "series commit")
      call MPI_Barrier(MPI_COMM_WORLD, ierr)
      do s = 1, step
        call check(exists(at("series/" // ckpt(s))) .eqv. s >= step - 1, &
          "after step " // itoa(step) // ", " // ckpt(s) // " kept as keep_last = 2 says")
      end do
    end do

    ! Restart: the newest complete checkpoint, its path blank-padded.
    want = at("series/" // ckpt(5))
    path = "x"
    latest = -1
    call expect(h5tile_series_latest(MPI_COMM_WORLD, at("series"), latest, path), H5TILE_OK, &
      "series_latest")
    call check(latest == 5, "the latest step is 5")
    call expect_text(trim(path), want, "the latest path")
    call check(len_trim(path) == len(want), "the path is blank-padded")
    call check_fields(trim(path), 105, "restart from the latest")
    latest = -1
    call expect(h5tile_series_latest(MPI_COMM_WORLD, at("series"), latest, path, &
      flags=H5TILE_SERIES_VERIFY), H5TILE_OK, "series_latest verified")
    call check(latest == 5 .and. trim(path) == want, "the verified latest")
    step32 = -1
    call expect(h5tile_series_latest(MPI_COMM_WORLD, at("series"), step32), H5TILE_OK, &
      "series_latest into a default integer, no path")
    call check(step32 == 5, "the latest step as a default integer")

    ! A path too short: refused, the step still set.
    latest = -1
    call expect(h5tile_series_latest(MPI_COMM_WORLD, at("series"), latest, short), &
      H5TILE_ERR_INVALID_ARGUMENT, "series_latest into a short path")
    call check(latest == 5, "the step is set when the path does not fit")
    call check(index(h5tile_last_error(), "path has room for 8 characters") > 0, &
      "the message says how much room")
    call expect(h5tile_series_latest(MPI_COMM_WORLD, at("series"), latest, flags=2), &
      H5TILE_ERR_INVALID_ARGUMENT, "unknown series flags")
    call expect(h5tile_series_begin(MPI_COMM_WORLD, at("series"), -1, ck), &
      H5TILE_ERR_INVALID_ARGUMENT, "a negative step")
    call expect(h5tile_checkpoint_commit(ck), H5TILE_ERR_INVALID_ARGUMENT, &
      "commit of a checkpoint that did not begin")
    call expect(h5tile_series_latest(MPI_COMM_WORLD, at("no-series"), latest, path), &
      H5TILE_ERR_NOT_FOUND, "series_latest of a missing folder")
    if (rank == 0) call shell("mkdir -p '" // at("empty-series") // "'")
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call expect(h5tile_series_latest(MPI_COMM_WORLD, at("empty-series"), latest), &
      H5TILE_ERR_NOT_FOUND, "series_latest of a folder with no checkpoint")
  end subroutine

  ! The file name of a series' checkpoint of `step`.
  function ckpt(step) result(name)
    integer, intent(in) :: step
    character(len=:), allocatable :: name
    name = "ckpt." // itoa(step, "(i12.12)") // ".h5"
  end function
end program
