/*
 * zxctl_print.c — zxctl's human output: aligned tables for status, key:
 * value lines for checkpoints, one line per feed event, and the cleaning of
 * every string the daemon sent.
 *
 * It must never: print a control byte received from the daemon (strings go
 * through zxctl_clean), or fail on a field that is missing or of another
 * type than expected (a newer or older daemon): it prints "-" instead.
 */
#include "zxctl/zxctl_int.h"

#include <stdlib.h>
#include <string.h>

/* Copy of s with control bytes replaced by '?' (UTF-8 kept).  Caller frees. */
char *zxctl_clean(const char *s)
{
    char *d = zxctl_xstrdup(s);
    for (unsigned char *p = (unsigned char *)d; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            *p = '?';
    return d;
}

/* Printable text of a JSON value: "-" for missing, null or "", numbers in
 * decimal, strings cleaned, arrays/objects as compact JSON.  Caller frees. */
char *zxctl_fmt(const json_t *v)
{
    char num[64];
    if (!v || json_is_null(v))
        return zxctl_xstrdup("-");
    if (json_is_string(v))
        return zxctl_clean(json_string_value(v)[0] ? json_string_value(v) : "-");
    if (json_is_integer(v)) {
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return zxctl_xstrdup(num);
    }
    if (json_is_real(v)) {
        snprintf(num, sizeof num, "%g", json_real_value(v));
        return zxctl_xstrdup(num);
    }
    if (json_is_boolean(v))
        return zxctl_xstrdup(json_is_true(v) ? "true" : "false");
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!s)
        zxctl_oom();
    char *c = zxctl_clean(s);
    free(s);
    return c;
}

/* "col=N col=N" of a rejects_by_column object; NULL when absent or empty.
 * Caller frees. */
static char *zxctl_fmt_rejects(const json_t *obj)
{
    if (!json_is_object(obj) || json_object_size(obj) == 0)
        return NULL;
    char *out = NULL;
    size_t len = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v) {
        char *ck = zxctl_clean(k), *cv = zxctl_fmt(v);
        size_t add = strlen(ck) + strlen(cv) + 2;
        out = zxctl_xrealloc(out, len + add + 1);
        len += (size_t)sprintf(out + len, "%s%s=%s", len ? " " : "", ck, cv);
        free(ck);
        free(cv);
    }
    return out;
}

/* Display width of UTF-8 text: one column per character. */
static size_t zxctl_width(const char *s)
{
    size_t w = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if ((*p & 0xc0) != 0x80)
            w++;
    return w;
}

/* ---------------------------------------------------------------- tables */

typedef struct zxctl_table {
    size_t ncols, nrows;
    char **cells;   /* nrows * ncols, owned */
    char **notes;   /* per row: NULL or a line printed beneath it, owned */
} zxctl_table;

/* Append a row; cells are taken over (each malloc'd). */
static void zxctl_table_add(zxctl_table *t, char **cells, char *note)
{
    t->cells = zxctl_xrealloc(t->cells, (t->nrows + 1) * t->ncols * sizeof *t->cells);
    t->notes = zxctl_xrealloc(t->notes, (t->nrows + 1) * sizeof *t->notes);
    memcpy(t->cells + t->nrows * t->ncols, cells, t->ncols * sizeof *cells);
    t->notes[t->nrows++] = note;
}

static void zxctl_table_header(zxctl_table *t, const char *const *names)
{
    char *cells[16];
    for (size_t i = 0; i < t->ncols; i++)
        cells[i] = zxctl_xstrdup(names[i]);
    zxctl_table_add(t, cells, NULL);
}

/* Print with columns two spaces apart (the last one not padded), then free. */
static void zxctl_table_print(zxctl_table *t, FILE *out)
{
    size_t w[16] = { 0 };
    for (size_t r = 0; r < t->nrows; r++)
        for (size_t c = 0; c < t->ncols; c++) {
            size_t cw = zxctl_width(t->cells[r * t->ncols + c]);
            if (cw > w[c])
                w[c] = cw;
        }
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t c = 0; c < t->ncols; c++) {
            const char *s = t->cells[r * t->ncols + c];
            if (c + 1 == t->ncols)
                fprintf(out, "%s\n", s);
            else
                fprintf(out, "%s%*s  ", s, (int)(w[c] - zxctl_width(s)), "");
        }
        if (t->notes[r])
            fputs(t->notes[r], out);
    }
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    for (size_t r = 0; r < t->nrows; r++)
        free(t->notes[r]);
    free(t->cells);
    free(t->notes);
    memset(t, 0, sizeof *t);
}

/* Lines printed beneath a pipeline's row ("  blocked: <why>", "  rejects: ...", "  source:
 * ..." with the lag of each partition the source reports), or NULL.
 * Caller frees. */
static char *zxctl_pipe_notes(const json_t *e)
{
    char *out = NULL;
    size_t len = 0;
    const json_t *why = json_object_get(e, "blocked_reason");
    if (json_is_string(why)) {
        /* the writer holds the pipeline's frames back: say so first */
        const char *w = json_string_value(why);
        out = zxctl_xrealloc(out, len + strlen(w) + 16);
        len += (size_t)sprintf(out + len, "  blocked: %s\n", w);
    }
    const json_t *bt = json_object_get(e, "blocked_tables");
    if (json_is_string(bt)) {
        /* tables whose changes the writer parks while the others go on */
        const char *b = json_string_value(bt);
        out = zxctl_xrealloc(out, len + strlen(b) + 24);
        len += (size_t)sprintf(out + len, "  blocked tables: %s\n", b);
    }
    const json_t *rs = json_object_get(e, "resumed");
    const json_t *rat = json_object_get(rs, "stored_at");
    if (json_is_string(rat)) {
        /* it started from state stored before it was (re)defined here */
        json_int_t np = json_integer_value(json_object_get(rs, "positions"));
        out = zxctl_xrealloc(out, len + strlen(json_string_value(rat)) + 120);
        if (np > 0)
            len += (size_t)sprintf(out + len, "  resumed from positions stored %s (%lld)\n",
                                   json_string_value(rat), (long long)np);
        else
            len += (size_t)sprintf(out + len, "  resumed from state stored %s\n",
                                   json_string_value(rat));
    }
    char *rej = zxctl_fmt_rejects(json_object_get(e, "rejects_by_column"));
    if (rej) {
        out = zxctl_xrealloc(out, len + strlen(rej) + 16);
        len += (size_t)sprintf(out + len, "  rejects: %s\n", rej);
        free(rej);
    }
    char *lv = zxctl_verify_line(json_object_get(e, "last_verify"));
    if (lv) {
        out = zxctl_xrealloc(out, len + strlen(lv) + 1);
        len += (size_t)sprintf(out + len, "%s", lv);
        free(lv);
    }
    const json_t *fw = json_object_get(e, "forward");
    if (json_is_object(fw)) {
        /* what its forwarder published, what waits in the journal */
        const json_t *age = json_object_get(fw, "oldest_pending_ms");
        const json_t *fe = json_object_get(fw, "last_error");
        char *to = zxctl_fmt(json_object_get(fw, "to"));
        char *tp = zxctl_fmt(json_object_get(fw, "topic"));
        const char *ferr = json_is_string(fe) ? json_string_value(fe) : "";
        out = zxctl_xrealloc(out, len + strlen(to) + strlen(tp) + strlen(ferr) + 200);
        len += (size_t)sprintf(out + len, "  forward: to %s %s, %lld rows and %lld deletes "
                               "published, %lld frames waiting", to, tp,
                               (long long)json_integer_value(json_object_get(fw, "rows")),
                               (long long)json_integer_value(json_object_get(fw, "deletes")),
                               (long long)json_integer_value(json_object_get(fw,
                                                                             "pending_frames")));
        if (json_is_integer(age))
            len += (size_t)sprintf(out + len, " (the oldest for %.1f s)",
                                   (double)json_integer_value(age) / 1000.0);
        if (ferr[0])
            len += (size_t)sprintf(out + len, "; failing: %s", ferr);
        len += (size_t)sprintf(out + len, "\n");
        free(to);
        free(tp);
    }
    /* long work in progress: rows done and expected, rate, time left */
    const json_t *pg = json_object_get(e, "progress");
    char *pline = zxctl_progress_text(pg);
    if (pline) {
        out = zxctl_xrealloc(out, len + strlen(pline) + 16);
        len += (size_t)sprintf(out + len, "  progress: %s\n", pline);
        free(pline);
    }
    const json_t *st = json_object_get(e, "source_status");
    const json_t *parts = json_object_get(st, "partitions");
    const json_t *sy = json_object_get(e, "sync");
    if (json_is_object(sy)) {
        /* the run's progress is the line above (a zxd without it: the
         * run's own status says it) */
        char *line = zxctl_sync_line(sy, json_is_object(pg) ? NULL : st);
        out = zxctl_xrealloc(out, len + strlen(line) + 1);
        len += (size_t)sprintf(out + len, "%s", line);
        free(line);
        return out;
    }
    if (json_is_object(st) && json_object_size(st)) {
        char *state = zxctl_fmt(json_object_get(st, "state"));
        out = zxctl_xrealloc(out, len + strlen(state) + 32);
        len += (size_t)sprintf(out + len, "  source: %s", state);
        free(state);
        if (json_is_array(parts)) {
            long long total = 0;
            size_t i;
            json_t *p;
            json_array_foreach(parts, i, p) total += json_integer_value(json_object_get(p, "lag"));
            out = zxctl_xrealloc(out, len + 64);
            len += (size_t)sprintf(out + len, ", lag %lld:", total);
            json_array_foreach(parts, i, p) {
                if (i == 32) { /* the JSON (--json) has them all */
                    out = zxctl_xrealloc(out, len + 64);
                    len += (size_t)sprintf(out + len, " ... (%zu partitions)",
                                           json_array_size(parts));
                    break;
                }
                char *tp = zxctl_fmt(json_object_get(p, "topic"));
                char *lg = zxctl_fmt(json_object_get(p, "lag"));
                out = zxctl_xrealloc(out, len + strlen(tp) + strlen(lg) + 48);
                len += (size_t)sprintf(out + len, " %s[%lld]=%s", tp,
                                       (long long)json_integer_value(json_object_get(p, "partition")),
                                       lg);
                free(tp);
                free(lg);
            }
        }
        /* change data capture: the copy's progress, the stream's lag */
        const json_t *rc = json_object_get(st, "rows_copied");
        const json_t *lb = json_object_get(st, "lag_bytes");
        if (json_is_integer(rc)) {
            char *tb = zxctl_fmt(json_object_get(st, "table"));
            out = zxctl_xrealloc(out, len + strlen(tb) + 200);
            len += (size_t)sprintf(out + len, " %s, %lld of about %lld rows, %.0f rows/s, "
                                   "about %.0f s left", tb, (long long)json_integer_value(rc),
                                   (long long)json_integer_value(json_object_get(st, "rows_estimate")),
                                   json_number_value(json_object_get(st, "rows_per_second")),
                                   json_number_value(json_object_get(st, "seconds_left")));
            free(tb);
        } else if (json_is_integer(lb)) {
            char *cl = zxctl_fmt(json_object_get(st, "confirmed_lsn"));
            long long ret = json_integer_value(json_object_get(st, "retained_wal_bytes"));
            out = zxctl_xrealloc(out, len + strlen(cl) + 200);
            len += (size_t)sprintf(out + len, ", lag %lld bytes / %.3f s, confirmed %s",
                                   (long long)json_integer_value(lb),
                                   json_number_value(json_object_get(st, "lag_seconds")), cl);
            if (ret >= 0)
                len += (size_t)sprintf(out + len, ", WAL retained %lld bytes", ret);
            free(cl);
        }
        out = zxctl_xrealloc(out, len + 2);
        len += (size_t)sprintf(out + len, "\n");
    }
    return out;
}

/* --------------------------------------------------------- human output */

void zxctl_print_status(const json_t *r, FILE *out)
{
    char *ver = zxctl_fmt(json_object_get(r, "version"));
    char *pid = zxctl_fmt(json_object_get(r, "pid"));
    char *cfg = zxctl_fmt(json_object_get(r, "config"));
    char *since = zxctl_fmt(json_object_get(r, "started_at"));
    fprintf(out, "zxd %s  pid %s  config %s  started %s\n\n", ver, pid, cfg, since);
    free(ver);
    free(pid);
    free(cfg);
    free(since);

    static const char *const ph[] = { "NAME", "PID", "STATE", "RESTARTS", "LAST_ERROR" };
    static const char *const pk[] = { "name", "pid", "state", "restarts", "last_error" };
    zxctl_table t = { .ncols = 5 };
    zxctl_table_header(&t, ph);
    json_t *arr = json_object_get(r, "processes"), *e;
    size_t i;
    json_array_foreach(arr, i, e) {
        char *cells[5];
        for (size_t c = 0; c < 5; c++)
            cells[c] = zxctl_fmt(json_object_get(e, pk[c]));
        zxctl_table_add(&t, cells, NULL);
    }
    zxctl_table_print(&t, out);
    fputc('\n', out);

    static const char *const lh[] = { "NAME", "SOURCE", "TABLE", "PID", "STATE",
                                      "RESTARTS", "ROWS", "REJECTS", "LAST_ERROR" };
    static const char *const lk[] = { "name", "source", "table", "pid", "state",
                                      "restarts", "rows", "rejects", "last_error" };
    t = (zxctl_table){ .ncols = 9 };
    zxctl_table_header(&t, lh);
    arr = json_object_get(r, "pipelines");
    json_array_foreach(arr, i, e) {
        char *cells[9];
        for (size_t c = 0; c < 9; c++)
            cells[c] = zxctl_fmt(json_object_get(e, lk[c]));
        zxctl_table_add(&t, cells, zxctl_pipe_notes(e));
    }
    size_t npipes = json_array_size(arr);
    zxctl_table_print(&t, out);
    if (npipes == 0)
        fputs("(no pipelines)\n", out);
}

/* "a, b" of an array of names, or "none".  Caller frees. */
static char *zxctl_fmt_names(const json_t *arr)
{
    if (!json_is_array(arr) || json_array_size(arr) == 0)
        return zxctl_xstrdup("none");
    char *out = NULL;
    size_t len = 0, i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        char *s = zxctl_fmt(e);
        out = zxctl_xrealloc(out, len + strlen(s) + 3);
        len += (size_t)sprintf(out + len, "%s%s", len ? ", " : "", s);
        free(s);
    }
    return out;
}

void zxctl_print_reload(const json_t *r, FILE *out)
{
    static const char *const keys[] = { "added", "changed", "removed", "unchanged" };
    fputs("reload ok:", out);
    for (size_t i = 0; i < 4; i++) {
        char *s = zxctl_fmt_names(json_object_get(r, keys[i]));
        fprintf(out, "%s %s %s", i ? ";" : "", keys[i], s);
        free(s);
    }
    fputc('\n', out);
}

void zxctl_print_checkpoints(const json_t *r, FILE *out)
{
    static const char *const known[] = { "pipeline", "table", "seq", "committed_at",
                                         "rows", "rejects", "rejects_by_column",
                                         "idempotency_keys" };
    size_t nknown = sizeof known / sizeof known[0];
    for (size_t i = 0; i < nknown; i++) {
        json_t *v = json_object_get(r, known[i]);
        char *s = i == 6 ? zxctl_fmt_rejects(v) : zxctl_fmt(v);
        fprintf(out, "%s: %s\n", known[i], s ? s : "-");
        free(s);
    }
    /* fields a newer daemon may add, as they come */
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)r, k, v) {
        int skip = !strcmp(k, "ok") || !strcmp(k, "schema");
        for (size_t i = 0; i < nknown && !skip; i++)
            skip = !strcmp(k, known[i]);
        if (skip)
            continue;
        char *ck = zxctl_clean(k), *s = zxctl_fmt(v);
        fprintf(out, "%s: %s\n", ck, s);
        free(ck);
        free(s);
    }
    json_t *schema = json_object_get(r, "schema"), *col;
    size_t i, w = 0;
    json_array_foreach(schema, i, col) {
        char *n = zxctl_fmt(json_object_get(col, "name"));
        if (zxctl_width(n) > w)
            w = zxctl_width(n);
        free(n);
    }
    fprintf(out, "schema:%s\n", json_array_size(schema) ? "" : " -");
    json_array_foreach(schema, i, col) {
        char *n = zxctl_fmt(json_object_get(col, "name"));
        char *ty = zxctl_fmt(json_object_get(col, "type"));
        fprintf(out, "  %s%*s  %s\n", n, (int)(w - zxctl_width(n)), "", ty);
        free(n);
        free(ty);
    }
}

void zxctl_print_event(const json_t *ev, FILE *out)
{
    char *ts = zxctl_fmt(json_object_get(ev, "ts"));
    char *kind = zxctl_fmt(json_object_get(ev, "event"));
    char *pipe = zxctl_fmt(json_object_get(ev, "pipeline"));
    fprintf(out, "%s %s %s", ts, kind, pipe);
    json_t *msg = json_object_get(ev, "message");
    if (json_is_string(msg)) {
        char *m = zxctl_clean(json_string_value(msg));
        fprintf(out, " %s", m);
        free(m);
    } else {
        /* no message: show the kind-specific fields instead */
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)ev, k, v) {
            if (!strcmp(k, "ts") || !strcmp(k, "event") || !strcmp(k, "pipeline") ||
                !strcmp(k, "message"))
                continue;
            char *ck = zxctl_clean(k), *s = zxctl_fmt(v);
            fprintf(out, " %s=%s", ck, s);
            free(ck);
            free(s);
        }
    }
    fputc('\n', out);
    free(ts);
    free(kind);
    free(pipe);
}
