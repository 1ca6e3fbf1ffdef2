/*
 * aws_s3_upload.c — the S3 uploader (aws_s3.h): an object written in
 * pieces, one part buffered, full parts uploaded as the next byte comes
 * (so that an object of exactly one part is one PutObject), visible only
 * at commit.
 *
 * With zx_s3_upload_parallel(u, clients, n): full parts go to a queue that
 * n threads (one per client) upload while the writer fills the next part;
 * at most n parts are in flight and n + 1 buffers exist.  The part list is
 * the mutex's; a thread's first failure is kept and said by the next
 * write or the commit.
 */
#include "common/aws_s3_call.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

enum { UP_OPEN, UP_FAILED, UP_DONE };

struct zx_s3_upload {
    zx_s3 *s;
    char *bucket, *key, *content_type, *sse, *kms;
    zx_s3_put_opts po;           /* its strings point at the copies above */
    size_t part_size, fill;
    char *buf;                   /* part_size bytes, allocated at the first write */
    zx_s3_part *parts;
    size_t nparts, cap;
    char *upload_id;             /* NULL until the first part goes */
    uint64_t bytes;
    int state;

    /* parallel parts (0 threads: parts go up in the writer's thread) */
    zx_s3 **clients;             /* borrowed, one per thread */
    int nthreads, started;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv;           /* a job queued, a job done, stop */
    struct up_job { char *buf; size_t len; int number; } *queue;
    int qn;                      /* jobs queued (queue holds nthreads + 1) */
    int inflight;                /* queued or being uploaded */
    char **spare;                /* buffers free for the writer */
    int nspare, nbufs;           /* spare count; buffers made in all */
    int stop, failed;
    char ferr[600];              /* the first failure of a thread */
    struct up_worker { zx_s3_upload *u; int i; pthread_t t; } *workers;
};

static char *dup_opt(const char *s, int *bad)
{
    char *d = s ? strdup(s) : NULL;
    if (s && !d)
        *bad = 1;
    return d;
}

zx_s3_upload *zx_s3_upload_new(zx_s3 *s, const char *bucket, const char *key,
                               size_t part_size, const zx_s3_put_opts *po, char *err,
                               size_t errlen)
{
    if (!part_size)
        part_size = (size_t)8 << 20;
    if (!s || !bucket || !key || !*key) {
        zx_seterr(err, errlen, "an S3 upload needs a client, a bucket and a key");
        return NULL;
    }
    if (part_size < ZX_S3_PART_MIN || part_size > ZX_S3_PART_MAX) {
        zx_seterr(err, errlen, "an S3 part size is 5 MiB..5 GiB, not %zu bytes", part_size);
        return NULL;
    }
    zx_s3_upload *u = calloc(1, sizeof(*u));
    if (!u) {
        zx_seterr(err, errlen, "out of memory");
        return NULL;
    }
    int bad = 0;
    u->s = s;
    u->part_size = part_size;
    u->bucket = dup_opt(bucket, &bad);
    u->key = dup_opt(key, &bad);
    if (po) {
        u->po = *po;
        u->po.content_type = u->content_type = dup_opt(po->content_type, &bad);
        u->po.sse = u->sse = dup_opt(po->sse, &bad);
        u->po.kms_key_id = u->kms = dup_opt(po->kms_key_id, &bad);
    }
    if (bad) {
        zx_seterr(err, errlen, "out of memory");
        u->state = UP_DONE;
        zx_s3_upload_free(u);
        return NULL;
    }
    return u;
}

int zx_s3_upload_parallel(zx_s3_upload *u, zx_s3 *const *clients, int n, char *err,
                          size_t errlen)
{
    if (u->state != UP_OPEN || u->nparts || u->fill || u->clients)
        return zx_seterr(err, errlen, "S3 upload of %.200s: parallel parts are set before "
                         "the first write, once", u->key);
    if (n < 1 || n > ZX_S3_UPLOAD_THREADS_MAX)
        return zx_seterr(err, errlen, "S3 upload of %.200s: 1 to %d parts in flight, not %d",
                         u->key, ZX_S3_UPLOAD_THREADS_MAX, n);
    u->clients = calloc((size_t)n, sizeof(*u->clients));
    u->queue = calloc((size_t)n + 1, sizeof(*u->queue));   /* every buffer at most */
    u->spare = calloc((size_t)n + 1, sizeof(*u->spare));
    u->workers = calloc((size_t)n, sizeof(*u->workers));
    if (!u->clients || !u->queue || !u->spare || !u->workers) {
        free(u->clients);
        u->clients = NULL;
        return zx_seterr(err, errlen, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        u->clients[i] = clients[i];
        u->workers[i] = (struct up_worker){.u = u, .i = i};
    }
    pthread_mutex_init(&u->mu, NULL);
    pthread_cond_init(&u->cv, NULL);
    u->nthreads = n;
    return 0;
}

/* A thread of the parallel parts: takes a queued part, uploads it with
 * its own client, records it, gives the buffer back; until stop. */
static void *up_thread(void *arg)
{
    struct up_worker *w = arg;
    zx_s3_upload *u = w->u;
    pthread_mutex_lock(&u->mu);
    for (;;) {
        while (!u->qn && !u->stop)
            pthread_cond_wait(&u->cv, &u->mu);
        if (u->stop)
            break;
        struct up_job j = u->queue[0];
        memmove(u->queue, u->queue + 1, (size_t)(u->qn - 1) * sizeof(*u->queue));
        u->qn--;
        int skip = u->failed;                /* after a failure: only give back */
        pthread_mutex_unlock(&u->mu);
        zx_s3_part part;
        memset(&part, 0, sizeof(part));
        char e[600];
        int rc = skip ? 0 : zx_s3_mpu_part(u->clients[w->i], u->bucket, u->key, u->upload_id,
                                           j.number, j.buf, j.len, &u->po, &part, e,
                                           sizeof(e));
        pthread_mutex_lock(&u->mu);
        if (!skip && rc != 0 && !u->failed) {
            u->failed = 1;
            snprintf(u->ferr, sizeof(u->ferr), "%s", e);
        } else if (!skip && rc == 0) {
            u->parts[j.number - 1] = part;
        }
        u->spare[u->nspare++] = j.buf;
        u->inflight--;
        pthread_cond_broadcast(&u->cv);
    }
    pthread_mutex_unlock(&u->mu);
    return NULL;
}

/* Stop and join the threads (a part being uploaded finishes first; the
 * queued ones are dropped), and free every buffer but u->buf. */
static void up_stop(zx_s3_upload *u)
{
    if (!u->clients)
        return;
    pthread_mutex_lock(&u->mu);
    u->stop = 1;
    pthread_cond_broadcast(&u->cv);
    pthread_mutex_unlock(&u->mu);
    for (int i = 0; i < u->started; i++)
        pthread_join(u->workers[i].t, NULL);
    u->started = 0;
    for (int i = 0; i < u->qn; i++)
        free(u->queue[i].buf);
    u->qn = u->inflight = 0;
    for (int i = 0; i < u->nspare; i++)
        free(u->spare[i]);
    u->nspare = 0;
}

/* The next part handed to the threads (the upload created and the threads
 * started first); the writer gets a free buffer back unless last.  0 or
 * ZX_S3_ERR (a thread's failure, said here). */
static int queue_part(zx_s3_upload *u, int last, char *err, size_t errlen)
{
    if (u->started < u->nthreads) {
        /* the threads take no signal: the process's own thread handles them */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        while (u->started < u->nthreads &&
               pthread_create(&u->workers[u->started].t, NULL, up_thread,
                              &u->workers[u->started]) == 0)
            u->started++;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (!u->started)                     /* fewer threads: still correct */
            return zx_seterr(err, errlen, "S3 upload of %.200s: cannot start a thread",
                             u->key);
    }
    pthread_mutex_lock(&u->mu);
    int rc = 0;
    if (u->failed || zx_grow(&u->parts, u->nparts, &u->cap, sizeof(*u->parts)) < 0) {
        rc = zx_seterr(err, errlen, "%s", u->failed ? u->ferr : "out of memory");
    } else {
        memset(&u->parts[u->nparts], 0, sizeof(*u->parts));
        u->nparts++;
        u->queue[u->qn++] = (struct up_job){u->buf, u->fill, (int)u->nparts};
        u->inflight++;
        u->buf = NULL;
        u->fill = 0;
        pthread_cond_broadcast(&u->cv);
        /* a buffer for the next part: a free one, a new one while fewer
         * than threads + 1 exist, else wait for one */
        while (!last && !u->nspare && u->nbufs > u->nthreads && !u->failed)
            pthread_cond_wait(&u->cv, &u->mu);
        if (u->failed)
            rc = zx_seterr(err, errlen, "%s", u->ferr);
        else if (!last && u->nspare)
            u->buf = u->spare[--u->nspare];
    }
    pthread_mutex_unlock(&u->mu);
    if (rc == 0 && !last && !u->buf) {
        if (!(u->buf = malloc(u->part_size)))
            return zx_seterr(err, errlen, "out of memory (a part of %zu bytes)", u->part_size);
        u->nbufs++;
    }
    return rc;
}

/* Waits until no part is in flight.  0, or ZX_S3_ERR with a thread's
 * failure. */
static int wait_parts(zx_s3_upload *u, char *err, size_t errlen)
{
    pthread_mutex_lock(&u->mu);
    while (u->inflight)
        pthread_cond_wait(&u->cv, &u->mu);
    int rc = u->failed ? zx_seterr(err, errlen, "%s", u->ferr) : 0;
    pthread_mutex_unlock(&u->mu);
    return rc;
}

/* Uploads the buffer as the next part (creating the upload first): here,
 * or queued to the threads (last: the commit's, no buffer wanted back). */
static int flush_part(zx_s3_upload *u, int last, char *err, size_t errlen)
{
    if (u->nparts >= ZX_S3_PARTS_MAX)
        return zx_seterr(err, errlen,
                         "S3 bucket %.63s: %.200s needs more than %d parts of %zu bytes: "
                         "use a larger part size", u->bucket, u->key, ZX_S3_PARTS_MAX,
                         u->part_size);
    if (!u->upload_id &&
        zx_s3_mpu_create(u->s, u->bucket, u->key, &u->po, &u->upload_id, err, errlen) != 0)
        return ZX_S3_ERR;
    if (u->nthreads)
        return queue_part(u, last, err, errlen);
    if (zx_grow(&u->parts, u->nparts, &u->cap, sizeof(*u->parts)) < 0)
        return zx_seterr(err, errlen, "out of memory");
    zx_s3_part *p = &u->parts[u->nparts];
    if (zx_s3_mpu_part(u->s, u->bucket, u->key, u->upload_id, (int)u->nparts + 1, u->buf,
                       u->fill, &u->po, p, err, errlen) != 0)
        return ZX_S3_ERR;
    u->nparts++;
    u->fill = 0;
    return 0;
}

int zx_s3_upload_write(zx_s3_upload *u, const void *buf, size_t len, char *err,
                       size_t errlen)
{
    if (u->state != UP_OPEN)
        return zx_seterr(err, errlen, "S3 bucket %.63s: the upload of %.200s is %s", u->bucket,
                         u->key, u->state == UP_FAILED ? "failed" : "finished");
    if (!u->buf && len) {
        u->buf = malloc(u->part_size);
        u->nbufs++;
        if (!u->buf) {
            u->state = UP_FAILED;
            return zx_seterr(err, errlen, "out of memory (a part of %zu bytes)", u->part_size);
        }
    }
    const char *p = buf;
    while (len) {
        if (u->fill == u->part_size && flush_part(u, 0, err, errlen) != 0) {
            u->state = UP_FAILED;
            return ZX_S3_ERR;
        }
        size_t k = u->part_size - u->fill < len ? u->part_size - u->fill : len;
        memcpy(u->buf + u->fill, p, k);
        u->fill += k;
        u->bytes += k;
        p += k;
        len -= k;
    }
    return 0;
}

int zx_s3_upload_commit(zx_s3_upload *u, zx_s3_object_info *info, char *err, size_t errlen)
{
    if (u->state != UP_OPEN) {
        int failed = u->state == UP_FAILED;
        zx_seterr(err, errlen, "S3 bucket %.63s: the upload of %.200s is %s", u->bucket,
                  u->key, failed ? "failed" : "finished");
        if (failed)
            zx_s3_upload_abort(u, NULL, 0);
        return ZX_S3_ERR;
    }
    u->state = UP_DONE;
    int rc;
    if (!u->upload_id) {
        rc = zx_s3_put_object(u->s, u->bucket, u->key, u->buf ? u->buf : "", u->fill, &u->po,
                              info, err, errlen);
    } else {
        rc = u->fill ? flush_part(u, 1, err, errlen) : 0;
        if (u->nthreads) {
            int wr = wait_parts(u, rc == 0 ? err : NULL, rc == 0 ? errlen : 0);
            if (rc == 0)
                rc = wr;
        }
        if (rc == 0)
            rc = zx_s3_mpu_complete(u->s, u->bucket, u->key, u->upload_id, u->parts, u->nparts,
                                    &u->po, info, err, errlen);
        if (rc == 0) {
            free(u->upload_id);
            u->upload_id = NULL;
        } else {
            /* nothing of the run stays behind; the first error is the one said */
            zx_s3_mpu_abort(u->s, u->bucket, u->key, u->upload_id, NULL, 0);
            free(u->upload_id);
            u->upload_id = NULL;
        }
    }
    free(u->buf);
    u->buf = NULL;
    return rc;
}

int zx_s3_upload_abort(zx_s3_upload *u, char *err, size_t errlen)
{
    int rc = 0;
    up_stop(u);                       /* no part goes up after the abort */
    if (u->upload_id) {
        rc = zx_s3_mpu_abort(u->s, u->bucket, u->key, u->upload_id, err, errlen);
        free(u->upload_id);
        u->upload_id = NULL;
    }
    u->state = UP_DONE;
    free(u->buf);
    u->buf = NULL;
    return rc;
}

uint64_t zx_s3_upload_bytes(const zx_s3_upload *u)
{
    return u ? u->bytes : 0;
}

int zx_s3_upload_parts(const zx_s3_upload *u)
{
    return u ? (int)u->nparts : 0;
}

void zx_s3_upload_free(zx_s3_upload *u)
{
    if (!u)
        return;
    if (u->upload_id)
        zx_s3_upload_abort(u, NULL, 0);
    if (u->clients) {
        up_stop(u);
        pthread_mutex_destroy(&u->mu);
        pthread_cond_destroy(&u->cv);
        free(u->clients);
        free(u->queue);
        free(u->spare);
        free(u->workers);
    }
    free(u->buf);
    free(u->parts);
    free(u->upload_id);
    free(u->bucket);
    free(u->key);
    free(u->content_type);
    free(u->sse);
    free(u->kms);
    free(u);
}
