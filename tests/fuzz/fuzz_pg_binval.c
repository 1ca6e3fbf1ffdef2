/*
 * fuzz_pg_binval.c — fuzz target for workers/writer/workspace_pg_binval.c:
 * any text (a Kafka message's string bound for a user's uuid, date or
 * numeric column) given to the binary COPY encoders the Postgres workspace
 * writes, checked against the binary decoder of the Postgres source
 * (workers/sources/postgres/pg_binary.c) as an independent reader.
 *
 * Input:
 *   byte 0   which encoder: numeric, date, uuid, integer (the rest as a
 *            decimal int64 when it parses), smallint
 *   then     the text, copied to a heap block of exactly its length.
 *
 * Checks: an encoder either declines (1) or writes a form the decoder
 * reads back to the same value: a numeric to the input without its
 * leading zeros (a zero without its sign), its scale kept; a date to the
 * input exactly; a uuid to the input in lower case; an integer to itself
 * within its type's range.  Leaks: ASan.
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds:
 * corpus/pg_binval/.  Must never be linked into zx.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_check.h"
#include "workers/sources/postgres/pg_binary.h"
#include "workers/sources/postgres/pg_values.h"
#include "workers/writer/workspace_pg_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The numeric text as the server prints it back: leading zeros of the
 * integer part gone (one kept), a zero's '-' gone. */
static size_t canonical_numeric(const char *s, size_t n, char *out)
{
    size_t i = 0, o = 0;
    int neg = n && s[0] == '-';
    if (neg)
        i++;
    size_t ib = i;
    while (i + 1 < n && s[i] == '0' && s[i + 1] != '.')
        i++;
    int zero = 1;
    for (size_t k = ib; k < n; k++)
        zero &= s[k] == '0' || s[k] == '.';
    if (neg && !zero)
        out[o++] = '-';
    memcpy(out + o, s + i, n - i);
    return o + n - i;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4096)
        return 0;
    int which = data[0] % 5;
    size_t n = size - 1;
    char *text = malloc(n ? n : 1);
    if (!text)
        return 0;
    memcpy(text, data + 1, n);
    zx_fit_out o = { .st = ZX_FIT_S_TEXT, .s = text, .len = n };
    zx_buf out = { 0 };
    zx_rowset rs;
    zx_rowset_init(&rs);
    zx_value v;
    int rc;
    switch (which) {
    case 0: {
        rc = zx_wsp_bin_numeric(&o, &out);
        fuzz_check(rc == 0 || rc == 1, "numeric: a failure");
        if (rc == 0) {
            fuzz_check(zx_pgbin_value(ZX_PGOID_NUMERIC, (const unsigned char *)out.p, out.len,
                                      &rs, &v) == 0, "numeric: the decoder refuses the form");
            char *want = malloc(n + 1);
            size_t wl = canonical_numeric(text, n, want);
            fuzz_check(v.type == ZX_T_TEXT && v.len == wl && !memcmp(v.s, want, wl),
                       "numeric: read back as another value");
            free(want);
        }
        break;
    }
    case 1:
        rc = zx_wsp_bin_date(&o, &out);
        fuzz_check(rc == 0 || rc == 1, "date: a failure");
        if (rc == 0) {
            fuzz_check(out.len == 4 && zx_pgbin_value(ZX_PGOID_DATE,
                                                      (const unsigned char *)out.p, 4, &rs,
                                                      &v) == 0, "date: the decoder refuses it");
            fuzz_check(v.type == ZX_T_TEXT && v.len == n && !memcmp(v.s, text, n),
                       "date: read back as another date");
        }
        break;
    case 2:
        rc = zx_wsp_bin_uuid(&o, &out);
        fuzz_check(rc == 0 || rc == 1, "uuid: a failure");
        if (rc == 0) {
            fuzz_check(out.len == 16 && zx_pgbin_value(ZX_PGOID_UUID,
                                                       (const unsigned char *)out.p, 16, &rs,
                                                       &v) == 0, "uuid: the decoder refuses it");
            fuzz_check(v.type == ZX_T_TEXT && v.len == n, "uuid: another length");
            for (size_t i = 0; i < n; i++) {
                char c = text[i] >= 'A' && text[i] <= 'F' ? (char)(text[i] + 32) : text[i];
                fuzz_check(v.s[i] == c, "uuid: read back as another uuid");
            }
        }
        break;
    default: {
        /* an integer value: as itself within the type's range */
        int64_t x = 0;
        for (size_t i = 0; i < n && i < 8; i++)
            x = (int64_t)((uint64_t)x << 8 | (uint8_t)text[i]);
        zx_fit_out io = { .st = ZX_FIT_S_INT, .i = x };
        int bytes = which == 3 ? 4 : 2;
        rc = zx_wsp_bin_int(&io, bytes, &out);
        int64_t lo = bytes == 2 ? INT16_MIN : INT32_MIN, hi = bytes == 2 ? INT16_MAX : INT32_MAX;
        fuzz_check(rc == (x < lo || x > hi ? 1 : 0), "integer: range");
        if (rc == 0) {
            fuzz_check(zx_pgbin_value(bytes == 2 ? ZX_PGOID_INT2 : ZX_PGOID_INT4,
                                      (const unsigned char *)out.p, out.len, &rs, &v) == 0 &&
                       v.type == ZX_T_INT && v.u.i == x, "integer: read back as another");
        }
        /* and as a numeric */
        out.len = 0;
        fuzz_check(zx_wsp_bin_numeric(&io, &out) == 0, "numeric of an integer: declined");
        fuzz_check(zx_pgbin_value(ZX_PGOID_NUMERIC, (const unsigned char *)out.p, out.len, &rs,
                                  &v) == 0, "numeric of an integer: refused");
        char num[32];
        int k = snprintf(num, sizeof(num), "%lld", (long long)x);
        fuzz_check(v.type == ZX_T_TEXT && v.len == (uint32_t)k && !memcmp(v.s, num, (size_t)k),
                   "numeric of an integer: another value");
        break;
    }
    }
    zx_buf_free(&out);
    zx_rowset_free(&rs);
    free(text);
    return 0;
}
