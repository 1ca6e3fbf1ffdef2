/*
 * test_sqlite_ckpt.c — the SQLite workspace's WAL checkpoints off the
 * writer's path (workers/writer/workspace_sqlite_ckpt.h), on a real file:
 * - a stream of small commits never checkpoints in the committing
 *   connection while the thread keeps up, and the thread checkpoints;
 * - the WAL stays bounded (it starts again from its beginning) whatever
 *   the number of commits;
 * - every row committed is in the file after the stop, which leaves no
 *   thread and an intact database (integrity_check), readable by another
 *   connection while the commits go on;
 * - a workspace whose WAL never reaches the start has no thread;
 * - stop with no commits at all, and a NULL state, are no-ops.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "workers/writer/workspace_sqlite_ckpt.h"

static char dir[] = "/tmp/zx_test_ckpt_XXXXXX";

static sqlite3 *open_db(const char *path)
{
    sqlite3 *db = NULL;
    CHECK(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                          SQLITE_OPEN_NOMUTEX, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "PRAGMA page_size=4096; PRAGMA journal_mode=WAL;"
                       "PRAGMA synchronous=NORMAL;"
                       "CREATE TABLE IF NOT EXISTS t(id INTEGER, pad TEXT)",
                       NULL, NULL, NULL) == SQLITE_OK);
    return db;
}

static long long count(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    long long n = -1;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM t", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

static long long wal_bytes(const char *path)
{
    char w[300];
    snprintf(w, sizeof(w), "%s-wal", path);
    struct stat s;
    return stat(w, &s) == 0 ? (long long)s.st_size : 0;
}

/* n commits of rows rows each, ~1 KiB a row: *max_wal the largest WAL seen */
static void commits(sqlite3 *db, const char *path, int n, int rows, long long *next_id,
                    long long *max_wal)
{
    sqlite3_stmt *ins = NULL;
    CHECK(sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?, ?)", -1, &ins, NULL) == SQLITE_OK);
    char pad[1024];
    memset(pad, 'x', sizeof(pad) - 1);
    pad[sizeof(pad) - 1] = '\0';
    for (int c = 0; c < n; c++) {
        CHECK(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK);
        for (int r = 0; r < rows; r++) {
            sqlite3_bind_int64(ins, 1, (*next_id)++);
            sqlite3_bind_text(ins, 2, pad, -1, SQLITE_STATIC);
            CHECK(sqlite3_step(ins) == SQLITE_DONE);
            sqlite3_reset(ins);
        }
        CHECK(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK);
        long long wb = wal_bytes(path);
        if (wb > *max_wal)
            *max_wal = wb;
    }
    sqlite3_finalize(ins);
}

static void test_stream(void)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/stream.db", dir);
    sqlite3 *db = open_db(path);
    wsq_ckpt *c = zx_wsq_ckpt_start(db, path, "NORMAL");
    CHECK(c != NULL);
    /* a reader beside the writer, as zxctl or a user's query would be */
    sqlite3 *rd = NULL;
    CHECK(sqlite3_open_v2(path, &rd, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    long long id = 0, max_wal = 0;
    /* ~40 MiB of rows in 4,000 commits: 20x the thread's start */
    for (int round = 0; round < 40; round++) {
        commits(db, path, 100, 10, &id, &max_wal);
        CHECK(count(rd) == id);
        usleep(2000); /* the writer polls between cycles */
    }
    unsigned long bg = 0, by_writer = 0;
    zx_wsq_ckpt_counts(c, &bg, &by_writer);
    printf("stream: %lld rows, WAL at most %lld bytes, checkpoints %lu by the thread, %lu by "
           "the writer\n", id, max_wal, bg, by_writer);
    CHECK(bg >= 1);
    /* bounded: the hard limit and one commit's pages over it */
    CHECK(max_wal <= (long long)(ZX_WSQ_CKPT_HARD + 64) * (4096 + 24) + 32);
    zx_wsq_ckpt_stop(c, db);
    CHECK(count(db) == id);
    sqlite3_close(rd);
    CHECK(sqlite3_close(db) == SQLITE_OK);
    /* the file alone (the last close checkpointed the WAL into it) */
    db = open_db(path);
    CHECK(count(db) == id);
    sqlite3_stmt *st = NULL;
    CHECK(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(st) == SQLITE_ROW &&
          strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void test_small(void)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/small.db", dir);
    sqlite3 *db = open_db(path);
    wsq_ckpt *c = zx_wsq_ckpt_start(db, path, "FULL");
    long long id = 0, max_wal = 0;
    commits(db, path, 20, 5, &id, &max_wal);
    unsigned long bg = 1, by_writer = 1;
    zx_wsq_ckpt_counts(c, &bg, &by_writer);
    CHECK(bg == 0 && by_writer == 0); /* far below the start: no thread */
    zx_wsq_ckpt_stop(c, db);
    CHECK(count(db) == id);
    sqlite3_close(db);

    /* stopped before any commit; NULL */
    snprintf(path, sizeof(path), "%s/none.db", dir);
    db = open_db(path);
    zx_wsq_ckpt_stop(zx_wsq_ckpt_start(db, path, "NORMAL"), db);
    zx_wsq_ckpt_stop(NULL, db);
    zx_wsq_ckpt_counts(NULL, &bg, &by_writer);
    CHECK(bg == 0 && by_writer == 0);
    sqlite3_close(db);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_stream();
    test_small();
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        printf("could not remove %s\n", dir);
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
