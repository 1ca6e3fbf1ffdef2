/*
 * zxctl.c — the operator's client for zxd's control socket.
 *
 * Sends one request line (proto/control.h) to the daemon's Unix socket,
 * reads the answer line and prints it for a human (aligned tables, key:
 * value lines) or, with --json, exactly as the daemon sent it.  `feed`
 * reads event lines until the daemon closes, or forever with --follow.
 * Exit codes are the ZX_EXIT_* of proto/control.h, so scripts can rely on
 * them: 0 ok, 1 the daemon answered ok:false, 2 usage error, 3 daemon
 * unreachable or answer unreadable, 4 `verify` found differences.
 *
 * The socket is found with -s PATH, or -c CONFIG (its server.control_socket),
 * or $ZX_CONFIG (a config path), or $ZXCTL_SOCKET, or the default
 * configuration ZXCTL_DEFAULT_CONFIG if that file exists, or ./var/zxd.sock
 * if that exists; when none gives a path, the error lists every place
 * looked at.  Errors on the socket say where its path came from.
 *
 * This program must never: need or read a secret for the daemon's commands
 * (the config is loaded with ZX_CONF_SKIP_SECRETS; `secret` alone reads
 * the secrets' key, zxctl_secret.c), block forever on a daemon that does not answer
 * (every wait has a deadline, except the stream of `feed --follow`), die of
 * SIGPIPE, or print a control character it received in human output (the
 * daemon's strings are shown with control bytes replaced by '?'; --json
 * prints the answer as sent, where JSON itself escapes them).
 *
 * The plug-ins' own commands (conf/plugin.h, zx_plugin_admin: postgres's
 * drop-slot), their options, help and timeouts come from the registry
 * (zx_plugins); nothing of them is written here.
 *
 * Socket I/O with deadlines is in zxctl_io.c, the human output in
 * zxctl_print.c (shared declarations: zxctl_int.h).
 */
#include "zxctl/zxctl_int.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/secret_store.h"
#include "conf/config.h"
#include "conf/lineage.h"
#include "conf/plugin.h"
#include "proto/control.h"
#include "workers/destinations/files/files_formats.h"

#define ZXCTL_DEFAULT_SOCKET "./var/zxd.sock"
/* Set by meson to <sysconfdir>/zx/zx.yaml (/etc/zx/zx.yaml with prefix /usr),
 * where `meson install` puts the example configuration's directory. */
#ifndef ZXCTL_DEFAULT_CONFIG
#define ZXCTL_DEFAULT_CONFIG "/etc/zx/zx.yaml"
#endif
#define ZXCTL_TIMEOUT_RELOAD 60.0   /* zxd answers reload once applied */
#define ZXCTL_TIMEOUT_OTHER 10.0
#define ZXCTL_TIMEOUT_TEST 30.0     /* zxd answers test once the prober is done */
#define ZXCTL_ADMIN_SLACK 15       /* a plug-in's command: its timeout_s and this */
#define ZXCTL_ADMIN_OPTS_MAX 16    /* plug-ins' command options given at once */
#define ZXCTL_TIMEOUT_VERIFY 630.0  /* zxd answers verify once done (<= 610 s) */

/* zxctl's help, in parts: the plug-ins' own commands (conf/plugin.h,
 * zx_plugin_admin), their options and timeouts go between them
 * (zxctl_usage). */
static const char zxctl_usage_head[] =
    "usage: zxctl [-s SOCKET | -c CONFIG] [--json] [--timeout SECONDS] COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  status             processes and pipelines: pid, state, restarts, rows,\n"
    "                     rejects, last error\n"
    "  reload             re-read the configuration; prints added/changed/removed/\n"
    "                     unchanged pipelines, or every error\n"
    "  restart NAME       restart a pipeline, or the writer or gateway process\n"
    "  stop NAME          stop a pipeline (it stays stopped until `start`)\n"
    "  start NAME         start a stopped or failed pipeline\n"
    "  checkpoints NAME   the stored positions, schema and counters of a pipeline\n"
    "  progress NAME      a pipeline's work in progress (a sync run, an initial\n"
    "                     copy): rows done and expected, rows/s, time left\n"
    "  test NAME          connect with a pipeline's or a connection's settings and\n"
    "                     say what works (e.g. a topic's partitions) or exactly\n"
    "                     what failed (unreachable, TLS, authentication, ...);\n"
    "                     `test workspace`: what zx needs of the workspace\n";
static const char zxctl_usage_commands[] =
    "  verify NAME [--table T] [--repair]\n"
    "                     compare a postgres pipeline's mirrors with the source\n"
    "                     (read only, by key, re-checked once the mirror caught\n"
    "                     up); lists the keys that differ: missing or extra in\n"
    "                     the mirror, or which columns differ; exit 4 if any;\n"
    "                     --repair: the pipeline re-copies those keys (exit 4\n"
    "                     only if some still differ)\n"
    "  run NAME [--wait] [--full]\n"
    "                     run a reverse sync now (queued behind its run in\n"
    "                     progress); --wait: until it ends, exit 1 if it failed,\n"
    "                     showing its progress meanwhile;\n"
    "                     --full: send every row, not only the changed ones\n"
    "  preview NAME       what a run of a sync would send: rows to insert, update\n"
    "                     and delete, and a sample; sends nothing\n"
    "  runs NAME [--limit N]\n"
    "                     the history of a sync's runs, newest first, then the\n"
    "                     preview (and sample) of each run awaiting approval\n"
    "  send --query SQL --to DEST --mode MODE [--key COLS] [--format F]\n"
    "       [--print-sync NAME]\n"
    "                     run a query's result once to DEST: CONNECTION:TABLE (a\n"
    "                     configured connection) or files:PATH (its format by\n"
    "                     the extension or --format: see below); MODE replace,\n"
    "                     append or upsert (with --key id,...); as the author\n"
    "                     whose `operators` list you; --print-sync prints the\n"
    "                     YAML of the same sync, to keep it\n"
    "  approve RUN        start a run an agent asked for (shows its preview)\n"
    "  reject RUN         refuse it\n"
    "  feed [--follow]    recent events, then (with --follow) new ones as they happen\n"
    "  secret init | set NAME | list | delete NAME | rotate-key\n"
    "                     the encrypted secrets ${secret:NAME} values read (the\n"
    "                     files of -c CONFIG: server.secret_key_file and\n"
    "                     server.secret_store; zxd need not run): init makes the\n"
    "                     key; set reads the value from standard input; list\n"
    "                     shows names only; rotate-key encrypts all again under\n"
    "                     a new key; zxd reads them at start and reload\n"
    "  lineage [NAME] [--upstream | --downstream] [--format F]\n"
    "                     where data comes from and goes to, from the\n"
    "                     configuration (-c CONFIG; zxd need not run): upstream\n"
    "                     objects, streams, workspace tables, syncs and their\n"
    "                     destinations; NAME (a pipeline or table) keeps what is\n"
    "                     connected to it, or only what flows into it\n"
    "                     (--upstream) or out of it (--downstream); F: text\n"
    "                     (default), json, dot (Graphviz) or mermaid\n"
    "  help               this text\n"
    "\n"
    "options:\n"
    "  -s, --socket PATH  the control socket of zxd\n"
    "  -c, --config PATH  read the socket path from this configuration file\n"
    "  --json             print the daemon's answer as JSON, one object a line\n";
static const char zxctl_usage_options[] =
    "  --table T          verify: only this table of the pipeline\n"
    "  --timeout SECONDS  how long to wait for zxd (default 60 for reload, 30 for\n"
    "                     test, ";
static const char zxctl_usage_tail[] =
    "630 for verify, 10 otherwise;\n"
    "                     0 = forever);\n"
    "                     feed --follow waits forever once the daemon has\n"
    "                     accepted the request\n"
    "\n"
    "Without -s or -c the socket is taken from $ZX_CONFIG (a configuration\n"
    "file), else $ZXCTL_SOCKET, else from " ZXCTL_DEFAULT_CONFIG " if it exists,\n"
    "else " ZXCTL_DEFAULT_SOCKET " if it exists.\n"
    "\n"
    "exit status: 0 ok, 1 zxd refused the request, 2 usage error,\n"
    "3 zxd unreachable (no socket, refused, timed out, unreadable answer),\n"
    "4 verify found keys that differ (with --repair: that still differ).\n";

#define ZXCTL_HELP_COL 21   /* where a command's or option's help starts */

/* Print a's help paragraph, each line indented to ZXCTL_HELP_COL. */
static void zxctl_usage_para(const char *help, FILE *f)
{
    for (const char *l = help; l && *l;) {
        const char *e = strchr(l, '\n');
        int n = e ? (int)(e - l) : (int)strlen(l);
        fprintf(f, "%*s%.*s\n", ZXCTL_HELP_COL, "", n, l);
        l = e ? e + 1 : l + n;
    }
}

/* zxctl's help, with the plug-ins' own commands from the registry, and
 * the file formats of `send --to files:` (the files destination's table,
 * files_formats.h). */
static void zxctl_usage(FILE *f)
{
    fputs(zxctl_usage_head, f);
    for (size_t i = 0; i < zx_nplugins; i++) {
        const zx_plugin_admin *a = zx_plugins[i]->admin;
        if (!a)
            continue;
        fprintf(f, "  %s\n", a->usage);
        zxctl_usage_para(a->help, f);
    }
    fputs(zxctl_usage_commands, f);
    for (size_t i = 0; i < zx_nplugins; i++) {
        const zx_plugin_admin *a = zx_plugins[i]->admin;
        for (const zx_plugin_admin_opt *o = a ? a->options : NULL; o && o->name; o++) {
            char left[64];
            snprintf(left, sizeof left, "--%s %s", o->name, o->metavar);
            fprintf(f, "  %-*s%s\n", ZXCTL_HELP_COL - 2, left, o->help);
        }
    }
    fputs(zxctl_usage_options, f);
    for (size_t i = 0; i < zx_nplugins; i++) {
        const zx_plugin_admin *a = zx_plugins[i]->admin;
        if (a)
            fprintf(f, "%d for %s, ", a->timeout_s + ZXCTL_ADMIN_SLACK, a->command);
    }
    fputs(zxctl_usage_tail, f);
    char fmts[100];
    fprintf(f, "\nfile formats of send --to files: (--format): %s.\n",
            zx_file_format_list(fmts, sizeof(fmts)));
}

typedef struct zxctl_opts {
    const char *socket_path;  /* -s */
    const char *config_path;  /* -c */
    int json;
    double timeout;           /* seconds; < 0 = the command's default */
    int follow;
    /* a plug-in's command's options (zx_plugin_admin_opt): the option
     * (its row) and the value given */
    const zx_plugin_admin_opt *aopt[ZXCTL_ADMIN_OPTS_MAX];
    const char *aval[ZXCTL_ADMIN_OPTS_MAX];
    size_t naopt;
    const char *table;        /* --table (verify) */
    int wait, full;           /* run --wait, run --full */
    int repair;               /* verify --repair */
    int limit;                /* runs --limit N (0: the daemon's default) */
    int lineage_dir;          /* lineage: ZX_LN_AROUND, --upstream ZX_LN_UP,
                                 --downstream ZX_LN_DOWN */
    const char *query, *to, *mode, *key, *format, *print_sync;   /* send */
    const char *cmd;
    const char *name;         /* NAME argument, or NULL */
    const char *secret_name;  /* secret set|delete NAME (o->name: the verb) */
} zxctl_opts;

/* ---------------------------------------------------------------- helpers */

void zxctl_oom(void)
{
    fputs("zxctl: out of memory\n", stderr);
    exit(ZX_EXIT_DAEMON_ERROR);
}

void *zxctl_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        zxctl_oom();
    return q;
}

char *zxctl_xstrdup(const char *s)
{
    char *d = strdup(s);
    if (!d)
        zxctl_oom();
    return d;
}

/* ------------------------------------------------------------ arguments */

static int zxctl_usage_error(const char *fmt, ...)
{
    va_list ap;
    fputs("zxctl: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\n", stderr);
    zxctl_usage(stderr);
    return ZX_EXIT_USAGE;
}

static int zxctl_needs_name(const char *cmd)
{
    return !strcmp(cmd, "restart") || !strcmp(cmd, "stop") || !strcmp(cmd, "start") ||
           !strcmp(cmd, "checkpoints") || !strcmp(cmd, "test") || !strcmp(cmd, "progress") ||
           zx_plugin_admin_find(cmd, NULL) ||
           !strcmp(cmd, "run") || !strcmp(cmd, "preview") || !strcmp(cmd, "runs") ||
           !strcmp(cmd, "approve") || !strcmp(cmd, "reject") || !strcmp(cmd, "verify");
}

static int zxctl_known(const char *cmd)
{
    return zxctl_needs_name(cmd) || !strcmp(cmd, "status") || !strcmp(cmd, "reload") ||
           !strcmp(cmd, "feed") || !strcmp(cmd, "help") || !strcmp(cmd, "send") ||
           !strcmp(cmd, "secret") || !strcmp(cmd, "lineage");
}

/* The option called name of the plug-in's command cmd, or NULL. */
static const zx_plugin_admin_opt *zxctl_admin_opt_of(const char *cmd, const char *name)
{
    const zx_plugin_admin *a = zx_plugin_admin_find(cmd, NULL);
    for (const zx_plugin_admin_opt *x = a ? a->options : NULL; x && x->name; x++)
        if (!strcmp(x->name, name))
            return x;
    return NULL;
}

/* argv[*i] may be an option of a plug-in's command (--NAME VALUE or
 * --NAME=VALUE, zx_plugin_admin_opt): kept in o (the last one given
 * wins), *i past its value.  -1 ok, or an exit code (usage printed). */
static int zxctl_admin_option(int argc, char **argv, int *i, zxctl_opts *o)
{
    const char *a = argv[*i];
    for (size_t p = 0; p < zx_nplugins; p++) {
        const zx_plugin_admin *ad = zx_plugins[p]->admin;
        for (const zx_plugin_admin_opt *x = ad ? ad->options : NULL; x && x->name; x++) {
            size_t ll = strlen(x->name);
            const char *val;
            if (strncmp(a, "--", 2) || strncmp(a + 2, x->name, ll))
                continue;
            if (a[2 + ll] == '=') {
                val = a + 3 + ll;
            } else if (a[2 + ll] == '\0') {
                if (*i + 1 >= argc)
                    return zxctl_usage_error("option %s needs a value", a);
                val = argv[++*i];
            } else {
                continue;
            }
            if (!*val)
                return zxctl_usage_error("--%s needs a %s", x->name, x->noun);
            size_t k = 0;
            while (k < o->naopt && strcmp(o->aopt[k]->name, x->name))
                k++;
            if (k == ZXCTL_ADMIN_OPTS_MAX)
                return zxctl_usage_error("too many options");
            if (k == o->naopt)
                o->naopt++;
            o->aopt[k] = x;
            o->aval[k] = val;
            return -1;
        }
    }
    return zxctl_usage_error("unknown option %s", a);
}

/* The plug-ins' command options given go with o->cmd: -1, or an exit
 * code (usage printed: "--connection goes with drop-slot only"). */
static int zxctl_admin_options_check(const zxctl_opts *o)
{
    for (size_t k = 0; k < o->naopt; k++)
        if (zxctl_admin_opt_of(o->cmd, o->aopt[k]->name) == NULL) {
            const zx_plugin_admin *owner = NULL;
            for (size_t i = 0; i < zx_nplugins && !owner; i++)
                if (zx_plugins[i]->admin &&
                    zxctl_admin_opt_of(zx_plugins[i]->admin->command, o->aopt[k]->name))
                    owner = zx_plugins[i]->admin;
            return zxctl_usage_error("--%s goes with %s only", o->aopt[k]->name,
                                     owner ? owner->command : "?");
        }
    return -1;
}

/* Parse argv into o.  Options may come before or after the command
 * (`--` ends them).  Returns -1 ok, or an exit code (usage printed). */
static int zxctl_parse_args(int argc, char **argv, zxctl_opts *o)
{
    const char *pos[3];
    size_t npos = 0;
    int dashdash = 0;
    o->timeout = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        if (dashdash || a[0] != '-' || a[1] == '\0') {
            if (npos == 3)
                return zxctl_usage_error("too many arguments");
            pos[npos++] = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            dashdash = 1;
            continue;
        }
        if (!strcmp(a, "--json")) {
            o->json = 1;
            continue;
        }
        if (!strcmp(a, "--follow") || !strcmp(a, "-f")) {
            o->follow = 1;
            continue;
        }
        if (!strcmp(a, "--wait")) {
            o->wait = 1;
            continue;
        }
        if (!strcmp(a, "--repair")) {
            o->repair = 1;
            continue;
        }
        if (!strcmp(a, "--full")) {
            o->full = 1;
            continue;
        }
        if (!strcmp(a, "--upstream") || !strcmp(a, "--downstream")) {
            int d = a[2] == 'u' ? ZX_LN_UP : ZX_LN_DOWN;
            if (o->lineage_dir && o->lineage_dir != d)
                return zxctl_usage_error("--upstream and --downstream cannot be used together");
            o->lineage_dir = d;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            o->cmd = "help";
            return -1;
        }
        /* options with a value: -s X, -sX, --socket X, --socket=X, ... */
        const char *opt = NULL;
        static const char *const longs[][2] = {
            { "--socket", "-s" }, { "--config", "-c" }, { "--timeout", NULL },
            { "--limit", NULL }, { "--query", NULL },
            { "--to", NULL }, { "--mode", NULL }, { "--key", NULL }, { "--format", NULL },
            { "--print-sync", NULL }, { "--table", NULL } };
        for (size_t k = 0; k < sizeof(longs) / sizeof(longs[0]) && !opt; k++) {
            size_t ll = strlen(longs[k][0]);
            if (!strcmp(a, longs[k][0]) || (longs[k][1] && !strcmp(a, longs[k][1]))) {
                opt = longs[k][0];
                if (i + 1 >= argc)
                    return zxctl_usage_error("option %s needs a value", a);
                val = argv[++i];
            } else if (!strncmp(a, longs[k][0], ll) && a[ll] == '=') {
                opt = longs[k][0];
                val = a + ll + 1;
            } else if (longs[k][1] && !strncmp(a, longs[k][1], 2)) {
                opt = longs[k][0];
                val = a + 2;
            }
        }
        if (!opt) {
            int r = zxctl_admin_option(argc, argv, &i, o);
            if (r == -1)
                continue;
            return r;
        }
        if (!strcmp(opt, "--socket")) {
            if (!*val)
                return zxctl_usage_error("-s needs a socket path");
            o->socket_path = val;
        } else if (!strcmp(opt, "--config")) {
            if (!*val)
                return zxctl_usage_error("-c needs a configuration path");
            o->config_path = val;
        } else if (!strcmp(opt, "--query")) {
            o->query = val;
        } else if (!strcmp(opt, "--to")) {
            o->to = val;
        } else if (!strcmp(opt, "--mode")) {
            o->mode = val;
        } else if (!strcmp(opt, "--key")) {
            o->key = val;
        } else if (!strcmp(opt, "--format")) {
            o->format = val;
        } else if (!strcmp(opt, "--print-sync")) {
            o->print_sync = val;
        } else if (!strcmp(opt, "--limit")) {
            char *end;
            long v = strtol(val, &end, 10);
            if (!*val || *end || v < 1 || v > 200)
                return zxctl_usage_error("--limit wants 1 to 200 runs, not '%s'", val);
            o->limit = (int)v;
        } else if (!strcmp(opt, "--table")) {
            if (!*val)
                return zxctl_usage_error("--table needs a table name");
            o->table = val;
        } else {
            char *end;
            errno = 0;
            double t = strtod(val, &end);
            if (!*val || *end || errno || !isfinite(t) || t < 0 || t > 31536000)
                return zxctl_usage_error("--timeout wants seconds (0 = forever), not '%s'",
                                         val);
            o->timeout = t;
        }
    }
    if (o->socket_path && o->config_path)
        return zxctl_usage_error("-s and -c cannot be used together");
    if (npos == 0)
        return zxctl_usage_error("no command given");
    o->cmd = pos[0];
    if (!zxctl_known(o->cmd))
        return zxctl_usage_error("unknown command '%s'", o->cmd);
    if (!strcmp(o->cmd, "secret")) {
        const char *v = npos > 1 ? pos[1] : "";
        int named = !strcmp(v, "set") || !strcmp(v, "delete");
        if (strcmp(v, "init") && strcmp(v, "list") && strcmp(v, "rotate-key") && !named)
            return zxctl_usage_error("secret wants init, set NAME, list, delete NAME or "
                                     "rotate-key");
        if (npos != (size_t)(named ? 3 : 2))
            return zxctl_usage_error(named ? "secret %s takes one NAME (the value is read "
                                     "from standard input)" : "secret %s takes no NAME", v);
        if (named && !zx_ss_name_ok(pos[2]))
            return zxctl_usage_error("a secret's name is letters, digits, '_', '-' and '.'");
        if (o->socket_path)
            return zxctl_usage_error("secret works on the files of a configuration (-c), "
                                     "not through the socket (-s)");
        o->name = v;
        o->secret_name = named ? pos[2] : NULL;
    } else if (!strcmp(o->cmd, "lineage")) {
        if (npos > 2)
            return zxctl_usage_error("lineage takes at most one NAME");
        o->name = npos > 1 && *pos[1] ? pos[1] : NULL;
        if (o->lineage_dir && !o->name)
            return zxctl_usage_error("--upstream and --downstream need a NAME");
        if (o->json && o->format && strcmp(o->format, "json"))
            return zxctl_usage_error("--json and --format %s cannot be used together",
                                     o->format);
        if (o->format && !zx_lineage_format_ok(o->format))
            return zxctl_usage_error("lineage --format wants text, json, dot or mermaid, "
                                     "not '%s'", o->format);
        if (o->socket_path)
            return zxctl_usage_error("lineage reads a configuration (-c), not the socket (-s)");
    } else if (zxctl_needs_name(o->cmd)) {
        if (npos < 2 || !*pos[1])
            return zxctl_usage_error("%s needs a NAME", o->cmd);
        o->name = pos[1];
        if (npos > 2)
            return zxctl_usage_error("%s takes one NAME", o->cmd);
    } else if (npos > 1) {
        return zxctl_usage_error("%s takes no argument", o->cmd);
    }
    if (o->lineage_dir && strcmp(o->cmd, "lineage"))
        return zxctl_usage_error("--upstream and --downstream go with lineage only");
    if (o->follow && strcmp(o->cmd, "feed"))
        return zxctl_usage_error("--follow goes with feed only");
    int arc = zxctl_admin_options_check(o);
    if (arc >= 0)
        return arc;
    if ((o->wait || o->full) && strcmp(o->cmd, "run"))
        return zxctl_usage_error("--wait and --full go with run only");
    if ((o->table || o->repair) && strcmp(o->cmd, "verify"))
        return zxctl_usage_error("--table and --repair go with verify only");
    if (o->limit && strcmp(o->cmd, "runs"))
        return zxctl_usage_error("--limit goes with runs only");
    int sendopt = o->query || o->to || o->mode || o->key || o->print_sync ||
                  (o->format && strcmp(o->cmd, "lineage"));
    if (sendopt && strcmp(o->cmd, "send"))
        return zxctl_usage_error("--query, --to, --mode, --key, --format and --print-sync go "
                                 "with send only (--format also with lineage)");
    if (!strcmp(o->cmd, "send") && (!o->query || !o->to || !o->mode))
        return zxctl_usage_error("send needs --query, --to and --mode");
    return -1;
}

/* Where the socket path came from, for messages ("-s", "$ZXCTL_SOCKET",
 * "server.control_socket of zx.yaml (-c)"); set by zxctl_socket_path. */
static char zxctl_origin[512];

/* Nothing names the socket: say where zxctl looked and what to give it.
 * Returns ZX_EXIT_UNREACHABLE (like a socket that is not there). */
static int zxctl_not_found(void)
{
    fprintf(stderr,
            "zxctl: cannot find zxd's control socket; looked at:\n"
            "  -s SOCKET / -c CONFIG: not given\n"
            "  $ZX_CONFIG (a configuration file): not set\n"
            "  $ZXCTL_SOCKET (a socket path): not set\n"
            "  %s (the default configuration): no such file\n"
            "  %s (the default socket): no such file\n"
            "give the configuration zxd runs with, e.g.\n"
            "  zxctl -c conf/zx.example.yaml status   (or export ZX_CONFIG=/path/to/zx.yaml)\n"
            "or its socket: zxctl -s /path/to/zxd.sock status\n",
            ZXCTL_DEFAULT_CONFIG, ZXCTL_DEFAULT_SOCKET);
    return ZX_EXIT_UNREACHABLE;
}

/* The socket path to use, in *path (owned by the caller), and where it came
 * from in zxctl_origin.  Returns -1 ok, or an exit code after printing why:
 * ZX_EXIT_USAGE for a configuration that cannot be used,
 * ZX_EXIT_UNREACHABLE when nothing names a socket. */
static int zxctl_socket_path(const zxctl_opts *o, char **path)
{
    const char *cfg = o->config_path, *how = "-c";
    if (o->socket_path) {
        snprintf(zxctl_origin, sizeof zxctl_origin, "-s");
        *path = zxctl_xstrdup(o->socket_path);
        return -1;
    }
    if (!cfg) {
        const char *env = getenv("ZX_CONFIG");
        if (env && *env) {
            cfg = env;
            how = "$ZX_CONFIG";
        }
    }
    if (!cfg) {
        const char *env = getenv("ZXCTL_SOCKET");
        if (env && *env) {
            snprintf(zxctl_origin, sizeof zxctl_origin, "$ZXCTL_SOCKET");
            *path = zxctl_xstrdup(env);
            return -1;
        }
        if (access(ZXCTL_DEFAULT_CONFIG, F_OK) == 0) {
            cfg = ZXCTL_DEFAULT_CONFIG;
            how = "the default configuration";
        } else if (access(ZXCTL_DEFAULT_SOCKET, F_OK) == 0) {
            snprintf(zxctl_origin, sizeof zxctl_origin, "the default socket");
            *path = zxctl_xstrdup(ZXCTL_DEFAULT_SOCKET);
            return -1;
        } else {
            return zxctl_not_found();
        }
    }
    zx_conf *conf = zxctl_load_config(cfg, how);
    if (!conf || !conf->control_socket) {
        zx_conf_free(conf);
        return ZX_EXIT_USAGE;
    }
    char *c = zxctl_clean(cfg);
    snprintf(zxctl_origin, sizeof zxctl_origin, "server.control_socket of %.400s (from %s)",
             c, how);
    free(c);
    *path = zxctl_xstrdup(conf->control_socket);
    zx_conf_free(conf);
    return -1;
}

zx_conf *zxctl_load_config(const char *cfg, const char *how)
{
    zx_conf_errors errs = { 0 };
    zx_conf *conf = zx_conf_load(cfg, ZX_CONF_SKIP_SECRETS, &errs);
    if (!conf) {
        char *c = zxctl_clean(cfg);
        fprintf(stderr, "zxctl: cannot use the configuration %s (from %s)\n", c, how);
        free(c);
        for (size_t i = 0; i < errs.n; i++) {
            c = zxctl_clean(errs.msgs[i]);
            fprintf(stderr, "%s\n", c);
            free(c);
        }
    }
    zx_conf_errors_free(&errs);
    return conf;
}

/* ---------------------------------------------------------------- main */

static int zxctl_unreachable(const char *path, const char *why)
{
    char *c = zxctl_clean(path);
    fprintf(stderr, "zxctl: cannot reach zxd at %s: %s\n", c, why);
    free(c);
    return ZX_EXIT_UNREACHABLE;
}

/* Report a failed zxctl_readline / zxctl_send; returns the exit code. */
static int zxctl_io_error(const char *path, double timeout)
{
    char why[128];
    if (errno == ETIMEDOUT)
        snprintf(why, sizeof why, "no answer within %g s (see --timeout)", timeout);
    else if (errno == EMSGSIZE) {
        char *c = zxctl_clean(path);
        fprintf(stderr, "zxctl: bad answer from zxd at %s: a line longer than %d bytes\n",
                c, ZX_CTL_MAX_LINE);
        free(c);
        return ZX_EXIT_UNREACHABLE;
    } else
        snprintf(why, sizeof why, "%s", strerror(errno));
    return zxctl_unreachable(path, why);
}

/* Parse one answer line: a JSON object.  NULL (message printed) if not. */
static json_t *zxctl_parse(const char *path, const char *line)
{
    json_error_t jerr;
    json_t *r = json_loads(line, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(r)) {
        char *c = zxctl_clean(path), *m = zxctl_clean(r ? "not a JSON object" : jerr.text);
        fprintf(stderr, "zxctl: bad answer from zxd at %s: %s\n", c, m);
        free(c);
        free(m);
        json_decref(r);
        return NULL;
    }
    return r;
}

/* The daemon said ok:false: print why, return 1. */
static int zxctl_refused(const zxctl_opts *o, const json_t *r)
{
    const char *err = json_string_value(json_object_get(r, "error"));
    char *c = zxctl_clean(err ? err : "zxd refused the request (no reason given)");
    if (!strcmp(o->cmd, "reload"))
        fprintf(stderr, "reload failed: %s\n", c);
    else
        fprintf(stderr, "zxctl: %s\n", c);
    free(c);
    json_t *errs = json_object_get(r, "errors"), *e;
    size_t i;
    json_array_foreach(errs, i, e) {
        c = zxctl_fmt(e);
        fprintf(stderr, "%s\n", c);
        free(c);
    }
    return ZX_EXIT_DAEMON_ERROR;
}

/* Read events until the end of the stream (or forever with --follow). */
static int zxctl_feed(const zxctl_opts *o, zxctl_conn *c, int64_t deadline, double timeout)
{
    char *line;
    int r;
    if (o->follow)
        deadline = -1;
    while ((r = zxctl_readline(c, deadline, &line)) == 1) {
        /* a malformed event is reported and skipped: the feed goes on */
        json_t *ev = line[0] ? zxctl_parse(c->path, line) : NULL;
        if (ev && o->json)
            printf("%s\n", line);
        else if (ev)
            zxctl_print_event(ev, stdout);
        json_decref(ev);
        if (o->follow && fflush(stdout) != 0)
            return ZX_EXIT_OK;   /* reader gone (| head): done */
    }
    if (r < 0)
        return zxctl_io_error(c->path, timeout);
    if (o->follow)
        return zxctl_unreachable(c->path, "zxd closed the feed");
    return ZX_EXIT_OK;
}

/* Fill request req (v and cmd set) from the options.  -1 to go on and
 * send it, or the exit status to end with (a bad option, or a `send`
 * that is done without zxd). */
static int zxctl_build_request(const zxctl_opts *o, json_t *req)
{
    int rc;
    if (o->name) {
        json_t *n = json_string(o->name);
        if (!n) {
            return zxctl_usage_error("NAME is not valid UTF-8");
        }
        json_object_set_new(req, "name", n);
    }
    if (!strcmp(o->cmd, "feed"))
        json_object_set_new(req, "follow", json_boolean(o->follow));
    if (!strcmp(o->cmd, "run")) {
        json_object_set_new(req, "wait", json_boolean(o->wait));
        json_object_set_new(req, "full", json_boolean(o->full));
    }
    if (o->limit)
        json_object_set_new(req, "limit", json_integer(o->limit));
    if (!strcmp(o->cmd, "approve") || !strcmp(o->cmd, "reject"))
        json_object_set_new(req, "run", json_string(o->name));
    if (!strcmp(o->cmd, "send") && (rc = zxctl_send_request(o->query, o->to, o->mode, o->key,
                                                            o->format, req)) >= 0)
        return rc;
    if (o->repair)
        json_object_set_new(req, "repair", json_true());
    if (o->table) {
        json_t *tn = json_string(o->table);
        if (!tn) {
            return zxctl_usage_error("--table is not valid UTF-8");
        }
        json_object_set_new(req, "table", tn);
    }
    for (size_t k = 0; k < o->naopt; k++) {
        json_t *v = json_string(o->aval[k]);
        if (!v)
            return zxctl_usage_error("--%s is not valid UTF-8", o->aopt[k]->name);
        json_object_set_new(req, o->aopt[k]->name, v);
    }
    return -1;
}

/* Print the answer resp (ok) of command o->cmd for a person. */
static void zxctl_print_answer(const zxctl_opts *o, json_t *resp)
{
    if (!strcmp(o->cmd, "status"))
        zxctl_print_status(resp, stdout);
    else if (!strcmp(o->cmd, "reload"))
        zxctl_print_reload(resp, stdout);
    else if (!strcmp(o->cmd, "checkpoints"))
        zxctl_print_checkpoints(resp, stdout);
    else if (!strcmp(o->cmd, "progress")) {
        char *n = zxctl_clean(o->name), *t = zxctl_progress_text(json_object_get(resp,
                                                                             "progress"));
        printf("%s: %s\n", n, t ? t : "no work in progress");
        free(n);
        free(t);
    }
    else if (!strcmp(o->cmd, "run") || !strcmp(o->cmd, "preview") ||
             !strcmp(o->cmd, "approve") || !strcmp(o->cmd, "reject"))
        zxctl_print_run(resp, stdout);
    else if (!strcmp(o->cmd, "runs"))
        zxctl_print_runs(resp, stdout);
    else if (!strcmp(o->cmd, "verify"))
        zxctl_print_verify(resp, stdout);
    else if (!strcmp(o->cmd, "send"))
        zxctl_print_run(resp, stdout);
    else if (!strcmp(o->cmd, "test")) {
        char *n = zxctl_clean(o->name);
        const char *res = json_string_value(json_object_get(resp, "result"));
        char *r = zxctl_clean(res ? res : "");
        printf("test %s: ok\n%s\n", n, r);
        free(n);
        free(r);
    } else if (zx_plugin_admin_find(o->cmd, NULL)) {
        /* a plug-in's command: its result, one line a line */
        const char *res = json_string_value(json_object_get(resp, "result"));
        char *r = zxctl_xstrdup(res ? res : "");
        for (char *l = strtok(r, "\n"); l; l = strtok(NULL, "\n")) {
            char *c = zxctl_clean(l);
            printf("%s\n", c);
            free(c);
        }
        free(r);
    }
    else {
        char *n = zxctl_clean(o->name);
        printf("%s %s: ok\n", o->cmd, n);
        free(n);
    }
}

static int zxctl_run(const zxctl_opts *o, const char *path)
{
    int rc = ZX_EXIT_UNREACHABLE;
    json_t *req = NULL, *resp = NULL;
    char *text = NULL, *line;
    zxctl_conn c = { .fd = -1, .path = path };

    const zx_plugin_admin *admin = zx_plugin_admin_find(o->cmd, NULL);
    double timeout = o->timeout >= 0 ? o->timeout
                     : !strcmp(o->cmd, "reload") ? ZXCTL_TIMEOUT_RELOAD
                     : !strcmp(o->cmd, "test")   ? ZXCTL_TIMEOUT_TEST
                     : admin ? (double)(admin->timeout_s + ZXCTL_ADMIN_SLACK)
                     : !strcmp(o->cmd, "verify") ? ZXCTL_TIMEOUT_VERIFY
                     /* a run or a preview takes what the data takes */
                     : (!strcmp(o->cmd, "run") && o->wait) || !strcmp(o->cmd, "preview") ||
                       !strcmp(o->cmd, "send") ? 0
                                                 : ZXCTL_TIMEOUT_OTHER;
    int64_t deadline = timeout > 0 ? zxctl_now_ms() + (int64_t)(timeout * 1000.0) : -1;

    req = json_pack("{s:i, s:s}", "v", ZX_CTL_VERSION, "cmd", o->cmd);
    if (!req)
        zxctl_oom();
    int brc = zxctl_build_request(o, req);
    if (brc >= 0) {
        rc = brc;
        goto done;
    }
    /* (a send that goes on keeps -1 here, as it always did: a bad answer
     * from zxd then exits 255) */
    if (!strcmp(o->cmd, "send"))
        rc = brc;
    char *body = json_dumps(req, JSON_COMPACT);
    if (!body)
        zxctl_oom();
    size_t blen = strlen(body);
    text = zxctl_xrealloc(body, blen + 2);
    memcpy(text + blen, "\n", 2);

    /* run --wait shows the run's progress while it waits */
    int live = !strcmp(o->cmd, "run") && o->wait && !o->json && o->name;
    int64_t since_us = zxctl_progress_since();
    c.fd = zxctl_connect(path, deadline);
    if (c.fd < 0) {
        rc = errno == ETIMEDOUT ? zxctl_io_error(path, timeout)
                                : zxctl_unreachable(path, strerror(errno));
        if (zxctl_origin[0])
            fprintf(stderr, "zxctl: that socket path came from %s; is zxd running with "
                    "that configuration?\n", zxctl_origin);
        goto done;
    }
    if (zxctl_send(c.fd, text, blen + 1, deadline) < 0) {
        rc = zxctl_io_error(path, timeout);
        goto done;
    }
    int r = live ? zxctl_wait_answer(&c, o->name, deadline, since_us, isatty(STDOUT_FILENO), &line)
                 : zxctl_readline(&c, deadline, &line);
    if (r <= 0) {
        rc = r < 0 ? zxctl_io_error(path, timeout)
                   : zxctl_unreachable(path, "connection closed without an answer");
        goto done;
    }
    resp = zxctl_parse(path, line);
    if (!resp)
        goto done;
    json_t *ok = json_object_get(resp, "ok");
    if (!json_is_boolean(ok)) {
        char *cp = zxctl_clean(path);
        fprintf(stderr, "zxctl: bad answer from zxd at %s: no \"ok\" field\n", cp);
        free(cp);
        goto done;
    }
    int is_feed = !strcmp(o->cmd, "feed");
    if (o->json && (!is_feed || json_is_false(ok)))
        printf("%s\n", line);
    if (json_is_false(ok)) {
        rc = zxctl_refused(o, resp);
        goto done;
    }
    rc = ZX_EXIT_OK;
    if (!strcmp(o->cmd, "verify") && json_integer_value(json_object_get(resp, "differing")) >
                                         json_integer_value(json_object_get(resp, "repaired")))
        rc = ZX_EXIT_DIFFERENCES;
    if (is_feed)
        rc = zxctl_feed(o, &c, deadline, timeout);
    else if (o->json)
        ;
    else
        zxctl_print_answer(o, resp);
    if (!strcmp(o->cmd, "send") && o->print_sync && rc == ZX_EXIT_OK)
        zxctl_print_sync_yaml(o->print_sync, req, resp, stdout);
done:
    if (c.fd >= 0)
        close(c.fd);
    free(c.buf);
    free(text);
    json_decref(req);
    json_decref(resp);
    return rc;
}

int main(int argc, char **argv)
{
    zxctl_opts o = { 0 };
    char *path = NULL;
    int rc;

    signal(SIGPIPE, SIG_IGN);   /* a closed socket or stdout is an error, not death */
    rc = zxctl_parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;
    if (!strcmp(o.cmd, "help")) {
        zxctl_usage(stdout);
        return ZX_EXIT_OK;
    }
    if (!strcmp(o.cmd, "secret") || !strcmp(o.cmd, "lineage")) {
        const char *cfg = o.config_path, *how = "-c";
        if (!cfg && getenv("ZX_CONFIG") && *getenv("ZX_CONFIG")) {
            cfg = getenv("ZX_CONFIG");
            how = "$ZX_CONFIG";
        }
        if (!cfg && access(ZXCTL_DEFAULT_CONFIG, F_OK) == 0) {
            cfg = ZXCTL_DEFAULT_CONFIG;
            how = "the default configuration";
        }
        if (!cfg && !strcmp(o.cmd, "lineage"))
            return zxctl_usage_error("lineage needs the configuration it draws: -c CONFIG, "
                                     "or $ZX_CONFIG");
        if (!cfg)
            return zxctl_usage_error("secret needs the configuration whose secrets it "
                                     "keeps: -c CONFIG, or $ZX_CONFIG");
        if (!strcmp(o.cmd, "lineage"))
            return zxctl_lineage(cfg, how, o.name, o.lineage_dir,
                                 o.format ? o.format : o.json ? "json" : "text");
        return zxctl_secret(cfg, how, o.name, o.secret_name);
    }
    rc = zxctl_socket_path(&o, &path);
    if (rc >= 0)
        goto done;
    rc = zxctl_run(&o, path);
done:
    free(path);
    if (fflush(stdout) != 0 && errno != EPIPE) {
        fprintf(stderr, "zxctl: cannot write the output: %s\n", strerror(errno));
        if (rc == ZX_EXIT_OK)
            rc = ZX_EXIT_DAEMON_ERROR;
    }
    return rc;
}
