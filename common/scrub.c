/*
 * scrub.c — zero the copies of given strings in this process's memory.
 * See scrub.h.  One pass over each private writable mapping: a table of
 * the strings' first two bytes says where a comparison is worth making.
 */
#include "common/scrub.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NBUCKET 65536u
/* Larger mappings are reservations, never filled (a sanitizer's shadow
 * memory: terabytes): skipped.  Those over SPARSE are scanned only where
 * their pages are resident (mincore), a chunk of CHUNK at a time. */
#define MAX_VMA (64ull << 30)
#define SPARSE (64ull << 20)
#define CHUNK (64ull << 20)

/* The scan reads memory a sanitizer may call out of bounds (redzones, freed
 * chunks): it is not instrumented, and compares and zeroes with plain
 * loops (memcmp and the like are intercepted). */
#define NOSAN __attribute__((no_sanitize_address))

typedef struct scrub_area {
    uint32_t head[NBUCKET];   /* first pattern (index + 1) per first two bytes */
    uint32_t *next;           /* npat: next pattern of the same bucket + 1 */
    uint32_t *off, *len;      /* npat: where each pattern is in text */
    char *text;               /* the patterns, copied */
    char *maps;               /* /proc/self/maps */
    size_t maps_len;
} scrub_area;

static void *map_anon(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* /proc/self/maps into a mapping of its own (*len bytes used, *cap the
 * mapping's size).  NULL on failure. */
static char *read_maps(size_t *len, size_t *cap)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t c = 1 << 16, n = 0;
    char *b = map_anon(c);
    while (b) {
        ssize_t r = read(fd, b + n, c - n - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r < 0) {
                munmap(b, c);
                b = NULL;
            }
            break;
        }
        n += (size_t)r;
        if (c - n - 1 == 0) {
            /* grow: maps must be read again from the start to be consistent */
            munmap(b, c);
            c *= 2;
            b = map_anon(c);
            n = 0;
            if (lseek(fd, 0, SEEK_SET) < 0) {
                if (b)
                    munmap(b, c);
                b = NULL;
            }
        }
    }
    close(fd);
    if (b)
        b[n] = '\0';
    *len = n;
    *cap = c;
    return b;
}


NOSAN static int same(const unsigned char *p, const char *q, size_t l)
{
    for (size_t i = 0; i < l; i++)
        if (p[i] != (unsigned char)q[i])
            return 0;
    return 1;
}

/* Zero the copies in [s, e).  Returns how many. */
NOSAN static long scan_range(const scrub_area *A, unsigned char *s, unsigned char *e)
{
    long found = 0;
    if (e - s < 2)
        return 0;
    for (unsigned char *p = s; p + 1 < e; p++) {
        uint32_t i = A->head[p[0] | (unsigned)p[1] << 8];
        while (i) {
            uint32_t k = i - 1;
            size_t l = A->len[k];
            if ((size_t)(e - p) >= l && same(p, A->text + A->off[k], l)) {
                volatile unsigned char *z = p;
                for (size_t j = 0; j < l; j++)
                    z[j] = 0;
                found++;
                p += l - 1;
                break;
            }
            i = A->next[k];
        }
    }
    return found;
}

/* scan_range over [s, e), a large mapping: only its resident pages. */
static long scan(const scrub_area *A, unsigned char *s, unsigned char *e)
{
    if ((uint64_t)(e - s) <= SPARSE)
        return scan_range(A, s, e);
    static unsigned char vec[CHUNK / 4096];
    long found = 0;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *run = NULL;
    for (unsigned char *c = s; c < e; c += CHUNK) {
        size_t len = (uint64_t)(e - c) < CHUNK ? (size_t)(e - c) : CHUNK;
        if (pg != 4096 || mincore(c, len, vec) < 0) {
            /* cannot tell: all of it */
            if (run)
                found += scan_range(A, run, c);
            run = NULL;
            found += scan_range(A, c, c + len);
            continue;
        }
        for (size_t i = 0; i < (len + pg - 1) / pg; i++) {
            unsigned char *page = c + i * pg;
            if ((vec[i] & 1) && !run)
                run = page;
            else if (!(vec[i] & 1) && run) {
                found += scan_range(A, run, page);
                run = NULL;
            }
        }
    }
    if (run)
        found += scan_range(A, run, e);
    return found;
}

/* Scan [s, e) but the nx ranges of x (sorted, disjoint): our own mappings,
 * which the kernel may have merged with a neighbour of the same kind. */
static long scan_but(const scrub_area *A, uintptr_t s, uintptr_t e, const uintptr_t (*x)[2],
                     size_t nx)
{
    long found = 0;
    for (size_t i = 0; i < nx && s < e; i++) {
        if (x[i][1] <= s || x[i][0] >= e)
            continue;
        if (x[i][0] > s)
            found += scan(A, (unsigned char *)s, (unsigned char *)x[i][0]);
        s = x[i][1];
    }
    if (s < e)
        found += scan(A, (unsigned char *)s, (unsigned char *)e);
    return found;
}

long zx_scrub_copies(const char *const *pats, size_t n)
{
    size_t tlen = 0, npat = 0;
    for (size_t i = 0; i < n; i++)
        if (pats[i] && strlen(pats[i]) >= ZX_SCRUB_MIN) {
            tlen += strlen(pats[i]);
            npat++;
        }
    if (npat == 0)
        return 0;
    size_t asize = sizeof(scrub_area) + 3 * npat * sizeof(uint32_t) + tlen;
    scrub_area *A = map_anon(asize);
    if (!A)
        return -1;
    A->next = (uint32_t *)(A + 1);
    A->off = A->next + npat;
    A->len = A->off + npat;
    A->text = (char *)(A->len + npat);
    size_t at = 0, k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = pats[i] ? strlen(pats[i]) : 0;
        if (l < ZX_SCRUB_MIN)
            continue;
        memcpy(A->text + at, pats[i], l);
        A->off[k] = (uint32_t)at;
        A->len[k] = (uint32_t)l;
        unsigned b = (unsigned char)pats[i][0] | (unsigned)(unsigned char)pats[i][1] << 8;
        A->next[k] = A->head[b];
        A->head[b] = (uint32_t)(k + 1);
        at += l;
        k++;
    }
    size_t mcap = 0;
    A->maps = read_maps(&A->maps_len, &mcap);
    long found = -1;
    int err = errno;
    if (A->maps) {
        uintptr_t x[2][2] = {{(uintptr_t)A, (uintptr_t)A + asize},
                             {(uintptr_t)A->maps, (uintptr_t)A->maps + mcap}};
        if (x[0][0] > x[1][0]) {
            uintptr_t t0 = x[0][0], t1 = x[0][1];
            x[0][0] = x[1][0];
            x[0][1] = x[1][1];
            x[1][0] = t0;
            x[1][1] = t1;
        }
        found = 0;
        for (char *line = A->maps; line && *line;) {
            char *nl = strchr(line, '\n');
            if (nl)
                *nl = '\0';
            unsigned long s, e;
            char perms[8];
            if (sscanf(line, "%lx-%lx %7s", &s, &e, perms) == 3 && perms[0] == 'r' &&
                perms[1] == 'w' && perms[3] == 'p' && !strstr(line, "[vsyscall]") &&
                !strstr(line, "[vvar") && e - s <= MAX_VMA)
                found += scan_but(A, s, e, (const uintptr_t(*)[2])x, 2);
            line = nl ? nl + 1 : NULL;
        }
        munmap(A->maps, mcap);
    }
    explicit_bzero(A, asize);
    munmap(A, asize);
    errno = err;
    return found;
}
