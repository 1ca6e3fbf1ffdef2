/*
 * test_helper.c — the supervisor's helper-process job (supervisor/helper.h):
 * the answer a helper writes reaches its job once; a helper that answers
 * nothing, answers too much or misses its deadline is answered for, with
 * the messages zxctl shows; a client that left is not handed the answer.
 * No timing thresholds: the deadline case waits on a helper that never
 * answers.
 */
#include <event2/event.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "supervisor/helper.h"

#include "tests/unit/check.h"

static json_t *got;                 /* the last answer handed to done */
static struct bufferevent *got_waiter;
static char got_name[128];
static char got_data[64];
static int ndone;

static void done(sup *s, const char *name, void *data, struct bufferevent *waiter,
                 json_t *answer)
{
    json_decref(got);
    got = answer;
    got_waiter = waiter;
    snprintf(got_name, sizeof(got_name), "%s", name);
    snprintf(got_data, sizeof(got_data), "%s", data ? (const char *)data : "");
    ndone++;
    event_base_loopbreak(s->base);
}

static json_t *run_echo(const zx_conf *conf, const void *arg)
{
    (void)conf;
    return json_pack("{s:b, s:s}", "ok", 1, "said", (const char *)arg);
}

static json_t *run_nothing(const zx_conf *conf, const void *arg)
{
    (void)conf;
    (void)arg;
    return NULL;
}

static json_t *run_forever(const zx_conf *conf, const void *arg)
{
    (void)conf;
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

static const sup_helper_kind echo = {"echo", 60, 60, 1 << 20, run_echo, done};
static const sup_helper_kind small = {"small", 60, 60, 16, run_echo, done};
static const sup_helper_kind mute = {"mute", 60, 60, 1 << 20, run_nothing, done};
static const sup_helper_kind slow = {"slow", 600, 1, 1 << 20, run_forever, done};

/* Run the loop until one more helper is done; reap what exited. */
static void wait_done(sup *s)
{
    int before = ndone;
    while (ndone == before)
        event_base_dispatch(s->base);
    while (waitpid(-1, NULL, 0) > 0)
        ;
}

static const char *error_of(const json_t *o)
{
    const char *e = json_string_value(json_object_get(o, "error"));
    return e ? e : "";
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    static sup S;
    static zx_conf conf;
    sup *s = &S;
    s->conf = &conf;
    s->base = event_base_new();
    zx_the_sup = s;
    CHECK(s->base != NULL);
    struct bufferevent *client = (struct bufferevent *)&S; /* only compared */
    pid_t pid = 0;

    /* the answer reaches done, with the name, the waiter and the data */
    char *data = strdup("table t");
    CHECK(sup_helper_start(s, &echo, "p1", "hello", data, client, &pid) == NULL);
    CHECK(pid > 0);
    CHECK(sup_helper_count(&echo, NULL) == 1);
    CHECK(sup_helper_count(&echo, "p1") == 1);
    CHECK(sup_helper_count(&echo, "p2") == 0);
    CHECK(sup_helper_count(&mute, NULL) == 0);
    wait_done(s);
    CHECK(json_is_true(json_object_get(got, "ok")));
    CHECK(!strcmp(json_string_value(json_object_get(got, "said")), "hello"));
    CHECK(got_waiter == client);
    CHECK(!strcmp(got_name, "p1"));
    CHECK(!strcmp(got_data, "table t"));
    CHECK(sup_helper_count(&echo, NULL) == 0);

    /* no answer: said so, naming the helper */
    CHECK(sup_helper_start(s, &mute, "p2", NULL, NULL, client, &pid) == NULL);
    wait_done(s);
    CHECK(json_is_false(json_object_get(got, "ok")));
    CHECK(!strcmp(json_string_value(json_object_get(got, "name")), "p2"));
    CHECK(!strcmp(error_of(got), "the mute process gave no answer (it crashed?); see the zxd log"));

    /* an answer over answer_max */
    CHECK(sup_helper_start(s, &small, "p3", "a text longer than sixteen bytes", NULL, client,
                           &pid) == NULL);
    wait_done(s);
    CHECK(!strcmp(error_of(got), "the small's answer is too long"));

    /* past its deadline: stopped, and said so */
    CHECK(sup_helper_start(s, &slow, "p4", NULL, NULL, client, &pid) == NULL);
    wait_done(s);
    CHECK(!strcmp(error_of(got), "the slow did not finish in time (it was stopped)"));
    CHECK(kill(pid, 0) < 0); /* killed and reaped */

    /* the client left: the job is told there is nobody to answer */
    CHECK(sup_helper_start(s, &echo, "p5", "bye", NULL, client, &pid) == NULL);
    sup_helper_forget(client);
    wait_done(s);
    CHECK(got_waiter == NULL);
    CHECK(json_is_true(json_object_get(got, "ok")));

    CHECK(ndone == 5);
    json_decref(got);
    event_base_free(s->base);
    return failures != 0;
}
