/*
 * kinesis_json.c — the Kinesis API's JSON responses parsed (kinesis_json.h).
 */
#include "workers/sources/kinesis/kinesis_json.h"

#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/util.h"

/* ---- a bump allocator: the strings of one result, freed at once ---- */

typedef struct blk {
    struct blk *next;
    size_t cap, used;
    max_align_t data[];
} blk;

#define BLK_SIZE 65536

static void *ar_alloc(void **arena, size_t n)
{
    blk *b = *arena;
    if (n > SIZE_MAX - sizeof(blk) - 16)
        return NULL;
    n = (n + 15) & ~(size_t)15;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > BLK_SIZE ? n : BLK_SIZE;
        blk *nb = malloc(sizeof(blk) + cap);
        if (!nb)
            return NULL;
        nb->next = b;
        nb->cap = cap;
        nb->used = 0;
        *arena = b = nb;
    }
    void *p = (char *)b->data + b->used;
    b->used += n;
    return p;
}

static void ar_free(void *arena)
{
    for (blk *b = arena, *nx; b; b = nx) {
        nx = b->next;
        free(b);
    }
}

static char *ar_strdup(void **arena, const char *s, size_t n)
{
    char *p = n < SIZE_MAX ? ar_alloc(arena, n + 1) : NULL;
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

/* ---- checks ---- */

int zx_kin_seq_valid(const char *s, size_t n)
{
    if (!s || n == 0 || n > ZX_KIN_SEQ_MAX || (n > 1 && s[0] == '0'))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

int zx_kin_seq_cmp(const char *a, const char *b)
{
    while (*a == '0')
        a++;
    while (*b == '0')
        b++;
    size_t la = strlen(a), lb = strlen(b);
    if (la != lb)
        return la < lb ? -1 : 1;
    int c = strcmp(a, b);
    return c < 0 ? -1 : c > 0;
}

int zx_kin_shard_id_valid(const char *s, size_t n)
{
    if (!s || n == 0 || n > ZX_KIN_SHARD_ID_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return 0;
    }
    return 1;
}

static int hash_key_valid(const char *s, size_t n)
{
    if (n == 0 || n > ZX_KIN_HASH_KEY_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

/* ---- members ---- */

enum { OPT = 0, REQ = 1 };
enum { K_ANY, K_SEQ, K_SHARD, K_HASH, K_ITER };

/* The string member `key` of o (what = its path for messages), checked as
 * kind, copied into the arena as *out (NULL when absent or null and not
 * required).  0, or -1 with err. */
static int get_str(json_t *o, const char *key, const char *what, int req, int kind,
                   void **arena, char **out, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v || json_is_null(v)) {
        if (req)
            return zx_seterr(err, errlen, "the response has no %s", what);
        return 0;
    }
    if (!json_is_string(v))
        return zx_seterr(err, errlen, "%s is not a string", what);
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    int ok = 1;
    switch (kind) {
    case K_SEQ: ok = zx_kin_seq_valid(s, n); break;
    case K_SHARD: ok = zx_kin_shard_id_valid(s, n); break;
    case K_HASH: ok = hash_key_valid(s, n); break;
    case K_ITER:
        /* opaque, sent back as it came: moto's end with the "\n" of
         * their base64 lines */
        ok = n > 0 && n <= ZX_KIN_ITERATOR_MAX;
        for (size_t i = 0; ok && i < n; i++)
            ok = (s[i] > ' ' && s[i] < 0x7f) || s[i] == '\n';
        break;
    default: break;
    }
    if (!ok) {
        const char *what_kind = kind == K_SEQ     ? "a sequence number (up to 129 digits)"
                                : kind == K_SHARD ? "a shard id (1 to 128 of A-Z a-z 0-9 _ . -)"
                                : kind == K_HASH  ? "a hash key (up to 39 digits)"
                                                  : "a shard iterator (1 to 8192 printable "
                                                    "ASCII characters or newlines)";
        return zx_seterr(err, errlen, "%s is not %s: \"%.60s%s\"", what, what_kind, s,
                    n > 60 ? "..." : "");
    }
    *out = ar_strdup(arena, s, n);
    if (!*out)
        return zx_seterr(err, errlen, "out of memory reading %s", what);
    return 0;
}

/* The non-negative integer member `key` of o into *out (-1 when absent or
 * null).  0, or -1 with err. */
static int get_count(json_t *o, const char *key, const char *what, long long max,
                     long long *out, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, key);
    *out = -1;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max)
        return zx_seterr(err, errlen, "%s is not an integer from 0 to %lld", what, max);
    *out = json_integer_value(v);
    return 0;
}

/* body parsed: the top-level object, or NULL with err. */
static json_t *load(const char *body, size_t len, const char *api, size_t flags, char *err,
                    size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(body ? body : "", body ? len : 0, flags, &je);
    if (!root) {
        zx_seterr(err, errlen, "the %s response is not JSON: %s (line %d, column %d)", api, je.text,
             je.line, je.column);
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        zx_seterr(err, errlen, "the %s response is not a JSON object", api);
        return NULL;
    }
    return root;
}

/* HashKeyRange of o, if any, into *start / *end. */
static int get_hash_range(json_t *o, const char *what, void **arena, char **start, char **end,
                          char *err, size_t errlen)
{
    json_t *h = json_object_get(o, "HashKeyRange");
    char w[96];
    *start = *end = NULL;
    if (!h || json_is_null(h))
        return 0;
    if (!json_is_object(h))
        return zx_seterr(err, errlen, "%s.HashKeyRange is not an object", what);
    snprintf(w, sizeof(w), "%s.HashKeyRange.StartingHashKey", what);
    if (get_str(h, "StartingHashKey", w, REQ, K_HASH, arena, start, err, errlen) < 0)
        return -1;
    snprintf(w, sizeof(w), "%s.HashKeyRange.EndingHashKey", what);
    return get_str(h, "EndingHashKey", w, REQ, K_HASH, arena, end, err, errlen);
}

/* ---- GetRecords ---- */

/* Records[i] into *r. */
static int get_record(json_t *o, size_t i, void **arena, zx_kin_record *r, char *err,
                      size_t errlen)
{
    char w[64];
    snprintf(w, sizeof(w), "Records[%zu]", i);
    if (!json_is_object(o))
        return zx_seterr(err, errlen, "%s is not an object", w);
    json_t *d = json_object_get(o, "Data");
    if (!d || !json_is_string(d))
        return zx_seterr(err, errlen, "%s.Data is %s", w, d ? "not a string" : "missing");
    size_t dn = json_string_length(d);
    uint8_t *buf = ar_alloc(arena, dn / 4 * 3 + 4);
    if (!buf)
        return zx_seterr(err, errlen, "out of memory decoding %s.Data (%zu bytes)", w, dn);
    long got = zx_base64_decode(json_string_value(d), dn, buf);
    if (got < 0)
        return zx_seterr(err, errlen, "%s.Data is not base64", w);
    buf[got] = 0;
    r->data = buf;
    r->len = (size_t)got;
    char wk[96];
    snprintf(wk, sizeof(wk), "%s.PartitionKey", w);
    if (get_str(o, "PartitionKey", wk, REQ, K_ANY, arena, &r->partition_key, err, errlen) < 0)
        return -1;
    r->pk_len = json_string_length(json_object_get(o, "PartitionKey"));
    snprintf(wk, sizeof(wk), "%s.SequenceNumber", w);
    if (get_str(o, "SequenceNumber", wk, REQ, K_SEQ, arena, &r->seq, err, errlen) < 0)
        return -1;
    r->arrival_us = -1;
    json_t *t = json_object_get(o, "ApproximateArrivalTimestamp");
    if (t && !json_is_null(t)) {
        double s = json_is_number(t) ? json_number_value(t) : -1;
        /* up to the year 9999 */
        if (!(s >= 0 && s < 253402300800.0))
            return zx_seterr(err, errlen, "%s.ApproximateArrivalTimestamp is not a number of "
                        "seconds since 1970 before the year 10000", w);
        r->arrival_us = (int64_t)(s * 1e6 + 0.5);
    }
    return 0;
}

/* ChildShards[i] into *c. */
static int get_child(json_t *o, size_t i, void **arena, zx_kin_child *c, char *err,
                     size_t errlen)
{
    char w[64], wk[96];
    snprintf(w, sizeof(w), "ChildShards[%zu]", i);
    if (!json_is_object(o))
        return zx_seterr(err, errlen, "%s is not an object", w);
    snprintf(wk, sizeof(wk), "%s.ShardId", w);
    if (get_str(o, "ShardId", wk, REQ, K_SHARD, arena, &c->shard_id, err, errlen) < 0)
        return -1;
    json_t *ps = json_object_get(o, "ParentShards");
    if (ps && !json_is_null(ps)) {
        if (!json_is_array(ps))
            return zx_seterr(err, errlen, "%s.ParentShards is not an array", w);
        size_t n = json_array_size(ps);
        if (n > 2)
            return zx_seterr(err, errlen, "%s has %zu parent shards (a shard has at most 2)", w, n);
        c->parents = ar_alloc(arena, (n ? n : 1) * sizeof(char *));
        if (!c->parents)
            return zx_seterr(err, errlen, "out of memory reading %s", w);
        for (size_t j = 0; j < n; j++) {
            json_t *p = json_array_get(ps, j);
            const char *s = json_string_value(p);
            if (!s || !zx_kin_shard_id_valid(s, json_string_length(p)))
                return zx_seterr(err, errlen, "%s.ParentShards[%zu] is not a shard id", w, j);
            if (!(c->parents[j] = ar_strdup(arena, s, json_string_length(p))))
                return zx_seterr(err, errlen, "out of memory reading %s", w);
        }
        c->nparents = n;
    }
    return get_hash_range(o, w, arena, &c->start_hash, &c->end_hash, err, errlen);
}

static int get_records_body(json_t *root, zx_kin_get_records *out, char *err, size_t errlen)
{
    json_t *recs = json_object_get(root, "Records");
    if (!recs || !json_is_array(recs))
        return zx_seterr(err, errlen, "the GetRecords response has %s", recs ? "a Records that is "
                    "not an array" : "no Records array");
    size_t n = json_array_size(recs);
    out->records = calloc(n ? n : 1, sizeof(*out->records));
    if (!out->records)
        return zx_seterr(err, errlen, "out of memory reading %zu records", n);
    for (size_t i = 0; i < n; i++) {
        if (get_record(json_array_get(recs, i), i, &out->arena, &out->records[i], err,
                       errlen) < 0)
            return -1;
        out->nrecords = i + 1;
    }
    if (get_str(root, "NextShardIterator", "NextShardIterator", OPT, K_ITER, &out->arena,
                &out->next_iterator, err, errlen) < 0)
        return -1;
    long long mb;
    if (get_count(root, "MillisBehindLatest", "MillisBehindLatest", INT64_MAX, &mb, err,
                  errlen) < 0)
        return -1;
    out->millis_behind = mb;
    json_t *ch = json_object_get(root, "ChildShards");
    if (!ch || json_is_null(ch))
        return 0;
    if (!json_is_array(ch))
        return zx_seterr(err, errlen, "ChildShards is not an array");
    size_t nc = json_array_size(ch);
    if (nc == 0)
        return 0;
    out->children = ar_alloc(&out->arena, nc * sizeof(*out->children));
    if (!out->children)
        return zx_seterr(err, errlen, "out of memory reading ChildShards");
    memset(out->children, 0, nc * sizeof(*out->children));
    for (size_t i = 0; i < nc; i++) {
        if (get_child(json_array_get(ch, i), i, &out->arena, &out->children[i], err,
                      errlen) < 0)
            return -1;
        out->nchildren = i + 1;
    }
    return 0;
}

int zx_kin_parse_get_records(const char *body, size_t len, zx_kin_get_records *out,
                             char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    out->millis_behind = -1;
    json_t *root = load(body, len, "GetRecords", JSON_ALLOW_NUL, err, errlen);
    if (!root)
        return -1;
    int rc = get_records_body(root, out, err, errlen);
    json_decref(root);
    if (rc < 0) {
        zx_kin_get_records_free(out);
        out->millis_behind = -1;
    }
    return rc;
}

void zx_kin_get_records_free(zx_kin_get_records *r)
{
    free(r->records);
    ar_free(r->arena);
    memset(r, 0, sizeof(*r));
}

/* ---- GetShardIterator ---- */

int zx_kin_parse_shard_iterator(const char *body, size_t len, char **iterator,
                                char *err, size_t errlen)
{
    *iterator = NULL;
    json_t *root = load(body, len, "GetShardIterator", 0, err, errlen);
    if (!root)
        return -1;
    void *arena = NULL;
    char *it;
    int rc = get_str(root, "ShardIterator", "ShardIterator", REQ, K_ITER, &arena, &it, err,
                     errlen);
    json_decref(root);
    if (rc == 0 && !(*iterator = strdup(it)))
        rc = zx_seterr(err, errlen, "out of memory reading ShardIterator");
    ar_free(arena);
    return rc;
}

/* ---- ListShards ---- */

static int get_shard(json_t *o, size_t i, void **arena, zx_kin_shard *s, char *err,
                     size_t errlen)
{
    char w[64], wk[128];
    snprintf(w, sizeof(w), "Shards[%zu]", i);
    if (!json_is_object(o))
        return zx_seterr(err, errlen, "%s is not an object", w);
    snprintf(wk, sizeof(wk), "%s.ShardId", w);
    if (get_str(o, "ShardId", wk, REQ, K_SHARD, arena, &s->shard_id, err, errlen) < 0)
        return -1;
    snprintf(wk, sizeof(wk), "%s.ParentShardId", w);
    if (get_str(o, "ParentShardId", wk, OPT, K_SHARD, arena, &s->parent, err, errlen) < 0)
        return -1;
    snprintf(wk, sizeof(wk), "%s.AdjacentParentShardId", w);
    if (get_str(o, "AdjacentParentShardId", wk, OPT, K_SHARD, arena, &s->adjacent_parent, err,
                errlen) < 0)
        return -1;
    json_t *r = json_object_get(o, "SequenceNumberRange");
    if (!r || !json_is_object(r))
        return zx_seterr(err, errlen, "%s.SequenceNumberRange is %s", w,
                    r ? "not an object" : "missing");
    snprintf(wk, sizeof(wk), "%s.SequenceNumberRange.StartingSequenceNumber", w);
    if (get_str(r, "StartingSequenceNumber", wk, REQ, K_SEQ, arena, &s->start_seq, err,
                errlen) < 0)
        return -1;
    snprintf(wk, sizeof(wk), "%s.SequenceNumberRange.EndingSequenceNumber", w);
    if (get_str(r, "EndingSequenceNumber", wk, OPT, K_SEQ, arena, &s->end_seq, err,
                errlen) < 0)
        return -1;
    return get_hash_range(o, w, arena, &s->start_hash, &s->end_hash, err, errlen);
}

static int list_shards_body(json_t *root, zx_kin_shard_list *out, char *err, size_t errlen)
{
    json_t *sh = json_object_get(root, "Shards");
    if (!sh || !json_is_array(sh))
        return zx_seterr(err, errlen, "the ListShards response has %s",
                    sh ? "a Shards that is not an array" : "no Shards array");
    size_t n = json_array_size(sh);
    out->shards = calloc(n ? n : 1, sizeof(*out->shards));
    if (!out->shards)
        return zx_seterr(err, errlen, "out of memory reading %zu shards", n);
    for (size_t i = 0; i < n; i++) {
        if (get_shard(json_array_get(sh, i), i, &out->arena, &out->shards[i], err, errlen) < 0)
            return -1;
        out->nshards = i + 1;
    }
    json_t *t = json_object_get(root, "NextToken");
    if (t && !json_is_null(t) &&
        (!json_is_string(t) || json_string_length(t) == 0 ||
         json_string_length(t) > ZX_KIN_TOKEN_MAX))
        return zx_seterr(err, errlen, "NextToken is not a string of 1 to %d characters",
                    ZX_KIN_TOKEN_MAX);
    return get_str(root, "NextToken", "NextToken", OPT, K_ANY, &out->arena, &out->next_token,
                   err, errlen);
}

int zx_kin_parse_list_shards(const char *body, size_t len, zx_kin_shard_list *out,
                             char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    json_t *root = load(body, len, "ListShards", 0, err, errlen);
    if (!root)
        return -1;
    int rc = list_shards_body(root, out, err, errlen);
    json_decref(root);
    if (rc < 0)
        zx_kin_shard_list_free(out);
    return rc;
}

void zx_kin_shard_list_free(zx_kin_shard_list *l)
{
    free(l->shards);
    ar_free(l->arena);
    memset(l, 0, sizeof(*l));
}

/* ---- DescribeStreamSummary ---- */

static char *dup_opt(json_t *o, const char *key, size_t max, int *bad)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return NULL;
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > max) {
        *bad = 1;
        return NULL;
    }
    char *p = strdup(json_string_value(v));
    if (!p)
        *bad = 2;
    return p;
}

static int summary_body(json_t *root, zx_kin_stream_summary *out, char *err, size_t errlen)
{
    json_t *s = json_object_get(root, "StreamDescriptionSummary");
    if (!s || !json_is_object(s))
        return zx_seterr(err, errlen, "the DescribeStreamSummary response has %s",
                    s ? "a StreamDescriptionSummary that is not an object"
                      : "no StreamDescriptionSummary");
    json_t *st = json_object_get(s, "StreamStatus");
    const char *sv = json_string_value(st);
    size_t sn = sv ? json_string_length(st) : 0;
    int ok = sn > 0 && sn < sizeof(out->status);
    for (size_t i = 0; ok && i < sn; i++)
        ok = (sv[i] >= 'A' && sv[i] <= 'Z') || sv[i] == '_';
    if (!ok)
        return zx_seterr(err, errlen, "StreamDescriptionSummary.StreamStatus is %s",
                    st ? "not a status (1 to 15 capital letters)" : "missing");
    memcpy(out->status, sv, sn + 1);
    long long v;
    if (get_count(s, "OpenShardCount", "StreamDescriptionSummary.OpenShardCount", 1000000000,
                  &v, err, errlen) < 0)
        return -1;
    out->open_shards = (long)v;
    if (get_count(s, "RetentionPeriodHours", "StreamDescriptionSummary.RetentionPeriodHours",
                  1000000000, &v, err, errlen) < 0)
        return -1;
    out->retention_hours = (long)v;
    int bad = 0;
    out->stream_arn = dup_opt(s, "StreamARN", 2048, &bad);
    if (bad)
        return zx_seterr(err, errlen, bad == 2 ? "out of memory reading StreamARN"
                    : "StreamDescriptionSummary.StreamARN is not a string of 1 to 2048 "
                      "characters");
    out->stream_name = dup_opt(s, "StreamName", 128, &bad);
    if (bad)
        return zx_seterr(err, errlen, bad == 2 ? "out of memory reading StreamName"
                    : "StreamDescriptionSummary.StreamName is not a string of 1 to 128 "
                      "characters");
    return 0;
}

int zx_kin_parse_stream_summary(const char *body, size_t len, zx_kin_stream_summary *out,
                                char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    out->open_shards = out->retention_hours = -1;
    json_t *root = load(body, len, "DescribeStreamSummary", 0, err, errlen);
    if (!root)
        return -1;
    int rc = summary_body(root, out, err, errlen);
    json_decref(root);
    if (rc < 0)
        zx_kin_stream_summary_free(out);
    return rc;
}

void zx_kin_stream_summary_free(zx_kin_stream_summary *s)
{
    free(s->stream_arn);
    free(s->stream_name);
    memset(s, 0, sizeof(*s));
    s->open_shards = s->retention_hours = -1;
}

/* ---- errors ---- */

void zx_kin_error_short_type(const char *s, size_t n, char *out, size_t outlen)
{
    if (!outlen)
        return;
    out[0] = '\0';
    if (!s)
        return;
    size_t b = 0, e;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '#')
            b = i + 1;
    for (e = b; e < n && s[e] != ':'; e++)
        ;
    size_t o = 0;
    for (size_t i = b; i < e && o + 1 < outlen; i++) {
        char c = s[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '_' || c == '.')
            out[o++] = c;
    }
    out[o] = '\0';
}

int zx_kin_parse_error(const char *body, size_t len, zx_kin_error *e)
{
    memset(e, 0, sizeof(*e));
    json_error_t je;
    json_t *root = body ? json_loadb(body, len, 0, &je) : NULL;
    if (!root)
        return -1;
    int found = 0;
    if (json_is_object(root)) {
        json_t *t = json_object_get(root, "__type");
        if (json_is_string(t)) {
            zx_kin_error_short_type(json_string_value(t), json_string_length(t), e->type,
                                    sizeof(e->type));
            found = 1;
        }
        json_t *m = json_object_get(root, "message");
        if (!json_is_string(m))
            m = json_object_get(root, "Message");
        if (json_is_string(m)) {
            const char *s = json_string_value(m);
            size_t n = json_string_length(m), o = 0;
            for (size_t i = 0; i < n && o + 1 < sizeof(e->message); i++)
                e->message[o++] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? ' ' : s[i];
            e->message[o] = '\0';
            found = 1;
        }
    }
    json_decref(root);
    return found ? 0 : -1;
}
