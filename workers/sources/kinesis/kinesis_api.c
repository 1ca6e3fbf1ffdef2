/*
 * kinesis_api.c — the Kinesis calls of the source (kinesis_api.h).
 *
 * Requests are built with jansson (stream names, ARNs and iterators are
 * outside input: they are escaped, never pasted into JSON text).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "workers/sources/kinesis/kinesis_api.h"

#define KA_TARGET "Kinesis_20131202."

/* Add the stream's name or ARN to req. */
static void add_stream(json_t *req, const ka_stream *st)
{
    if (st->arn)
        json_object_set_new(req, "StreamARN", json_string(st->arn));
    else
        json_object_set_new(req, "StreamName", json_string(st->name));
}

static const char *shown(const ka_stream *st)
{
    return st->arn ? st->arn : st->name;
}

/* Sort an error answer (status, body) of client c into a ka_status, with
 * the message and what a person can do about it. */
static ka_status sort_error(const zx_aws_client *c, const char *call, const ka_stream *st,
                            const zx_http_response *r, char *err, size_t errlen)
{
    zx_kin_error e;
    if (zx_kin_parse_error(r->body ? r->body : "", r->len, &e) < 0) {
        e.type[0] = '\0';
        snprintf(e.message, sizeof(e.message), "HTTP status %ld", r->status);
    }
    const char *t = e.type;
    ka_status s = KA_BAD;
    if (r->status >= 500 || r->status == 429 ||
        !strcmp(t, "ProvisionedThroughputExceededException") ||
        !strcmp(t, "LimitExceededException") || !strcmp(t, "ThrottlingException") ||
        !strcmp(t, "ServiceUnavailable") || !strcmp(t, "InternalFailure"))
        s = KA_RETRY;
    else if (!strcmp(t, "ExpiredIteratorException"))
        s = KA_EXPIRED;
    else if (!strcmp(t, "ResourceNotFoundException"))
        s = KA_NOT_FOUND;
    else if (r->status == 403 || !strncmp(t, "AccessDenied", 12) ||
             !strcmp(t, "UnrecognizedClientException") ||
             !strcmp(t, "InvalidSignatureException") || !strcmp(t, "ExpiredTokenException") ||
             !strcmp(t, "IncompleteSignature") || !strcmp(t, "MissingAuthenticationToken"))
        s = KA_DENIED;
    const char *hint = "";
    char where[300];
    if (s == KA_DENIED && (strstr(e.message, "Signature expired") ||
                           strstr(e.message, "not yet current")))
        hint = " (this host's clock is off: set it right, e.g. with NTP)";
    else if (!strcmp(t, "UnrecognizedClientException"))
        hint = " (the access key is not known in this region or account)";
    else if (s == KA_NOT_FOUND) {
        /* a stream looked for in the wrong region is not found there */
        snprintf(where, sizeof(where), " (looked for at %.200s: is the connection's region "
                 "the stream's?)", zx_aws_client_url(c));
        hint = where;
    }
    zx_seterr(err, errlen, "%s of stream %.200s: %s%s%s%s", call, shown(st), t[0] ? t : "",
              t[0] ? ": " : "", e.message[0] ? e.message : "no message", hint);
    return s;
}

/* Call target with req (taken); on KA_OK *resp holds a 200 answer. */
static ka_status call(zx_aws_client *c, const char *name, const ka_stream *st, json_t *req,
                      zx_http_response *resp, char *err, size_t errlen)
{
    memset(resp, 0, sizeof(*resp));
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!body) {
        zx_seterr(err, errlen, "%s of stream %.200s: out of memory", name, shown(st));
        return KA_BAD;
    }
    char target[64], cerr[1200];
    snprintf(target, sizeof(target), KA_TARGET "%s", name);
    int rc = zx_aws_json_call(c, target, body, strlen(body), resp, cerr, sizeof(cerr));
    free(body);
    if (rc == ZX_AWS_NO_CREDS) {
        zx_seterr(err, errlen, "%s of stream %.200s: %s", name, shown(st), cerr);
        return KA_DENIED;
    }
    if (rc == ZX_HTTP_TRANSFER) {
        zx_seterr(err, errlen, "%s of stream %.200s: no answer from %s: %s", name, shown(st),
                  zx_aws_client_host(c), cerr);
        return KA_RETRY;
    }
    if (rc != 0) {
        zx_seterr(err, errlen, "%s of stream %.200s: %s", name, shown(st), cerr);
        return KA_BAD;
    }
    if (resp->status != 200) {
        ka_status s = sort_error(c, name, st, resp, err, errlen);
        zx_http_response_free(resp);
        return s;
    }
    return KA_OK;
}

/* A parse failure of an answer to name. */
static ka_status unreadable(const char *name, const ka_stream *st, const char *why, char *err,
                            size_t errlen)
{
    zx_seterr(err, errlen, "%s of stream %.200s: the answer is not understood: %s", name,
              shown(st), why);
    return KA_BAD;
}

void ka_shards_free(ka_shards *s)
{
    for (size_t i = 0; i < s->npages; i++)
        zx_kin_shard_list_free(&s->pages[i]);
    free(s->pages);
    free(s->v);
    memset(s, 0, sizeof(*s));
}

/* Keep page l (taken) in out.  0, or -1 out of memory (l freed). */
static int keep_page(ka_shards *out, zx_kin_shard_list *l)
{
    zx_kin_shard_list *p = realloc(out->pages, (out->npages + 1) * sizeof(*p));
    zx_kin_shard *v = p && l->nshards ? realloc(out->v, (out->n + l->nshards) * sizeof(*v))
                                      : out->v;
    if (p)
        out->pages = p;
    if (!p || (l->nshards && !v)) {
        zx_kin_shard_list_free(l);
        return -1;
    }
    out->v = v;
    if (l->nshards)
        memcpy(out->v + out->n, l->shards, l->nshards * sizeof(*v));
    out->n += l->nshards;
    out->pages[out->npages++] = *l;
    return 0;
}

ka_status ka_list_shards(zx_aws_client *c, const ka_stream *st, ka_shards *out, char *err,
                         size_t errlen)
{
    memset(out, 0, sizeof(*out));
    const char *token = NULL;
    for (int page = 0;; page++) {
        if (page >= 1000) {
            ka_shards_free(out);
            return unreadable("ListShards", st, "more than 1000 pages", err, errlen);
        }
        json_t *req = json_object();
        if (req && token)   /* a NextToken goes alone (the API refuses a name beside it) */
            json_object_set_new(req, "NextToken", json_string(token));
        else if (req)
            add_stream(req, st);
        zx_http_response r;
        ka_status s = call(c, "ListShards", st, req, &r, err, errlen);
        if (s != KA_OK) {
            ka_shards_free(out);
            return s;
        }
        zx_kin_shard_list l;
        char perr[300];
        int prc = zx_kin_parse_list_shards(r.body, r.len, &l, perr, sizeof(perr));
        zx_http_response_free(&r);
        if (prc < 0) {
            ka_shards_free(out);
            return unreadable("ListShards", st, perr, err, errlen);
        }
        if (keep_page(out, &l) < 0) {
            ka_shards_free(out);
            zx_seterr(err, errlen, "ListShards of stream %.200s: out of memory", shown(st));
            return KA_BAD;
        }
        token = out->pages[out->npages - 1].next_token;
        if (!token)
            return KA_OK;
    }
}

ka_status ka_shard_iterator(zx_aws_client *c, const ka_stream *st, const char *shard,
                            const char *type, const char *seq, int64_t at_ms,
                            char **iterator, char *err, size_t errlen)
{
    *iterator = NULL;
    json_t *req = json_object();
    if (req) {
        add_stream(req, st);
        json_object_set_new(req, "ShardId", json_string(shard));
        json_object_set_new(req, "ShardIteratorType", json_string(type));
        if (seq)
            json_object_set_new(req, "StartingSequenceNumber", json_string(seq));
        if (at_ms >= 0)   /* seconds, with the milliseconds as a fraction */
            json_object_set_new(req, "Timestamp", json_real((double)at_ms / 1000.0));
    }
    zx_http_response r;
    ka_status s = call(c, "GetShardIterator", st, req, &r, err, errlen);
    if (s != KA_OK)
        return s;
    char perr[300];
    int prc = zx_kin_parse_shard_iterator(r.body, r.len, iterator, perr, sizeof(perr));
    zx_http_response_free(&r);
    return prc < 0 ? unreadable("GetShardIterator", st, perr, err, errlen) : KA_OK;
}

ka_status ka_get_records(zx_aws_client *c, const ka_stream *st, const char *iterator,
                         unsigned limit, zx_kin_get_records *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    json_t *req = json_object();
    if (req) {
        json_object_set_new(req, "ShardIterator", json_string(iterator));
        json_object_set_new(req, "Limit", json_integer(limit < 1 ? 1 : limit > 10000 ? 10000
                                                                                  : limit));
        if (st->arn)
            json_object_set_new(req, "StreamARN", json_string(st->arn));
    }
    zx_http_response r;
    ka_status s = call(c, "GetRecords", st, req, &r, err, errlen);
    if (s != KA_OK)
        return s;
    char perr[300];
    int prc = zx_kin_parse_get_records(r.body, r.len, out, perr, sizeof(perr));
    zx_http_response_free(&r);
    return prc < 0 ? unreadable("GetRecords", st, perr, err, errlen) : KA_OK;
}

ka_status ka_describe(zx_aws_client *c, const ka_stream *st, zx_kin_stream_summary *out,
                      char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    json_t *req = json_object();
    if (req)
        add_stream(req, st);
    zx_http_response r;
    ka_status s = call(c, "DescribeStreamSummary", st, req, &r, err, errlen);
    if (s != KA_OK)
        return s;
    char perr[300];
    int prc = zx_kin_parse_stream_summary(r.body, r.len, out, perr, sizeof(perr));
    zx_http_response_free(&r);
    return prc < 0 ? unreadable("DescribeStreamSummary", st, perr, err, errlen) : KA_OK;
}
