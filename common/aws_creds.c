/*
 * aws_creds.c — the credential chain and the caching provider
 * (aws_creds.h).  Each link returns 0 (found: *out and the source set),
 * 1 (not set up: a note says why, the next link is tried) or -1 (set up but
 * failing: the note says why and the chain stops).  The notes, joined with
 * "; ", are the error message.
 */
#include "common/aws_creds.h"
#include "common/aws_creds_int.h"
#include "common/aws_ini.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

struct zx_aws_creds {
    char *access_key, *secret_key, *session_token, *profile, *role_arn, *external_id,
        *session_name, *region, *sts_endpoint, *imds_endpoint, *ca_file;
    zx_aws_cred cur;
    int have;
    char source[1024];
    time_t last_try;
};

static char *dup_opt(const char *s, int *oom)
{
    if (!s || !*s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *oom = 1;
    return d;
}

/* ---- the chain ---- */

static int run_chain(const zx_aws_creds *c, zx_aws_chain *ch, zx_aws_cred *out)
{
    int rc = 1;
    ch->top_profile = c->profile ? c->profile : zx_aws_env("AWS_PROFILE");
    if (!ch->top_profile)
        ch->top_profile = "default";
    if (c->access_key) {
        rc = zx_aws_cred_set(out, c->access_key, c->secret_key, c->session_token, 0) < 0 ? -1 : 0;
        if (rc == 0)
            snprintf(ch->source, sizeof(ch->source), "connection keys");
        else
            zx_aws_note(ch, "connection keys: out of memory");
    } else {
        zx_aws_note(ch, "connection keys not set");
    }
    if (rc == 1)
        rc = zx_aws_link_env(ch, out);
    if (rc == 1)
        rc = zx_aws_link_profile(ch, out);
    if (rc == 1)
        rc = zx_aws_link_env_web_identity(ch, out);
    if (rc == 1)
        rc = zx_aws_link_ecs(ch, out);
    if (rc == 1)
        rc = zx_aws_link_imds(ch, out);
    if (rc != 0 || !c->role_arn)
        return rc == 0 ? 0 : -1;
    zx_aws_cred base = *out;
    memset(out, 0, sizeof(*out));
    char ep[512], sn[128], err[1024];
    zx_aws_sts s;
    if (zx_aws_chain_sts(ch, &s, ep, sizeof(ep)) < 0) {
        zx_aws_cred_clear(&base);
        return -1;
    }
    zx_aws_chain_session(ch, c->session_name, sn, sizeof(sn));
    rc = zx_aws_sts_assume(&s, &base, c->role_arn, sn, c->external_id, out, err, sizeof(err));
    zx_aws_cred_clear(&base);
    if (rc < 0) {
        zx_aws_note(ch, "with the credentials of %s: %s", ch->source, err);
        return -1;
    }
    char was[sizeof(ch->source)];
    memcpy(was, ch->source, sizeof(was));
    snprintf(ch->source, sizeof(ch->source), "assume role %.300s on top of %.600s", c->role_arn, was);
    return 0;
}

zx_aws_creds *zx_aws_creds_new(const zx_aws_cred_opts *o, char *err, size_t errlen)
{
    int have_ak = o->access_key && *o->access_key, have_sk = o->secret_key && *o->secret_key;
    if (have_ak != have_sk) {
        snprintf(err, errlen, "connection keys: %s set without %s",
                 have_ak ? "access_key" : "secret_key", have_ak ? "secret_key" : "access_key");
        return NULL;
    }
    if (!have_ak && o->session_token && *o->session_token) {
        snprintf(err, errlen, "connection keys: session_token set without access_key");
        return NULL;
    }
    if (o->external_id && *o->external_id && !(o->role_arn && *o->role_arn)) {
        snprintf(err, errlen, "external_id set without role_arn");
        return NULL;
    }
    zx_aws_creds *c = calloc(1, sizeof(*c));
    int oom = !c;
    if (c) {
        c->access_key = dup_opt(o->access_key, &oom);
        c->secret_key = dup_opt(o->secret_key, &oom);
        c->session_token = dup_opt(o->session_token, &oom);
        c->profile = dup_opt(o->profile, &oom);
        c->role_arn = dup_opt(o->role_arn, &oom);
        c->external_id = dup_opt(o->external_id, &oom);
        c->session_name = dup_opt(o->session_name, &oom);
        c->region = dup_opt(o->region, &oom);
        c->sts_endpoint = dup_opt(o->sts_endpoint, &oom);
        c->imds_endpoint = dup_opt(o->imds_endpoint, &oom);
        c->ca_file = dup_opt(o->ca_file, &oom);
    }
    if (oom) {
        zx_aws_creds_free(c);
        snprintf(err, errlen, "AWS credentials: out of memory");
        return NULL;
    }
    return c;
}

static void give(const zx_aws_creds *c, zx_aws_keys *keys)
{
    keys->access_key = c->cur.access_key;
    keys->secret_key = c->cur.secret_key;
    keys->session_token = c->cur.session_token;
}

int zx_aws_creds_get(zx_aws_creds *c, time_t now, zx_aws_keys *keys,
                     char *err, size_t errlen)
{
    memset(keys, 0, sizeof(*keys));
    if (now == 0)
        now = time(NULL);
    int valid = c->have && (c->cur.expiry == 0 || now < c->cur.expiry);
    if (valid && (c->cur.expiry == 0 || now < c->cur.expiry - ZX_AWS_CREDS_REFRESH ||
                  now - c->last_try < ZX_AWS_CREDS_RETRY)) {
        give(c, keys);
        return 0;
    }
    zx_aws_chain *ch = calloc(1, sizeof(*ch));
    if (!ch) {
        snprintf(err, errlen, "AWS credentials: out of memory");
        return -1;
    }
    ch->profile = c->profile;
    ch->region = c->region;
    ch->sts_endpoint = c->sts_endpoint;
    ch->imds_endpoint = c->imds_endpoint;
    ch->ca_file = c->ca_file;
    ch->now = now;
    c->last_try = now;
    zx_aws_cred fresh = {0};
    int rc = run_chain(c, ch, &fresh);
    zx_aws_ini_free(ch->cred_ini);
    zx_aws_ini_free(ch->conf_ini);
    if (rc == 0) {
        zx_aws_cred_clear(&c->cur);
        c->cur = fresh;
        c->have = 1;
        memcpy(c->source, ch->source, sizeof(c->source));
        give(c, keys);
    } else if (valid) {
        give(c, keys);          /* the old keys still work: refresh later */
        rc = 0;
    } else {
        zx_aws_cred_clear(&c->cur);
        c->have = 0;
        snprintf(err, errlen, "no AWS credentials: %s", ch->notes);
    }
    free(ch);
    return rc == 0 ? 0 : -1;
}

const char *zx_aws_creds_source(const zx_aws_creds *c)
{
    return c->have ? c->source : "";
}

time_t zx_aws_creds_expiry(const zx_aws_creds *c)
{
    return c->have ? c->cur.expiry : 0;
}

void zx_aws_creds_free(zx_aws_creds *c)
{
    if (!c)
        return;
    zx_aws_cred_clear(&c->cur);
    zx_aws_wipe_free(c->access_key);
    zx_aws_wipe_free(c->secret_key);
    zx_aws_wipe_free(c->session_token);
    free(c->profile);
    free(c->role_arn);
    free(c->external_id);
    free(c->session_name);
    free(c->region);
    free(c->sts_endpoint);
    free(c->imds_endpoint);
    free(c->ca_file);
    free(c);
}
