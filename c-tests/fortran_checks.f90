! Helpers shared by the Fortran tests (fortran_*.f90), as check.h is for the C ones: the start
! and end of a test (MPI, this rank, the scratch folder given as the first argument, emptied),
! paths in that folder, checks that stop the whole MPI job naming the rank, a shell command,
! the split of an extent over ranks, and the library's own C-order read.
module fortran_checks
  use mpi
  use h5tile
  use, intrinsic :: iso_c_binding
  implicit none
  private
  public :: test_start, test_end, at, exists, shell, split, itoa
  public :: expect, expect_message, expect_text, check, c_read_f

  ! This process's rank in MPI_COMM_WORLD and the scratch folder, set by test_start.
  integer :: my_rank = -1
  character(len=512) :: scratch = ""

  interface
    ! The library's own C-order read, to see the file as C and h5py do (the module h5tile
    ! declares the same interface, but keeps it private).
    integer(c_int) function c_read_f(comm, path, dataset, dtype, ndim, tile_offset, &
        tile_shape, buf, opts) bind(C, name="h5tile_read_f")
      import :: c_int, c_char, c_size_t, c_int64_t, c_ptr
      integer(c_int), value :: comm, dtype
      character(kind=c_char), dimension(*), intent(in) :: path, dataset
      integer(c_size_t), value :: ndim
      integer(c_int64_t), dimension(*), intent(in) :: tile_offset, tile_shape
      type(c_ptr), value :: buf, opts
    end function
  end interface

contains

  ! MPI initialised (MPI_Init_thread at `thread_level`; plain MPI_Init without it), this rank
  ! and the number of ranks, and the scratch folder (the first argument) emptied by rank 0
  ! before any rank goes on.
  subroutine test_start(rank, nranks, thread_level)
    integer, intent(out) :: rank, nranks
    integer, intent(in), optional :: thread_level
    integer :: ierr, provided
    if (present(thread_level)) then
      call MPI_Init_thread(thread_level, provided, ierr)
    else
      call MPI_Init(ierr)
    end if
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
    my_rank = rank
    call get_command_argument(1, scratch)
    if (rank == 0) call shell("rm -rf '" // trim(scratch) // "' && mkdir -p '" // &
      trim(scratch) // "'")
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
  end subroutine

  ! The end of a test that passed: rank 0 prints `done` and the number of ranks ("... OK on",
  ! 3, "ranks"), then MPI_Finalize.
  subroutine test_end(done)
    character(len=*), intent(in) :: done
    integer :: ierr, nranks
    call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
    if (my_rank == 0) print *, done, nranks, "ranks"
    call MPI_Finalize(ierr)
  end subroutine

  ! `file` in the scratch folder.
  function at(file) result(path)
    character(len=*), intent(in) :: file
    character(len=:), allocatable :: path
    path = trim(scratch) // "/" // file
  end function

  logical function exists(path)
    character(len=*), intent(in) :: path
    integer :: stat
    call execute_command_line("test -e '" // path // "'", exitstat=stat)
    exists = stat == 0
  end function

  subroutine shell(command)
    character(len=*), intent(in) :: command
    integer :: stat
    call execute_command_line(command, exitstat=stat)
    call check(stat == 0, command)
  end subroutine

  ! Part k (0-based) of `extent` split over n ranks: `length` elements from `start` (0-based),
  ! the first mod(extent, n) parts one longer.
  subroutine split(extent, n, k, start, length)
    integer, intent(in) :: extent, n, k
    integer, intent(out) :: start, length
    start = k * (extent / n) + min(k, mod(extent, n))
    length = extent / n
    if (k < mod(extent, n)) length = length + 1
  end subroutine

  ! `i` as text, written with the edit descriptor `form` ("(i0)": as short as it goes).
  function itoa(i, form) result(s)
    integer, intent(in) :: i
    character(len=*), intent(in), optional :: form
    character(len=:), allocatable :: s
    character(len=24) :: buf
    if (present(form)) then
      write (buf, form) i
    else
      write (buf, "(i0)") i
    end if
    s = trim(buf)
  end function

  ! An h5tile call's status `got` must be `want`.
  subroutine expect(got, want, what)
    integer, intent(in) :: got, want
    character(len=*), intent(in) :: what
    integer :: ierr
    if (got /= want) then
      print *, "rank", my_rank, ": ", what, ": ", h5tile_status_name(got), " (", got, &
        "), expected ", h5tile_status_name(want), ": ", h5tile_last_error()
      call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
    end if
  end subroutine

  ! The failed call before it left a message.
  subroutine expect_message(what)
    character(len=*), intent(in) :: what
    call check(len(h5tile_last_error()) > 0, what // ": a message")
  end subroutine

  ! `got` is `want`, length too (no blank padding either side).
  subroutine expect_text(got, want, what)
    character(len=*), intent(in) :: got, want, what
    integer :: ierr
    if (len(got) /= len(want) .or. got /= want) then
      print *, "rank", my_rank, ": ", what, ": '", got, "', expected '", want, "'"
      call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
    end if
  end subroutine

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    integer :: ierr
    if (.not. ok) then
      print *, "rank", my_rank, ": failed: ", what
      call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
    end if
  end subroutine
end module
