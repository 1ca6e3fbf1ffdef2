/*
 * workspace_sqlite_ckpt.c — the SQLite workspace's WAL checkpoints in a
 * thread of their own (see workspace_sqlite_ckpt.h).
 */
#include "workers/writer/workspace_sqlite_ckpt.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

struct wsq_ckpt {
    char *path;
    char sync[8];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th;
    int started;        /* th runs (guarded by mu) */
    int want;           /* a checkpoint is asked for (mu) */
    int stop;           /* the thread ends (mu) */
    int running;        /* the thread is in a checkpoint (mu; cv on its end) */
    int failed_start;   /* pthread_create failed once: the writer checkpoints */
    int64_t warned_ms;  /* the thread's last warning (thread only) */
    _Atomic unsigned long n_thread, n_inline;
};

/* One PASSIVE checkpoint through the thread's own connection. */
static void checkpoint(wsq_ckpt *c, sqlite3 **db)
{
    int rc = SQLITE_OK;
    if (!*db) {
        rc = sqlite3_open_v2(c->path, db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
        if (rc == SQLITE_OK) {
            char pragma[48];
            snprintf(pragma, sizeof(pragma), "PRAGMA synchronous=%s", c->sync);
            rc = sqlite3_exec(*db, pragma, NULL, NULL, NULL);
        }
    }
    int log = 0, done = 0;
    if (rc == SQLITE_OK)
        rc = sqlite3_wal_checkpoint_v2(*db, "main", SQLITE_CHECKPOINT_PASSIVE, &log, &done);
    if (rc == SQLITE_OK) {
        atomic_fetch_add(&c->n_thread, 1);
        return;
    }
    /* busy: the writer checkpoints itself right now; anything else is
     * said once a minute (the writer's hard limit keeps the WAL bounded) */
    int64_t now = zx_mono_ms();
    if (rc != SQLITE_BUSY && now - c->warned_ms >= 60000) {
        c->warned_ms = now;
        zx_warn("event=wal_checkpoint_failed path=%s error=\"%s\"", c->path,
                *db ? sqlite3_errmsg(*db) : sqlite3_errstr(rc));
    }
    if (rc != SQLITE_BUSY && *db) {
        sqlite3_close(*db); /* opened again next time */
        *db = NULL;
    }
}

static void *run(void *arg)
{
    wsq_ckpt *c = arg;
    sqlite3 *db = NULL;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->want && !c->stop)
            pthread_cond_wait(&c->cv, &c->mu);
        if (c->stop)
            break;
        c->want = 0;
        c->running = 1;
        pthread_mutex_unlock(&c->mu);
        checkpoint(c, &db);
        pthread_mutex_lock(&c->mu);
        c->running = 0;
        pthread_cond_broadcast(&c->cv); /* a writer past the hard limit waits */
    }
    pthread_mutex_unlock(&c->mu);
    sqlite3_close(db);
    return NULL;
}

/* After every commit of the writer's connection, with the WAL's pages. */
static int hook(void *arg, sqlite3 *db, const char *name, int pages)
{
    wsq_ckpt *c = arg;
    if (pages >= ZX_WSQ_CKPT_HARD || (c->failed_start && pages >= ZX_WSQ_CKPT_START)) {
        /* the thread cannot keep up (or does not run): as SQLite would,
         * once the thread's checkpoint (which holds the checkpoint lock)
         * is over; no commit comes in between, so this one copies
         * everything and the WAL starts again */
        pthread_mutex_lock(&c->mu);
        while (c->running)
            pthread_cond_wait(&c->cv, &c->mu);
        pthread_mutex_unlock(&c->mu);
        if (sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL) ==
            SQLITE_OK)
            atomic_fetch_add(&c->n_inline, 1);
        return SQLITE_OK;
    }
    if (pages < ZX_WSQ_CKPT_START)
        return SQLITE_OK;
    pthread_mutex_lock(&c->mu);
    if (!c->started && !c->stop) {
        if (pthread_create(&c->th, NULL, run, c) == 0) {
            c->started = 1;
        } else {
            c->failed_start = 1;
            zx_warn("event=wal_checkpointer_not_started path=%s error=\"cannot create a "
                    "thread\" fallback=\"the writer checkpoints\"", c->path);
        }
    }
    c->want = 1;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return SQLITE_OK;
}

wsq_ckpt *zx_wsq_ckpt_start(sqlite3 *db, const char *path, const char *synchronous)
{
    wsq_ckpt *c = calloc(1, sizeof(*c));
    if (!c || !(c->path = strdup(path))) {
        free(c);
        return NULL;
    }
    snprintf(c->sync, sizeof(c->sync), "%s", synchronous);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    sqlite3_wal_hook(db, hook, c); /* replaces the automatic checkpoint */
    return c;
}

void zx_wsq_ckpt_stop(wsq_ckpt *c, sqlite3 *db)
{
    if (!c)
        return;
    if (db)
        sqlite3_wal_hook(db, NULL, NULL);
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    int started = c->started;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (started)
        pthread_join(c->th, NULL);
    unsigned long nt = atomic_load(&c->n_thread), ni = atomic_load(&c->n_inline);
    if (nt || ni)
        zx_info("event=wal_checkpoints path=%s background=%lu by_writer=%lu", c->path, nt, ni);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c->path);
    free(c);
}

void zx_wsq_ckpt_counts(const wsq_ckpt *c, unsigned long *thread, unsigned long *inline_)
{
    *thread = c ? atomic_load(&c->n_thread) : 0;
    *inline_ = c ? atomic_load(&c->n_inline) : 0;
}
