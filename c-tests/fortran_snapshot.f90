! Snapshot writes (H5TILE_SNAPSHOT) through the Fortran module, under MPI_THREAD_MULTIPLE, where
! a write over a communicator runs in the background (over MPI_COMM_NULL it always does). Each
! rank owns 256 columns of a real64 a(512, 256 * nranks), 1 MiB:
!   1. h5tile_write_async with opts%flags = H5TILE_SNAPSHOT, the array changed right after the
!      call, h5tile_test polled until done (then done again), h5tile_wait H5TILE_OK, and
!      h5tile_read (checksums verified) giving the array as it was at the call; the same over
!      MPI_COMM_NULL, each rank a file of its own;
!   2. a checkpoint of a and an int32 vector begun with the flag and committed with
!      h5tile_checkpoint_commit_async, both arrays changed at once: the file holds them as they
!      were at the commit;
!   3. opts%staging_bytes = 64 KiB, under the tile (written from the array before the call
!      returns): the write and the checkpoint as in 1 and 2;
!   4. (first) h5tile_reserve_staging for a's tile and v: H5TILE_OK, and over a 64 KiB budget
!      H5TILE_ERR_INVALID_ARGUMENT.
!   fortran_snapshot SCRATCH_DIR
program fortran_snapshot
  use mpi
  use h5tile
  use fortran_checks
  use, intrinsic :: iso_c_binding
  implicit none
  integer, parameter :: nx = 512, cols = 256, nn = 100
  integer :: rank, nranks
  integer(c_int64_t) :: gshape(2), my_offset(2), my_shape(2)
  real(c_double), allocatable, target, asynchronous :: a(:, :)
  real(c_double), allocatable, target :: whole(:, :)
  integer(c_int32_t), target, asynchronous :: v(nn)

  interface
    ! Gives the core to the write's thread between polls (POSIX sched_yield).
    integer(c_int) function sched_yield() bind(C, name="sched_yield")
      import :: c_int
    end function
  end interface

  call test_start(rank, nranks, MPI_THREAD_MULTIPLE)
  gshape = [integer(c_int64_t) :: nx, cols * nranks]
  my_offset = [integer(c_int64_t) :: 0, cols * rank]
  my_shape = [integer(c_int64_t) :: nx, cols]
  allocate(a(nx, cols), whole(nx, cols * nranks))

  ! Staging for a's tile and v, faulted in ahead; refused over a 64 KiB budget.
  call expect(h5tile_reserve_staging([int(nx * cols * 8, c_int64_t), int(nn * 4, c_int64_t)]), &
    H5TILE_OK, "h5tile_reserve_staging")
  call expect(h5tile_reserve_staging([int(nx * cols * 8, c_int64_t)], 65536_c_int64_t), &
    H5TILE_ERR_INVALID_ARGUMENT, "h5tile_reserve_staging over its budget")
  call test_write_async(0_c_int64_t, "async.h5")
  call test_solo(0_c_int64_t, "solo")
  call test_checkpoint(0_c_int64_t, "ck.h5")
  call test_write_async(65536_c_int64_t, "async_small_budget.h5")
  call test_solo(65536_c_int64_t, "solo_small_budget")
  call test_checkpoint(65536_c_int64_t, "ck_small_budget.h5")

  deallocate(a, whole)
  call test_end("fortran snapshots OK on")

contains

  real(c_double) function value(version, i, j)
    integer, intent(in) :: version, i, j
    value = 1d7 * version + real(j, c_double) * nx + i
  end function

  ! This rank's columns of version `version`.
  subroutine fill(version)
    integer, intent(in) :: version
    integer :: i, j
    do j = 1, cols
      do i = 1, nx
        a(i, j) = value(version, i - 1, cols * rank + j - 1)
      end do
    end do
    v = [(version * 1000 + i, i = 1, nn)]
  end subroutine

  ! Options with the flag and the budget `budget` (0: the library's default).
  function snapshot_options(budget) result(wo)
    integer(c_int64_t), intent(in) :: budget
    type(h5tile_write_options) :: wo
    wo = h5tile_write_options_default()
    wo%flags = H5TILE_SNAPSHOT
    wo%staging_bytes = budget
  end function

  ! Polls req until h5tile_test says done, never waiting; then it says done again.
  subroutine poll_until_done(req, what)
    type(h5tile_request), intent(in) :: req
    character(len=*), intent(in) :: what
    logical :: done
    integer :: ignored
    do
      call expect(h5tile_test(req, done), H5TILE_OK, what // ": h5tile_test")
      if (done) exit
      ignored = sched_yield()
    end do
    done = .false.
    call expect(h5tile_test(req, done), H5TILE_OK, what // ": h5tile_test once done")
    call check(done, what // ": still done")
  end subroutine

  ! Every rank reads the whole of `dataset` in `file` (checksums verified) and checks version
  ! `version`.
  subroutine check_whole(file, dataset, version, what)
    character(len=*), intent(in) :: file, dataset, what
    integer, intent(in) :: version
    integer :: i, j, bad
    whole = -1
    call expect(h5tile_read(MPI_COMM_WORLD, at(file), dataset, H5TILE_FLOAT64, &
      [0_c_int64_t, 0_c_int64_t], gshape, c_loc(whole)), H5TILE_OK, what // ": read")
    bad = 0
    do j = 1, cols * nranks
      do i = 1, nx
        if (whole(i, j) /= value(version, i - 1, j - 1)) bad = bad + 1
      end do
    end do
    call check(bad == 0, what // ": " // itoa(bad) // " elements are not those at the call")
  end subroutine

  subroutine test_write_async(budget, file)
    integer(c_int64_t), intent(in) :: budget
    character(len=*), intent(in) :: file
    type(h5tile_request) :: req
    call fill(1)
    call expect(h5tile_write_async(MPI_COMM_WORLD, at(file), "/a", H5TILE_FLOAT64, gshape, &
      my_offset, my_shape, c_loc(a), req, snapshot_options(budget)), H5TILE_OK, &
      file // ": write_async")
    call fill(2) ! the next step, at once
    call poll_until_done(req, file)
    call expect(h5tile_wait(req), H5TILE_OK, file // ": wait")
    call check_whole(file, "/a", 1, file)
  end subroutine

  ! Over MPI_COMM_NULL (always in the background): each rank writes its columns as a file of
  ! its own, and reads it back alone.
  subroutine test_solo(budget, name)
    integer(c_int64_t), intent(in) :: budget
    character(len=*), intent(in) :: name
    type(h5tile_request) :: req
    character(len=:), allocatable :: file
    real(c_double), allocatable, target :: b(:, :)
    integer :: i, j, bad
    file = name // itoa(rank) // ".h5"
    call fill(3)
    call expect(h5tile_write_async(MPI_COMM_NULL, at(file), "/a", H5TILE_FLOAT64, my_shape, &
      [0_c_int64_t, 0_c_int64_t], my_shape, c_loc(a), req, snapshot_options(budget)), &
      H5TILE_OK, file // ": write_async over MPI_COMM_NULL")
    call fill(4)
    call poll_until_done(req, file)
    call expect(h5tile_wait(req), H5TILE_OK, file // ": wait")
    allocate(b(nx, cols))
    b = -1
    call expect(h5tile_read(MPI_COMM_NULL, at(file), "/a", H5TILE_FLOAT64, &
      [0_c_int64_t, 0_c_int64_t], my_shape, c_loc(b)), H5TILE_OK, file // ": read")
    bad = 0
    do j = 1, cols
      do i = 1, nx
        if (b(i, j) /= value(3, i - 1, cols * rank + j - 1)) bad = bad + 1
      end do
    end do
    call check(bad == 0, file // ": " // itoa(bad) // " elements are not those at the call")
    deallocate(b)
  end subroutine

  subroutine test_checkpoint(budget, file)
    integer(c_int64_t), intent(in) :: budget
    character(len=*), intent(in) :: file
    type(h5tile_checkpoint) :: ck
    type(h5tile_request) :: req
    integer(c_int32_t), target :: all_v(nn * nranks)
    integer :: i, r
    call expect(h5tile_checkpoint_begin(MPI_COMM_WORLD, at(file), ck, snapshot_options(budget)), &
      H5TILE_OK, file // ": checkpoint_begin")
    call fill(5)
    call expect(h5tile_checkpoint_add(ck, "/a", H5TILE_FLOAT64, gshape, my_offset, my_shape, &
      c_loc(a)), H5TILE_OK, file // ": add /a")
    call expect(h5tile_checkpoint_add(ck, "/v", H5TILE_INT32, [nn * nranks], [nn * rank], [nn], &
      c_loc(v)), H5TILE_OK, file // ": add /v")
    call expect(h5tile_checkpoint_commit_async(ck, req), H5TILE_OK, file // ": commit_async")
    call fill(6) ! both arrays, at once
    call poll_until_done(req, file)
    call expect(h5tile_wait(req), H5TILE_OK, file // ": wait")
    call check_whole(file, "/a", 5, file // " /a")
    all_v = -1
    call expect(h5tile_read(MPI_COMM_WORLD, at(file), "/v", H5TILE_INT32, [0], [nn * nranks], &
      c_loc(all_v)), H5TILE_OK, file // ": read /v")
    call check(all(all_v == [((5000 + i, i = 1, nn), r = 1, nranks)]), &
      file // ": /v holds the vector at the commit")
  end subroutine
end program
