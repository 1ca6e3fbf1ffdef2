/*
 * aws_creds_profile.c — the chain's shared-files link: the profile in
 * ~/.aws/credentials and ~/.aws/config, with role_arn + source_profile or
 * credential_source (aws_creds_int.h).
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

/* ---- files ---- */

/* $HOME, else the user's home from the password database (into buf). */
static const char *home_dir(char *buf, size_t bl)
{
    const char *h = zx_aws_env("HOME");
    if (h)
        return h;
    struct passwd pw, *res = NULL;
    char tmp[4096];
    if (getpwuid_r(getuid(), &pw, tmp, sizeof(tmp), &res) == 0 && res && res->pw_dir) {
        snprintf(buf, bl, "%s", res->pw_dir);
        return buf;
    }
    return "/";
}

/* The path of a shared file: $var (a leading "~/" is the home) or ~/.aws/dflt. */
static void shared_path(char *out, size_t ol, const char *var, const char *dflt)
{
    const char *v = zx_aws_env(var);
    char hb[1024];
    if (v && strncmp(v, "~/", 2) == 0)
        snprintf(out, ol, "%s/%s", home_dir(hb, sizeof(hb)), v + 2);
    else if (v)
        snprintf(out, ol, "%s", v);
    else
        snprintf(out, ol, "%s/.aws/%s", home_dir(hb, sizeof(hb)), dflt);
}

static int load_files(zx_aws_chain *ch)
{
    if (ch->loaded)
        return ch->loaded;
    char err[512];
    shared_path(ch->cred_path, sizeof(ch->cred_path), "AWS_SHARED_CREDENTIALS_FILE", "credentials");
    shared_path(ch->conf_path, sizeof(ch->conf_path), "AWS_CONFIG_FILE", "config");
    ch->loaded = 1;
    if (zx_aws_ini_load(ch->cred_path, &ch->cred_ini, err, sizeof(err)) < 0 ||
        zx_aws_ini_load(ch->conf_path, &ch->conf_ini, err, sizeof(err)) < 0) {
        zx_aws_note(ch, "shared files: %s", err);
        ch->loaded = -1;
    }
    return ch->loaded;
}

const char *zx_aws_chain_region(zx_aws_chain *ch)
{
    if (ch->region)
        return ch->region;
    if (zx_aws_env("AWS_REGION"))
        return zx_aws_env("AWS_REGION");
    if (zx_aws_env("AWS_DEFAULT_REGION"))
        return zx_aws_env("AWS_DEFAULT_REGION");
    if (ch->top_profile && load_files(ch) > 0) {
        char sec[300];
        snprintf(sec, sizeof(sec), strcmp(ch->top_profile, "default") == 0 ? "%s" : "profile %s",
                 ch->top_profile);
        const char *r = zx_aws_ini_get(ch->conf_ini, sec, "region");
        if (r && *r)
            return r;
    }
    return NULL;
}

/* ---- profiles ---- */

typedef struct prof {
    const char *name;
    char sec[300];               /* its section in the config file */
} prof;

/* key of the profile: the credentials file's value, else the config's;
 * *where (may be NULL) names the file it came from. */
static const char *pget(zx_aws_chain *ch, const prof *p, const char *key, const char **where)
{
    const char *v = zx_aws_ini_get(ch->cred_ini, p->name, key);
    if (v && *v) {
        if (where)
            *where = ch->cred_path;
        return v;
    }
    v = zx_aws_ini_get(ch->conf_ini, p->sec, key);
    if (!v && strcmp(p->name, "default") == 0)
        v = zx_aws_ini_get(ch->conf_ini, "profile default", key);
    if (where)
        *where = ch->conf_path;
    return v && *v ? v : NULL;
}

/* The profile's static keys: 0, 1 (none), -1 (half). */
static int profile_keys(zx_aws_chain *ch, const prof *p, zx_aws_cred *out)
{
    const char *where = NULL, *w2 = NULL;
    const char *ak = pget(ch, p, "aws_access_key_id", &where);
    const char *sk = pget(ch, p, "aws_secret_access_key", &w2);
    if (!ak && !sk)
        return 1;
    if (!ak || !sk) {
        zx_aws_note(ch, "profile %s in %s has %s but no %s", p->name, ak ? where : w2,
             ak ? "aws_access_key_id" : "aws_secret_access_key",
             ak ? "aws_secret_access_key" : "aws_access_key_id");
        return -1;
    }
    if (zx_aws_cred_set(out, ak, sk, pget(ch, p, "aws_session_token", NULL), 0) < 0) {
        zx_aws_note(ch, "profile %s: out of memory", p->name);
        return -1;
    }
    snprintf(ch->source, sizeof(ch->source), "profile %s in %s", p->name, where);
    return 0;
}

static int resolve_profile(zx_aws_chain *ch, const char *name, const char **seen, int depth,
                           zx_aws_cred *out);

/* The base credentials of role profile p, at seen[depth]: its source_profile
 * (which must not be in seen[0..depth]) or its credential_source. */
static int role_base(zx_aws_chain *ch, const prof *p, const char **seen, int depth, zx_aws_cred *base)
{
    const char *src = pget(ch, p, "source_profile", NULL);
    const char *cs = pget(ch, p, "credential_source", NULL);
    const char *wif = pget(ch, p, "web_identity_token_file", NULL);
    if ((src != NULL) + (cs != NULL) + (wif != NULL) > 1) {
        zx_aws_note(ch, "profile %s sets more than one of source_profile, credential_source and "
             "web_identity_token_file", p->name);
        return -1;
    }
    if (cs) {
        int rc = strcmp(cs, "Environment") == 0 ? zx_aws_link_env(ch, base)
               : strcmp(cs, "EcsContainer") == 0 ? zx_aws_link_ecs(ch, base)
               : strcmp(cs, "Ec2InstanceMetadata") == 0 ? zx_aws_link_imds(ch, base) : 2;
        if (rc == 2)
            zx_aws_note(ch, "profile %s: credential_source %.100s is not Environment, EcsContainer "
                 "nor Ec2InstanceMetadata", p->name, cs);
        else if (rc == 1)
            zx_aws_note(ch, "profile %s: its credential_source %s has no credentials", p->name, cs);
        return rc == 0 ? 0 : -1;
    }
    if (!src) {
        zx_aws_note(ch, "profile %s has role_arn but no source_profile, credential_source nor "
             "web_identity_token_file", p->name);
        return -1;
    }
    if (strcmp(src, p->name) == 0) {        /* its own static keys */
        int rc = profile_keys(ch, p, base);
        if (rc == 1)
            zx_aws_note(ch, "profile %s is its own source_profile but has no aws_access_key_id",
                 p->name);
        return rc == 0 ? 0 : -1;
    }
    for (int i = 0; i <= depth; i++)
        if (strcmp(seen[i], src) == 0) {
            zx_aws_note(ch, "profile %s: source_profile %s makes a cycle", p->name, src);
            return -1;
        }
    int rc = resolve_profile(ch, src, seen, depth + 1, base);
    if (rc == 1)
        zx_aws_note(ch, "profile %s: its source_profile %s has no credentials", p->name, src);
    return rc == 0 ? 0 : -1;
}

static int resolve_profile(zx_aws_chain *ch, const char *name, const char **seen, int depth,
                           zx_aws_cred *out)
{
    prof p = {.name = name};
    snprintf(p.sec, sizeof(p.sec), strcmp(name, "default") == 0 ? "%s" : "profile %s", name);
    if (!zx_aws_ini_has(ch->cred_ini, name) && !zx_aws_ini_has(ch->conf_ini, p.sec) &&
        !(strcmp(name, "default") == 0 && zx_aws_ini_has(ch->conf_ini, "profile default"))) {
        zx_aws_note(ch, "profile %s not in %s nor %s", name, ch->cred_path, ch->conf_path);
        return 1;
    }
    static const char *const unread[] = {"sso_session", "sso_start_url", "credential_process"};
    for (size_t i = 0; i < sizeof(unread) / sizeof(unread[0]); i++)
        if (pget(ch, &p, unread[i], NULL)) {
            zx_aws_note(ch, "profile %s uses %s, which zx does not read: give it "
                        "aws_access_key_id/aws_secret_access_key or role_arn, or export the "
                        "keys (aws configure export-credentials --format env)", name, unread[i]);
            return -1;
        }
    const char *role_arn = pget(ch, &p, "role_arn", NULL);
    if (!role_arn) {
        int rc = profile_keys(ch, &p, out);
        if (rc == 1)
            zx_aws_note(ch, "profile %s has no aws_access_key_id nor role_arn", name);
        return rc;
    }
    if (depth >= ZX_AWS_CREDS_MAX_CHAIN) {
        zx_aws_note(ch, "profile %s: more than %d roles in a row through source_profile", name,
             ZX_AWS_CREDS_MAX_CHAIN);
        return -1;
    }
    seen[depth] = name;
    const char *wif = pget(ch, &p, "web_identity_token_file", NULL);
    const char *rsn = pget(ch, &p, "role_session_name", NULL);
    if (wif) {
        int rc = zx_aws_link_web_identity(ch, wif, role_arn, rsn, out);
        if (rc == 0)
            snprintf(ch->source, sizeof(ch->source), "web identity %s (from profile %s)",
                     role_arn, name);
        return rc;
    }
    zx_aws_cred base = {0};
    if (role_base(ch, &p, seen, depth, &base) < 0)
        return -1;
    char ep[512], sn[128], err[1024];
    zx_aws_sts s;
    if (zx_aws_chain_sts(ch, &s, ep, sizeof(ep)) < 0) {
        zx_aws_cred_clear(&base);
        return -1;
    }
    zx_aws_chain_session(ch, rsn, sn, sizeof(sn));
    int rc = zx_aws_sts_assume(&s, &base, role_arn, sn, pget(ch, &p, "external_id", NULL),
                               out, err, sizeof(err));
    zx_aws_cred_clear(&base);
    if (rc < 0) {
        zx_aws_note(ch, "profile %s: %s", name, err);
        return -1;
    }
    const char *where = NULL;
    pget(ch, &p, "role_arn", &where);
    snprintf(ch->source, sizeof(ch->source), "assume role %s (from profile %s in %s)",
             role_arn, name, where);
    return 0;
}

int zx_aws_link_profile(zx_aws_chain *ch, zx_aws_cred *out)
{
    const char *name = ch->profile ? ch->profile : zx_aws_env("AWS_PROFILE");
    int named = name != NULL;
    if (!name)
        name = "default";
    ch->top_profile = name;
    if (load_files(ch) < 0)
        return -1;
    const char *seen[ZX_AWS_CREDS_MAX_CHAIN + 2];
    int rc = resolve_profile(ch, name, seen, 0, out);
    if (rc == 1 && named && !zx_aws_ini_has(ch->cred_ini, name)) {
        char sec[300];
        snprintf(sec, sizeof(sec), "profile %s", name);
        if (!zx_aws_ini_has(ch->conf_ini, sec))
            return -1;          /* a profile asked for by name must exist */
    }
    return rc;
}
