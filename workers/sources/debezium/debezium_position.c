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

/* A position field of src: a JSON integer, or the same number sent as a
 * string of decimal digits ("50") or as an integral float (50.0), so
 * that positions compare by their value whatever their JSON type (a
 * string position ordered nothing and overwrote newer rows).  *ok = 0
 * for anything else (absent, other text, out of int64's range). */
static int64_t src_pos(const json_t *src, const char *key, int *ok)
{
    const json_t *v = src ? json_object_get(src, key) : NULL;
    *ok = 0;
    if (json_is_integer(v)) {
        *ok = 1;
        return (int64_t)json_integer_value(v);
    }
    if (json_is_string(v)) {
        const char *t = json_string_value(v);
        size_t n = json_string_length(v), neg = n && t[0] == '-';
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
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d != d || d < -9.2e18 || d > 9.2e18 || d != (double)(int64_t)d)
            return 0;
        *ok = 1;
        return (int64_t)d;
    }
    return 0;
}

/* _zx_lsn (the source's words) and _zx_seq (ordering text, "" when the
 * connector's position is not known to order). */
void zx_dbz_position(const json_t *src, char *lsn, size_t ln, char *seq, size_t sn)
{
    lsn[0] = seq[0] = '\0';
    if (!src)
        return;
    const char *conn = zx_dbz_src_str(src, "connector");
    int ok, ok2;
    conn = conn ? conn : "";
    if (!strcmp(conn, "postgresql")) {
        int64_t l = src_pos(src, "lsn", &ok);
        if (ok && l >= 0) {
            snprintf(lsn, ln, "%" PRIX64 "/%" PRIX64, (uint64_t)l >> 32, (uint64_t)l & 0xffffffffu);
            snprintf(seq, sn, "p%016" PRIx64, (uint64_t)l);
        }
        return;
    }
    if (!strcmp(conn, "mysql") || !strcmp(conn, "mariadb")) {
        const char *file = zx_dbz_src_str(src, "file");
        int64_t pos = src_pos(src, "pos", &ok), row = src_pos(src, "row", &ok2);
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
        const char *change = zx_dbz_src_str(src, "change_lsn");
        const char *commit = zx_dbz_src_str(src, "commit_lsn");
        snprintf(lsn, ln, "%.100s", change ? change : commit ? commit : "");
        int64_t serial = src_pos(src, "event_serial_no", &ok);
        if (commit)
            snprintf(seq, sn, "s%.40s|%.40s|%016" PRIx64, commit, change ? change : "",
                     ok && serial > 0 ? (uint64_t)serial : 0);
        return;
    }
    if (!strcmp(conn, "oracle")) {
        const char *scn = zx_dbz_src_str(src, "scn");
        char num[24];
        int64_t n64 = scn ? 0 : src_pos(src, "scn", &ok);
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
        int64_t ts = src_pos(src, "ts_ms", &ok), ord = src_pos(src, "ord", &ok2);
        if (ok && ok2 && ts >= 0 && ord >= 0) {
            snprintf(lsn, ln, "%" PRId64 ":%" PRId64, ts, ord);
            snprintf(seq, sn, "g%016" PRIx64 "%016" PRIx64, (uint64_t)ts, (uint64_t)ord);
        }
        return;
    }
    /* another connector: its lsn as given, not ordered */
    const json_t *l = json_object_get(src, "lsn");
    if (json_is_string(l))
        snprintf(lsn, ln, "%.100s", json_string_value(l));
    else if (json_is_integer(l))
        snprintf(lsn, ln, "%" JSON_INTEGER_FORMAT, json_integer_value(l));
}
