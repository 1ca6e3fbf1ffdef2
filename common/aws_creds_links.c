/*
 * aws_creds_links.c — the links of the credential chain that are not the
 * shared files: the environment, web identity, ECS, EC2 instance metadata
 * (aws_creds_int.h), and what they share: the notes, the STS parameters.
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

void zx_aws_note(zx_aws_chain *ch, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void zx_aws_note(zx_aws_chain *ch, const char *fmt, ...)
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

const char *zx_aws_env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
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
        zx_aws_wipe_free(buf);
        return NULL;
    }
    return buf;
}

int zx_aws_chain_sts(zx_aws_chain *ch, zx_aws_sts *s, char *ep, size_t el)
{
    const char *region = zx_aws_chain_region(ch);
    if (region && (strlen(region) > 40 ||
                   strspn(region, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(region))) {
        zx_aws_note(ch, "region %.64s is not an AWS region name (such as eu-west-1)", region);
        return -1;
    }
    if (ch->sts_endpoint)
        snprintf(ep, el, "%s", ch->sts_endpoint);
    else if (region)
        snprintf(ep, el, "https://sts.%s.amazonaws.com%s", region,
                 strncmp(region, "cn-", 3) == 0 ? ".cn" : "");
    else
        snprintf(ep, el, "https://sts.amazonaws.com");
    s->endpoint = ep;
    s->region = region ? region : "us-east-1";
    s->ca_file = ch->ca_file;
    s->now = ch->now;
    return 0;
}

void zx_aws_chain_session(zx_aws_chain *ch, const char *given, char *out, size_t ol)
{
    if (given && *given)
        snprintf(out, ol, "%s", given);
    else
        snprintf(out, ol, "zx-%lld", (long long)ch->now);
}

/* ---- links ---- */

int zx_aws_link_env(zx_aws_chain *ch, zx_aws_cred *out)
{
    const char *ak = zx_aws_env("AWS_ACCESS_KEY_ID"), *sk = zx_aws_env("AWS_SECRET_ACCESS_KEY");
    if (!ak && !sk) {
        zx_aws_note(ch, "environment AWS_ACCESS_KEY_ID not set");
        return 1;
    }
    if (!ak || !sk) {
        zx_aws_note(ch, "environment: %s is set but %s is not", ak ? "AWS_ACCESS_KEY_ID" :
             "AWS_SECRET_ACCESS_KEY", ak ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
        return -1;
    }
    if (zx_aws_cred_set(out, ak, sk, zx_aws_env("AWS_SESSION_TOKEN"), 0) < 0) {
        zx_aws_note(ch, "environment: out of memory");
        return -1;
    }
    snprintf(ch->source, sizeof(ch->source), "environment");
    return 0;
}

int zx_aws_link_web_identity(zx_aws_chain *ch, const char *token_file, const char *role_arn,
                             const char *sname, zx_aws_cred *out)
{
    char err[1024], ep[512], sn[128];
    char *tok = read_token_file(token_file, "web identity token file", err, sizeof(err));
    if (!tok) {
        zx_aws_note(ch, "%s", err);
        return -1;
    }
    zx_aws_sts s;
    if (zx_aws_chain_sts(ch, &s, ep, sizeof(ep)) < 0) {
        zx_aws_wipe_free(tok);
        return -1;
    }
    zx_aws_chain_session(ch, sname, sn, sizeof(sn));
    int rc = zx_aws_sts_web_identity(&s, role_arn, sn, tok, out, err, sizeof(err));
    zx_aws_wipe_free(tok);
    if (rc < 0) {
        zx_aws_note(ch, "web identity: %s", err);
        return -1;
    }
    snprintf(ch->source, sizeof(ch->source), "web identity %s", role_arn);
    return 0;
}

int zx_aws_link_env_web_identity(zx_aws_chain *ch, zx_aws_cred *out)
{
    const char *tf = zx_aws_env("AWS_WEB_IDENTITY_TOKEN_FILE"), *arn = zx_aws_env("AWS_ROLE_ARN");
    if (!tf && !arn) {
        zx_aws_note(ch, "web identity AWS_WEB_IDENTITY_TOKEN_FILE not set");
        return 1;
    }
    if (!tf || !arn) {
        zx_aws_note(ch, "web identity: %s is set but %s is not",
             tf ? "AWS_WEB_IDENTITY_TOKEN_FILE" : "AWS_ROLE_ARN",
             tf ? "AWS_ROLE_ARN" : "AWS_WEB_IDENTITY_TOKEN_FILE");
        return -1;
    }
    return zx_aws_link_web_identity(ch, tf, arn, zx_aws_env("AWS_ROLE_SESSION_NAME"), out);
}

/* http is allowed to the ECS and EKS agents and to loopback only. */
static int ecs_url_ok(const char *url)
{
    if (strncasecmp(url, "https://", 8) == 0)
        return 1;
    if (strncasecmp(url, "http://", 7) != 0)
        return 0;
    static const char *const ok[] = {"localhost", "[::1]", "169.254.170.2", "169.254.170.23",
                                     "[fd00:ec2::23]"};
    const char *h = url + 7;
    size_t hl = strcspn(h, h[0] == '[' ? "]" : ":/?#");
    if (h[0] == '[' && h[hl++] != ']')
        return 0;
    if (strchr(":/?#", h[hl]) == NULL)  /* NUL is found too */
        return 0;                       /* "[::1]x": not a host */
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (hl == strlen(ok[i]) && strncasecmp(h, ok[i], hl) == 0)
            return 1;
    if (hl > 4 && strncmp(h, "127.", 4) == 0 && strspn(h, "0123456789.") == hl)
        return 1;
    return 0;
}

int zx_aws_link_ecs(zx_aws_chain *ch, zx_aws_cred *out)
{
    const char *rel = zx_aws_env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    const char *full = zx_aws_env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    char url[2048], err[1024];
    if (!rel && !full) {
        zx_aws_note(ch, "ECS container AWS_CONTAINER_CREDENTIALS_RELATIVE_URI/FULL_URI not set");
        return 1;
    }
    if (rel)
        snprintf(url, sizeof(url), "http://169.254.170.2%s%s", rel[0] == '/' ? "" : "/", rel);
    else
        snprintf(url, sizeof(url), "%s", full);
    if (!rel && !ecs_url_ok(full)) {
        zx_aws_note(ch, "ECS container: AWS_CONTAINER_CREDENTIALS_FULL_URI must be https, or http to "
             "a loopback address, 169.254.170.2 or 169.254.170.23");
        return -1;
    }
    char *auth = NULL;
    const char *tf = zx_aws_env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    if (tf) {
        auth = read_token_file(tf, "ECS container AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
                               err, sizeof(err));
        if (!auth) {
            zx_aws_note(ch, "%s", err);
            return -1;
        }
    } else if (zx_aws_env("AWS_CONTAINER_AUTHORIZATION_TOKEN")) {
        auth = strdup(zx_aws_env("AWS_CONTAINER_AUTHORIZATION_TOKEN"));
        if (auth && strpbrk(auth, "\r\n")) {
            zx_aws_wipe_free(auth);
            zx_aws_note(ch, "ECS container: AWS_CONTAINER_AUTHORIZATION_TOKEN holds a line break");
            return -1;
        }
    }
    int rc = zx_aws_ecs_fetch(url, auth, ch->ca_file, out, err, sizeof(err));
    zx_aws_wipe_free(auth);
    if (rc < 0) {
        zx_aws_note(ch, "%s", err);
        return -1;
    }
    snprintf(ch->source, sizeof(ch->source), "ECS container");
    return 0;
}

int zx_aws_link_imds(zx_aws_chain *ch, zx_aws_cred *out)
{
    const char *dis = zx_aws_env("AWS_EC2_METADATA_DISABLED");
    if (dis && strcasecmp(dis, "true") == 0) {
        zx_aws_note(ch, "EC2 instance metadata disabled by AWS_EC2_METADATA_DISABLED");
        return 1;
    }
    char ep[512], err[1024], role[256];
    const char *e = ch->imds_endpoint ? ch->imds_endpoint
                  : zx_aws_env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    snprintf(ep, sizeof(ep), "%s", e ? e : "http://169.254.169.254");
    size_t l = strlen(ep);
    while (l && ep[l - 1] == '/')
        ep[--l] = '\0';
    int rc = zx_aws_imds_fetch(ep, out, role, sizeof(role), err, sizeof(err));
    if (rc != 0) {
        zx_aws_note(ch, "%s", err);
        return rc;
    }
    snprintf(ch->source, sizeof(ch->source), "EC2 instance metadata (role %s)", role);
    return 0;
}
