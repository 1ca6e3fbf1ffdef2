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

#define TOKEN_FILE_MAX (16 * 1024)     /* bytes of a web identity / ECS token file */

struct zx_aws_creds {
    char *access_key, *secret_key, *session_token, *profile, *role_arn, *external_id,
        *session_name, *region, *sts_endpoint, *imds_endpoint, *ca_file;
    zx_aws_cred cur;
    int have;
    char source[1024];
    time_t last_try;
};

/* One run of the chain. */
typedef struct chain {
    const zx_aws_creds *c;
    time_t now;
    char notes[2048];
    char source[1024];
    char cred_path[PATH_MAX], conf_path[PATH_MAX];
    zx_aws_ini *cred_ini, *conf_ini;
    int loaded;                 /* 0 not yet, 1 loaded, -1 failed */
    const char *top_profile;
} chain;

static void note(chain *ch, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(chain *ch, const char *fmt, ...)
{
    size_t l = strlen(ch->notes);
    if (l && l + 2 < sizeof(ch->notes)) {
        memcpy(ch->notes + l, "; ", 3);
        l += 2;
    }
    if (l + 1 >= sizeof(ch->notes))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ch->notes + l, sizeof(ch->notes) - l, fmt, ap);
    va_end(ap);
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static char *dup_opt(const char *s, int *oom)
{
    if (!s || !*s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *oom = 1;
    return d;
}

static void wipe_free(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

/* ---- files ---- */

static const char *home_dir(void)
{
    const char *h = env("HOME");
    if (h)
        return h;
    struct passwd *pw = getpwuid(getuid());
    return pw && pw->pw_dir ? pw->pw_dir : "/";
}

/* The path of a shared file: $var (a leading "~/" is the home) or ~/.aws/dflt. */
static void shared_path(char *out, size_t ol, const char *var, const char *dflt)
{
    const char *v = env(var);
    if (v && strncmp(v, "~/", 2) == 0)
        snprintf(out, ol, "%s/%s", home_dir(), v + 2);
    else if (v)
        snprintf(out, ol, "%s", v);
    else
        snprintf(out, ol, "%s/.aws/%s", home_dir(), dflt);
}

static int load_files(chain *ch)
{
    if (ch->loaded)
        return ch->loaded;
    char err[512];
    shared_path(ch->cred_path, sizeof(ch->cred_path), "AWS_SHARED_CREDENTIALS_FILE", "credentials");
    shared_path(ch->conf_path, sizeof(ch->conf_path), "AWS_CONFIG_FILE", "config");
    ch->loaded = 1;
    if (zx_aws_ini_load(ch->cred_path, &ch->cred_ini, err, sizeof(err)) < 0 ||
        zx_aws_ini_load(ch->conf_path, &ch->conf_ini, err, sizeof(err)) < 0) {
        note(ch, "shared files: %s", err);
        ch->loaded = -1;
    }
    return ch->loaded;
}

/* A small secret-ish file (a token): trimmed, malloc'd; NULL with err. */
static char *read_token_file(const char *path, const char *what, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        snprintf(err, errlen, "%s %s: cannot read: %s", what, path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > TOKEN_FILE_MAX) {
        close(fd);
        snprintf(err, errlen, "%s %s: %s", what, path,
                 S_ISREG(st.st_mode) ? "larger than 16384 bytes" : "not a regular file");
        return NULL;
    }
    char *buf = malloc(TOKEN_FILE_MAX + 1);
    size_t n = 0;
    ssize_t r = 0;
    while (buf && n < TOKEN_FILE_MAX + 1 &&
           ((r = read(fd, buf + n, TOKEN_FILE_MAX + 1 - n)) > 0 || (r < 0 && errno == EINTR)))
        n += r > 0 ? (size_t)r : 0;
    close(fd);
    if (!buf || r < 0 || n > TOKEN_FILE_MAX) {
        snprintf(err, errlen, "%s %s: %s", what, path, !buf ? "out of memory"
                 : r < 0 ? "cannot read" : "larger than 16384 bytes");
        free(buf);
        return NULL;
    }
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
        n--;
    buf[n] = '\0';
    if (n == 0 || strlen(buf) != n || strpbrk(buf, "\r\n")) {
        snprintf(err, errlen, "%s %s: %s", what, path, n == 0 ? "empty"
                 : "holds a NUL byte or several lines");
        wipe_free(buf);
        return NULL;
    }
    return buf;
}

/* ---- STS parameters ---- */

static const char *chain_region(chain *ch)
{
    if (ch->c->region)
        return ch->c->region;
    if (env("AWS_REGION"))
        return env("AWS_REGION");
    if (env("AWS_DEFAULT_REGION"))
        return env("AWS_DEFAULT_REGION");
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

static void sts_params(chain *ch, zx_aws_sts *s, char *ep, size_t el)
{
    const char *region = chain_region(ch);
    if (ch->c->sts_endpoint)
        snprintf(ep, el, "%s", ch->c->sts_endpoint);
    else if (region)
        snprintf(ep, el, "https://sts.%s.amazonaws.com%s", region,
                 strncmp(region, "cn-", 3) == 0 ? ".cn" : "");
    else
        snprintf(ep, el, "https://sts.amazonaws.com");
    s->endpoint = ep;
    s->region = region ? region : "us-east-1";
    s->ca_file = ch->c->ca_file;
    s->now = ch->now;
}

static void session_name(chain *ch, const char *given, char *out, size_t ol)
{
    if (given && *given)
        snprintf(out, ol, "%s", given);
    else
        snprintf(out, ol, "zx-%lld", (long long)ch->now);
}

/* ---- links ---- */

static int link_env(chain *ch, zx_aws_cred *out)
{
    const char *ak = env("AWS_ACCESS_KEY_ID"), *sk = env("AWS_SECRET_ACCESS_KEY");
    if (!ak && !sk) {
        note(ch, "environment AWS_ACCESS_KEY_ID not set");
        return 1;
    }
    if (!ak || !sk) {
        note(ch, "environment: %s is set but %s is not", ak ? "AWS_ACCESS_KEY_ID" :
             "AWS_SECRET_ACCESS_KEY", ak ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
        return -1;
    }
    if (zx_aws_cred_set(out, ak, sk, env("AWS_SESSION_TOKEN"), 0) < 0) {
        note(ch, "environment: out of memory");
        return -1;
    }
    snprintf(ch->source, sizeof(ch->source), "environment");
    return 0;
}

static int link_web_identity(chain *ch, const char *token_file, const char *role_arn,
                             const char *sname, zx_aws_cred *out)
{
    char err[1024], ep[512], sn[128];
    char *tok = read_token_file(token_file, "web identity token file", err, sizeof(err));
    if (!tok) {
        note(ch, "%s", err);
        return -1;
    }
    zx_aws_sts s;
    sts_params(ch, &s, ep, sizeof(ep));
    session_name(ch, sname, sn, sizeof(sn));
    int rc = zx_aws_sts_web_identity(&s, role_arn, sn, tok, out, err, sizeof(err));
    wipe_free(tok);
    if (rc < 0) {
        note(ch, "web identity: %s", err);
        return -1;
    }
    snprintf(ch->source, sizeof(ch->source), "web identity %s", role_arn);
    return 0;
}

static int link_env_web_identity(chain *ch, zx_aws_cred *out)
{
    const char *tf = env("AWS_WEB_IDENTITY_TOKEN_FILE"), *arn = env("AWS_ROLE_ARN");
    if (!tf && !arn) {
        note(ch, "web identity AWS_WEB_IDENTITY_TOKEN_FILE not set");
        return 1;
    }
    if (!tf || !arn) {
        note(ch, "web identity: %s is set but %s is not",
             tf ? "AWS_WEB_IDENTITY_TOKEN_FILE" : "AWS_ROLE_ARN",
             tf ? "AWS_ROLE_ARN" : "AWS_WEB_IDENTITY_TOKEN_FILE");
        return -1;
    }
    return link_web_identity(ch, tf, arn, env("AWS_ROLE_SESSION_NAME"), out);
}

/* http is allowed to the ECS and EKS agents and to loopback only. */
static int ecs_url_ok(const char *url)
{
    if (strncasecmp(url, "https://", 8) == 0)
        return 1;
    if (strncasecmp(url, "http://", 7) != 0)
        return 0;
    static const char *const ok[] = {"127.", "localhost", "[::1]", "169.254.170.2",
                                     "169.254.170.23", "[fd00:ec2::23]"};
    const char *h = url + 7;
    size_t hl = strcspn(h, ":/?#");
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        size_t l = strlen(ok[i]);
        if (ok[i][l - 1] == '.' ? strncmp(h, ok[i], l) == 0
                                : (hl == l && strncasecmp(h, ok[i], l) == 0))
            return 1;
        if (ok[i][0] == '[' && strncasecmp(h, ok[i], l) == 0)
            return 1;
    }
    return 0;
}

static int link_ecs(chain *ch, zx_aws_cred *out)
{
    const char *rel = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    const char *full = env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    char url[2048], err[1024];
    if (!rel && !full) {
        note(ch, "ECS container AWS_CONTAINER_CREDENTIALS_RELATIVE_URI/FULL_URI not set");
        return 1;
    }
    if (rel)
        snprintf(url, sizeof(url), "http://169.254.170.2%s%s", rel[0] == '/' ? "" : "/", rel);
    else
        snprintf(url, sizeof(url), "%s", full);
    if (!rel && !ecs_url_ok(full)) {
        note(ch, "ECS container: AWS_CONTAINER_CREDENTIALS_FULL_URI must be https, or http to "
             "a loopback address, 169.254.170.2 or 169.254.170.23");
        return -1;
    }
    char *auth = NULL;
    const char *tf = env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    if (tf) {
        auth = read_token_file(tf, "ECS container AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
                               err, sizeof(err));
        if (!auth) {
            note(ch, "%s", err);
            return -1;
        }
    } else if (env("AWS_CONTAINER_AUTHORIZATION_TOKEN")) {
        auth = strdup(env("AWS_CONTAINER_AUTHORIZATION_TOKEN"));
        if (auth && strpbrk(auth, "\r\n")) {
            wipe_free(auth);
            note(ch, "ECS container: AWS_CONTAINER_AUTHORIZATION_TOKEN holds a line break");
            return -1;
        }
    }
    int rc = zx_aws_ecs_fetch(url, auth, ch->c->ca_file, out, err, sizeof(err));
    wipe_free(auth);
    if (rc < 0) {
        note(ch, "%s", err);
        return -1;
    }
    snprintf(ch->source, sizeof(ch->source), "ECS container");
    return 0;
}

static int link_imds(chain *ch, zx_aws_cred *out)
{
    const char *dis = env("AWS_EC2_METADATA_DISABLED");
    if (dis && strcasecmp(dis, "true") == 0) {
        note(ch, "EC2 instance metadata disabled by AWS_EC2_METADATA_DISABLED");
        return 1;
    }
    char ep[512], err[1024], role[256];
    const char *e = ch->c->imds_endpoint ? ch->c->imds_endpoint
                  : env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    snprintf(ep, sizeof(ep), "%s", e ? e : "http://169.254.169.254");
    size_t l = strlen(ep);
    while (l && ep[l - 1] == '/')
        ep[--l] = '\0';
    int rc = zx_aws_imds_fetch(ep, out, role, sizeof(role), err, sizeof(err));
    if (rc != 0) {
        note(ch, "%s", err);
        return rc;
    }
    snprintf(ch->source, sizeof(ch->source), "EC2 instance metadata (role %s)", role);
    return 0;
}

/* ---- profiles ---- */

typedef struct prof {
    const char *name;
    char sec[300];               /* its section in the config file */
} prof;

/* key of the profile: the credentials file's value, else the config's;
 * *where (may be NULL) names the file it came from. */
static const char *pget(chain *ch, const prof *p, const char *key, const char **where)
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
static int profile_keys(chain *ch, const prof *p, zx_aws_cred *out)
{
    const char *where = NULL, *w2 = NULL;
    const char *ak = pget(ch, p, "aws_access_key_id", &where);
    const char *sk = pget(ch, p, "aws_secret_access_key", &w2);
    if (!ak && !sk)
        return 1;
    if (!ak || !sk) {
        note(ch, "profile %s in %s has %s but no %s", p->name, ak ? where : w2,
             ak ? "aws_access_key_id" : "aws_secret_access_key",
             ak ? "aws_secret_access_key" : "aws_access_key_id");
        return -1;
    }
    if (zx_aws_cred_set(out, ak, sk, pget(ch, p, "aws_session_token", NULL), 0) < 0) {
        note(ch, "profile %s: out of memory", p->name);
        return -1;
    }
    snprintf(ch->source, sizeof(ch->source), "profile %s in %s", p->name, where);
    return 0;
}

static int resolve_profile(chain *ch, const char *name, const char **seen, int depth,
                           zx_aws_cred *out);

/* The base credentials of role profile p, at seen[depth]: its source_profile
 * (which must not be in seen[0..depth]) or its credential_source. */
static int role_base(chain *ch, const prof *p, const char **seen, int depth, zx_aws_cred *base)
{
    const char *src = pget(ch, p, "source_profile", NULL);
    const char *cs = pget(ch, p, "credential_source", NULL);
    const char *wif = pget(ch, p, "web_identity_token_file", NULL);
    if ((src != NULL) + (cs != NULL) + (wif != NULL) > 1) {
        note(ch, "profile %s sets more than one of source_profile, credential_source and "
             "web_identity_token_file", p->name);
        return -1;
    }
    if (cs) {
        int rc = strcmp(cs, "Environment") == 0 ? link_env(ch, base)
               : strcmp(cs, "EcsContainer") == 0 ? link_ecs(ch, base)
               : strcmp(cs, "Ec2InstanceMetadata") == 0 ? link_imds(ch, base) : 2;
        if (rc == 2)
            note(ch, "profile %s: credential_source %.100s is not Environment, EcsContainer "
                 "nor Ec2InstanceMetadata", p->name, cs);
        else if (rc == 1)
            note(ch, "profile %s: its credential_source %s has no credentials", p->name, cs);
        return rc == 0 ? 0 : -1;
    }
    if (!src) {
        note(ch, "profile %s has role_arn but no source_profile, credential_source nor "
             "web_identity_token_file", p->name);
        return -1;
    }
    if (strcmp(src, p->name) == 0) {        /* its own static keys */
        int rc = profile_keys(ch, p, base);
        if (rc == 1)
            note(ch, "profile %s is its own source_profile but has no aws_access_key_id",
                 p->name);
        return rc == 0 ? 0 : -1;
    }
    for (int i = 0; i <= depth; i++)
        if (strcmp(seen[i], src) == 0) {
            note(ch, "profile %s: source_profile %s makes a cycle", p->name, src);
            return -1;
        }
    int rc = resolve_profile(ch, src, seen, depth + 1, base);
    if (rc == 1)
        note(ch, "profile %s: its source_profile %s has no credentials", p->name, src);
    return rc == 0 ? 0 : -1;
}

static int resolve_profile(chain *ch, const char *name, const char **seen, int depth,
                           zx_aws_cred *out)
{
    prof p = {.name = name};
    snprintf(p.sec, sizeof(p.sec), strcmp(name, "default") == 0 ? "%s" : "profile %s", name);
    if (!zx_aws_ini_has(ch->cred_ini, name) && !zx_aws_ini_has(ch->conf_ini, p.sec) &&
        !(strcmp(name, "default") == 0 && zx_aws_ini_has(ch->conf_ini, "profile default"))) {
        note(ch, "profile %s not in %s nor %s", name, ch->cred_path, ch->conf_path);
        return 1;
    }
    const char *role_arn = pget(ch, &p, "role_arn", NULL);
    if (!role_arn) {
        int rc = profile_keys(ch, &p, out);
        if (rc == 1)
            note(ch, "profile %s has no aws_access_key_id nor role_arn", name);
        return rc;
    }
    if (depth >= ZX_AWS_CREDS_MAX_CHAIN) {
        note(ch, "profile %s: more than %d roles in a row through source_profile", name,
             ZX_AWS_CREDS_MAX_CHAIN);
        return -1;
    }
    seen[depth] = name;
    const char *wif = pget(ch, &p, "web_identity_token_file", NULL);
    const char *rsn = pget(ch, &p, "role_session_name", NULL);
    if (wif) {
        int rc = link_web_identity(ch, wif, role_arn, rsn, out);
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
    sts_params(ch, &s, ep, sizeof(ep));
    session_name(ch, rsn, sn, sizeof(sn));
    int rc = zx_aws_sts_assume(&s, &base, role_arn, sn, pget(ch, &p, "external_id", NULL),
                               out, err, sizeof(err));
    zx_aws_cred_clear(&base);
    if (rc < 0) {
        note(ch, "profile %s: %s", name, err);
        return -1;
    }
    const char *where = NULL;
    pget(ch, &p, "role_arn", &where);
    snprintf(ch->source, sizeof(ch->source), "assume role %s (from profile %s in %s)",
             role_arn, name, where);
    return 0;
}

static int link_profile(chain *ch, zx_aws_cred *out)
{
    const char *name = ch->c->profile ? ch->c->profile : env("AWS_PROFILE");
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

/* ---- the chain ---- */

static int run_chain(chain *ch, zx_aws_cred *out)
{
    const zx_aws_creds *c = ch->c;
    int rc = 1;
    ch->top_profile = c->profile ? c->profile : env("AWS_PROFILE");
    if (!ch->top_profile)
        ch->top_profile = "default";
    if (c->access_key) {
        rc = zx_aws_cred_set(out, c->access_key, c->secret_key, c->session_token, 0) < 0 ? -1 : 0;
        if (rc == 0)
            snprintf(ch->source, sizeof(ch->source), "connection keys");
        else
            note(ch, "connection keys: out of memory");
    } else {
        note(ch, "connection keys not set");
    }
    if (rc == 1)
        rc = link_env(ch, out);
    if (rc == 1)
        rc = link_profile(ch, out);
    if (rc == 1)
        rc = link_env_web_identity(ch, out);
    if (rc == 1)
        rc = link_ecs(ch, out);
    if (rc == 1)
        rc = link_imds(ch, out);
    if (rc != 0 || !c->role_arn)
        return rc == 0 ? 0 : -1;
    zx_aws_cred base = *out;
    memset(out, 0, sizeof(*out));
    char ep[512], sn[128], err[1024];
    zx_aws_sts s;
    sts_params(ch, &s, ep, sizeof(ep));
    session_name(ch, c->session_name, sn, sizeof(sn));
    rc = zx_aws_sts_assume(&s, &base, c->role_arn, sn, c->external_id, out, err, sizeof(err));
    zx_aws_cred_clear(&base);
    if (rc < 0) {
        note(ch, "with the credentials of %s: %s", ch->source, err);
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
    int valid = c->have && (c->cur.expiry == 0 || now < c->cur.expiry);
    if (valid && (c->cur.expiry == 0 || now < c->cur.expiry - ZX_AWS_CREDS_REFRESH ||
                  now - c->last_try < ZX_AWS_CREDS_RETRY)) {
        give(c, keys);
        return 0;
    }
    chain *ch = calloc(1, sizeof(*ch));
    if (!ch) {
        snprintf(err, errlen, "AWS credentials: out of memory");
        return -1;
    }
    ch->c = c;
    ch->now = now;
    c->last_try = now;
    zx_aws_cred fresh = {0};
    int rc = run_chain(ch, &fresh);
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
    wipe_free(c->access_key);
    wipe_free(c->secret_key);
    wipe_free(c->session_token);
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
