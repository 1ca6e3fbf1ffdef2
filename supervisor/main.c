/*
 * main.c — zxd: parse the command line, load the configuration, lock the
 * data directory, start the children and run the supervisor's event loop.
 *
 * Signals only wake the loop (libevent evsignal); the loop does the work:
 * SIGCHLD reaps, SIGHUP reloads, SIGTERM/SIGINT drain and exit 0.
 * Shutdown order: the gateway stops taking requests and answers what it
 * holds; then the stream workers stop; then the writer applies every
 * frame left in the rings and exits.
 *
 * Under systemd (Type=notify) it says READY=1 once the writer has opened
 * the workspace and the gateway runs, RELOADING=1 ... READY=1 around a
 * reload (reload.c) and STOPPING=1 when it starts to stop, with STATUS=
 * lines (common/sdnotify.h); no child ever notifies.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/log.h"
#include "common/proctitle.h"
#include "common/sdnotify.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "proto/control.h"
#include "supervisor/control.h"
#include "supervisor/jobs.h"
#include "supervisor/lease.h"


static void usage(FILE *f)
{
    fprintf(f,
            "usage: zxd -c FILE [--check]\n"
            "       zxd --config-reference\n"
            "  -c, --config FILE      configuration (YAML); see conf/OPTIONS.md\n"
            "      --check            validate FILE, print every error as file:line:column: message, exit 1 if any\n"
            "      --config-reference print the reference of every configuration option (Markdown)\n"
            "  -h, --help             this help\n"
            "  -V, --version          print the version\n");
}

static void start_shutdown(sup *s)
{
    if (s->shutting_down)
        return;
    zx_info("event=shutdown phase=gateway");
    zx_sd_notify("STOPPING=1\nSTATUS=stopping: the gateway answers what it holds");
    s->shutting_down = 1;
    s->shutdown_phase = 1;
    sup_stop_child(s, &s->gateway, NEXT_NONE);
}

static void shutdown_progress(sup *s)
{
    if (!s->shutting_down)
        return;
    if (s->shutdown_phase == 1 && s->gateway.pid == 0) {
        zx_info("event=shutdown phase=workers");
        zx_sd_notify("STATUS=stopping: the workers drain");
        for (size_t i = 0; i < s->npipes; i++)
            if (s->pipes[i]->worker.pid)
                sup_stop_child(s, &s->pipes[i]->worker, NEXT_NONE);
        s->shutdown_phase = 2;
    }
    if (s->shutdown_phase == 2) {
        for (size_t i = 0; i < s->npipes; i++)
            if (s->pipes[i]->worker.pid)
                return;
        zx_info("event=shutdown phase=writer");
        zx_sd_notify("STATUS=stopping: the writer applies what is left in the rings");
        sup_stop_child(s, &s->writer, NEXT_NONE);
        s->writer.kill_at_ms = zx_mono_ms() + 60000;
        s->shutdown_phase = 3;
    }
    if (s->shutdown_phase == 3 && s->writer.pid == 0) {
        zx_info("event=shutdown phase=done");
        event_base_loopbreak(s->base);
    }
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    sup *s = arg;
    if (sig == SIGCHLD) {
        sup_reap(s);
        if (s->fatal)
            start_shutdown(s);
        shutdown_progress(s);
        sup_reload_check_reply(s);
    } else if (sig == SIGHUP) {
        if (s->shutting_down)
            return;
        zx_info("event=sighup");
        sup_reload_start(s, NULL);
    } else {
        start_shutdown(s);
    }
}

/* The child table's hooks for the retires a reload planned (retire.c):
 * start them once the old worker is gone; free them with their
 * pipeline. */
static void retire_jobs_run(sup *s, spipe *p)
{
    if (p->retire_jobs)
        sup_retire_jobs_run(s, p);
}

static void retire_jobs_free(spipe *p)
{
    sup_retire_jobs_free(p->retire_jobs);
}

/* Wire the floors: the child table (sup.h) tells the jobs (jobs.h)
 * through these hooks; it never calls them itself. */
static const sup_child_hooks child_hooks = {
    .spawn_held = sup_lease_spawn_held,
    .worker_args = sup_sync_worker_args,
    .sync_exited = sup_sync_exited,
    .worker_stopped = retire_jobs_run,
    .pipe_freed = retire_jobs_free,
    .start_failed = sup_reload_failed,
    .gateway_api = sup_sync_api,
    .writer_event = sup_syncs_writer_event,
    .writer_lease = sup_lease_update,
    .pipe_created = sup_pipe_resumed_check,
    .pipe_forgotten = sup_send_forget,
};

/* READY=1 once, when the writer has said it is ready (the workspace is
 * open) and the gateway runs (it accepts on the socket opened before it
 * started). */
static void ready_check(sup *s)
{
    if (s->sd_ready || s->shutting_down || !s->writer_ready || !s->gateway.pid ||
        s->gateway.state != ST_RUNNING)
        return;
    s->sd_ready = 1;
    zx_info("event=ready pipelines=%zu", s->npipes);
    zx_sd_notifyf("READY=1\nSTATUS=running: %zu pipeline%s, listening on %s", s->npipes,
                  s->npipes == 1 ? "" : "s", s->conf->http.listen);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sup *s = arg;
    ready_check(s);
    sup_reap(s);
    if (s->fatal)
        start_shutdown(s);
    sup_lease_tick(s);
    sup_tick_children(s);
    sup_progress_tick(s);
    if (!s->shutting_down)
        sup_sync_sends_tick(s);
    sup_syncs_tick(s);
    sup_reload_check_reply(s);
    shutdown_progress(s);
}

/* Every pipeline and every client connection holds descriptors (a
 * segment and an eventfd per pipeline in each process; a socket per HTTP
 * client in the gateway): take the hard limit, as nginx's
 * worker_rlimit_nofile or systemd's LimitNOFILE would.  Children inherit
 * it. */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rlim_t was = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
            zx_info("event=fd_limit raised_from=%llu to=%llu", (unsigned long long)was,
                    (unsigned long long)rl.rlim_cur);
    }
}

static int lock_data_dir(const zx_conf *c)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/zxd.pid", c->data_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "zxd: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        char buf[32] = "";
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
        buf[n > 0 ? n : 0] = '\0';
        fprintf(stderr, "zxd: another zxd (pid %s) is running on data directory %s\n",
                buf[0] ? strtok(buf, "\n") : "?", c->data_dir);
        close(fd);
        return -1;
    }
    char pid[32];
    int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
    if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) < 0) {
        fprintf(stderr, "zxd: cannot write %s: %s\n", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd; /* held open (and locked) for the life of the supervisor */
}

int main(int argc, char **argv)
{
    argv = zx_proctitle_init(argc, argv);
    /* out of the environment before anything forks or execs: only the
     * supervisor notifies */
    if (zx_sd_notify_init() < 0)
        fprintf(stderr, "zxd: NOTIFY_SOCKET is no address zxd can send to; not notifying\n");
    const char *conf_path = NULL;
    int check = 0;
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"check", no_argument, NULL, 'k'},
        {"config-reference", no_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int o;
    while ((o = getopt_long(argc, argv, "c:hV", opts, NULL)) != -1) {
        switch (o) {
        case 'c': conf_path = optarg; break;
        case 'k': check = 1; break;
        case 'r': zx_conf_write_reference(stdout); return 0;
        case 'h': usage(stdout); return 0;
        case 'V': printf("zxd 0.1.0\n"); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!conf_path || optind != argc) {
        usage(stderr);
        return 2;
    }
    zx_conf_errors errs = {0};
    zx_conf *conf = zx_conf_load(conf_path, 0, &errs);
    if (!conf) {
        for (size_t i = 0; i < errs.n; i++)
            fprintf(stderr, "%s\n", errs.msgs[i]);
        fprintf(stderr, "zxd: %zu error%s in %s\n", errs.n, errs.n == 1 ? "" : "s", conf_path);
        zx_conf_errors_free(&errs);
        return check ? 1 : ZX_EXIT_FATAL_CONFIG;
    }
    if (check) {
        printf("%s: configuration ok (%zu pipeline%s)\n", conf_path, conf->npipelines,
               conf->npipelines == 1 ? "" : "s");
        zx_conf_free(conf);
        return 0;
    }
    if (zx_mkdir_p(conf->data_dir, 0750) < 0) {
        fprintf(stderr, "zxd: cannot create data directory %s: %s\n", conf->data_dir, strerror(errno));
        return 1;
    }
    int lock_fd = lock_data_dir(conf);
    if (lock_fd < 0)
        return 1;

    static sup S;
    sup *s = &S;
    zx_the_sup = s;
    s->conf = conf;
    s->conf_path = conf_path;
    /* it holds every secret: no core file unless asked for (the children
     * say it again for themselves, children.c) */
    prctl(PR_SET_DUMPABLE, conf->core_dumps ? 1 : 0, 0, 0, 0);
    s->pid = getpid();
    s->started_us = zx_now_us();
    s->ctl_fd = -1;
    s->hooks = child_hooks;
    s->writer.role = ROLE_WRITER;
    s->writer.chan = -1;
    s->writer.want = 1;
    snprintf(s->writer.name, sizeof(s->writer.name), "writer");
    s->gateway.role = ROLE_GATEWAY;
    s->gateway.chan = -1;
    s->gateway.want = 1;
    snprintf(s->gateway.name, sizeof(s->gateway.name), "gateway");

    zx_log_set_proc("supervisor");
    zx_log_set_level_name(conf->log_level);
    raise_fd_limit();
    zx_proctitle_set("zxd: supervisor");
    signal(SIGPIPE, SIG_IGN);

    char err[512];
    s->writer_efd = zx_eventfd();
    s->gateway_efd = zx_eventfd();
    s->listen_fd = sup_listen_http(conf, err, sizeof(err));
    if (s->listen_fd < 0) {
        fprintf(stderr, "zxd: %s\n", err);
        return 1;
    }
    s->base = event_base_new();
    if (!s->base || s->writer_efd < 0 || s->gateway_efd < 0) {
        fprintf(stderr, "zxd: cannot set up the event loop\n");
        return 1;
    }
    if (sup_control_open(s, err, sizeof(err)) < 0) {
        fprintf(stderr, "zxd: %s\n", err);
        return 1;
    }
    for (size_t i = 0; i < conf->npipelines; i++) {
        if (!sup_pipe_new(s, &conf->pipelines[i], err, sizeof(err))) {
            fprintf(stderr, "zxd: %s\n", err);
            return 1;
        }
    }
    int sigs[] = {SIGCHLD, SIGHUP, SIGTERM, SIGINT};
    for (size_t i = 0; i < 4; i++) {
        struct event *ev = evsignal_new(s->base, sigs[i], on_signal, s);
        if (!ev || event_add(ev, NULL) < 0) {
            fprintf(stderr, "zxd: cannot watch signal %d (out of memory)\n", sigs[i]);
            return 1;
        }
    }
    s->tick_ev = event_new(s->base, -1, EV_PERSIST, on_tick, s);
    struct timeval tv = {0, 100 * 1000};
    if (!s->tick_ev || event_add(s->tick_ev, &tv) < 0) {
        fprintf(stderr, "zxd: cannot set up the event loop's timer (out of memory)\n");
        return 1;
    }

    zx_info("event=start version=0.1.0 config=%s data_dir=%s listen=%s pipelines=%zu",
            conf->path, conf->data_dir, conf->http.listen, conf->npipelines);
    zx_sd_notify("STATUS=starting: the writer opens the workspace");
    if (sup_spawn(s, &s->writer) < 0 || sup_spawn(s, &s->gateway) < 0) {
        fprintf(stderr, "zxd: cannot start: %s\n", s->writer.last_error);
        return 1;
    }
    for (size_t i = 0; i < s->npipes; i++)
        if (sup_spawn(s, &s->pipes[i]->worker) < 0) {
            s->pipes[i]->worker.state = ST_BACKOFF;
            s->pipes[i]->worker.respawn_at_ms = zx_mono_ms() + 1000;
        }

    event_base_dispatch(s->base);

    sup_control_close(s);
    char path[4200];
    snprintf(path, sizeof(path), "%s/zxd.pid", s->conf->data_dir);
    unlink(path);
    close(lock_fd);
    zx_info("event=exit code=%d", s->fatal ? 1 : 0);
    return s->fatal ? 1 : 0;
}
