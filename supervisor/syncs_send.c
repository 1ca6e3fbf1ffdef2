/*
 * syncs_send.c — one-off sends (`zxctl send`): the machinery of a reverse
 * sync, run once, for a query and a destination given on the command
 * line, as the author whose `operators` list the invoking system user.
 *
 * A send is a transient pipeline (its own small segment, never in the
 * configuration, untouched by reloads) whose worker does one run with
 * ZX_RUN_ONEOFF: no stored hashes (nothing to compare with, nothing kept),
 * so upsert sends every row by key and mirror is refused.  Once the run
 * has ended and been answered, the transient pipeline is freed (tick).
 *
 * It must never: let a user send as an author that does not list them, or
 * write to a read_only connection.
 */
#include <errno.h>
#include <event2/bufferevent.h>
#include <jansson.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/fileroots.h"
#include "common/log.h"
#include "common/segment.h"
#include "common/timefmt.h"
#include "supervisor/jobs.h"
#include "workers/sources/source.h"
#include "conf/plugin.h"
#include "workers/destinations/files/files_formats.h"
#include "workers/destinations/files/files_opts.h"
#include "workers/syncs/sync_opts.h"

#define SEND_RING (1u << 20)

static json_t *err_obj(const char *msg)
{
    return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

static void free_conf(zx_conf_pipeline *pc)
{
    if (!pc)
        return;
    free(pc->name);
    free(pc->direction);
    free(pc->source);
    /* the sync's own options and the files destination's, by their rows */
    zx_conf_pipeline_free_own(pc);
    free(pc);
}

/* The author whose operators list the peer of bev, or NULL (msg says why). */
static const zx_conf_author *peer_author(sup *s, struct bufferevent *bev, char *msg,
                                         size_t len)
{
    struct ucred cr;
    socklen_t cl = sizeof(cr);
    int fd = bev ? (int)bufferevent_getfd(bev) : -1;
    if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0) {
        snprintf(msg, len, "cannot tell which user asks");
        return NULL;
    }
    struct passwd pw, *res = NULL;
    char buf[4096];
    if (getpwuid_r(cr.uid, &pw, buf, sizeof(buf), &res) != 0 || !res) {
        snprintf(msg, len, "user id %u has no name: no author lists it", (unsigned)cr.uid);
        return NULL;
    }
    for (size_t i = 0; i < s->conf->nauthors; i++) {
        const zx_conf_author *a = &s->conf->authors[i];
        for (size_t k = 0; k < a->noperators; k++)
            if (!strcmp(a->operators[k], pw.pw_name))
                return a;
    }
    snprintf(msg, len, "user %.64s is not an operator of any author: add `operators: [%.64s]` "
             "to the author whose rights its sends should have", pw.pw_name, pw.pw_name);
    return NULL;
}

static char *dupstr(const char *v)
{
    return v ? strdup(v) : NULL;
}

json_t *sup_sync_send(sup *s, struct bufferevent *bev, json_t *req)
{
    char msg[400];
    const char *query = json_string_value(json_object_get(req, "query"));
    const char *mode = json_string_value(json_object_get(req, "mode"));
    const char *conn = json_string_value(json_object_get(req, "connection"));
    const char *table = json_string_value(json_object_get(req, "table"));
    const char *path = json_string_value(json_object_get(req, "path"));
    const char *format = json_string_value(json_object_get(req, "format"));
    json_t *keys = json_object_get(req, "key");
    static const char *const modes[] = {"replace", "append", "upsert", "mirror"};
    int m = -1;
    for (int i = 0; mode && i < 4; i++)
        if (!strcmp(mode, modes[i]))
            m = i;
    if (!query || !*query)
        return err_obj("send needs a query");
    if (m < 0)
        return err_obj("send needs a mode: replace, append or upsert");
    if (m == 3)
        return err_obj("mode mirror needs what earlier runs sent: configure a sync "
                       "(--print-sync shows its YAML) and run it with zxctl run");
    if (!conn == !path)
        return err_obj("send needs --to CONNECTION:TABLE or --to files:PATH");
    if (conn && (!table || !*table))
        return err_obj("--to CONNECTION:TABLE needs a table");
    if (path && (path[0] != '/' || !zx_file_format_find(format))) {
        char fmts[100];
        snprintf(msg, sizeof(msg), "--to files:PATH needs an absolute path and a format (%s: "
                 "from the extension, or --format)", zx_file_format_list(fmts, sizeof(fmts)));
        return err_obj(msg);
    }
    if (keys && (!json_is_array(keys) || json_array_size(keys) > 64))
        return err_obj("key: a list of at most 64 column names");
    if (m == 2 && !json_array_size(keys))
        return err_obj("mode upsert needs --key: the result columns that identify a row");
    const zx_conf_connection *cn = NULL;
    if (conn) {
        cn = zx_conf_find_connection(s->conf, conn);
        if (!cn || !zx_plugin_for_kind(ZX_PLUGIN_DESTINATION, cn->kind)) {
            char kinds[100];
            snprintf(msg, sizeof(msg), "no connection %.64s of kind %s in the configuration",
                     conn, zx_plugin_kinds(ZX_PLUGIN_DESTINATION, kinds, sizeof(kinds)));
            return err_obj(msg);
        }
        if (cn->read_only) {
            snprintf(msg, sizeof(msg), "connection %.64s is read_only: zx never writes to it",
                     conn);
            return err_obj(msg);
        }
    }
    const zx_conf_author *au = peer_author(s, bev, msg, sizeof(msg));
    if (!au)
        return err_obj(msg);
    char name[64];
    snprintf(name, sizeof(name), "zx-send-%llu", (unsigned long long)(s->last_run_id + 1));
    /* where a sync could write, and not over another sync's output */
    char *npath = path ? zx_fr_normalise(path) : NULL;
    if (path) {
        char ferr[1500], full[1600];
        if (!npath)
            return err_obj("out of memory");
        if (zx_conf_check_files_path(s->conf, name, npath, format, ferr, sizeof(ferr)) < 0) {
            free(npath);
            snprintf(full, sizeof(full), "--to files:%s", ferr);
            return err_obj(full);
        }
    }

    zx_conf_pipeline *pc = calloc(1, sizeof(*pc));
    if (!pc) {
        free(npath);
        return err_obj("out of memory");
    }
    pc->name = strdup(name);
    pc->direction = strdup("out");
    pc->source = strdup("sync");
    pc->plugin = zx_plugin_of_pipeline("sync");
    zx_sync_opts *so = calloc(1, sizeof(*so));   /* its own options, freed with pc */
    pc->own = so;
    if (so) {
        so->author = strdup(au->name);
        so->query = strdup(query);
        so->mode = m;
        so->dest_connection = dupstr(conn);
        so->dest_table = dupstr(table);
        so->batch_rows = 10000;
    }
    /* the destination plug-in, as the loader would pick it: files, or the
     * connection's kind's */
    pc->dest_plugin = path ? zx_plugin_find(ZX_PLUGIN_DESTINATION, "files")
                           : zx_plugin_for_kind(ZX_PLUGIN_DESTINATION, cn->kind);
    zx_files_opts *fo = path ? calloc(1, sizeof(*fo)) : NULL;
    pc->dest_own = fo;
    if (fo) {
        fo->path = npath;
        fo->format = dupstr(format);
        fo->compression = strdup("zstd");
    } else {
        free(npath);
    }
    pc->ring_size = SEND_RING;
    pc->shm_size = ZX_SEG_MAX_BYTES(0, SEND_RING);
    pc->body_limit = s->conf->http.max_body_size;
    pc->auth = au;
    pc->dest_conn = cn;
    int bad = !pc->name || !pc->direction || !pc->source || !pc->plugin || !so ||
              !so->author || !so->query || (conn && (!so->dest_connection || !so->dest_table)) ||
              !pc->dest_plugin || (path && (!fo || !fo->path || !fo->format ||
                                            !fo->compression));
    if (!bad && json_array_size(keys)) {
        so->key_cols = calloc(json_array_size(keys), sizeof(char *));
        bad |= !so->key_cols;
        for (size_t i = 0; !bad && i < json_array_size(keys); i++) {
            const char *k = json_string_value(json_array_get(keys, i));
            if (!k || !*k || strlen(k) > 63) {
                free_conf(pc);
                return err_obj("key: each column name is 1 to 63 bytes");
            }
            bad |= !(so->key_cols[so->nkey_cols++] = strdup(k));
        }
    }
    if (bad) {
        free_conf(pc);
        return err_obj("out of memory");
    }
    spipe *p = sup_find_pipe(s, name) ? NULL : sup_pipe_new(s, pc, msg, sizeof(msg));
    if (!p) {
        free_conf(pc);
        return err_obj(msg[0] ? msg : "a pipeline of that name exists");
    }
    p->owned_conf = pc;
    p->worker.want = 0;
    zx_info("event=send sync=%s author=%s mode=%s to=\"%s%s%s\"", name, au->name, mode,
            conn ? conn : "files", conn ? ":" : ":", conn ? table : path);
    return sup_sync_queue_oneoff(s, bev, p);
}

void sup_sync_sends_tick(sup *s)
{
    for (size_t i = 0; i < s->npipes; i++) {
        spipe *p = s->pipes[i];
        if (!p->owned_conf || p->run || p->worker.pid > 0 || !sup_sync_oneoff_done(s, p))
            continue;
        zx_conf_pipeline *pc = p->owned_conf;
        sup_pipe_free(s, p);
        free_conf(pc);
        i--;
    }
}
