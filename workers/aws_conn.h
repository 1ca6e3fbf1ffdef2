/*
 * aws_conn.h — what a `kind: aws` connection (conf/config.h; its rows and
 * check in workers/sources/kinesis/kinesis_plugin.c) means to the AWS
 * module (common/aws_*): the credential chain's settings and an S3
 * client's.  Shared by the Kinesis source and the files destination's S3
 * side.  Pure: no request is made, no file read.
 */
#ifndef ZX_WORKERS_AWS_CONN_H
#define ZX_WORKERS_AWS_CONN_H

#include "common/aws_creds.h"
#include "common/aws_s3.h"
#include "conf/config.h"

/* The connection kind these settings come from. */
#define ZX_AWS_CONN_KIND "aws"

/* The credential chain's settings of connection c into *o (zeroed
 * first).  Its strings are c's: valid while c is. */
void zx_aws_conn_cred_opts(const zx_conf_connection *c, zx_aws_cred_opts *o);

/* An S3 client for connection c whose keys come from creds (borrowed: it
 * must outlive the client), http options from http (NULL: defaults).
 * Returns the client (zx_s3_free), or NULL with err (no region, a bad
 * endpoint, out of memory). */
zx_s3 *zx_aws_conn_s3(const zx_conf_connection *c, zx_aws_creds *creds,
                      const zx_http_opts *http, char *err, size_t errlen);

#endif
