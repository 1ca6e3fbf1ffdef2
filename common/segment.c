/*
 * segment.c — create and map a pipeline's shared segment.  See segment.h.
 * Must never interpret ring contents.
 */
#include "common/segment.h"
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>


static size_t align_up(size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}

static int attach_rings(zx_segment *seg, char *err, size_t errlen)
{
    zx_seg_hdr *h = seg->hdr;
    struct { zx_ring *r; uint64_t off, size; const char *what; } rings[] = {
        {&seg->in, h->in_off, h->in_size, "in"},
        {&seg->out, h->out_off, h->out_size, "out"},
        {&seg->frames, h->frames_off, h->frames_size, "frames"},
    };
    for (size_t i = 0; i < 3; i++) {
        if (i < 2 && h->in_size == 0) {
            /* a source the gateway does not feed: no in/out rings */
            memset(rings[i].r, 0, sizeof(*rings[i].r));
            continue;
        }
        if (rings[i].off > seg->size || rings[i].size > seg->size - rings[i].off ||
            zx_ring_attach(rings[i].r, (char *)h + rings[i].off, rings[i].size) != ZX_RING_OK) {
            zx_seterr(err, errlen, "segment %.64s: ring %s is damaged", h->name, rings[i].what);
            return -1;
        }
        /* memfd memory: its consumer gives released pages back */
        zx_ring_give_back(rings[i].r, ZX_RING_FAST_BPS);
    }
    return 0;
}

int zx_segment_create(zx_segment *seg, const char *name, uint64_t in_cap,
                      uint64_t frames_cap, char *err, size_t errlen)
{
    memset(seg, 0, sizeof(*seg));
    seg->fd = -1;
    size_t in_sz = in_cap ? align_up(zx_ring_footprint(in_cap), 4096) : 0;
    size_t out_sz = in_cap ? align_up(zx_ring_footprint(ZX_SEG_OUT_CAP), 4096) : 0;
    size_t fr_sz = align_up(zx_ring_footprint(frames_cap), 4096);
    size_t total = ZX_SEG_HDR_SIZE + in_sz + out_sz + fr_sz;
    char mname[80];
    snprintf(mname, sizeof(mname), "zx-%s", name);
    int fd = memfd_create(mname, MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)total) < 0) {
        zx_seterr(err, errlen, "pipeline %s: cannot create shared memory of %zu bytes: %s",
                 name, total, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    void *mem = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mem == MAP_FAILED) {
        zx_seterr(err, errlen, "pipeline %s: cannot map shared memory: %s", name, strerror(errno));
        close(fd);
        return -1;
    }
    zx_seg_hdr *h = mem;
    h->magic = ZX_SEG_MAGIC;
    h->version = ZX_SEG_VERSION;
    snprintf(h->name, sizeof(h->name), "%s", name);
    if (getrandom(&h->epoch, sizeof(h->epoch), 0) != sizeof(h->epoch))
        h->epoch = (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL);
    h->in_off = ZX_SEG_HDR_SIZE;
    h->in_size = in_sz;
    h->out_off = h->in_off + in_sz;
    h->out_size = out_sz;
    h->frames_off = h->out_off + out_sz;
    h->frames_size = fr_sz;
    if (in_cap) {
        zx_ring_format((char *)mem + h->in_off, in_cap);
        zx_ring_format((char *)mem + h->out_off, ZX_SEG_OUT_CAP);
    }
    zx_ring_format((char *)mem + h->frames_off, frames_cap);
    seg->hdr = h;
    seg->size = total;
    seg->fd = fd;
    if (attach_rings(seg, err, errlen) < 0) {
        zx_segment_close(seg);
        return -1;
    }
    return 0;
}

int zx_segment_map(zx_segment *seg, int fd, char *err, size_t errlen)
{
    memset(seg, 0, sizeof(*seg));
    seg->fd = -1;
    off_t size = lseek(fd, 0, SEEK_END);
    if (size < ZX_SEG_HDR_SIZE) {
        zx_seterr(err, errlen, "shared segment is too small (%lld bytes)", (long long)size);
        return -1;
    }
    void *mem = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mem == MAP_FAILED) {
        zx_seterr(err, errlen, "cannot map shared segment: %s", strerror(errno));
        return -1;
    }
    seg->hdr = mem;
    seg->size = (size_t)size;
    if (seg->hdr->magic != ZX_SEG_MAGIC || seg->hdr->version != ZX_SEG_VERSION) {
        zx_seterr(err, errlen, "shared segment has a wrong magic or version");
        zx_segment_close(seg);
        return -1;
    }
    seg->hdr->name[63] = '\0';
    if (attach_rings(seg, err, errlen) < 0) {
        zx_segment_close(seg);
        return -1;
    }
    return 0;
}

void zx_segment_close(zx_segment *seg)
{
    if (!seg)
        return;
    if (seg->hdr)
        munmap(seg->hdr, seg->size);
    seg->hdr = NULL;
    if (seg->fd >= 0)
        close(seg->fd);
    seg->fd = -1;
}

size_t zx_segment_read_text(_Atomic uint32_t *seq, const char *text, size_t textcap,
                            char *out, size_t cap)
{
    if (!cap)
        return 0;
    for (int tries = 0; tries < 100; tries++) {
        uint32_t a = atomic_load_explicit(seq, memory_order_acquire);
        if (a & 1)
            continue;
        size_t n = strnlen(text, textcap - 1);
        if (n >= cap)
            n = cap - 1;
        memcpy(out, text, n);
        out[n] = '\0';
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(seq, memory_order_relaxed) == a)
            return n;
    }
    out[0] = '\0';
    return 0;
}

void zx_segment_write_text(_Atomic uint32_t *seq, char *text, size_t textcap,
                           const char *val)
{
    uint32_t s = atomic_load_explicit(seq, memory_order_relaxed);
    atomic_store_explicit(seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    size_t n = val ? strnlen(val, textcap - 1) : 0;
    if (n)
        memcpy(text, val, n);
    text[n] = '\0';
    atomic_store_explicit(seq, s + 2, memory_order_release);
}

int zx_segment_progress_read(const zx_seg_hdr *h, zx_seg_progress *out)
{
    _Atomic uint32_t *seq = (_Atomic uint32_t *)&h->progress_seq;
    for (int tries = 0; tries < 100; tries++) {
        uint32_t a = atomic_load_explicit(seq, memory_order_acquire);
        if (a & 1)
            continue;
        memcpy(out, (const void *)&h->progress, sizeof(*out));
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(seq, memory_order_relaxed) == a) {
            out->what[sizeof(out->what) - 1] = '\0';
            return 0;
        }
    }
    memset(out, 0, sizeof(*out));
    return -1;
}

void zx_segment_progress_write(zx_seg_hdr *h, const zx_seg_progress *val)
{
    uint32_t s = atomic_load_explicit(&h->progress_seq, memory_order_relaxed);
    atomic_store_explicit(&h->progress_seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    if (val) {
        h->progress = *val;
        h->progress.what[sizeof(h->progress.what) - 1] = '\0';
    } else {
        memset(&h->progress, 0, sizeof(h->progress));
    }
    atomic_store_explicit(&h->progress_seq, s + 2, memory_order_release);
}
