/*
 * dest_files.c — the "files" destination (dest.h): a sync's result as a
 * CSV, NDJSON or Parquet file in a folder or an S3 bucket.
 *
 * Where: its options (args->opts, files_opts.h) give path, format and
 * compression; path is absolute and lies under one of args->roots (else
 * open refuses it); the folders below that root are opened one by one
 * with O_NOFOLLOW (made when missing), and every file is created, renamed
 * and removed relative to the folder's descriptor, so a symbolic link
 * below the root is refused, never followed, even one made during a run.
 * Ending in the format's extension
 * (".parquet"; ".csv"; ".json" or ".ndjson") it names a file, else a folder
 * (created, mode 0755, when missing; for a file its parent folder is).  A
 * path ending in another format's extension is refused at open.
 *   replace                  <folder>/<sync>.<ext>, or the file itself
 *   append, upsert, mirror   one new file per run: <folder>/<sync>-<run_id>.<ext>,
 *                            or <stem>-<run_id>.<ext> beside the file
 * (<ext> for a folder: parquet, csv, json.)  In mirror mode the file has a
 * leading column _zx_op (TEXT): "upsert" for written rows, "delete" for
 * deleted keys, which set only the key columns.  A file never changes
 * once renamed into place; a reader sees the old file or the new one.
 *
 * How: begin creates "<folder>/.<name>.tmp-<pid>-<run_id>" (O_EXCL, 0644)
 * and removes such temporary files left by processes that no longer
 * exist; write appends (text rows through a 1 MiB buffer, Parquet through
 * formats/parquet.h); commit finishes the file, fsyncs it, renames it over
 * the final name and fsyncs the folder; abort closes and unlinks the
 * temporary file.  Text formats: formats/textrows.h (CSV with "\r\n" line
 * ends; NDJSON strings escaped per RFC 8259).
 *
 * Stats: rows_written, rows_deleted (delete rows written), nulled (values
 * written as NULL: misfits, and NaN / Infinity in NDJSON; the first noted
 * with zx_dest_misfit, which fails the run), bytes (the
 * final file's size).
 *
 * In a bucket (path "s3://bucket/prefix...", files_s3.h): the same names
 * are object keys below the prefix; there is no folder, root, temporary
 * name nor rename: each run's bytes (Parquet's through its sink, the text
 * formats' through the 1 MiB buffer) stream into one upload, visible only
 * when commit completes it; abort aborts it, and begin first aborts the
 * uploads of this output a killed run left.
 *
 * It must never leave a partial file under a final name, nor touch files
 * other than its own output and its own kind of temporary files.
 */
#include "workers/destinations/dest.h"
#include "workers/destinations/files/files_formats.h"
#include "workers/destinations/files/files_opts.h"
#include "workers/destinations/files/files_s3.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fileroots.h"
#include "common/log.h"
#include "common/util.h"
#include "formats/parquet.h"
#include "formats/textrows.h"
#include "workers/aws_conn.h"

enum { FMT_CSV, FMT_JSON, FMT_PARQUET };

#define OUT_FLUSH (1u << 20)

typedef struct files_state {
    char *path;            /* as configured */
    char *sync;
    int fmt;
    int is_file;           /* path names a file */
    const char *ext;       /* with the dot: of the file, or the folder default */
    char *dir;             /* the folder files go to */
    char *root;            /* the root it lies under (args->roots) */
    int dfd;               /* the run: dir, opened under root */
    char *stem;            /* file mode: path without its extension */
    zx_pq_codec codec;
    zx_fs3 *s3;            /* path is s3://: the bucket's objects; NULL: a folder */
    size_t key_off;        /* s3: where the key begins in a path ("s3://b/" long) */

    /* the run */
    zx_dest_stats *stats;
    zx_sync_mode mode;
    int mirror;
    zx_dcol *cols;         /* the file's columns (mirror: _zx_op first) */
    size_t ncols, nrun;    /* file columns, run columns */
    size_t *keypos;        /* mirror: file column of each key column */
    size_t nkeys;
    zx_value *row;         /* scratch: one file row */
    char *final_path, *tmp_path;
    int fd;
    int running;           /* begin succeeded, no commit nor abort yet */
    zx_pq_writer *pq;
    zx_buf buf, scratch;
    uint64_t written;      /* text: bytes written to fd */
    uint64_t text_nulled;  /* parquet: stats->nulled at begin (the writer
                              counts the run's own) */
} files_state;

static void run_reset(files_state *st)
{
    zx_pq_free(st->pq);
    st->pq = NULL;
    st->running = 0;
    zx_fs3_abort(st->s3);
    if (st->fd >= 0)
        close(st->fd);
    st->fd = -1;
    if (st->tmp_path && st->dfd >= 0)
        unlinkat(st->dfd, strrchr(st->tmp_path, '/') + 1, 0);
    if (st->dfd >= 0)
        close(st->dfd);
    st->dfd = -1;
    free(st->tmp_path);
    free(st->final_path);
    st->tmp_path = st->final_path = NULL;
    free(st->cols);
    st->cols = NULL;
    free(st->keypos);
    st->keypos = NULL;
    free(st->row);
    st->row = NULL;
    st->buf.len = 0;
    st->written = 0;
}

static void files_close(void *state)
{
    files_state *st = state;
    if (!st)
        return;
    run_reset(st);
    zx_fs3_free(st->s3);
    zx_buf_free(&st->buf);
    zx_buf_free(&st->scratch);
    free(st->path);
    free(st->sync);
    free(st->dir);
    free(st->root);
    free(st->stem);
    free(st);
}

/* The S3 side of open (path s3://...): the path checked, its connection
 * (a->conn) of kind aws, the bucket's handle made.  0, or -1 with err. */
static int open_s3(files_state *st, const zx_dest_args *a, char *err, size_t errlen)
{
    const zx_files_opts *o = a->opts;
    char e[1200];
    if (zx_files_s3_check(st->path, NULL, e, sizeof(e)) < 0)
        return zx_seterr(err, errlen, "files %s", e);
    size_t bl = strcspn(st->path + strlen(ZX_FILES_S3_SCHEME), "/");
    st->key_off = strlen(ZX_FILES_S3_SCHEME) + bl + 1;
    if (st->is_file && !st->path[st->key_off - 1])
        return zx_seterr(err, errlen, "files %s: names a bucket, not an object in it "
                         "(s3://bucket/name%s)", st->path, st->ext);
    const zx_conf_connection *cn = a->conn;   /* conf/ resolved `connection:` */
    if (!cn)
        return zx_seterr(err, errlen, "files %s: an s3:// path needs `connection:` naming "
                         "a connection of kind %s", st->path, ZX_AWS_CONN_KIND);
    if (!cn->kind || strcmp(cn->kind, ZX_AWS_CONN_KIND))
        return zx_seterr(err, errlen, "files %s: connection %s is of kind %s; an s3:// path "
                         "needs kind %s", st->path, cn->name, cn->kind ? cn->kind : "(none)",
                         ZX_AWS_CONN_KIND);
    char *bucket = strndup(st->path + strlen(ZX_FILES_S3_SCHEME), bl);
    if (!bucket)
        return zx_seterr(err, errlen, "files %s: out of memory", st->path);
    zx_fs3_args fa = {.conn = cn, .bucket = bucket, .sse = o->sse,
                      .kms_key_id = o->kms_key_id, .deadline_ms = a->deadline_ms};
    st->s3 = zx_fs3_open(&fa, e, sizeof(e));
    free(bucket);
    if (!st->s3)
        return zx_seterr(err, errlen, "files %s: %s", st->path, e);
    return 0;
}

static int files_open(const zx_dest_args *a, void **state, char *err, size_t errlen)
{
    *state = NULL;
    const zx_files_opts *o = a->opts;
    if (!o)
        return zx_seterr(err, errlen, "files: no path, format nor compression given");
    const char *path = o->path;
    int s3 = zx_files_is_s3(path);
    if (!path || (path[0] != '/' && !s3))
        return zx_seterr(err, errlen, "files %s: the path must be absolute", path ? path : "(none)");
    if (!a->sync || !a->sync[0] || strchr(a->sync, '/'))
        return zx_seterr(err, errlen, "files %s: bad sync name", path);
    files_state *st = calloc(1, sizeof(*st));
    if (!st)
        return zx_seterr(err, errlen, "files %s: out of memory", path);
    st->fd = -1;
    st->dfd = -1;
    const char *fmt = o->format ? o->format : "parquet";
    const zx_file_format *ff = zx_file_format_find(fmt), *ef = NULL;
    if (!ff) {
        char fmts[100];
        zx_seterr(err, errlen, "files %s: unknown format \"%s\" (%s)", path, fmt,
                  zx_file_format_list(fmts, sizeof(fmts)));
        goto fail;
    }
    st->fmt = !strcmp(ff->name, "csv") ? FMT_CSV : !strcmp(ff->name, "json") ? FMT_JSON
                                                                           : FMT_PARQUET;
    st->ext = ff->exts[0];
    if (zx_pq_codec_parse(o->compression, &st->codec) < 0) {
        zx_seterr(err, errlen, "files %s: unknown compression \"%s\" (zstd, snappy or none)",
                  path, o->compression);
        goto fail;
    }
    const char *x = zx_file_ext_of(path, &ef);
    if (x && ef != ff) {
        zx_seterr(err, errlen, "files %s: the path ends in %s but the format is %s", path, x,
                  fmt);
        goto fail;
    }
    if (x) {
        st->is_file = 1;
        st->ext = x;
    }
    st->path = strdup(path);
    st->sync = strdup(a->sync);
    if (!st->path || !st->sync)
        goto oom;
    if (st->is_file) {
        const char *slash = strrchr(path, '/');
        st->dir = strndup(path, slash == path ? 1 : (size_t)(slash - path));
        st->stem = strndup(path, strlen(path) - strlen(st->ext));
        if (!st->dir || !st->stem)
            goto oom;
        if (!slash[1] || slash[1] == '.') {
            zx_seterr(err, errlen, "files %s: the file name must not start with '.'", path);
            goto fail;
        }
    } else {
        size_t n = strlen(path);
        while (n > 1 && path[n - 1] == '/')
            n--;
        if (!(st->dir = strndup(path, n)))
            goto oom;
    }
    if (s3) {
        if (open_s3(st, a, err, errlen) < 0)
            goto fail;
    } else {
        int r = zx_fr_root_of(st->dir, a->roots, a->nroots);
        if (r < 0) {
            char list[1024];
            zx_fr_list(a->roots, a->nroots, list, sizeof(list));
            zx_seterr(err, errlen, "files %s: outside the folders zx may write files to (%s); "
                      "add a folder to server.file_roots to allow it", path, list);
            goto fail;
        }
        if (!(st->root = strdup(a->roots[r])))
            goto oom;
    }
    *state = st;
    return 0;
oom:
    zx_seterr(err, errlen, "files %s: out of memory", path);
fail:
    files_close(st);
    return -1;
}

/* Remove "<dir>/.<name>.tmp-<pid>-<run>" files of processes that are gone
 * (a crashed run's leftovers); only names that begin with ".<prefix>". */
static void sweep_tmp(const files_state *st, const char *prefix)
{
    int fd = dup(st->dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    size_t pl = strlen(prefix);
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        if (n[0] != '.' || strncmp(n + 1, prefix, pl))
            continue;
        const char *t = strstr(n + 1 + pl, ".tmp-");
        if (!t)
            continue;
        char *end;
        unsigned long long pid = strtoull(t + 5, &end, 10);
        if (end == t + 5 || *end != '-' || pid == 0 || pid > 4194304)
            continue;
        if ((pid_t)pid == getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        unlinkat(dirfd(d), n, 0);
    }
    closedir(d);
}

static int out_flush(files_state *st, char *err, size_t errlen)
{
    if (!st->buf.len)
        return 0;
    if (st->s3) {
        char e[1200];
        if (zx_fs3_write(st->s3, st->buf.p, st->buf.len, e, sizeof(e)) < 0)
            return zx_seterr(err, errlen, "files %s: %s", st->path, e);
        st->written += st->buf.len;
        st->buf.len = 0;
        return 0;
    }
    if (zx_write_all(st->fd, st->buf.p, st->buf.len) < 0)
        return zx_seterr(err, errlen, "files %s: writing %s: %s", st->path, st->tmp_path,
                         strerror(errno));
    st->written += st->buf.len;
    st->buf.len = 0;
    return 0;
}

/* Parquet's bytes into the run's S3 object (zx_pq_opts.sink). */
static int s3_sink(void *ctx, const void *p, size_t n, char *err, size_t errlen)
{
    files_state *st = ctx;
    return zx_fs3_write(st->s3, p, n, err, errlen);
}

/* The run's output started: Parquet's writer, or CSV's header; then the
 * run is running.  0, or -1 with err. */
static int start_output(files_state *st, char *err, size_t errlen)
{
    if (st->fmt == FMT_PARQUET) {
        zx_pq_opts o = {.codec = st->codec};
        if (st->s3) {
            o.sink = s3_sink;
            o.sink_ctx = st;
        }
        char perr[1200];
        if (zx_pq_open(st->s3 ? -1 : st->fd, st->cols, st->ncols, &o, &st->pq, perr,
                       sizeof(perr)) < 0)
            return zx_seterr(err, errlen, "files %s: %s", st->path, perr);
    } else if (st->fmt == FMT_CSV) {
        if (zx_csv_header(&st->buf, st->cols, st->ncols) < 0)
            return zx_seterr(err, errlen, "files %s: out of memory", st->path);
    }
    st->running = 1;
    return 0;
}

/* begin's S3 side, once final_path is named: this output's leftover
 * uploads aborted, the object started.  0, or -1 with err. */
static int begin_s3(files_state *st, char *err, size_t errlen)
{
    /* the name all of this output's objects begin with: a file's stem, or
     * <folder>/<sync> */
    size_t n = strlen(st->dir) + strlen(st->sync) + 2;
    char *stem = st->is_file ? strdup(st->stem) : malloc(n);
    if (!stem)
        return zx_seterr(err, errlen, "files %s: out of memory", st->path);
    if (!st->is_file)
        snprintf(stem, n, "%s/%s", st->dir, st->sync);
    char e[1200];
    int swept = 0;
    int rc = zx_fs3_begin(st->s3, st->final_path + st->key_off, stem + st->key_off, st->ext,
                          &swept, e, sizeof(e));
    free(stem);
    if (rc < 0)
        return zx_seterr(err, errlen, "files %s: %s", st->path, e);
    if (swept)
        zx_info("event=files_uploads_aborted sync=%s path=%s uploads=%d reason=\"left by a "
                "run that did not finish\"", st->sync, st->path, swept);
    return start_output(st, err, errlen);
}

static int files_begin(void *state, const zx_dest_run *run, zx_dest_stats *stats, char *err,
                       size_t errlen)
{
    files_state *st = state;
    run_reset(st);
    st->stats = stats;
    st->text_nulled = stats->nulled;
    st->mode = run->mode;
    st->mirror = run->mode == ZX_MODE_MIRROR;
    st->nrun = run->ncols;
    st->ncols = run->ncols + (st->mirror ? 1 : 0);
    if (run->ncols < 1)
        return zx_seterr(err, errlen, "files %s: a result without columns", st->path);
    st->cols = calloc(st->ncols, sizeof(*st->cols));
    st->row = calloc(st->ncols, sizeof(*st->row));
    if (!st->cols || !st->row)
        goto oom;
    size_t off = 0;
    if (st->mirror)
        st->cols[off++] = (zx_dcol){"_zx_op", ZX_DT_TEXT, 0, 0};
    for (size_t i = 0; i < run->ncols; i++) {
        if (st->mirror && !strcmp(run->cols[i].name, "_zx_op"))
            return zx_seterr(err, errlen, "files %s: a result column is named _zx_op, the name "
                             "mirror mode gives its operation column", st->path);
        st->cols[off + i] = run->cols[i];
    }
    if (st->mirror) {
        st->nkeys = run->nkey_cols;
        if (!st->nkeys)
            return zx_seterr(err, errlen, "files %s: mirror mode needs key columns", st->path);
        if (!(st->keypos = calloc(st->nkeys, sizeof(*st->keypos))))
            goto oom;
        for (size_t k = 0; k < st->nkeys; k++) {
            size_t i = 0;
            while (i < run->ncols && strcmp(run->cols[i].name, run->key_cols[k]))
                i++;
            if (i == run->ncols)
                return zx_seterr(err, errlen, "files %s: key column %s is not a result column",
                                 st->path, run->key_cols[k]);
            st->keypos[k] = i + 1;
        }
    }

    /* names */
    char id[24];
    snprintf(id, sizeof(id), "%llu", (unsigned long long)run->run_id);
    size_t fn = strlen(st->dir) + strlen(st->sync) + strlen(st->path) + strlen(id) + 8;
    if (!(st->final_path = malloc(fn)))
        goto oom;
    if (st->is_file && run->mode == ZX_MODE_REPLACE)
        snprintf(st->final_path, fn, "%s", st->path);
    else if (st->is_file)
        snprintf(st->final_path, fn, "%s-%s%s", st->stem, id, st->ext);
    else if (run->mode == ZX_MODE_REPLACE)
        snprintf(st->final_path, fn, "%s/%s%s", st->dir, st->sync, st->ext);
    else
        snprintf(st->final_path, fn, "%s/%s-%s%s", st->dir, st->sync, id, st->ext);
    if (st->s3)
        return begin_s3(st, err, errlen);
    const char *base = strrchr(st->final_path, '/') + 1;
    size_t n = strlen(st->dir) + strlen(base) + 64;
    if (!(st->tmp_path = malloc(n)))
        goto oom;
    snprintf(st->tmp_path, n, "%s/.%s.tmp-%ld-%s", st->dir, base, (long)getpid(), id);

    /* the folder (opened below its root, no link followed) and the
     * temporary file */
    {
        char ferr[600];
        st->dfd = zx_fr_open_dir(st->root, st->dir, ferr, sizeof(ferr));
        if (st->dfd < 0) {
            free(st->tmp_path);
            st->tmp_path = NULL;
            return zx_seterr(err, errlen, "files %s: %s", st->path, ferr);
        }
    }
    {
        /* the stem all of this sync's files share, for the sweep */
        const char *fb = st->is_file ? strrchr(st->stem, '/') + 1 : st->sync;
        sweep_tmp(st, fb);
    }
    st->fd = openat(st->dfd, strrchr(st->tmp_path, '/') + 1,
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (st->fd < 0) {
        int e = errno;
        free(st->tmp_path);              /* not ours: abort must not unlink it */
        st->tmp_path = NULL;
        return zx_seterr(err, errlen, "files %s: cannot create a file in the folder %s: %s",
                         st->path, st->dir, strerror(e));
    }
    return start_output(st, err, errlen);
oom:
    return zx_seterr(err, errlen, "files %s: out of memory", st->path);
}

/* After Parquet rows were written (the first of them the writer's row
 * `first`; rs the batch, or NULL for the one row in st->row): the values
 * nulled so far into the run's count, the first of them noted. */
static void pq_note(files_state *st, const zx_rowset *rs, uint64_t first)
{
    st->stats->nulled = st->text_nulled + zx_pq_nulled(st->pq);
    size_t col;
    uint64_t row;
    if (st->stats->misfit_col[0] || !zx_pq_first_misfit(st->pq, &col, &row) || row < first ||
        col >= st->ncols)
        return;
    if (!rs) {
        zx_dest_misfit(st->stats, st->cols[col].name, &st->row[col]);
        return;
    }
    if (row - first >= rs->nrows)
        return;
    zx_rowset_row(rs, (uint32_t)(row - first), st->row);
    zx_dest_misfit(st->stats, st->cols[col].name, &st->row[col]);
}

/* One file row (st->row) out. */
static int put_row(files_state *st, char *err, size_t errlen)
{
    int r = 0;
    if (st->fmt == FMT_PARQUET) {
        char perr[256];
        uint64_t first = zx_pq_rows(st->pq);
        if (zx_pq_write_row(st->pq, st->row, perr, sizeof(perr)) < 0)
            return zx_seterr(err, errlen, "files %s: %s", st->path, perr);
        pq_note(st, NULL, first);
        return 0;
    }
    size_t mf = SIZE_MAX;
    if (st->fmt == FMT_CSV)
        r = zx_csv_row(&st->buf, st->cols, st->ncols, st->row, &st->scratch, &st->stats->nulled,
                       &mf);
    else
        r = zx_ndjson_row(&st->buf, st->cols, st->ncols, st->row, &st->scratch,
                          &st->stats->nulled, &mf);
    if (r < 0)
        return zx_seterr(err, errlen, "files %s: out of memory", st->path);
    if (mf != SIZE_MAX)
        zx_dest_misfit(st->stats, st->cols[mf].name, &st->row[mf]);
    if (st->buf.len >= OUT_FLUSH)
        return out_flush(st, err, errlen);
    return 0;
}

static const zx_value op_upsert = {.type = ZX_T_TEXT, .len = 6, .s = "upsert"};
static const zx_value op_delete = {.type = ZX_T_TEXT, .len = 6, .s = "delete"};

static int files_write(void *state, const zx_rowset *rs, char *err, size_t errlen)
{
    files_state *st = state;
    if (!st->running)
        return zx_seterr(err, errlen, "files %s: write outside a run", st->path);
    if (rs->ncols != st->nrun)
        return zx_seterr(err, errlen, "files %s: a batch of %u columns for a result of %zu",
                         st->path, (unsigned)rs->ncols, st->nrun);
    if (st->fmt == FMT_PARQUET && !st->mirror) {
        char perr[256];
        uint64_t first = zx_pq_rows(st->pq);
        if (zx_pq_write(st->pq, rs, perr, sizeof(perr)) < 0)
            return zx_seterr(err, errlen, "files %s: %s", st->path, perr);
        pq_note(st, rs, first);
        st->stats->rows_written += rs->nrows;
        return 0;
    }
    size_t off = st->mirror ? 1 : 0;
    for (uint32_t r = 0; r < rs->nrows; r++) {
        zx_rowset_row(rs, r, st->row + off);
        if (st->mirror)
            st->row[0] = op_upsert;
        if (put_row(st, err, errlen) < 0)
            return -1;
    }
    st->stats->rows_written += rs->nrows;
    return 0;
}

static int files_delete_keys(void *state, const zx_rowset *keys, char *err, size_t errlen)
{
    files_state *st = state;
    if (!st->running)
        return zx_seterr(err, errlen, "files %s: delete outside a run", st->path);
    if (!st->mirror)
        return zx_seterr(err, errlen, "files %s: deletes are written in mirror mode only",
                         st->path);
    if (keys->ncols != st->nkeys)
        return zx_seterr(err, errlen, "files %s: %u key columns for %zu keys", st->path,
                         (unsigned)keys->ncols, st->nkeys);
    zx_value kv[64];
    zx_value *k = st->nkeys <= 64 ? kv : calloc(st->nkeys, sizeof(*k));
    if (!k)
        return zx_seterr(err, errlen, "files %s: out of memory", st->path);
    int rc = 0;
    for (uint32_t r = 0; r < keys->nrows && rc == 0; r++) {
        memset(st->row, 0, st->ncols * sizeof(*st->row));
        st->row[0] = op_delete;
        zx_rowset_row(keys, r, k);
        for (size_t i = 0; i < st->nkeys; i++)
            st->row[st->keypos[i]] = k[i];
        rc = put_row(st, err, errlen);
        if (rc == 0)
            st->stats->rows_deleted++;
    }
    if (k != kv)
        free(k);
    return rc;
}

/* commit's S3 side, the bytes all handed over: the object made visible. */
static int commit_s3(files_state *st, char *err, size_t errlen)
{
    char e[1200];
    uint64_t size = 0;
    if (zx_fs3_commit(st->s3, &size, e, sizeof(e)) < 0)
        return zx_seterr(err, errlen, "files %s: %s", st->path, e);
    st->stats->bytes = size;
    zx_pq_free(st->pq);
    st->pq = NULL;
    st->running = 0;
    return 0;
}

static int files_commit(void *state, char *err, size_t errlen)
{
    files_state *st = state;
    if (!st->running || (!st->s3 && !st->tmp_path))
        return zx_seterr(err, errlen, "files %s: commit outside a run", st->path);
    uint64_t size = 0;
    if (st->fmt == FMT_PARQUET) {
        char perr[256];
        if (zx_pq_finish(st->pq, &size, perr, sizeof(perr)) < 0)
            return zx_seterr(err, errlen, "files %s: %s", st->path, perr);
        st->stats->nulled = st->text_nulled + zx_pq_nulled(st->pq);
    } else {
        if (out_flush(st, err, errlen) < 0)
            return -1;
        size = st->written;
    }
    if (st->s3)
        return commit_s3(st, err, errlen);
    if (fsync(st->fd) < 0)
        return zx_seterr(err, errlen, "files %s: fsync %s: %s", st->path, st->tmp_path,
                         strerror(errno));
    int rc = close(st->fd);
    st->fd = -1;
    if (rc < 0)
        return zx_seterr(err, errlen, "files %s: close %s: %s", st->path, st->tmp_path,
                         strerror(errno));
    if (renameat(st->dfd, strrchr(st->tmp_path, '/') + 1, st->dfd,
                 strrchr(st->final_path, '/') + 1) < 0)
        return zx_seterr(err, errlen, "files %s: rename %s to %s: %s", st->path, st->tmp_path,
                         st->final_path, strerror(errno));
    free(st->tmp_path);                  /* renamed: nothing to unlink any more */
    st->tmp_path = NULL;
    st->stats->bytes = size;
    if (fsync(st->dfd) < 0)
        return zx_seterr(err, errlen, "files %s: fsync of the folder %s: %s", st->path, st->dir,
                         strerror(errno));
    zx_pq_free(st->pq);
    st->pq = NULL;
    st->running = 0;
    return 0;
}

static void files_abort(void *state)
{
    files_state *st = state;
    if (st)
        run_reset(st);
}

const zx_dest zx_dest_files = {
    .name = "files",
    .caps = ZX_DEST_ATOMIC_REPLACE | ZX_DEST_DELETES,
    .open = files_open,
    .begin = files_begin,
    .write = files_write,
    .delete_keys = files_delete_keys,
    .commit = files_commit,
    .abort = files_abort,
    .close = files_close,
};
