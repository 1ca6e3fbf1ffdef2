/*
 * debezium_position.c — an event's source position (payload.source) as
 * zx keeps it: _zx_lsn in the connector's own words, _zx_seq as text
 * whose order is the order of the changes (PostgreSQL, MySQL and
 * MariaDB, SQL Server, Oracle, MongoDB), so that a mirror applies a key's
 * changes only forward.  See debezium_int.h.
 *
 * It must never: make an ordering text from a position it cannot compare
 * by value (then _zx_seq is "").
 */
#include "workers/sources/debezium/debezium_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F(i, s) [i] = { s, sizeof(s) - 1 }
static const struct {
    const char *name;
    size_t len;
} src_names[ZX_DBZ_SRC_N] = {
    F(ZX_DBZ_SRC_CONNECTOR, "connector"), F(ZX_DBZ_SRC_LSN, "lsn"), F(ZX_DBZ_SRC_FILE, "file"),
    F(ZX_DBZ_SRC_POS, "pos"), F(ZX_DBZ_SRC_ROW, "row"), F(ZX_DBZ_SRC_CHANGE_LSN, "change_lsn"),
    F(ZX_DBZ_SRC_COMMIT_LSN, "commit_lsn"), F(ZX_DBZ_SRC_SERIAL, "event_serial_no"),
    F(ZX_DBZ_SRC_SCN, "scn"), F(ZX_DBZ_SRC_TS_MS, "ts_ms"), F(ZX_DBZ_SRC_TS_US, "ts_us"),
    F(ZX_DBZ_SRC_ORD, "ord"), F(ZX_DBZ_SRC_TXID, "txId"), F(ZX_DBZ_SRC_TABLE, "table"),
    F(ZX_DBZ_SRC_SCHEMA, "schema"), F(ZX_DBZ_SRC_DB, "db"),
    F(ZX_DBZ_SRC_COLLECTION, "collection"),
};
#undef F

int zx_dbz_src_field(const char *name, size_t n)
{
    for (int i = 0; i < ZX_DBZ_SRC_N; i++)
        if (src_names[i].len == n && !memcmp(src_names[i].name, name, n))
            return i;
    return -1;
}

void zx_dbz_src_of(const json_t *src, zx_dbz_src *s)
{
    memset(s, 0, sizeof(*s));
    if (!json_is_object(src))
        return;
    s->present = 1;
    for (int i = 0; i < ZX_DBZ_SRC_N; i++)
        zx_dbz_sv_of(json_object_get(src, src_names[i].name), &s->v[i]);
}

const char *zx_dbz_src_str(const zx_dbz_src *s, int f)
{
    return s->present && s->v[f].t == ZX_DBZ_SV_STR ? s->v[f].s : NULL;
}

/* A position field of src: a JSON integer, or the same number sent as a
 * string of decimal digits ("50") or as an integral float (50.0), so
 * that positions compare by their value whatever their JSON type (a
 * string position ordered nothing and overwrote newer rows).  *ok = 0
 * for anything else (absent, other text, out of int64's range). */
static int64_t src_pos(const zx_dbz_src *src, int f, int *ok)
{
    const zx_dbz_sv *v = &src->v[f];
    *ok = 0;
    if (v->t == ZX_DBZ_SV_INT) {
        *ok = 1;
        return v->i;
    }
    if (v->t == ZX_DBZ_SV_STR) {
        const char *t = v->s;
        size_t n = v->n, neg = n && t[0] == '-';
        if (n == neg || n - neg > 19 || strspn(t + neg, "0123456789") != n - neg)
            return 0;
        errno = 0;
        char *end;
        long long x = strtoll(t, &end, 10);
        if (errno || *end)
            return 0;
        *ok = 1;
        return (int64_t)x;
    }
    if (v->t == ZX_DBZ_SV_REAL) {
        double d = v->d;
        if (d != d || d < -9.2e18 || d > 9.2e18 || d != (double)(int64_t)d)
            return 0;
        *ok = 1;
        return (int64_t)d;
    }
    return 0;
}

/* _zx_lsn (the source's words) and _zx_seq (ordering text, "" when the
 * connector's position is not known to order). */
void zx_dbz_position(const zx_dbz_src *src, char *lsn, size_t ln, char *seq, size_t sn)
{
    lsn[0] = seq[0] = '\0';
    if (!src->present)
        return;
    const char *conn = zx_dbz_src_str(src, ZX_DBZ_SRC_CONNECTOR);
    int ok, ok2;
    conn = conn ? conn : "";
    if (!strcmp(conn, "postgresql")) {
        int64_t l = src_pos(src, ZX_DBZ_SRC_LSN, &ok);
        if (ok && l >= 0) {
            snprintf(lsn, ln, "%" PRIX64 "/%" PRIX64, (uint64_t)l >> 32, (uint64_t)l & 0xffffffffu);
            snprintf(seq, sn, "p%016" PRIx64, (uint64_t)l);
        }
        return;
    }
    if (!strcmp(conn, "mysql") || !strcmp(conn, "mariadb")) {
        const char *file = zx_dbz_src_str(src, ZX_DBZ_SRC_FILE);
        int64_t pos = src_pos(src, ZX_DBZ_SRC_POS, &ok), row = src_pos(src, ZX_DBZ_SRC_ROW, &ok2);
        if (!file || !ok || pos < 0)
            return;
        if (!ok2 || row < 0)
            row = 0;
        snprintf(lsn, ln, "%.200s:%" PRId64 ":%" PRId64, file, pos, row);
        const char *dot = strrchr(file, '.');
        char *end;
        unsigned long long num = dot ? strtoull(dot + 1, &end, 10) : 0;
        if (dot && *end == '\0' && end != dot + 1)
            snprintf(seq, sn, "m%016llx%016" PRIx64 "%016" PRIx64, num, (uint64_t)pos,
                     (uint64_t)row);
        return;
    }
    if (!strcmp(conn, "sqlserver")) {
        const char *change = zx_dbz_src_str(src, ZX_DBZ_SRC_CHANGE_LSN);
        const char *commit = zx_dbz_src_str(src, ZX_DBZ_SRC_COMMIT_LSN);
        snprintf(lsn, ln, "%.100s", change ? change : commit ? commit : "");
        int64_t serial = src_pos(src, ZX_DBZ_SRC_SERIAL, &ok);
        if (commit)
            snprintf(seq, sn, "s%.40s|%.40s|%016" PRIx64, commit, change ? change : "",
                     ok && serial > 0 ? (uint64_t)serial : 0);
        return;
    }
    if (!strcmp(conn, "oracle")) {
        const char *scn = zx_dbz_src_str(src, ZX_DBZ_SRC_SCN);
        char num[24];
        int64_t n64 = scn ? 0 : src_pos(src, ZX_DBZ_SRC_SCN, &ok);
        if (!scn && ok && n64 >= 0) {  /* the SCN as a JSON number */
            snprintf(num, sizeof(num), "%" PRId64, n64);
            scn = num;
        }
        if (!scn)
            return;
        size_t n = strlen(scn);
        snprintf(lsn, ln, "%.60s", scn);
        if (n && n <= 40 && strspn(scn, "0123456789") == n && sn > 41) {
            seq[0] = 'o';   /* zero-padded to 40 digits: text order is number order */
            memset(seq + 1, '0', 40 - n);
            memcpy(seq + 1 + 40 - n, scn, n);
            seq[41] = '\0';
        }
        return;
    }
    if (!strcmp(conn, "mongodb")) {
        int64_t ts = src_pos(src, ZX_DBZ_SRC_TS_MS, &ok), ord = src_pos(src, ZX_DBZ_SRC_ORD, &ok2);
        if (ok && ok2 && ts >= 0 && ord >= 0) {
            snprintf(lsn, ln, "%" PRId64 ":%" PRId64, ts, ord);
            snprintf(seq, sn, "g%016" PRIx64 "%016" PRIx64, (uint64_t)ts, (uint64_t)ord);
        }
        return;
    }
    /* another connector: its lsn as given, not ordered */
    const zx_dbz_sv *l = &src->v[ZX_DBZ_SRC_LSN];
    if (l->t == ZX_DBZ_SV_STR)
        snprintf(lsn, ln, "%.100s", l->s);
    else if (l->t == ZX_DBZ_SV_INT)
        snprintf(lsn, ln, "%" PRId64, l->i);
}
