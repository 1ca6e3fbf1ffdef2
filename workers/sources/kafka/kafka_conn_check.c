/*
 * kafka_conn_check.c — the check of a `kind: kafka` connection
 * (kafka_conn_check.h): what its option rows (kafka_plugin.c) cannot say
 * one by one.
 *
 * It must never: open anything but the TLS files it names (opened and
 * closed at once, to report a missing or unreadable one; not with
 * ZX_CONF_SKIP_SECRETS, as zxctl may run as another user than zxd).
 */
#include "workers/sources/kafka/kafka_conn_check.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Make the TLS path *f absolute and, unless secrets are skipped, check
 * that it is a readable regular file. */
static void tls_file(zx_cf_check *ck, const zx_conf_connection *c, const char *opt, char **f)
{
    char name[16];
    struct stat st;
    int fd;

    snprintf(name, sizeof(name), "tls.%s", opt);
    if (!*f || zx_check_abspath(ck, name, f) < 0 ||
        (zx_check_flags(ck) & ZX_CONF_SKIP_SECRETS))
        return;
    fd = open(*f, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        zx_check_error(ck, name, "connections.%s: tls.%s: cannot read %s: %s", c->name, opt,
                       *f, strerror(errno));
    else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        zx_check_error(ck, name, "connections.%s: tls.%s: %s is not a regular file", c->name,
                       opt, *f);
    if (fd >= 0)
        close(fd);
}

/* sasl and tls against security. */
static void check_security(zx_cf_check *ck, const zx_conf_connection *c)
{
    static const char *const sasl_req[] = {"sasl.mechanism", "sasl.username",
                                           "sasl.password", NULL};
    int is_sasl = !strncmp(c->security, "sasl_", 5);
    int is_tls = !strcmp(c->security, "ssl") || !strcmp(c->security, "sasl_ssl");
    int sasl = zx_check_written(ck, "sasl");

    if (sasl && !is_sasl)
        zx_check_error(ck, "sasl", "connections.%s: sasl needs security: sasl_plaintext or "
                       "sasl_ssl (security is %s)", c->name, c->security);
    if (is_sasl && !sasl)
        zx_check_error(ck, "security", "connections.%s: security: %s needs sasl with "
                       "mechanism, username and password", c->name, c->security);
    for (size_t i = 0; is_sasl && sasl && sasl_req[i]; i++)
        if (!zx_check_written(ck, sasl_req[i]))
            zx_check_error(ck, "sasl", "connections.%s: sasl: missing required field '%s'",
                           c->name, sasl_req[i] + 5);
    if (zx_check_written(ck, "tls") && !is_tls)
        zx_check_error(ck, "tls", "connections.%s: tls needs security: ssl or sasl_ssl "
                       "(security is %s)", c->name, c->security);
}

int zx_kafka_check_connection(zx_cf_check *ck, zx_conf_connection *c)
{
    int cert = zx_check_written(ck, "tls.cert"), key = zx_check_written(ck, "tls.key");
    size_t i, len = 0;

    if (c->security && !zx_check_refused(ck, "security"))
        check_security(ck, c);
    if (!cert != !key)
        zx_check_error(ck, cert ? "tls.cert" : "tls.key", "connections.%s: tls.cert and "
                       "tls.key go together: add tls.%s", c->name, cert ? "key" : "cert");
    if (zx_check_written(ck, "tls.key_password") && !key)
        zx_check_error(ck, "tls.key_password", "connections.%s: tls.key_password needs "
                       "tls.key", c->name);
    tls_file(ck, c, "ca", &c->tls_ca);
    tls_file(ck, c, "cert", &c->tls_cert);
    tls_file(ck, c, "key", &c->tls_key);

    for (i = 0; i < c->nbrokers; i++)
        len += strlen(c->brokers[i]) + 1;
    if (c->nbrokers) {
        if (!(c->brokers_csv = malloc(len))) {
            zx_check_error(ck, "brokers", "out of memory");
            return -1;
        }
        c->brokers_csv[0] = '\0';
        for (i = 0, len = 0; i < c->nbrokers; i++)
            len += (size_t)sprintf(c->brokers_csv + len, "%s%s", i ? "," : "", c->brokers[i]);
    }
    return 0;
}
