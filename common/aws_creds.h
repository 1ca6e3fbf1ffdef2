/*
 * aws_creds.h — AWS credentials, found the way the AWS SDKs find them, and
 * kept fresh.  One provider per connection per thread (it is not
 * thread-safe); it caches what it found and finds it again when temporary
 * credentials come within ZX_AWS_CREDS_REFRESH seconds of their expiry.
 *
 * The chain, first link that is set up wins:
 *   1. the connection's static keys (opts access_key + secret_key);
 *   2. the environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 *      AWS_SESSION_TOKEN;
 *   3. the profile (opts profile, else $AWS_PROFILE, else "default") in the
 *      shared credentials file ($AWS_SHARED_CREDENTIALS_FILE, default
 *      ~/.aws/credentials, sections "[NAME]") and config file
 *      ($AWS_CONFIG_FILE, default ~/.aws/config, sections "[profile NAME]"
 *      and "[default]"); the credentials file's keys win over the config
 *      file's.  A profile with role_arn is assumed with STS AssumeRole
 *      (external_id, role_session_name honoured) from its source_profile's
 *      credentials (itself maybe a role: at most ZX_AWS_CREDS_MAX_CHAIN
 *      roles, a cycle refused) or its credential_source (Environment,
 *      EcsContainer, Ec2InstanceMetadata); else its aws_access_key_id +
 *      aws_secret_access_key [+ aws_session_token] are used;
 *   4. web identity: AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN
 *      [+ AWS_ROLE_SESSION_NAME], STS AssumeRoleWithWebIdentity (unsigned);
 *   5. ECS container credentials: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI
 *      (on http://169.254.170.2) or AWS_CONTAINER_CREDENTIALS_FULL_URI
 *      (https, or http to a loopback address or 169.254.170.2/.23), with
 *      AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE's content or
 *      AWS_CONTAINER_AUTHORIZATION_TOKEN as the Authorization header;
 *   6. EC2 instance metadata, IMDSv2 only (a token PUT first), 1 s per
 *      request and one attempt so that a host outside EC2 is not slowed;
 *      AWS_EC2_METADATA_DISABLED=true skips it; the address is opts
 *      imds_endpoint, else $AWS_EC2_METADATA_SERVICE_ENDPOINT, else
 *      http://169.254.169.254.
 * The metadata requests (5 and 6) never go through a proxy (http_proxy is
 * ignored for them: a proxy would answer with its own host's credentials);
 * STS requests honour the proxy variables as libcurl reads them.
 * A link that is not set up (no variable, no profile) is noted and the
 * next is tried.  A link that is set up but fails (half the environment
 * keys, a profile naming a missing source_profile, STS refusing, an
 * unreadable token file, the ECS endpoint failing) ends the search with
 * an error: falling through to other credentials would hide the mistake.
 * A profile named explicitly (opts or AWS_PROFILE) that exists nowhere is
 * such an error too; a missing "default" is not.  A profile that uses what
 * zx does not read (sso_session, sso_start_url, credential_process) is an
 * error that says so; a profile with none of these nor keys (a [default]
 * holding only region) is not set up.  duration_seconds and mfa_serial are
 * not read (roles last STS's default hour; no MFA prompt in a daemon).
 *
 * opts role_arn is then assumed (STS AssumeRole, with external_id and
 * session_name) with whatever the chain found.
 *
 * Every message names the links tried and why each failed, e.g.
 *   "no AWS credentials: connection keys not set; environment
 *    AWS_ACCESS_KEY_ID not set; profile default not in /root/.aws/credentials
 *    nor /root/.aws/config; web identity AWS_WEB_IDENTITY_TOKEN_FILE not
 *    set; ECS container AWS_CONTAINER_CREDENTIALS_RELATIVE_URI/FULL_URI not
 *    set; EC2 instance metadata: no answer from 169.254.169.254 in 1 s".
 * No secret key and no session token is ever in a message or a log line.
 *
 * STS: opts sts_endpoint, else https://sts.REGION.amazonaws.com with REGION
 * opts region, else $AWS_REGION, else $AWS_DEFAULT_REGION, else the
 * profile's region, else https://sts.amazonaws.com (signed for us-east-1).
 */
#ifndef ZX_COMMON_AWS_CREDS_H
#define ZX_COMMON_AWS_CREDS_H

#include <stddef.h>
#include <time.h>

#include "common/aws_sigv4.h"   /* zx_aws_keys */

#define ZX_AWS_CREDS_REFRESH   300  /* s before expiry when they are refreshed */
#define ZX_AWS_CREDS_RETRY      10  /* s between refresh attempts that failed
                                       while the old keys are still valid */
#define ZX_AWS_CREDS_MAX_CHAIN   5  /* roles assumed in a row through profiles */

/* A connection's settings.  Every string is copied by zx_aws_creds_new;
 * NULL or "" means unset. */
typedef struct zx_aws_cred_opts {
    const char *access_key;       /* the connection's static keys */
    const char *secret_key;       /* secret */
    const char *session_token;    /* secret */
    const char *profile;          /* NULL: $AWS_PROFILE or "default" */
    const char *role_arn;         /* assume this role on top of the chain */
    const char *external_id;      /* with role_arn */
    const char *session_name;     /* with role_arn; NULL: "zx-<unix time>" */
    const char *region;           /* for STS's regional endpoint */
    const char *sts_endpoint;     /* NULL: see the top; else an http(s) URL, its
                                   * path kept (tests: http://127.0.0.1:port) */
    const char *imds_endpoint;    /* NULL: see the top */
    const char *ca_file;          /* PEM bundle for https (STS, ECS); NULL: the system's */
} zx_aws_cred_opts;

typedef struct zx_aws_creds zx_aws_creds;

/* A provider with o's settings (copied; o need not outlive the call).
 * Makes no request and reads no file: the chain runs at the first get.
 * Returns the provider (zx_aws_creds_free), or NULL with err: only one of
 * access_key/secret_key set ("connection keys: secret_key set without
 * access_key"), external_id without role_arn, out of memory. */
zx_aws_creds *zx_aws_creds_new(const zx_aws_cred_opts *o, char *err, size_t errlen);

/* The current keys at time now (UTC seconds; 0: time(NULL); tests pass theirs).
 * The first call runs the chain; later calls return the cached keys until
 * they are within ZX_AWS_CREDS_REFRESH s of their expiry, and then run the
 * chain again.  When that fails while the cached keys have not expired,
 * the cached keys are returned (and the chain is tried again at most every
 * ZX_AWS_CREDS_RETRY s).  Returns 0 with *keys set (its strings owned by c,
 * valid until the next get or free), or -1 with *keys zeroed and err
 * naming each link tried and why it failed (see the top).  It blocks for
 * the requests it makes (IMDS: at most about 3 s; STS/ECS: a few s). */
int zx_aws_creds_get(zx_aws_creds *c, time_t now, zx_aws_keys *keys,
                     char *err, size_t errlen);

/* Where the keys of the last successful get came from, owned by c, e.g.
 * "connection keys", "environment", "profile default in
 * /root/.aws/credentials", "assume role arn:aws:iam::1:role/r (from profile
 * dev in /root/.aws/credentials)", "web identity arn:aws:iam::1:role/r",
 * "ECS container", "EC2 instance metadata (role r)"; a role_arn from the
 * connection adds "assume role ARN on top of ...".  Never a secret.
 * "" before the first successful get. */
const char *zx_aws_creds_source(const zx_aws_creds *c);

/* When the cached keys expire (UTC seconds), 0 for keys that do not
 * expire or before the first successful get. */
time_t zx_aws_creds_expiry(const zx_aws_creds *c);

/* Frees c, wiping the secrets it held.  NULL is a no-op. */
void zx_aws_creds_free(zx_aws_creds *c);

#endif
