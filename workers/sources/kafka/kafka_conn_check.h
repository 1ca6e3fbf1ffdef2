/*
 * kafka_conn_check.h — the check of a `kind: kafka` connection, the kafka
 * plug-in's check_connection (conf/plugin.h).
 */
#ifndef ZX_SOURCES_KAFKA_CONN_CHECK_H
#define ZX_SOURCES_KAFKA_CONN_CHECK_H

#include "conf/check.h"
#include "conf/config.h"

/* security against sasl and tls (each only with the security that uses
 * it; sasl then whole), tls.cert with tls.key, the TLS files made
 * absolute and (unless secrets are skipped) readable regular files, and
 * c->brokers_csv (owned by the configuration) from the brokers.  Returns
 * 0, or -1 when it reported an error through ck. */
int zx_kafka_check_connection(zx_cf_check *ck, zx_conf_connection *c);

#endif
