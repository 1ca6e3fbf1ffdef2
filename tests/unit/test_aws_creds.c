/*
 * test_aws_creds.c — unit tests of the AWS credential chain
 * (common/aws_creds.h) and its shared-file parser (common/aws_ini.h).
 *
 * The chain's order is tested with environment variables and files the
 * test writes (HOME is a temporary directory).  The HTTP links are tested
 * against a small HTTP server this test runs in a thread on 127.0.0.1
 * (plain sockets: one request per connection, a canned answer per method,
 * path and body, every request recorded) playing IMDSv2, ECS and STS.
 * Credentials it serves expire soon, and `now` is passed to get() to see
 * them refreshed.  No test waits without a bound: the server thread polls
 * with a timeout, and the "no answer" case is a closed port.
 */
#include "common/aws_creds.h"
#include "common/aws_creds_int.h"
#include "common/aws_ini.h"
#include "tests/unit/check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- the server ---- */

typedef struct route {
    const char *method, *path, *body_has;
    int status;
    const char *bodies[2];        /* the nth hit gets bodies[min(n, 1)] (NULL: bodies[0]) */
    int hits;
} route;

typedef struct seen_req {
    char method[16], path[256];
    char head[4096], body[4096];
} seen_req;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static route routes[16];
static int nroutes;
static seen_req seen[64];
static int nseen;
static int srv_fd = -1, srv_port, srv_stop;
static pthread_t srv_thread;

static void serve_one(int fd)
{
    char buf[16384];
    size_t n = 0;
    char *he = NULL;
    while (n < sizeof(buf) - 1) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 3000) <= 0)
            return;
        ssize_t r = read(fd, buf + n, sizeof(buf) - 1 - n);
        if (r <= 0)
            return;
        n += (size_t)r;
        buf[n] = '\0';
        he = strstr(buf, "\r\n\r\n");
        if (he) {
            const char *cl = strcasestr(buf, "\r\nContent-Length:");
            size_t want = cl && cl < he ? strtoul(cl + 17, NULL, 10) : 0;
            if (n >= (size_t)(he + 4 - buf) + want)
                break;
        }
    }
    if (!he)
        return;
    seen_req q;
    memset(&q, 0, sizeof(q));
    sscanf(buf, "%15s %255s", q.method, q.path);
    snprintf(q.head, sizeof(q.head), "%.*s", (int)(he - buf), buf);
    snprintf(q.body, sizeof(q.body), "%s", he + 4);
    int status = 404;
    const char *body = "not found";
    pthread_mutex_lock(&mu);
    if (nseen < 64)
        seen[nseen++] = q;
    for (int i = 0; i < nroutes; i++) {
        route *r = &routes[i];
        if (strcmp(r->method, q.method) == 0 && strcmp(r->path, q.path) == 0 &&
            (!r->body_has || strstr(q.body, r->body_has))) {
            status = r->status;
            body = r->hits > 0 && r->bodies[1] ? r->bodies[1] : r->bodies[0];
            r->hits++;
            break;
        }
    }
    pthread_mutex_unlock(&mu);
    char out[8192];
    int ol = snprintf(out, sizeof(out),
                      "HTTP/1.1 %d X\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
                      status, strlen(body), body);
    if (write(fd, out, (size_t)ol) < 0)
        return;
}

static void *server_main(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&srv_stop, __ATOMIC_SEQ_CST)) {
        struct pollfd p = {srv_fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0)
            continue;
        int fd = accept(srv_fd, NULL, NULL);
        if (fd < 0)
            continue;
        serve_one(fd);
        close(fd);
    }
    return NULL;
}

static int listen_any(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 16) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &al) < 0)
        return -1;
    *port = ntohs(a.sin_port);
    return fd;
}

static void reset_server(void)
{
    pthread_mutex_lock(&mu);
    nroutes = 0;
    nseen = 0;
    pthread_mutex_unlock(&mu);
}

static void add_route(const char *method, const char *path, const char *body_has, int status,
                      const char *b0, const char *b1)
{
    pthread_mutex_lock(&mu);
    routes[nroutes++] = (route){method, path, body_has, status, {b0, b1}, 0};
    pthread_mutex_unlock(&mu);
}

/* ---- helpers ---- */

static int streq(const char *a, const char *b)
{
    return a && strcmp(a, b) == 0;
}

static char home[64];

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
}

static const char *const aws_vars[] = {
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    "AWS_REGION", "AWS_DEFAULT_REGION",
};

/* A clean environment: no AWS variable, no shared file, IMDS off. */
static void clean_env(void)
{
    for (size_t i = 0; i < sizeof(aws_vars) / sizeof(aws_vars[0]); i++)
        unsetenv(aws_vars[i]);
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    char p[400];
    snprintf(p, sizeof(p), "%s/.aws/credentials", home);
    unlink(p);
    snprintf(p, sizeof(p), "%s/.aws/config", home);
    unlink(p);
    reset_server();
}

static void home_file(const char *name, const char *text)
{
    char p[400];
    snprintf(p, sizeof(p), "%s/.aws/%s", home, name);
    write_file(p, text);
}

/* get() once with opts o at now; returns rc; fills err/src. */
static int get_once(const zx_aws_cred_opts *o, time_t now, char *ak, size_t akl, char *src,
                    size_t srcl, char *err, size_t errlen)
{
    err[0] = src[0] = ak[0] = '\0';
    zx_aws_creds *c = zx_aws_creds_new(o, err, errlen);
    if (!c)
        return -2;
    zx_aws_keys k;
    int rc = zx_aws_creds_get(c, now, &k, err, errlen);
    if (rc == 0) {
        snprintf(ak, akl, "%s", k.access_key);
        snprintf(src, srcl, "%s", zx_aws_creds_source(c));
    }
    zx_aws_creds_free(c);
    return rc;
}

#define T0 ((time_t)1900000000)    /* 2030-03-17T17:46:40Z */

/* ---- the ini parser ---- */

static void test_ini(void)
{
    const char *text =
        "# a comment\n"
        "; another\n"
        "[default]\n"
        "aws_access_key_id = AKDEF  \n"
        "  AWS_Secret_Access_Key=sdef ; inline comment\n"
        "\n"
        "[ profile   dev ]  # comment\n"
        "region = eu-west-1\n"
        "s3 =\n"
        "  max_concurrent_requests = 20\n"
        "empty =\n"
        "[profile dev]\n"
        "region = eu-west-3\r\n";
    char err[256] = "";
    zx_aws_ini *ini = zx_aws_ini_parse(text, strlen(text), "cfg", err, sizeof(err));
    CHECK(ini != NULL);
    CHECK(zx_aws_ini_has(ini, "default"));
    CHECK(zx_aws_ini_has(ini, "profile dev"));
    CHECK(!zx_aws_ini_has(ini, "dev"));
    CHECK(zx_aws_ini_get(ini, "default", "aws_access_key_id") &&
          strcmp(zx_aws_ini_get(ini, "default", "aws_access_key_id"), "AKDEF") == 0);
    CHECK(zx_aws_ini_get(ini, "default", "aws_secret_access_key") &&
          strcmp(zx_aws_ini_get(ini, "default", "aws_secret_access_key"), "sdef") == 0);
    CHECK(zx_aws_ini_get(ini, "profile dev", "region") &&
          strcmp(zx_aws_ini_get(ini, "profile dev", "region"), "eu-west-3") == 0);
    CHECK(zx_aws_ini_get(ini, "profile dev", "max_concurrent_requests") == NULL);
    CHECK(zx_aws_ini_get(ini, "profile dev", "empty") &&
          *zx_aws_ini_get(ini, "profile dev", "empty") == '\0');
    CHECK(zx_aws_ini_get(ini, "profile dev", "missing") == NULL);
    CHECK(zx_aws_ini_get(ini, "nosuch", "region") == NULL);
    CHECK(zx_aws_ini_get(NULL, "default", "region") == NULL);
    zx_aws_ini_free(ini);

    static const struct { const char *text, *msg; } bad[] = {
        {"key = v\n", "cfg line 1: a key before any [section]"},
        {"[a]\njunk\n", "cfg line 2: neither a [section] nor key = value"},
        {"[a\n", "cfg line 1: a section line without its closing ']'"},
        {"[ ]\n", "cfg line 1: an empty section name []"},
        {"[a]\n = v\n", "cfg line 2: '=' without a key before it"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        ini = zx_aws_ini_parse(bad[i].text, strlen(bad[i].text), "cfg", err, sizeof(err));
        CHECK(ini == NULL);
        CHECK(strcmp(err, bad[i].msg) == 0);
        if (strcmp(err, bad[i].msg) != 0)
            printf("  got: %s\n", err);
    }
    char *longl = malloc(ZX_AWS_INI_MAX_LINE + 20);
    memset(longl, 'x', ZX_AWS_INI_MAX_LINE + 10);
    memcpy(longl, "[a]\nk=", 6);
    longl[ZX_AWS_INI_MAX_LINE + 10] = '\0';
    CHECK(zx_aws_ini_parse(longl, strlen(longl), "cfg", err, sizeof(err)) == NULL);
    CHECK(strcmp(err, "cfg line 2: longer than 4096 bytes") == 0);
    free(longl);
    CHECK(zx_aws_ini_parse("[a]\0k=v", 7, "cfg", err, sizeof(err)) == NULL);
    CHECK(strstr(err, "NUL byte") != NULL);

    zx_aws_ini *out = (zx_aws_ini *)1;
    char p[400];
    snprintf(p, sizeof(p), "%s/nosuchfile", home);
    CHECK(zx_aws_ini_load(p, &out, err, sizeof(err)) == 1 && out == NULL);
    CHECK(zx_aws_ini_load(home, &out, err, sizeof(err)) == -1);
    CHECK(strstr(err, "not a regular file") != NULL);
    snprintf(p, sizeof(p), "%s/big", home);
    FILE *f = fopen(p, "w");
    for (int i = 0; i < 120000; i++)
        fputs("# padding\n", f);
    fclose(f);
    CHECK(zx_aws_ini_load(p, &out, err, sizeof(err)) == -1);
    CHECK(strstr(err, "larger than 1048576 bytes") != NULL);
    unlink(p);
}

/* ---- the chain's order, no HTTP ---- */

static void test_order(void)
{
    char ak[128], src[1024], err[2048], p[512];
    zx_aws_cred_opts o = {0};
    clean_env();

    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -1);
    snprintf(p, sizeof(p), "no AWS credentials: connection keys not set; environment "
             "AWS_ACCESS_KEY_ID not set; profile default not in %s/.aws/credentials nor "
             "%s/.aws/config; web identity AWS_WEB_IDENTITY_TOKEN_FILE not set; ECS container "
             "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI/FULL_URI not set; EC2 instance metadata "
             "disabled by AWS_EC2_METADATA_DISABLED", home, home);
    CHECK(strcmp(err, p) == 0);
    if (strcmp(err, p) != 0)
        printf("  got: %s\n", err);

    /* 3: the default profile in the credentials file */
    home_file("credentials", "[default]\naws_access_key_id = AKFILE\n"
                             "aws_secret_access_key = SKFILE\n"
                             "[dev]\naws_access_key_id = AKDEVCRED\n"
                             "aws_secret_access_key = SKDEVCRED\n");
    home_file("config", "[default]\nregion = eu-west-1\n"
                        "[profile dev]\naws_access_key_id = AKDEVCONF\n"
                        "aws_secret_access_key = SKDEVCONF\n"
                        "[profile onlyconf]\naws_access_key_id = AKONLYCONF\n"
                        "aws_secret_access_key = SKONLYCONF\n"
                        "[profile half]\naws_access_key_id = AKHALF\n"
                        "[dev2]\naws_access_key_id = NOTAPROFILE\n"
                        "aws_secret_access_key = SKNOT\n");
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == 0);
    CHECK(strcmp(ak, "AKFILE") == 0);
    snprintf(p, sizeof(p), "profile default in %s/.aws/credentials", home);
    CHECK(strcmp(src, p) == 0);

    /* AWS_SHARED_CREDENTIALS_FILE moves the file ("~/" is the home) */
    snprintf(p, sizeof(p), "%s/other-creds", home);
    write_file(p, "[default]\naws_access_key_id = AKOTHER\naws_secret_access_key = S\n");
    setenv("AWS_SHARED_CREDENTIALS_FILE", "~/other-creds", 1);
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == 0);
    CHECK(strcmp(ak, "AKOTHER") == 0);
    snprintf(p, sizeof(p), "profile default in %s/other-creds", home);
    CHECK(strcmp(src, p) == 0);
    unsetenv("AWS_SHARED_CREDENTIALS_FILE");
    setenv("AWS_CONFIG_FILE", "/nonexistent/config", 1);
    setenv("AWS_PROFILE", "onlyconf", 1);
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -1);
    CHECK(strstr(err, "profile onlyconf not in ") && strstr(err, " nor /nonexistent/config"));
    unsetenv("AWS_CONFIG_FILE");

    /* the credentials file wins over the config file; [profile x] in config */
    setenv("AWS_PROFILE", "dev", 1);
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == 0);
    CHECK(strcmp(ak, "AKDEVCRED") == 0);
    o.profile = "onlyconf";          /* the connection's profile wins over AWS_PROFILE */
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == 0);
    CHECK(strcmp(ak, "AKONLYCONF") == 0);
    snprintf(p, sizeof(p), "profile onlyconf in %s/.aws/config", home);
    CHECK(strcmp(src, p) == 0);
    /* in the config file, [dev2] is not a profile: a named profile missing stops */
    o.profile = "dev2";
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -1);
    CHECK(strstr(err, "profile dev2 not in ") != NULL);
    CHECK(strstr(err, "web identity") == NULL);
    o.profile = "half";
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -1);
    snprintf(p, sizeof(p), "profile half in %s/.aws/config has aws_access_key_id but no "
             "aws_secret_access_key", home);
    CHECK(strstr(err, p) != NULL);
    o.profile = NULL;
    unsetenv("AWS_PROFILE");

    /* 2: the environment beats the files */
    setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "SKENV", 1);
    setenv("AWS_SESSION_TOKEN", "TOKENV", 1);
    zx_aws_creds *c = zx_aws_creds_new(&o, err, sizeof(err));
    zx_aws_keys k;
    CHECK(c && zx_aws_creds_get(c, T0, &k, err, sizeof(err)) == 0);
    CHECK(streq(k.access_key, "AKENV") && streq(k.secret_key, "SKENV") &&
          streq(k.session_token, "TOKENV"));
    CHECK(strcmp(zx_aws_creds_source(c), "environment") == 0);
    CHECK(zx_aws_creds_expiry(c) == 0);
    zx_aws_creds_free(c);
    unsetenv("AWS_SECRET_ACCESS_KEY");
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -1);
    CHECK(strstr(err, "environment: AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"));
    CHECK(strstr(err, "profile") == NULL);     /* the chain stopped there */
    setenv("AWS_SECRET_ACCESS_KEY", "SKENV", 1);

    /* 1: the connection's keys beat everything */
    o.access_key = "AKCONN";
    o.secret_key = "SKCONN";
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == 0);
    CHECK(strcmp(ak, "AKCONN") == 0 && strcmp(src, "connection keys") == 0);
    o.secret_key = NULL;
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -2);
    CHECK(strcmp(err, "connection keys: access_key set without secret_key") == 0);
    o.access_key = NULL;
    o.external_id = "x";
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -2);
    o.external_id = NULL;

    /* a hostile config file is a clear error */
    clean_env();
    home_file("config", "aws_secret_access_key = SKBEFORE\n");
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -1);
    snprintf(p, sizeof(p), "shared files: %s/.aws/config line 1: a key before any [section]",
             home);
    CHECK(strstr(err, p) != NULL);
    CHECK(strstr(err, "SKBEFORE") == NULL);

    /* source_profile: cycles refused, chains bounded, all before any request */
    clean_env();
    home_file("config", "[profile a]\nrole_arn = arn:aws:iam::1:role/a\nsource_profile = b\n"
                        "[profile b]\nrole_arn = arn:aws:iam::1:role/b\nsource_profile = a\n"
                        "[profile p0]\nrole_arn = arn:aws:iam::1:role/0\nsource_profile = p1\n"
                        "[profile p1]\nrole_arn = arn:aws:iam::1:role/1\nsource_profile = p2\n"
                        "[profile p2]\nrole_arn = arn:aws:iam::1:role/2\nsource_profile = p3\n"
                        "[profile p3]\nrole_arn = arn:aws:iam::1:role/3\nsource_profile = p4\n"
                        "[profile p4]\nrole_arn = arn:aws:iam::1:role/4\nsource_profile = p5\n"
                        "[profile p5]\nrole_arn = arn:aws:iam::1:role/5\nsource_profile = p6\n"
                        "[profile p6]\naws_access_key_id = A\naws_secret_access_key = S\n"
                        "[profile nosrc]\nrole_arn = arn:aws:iam::1:role/n\n"
                        "[profile badsrc]\nrole_arn = arn:aws:iam::1:role/n\n"
                        "source_profile = missing\n"
                        "[profile sso]\nsso_session = s\nsso_account_id = 1\n"
                        "[profile regiononly]\nregion = eu-west-1\n");
    o.profile = "sso";
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -1);
    CHECK(strstr(err, "profile sso uses sso_session, which zx does not read") != NULL);
    o.profile = "regiononly";       /* set up for no credentials: the chain goes on */
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -1);
    CHECK(strstr(err, "profile regiononly has no aws_access_key_id nor role_arn; web identity "
                      "AWS_WEB_IDENTITY_TOKEN_FILE not set") != NULL);
    o.profile = "a";
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -1);
    CHECK(strstr(err, "profile b: source_profile a makes a cycle") != NULL);
    o.profile = "p0";
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -1);
    CHECK(strstr(err, "more than 5 roles in a row") != NULL);
    o.profile = "nosrc";
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -1);
    CHECK(strstr(err, "profile nosrc has role_arn but no source_profile") != NULL);
    o.profile = "badsrc";
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -1);
    CHECK(strstr(err, "profile badsrc: its source_profile missing has no credentials") != NULL);
    CHECK(strstr(err, "profile missing not in") != NULL);
}

/* ---- the HTTP links ---- */

#define EXP1 "2030-03-17T18:00:00Z"     /* T0 + 800 s */
#define EXP2 "2030-03-17T19:00:00Z"
#define EXP1_T ((time_t)1900000800)

static const char imds_creds1[] =
    "{\"Code\":\"Success\",\"Type\":\"AWS-HMAC\",\"AccessKeyId\":\"AKIMDS1\","
    "\"SecretAccessKey\":\"SKIMDS1\",\"Token\":\"TOKIMDS1\",\"Expiration\":\"" EXP1 "\"}";
static const char imds_creds2[] =
    "{\"Code\":\"Success\",\"Type\":\"AWS-HMAC\",\"AccessKeyId\":\"AKIMDS2\","
    "\"SecretAccessKey\":\"SKIMDS2\",\"Token\":\"TOKIMDS2\",\"Expiration\":\"" EXP2 "\"}";

static const char sts_ok1[] =
    "<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\n"
    "<AssumeRoleResult><AssumedRoleUser><Arn>x</Arn></AssumedRoleUser>\n"
    "<Credentials>\n  <AccessKeyId>ASIASTS1</AccessKeyId>\n"
    "  <SecretAccessKey>SKSTS1/a+b</SecretAccessKey>\n"
    "  <SessionToken>TOKSTS1&amp;x</SessionToken>\n"
    "  <Expiration>" EXP1 "</Expiration>\n</Credentials></AssumeRoleResult>\n"
    "</AssumeRoleResponse>\n";
static const char sts_ok2[] =
    "<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>ASIASTS2</AccessKeyId>"
    "<SecretAccessKey>SKSTS2</SecretAccessKey><SessionToken>TOKSTS2</SessionToken>"
    "<Expiration>" EXP2 "</Expiration></Credentials></AssumeRoleResult></AssumeRoleResponse>";
static const char sts_web[] =
    "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult>"
    "<SubjectFromWebIdentityToken>s</SubjectFromWebIdentityToken>"
    "<Credentials><SessionToken>TOKWEB</SessionToken><SecretAccessKey>SKWEB</SecretAccessKey>"
    "<Expiration>" EXP1 "</Expiration><AccessKeyId>ASIAWEB</AccessKeyId></Credentials>"
    "</AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>";
static const char sts_denied[] =
    "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error>"
    "<Type>Sender</Type><Code>AccessDenied</Code><Message>User: arn:aws:iam::1:user/u is "
    "not authorized to perform: sts:AssumeRole on resource: arn:aws:iam::1:role/r"
    "</Message></Error><RequestId>r</RequestId></ErrorResponse>";

static int seen_count(void)
{
    pthread_mutex_lock(&mu);
    int n = nseen;
    pthread_mutex_unlock(&mu);
    return n;
}

static void test_imds(void)
{
    char url[128], err[2048];
    clean_env();
    unsetenv("AWS_EC2_METADATA_DISABLED");
    setenv("http_proxy", "http://127.0.0.1:1", 1);     /* never used for metadata */
    add_route("PUT", "/latest/api/token", NULL, 200, "TOKEN-123", NULL);
    add_route("GET", "/latest/meta-data/iam/security-credentials/", NULL, 200, "myrole\n", NULL);
    add_route("GET", "/latest/meta-data/iam/security-credentials/myrole", NULL, 200,
              imds_creds1, imds_creds2);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", srv_port);
    zx_aws_cred_opts o = {.imds_endpoint = url};
    zx_aws_creds *c = zx_aws_creds_new(&o, err, sizeof(err));
    zx_aws_keys k;
    CHECK(zx_aws_creds_get(c, EXP1_T - 600, &k, err, sizeof(err)) == 0);
    CHECK(streq(k.access_key, "AKIMDS1") && streq(k.secret_key, "SKIMDS1") &&
          streq(k.session_token, "TOKIMDS1"));
    CHECK(strcmp(zx_aws_creds_source(c), "EC2 instance metadata (role myrole)") == 0);
    CHECK(zx_aws_creds_expiry(c) == EXP1_T);
    CHECK(seen_count() == 3);
    pthread_mutex_lock(&mu);
    CHECK(strcmp(seen[0].method, "PUT") == 0);
    CHECK(strcasestr(seen[0].head, "\r\nX-aws-ec2-metadata-token-ttl-seconds: 21600") != NULL);
    for (int i = 1; i < 3; i++) {
        CHECK(strcmp(seen[i].method, "GET") == 0);
        CHECK(strcasestr(seen[i].head, "\r\nX-aws-ec2-metadata-token: TOKEN-123") != NULL);
    }
    pthread_mutex_unlock(&mu);
    /* cached while more than 5 minutes from the expiry */
    CHECK(zx_aws_creds_get(c, EXP1_T - 301, &k, err, sizeof(err)) == 0);
    CHECK(streq(k.access_key, "AKIMDS1") && seen_count() == 3);
    /* within 5 minutes: refreshed */
    CHECK(zx_aws_creds_get(c, EXP1_T - 299, &k, err, sizeof(err)) == 0);
    CHECK(streq(k.access_key, "AKIMDS2") && seen_count() == 6);
    /* a refresh that fails keeps the old keys while they are valid */
    reset_server();
    CHECK(zx_aws_creds_get(c, EXP1_T + 3600 - 299, &k, err, sizeof(err)) == 0);
    CHECK(streq(k.access_key, "AKIMDS2"));
    CHECK(seen_count() == 1);        /* the token PUT, answered 404 */
    CHECK(zx_aws_creds_get(c, EXP1_T + 3600 - 295, &k, err, sizeof(err)) == 0);
    CHECK(seen_count() == 1);        /* not again within ZX_AWS_CREDS_RETRY */
    /* once expired, the failure shows */
    CHECK(zx_aws_creds_get(c, EXP1_T + 3600, &k, err, sizeof(err)) == -1);
    CHECK(strstr(err, "EC2 instance metadata: token PUT: HTTP 404 from 127.0.0.1:") != NULL);
    CHECK(k.access_key == NULL);
    zx_aws_creds_free(c);

    /* nothing answers: one attempt, and said so */
    int port;
    int fd = listen_any(&port);
    close(fd);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    char ak[64], src[256];
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -1);
    char want[128];
    snprintf(want, sizeof(want), "EC2 instance metadata: no answer from 127.0.0.1:%d in 1 s", port);
    CHECK(strstr(err, want) != NULL);
    if (!strstr(err, want))
        printf("  got: %s\n", err);
    /* a silent host (connects, never answers): one attempt of 1 s per request, and the
     * chain stops at the token PUT */
    fd = listen_any(&port);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -1);
    snprintf(want, sizeof(want), "EC2 instance metadata: no answer from 127.0.0.1:%d in 1 s", port);
    CHECK(strstr(err, want) != NULL);
    int conns = 0, cfd;
    struct pollfd pf = {fd, POLLIN, 0};
    while (poll(&pf, 1, 0) > 0 && (cfd = accept(fd, NULL, NULL)) >= 0) {
        conns++;
        close(cfd);
    }
    CHECK(conns == 1);
    close(fd);
    /* the variable sets the address too */
    reset_server();
    add_route("PUT", "/latest/api/token", NULL, 200, "TOKEN-123", NULL);
    add_route("GET", "/latest/meta-data/iam/security-credentials/", NULL, 404, "", NULL);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", srv_port);
    setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", url, 1);
    o.imds_endpoint = NULL;
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -1);
    CHECK(strstr(err, "role list: HTTP 404") && strstr(err, "no IAM role attached"));
}

static void test_ecs(void)
{
    unsetenv("http_proxy");
    char url[128], err[2048], ak[64], src[256], p[400];
    clean_env();
    add_route("GET", "/v2/creds", NULL, 200, imds_creds1, imds_creds2);
    add_route("GET", "/denied", NULL, 401, "no", NULL);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v2/creds", srv_port);
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
    setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "Bearer ecs-token-1", 1);
    zx_aws_cred_opts o = {0};
    zx_aws_creds *c = zx_aws_creds_new(&o, err, sizeof(err));
    zx_aws_keys k;
    CHECK(zx_aws_creds_get(c, EXP1_T - 600, &k, err, sizeof(err)) == 0);
    CHECK(streq(k.access_key, "AKIMDS1"));
    CHECK(strcmp(zx_aws_creds_source(c), "ECS container") == 0);
    pthread_mutex_lock(&mu);
    CHECK(nseen == 1 && strcasestr(seen[0].head, "\r\nAuthorization: Bearer ecs-token-1"));
    pthread_mutex_unlock(&mu);
    CHECK(zx_aws_creds_get(c, EXP1_T - 100, &k, err, sizeof(err)) == 0);
    CHECK(streq(k.access_key, "AKIMDS2") && seen_count() == 2);
    zx_aws_creds_free(c);
    /* the token file wins over the variable */
    snprintf(p, sizeof(p), "%s/ecs-token", home);
    write_file(p, "file-token-2\n");
    setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", p, 1);
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == 0);
    pthread_mutex_lock(&mu);
    CHECK(nseen == 3 && strcasestr(seen[2].head, "\r\nAuthorization: file-token-2"));
    if (nseen != 3)
        printf("  nseen %d err %s\n", nseen, err);
    pthread_mutex_unlock(&mu);
    /* refused */
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/denied", srv_port);
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -1);
    CHECK(strstr(err, "ECS container: HTTP 401 from") != NULL);
    CHECK(strstr(err, "file-token-2") == NULL);
    static const char *const refused[] = {"http://example.com/creds", "http://127.evil.com/c",
                                          "http://[::1]x/c", "http://[::1", "ftp://127.0.0.1/"};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", refused[i], 1);
        CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -1);
        CHECK(strstr(err, "must be https, or http to a loopback address") != NULL);
    }
    /* an empty token file is refused before any request */
    reset_server();
    write_file(p, "\n");
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:1/c", 1);
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -1);
    CHECK(strstr(err, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE") && strstr(err, ": empty"));
    CHECK(seen_count() == 0);
}

static void test_sts(void)
{
    char ep[128], err[2048], ak[64], src[1024], p[512];
    snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", srv_port);

    /* web identity, unsigned */
    clean_env();
    add_route("POST", "/", "Action=AssumeRoleWithWebIdentity", 200, sts_web, NULL);
    snprintf(p, sizeof(p), "%s/web-token", home);
    write_file(p, "eyJ.web.token\n");
    setenv("AWS_WEB_IDENTITY_TOKEN_FILE", p, 1);
    setenv("AWS_ROLE_ARN", "arn:aws:iam::123:role/web", 1);
    setenv("AWS_ROLE_SESSION_NAME", "sess1", 1);
    zx_aws_cred_opts o = {.sts_endpoint = ep};
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == 0);
    CHECK(strcmp(ak, "ASIAWEB") == 0);
    CHECK(strcmp(src, "web identity arn:aws:iam::123:role/web") == 0);
    pthread_mutex_lock(&mu);
    CHECK(nseen == 1 && strcasestr(seen[0].head, "\r\nAuthorization:") == NULL);
    CHECK(strstr(seen[0].body, "RoleArn=arn%3Aaws%3Aiam%3A%3A123%3Arole%2Fweb") != NULL);
    CHECK(strstr(seen[0].body, "RoleSessionName=sess1") != NULL);
    CHECK(strstr(seen[0].body, "WebIdentityToken=eyJ.web.token") != NULL);
    pthread_mutex_unlock(&mu);

    /* a profile with role_arn + source_profile: AssumeRole signed with the source's keys */
    clean_env();
    add_route("POST", "/", "Action=AssumeRole&", 200, sts_ok1, sts_ok2);
    home_file("credentials", "[base]\naws_access_key_id = AKBASE\n"
                             "aws_secret_access_key = SKBASE\n");
    home_file("config", "[profile r]\nrole_arn = arn:aws:iam::123:role/r\n"
                        "source_profile = base\nexternal_id = ext-1\n"
                        "role_session_name = rs\nregion = eu-west-3\n");
    setenv("AWS_PROFILE", "r", 1);
    zx_aws_creds *c = zx_aws_creds_new(&o, err, sizeof(err));
    zx_aws_keys k;
    CHECK(zx_aws_creds_get(c, T0, &k, err, sizeof(err)) == 0);
    CHECK(k.access_key && streq(k.access_key, "ASIASTS1"));
    CHECK(k.secret_key && streq(k.secret_key, "SKSTS1/a+b"));
    CHECK(k.session_token && streq(k.session_token, "TOKSTS1&x"));
    snprintf(p, sizeof(p), "assume role arn:aws:iam::123:role/r (from profile r in "
             "%s/.aws/config)", home);
    CHECK(strcmp(zx_aws_creds_source(c), p) == 0);
    pthread_mutex_lock(&mu);
    CHECK(nseen == 1);
    CHECK(strcmp(seen[0].body, "Action=AssumeRole&Version=2011-06-15&RoleArn=arn%3Aaws%3Aiam"
                 "%3A%3A123%3Arole%2Fr&RoleSessionName=rs&ExternalId=ext-1") == 0);
    CHECK(strcasestr(seen[0].head, "\r\nAuthorization: AWS4-HMAC-SHA256 Credential=AKBASE/"
                     "20300317/eu-west-3/sts/aws4_request") != NULL);
    CHECK(strcasestr(seen[0].head, "\r\nX-Amz-Date: 20300317T174640Z") != NULL);
    pthread_mutex_unlock(&mu);
    CHECK(zx_aws_creds_get(c, EXP1_T - 200, &k, err, sizeof(err)) == 0);
    CHECK(streq(k.access_key, "ASIASTS2") && seen_count() == 2);
    zx_aws_creds_free(c);

    /* credential_source = Environment */
    clean_env();
    add_route("POST", "/", "Action=AssumeRole&", 200, sts_ok1, NULL);
    home_file("config", "[profile cs]\nrole_arn = arn:aws:iam::123:role/cs\n"
                        "credential_source = Environment\n");
    setenv("AWS_PROFILE", "cs", 1);
    o.region = "eu-north-1";
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -1);
    CHECK(strstr(err, "profile cs: its credential_source Environment has no credentials"));
    home_file("config", "[profile cs]\nrole_arn = arn:aws:iam::123:role/cs\n"
                        "credential_source = EcsContainer\n");
    add_route("GET", "/ecs", NULL, 200, imds_creds1, NULL);
    snprintf(p, sizeof(p), "http://127.0.0.1:%d/ecs", srv_port);
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", p, 1);
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == 0);
    CHECK(strcmp(ak, "ASIASTS1") == 0);
    CHECK(strstr(src, "assume role arn:aws:iam::123:role/cs (from profile cs in ") == src);
    pthread_mutex_lock(&mu);
    CHECK(nseen == 2 && strcmp(seen[0].path, "/ecs") == 0);
    CHECK(strcasestr(seen[1].head, "Credential=AKIMDS1/20300317/eu-north-1/sts/") != NULL);
    CHECK(strcasestr(seen[1].head, "\r\nX-Amz-Security-Token: TOKIMDS1") != NULL);
    pthread_mutex_unlock(&mu);
    unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    unsetenv("AWS_PROFILE");
    o.profile = NULL;
    o.region = NULL;

    /* the connection's role on top of the environment's keys */
    clean_env();
    add_route("POST", "/", "Action=AssumeRole&", 200, sts_ok1, sts_ok2);
    setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "SKENV", 1);
    setenv("AWS_SESSION_TOKEN", "TOKENV", 1);
    o.role_arn = "arn:aws:iam::123:role/top";
    o.external_id = "ext-2";
    o.region = "us-west-2";
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == 0);
    CHECK(strcmp(ak, "ASIASTS1") == 0);
    CHECK(strcmp(src, "assume role arn:aws:iam::123:role/top on top of environment") == 0);
    pthread_mutex_lock(&mu);
    CHECK(nseen == 1 && strstr(seen[0].body, "ExternalId=ext-2") &&
          strstr(seen[0].body, "RoleSessionName=zx-1900000000"));
    CHECK(strcasestr(seen[0].head, "Credential=AKENV/20300317/us-west-2/sts/") != NULL);
    CHECK(strcasestr(seen[0].head, "\r\nX-Amz-Security-Token: TOKENV") != NULL);
    pthread_mutex_unlock(&mu);

    /* a region goes into the STS host name: only a region name */
    o.sts_endpoint = NULL;
    o.region = "evil.example.com/";
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -1);
    CHECK(strstr(err, "region evil.example.com/ is not an AWS region name") != NULL);
    o.sts_endpoint = ep;
    o.region = "us-west-2";

    /* STS refuses: its code and message, never a secret */
    reset_server();
    add_route("POST", "/", NULL, 403, sts_denied, NULL);
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -1);
    CHECK(strstr(err, "with the credentials of environment: STS AssumeRole "
                      "arn:aws:iam::123:role/top: AccessDenied: User: arn:aws:iam::1:user/u is "
                      "not authorized to perform: sts:AssumeRole") != NULL);
    CHECK(strstr(err, "(HTTP 403 from 127.0.0.1:") != NULL);
    CHECK(strstr(err, "SKENV") == NULL && strstr(err, "TOKENV") == NULL);
    if (!strstr(err, "AccessDenied"))
        printf("  got: %s\n", err);

    /* an endpoint with a path (a proxy's prefix) is signed with that path */
    reset_server();
    add_route("POST", "/sts/", NULL, 200, sts_ok2, NULL);
    snprintf(ep, sizeof(ep), "http://127.0.0.1:%d/sts/", srv_port);
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == 0);
    CHECK(strcmp(ak, "ASIASTS2") == 0);
    o.sts_endpoint = "sts.example.com";
    CHECK(get_once(&o, T0, ak, sizeof(ak), src, sizeof(src), err, sizeof(err)) == -1);
    CHECK(strstr(err, "the STS endpoint sts.example.com is not a URL like https://") != NULL);
}

static void test_sts_parse(void)
{
    zx_aws_cred k = {0};
    char err[256];
    CHECK(zx_aws_sts_parse(sts_ok1, strlen(sts_ok1), &k, err, sizeof(err)) == 0);
    CHECK(k.expiry == EXP1_T && streq(k.session_token, "TOKSTS1&x"));
    zx_aws_cred_clear(&k);
    const char *noexp = "<Credentials><AccessKeyId>A</AccessKeyId><SecretAccessKey>S"
                        "</SecretAccessKey><SessionToken>T</SessionToken></Credentials>";
    CHECK(zx_aws_sts_parse(noexp, strlen(noexp), &k, err, sizeof(err)) == -1);
    CHECK(strcmp(err, "<Credentials> without a valid <Expiration>") == 0);
    const char *unclosed = "<Credentials><AccessKeyId>A";
    CHECK(zx_aws_sts_parse(unclosed, strlen(unclosed), &k, err, sizeof(err)) == -1);
    CHECK(zx_aws_sts_parse("", 0, &k, err, sizeof(err)) == -1);
    char *t = zx_aws_xml_text("<a> x &lt;&#65;&gt; </a>", 24, "a");
    CHECK(t && strcmp(t, "x <A>") == 0);
    free(t);
}

/* Random input from the parsers' own alphabet: no crash, no leak (ASan). */
static void test_random_input(void)
{
    static const char ini_abc[] = "[]=#; \n\t\rprofile ab";
    static const char xml_abc[] = "<>/&;#1 CredentialsAccessKeyIdExpirationCodeMessageError";
    unsigned seed = 12345;
    char buf[512], err[256];
    for (int round = 0; round < 3000; round++) {
        size_t n = (size_t)(rand_r(&seed) % sizeof(buf));
        int xml = round & 1;
        for (size_t i = 0; i < n; i++)
            buf[i] = xml ? xml_abc[rand_r(&seed) % (sizeof(xml_abc) - 1)]
                         : ini_abc[rand_r(&seed) % (sizeof(ini_abc) - 1)];
        if (xml) {
            zx_aws_cred k = {0};
            if (zx_aws_sts_parse(buf, n, &k, err, sizeof(err)) == 0)
                zx_aws_cred_clear(&k);
            free(zx_aws_xml_text(buf, n, "Code"));
        } else {
            zx_aws_ini *ini = zx_aws_ini_parse(buf, n, "r", err, sizeof(err));
            zx_aws_ini_get(ini, "profile a", "b");
            zx_aws_ini_free(ini);
        }
    }
}

int main(void)
{
    snprintf(home, sizeof(home), "/tmp/zx-aws-creds-XXXXXX");
    if (!mkdtemp(home))
        return 2;
    char p[400];
    snprintf(p, sizeof(p), "%s/.aws", home);
    mkdir(p, 0700);
    setenv("HOME", home, 1);
    srv_fd = listen_any(&srv_port);
    if (srv_fd < 0 || pthread_create(&srv_thread, NULL, server_main, NULL) != 0)
        return 2;

    test_ini();
    test_order();
    test_sts_parse();
    test_random_input();
    test_imds();
    test_ecs();
    test_sts();

    __atomic_store_n(&srv_stop, 1, __ATOMIC_SEQ_CST);
    pthread_join(srv_thread, NULL);
    close(srv_fd);
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", home);
    if (system(cmd) != 0)
        printf("could not remove %s\n", home);
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
