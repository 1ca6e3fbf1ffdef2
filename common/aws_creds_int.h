/*
 * aws_creds_int.h — the credential chain's pieces shared between its
 * files: aws_creds.c (the provider, the order of the links),
 * aws_creds_links.c (environment, web identity, ECS, IMDS links),
 * aws_creds_profile.c (the shared files' link), aws_creds_http.c (the ECS
 * and IMDS requests) and aws_sts.c (STS and its XML).  Not for other
 * modules: they use aws_creds.h.  Every function follows util.h's error
 * convention; none puts a secret in err nor in a note.
 */
#ifndef ZX_COMMON_AWS_CREDS_INT_H
#define ZX_COMMON_AWS_CREDS_INT_H

#include <stddef.h>
#include <time.h>

/* One set of keys, owned (malloc'd strings); expiry 0: does not expire. */
typedef struct zx_aws_cred {
    char *access_key, *secret_key, *session_token;
    time_t expiry;
} zx_aws_cred;

/* Wipe (explicit_bzero) and free the string s.  NULL is a no-op. */
void zx_aws_wipe_free(char *s);

/* Wipe and free the strings of k, zero it.  NULL is a no-op. */
void zx_aws_cred_clear(zx_aws_cred *k);

/* Copy the three strings into k (cleared first; NULL token: none).
 * 0, or -1 (out of memory; k then empty). */
int zx_aws_cred_set(zx_aws_cred *k, const char *ak, const char *sk, const char *tok,
                    time_t expiry);

/* What an STS call needs. */
typedef struct zx_aws_sts {
    const char *endpoint;         /* "https://sts.eu-west-1.amazonaws.com", no path */
    const char *region;           /* signing region */
    const char *ca_file;          /* NULL: the system's */
    time_t now;                   /* signing time */
} zx_aws_sts;

/* STS AssumeRole of role_arn (session_name, external_id NULL: none) signed
 * with base.  0 with *out (expiring), or -1 with err: "STS AssumeRole
 * ARN: CODE: MESSAGE (HTTP 403)" or the transfer failure. */
int zx_aws_sts_assume(const zx_aws_sts *s, const zx_aws_cred *base, const char *role_arn,
                      const char *session_name, const char *external_id,
                      zx_aws_cred *out, char *err, size_t errlen);

/* STS AssumeRoleWithWebIdentity (unsigned) with the token's text. */
int zx_aws_sts_web_identity(const zx_aws_sts *s, const char *role_arn,
                            const char *session_name, const char *token,
                            zx_aws_cred *out, char *err, size_t errlen);

/* Parse an STS answer body (len bytes; need not be NUL-terminated):
 * Credentials/AccessKeyId, SecretAccessKey, SessionToken, Expiration.
 * 0 with *out, or -1 with err: for an <Error> body "CODE: MESSAGE", else
 * what is missing.  Only the first 64 KiB are looked at. */
int zx_aws_sts_parse(const char *body, size_t len, zx_aws_cred *out,
                     char *err, size_t errlen);

/* The text of the first <name>...</name> in [p, p+len) with the five XML
 * entities decoded, malloc'd; NULL when absent or out of memory. */
char *zx_aws_xml_text(const char *p, size_t len, const char *name);

/* Parse a JSON credentials document (ECS and IMDS: AccessKeyId,
 * SecretAccessKey, Token, Expiration; IMDS's Code must be "Success" when
 * present).  0 with *out, or -1 with err naming what is missing (never a
 * value). */
int zx_aws_json_creds(const char *body, size_t len, zx_aws_cred *out,
                      char *err, size_t errlen);

/* ECS container credentials from url with the Authorization header value
 * auth (NULL: none).  0, or -1 with err ("ECS container: HTTP 401 from
 * http://169.254.170.2/..." or the transfer failure). */
int zx_aws_ecs_fetch(const char *url, const char *auth, const char *ca_file,
                     zx_aws_cred *out, char *err, size_t errlen);

/* EC2 IMDSv2 from endpoint ("http://169.254.169.254", no trailing '/').
 * role_out (NULL or room for roomlen bytes) receives the role's name.
 * 0; 1 when nothing answered (not on EC2: err says so); -1 with err for an
 * answer that is not credentials. */
int zx_aws_imds_fetch(const char *endpoint, zx_aws_cred *out, char *role_out,
                      size_t roomlen, char *err, size_t errlen);

/* Parse an ISO 8601 UTC time ("2026-12-02T16:00:00Z", fraction allowed)
 * into *t.  0, or -1. */
int zx_aws_parse_time(const char *s, time_t *t);

/* ---- the chain (aws_creds.c, aws_creds_links.c, aws_creds_profile.c) ---- */

struct zx_aws_ini;

/* One run of the chain: the provider's settings (borrowed), what it found. */
typedef struct zx_aws_chain {
    const char *profile, *region, *sts_endpoint, *imds_endpoint, *ca_file; /* NULL: unset */
    time_t now;
    char notes[2048];             /* "; "-joined: why each link gave nothing */
    char source[1024];            /* the winning link's zx_aws_creds_source */
    char cred_path[4096], conf_path[4096];
    struct zx_aws_ini *cred_ini, *conf_ini;  /* the shared files, owned; NULL: absent */
    int loaded;                   /* shared files: 0 not yet, 1 loaded, -1 failed */
    const char *top_profile;      /* the profile the chain looks at */
} zx_aws_chain;

/* Append "; " and a formatted note to ch->notes (cut to fit). */
void zx_aws_note(zx_aws_chain *ch, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* getenv, with "" as NULL. */
const char *zx_aws_env(const char *name);

/* The links: each 0 (found: *out and ch->source set), 1 (not set up: a
 * note says why) or -1 (set up but failing: a note says why; the chain
 * stops). */
int zx_aws_link_env(zx_aws_chain *ch, zx_aws_cred *out);
int zx_aws_link_env_web_identity(zx_aws_chain *ch, zx_aws_cred *out);
int zx_aws_link_web_identity(zx_aws_chain *ch, const char *token_file, const char *role_arn,
                             const char *session_name, zx_aws_cred *out);
int zx_aws_link_ecs(zx_aws_chain *ch, zx_aws_cred *out);
int zx_aws_link_imds(zx_aws_chain *ch, zx_aws_cred *out);
int zx_aws_link_profile(zx_aws_chain *ch, zx_aws_cred *out);

/* The STS endpoint (into ep, el bytes) and region for this run: 0, or -1
 * with a note (a region that is not a region name: it goes into a host). */
int zx_aws_chain_sts(zx_aws_chain *ch, zx_aws_sts *s, char *ep, size_t el);
/* The region: opts, $AWS_REGION, $AWS_DEFAULT_REGION, the profile's; NULL. */
const char *zx_aws_chain_region(zx_aws_chain *ch);
/* given, else "zx-<now>", into out. */
void zx_aws_chain_session(zx_aws_chain *ch, const char *given, char *out, size_t ol);

#endif
