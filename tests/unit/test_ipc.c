/*
 * test_ipc.c — unit tests of the small IPC helpers: the pipeline segment
 * (common/segment), the supervisor/child channel (proto/chan.h,
 * common/chan.c), the util helpers (common/util) and the push records of
 * the in/out rings (proto/push.h).
 *
 * Single process, except zx_close_fds_except, which runs in a forked child
 * that reports through its exit code.  It must never: depend on timing,
 * leave files behind (the temporary directory is removed), or leak
 * descriptors between checks.
 */
#include "common/segment.h"
#include "common/util.h"
#include "proto/chan.h"
#include "proto/push.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;
static int checks;

#define CHECK(cond) do { checks++; if (!(cond)) { failures++; \
    fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)

_Static_assert(sizeof(zx_seg_hdr) <= ZX_SEG_HDR_SIZE, "segment header fits its page");
_Static_assert(sizeof(zx_push_req) % 8 == 0, "push request header keeps 8-byte alignment");
_Static_assert(sizeof(zx_push_rep) % 8 == 0, "push reply header keeps 8-byte alignment");

static int fd_open(int fd)
{
    return fcntl(fd, F_GETFD) >= 0;
}

/* ---------------------------------------------------------------- segment */

/* A memfd of `size` bytes whose first `n` bytes are `head` (may be NULL). */
static int memfd_with(size_t size, const void *head, size_t n)
{
    int fd = memfd_create("zx-test", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)size) < 0) {
        perror("memfd");
        exit(2);
    }
    if (n && pwrite(fd, head, n, 0) != (ssize_t)n) {
        perror("pwrite");
        exit(2);
    }
    return fd;
}

static void test_segment_create_map(void)
{
    char err[256] = "";
    zx_segment a, b, c;

    CHECK(zx_segment_create(&a, "web_events", 64 * 1024, 256 * 1024, err, sizeof(err)) == 0);
    if (!a.hdr) {
        fprintf(stderr, "segment create: %s\n", err);
        failures++;
        return;
    }
    zx_seg_hdr *h = a.hdr;
    CHECK(a.fd >= 0);
    CHECK(fcntl(a.fd, F_GETFD) & FD_CLOEXEC);
    CHECK(h->magic == ZX_SEG_MAGIC);
    CHECK(h->version == ZX_SEG_VERSION);
    CHECK(strcmp(h->name, "web_events") == 0);
    CHECK(zx_ring_capacity(&a.in) >= 64 * 1024);
    CHECK(zx_ring_capacity(&a.frames) >= 256 * 1024);
    CHECK(zx_ring_capacity(&a.out) > 0);
    CHECK(zx_ring_max_record(&a.out) > sizeof(zx_push_rep));
    /* the rings are laid out after the header, without overlap, inside */
    CHECK(h->in_off >= ZX_SEG_HDR_SIZE);
    CHECK(h->out_off >= h->in_off + h->in_size);
    CHECK(h->frames_off >= h->out_off + h->out_size);
    CHECK(h->frames_off + h->frames_size <= a.size);
    CHECK((void *)a.in.hdr == (char *)h + h->in_off);
    CHECK((void *)a.out.hdr == (char *)h + h->out_off);
    CHECK((void *)a.frames.hdr == (char *)h + h->frames_off);
    CHECK(atomic_load(&h->worker_up) == 0 && atomic_load(&h->rows) == 0);

    /* a second segment gets its own epoch */
    CHECK(zx_segment_create(&c, "other", 4096, 4096, err, sizeof(err)) == 0);
    CHECK(c.hdr && c.hdr->epoch != h->epoch);
    CHECK(c.hdr && strcmp(c.hdr->name, "other") == 0);
    zx_segment_close(&c);

    /* map the memfd again: another address, same header */
    CHECK(zx_segment_map(&b, a.fd, err, sizeof(err)) == 0);
    if (!b.hdr) {
        fprintf(stderr, "segment map: %s\n", err);
        failures++;
        zx_segment_close(&a);
        return;
    }
    CHECK(b.hdr != a.hdr);
    CHECK(b.fd == -1);                /* map does not take the fd */
    CHECK(b.size == a.size);
    CHECK(b.hdr->epoch == h->epoch);
    CHECK(strcmp(b.hdr->name, "web_events") == 0);
    CHECK(zx_ring_capacity(&b.frames) == zx_ring_capacity(&a.frames));
    atomic_store(&h->worker_up, 1);
    CHECK(atomic_load(&b.hdr->worker_up) == 1);

    /* a record committed through one mapping is read through the other */
    static const char rec[] = "frame through mapping a";
    void *buf = NULL;
    CHECK(zx_ring_reserve(&a.frames, sizeof(rec), &buf) == ZX_RING_OK);
    if (buf) {
        memcpy(buf, rec, sizeof(rec));
        CHECK(zx_ring_commit(&a.frames, sizeof(rec), 0) == 1);
    }
    zx_ring_cursor cur;
    const void *data = NULL;
    size_t len = 0;
    uint64_t seq = 0;
    zx_ring_cursor_init(&b.frames, &cur);
    CHECK(zx_ring_next(&b.frames, &cur, &data, &len, &seq) == ZX_RING_OK);
    CHECK(seq == 1 && len == sizeof(rec));
    CHECK(data && data != buf && memcmp(data, rec, sizeof(rec)) == 0);
    zx_ring_release(&b.frames, &cur, 0);
    CHECK(zx_ring_acked_seq(&a.frames) == 1);

    /* the other rings are independent */
    zx_ring_cursor_init(&b.in, &cur);
    CHECK(zx_ring_next(&b.in, &cur, NULL, NULL, NULL) == ZX_RING_WOULD_BLOCK);

    /* closing the creator keeps the other mapping usable */
    int afd = a.fd;
    zx_segment_close(&a);
    CHECK(a.hdr == NULL && a.fd == -1);
    CHECK(!fd_open(afd));
    zx_segment_close(&a);             /* idempotent */
    CHECK(a.hdr == NULL && a.fd == -1);
    CHECK(strcmp(b.hdr->name, "web_events") == 0);
    CHECK(zx_ring_acked_seq(&b.frames) == 1);
    zx_segment_close(&b);
    zx_segment_close(&b);
    zx_segment_close(NULL);
}

static void test_segment_map_open_fd(void)
{
    /* the caller keeps its fd: map + close leaves it open */
    char err[256] = "";
    zx_segment a, b;
    CHECK(zx_segment_create(&a, "keep", 4096, 4096, err, sizeof(err)) == 0);
    if (!a.hdr)
        return;
    CHECK(zx_segment_map(&b, a.fd, err, sizeof(err)) == 0);
    zx_segment_close(&b);
    CHECK(fd_open(a.fd));
    zx_segment_close(&a);
}

static void test_segment_errors(void)
{
    char err[256];
    zx_segment s;

    /* empty memfd */
    int fd = memfd_with(0, NULL, 0);
    err[0] = '\0';
    CHECK(zx_segment_map(&s, fd, err, sizeof(err)) == -1);
    CHECK(strstr(err, "too small") != NULL);
    CHECK(s.hdr == NULL && s.fd == -1);
    zx_segment_close(&s);
    CHECK(fd_open(fd));
    close(fd);

    /* smaller than the header */
    fd = memfd_with(100, NULL, 0);
    err[0] = '\0';
    CHECK(zx_segment_map(&s, fd, err, sizeof(err)) == -1);
    CHECK(strstr(err, "too small") != NULL);
    close(fd);

    /* not a descriptor at all */
    err[0] = '\0';
    CHECK(zx_segment_map(&s, -1, err, sizeof(err)) == -1);
    CHECK(err[0] != '\0');

    /* zeros: wrong magic */
    fd = memfd_with(ZX_SEG_HDR_SIZE + 2 * 4096, NULL, 0);
    err[0] = '\0';
    CHECK(zx_segment_map(&s, fd, err, sizeof(err)) == -1);
    CHECK(strstr(err, "magic") != NULL);
    CHECK(s.hdr == NULL && s.fd == -1);
    CHECK(fd_open(fd));
    close(fd);

    /* right magic, wrong version */
    zx_seg_hdr h;
    memset(&h, 0, sizeof(h));
    h.magic = ZX_SEG_MAGIC;
    h.version = ZX_SEG_VERSION + 1;
    fd = memfd_with(ZX_SEG_HDR_SIZE + 2 * 4096, &h, sizeof(h));
    err[0] = '\0';
    CHECK(zx_segment_map(&s, fd, err, sizeof(err)) == -1);
    CHECK(strstr(err, "version") != NULL);
    close(fd);

    /* a real header in a truncated segment: the rings do not fit */
    zx_segment a;
    CHECK(zx_segment_create(&a, "cut", 8192, 8192, err, sizeof(err)) == 0);
    if (a.hdr) {
        fd = memfd_with(ZX_SEG_HDR_SIZE + 4096, a.hdr, ZX_SEG_HDR_SIZE);
        err[0] = '\0';
        CHECK(zx_segment_map(&s, fd, err, sizeof(err)) == -1);
        CHECK(strstr(err, "damaged") != NULL);
        CHECK(strstr(err, "cut") != NULL);
        CHECK(s.hdr == NULL);
        close(fd);

        /* whole segment copied, but the frames ring's magic scribbled on */
        fd = memfd_with(a.size, a.hdr, a.size);
        uint64_t junk = 0;
        CHECK(pwrite(fd, &junk, sizeof(junk), (off_t)a.hdr->frames_off) == sizeof(junk));
        err[0] = '\0';
        CHECK(zx_segment_map(&s, fd, err, sizeof(err)) == -1);
        CHECK(strstr(err, "frames") != NULL);
        close(fd);
        zx_segment_close(&a);
    }

    /* a segment without request rings (a source the gateway does not
     * feed): in_size 0, no reply ring either, the frames ring works and
     * mapping it elsewhere works too */
    CHECK(zx_segment_create(&a, "kafka", 0, 65536, err, sizeof(err)) == 0);
    if (a.hdr) {
        CHECK(a.hdr->in_size == 0 && a.hdr->out_size == 0);
        CHECK(zx_ring_capacity(&a.frames) >= 65536);
        CHECK(a.size <= ZX_SEG_MAX_BYTES(0, 65536));
        zx_segment b2;
        CHECK(zx_segment_map(&b2, a.fd, err, sizeof(err)) == 0);
        if (b2.hdr) {
            CHECK(b2.hdr->in_size == 0 && zx_ring_capacity(&b2.frames) >= 65536);
            zx_segment_close(&b2);
        }
        zx_segment_close(&a);
    }

    /* the source's texts: seqlocked copies, cut to fit */
    CHECK(zx_segment_create(&a, "texts", 0, 65536, err, sizeof(err)) == 0);
    if (a.hdr) {
        char out[64];
        zx_segment_write_text(&a.hdr->source_error_seq, a.hdr->source_error,
                              sizeof(a.hdr->source_error), "broker down");
        CHECK(zx_segment_read_text(&a.hdr->source_error_seq, a.hdr->source_error,
                                   sizeof(a.hdr->source_error), out, sizeof(out)) == 11);
        CHECK(strcmp(out, "broker down") == 0);
        CHECK(zx_segment_read_text(&a.hdr->source_error_seq, a.hdr->source_error,
                                   sizeof(a.hdr->source_error), out, 6) == 5);
        CHECK(strcmp(out, "broke") == 0);
        zx_segment_write_text(&a.hdr->source_error_seq, a.hdr->source_error,
                              sizeof(a.hdr->source_error), NULL);
        CHECK(zx_segment_read_text(&a.hdr->source_error_seq, a.hdr->source_error,
                                   sizeof(a.hdr->source_error), out, sizeof(out)) == 0);
        CHECK((atomic_load(&a.hdr->source_error_seq) & 1) == 0);
        zx_segment_close(&a);
    }

    /* capacities out of the ring's range are refused with a message */
    err[0] = '\0';
    CHECK(zx_segment_create(&s, "tiny", 4096, 0, err, sizeof(err)) == -1);
    CHECK(err[0] != '\0');
    CHECK(s.hdr == NULL && s.fd == -1);
    err[0] = '\0';
    CHECK(zx_segment_create(&s, "huge", 4096, ZX_RING_MAX_CAPACITY * 2, err, sizeof(err)) == -1);
    CHECK(err[0] != '\0');
    CHECK(s.hdr == NULL && s.fd == -1);
}

/* ------------------------------------------------------------------- chan */

static void test_chan(void)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        perror("socketpair");
        exit(2);
    }
    static char buf[ZX_CHAN_MAX];
    int fds[4] = {-1, -1, -1, -1};
    int nfds = -1;

    /* type and text, no fds */
    CHECK(zx_chan_send(sv[0], ZX_CHAN_READY, "{}", NULL, 0) == 0);
    CHECK(zx_chan_recv(sv[1], buf, sizeof(buf), fds, &nfds) == ZX_CHAN_READY);
    CHECK(strcmp(buf, "{}") == 0);
    CHECK(nfds == 0);

    /* the other direction, an empty text */
    CHECK(zx_chan_send(sv[1], ZX_CHAN_EVENT, "", NULL, 0) == 0);
    CHECK(zx_chan_recv(sv[0], buf, sizeof(buf), fds, &nfds) == ZX_CHAN_EVENT);
    CHECK(buf[0] == '\0' && nfds == 0);

    /* two fds travel and refer to the same open files */
    int efd = zx_eventfd();
    int pp[2];
    CHECK(efd >= 0);
    CHECK(pipe2(pp, O_CLOEXEC) == 0);
    const char *attach = "{\"name\": \"web\", \"source\": \"http\", \"key\": \"k\\u00e9y\", "
                         "\"ack_commit\": true, \"max_body_size\": 1048576}";
    int send_fds[2] = {efd, pp[1]};
    CHECK(zx_chan_send(sv[0], ZX_CHAN_ATTACH, attach, send_fds, 2) == 0);
    CHECK(zx_chan_recv(sv[1], buf, sizeof(buf), fds, &nfds) == ZX_CHAN_ATTACH);
    CHECK(strcmp(buf, attach) == 0);
    CHECK(nfds == 2);
    if (nfds == 2) {
        CHECK(fds[0] != efd && fds[1] != pp[1]);
        CHECK(fcntl(fds[0], F_GETFD) & FD_CLOEXEC);
        CHECK(fcntl(fds[1], F_GETFD) & FD_CLOEXEC);
        uint64_t v = 5, got = 0;
        CHECK(write(fds[0], &v, sizeof(v)) == sizeof(v));
        CHECK(read(efd, &got, sizeof(got)) == sizeof(got));
        CHECK(got == 5);
        CHECK(write(fds[1], "x", 1) == 1);
        char ch = 0;
        CHECK(read(pp[0], &ch, 1) == 1 && ch == 'x');
        close(fds[0]);
        close(fds[1]);
    }

    /* four fds is the maximum; five or a negative count are refused */
    int four[4] = {efd, efd, pp[0], pp[1]};
    CHECK(zx_chan_send(sv[0], ZX_CHAN_ATTACH, "{}", four, 4) == 0);
    CHECK(zx_chan_recv(sv[1], buf, sizeof(buf), fds, &nfds) == ZX_CHAN_ATTACH);
    CHECK(nfds == 4);
    for (int i = 0; i < nfds && i < 4; i++)
        close(fds[i]);
    int five[5] = {efd, efd, efd, efd, efd};
    errno = 0;
    CHECK(zx_chan_send(sv[0], ZX_CHAN_ATTACH, "{}", five, 5) == -1 && errno == EMSGSIZE);
    errno = 0;
    CHECK(zx_chan_send(sv[0], ZX_CHAN_ATTACH, "{}", four, -1) == -1 && errno == EMSGSIZE);

    /* the largest message fits; one byte more is refused */
    char *big = malloc(ZX_CHAN_MAX);
    if (!big)
        exit(2);
    memset(big, 'a', ZX_CHAN_MAX - 4);
    big[ZX_CHAN_MAX - 4] = '\0';
    CHECK(zx_chan_send(sv[0], ZX_CHAN_EVENT, big, NULL, 0) == 0);
    CHECK(zx_chan_recv(sv[1], buf, sizeof(buf), fds, &nfds) == ZX_CHAN_EVENT);
    CHECK(strlen(buf) == ZX_CHAN_MAX - 4 && memcmp(buf, big, ZX_CHAN_MAX - 4) == 0);
    memset(big, 'b', ZX_CHAN_MAX - 3);
    big[ZX_CHAN_MAX - 3] = '\0';
    errno = 0;
    CHECK(zx_chan_send(sv[0], ZX_CHAN_EVENT, big, NULL, 0) == -1 && errno == EMSGSIZE);
    free(big);

    /* messages keep their boundaries and order */
    CHECK(zx_chan_send(sv[0], ZX_CHAN_DETACH, "{\"name\": \"a\"}", NULL, 0) == 0);
    CHECK(zx_chan_send(sv[0], ZX_CHAN_DETACH, "{\"name\": \"b\"}", NULL, 0) == 0);
    CHECK(zx_chan_recv(sv[1], buf, sizeof(buf), fds, &nfds) == ZX_CHAN_DETACH);
    CHECK(strcmp(buf, "{\"name\": \"a\"}") == 0);
    CHECK(zx_chan_recv(sv[1], buf, sizeof(buf), fds, &nfds) == ZX_CHAN_DETACH);
    CHECK(strcmp(buf, "{\"name\": \"b\"}") == 0);

    /* non-blocking and empty: EAGAIN */
    CHECK(zx_set_nonblock(sv[1]) == 0);
    errno = 0;
    CHECK(zx_chan_recv(sv[1], buf, sizeof(buf), fds, &nfds) == -1 && errno == EAGAIN);
    CHECK(nfds == 0);

    /* a message sent before the close is still delivered, then 0 */
    CHECK(zx_chan_send(sv[0], ZX_CHAN_READY, "{}", NULL, 0) == 0);
    close(sv[0]);
    CHECK(zx_chan_recv(sv[1], buf, sizeof(buf), fds, &nfds) == ZX_CHAN_READY);
    CHECK(zx_chan_recv(sv[1], buf, sizeof(buf), fds, &nfds) == 0);

    /* sending to a closed peer: EPIPE, no SIGPIPE */
    errno = 0;
    CHECK(zx_chan_send(sv[1], ZX_CHAN_EVENT, "{}", NULL, 0) == -1 && errno == EPIPE);

    close(sv[1]);
    close(efd);
    close(pp[0]);
    close(pp[1]);
}

/* ------------------------------------------------------------------- util */

static void test_ct_equal(void)
{
    CHECK(zx_ct_equal("secret", 6, "secret", 6) == 1);
    CHECK(zx_ct_equal("secreT", 6, "secret", 6) == 0);
    CHECK(zx_ct_equal("Secret", 6, "secret", 6) == 0);
    CHECK(zx_ct_equal("secre", 5, "secret", 6) == 0);
    CHECK(zx_ct_equal("secrets", 7, "secret", 6) == 0);
    CHECK(zx_ct_equal("secret\0", 7, "secret", 6) == 0);
    CHECK(zx_ct_equal("", 0, "", 0) == 1);
    CHECK(zx_ct_equal(NULL, 0, NULL, 0) == 1);
    CHECK(zx_ct_equal("", 0, "x", 1) == 0);
    CHECK(zx_ct_equal("x", 1, "", 0) == 0);
    CHECK(zx_ct_equal("a\0b", 3, "a\0b", 3) == 1);
    CHECK(zx_ct_equal("a\0b", 3, "a\0c", 3) == 0);
    CHECK(zx_ct_equal("\xff", 1, "\x7f", 1) == 0);
}

static void test_hash64(void)
{
    /* FNV-1a 64, expected values computed independently */
    CHECK(zx_hash64("", 0) == UINT64_C(0xcbf29ce484222325));
    CHECK(zx_hash64("a", 1) == UINT64_C(0xaf63dc4c8601ec8c));
    CHECK(zx_hash64("foobar", 6) == UINT64_C(0x85944171f73967e8));
    CHECK(zx_hash64("web_events", 10) == UINT64_C(0xf01a7544d3c5abcf));
    unsigned char all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (unsigned char)i;
    CHECK(zx_hash64(all, sizeof(all)) == UINT64_C(0x4242dc5249c33625));
    CHECK(zx_hash64("foobar", 6) == zx_hash64("foobar", 6));
    CHECK(zx_hash64("foobar", 6) != zx_hash64("foobaR", 6));
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static void test_mkdir_p(void)
{
    char root[] = "/tmp/zx-test-ipc-XXXXXX";
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        exit(2);
    }
    char p[PATH_MAX], q[PATH_MAX];

    snprintf(p, sizeof(p), "%s/a/b/c", root);
    CHECK(zx_mkdir_p(p, 0700) == 0);
    CHECK(is_dir(p));
    struct stat st;
    CHECK(stat(p, &st) == 0 && (st.st_mode & 0777) == 0700);
    CHECK(zx_mkdir_p(p, 0700) == 0);               /* already there */

    snprintf(q, sizeof(q), "%s/a/x//y/", root);     /* double and trailing slash */
    CHECK(zx_mkdir_p(q, 0755) == 0);
    snprintf(q, sizeof(q), "%s/a/x/y", root);
    CHECK(is_dir(q));

    /* a regular file in the way of an intermediate component */
    snprintf(q, sizeof(q), "%s/file", root);
    int fd = open(q, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    snprintf(q, sizeof(q), "%s/file/sub", root);
    errno = 0;
    CHECK(zx_mkdir_p(q, 0700) == -1 && errno == ENOTDIR);

    errno = 0;
    CHECK(zx_mkdir_p("", 0700) == -1 && errno != 0);
    char *longp = malloc(5000);
    if (!longp)
        exit(2);
    memset(longp, 'd', 4999);
    longp[0] = '/';
    longp[4999] = '\0';
    errno = 0;
    CHECK(zx_mkdir_p(longp, 0700) == -1 && errno == ENAMETOOLONG);
    free(longp);

    /* clean up */
    snprintf(q, sizeof(q), "%s/file", root);
    unlink(q);
    const char *dirs[] = {"a/b/c", "a/b", "a/x/y", "a/x", "a", ""};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        snprintf(q, sizeof(q), "%s/%s", root, dirs[i]);
        CHECK(rmdir(q) == 0);
    }
}

/* Child: open descriptors, keep some, report what survived via exit code
 * bits (0 = everything as expected). */
static int close_fds_child(void)
{
    int rc = 0;
    int keep_a = zx_eventfd();
    int drop_a = zx_eventfd();
    int pp[2];
    if (keep_a < 0 || drop_a < 0 || pipe(pp) < 0)
        return 100;
    int keep_hi = dup2(keep_a, 200);
    int drop_hi = dup2(drop_a, 201);
    if (keep_hi != 200 || drop_hi != 201)
        return 101;
    int keep[] = {keep_a, pp[1], keep_hi};
    zx_close_fds_except(keep, 3);
    if (!fd_open(keep_a) || !fd_open(pp[1]) || !fd_open(keep_hi))
        rc |= 1;                     /* a kept descriptor was closed */
    if (fd_open(drop_a) || fd_open(pp[0]) || fd_open(drop_hi))
        rc |= 2;                     /* a descriptor survived */
    if (!fd_open(0) || !fd_open(1) || !fd_open(2))
        rc |= 4;                     /* stdio must stay */
    /* nothing kept: everything >= 3 goes */
    zx_close_fds_except(NULL, 0);
    for (int fd = 3; fd < 256; fd++)
        if (fd_open(fd))
            rc |= 8;
    if (!fd_open(2))
        rc |= 16;
    return rc;
}

static void test_close_fds_except(void)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid == 0)
        _exit(close_fds_child());
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st));
    if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
        fprintf(stderr, "close_fds child reported %d\n", WEXITSTATUS(st));
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_fd_helpers(void)
{
    int efd = zx_eventfd();
    CHECK(efd >= 0);
    CHECK(fcntl(efd, F_GETFL) & O_NONBLOCK);
    CHECK(fcntl(efd, F_GETFD) & FD_CLOEXEC);
    uint64_t v = 0;
    errno = 0;
    CHECK(read(efd, &v, sizeof(v)) == -1 && errno == EAGAIN);
    v = 3;
    CHECK(write(efd, &v, sizeof(v)) == sizeof(v));
    v = 4;
    CHECK(write(efd, &v, sizeof(v)) == sizeof(v));
    v = 0;
    CHECK(read(efd, &v, sizeof(v)) == sizeof(v) && v == 7);
    errno = 0;
    CHECK(read(efd, &v, sizeof(v)) == -1 && errno == EAGAIN);
    close(efd);

    int pp[2];
    CHECK(pipe(pp) == 0);
    CHECK(!(fcntl(pp[0], F_GETFL) & O_NONBLOCK));
    CHECK(zx_set_nonblock(pp[0]) == 0 && (fcntl(pp[0], F_GETFL) & O_NONBLOCK));
    CHECK(zx_set_cloexec(pp[0]) == 0 && (fcntl(pp[0], F_GETFD) & FD_CLOEXEC));
    CHECK(zx_set_nonblock(-1) == -1 && zx_set_cloexec(-1) == -1);
    CHECK(zx_write_all(pp[1], "hello", 5) == 0);
    char b[8] = "";
    CHECK(read(pp[0], b, sizeof(b)) == 5 && memcmp(b, "hello", 5) == 0);
    errno = 0;
    CHECK(zx_write_all(-1, "x", 1) == -1 && errno == EBADF);
    close(pp[0]);
    close(pp[1]);

    int64_t t0 = zx_mono_us(), t1 = zx_mono_us();
    CHECK(t0 > 0 && t1 >= t0);
    CHECK(zx_mono_ms() >= t0 / 1000);
    unsigned char r1[32] = {0}, r2[32] = {0};
    CHECK(zx_random(r1, sizeof(r1)) == 0 && zx_random(r2, sizeof(r2)) == 0);
    CHECK(memcmp(r1, r2, sizeof(r1)) != 0);
}

/* ------------------------------------------------------------------- push */

static uint64_t rec_buf[1024];      /* 8 KiB, 8-byte aligned */

static void test_push_req(void)
{
    char *b = (char *)rec_buf;
    zx_push_view v;
    const char *idem = "idem-key-1", *rid = "req-abc", *body = "{\"a\": 1}\n{\"a\": 2}\n";
    size_t il = strlen(idem), rl = strlen(rid), bl = strlen(body);
    size_t n = zx_push_req_size(il, rl, bl);
    CHECK(n == sizeof(zx_push_req) + il + rl + bl);

    zx_push_req_write(b, ZX_PUSH_WAIT_COMMIT | ZX_PUSH_NDJSON, 42, 1700000000123456,
                      987654321, idem, il, rid, rl, body, bl);
    memset(&v, 0, sizeof(v));
    CHECK(zx_push_req_parse(b, n, &v) == 0);
    CHECK(v.h == (const zx_push_req *)(const void *)b);
    CHECK(v.h->magic == ZX_PUSH_REQ_MAGIC && v.h->version == ZX_PUSH_VERSION);
    CHECK(v.h->flags == (ZX_PUSH_WAIT_COMMIT | ZX_PUSH_NDJSON));
    CHECK(v.h->req_id == 42);
    CHECK(v.h->received_us == 1700000000123456);
    CHECK(v.h->deadline_mono_us == 987654321);
    CHECK(v.h->idem_len == il && v.h->rid_len == rl && v.h->body_len == bl);
    CHECK(v.idem && memcmp(v.idem, idem, il) == 0);
    CHECK(v.rid && memcmp(v.rid, rid, rl) == 0);
    CHECK(v.body && memcmp(v.body, body, bl) == 0);
    CHECK(v.body + bl == b + n);

    /* no idempotency key, no request id, no body */
    n = zx_push_req_size(0, 0, 0);
    zx_push_req_write(b, 0, 7, 0, 0, NULL, 0, NULL, 0, NULL, 0);
    CHECK(zx_push_req_parse(b, n, &v) == 0);
    CHECK(v.idem == NULL && v.h->flags == 0 && v.h->body_len == 0);
    CHECK(v.rid == b + sizeof(zx_push_req) && v.body == v.rid);

    /* the largest key and request id are accepted */
    char k[ZX_PUSH_IDEM_MAX + 1], r[ZX_PUSH_RID_MAX + 1];
    memset(k, 'k', sizeof(k));
    memset(r, 'r', sizeof(r));
    n = zx_push_req_size(ZX_PUSH_IDEM_MAX, ZX_PUSH_RID_MAX, 3);
    zx_push_req_write(b, 0, 1, 0, 0, k, ZX_PUSH_IDEM_MAX, r, ZX_PUSH_RID_MAX, "abc", 3);
    CHECK(zx_push_req_parse(b, n, &v) == 0);
    CHECK(v.body && memcmp(v.body, "abc", 3) == 0);
    CHECK(v.rid && v.rid[0] == 'r' && v.rid[ZX_PUSH_RID_MAX - 1] == 'r');

    /* ... one more byte is not */
    n = zx_push_req_size(ZX_PUSH_IDEM_MAX + 1, 0, 3);
    zx_push_req_write(b, 0, 1, 0, 0, k, ZX_PUSH_IDEM_MAX + 1, NULL, 0, "abc", 3);
    CHECK(zx_push_req_parse(b, n, &v) == -1);
    n = zx_push_req_size(0, ZX_PUSH_RID_MAX + 1, 3);
    zx_push_req_write(b, 0, 1, 0, 0, NULL, 0, r, ZX_PUSH_RID_MAX + 1, "abc", 3);
    CHECK(zx_push_req_parse(b, n, &v) == -1);

    /* a good record, then damaged one field at a time */
    n = zx_push_req_size(il, rl, bl);
    zx_push_req_write(b, 0, 9, 1, 2, idem, il, rid, rl, body, bl);
    CHECK(zx_push_req_parse(b, n, &v) == 0);
    zx_push_req *h = (zx_push_req *)(void *)b;

    CHECK(zx_push_req_parse(b, n - 1, &v) == -1);          /* body_len too big */
    CHECK(zx_push_req_parse(b, n + 1, &v) == -1);          /* trailing byte */
    CHECK(zx_push_req_parse(b, sizeof(zx_push_req) - 1, &v) == -1);
    CHECK(zx_push_req_parse(b, 0, &v) == -1);

    h->magic = ZX_PUSH_REP_MAGIC;
    CHECK(zx_push_req_parse(b, n, &v) == -1);
    h->magic = ZX_PUSH_REQ_MAGIC;
    h->version = ZX_PUSH_VERSION + 1;
    CHECK(zx_push_req_parse(b, n, &v) == -1);
    h->version = ZX_PUSH_VERSION;
    CHECK(zx_push_req_parse(b, n, &v) == 0);

    h->body_len = UINT64_MAX;                              /* would wrap */
    CHECK(zx_push_req_parse(b, n, &v) == -1);
    h->body_len = UINT64_MAX - 8;                          /* sum wraps small */
    CHECK(zx_push_req_parse(b, n, &v) == -1);
    h->body_len = bl - 1;                                  /* does not add up */
    CHECK(zx_push_req_parse(b, n, &v) == -1);
    h->body_len = bl;
    h->idem_len = (uint16_t)(il + 1);                      /* shifts the rest */
    CHECK(zx_push_req_parse(b, n, &v) == -1);
    h->idem_len = (uint16_t)il;
    CHECK(zx_push_req_parse(b, n, &v) == 0);

    /* the same bytes at a misaligned address */
    char *mis = (char *)rec_buf + 4096 + 1;
    memmove(mis, b, n);
    CHECK(zx_push_req_parse(mis, n, &v) == -1);
    mis = (char *)rec_buf + 4096 + 4;
    memmove(mis, b, n);
    CHECK(zx_push_req_parse(mis, n, &v) == -1);
}

static void test_push_rep(void)
{
    char *b = (char *)rec_buf;
    const zx_push_rep *rh = NULL;
    const char *body = NULL;
    const char *json = "{\"accepted\": 2, \"rejected\": 0}";
    uint32_t jl = (uint32_t)strlen(json);
    zx_push_rep r = {ZX_PUSH_REP_MAGIC, ZX_PUSH_VERSION, 202, 42, 0, jl,
                     ZX_PUSH_REP_REPLAY | ZX_PUSH_REP_AFTER_COMMIT, 0, 7};
    memcpy(b, &r, sizeof(r));
    memcpy(b + sizeof(r), json, jl);
    size_t n = sizeof(r) + jl;

    CHECK(zx_push_rep_parse(b, n, &rh, &body) == 0);
    CHECK(rh == (const zx_push_rep *)(const void *)b);
    CHECK(rh && rh->status == 202 && rh->req_id == 42 &&
          rh->flags == (ZX_PUSH_REP_REPLAY | ZX_PUSH_REP_AFTER_COMMIT) && rh->after_seq == 7);
    CHECK(body == b + sizeof(r) && memcmp(body, json, jl) == 0);

    /* empty body */
    zx_push_rep e = {ZX_PUSH_REP_MAGIC, ZX_PUSH_VERSION, 503, 1, 5, 0, 0, 0, 0};
    memcpy(b, &e, sizeof(e));
    CHECK(zx_push_rep_parse(b, sizeof(e), &rh, &body) == 0);
    CHECK(rh && rh->retry_after == 5);

    memcpy(b, &r, sizeof(r));
    zx_push_rep *h = (zx_push_rep *)(void *)b;
    CHECK(zx_push_rep_parse(b, n - 1, &rh, &body) == -1);
    CHECK(zx_push_rep_parse(b, n + 1, &rh, &body) == -1);
    CHECK(zx_push_rep_parse(b, sizeof(r) - 1, &rh, &body) == -1);
    h->magic = ZX_PUSH_REQ_MAGIC;
    CHECK(zx_push_rep_parse(b, n, &rh, &body) == -1);
    h->magic = ZX_PUSH_REP_MAGIC;
    h->version = 0;
    CHECK(zx_push_rep_parse(b, n, &rh, &body) == -1);
    h->version = ZX_PUSH_VERSION;
    h->body_len = UINT32_MAX;
    CHECK(zx_push_rep_parse(b, n, &rh, &body) == -1);
    h->body_len = jl;
    CHECK(zx_push_rep_parse(b, n, &rh, &body) == 0);

    char *mis = (char *)rec_buf + 4096 + 2;
    memmove(mis, b, n);
    CHECK(zx_push_rep_parse(mis, n, &rh, &body) == -1);
}

int main(void)
{
    test_segment_create_map();
    test_segment_map_open_fd();
    test_segment_errors();
    test_chan();
    test_ct_equal();
    test_hash64();
    test_mkdir_p();
    test_close_fds_except();
    test_fd_helpers();
    test_push_req();
    test_push_rep();
    printf("test_ipc: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
