/*
 * debezium_body.c — an HTTP push body of change events (or JSON objects
 * kept latest per key) into one changes frame (debezium.h:
 * zx_dbz_add_body).  One push is one frame, so its events must be of one
 * table and key; a push that mixes them is refused whole (400) and nothing
 * of it is written.
 */
#include "workers/sources/debezium/debezium.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define RAW_MAX (64u * 1024u)

static int blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
            return 0;
    return 1;
}

/* Parse the body into an array of events (owned by the caller); NULL with
 * msg and *fail: -1 the body is refused, -2 out of memory. */
static json_t *events(const char *body, size_t len, int ndjson, char *msg, size_t msglen,
                      int *fail)
{
    *fail = -1;
    json_error_t e;
    if (!ndjson) {
        json_t *v = json_loadb(body, len, JSON_DECODE_ANY, &e);
        if (!v) {
            snprintf(msg, msglen, "at byte %d (line %d, column %d): %s", e.position, e.line,
                     e.column, e.text);
            return NULL;
        }
        if (json_is_array(v))
            return v;
        json_t *a = json_array();
        if (!a || (!json_is_null(v) && json_array_append(a, v) < 0)) {
            snprintf(msg, msglen, "out of memory");
            *fail = -2;
            json_decref(a);
            json_decref(v);
            return NULL;
        }
        json_decref(v);
        return a;
    }
    json_t *a = json_array();
    size_t line = 0;
    for (size_t i = 0; a && i < len; line++) {
        const char *nl = memchr(body + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - body) : len;
        if (!blank(body + i, end - i)) {
            json_t *v = json_loadb(body + i, end - i, JSON_DECODE_ANY, &e);
            if (!v) {
                snprintf(msg, msglen, "line %zu: %s", line + 1, e.text);
                json_decref(a);
                return NULL;
            }
            if (json_array_append_new(a, v) < 0) {
                json_decref(a);
                a = NULL;
            }
        }
        i = end + 1;
    }
    if (!a) {
        snprintf(msg, msglen, "out of memory");
        *fail = -2;
    }
    return a;
}

static int add_reject(zx_dbz_frame *f, zx_dbz_rejects *rej, const json_t *ev, size_t i,
                      const char *rid, const char *why)
{
    if (zx_grow(&rej->v, rej->n, &rej->cap, sizeof(*rej->v)) < 0)
        return -1;
    char *raw = json_dumps(ev, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!raw)
        return -1;
    size_t n = strlen(raw);
    if (n > RAW_MAX)
        n = RAW_MAX;
    char pos[200];
    int pl = snprintf(pos, sizeof(pos), "{\"request_id\":\"%s\",\"index\":%zu}", rid, i);
    zx_frame_reject r = { 0 };
    r.raw = zx_rowset_strdup(f->rs, raw, n);
    r.raw_len = n;
    r.reason = zx_rowset_strdup(f->rs, why, strlen(why));
    r.position = zx_rowset_strdup(f->rs, pos, (size_t)pl);
    free(raw);
    if (!r.raw || !r.reason || !r.position)
        return -1;
    rej->v[rej->n++] = r;
    return 0;
}

long zx_dbz_add_body(const zx_dbz_conf *c, zx_dbz_frame *f, const char *body, size_t len,
                     int ndjson, const char *rid, zx_dbz_rejects *rej, unsigned *notes,
                     char *msg, size_t msglen)
{
    if (blank(body, len))
        return 0;   /* a tombstone */
    int fail;
    json_t *a = events(body, len, ndjson, msg, msglen, &fail);
    if (!a)
        return fail;
    zx_rowset_mark mk;
    zx_rowset_save(f->rs, &mk);
    size_t nrej0 = rej->n;
    long added = 0, rc = 0;
    for (size_t i = 0; i < json_array_size(a) && rc == 0; i++) {
        const json_t *ev = json_array_get(a, i);
        char why[400], pos[200];
        snprintf(pos, sizeof(pos), "%s#%zu", rid, i);
        zx_dbz_msg m = { .value_json = ev, .position = pos };
        int r = json_is_null(ev) ? ZX_DBZ_SKIPPED : zx_dbz_add(c, f, &m, why, sizeof(why), notes);
        if (r == ZX_DBZ_ADDED)
            added++;
        else if (r == ZX_DBZ_REJECT && add_reject(f, rej, ev, i, rid, why) < 0)
            rc = -2;
        else if (r == ZX_DBZ_NOMEM)
            rc = -2;
        else if (r == ZX_DBZ_OTHER) {
            snprintf(msg, msglen, "one push carries the events of one table and key: event %zu "
                     "is for another than the events before it (%s); send it in a push of "
                     "its own", i, f->table);
            rc = -1;
        }
    }
    json_decref(a);
    if (rc < 0) {
        zx_rowset_truncate(f->rs, &mk);
        rej->n = nrej0;
        zx_dbz_frame_reset(f);
        if (rc == -2)
            snprintf(msg, msglen, "out of memory");
        return rc;
    }
    return added;
}
