/*
 * sqlite_insert_limit.c — the limit of a Kafka → SQLite benchmark: the same
 * rows through one prepared INSERT into SQLite, one transaction per chunk,
 * with nothing else in the way (no broker, no ring, no framing).
 *
 *   sqlite_insert_limit DB NDJSON 'CREATE TABLE ...' [ROWS_PER_TXN]
 *
 * DB is created (it must not exist), with the workspace's settings
 * (64 KiB pages, WAL, synchronous=NORMAL, a 64 MiB page cache), and the
 * table made by the given statement (kafka_bench.sh passes the one zx
 * made).  The columns filled are the keys of the first JSON object, in
 * its order; every line must be a flat JSON object.  Values bind as
 * SQLite types: integers, reals, text, true/false as 1/0, null as NULL,
 * arrays and objects as compact JSON text (as zx stores them).
 *
 * Lines are read and parsed (jansson) a chunk of ROWS_PER_TXN (default
 * 20,000) at a time into a compact buffer, outside the clock; only
 * BEGIN, the bound INSERTs and COMMIT are timed.  So the figure is an
 * upper bound for any consumer that must write the same rows.
 * Prints one line: "rows=N seconds=S rows_per_s=R".  Exit 0, or 1 with a
 * message on stderr.
 *
 * It must never time the parsing or the reading, or write anywhere but
 * DB (and its -wal and -shm).
 */
#include <jansson.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { C_NULL, C_INT, C_REAL, C_TEXT };

typedef struct {
    int type;
    int64_t i;
    double d;
    size_t off, len;     /* C_TEXT: bytes in the chunk's text buffer */
} cell;

typedef struct {
    cell *cells;         /* rows x ncols */
    size_t ncells, cap;
    char *text;
    size_t tlen, tcap;
} chunk;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int die(const char *what, const char *why)
{
    fprintf(stderr, "sqlite_insert_limit: %s: %s\n", what, why);
    return 1;
}

static int text_add(chunk *c, const char *s, size_t n, cell *out)
{
    if (c->tlen + n > c->tcap) {
        size_t cap = c->tcap ? c->tcap : 1 << 20;
        while (cap < c->tlen + n)
            cap *= 2;
        char *t = realloc(c->text, cap);
        if (!t)
            return -1;
        c->text = t;
        c->tcap = cap;
    }
    memcpy(c->text + c->tlen, s, n);
    out->type = C_TEXT;
    out->off = c->tlen;
    out->len = n;
    c->tlen += n;
    return 0;
}

/* One value into a cell.  0, or -1 (out of memory). */
static int cell_of(chunk *c, json_t *v, cell *out)
{
    memset(out, 0, sizeof(*out));
    switch (v ? json_typeof(v) : JSON_NULL) {
    case JSON_INTEGER:
        out->type = C_INT;
        out->i = json_integer_value(v);
        return 0;
    case JSON_REAL:
        out->type = C_REAL;
        out->d = json_real_value(v);
        return 0;
    case JSON_TRUE:
    case JSON_FALSE:
        out->type = C_INT;
        out->i = json_is_true(v);
        return 0;
    case JSON_STRING:
        return text_add(c, json_string_value(v), json_string_length(v), out);
    case JSON_ARRAY:
    case JSON_OBJECT: {
        char *s = json_dumps(v, JSON_COMPACT);
        int r = s ? text_add(c, s, strlen(s), out) : -1;
        free(s);
        return r;
    }
    default:
        out->type = C_NULL;
        return 0;
    }
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: sqlite_insert_limit DB NDJSON 'CREATE TABLE ...' "
                        "[ROWS_PER_TXN]\n");
        return 2;
    }
    long per_txn = argc == 5 ? atol(argv[4]) : 20000;
    if (per_txn < 1)
        return die("ROWS_PER_TXN", "must be at least 1");
    FILE *in = fopen(argv[2], "r");
    if (!in)
        return die(argv[2], "cannot open");
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK)
        return die(argv[1], db ? sqlite3_errmsg(db) : "cannot open");
    char *e = NULL;
    if (sqlite3_exec(db,
                     "PRAGMA page_size=65536; PRAGMA journal_mode=WAL; "
                     "PRAGMA synchronous=NORMAL; PRAGMA cache_size=-65536; "
                     "PRAGMA wal_autocheckpoint=1024;",
                     NULL, NULL, &e) != SQLITE_OK ||
        sqlite3_exec(db, argv[3], NULL, NULL, &e) != SQLITE_OK)
        return die("setup", e ? e : sqlite3_errmsg(db));

    json_t *first = NULL;   /* the first object, for its keys in order */
    const char **names = NULL;
    size_t ncols = 0;
    sqlite3_stmt *ins = NULL, *begin = NULL, *commit = NULL;
    chunk c = {0};
    char *line = NULL;
    size_t lcap = 0;
    ssize_t n;
    long rows = 0;
    double timed = 0;
    int eof = 0;
    while (!eof) {
        c.ncells = c.tlen = 0;
        long got = 0;
        while (got < per_txn) {
            if ((n = getline(&line, &lcap, in)) < 0) {
                eof = 1;
                break;
            }
            json_error_t je;
            json_t *o = json_loadb(line, (size_t)n, 0, &je);
            if (!json_is_object(o))
                return die("line", o ? "not an object" : je.text);
            if (!first) {
                first = json_incref(o);
                ncols = json_object_size(o);
                names = calloc(ncols ? ncols : 1, sizeof(*names));
                if (!names)
                    return die("memory", "out of memory");
                size_t k = 0;
                const char *key;
                json_t *val;
                json_object_foreach(first, key, val) names[k++] = key;
                char sql[4096];
                size_t len = (size_t)snprintf(sql, sizeof(sql), "INSERT INTO bench(");
                for (size_t j = 0; j < ncols && len < sizeof(sql); j++)
                    len += (size_t)snprintf(sql + len, sizeof(sql) - len, "%s\"%s\"",
                                            j ? "," : "", names[j]);
                len += (size_t)snprintf(sql + len, sizeof(sql) - len, ") VALUES(");
                for (size_t j = 0; j < ncols && len < sizeof(sql); j++)
                    len += (size_t)snprintf(sql + len, sizeof(sql) - len, "%s?", j ? "," : "");
                snprintf(sql + len, sizeof(sql) - len, ")");
                if (sqlite3_prepare_v2(db, sql, -1, &ins, NULL) != SQLITE_OK ||
                    sqlite3_prepare_v2(db, "BEGIN", -1, &begin, NULL) != SQLITE_OK ||
                    sqlite3_prepare_v2(db, "COMMIT", -1, &commit, NULL) != SQLITE_OK)
                    return die("prepare", sqlite3_errmsg(db));
            }
            if (c.ncells + ncols > c.cap) {
                size_t cap = c.cap ? c.cap * 2 : (size_t)per_txn * (ncols ? ncols : 1);
                cell *nc = realloc(c.cells, cap * sizeof(*nc));
                if (!nc)
                    return die("memory", "out of memory");
                c.cells = nc;
                c.cap = cap;
            }
            for (size_t j = 0; j < ncols; j++)
                if (cell_of(&c, json_object_get(o, names[j]), &c.cells[c.ncells++]) < 0)
                    return die("memory", "out of memory");
            json_decref(o);
            got++;
        }
        if (!got)
            break;
        double t0 = now_s();
        if (sqlite3_step(begin) != SQLITE_DONE)
            return die("BEGIN", sqlite3_errmsg(db));
        sqlite3_reset(begin);
        for (long r = 0; r < got; r++) {
            const cell *row = c.cells + (size_t)r * ncols;
            for (size_t j = 0; j < ncols; j++) {
                const cell *x = &row[j];
                int b = x->type == C_INT    ? sqlite3_bind_int64(ins, (int)j + 1, x->i)
                        : x->type == C_REAL ? sqlite3_bind_double(ins, (int)j + 1, x->d)
                        : x->type == C_TEXT ? sqlite3_bind_text(ins, (int)j + 1,
                                                                c.text + x->off, (int)x->len,
                                                                SQLITE_STATIC)
                                            : sqlite3_bind_null(ins, (int)j + 1);
                if (b != SQLITE_OK)
                    return die("bind", sqlite3_errmsg(db));
            }
            if (sqlite3_step(ins) != SQLITE_DONE)
                return die("INSERT", sqlite3_errmsg(db));
            sqlite3_reset(ins);
        }
        if (sqlite3_step(commit) != SQLITE_DONE)
            return die("COMMIT", sqlite3_errmsg(db));
        sqlite3_reset(commit);
        timed += now_s() - t0;
        rows += got;
    }
    printf("rows=%ld seconds=%.3f rows_per_s=%.0f\n", rows, timed,
           timed > 0 ? rows / timed : 0.0);
    sqlite3_finalize(ins);
    sqlite3_finalize(begin);
    sqlite3_finalize(commit);
    sqlite3_close(db);
    json_decref(first);
    free(names);
    free(c.cells);
    free(c.text);
    free(line);
    fclose(in);
    return 0;
}
