/*
 * pqwrite — a test tool: write a Parquet file with formats/parquet.h.
 *
 *   pqwrite OUT.parquet [--codec zstd|snappy|none] [--row-group-bytes N]
 *           [--page-bytes N] [--batch N] [--generate N]
 *           [--field-ids ID,ID,...] [--stats] [--typed-timestamps]
 *           [--repeat K]
 *
 * Without --generate, stdin is NDJSON: the first line is the schema, an
 * array of [name, type] or ["name", "decimal", precision, scale]; every
 * other line is one row, an array of values in column order (null, true /
 * false, integers, reals, strings; objects and arrays become JSON cells).
 * With --generate N, N synthetic rows of a fixed schema are made in
 * memory (id int64 = i, name text "user-NNNNNN@example.org" (i % 10000;
 * NULL when i % 1000 == 999), amount double i * 0.5, ts timestamp
 * 2020-01-01 + i seconds, flag bool i % 3 == 0).
 *
 * --field-ids gives each column its field id (one per column, in order).
 * --repeat K (with --generate): write the file K times in this process
 * (the same rows, the file emptied before each), as a long-running zxd
 * writes file after file; write_seconds is the last write's, and
 * write_seconds_first the first's (a fresh process: its buffers' memory
 * still to be faulted in).
 * --typed-timestamps: a string in a timestamp column that is RFC 3339
 * becomes a timestamp value (microseconds, the text kept), as zx's readers
 * give a database's timestamps, instead of text the writer converts.
 *
 * Prints one JSON line: rows, row_groups, bytes, nulled, write_seconds,
 * write_seconds_first
 * (time inside zx_pq_write / zx_pq_finish only) and total_seconds; with
 * --stats also "columns": per column what zx_pq_col_stats says (values,
 * nulls, nans, compressed_bytes, uncompressed_bytes, and min / max when
 * known: integers and reals as such, byte arrays and wide decimals as
 * hex strings).
 * Exit status 0, or 1 with a message on stderr.  Test use only.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/dtype.h"
#include "common/rowset.h"
#include "common/timefmt.h"
#include "formats/parquet.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Say msg and exit 1 at once: what main holds stays reachable (no leak
 * report from the sanitizer build's tests). */
static int die(const char *msg)
{
    fprintf(stderr, "pqwrite: %s\n", msg);
    exit(1);
}

static int parse_type(const char *s, zx_dtype *t)
{
    for (int i = 0; i < ZX_DT__COUNT; i++)
        if (!strcmp(s, zx_dtype_name((zx_dtype)i))) {
            *t = (zx_dtype)i;
            return 0;
        }
    return -1;
}

/* Add one JSON value as a cell of the open row (ts: the column is a
 * timestamp one and --typed-timestamps was given). */
static int add_cell(zx_rowset *rs, uint32_t col, json_t *j, int ts)
{
    zx_value v;
    memset(&v, 0, sizeof(v));
    if (json_is_null(j))
        return 0;
    if (json_is_boolean(j)) {
        v.type = ZX_T_BOOL;
        v.u.b = json_is_true(j);
    } else if (json_is_integer(j)) {
        v.type = ZX_T_INT;
        v.u.i = json_integer_value(j);
    } else if (json_is_real(j)) {
        v.type = ZX_T_REAL;
        v.u.d = json_real_value(j);
    } else if (json_is_string(j)) {
        v.type = ZX_T_TEXT;
        v.len = (uint32_t)json_string_length(j);
        if (ts && zx_rfc3339_parse(json_string_value(j), v.len, &v.u.i))
            v.type = ZX_T_TIMESTAMP;
        v.s = zx_rowset_strdup(rs, json_string_value(j), v.len);
        if (!v.s)
            return -1;
    } else {
        char *d = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!d)
            return -1;
        v.type = ZX_T_JSON;
        v.len = (uint32_t)strlen(d);
        v.s = zx_rowset_strdup(rs, d, v.len);
        free(d);
        if (!v.s)
            return -1;
    }
    return zx_rowset_add(rs, col, &v);
}

static void put_hex(const uint8_t *p, size_t n)
{
    putchar('"');
    for (size_t i = 0; i < n; i++)
        printf("%02x", p[i]);
    putchar('"');
}

/* ", \"columns\": [...]" for --stats. */
static void print_stats(const zx_pq_writer *w, const zx_dcol *cols, size_t ncols)
{
    printf(", \"columns\": [");
    for (size_t c = 0; c < ncols; c++) {
        zx_pq_colstats cs;
        if (zx_pq_col_stats(w, c, &cs) < 0)
            continue;
        printf("%s{\"values\": %llu, \"nulls\": %llu, \"nans\": %llu, "
               "\"compressed_bytes\": %llu, \"uncompressed_bytes\": %llu",
               c ? ", " : "", (unsigned long long)cs.values, (unsigned long long)cs.nulls,
               (unsigned long long)cs.nans, (unsigned long long)cs.compressed_bytes,
               (unsigned long long)cs.uncompressed_bytes);
        if (cs.has_minmax) {
            if (cs.bmin) {
                printf(", \"min\": ");
                put_hex(cs.bmin, cs.bmin_len);
                printf(", \"max\": ");
                put_hex(cs.bmax, cs.bmax_len);
            } else if (cols[c].type == ZX_DT_DOUBLE) {
                printf(", \"min\": %.17g, \"max\": %.17g", cs.dmin, cs.dmax);
            } else {
                printf(", \"min\": %lld, \"max\": %lld", (long long)cs.imin,
                       (long long)cs.imax);
            }
        }
        printf("}");
    }
    printf("]");
}

static const zx_dcol gen_cols[] = {
    {"id", ZX_DT_INT64, 0, 0},       {"name", ZX_DT_TEXT, 0, 0},
    {"amount", ZX_DT_DOUBLE, 0, 0},  {"ts", ZX_DT_TIMESTAMP, 0, 0},
    {"flag", ZX_DT_BOOL, 0, 0},
};

static int gen_batch(zx_rowset *rs, uint64_t first, uint64_t n)
{
    zx_rowset_reset(rs);
    for (int c = 0; c < 5; c++)
        if (zx_rowset_column(rs, gen_cols[c].name, strlen(gen_cols[c].name), ZX_T_NULL) < 0)
            return -1;
    for (uint64_t i = first; i < first + n; i++) {
        if (zx_rowset_begin_row(rs) < 0)
            return -1;
        zx_value v = {.type = ZX_T_INT, .u.i = (int64_t)i};
        if (zx_rowset_add(rs, 0, &v) < 0)
            return -1;
        if (i % 1000 != 999) {
            char b[48];
            int l = snprintf(b, sizeof(b), "user-%06u@example.org", (unsigned)(i % 10000));
            zx_value t = {.type = ZX_T_TEXT, .len = (uint32_t)l};
            t.s = zx_rowset_strdup(rs, b, (size_t)l);
            if (!t.s || zx_rowset_add(rs, 1, &t) < 0)
                return -1;
        }
        zx_value d = {.type = ZX_T_REAL, .u.d = (double)i * 0.5};
        zx_value ts = {.type = ZX_T_TIMESTAMP, .u.i = 1577836800000000LL + (int64_t)i * 1000000};
        zx_value b = {.type = ZX_T_BOOL, .u.b = i % 3 == 0};
        if (zx_rowset_add(rs, 2, &d) < 0 || zx_rowset_add(rs, 3, &ts) < 0 ||
            zx_rowset_add(rs, 4, &b) < 0)
            return -1;
        zx_rowset_end_row(rs);
    }
    return 0;
}

int main(int argc, char **argv)
{
    zx_pq_opts o = {0};
    const char *out = NULL;
    uint64_t generate = 0, batch = 10000;
    int gen = 0, stats = 0, typed_ts = 0;
    long repeat = 1;
    int32_t ids[1024];
    size_t nids = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--codec") && val) {
            if (zx_pq_codec_parse(val, &o.codec) < 0)
                return die("--codec: zstd, snappy or none");
            i++;
        } else if (!strcmp(a, "--row-group-bytes") && val) {
            o.row_group_bytes = strtoull(val, NULL, 10);
            i++;
        } else if (!strcmp(a, "--page-bytes") && val) {
            o.page_bytes = strtoull(val, NULL, 10);
            i++;
        } else if (!strcmp(a, "--batch") && val) {
            batch = strtoull(val, NULL, 10);
            if (!batch || batch > 1000000)
                return die("--batch: 1..1000000");
            i++;
        } else if (!strcmp(a, "--generate") && val) {
            generate = strtoull(val, NULL, 10);
            gen = 1;
            i++;
        } else if (!strcmp(a, "--field-ids") && val) {
            for (const char *q = val; *q && nids < 1024; nids++) {
                char *e;
                ids[nids] = (int32_t)strtol(q, &e, 10);
                if (e == q || (*e && *e != ','))
                    return die("--field-ids: integers separated by commas");
                q = *e ? e + 1 : e;
            }
            o.field_ids = ids;
            i++;
        } else if (!strcmp(a, "--stats")) {
            stats = 1;
        } else if (!strcmp(a, "--repeat") && val) {
            repeat = strtol(val, NULL, 10);
            if (repeat < 1 || repeat > 100)
                return die("--repeat: 1..100");
            i++;
        } else if (!strcmp(a, "--typed-timestamps")) {
            typed_ts = 1;
        } else if (a[0] != '-' && !out) {
            out = a;
        } else {
            return die("usage: pqwrite OUT.parquet [--codec zstd|snappy|none] "
                       "[--row-group-bytes N] [--page-bytes N] [--batch N] [--generate N] "
                       "[--field-ids ID,...] [--stats] [--typed-timestamps] [--repeat K]");
        }
    }
    if (!out)
        return die("no output file");

    double t0 = now(), tw = 0;
    zx_dcol cols[1024];
    size_t ncols = 0;
    json_t *schema = NULL;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    if (gen) {
        memcpy(cols, gen_cols, sizeof(gen_cols));
        ncols = 5;
    } else {
        if ((n = getline(&line, &cap, stdin)) <= 0)
            return die("no schema line on stdin");
        json_error_t je;
        schema = json_loadb(line, (size_t)n, 0, &je);
        if (!json_is_array(schema) || json_array_size(schema) > 1024)
            return die("the schema line is not an array of at most 1024 columns");
        for (size_t i = 0; i < json_array_size(schema); i++) {
            json_t *c = json_array_get(schema, i);
            const char *nm = json_string_value(json_array_get(c, 0));
            const char *ty = json_string_value(json_array_get(c, 1));
            if (!nm || !ty || parse_type(ty, &cols[i].type) < 0)
                return die("a schema column is not [name, type]");
            cols[i].name = nm;
            cols[i].precision = (int)json_integer_value(json_array_get(c, 2));
            cols[i].scale = (int)json_integer_value(json_array_get(c, 3));
            ncols++;
        }
    }
    if (o.field_ids && nids != ncols)
        return die("--field-ids: one id per column");
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "pqwrite: %s: %s\n", out, strerror(errno));
        return 1;
    }
    char err[512];
    zx_pq_writer *w;
    zx_rowset rs;
    zx_rowset_init(&rs);
    double first = -1, t1;
    /* --repeat: the writes before the last, timed alike */
    for (long rep = 1; gen && rep < repeat; rep++) {
        double tr = 0;
        t1 = now();
        if (zx_pq_open(fd, cols, ncols, &o, &w, err, sizeof(err)) < 0)
            return die(err);
        tr += now() - t1;
        for (uint64_t i = 0; i < generate; i += batch) {
            uint64_t k = generate - i < batch ? generate - i : batch;
            if (gen_batch(&rs, i, k) < 0)
                return die("out of memory");
            t1 = now();
            if (zx_pq_write(w, &rs, err, sizeof(err)) < 0)
                return die(err);
            tr += now() - t1;
        }
        t1 = now();
        if (zx_pq_finish(w, NULL, err, sizeof(err)) < 0)
            return die(err);
        tr += now() - t1;
        zx_pq_free(w);
        if (first < 0)
            first = tr;
        if (ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0)
            return die("could not empty the file for the next --repeat");
    }
    t1 = now();
    if (zx_pq_open(fd, cols, ncols, &o, &w, err, sizeof(err)) < 0)
        return die(err);
    tw += now() - t1;
    if (gen) {
        for (uint64_t i = 0; i < generate; i += batch) {
            uint64_t k = generate - i < batch ? generate - i : batch;
            if (gen_batch(&rs, i, k) < 0)
                return die("out of memory");
            t1 = now();
            if (zx_pq_write(w, &rs, err, sizeof(err)) < 0)
                return die(err);
            tw += now() - t1;
        }
    } else {
        int more = 1;
        while (more) {
            zx_rowset_reset(&rs);
            for (size_t c = 0; c < ncols; c++)
                zx_rowset_column(&rs, cols[c].name, strlen(cols[c].name), ZX_T_NULL);
            while (rs.nrows < batch && (more = (n = getline(&line, &cap, stdin)) > 0)) {
                if (n == 1 && line[0] == '\n')
                    continue;
                json_error_t je;
                json_t *row = json_loadb(line, (size_t)n, JSON_ALLOW_NUL, &je);
                if (!json_is_array(row) || json_array_size(row) != ncols)
                    return die("a row is not an array with one value per column");
                if (zx_rowset_begin_row(&rs) < 0)
                    return die("out of memory");
                for (size_t c = 0; c < ncols; c++)
                    if (add_cell(&rs, (uint32_t)c, json_array_get(row, c),
                                 typed_ts && cols[c].type == ZX_DT_TIMESTAMP) < 0)
                        return die("out of memory");
                zx_rowset_end_row(&rs);
                json_decref(row);
            }
            t1 = now();
            if (zx_pq_write(w, &rs, err, sizeof(err)) < 0)
                return die(err);
            tw += now() - t1;
        }
    }
    uint64_t bytes = 0;
    t1 = now();
    if (zx_pq_finish(w, &bytes, err, sizeof(err)) < 0)
        return die(err);
    tw += now() - t1;
    printf("{\"rows\": %llu, \"row_groups\": %u, \"bytes\": %llu, \"nulled\": %llu, "
           "\"write_seconds\": %.4f, \"write_seconds_first\": %.4f, \"total_seconds\": %.4f",
           (unsigned long long)zx_pq_rows(w), zx_pq_row_groups(w), (unsigned long long)bytes,
           (unsigned long long)zx_pq_nulled(w), tw, first < 0 ? tw : first, now() - t0);
    if (stats)
        print_stats(w, cols, ncols);
    printf("}\n");
    zx_pq_free(w);
    zx_rowset_free(&rs);
    free(line);
    json_decref(schema);
    if (close(fd) < 0)
        return die("close failed");
    return 0;
}
