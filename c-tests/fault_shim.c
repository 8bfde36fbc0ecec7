/* An LD_PRELOAD library for the fault-injection and durability tests: it sees the file-system
 * calls a process makes under one folder and can make one of them fail, as a full disk or a
 * failing device would. Environment:
 *   H5TILE_SHIM_UNDER=DIR       only paths under DIR count (required; otherwise inert)
 *   H5TILE_SHIM_LOG=FILE        append one line per call: "<rank> <kind> <path> [<to>]"
 *   H5TILE_SHIM_FAIL=KIND:N:ERR fail the N-th call (1-based) of KIND with errno ERR (ENOSPC,
 *                               EIO or EDQUOT), doing nothing; the failed call is logged as
 *                               "<rank> fail <kind> <path>"; ERR KILL instead ends the process
 *                               there with SIGKILL (a crash at that call, which is not made)
 *   H5TILE_SHIM_RANK=R          fail only in the process of that MPI rank (from the launcher's
 *                               OMPI_COMM_WORLD_RANK or PMI_RANK; 0 without a launcher)
 * KIND is one of: create (open with O_CREAT, creat, mkdir), write (write, pwrite, pwritev),
 * fsync (fsync, fdatasync), rename (rename, renameat, renameat2), remove (unlink, unlinkat,
 * rmdir).
 * Plain C and POSIX, with dlsym(RTLD_NEXT) to reach the real calls. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

enum kind { CREATE, WRITE, FSYNC, RENAME, REMOVE, KINDS };
static const char *const kind_names[KINDS] = {"create", "write", "fsync", "rename", "remove"};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int ready, active, log_fd = -1, fail_kind = -1, fail_errno, my_rank;
static long fail_at, counts[KINDS];
static char under[PATH_MAX];
static size_t under_len;

#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

static void setup(void) {
    const char *u = getenv("H5TILE_SHIM_UNDER");
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    if (!r) r = getenv("PMI_RANK");
    my_rank = r ? atoi(r) : 0;
    if (u && *u && realpath(u, under)) {
        under_len = strlen(under);
        active = 1;
    }
    const char *log = getenv("H5TILE_SHIM_LOG");
    if (active && log && *log) {
        int (*real_open)(const char *, int, ...) = REAL(open);
        log_fd = real_open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    }
    const char *f = getenv("H5TILE_SHIM_FAIL");
    const char *fr = getenv("H5TILE_SHIM_RANK");
    if (active && f && (!fr || atoi(fr) == my_rank)) {
        char kind[16] = "", err[16] = "";
        long n = 0;
        if (sscanf(f, "%15[a-z]:%ld:%15[A-Z]", kind, &n, err) == 3 && n > 0) {
            for (int k = 0; k < KINDS; k++)
                if (strcmp(kind, kind_names[k]) == 0) fail_kind = k;
            fail_at = n;
            fail_errno = strcmp(err, "EIO") == 0      ? EIO
                         : strcmp(err, "EDQUOT") == 0 ? EDQUOT
                         : strcmp(err, "KILL") == 0   ? -1
                                                      : ENOSPC;
        }
    }
    ready = 1;
}

/* The absolute form of `path` (relative to `dirfd`), without resolving its last component. */
static void absolute(int dirfd, const char *path, char *out) { /* out: 2 * PATH_MAX bytes */
    char base[PATH_MAX] = "";
    if (path[0] == '/') {
        snprintf(out, 2 * PATH_MAX, "%s", path);
        return;
    }
    if (dirfd == AT_FDCWD) {
        if (!getcwd(base, sizeof base)) base[0] = 0;
    } else {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
        ssize_t n = readlink(link, base, sizeof base - 1);
        base[n > 0 ? n : 0] = 0;
    }
    snprintf(out, 2 * PATH_MAX, "%s/%s", base, path);
}

static void fd_path(int fd, char *out) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, out, PATH_MAX - 1);
    out[n > 0 ? n : 0] = 0;
}

/* Counts a call of `kind` on `path` (and logs it); returns the errno to fail it with, or 0. */
static int observe(enum kind kind, const char *path, const char *to) {
    pthread_mutex_lock(&lock);
    if (!ready) setup();
    int fail = 0;
    if (active && strncmp(path, under, under_len) == 0 &&
        (path[under_len] == '/' || path[under_len] == 0)) {
        counts[kind]++;
        fail = (int)kind == fail_kind && counts[kind] == fail_at ? fail_errno : 0;
        if (log_fd >= 0) {
            char line[5 * PATH_MAX];
            int n = snprintf(line, sizeof line, "%d %s%s %s%s%s\n", my_rank, fail ? "fail " : "",
                             kind_names[kind], path, to ? " " : "", to ? to : "");
            ssize_t (*real_write)(int, const void *, size_t) = REAL(write);
            if (n > 0) (void)real_write(log_fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line);
        }
        if (fail == -1) raise(SIGKILL);
    }
    pthread_mutex_unlock(&lock);
    return fail;
}

static int observe_fd(enum kind kind, int fd) {
    if (fd == log_fd && log_fd >= 0) return 0;
    char path[PATH_MAX];
    fd_path(fd, path);
    return observe(kind, path, NULL);
}

#define FAIL_WITH(e, ret) \
    do {                  \
        errno = (e);      \
        return (ret);     \
    } while (0)

static int open_common(int dirfd, const char *path, int flags, mode_t mode, int at, int is64) {
    if (flags & O_CREAT) {
        char abs[2 * PATH_MAX];
        absolute(dirfd, path, abs);
        int e = observe(CREATE, abs, NULL);
        if (e) FAIL_WITH(e, -1);
    }
    if (at) {
        int (*f)(int, const char *, int, ...) = is64 ? REAL(openat64) : REAL(openat);
        return f(dirfd, path, flags, mode);
    }
    int (*f)(const char *, int, ...) = is64 ? REAL(open64) : REAL(open);
    return f(path, flags, mode);
}

/* The mode argument open(2) takes only with O_CREAT or O_TMPFILE, read from the caller's
 * variadic arguments after `flags` (a GNU statement expression, so va_start runs in the
 * caller's frame). */
#define MODE_AFTER(flags)                                                      \
    ({                                                                         \
        va_list ap_;                                                           \
        va_start(ap_, flags);                                                  \
        int m_ = ((flags) & (O_CREAT | O_TMPFILE)) ? va_arg(ap_, int) : 0;     \
        va_end(ap_);                                                           \
        (mode_t)m_;                                                            \
    })

int open(const char *path, int flags, ...) { return open_common(AT_FDCWD, path, flags, MODE_AFTER(flags), 0, 0); }
int open64(const char *path, int flags, ...) { return open_common(AT_FDCWD, path, flags, MODE_AFTER(flags), 0, 1); }
int openat(int dirfd, const char *path, int flags, ...) { return open_common(dirfd, path, flags, MODE_AFTER(flags), 1, 0); }
int openat64(int dirfd, const char *path, int flags, ...) { return open_common(dirfd, path, flags, MODE_AFTER(flags), 1, 1); }
int creat(const char *path, mode_t mode) { return open(path, O_CREAT | O_WRONLY | O_TRUNC, mode); }
int creat64(const char *path, mode_t mode) { return open64(path, O_CREAT | O_WRONLY | O_TRUNC, mode); }

int mkdir(const char *path, mode_t mode) {
    char abs[2 * PATH_MAX];
    absolute(AT_FDCWD, path, abs);
    int e = observe(CREATE, abs, NULL);
    if (e) FAIL_WITH(e, -1);
    return REAL(mkdir)(path, mode);
}

ssize_t write(int fd, const void *buf, size_t n) {
    int e = observe_fd(WRITE, fd);
    if (e) FAIL_WITH(e, -1);
    return REAL(write)(fd, buf, n);
}
ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    int e = observe_fd(WRITE, fd);
    if (e) FAIL_WITH(e, -1);
    return REAL(pwrite)(fd, buf, n, off);
}
ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off) {
    int e = observe_fd(WRITE, fd);
    if (e) FAIL_WITH(e, -1);
    return REAL(pwrite64)(fd, buf, n, off);
}
ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off) {
    int e = observe_fd(WRITE, fd);
    if (e) FAIL_WITH(e, -1);
    return REAL(pwritev)(fd, iov, cnt, off);
}
ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off) {
    int e = observe_fd(WRITE, fd);
    if (e) FAIL_WITH(e, -1);
    return REAL(pwritev64)(fd, iov, cnt, off);
}

int fsync(int fd) {
    int e = observe_fd(FSYNC, fd);
    if (e) FAIL_WITH(e, -1);
    return REAL(fsync)(fd);
}
int fdatasync(int fd) {
    int e = observe_fd(FSYNC, fd);
    if (e) FAIL_WITH(e, -1);
    return REAL(fdatasync)(fd);
}

static int rename_common(int from_dir, const char *from, int to_dir, const char *to) {
    char a[2 * PATH_MAX], b[2 * PATH_MAX];
    absolute(from_dir, from, a);
    absolute(to_dir, to, b);
    return observe(RENAME, a, b);
}
int rename(const char *from, const char *to) {
    int e = rename_common(AT_FDCWD, from, AT_FDCWD, to);
    if (e) FAIL_WITH(e, -1);
    return REAL(rename)(from, to);
}
int renameat(int fd1, const char *from, int fd2, const char *to) {
    int e = rename_common(fd1, from, fd2, to);
    if (e) FAIL_WITH(e, -1);
    return REAL(renameat)(fd1, from, fd2, to);
}
int renameat2(int fd1, const char *from, int fd2, const char *to, unsigned flags) {
    int e = rename_common(fd1, from, fd2, to);
    if (e) FAIL_WITH(e, -1);
    return REAL(renameat2)(fd1, from, fd2, to, flags);
}

static int remove_common(int dirfd, const char *path) {
    char abs[2 * PATH_MAX];
    absolute(dirfd, path, abs);
    return observe(REMOVE, abs, NULL);
}
int unlink(const char *path) {
    int e = remove_common(AT_FDCWD, path);
    if (e) FAIL_WITH(e, -1);
    return REAL(unlink)(path);
}
int unlinkat(int dirfd, const char *path, int flags) {
    int e = remove_common(dirfd, path);
    if (e) FAIL_WITH(e, -1);
    return REAL(unlinkat)(dirfd, path, flags);
}
int rmdir(const char *path) {
    int e = remove_common(AT_FDCWD, path);
    if (e) FAIL_WITH(e, -1);
    return REAL(rmdir)(path);
}
