/*
 * control.h — the supervisor's top floor: the control socket
 * (proto/control.h) and its commands, one row each in one command table
 * (commands.c), the way Redis keeps its commands: a name, a handler,
 * flags and a line of help.  Handlers call the floors below (jobs.h,
 * sup.h); nothing below calls them.
 *
 * Every command needs an allowed peer: the socket checks the client's
 * credentials (same user, root, or server.control_group) before it reads
 * a request, so no row can skip it.
 */
#ifndef ZX_SUPERVISOR_CONTROL_H
#define ZX_SUPERVISOR_CONTROL_H

#include <event2/bufferevent.h>
#include <jansson.h>

#include "supervisor/sup.h"

/* A command row's flags. */
enum {
    /* it needs "name": without one the answer is "<command> needs a name" */
    SUP_CMD_NAME = 1u << 0,
    /* it changes nothing: it reads state (status, runs...) */
    SUP_CMD_READ_ONLY = 1u << 1,
    /* its answer may come long after the request (a run, a verify): while
     * the client waits, the request timeout does not apply */
    SUP_CMD_LONG = 1u << 2,
    /* the handler answers and finishes the connection itself, always (it
     * returns NULL): reload, feed */
    SUP_CMD_OWNS_CONN = 1u << 3,
};

/* A command's handler: bev is the client, cmd the command's name, name
 * the request's "name" (NULL when absent; never NULL with SUP_CMD_NAME),
 * req the whole request (borrowed).  Returns the answer (taken; NULL from
 * json_pack answers "cannot encode"), or NULL when bev is answered later
 * (the job keeps bev until it answers it or is told it left). */
typedef json_t *(*sup_cmd_fn)(sup *s, struct bufferevent *bev, const char *cmd,
                              const char *name, json_t *req);

typedef struct sup_command {
    const char *name;        /* the request's "cmd" */
    sup_cmd_fn fn;
    unsigned flags;          /* SUP_CMD_* */
    const char *help;        /* one line: what it does */
} sup_command;

/* The command table (commands.c): the built-in rows, then a row for each
 * plug-in's own command (conf/plugin.h, zx_plugin_admin: flag
 * SUP_CMD_NAME, help its summary), ended by a row whose name is NULL.
 * Static: built at the first call, never freed. */
const sup_command *sup_command_table(void);
/* The row of command cmd, or NULL when there is none. */
const sup_command *sup_command_find(const char *cmd);

/* status.c: the read-only commands `status` and `checkpoints NAME`. */
json_t *sup_cmd_status(sup *s, struct bufferevent *bev, const char *cmd, const char *name,
                       json_t *req);
/* `progress NAME`: {"ok":true, "pipeline":N, "progress":{...}|null
 * (sup_progress_json); a sync's also "run":ID|null (its run now) and
 * "state" (that run's, or "idle")}. */
json_t *sup_cmd_progress(sup *s, struct bufferevent *bev, const char *cmd, const char *name,
                         json_t *req);
json_t *sup_cmd_checkpoints(sup *s, struct bufferevent *bev, const char *cmd,
                            const char *name, json_t *req);

/* control.c: listen on server.control_socket (mode 0600, or 0660 for
 * server.control_group) and answer requests from the loop.  0, or -1
 * with the reason in err. */
int sup_control_open(sup *s, char *err, size_t errlen);
/* Stop listening and remove the socket file. */
void sup_control_close(sup *s);

#endif
