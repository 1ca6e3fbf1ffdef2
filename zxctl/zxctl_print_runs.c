/*
 * zxctl_print_runs.c — human output of reverse syncs' runs: a run's
 * record (run, preview, approve, reject), the history (`runs`, with the
 * preview and sample of each run awaiting approval) and the lines
 * `status` prints under a sync.  Every string from the daemon is
 * cleaned (zxctl_clean).
 */
#include "zxctl/zxctl_int.h"

#include <stdlib.h>
#include <string.h>

static long long num(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? (long long)json_integer_value(v) : 0;
}

/* A printf into a growing string. */
static void addf(char **s, size_t *len, const char *fmt, const char *a, long long x,
                 long long y)
{
    size_t need = strlen(fmt) + (a ? strlen(a) : 0) + 64;
    *s = zxctl_xrealloc(*s, *len + need);
    *len += (size_t)snprintf(*s + *len, need, fmt, a ? a : "", x, y);
}

char *zxctl_sync_line(const json_t *sync, const json_t *st)
{
    char *out = NULL;
    size_t len = 0;
    char *state = zxctl_fmt(json_object_get(sync, "state"));
    addf(&out, &len, "  sync: %s", state, 0, 0);
    free(state);
    const char *sst = json_string_value(json_object_get(st, "state"));
    const char *syst = json_string_value(json_object_get(sync, "state"));
    /* progress only while a run is on (the status of a run that ended, or
     * of a worker that died, is not) */
    if (json_is_object(st) && sst && !strcmp(sst, "running") && syst &&
        (!strcmp(syst, "running") || !strcmp(syst, "previewing"))) {
        char *ph = zxctl_fmt(json_object_get(st, "phase"));
        addf(&out, &len, ", %s", ph, 0, 0);
        free(ph);
        addf(&out, &len, "%s, %lld rows read, %lld sent", "", num(st, "rows_read"),
             num(st, "rows_sent"));
        const json_t *ts = json_object_get(st, "rows_to_send");
        if (json_is_integer(ts))
            addf(&out, &len, "%s of %lld", "", json_integer_value(ts), 0);
        addf(&out, &len, "%s, %lld rows/s", "",
             (long long)json_number_value(json_object_get(st, "rows_per_second")), 0);
        const json_t *left = json_object_get(st, "seconds_left");
        if (json_is_number(left))
            addf(&out, &len, "%s, about %lld s left", "", (long long)json_number_value(left), 0);
    }
    const json_t *w = json_object_get(sync, "waiting");
    if (json_is_string(w)) {
        char *c = zxctl_clean(json_string_value(w));
        addf(&out, &len, "; a run is %s", c, 0, 0);
        free(c);
    }
    const json_t *last = json_object_get(sync, "last_run");
    if (json_is_object(last)) {
        char *id = zxctl_fmt(json_object_get(last, "id"));
        char *ls = zxctl_fmt(json_object_get(last, "state"));
        char *at = zxctl_fmt(json_object_get(last, "ended_at"));
        addf(&out, &len, "; last run %s", id, 0, 0);
        addf(&out, &len, " %s", ls, 0, 0);
        addf(&out, &len, " at %s", at, 0, 0);
        addf(&out, &len, "%s (%lld sent, %lld deleted)", "", num(last, "rows_sent"),
             num(last, "rows_deleted"));
        free(id);
        free(ls);
        free(at);
    }
    const json_t *next = json_object_get(sync, "next_run_at");
    if (json_is_string(next)) {
        char *c = zxctl_clean(json_string_value(next));
        addf(&out, &len, "; next run at %s", c, 0, 0);
        free(c);
    }
    addf(&out, &len, "\n", NULL, 0, 0);
    return out;
}

/* Seconds between two RFC 3339 stamps of the same day format: printed by
 * the daemon, so only the time of day is read (a run across midnight
 * shows the difference modulo a day). */
static double duration(const json_t *r)
{
    const char *a = json_string_value(json_object_get(r, "started_at"));
    const char *b = json_string_value(json_object_get(r, "ended_at"));
    int h1, m1, h2, m2;
    double s1, s2;
    if (!a || !b || strlen(a) < 19 || strlen(b) < 19 ||
        sscanf(a + 11, "%d:%d:%lf", &h1, &m1, &s1) != 3 ||
        sscanf(b + 11, "%d:%d:%lf", &h2, &m2, &s2) != 3)
        return -1;
    double d = (h2 - h1) * 3600.0 + (m2 - m1) * 60.0 + (s2 - s1);
    return d < 0 ? d + 86400.0 : d;
}

/* Rows a run (or its preview) sends: every row read in replace and
 * append, the new and changed ones in upsert and mirror. */
static long long to_send(const json_t *r, const json_t *rec)
{
    const char *m = json_string_value(json_object_get(rec, "mode"));
    if (!m)
        m = json_string_value(json_object_get(r, "mode"));
    if (m && (!strcmp(m, "replace") || !strcmp(m, "append")))
        return num(r, "rows_read");
    return num(r, "rows_inserted") + num(r, "rows_updated");
}

static void print_sample(const json_t *arr, const char *title, FILE *out)
{
    size_t i;
    json_t *e;
    if (!json_is_array(arr) || !json_array_size(arr))
        return;
    fprintf(out, "%s\n", title);
    json_array_foreach(arr, i, e) {
        char *c = zxctl_fmt(e);
        fprintf(out, "  %s\n", c);
        free(c);
    }
}

/* An agent's run's preview (pv, of run record r): counts and samples. */
static void print_preview(const json_t *pv, const json_t *r, FILE *out)
{
    fprintf(out, "  preview: would send %lld of %lld rows read (insert %lld, update %lld), "
            "delete %lld, unchanged %lld\n", to_send(pv, r), num(pv, "rows_read"),
            num(pv, "rows_inserted"), num(pv, "rows_updated"), num(pv, "rows_deleted"),
            num(pv, "rows_unchanged"));
    print_sample(json_object_get(pv, "sample"), "  sample of the rows to send:", out);
    print_sample(json_object_get(pv, "sample_deletes"), "  sample of the keys to delete:", out);
}

void zxctl_print_run(const json_t *r, FILE *out)
{
    char *id = zxctl_fmt(json_object_get(r, "id"));
    char *sy = zxctl_fmt(json_object_get(r, "sync"));
    char *st = zxctl_fmt(json_object_get(r, "state"));
    fprintf(out, "run %s of %s: %s\n", id, sy, st);
    const char *s = json_string_value(json_object_get(r, "state"));
    const json_t *pv = json_object_get(r, "preview");
    if (s && (!strcmp(s, "succeeded") || !strcmp(s, "failed"))) {
        double d = duration(r);
        fprintf(out, "  rows read %lld, sent %lld (inserted %lld, updated %lld), deleted %lld, "
                "unchanged %lld, failed %lld", num(r, "rows_read"), num(r, "rows_sent"),
                num(r, "rows_inserted"), num(r, "rows_updated"), num(r, "rows_deleted"),
                num(r, "rows_unchanged"), num(r, "rows_failed"));
        if (d >= 0)
            fprintf(out, " in %.3f s", d);
        fprintf(out, "\n");
        if (json_object_get(r, "batches"))
            fprintf(out, "  batches sent %lld, retried %lld, failed %lld\n", num(r, "batches"),
                    num(r, "batches_retried"), num(r, "batches_failed"));
        /* a sync with a cursor: the mark it read past (or all), the
         * greatest value it read */
        const json_t *cf = json_object_get(r, "cursor_from"), *cm = json_object_get(r, "cursor_mark");
        if (cf || cm) {
            char *f = json_is_string(cf) ? zxctl_clean(json_string_value(cf)) : NULL;
            char *m = json_is_string(cm) ? zxctl_clean(json_string_value(cm)) : NULL;
            fprintf(out, "  cursor: read %s%s, up to %s\n", f ? "from " : "every row",
                    f ? f : "", m ? m : "(no value read)");
            free(f);
            free(m);
        }
    }
    const json_t *fe = json_object_get(r, "first_error");
    if (json_is_string(fe) && *json_string_value(fe)) {
        char *c = zxctl_clean(json_string_value(fe));
        fprintf(out, "  first error: %s\n", c);
        free(c);
    }
    if (s && !strcmp(s, "previewed")) {
        fprintf(out, "  would send %lld of %lld rows read: insert %lld, update %lld; delete %lld;"
                " unchanged %lld\n", to_send(r, r), num(r, "rows_read"), num(r, "rows_inserted"), num(r, "rows_updated"),
                num(r, "rows_deleted"), num(r, "rows_unchanged"));
        print_sample(json_object_get(r, "sample"), "  sample of the rows to send:", out);
        print_sample(json_object_get(r, "sample_deletes"), "  sample of the keys to delete:",
                     out);
    }
    if (json_is_object(pv))
        print_preview(pv, r, out);
    const json_t *e = json_object_get(r, "error");
    if (json_is_string(e) && *json_string_value(e)) {
        char *c = zxctl_clean(json_string_value(e));
        fprintf(out, "  error: %s\n", c);
        free(c);
    }
    free(id);
    free(sy);
    free(st);
}

void zxctl_print_runs(const json_t *r, FILE *out)
{
    const json_t *arr = json_object_get(r, "runs"), *e;
    size_t i;
    fprintf(out, "%-17s %-18s %-28s %10s %10s %10s %8s  %s\n", "RUN", "STATE", "STARTED",
            "READ", "SENT", "DELETED", "FAILED", "ERROR");
    json_array_foreach(arr, i, e) {
        char *id = zxctl_fmt(json_object_get(e, "id"));
        char *st = zxctl_fmt(json_object_get(e, "state"));
        char *at = zxctl_fmt(json_object_get(e, "started_at"));
        /* no error: the first a batch or row met, if any */
        const json_t *ej = json_object_get(e, "error");
        if (!json_is_string(ej) && json_is_string(json_object_get(e, "first_error")))
            ej = json_object_get(e, "first_error");
        char *er = zxctl_fmt(ej);
        fprintf(out, "%-17s %-18s %-28s %10lld %10lld %10lld %8lld  %s\n", id, st, at,
                num(e, "rows_read"), num(e, "rows_sent"), num(e, "rows_deleted"),
                num(e, "rows_failed"), er);
        free(id);
        free(st);
        free(at);
        free(er);
    }
    /* what an operator decides on: each run awaiting approval, its preview */
    json_array_foreach(arr, i, e) {
        const char *st = json_string_value(json_object_get(e, "state"));
        const json_t *pv = json_object_get(e, "preview");
        if (!st || strcmp(st, "awaiting_approval") || !json_is_object(pv))
            continue;
        char *id = zxctl_fmt(json_object_get(e, "id"));
        char *tr = zxctl_fmt(json_object_get(e, "trigger"));
        fprintf(out, "\nrun %s awaits approval (asked for by %s): zxctl approve %s, or "
                "zxctl reject %s\n", id, tr, id, id);
        print_preview(pv, e, out);
        free(id);
        free(tr);
    }
}
