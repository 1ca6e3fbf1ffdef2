/*
 * sup.c — the supervisor's state itself (sup.h): the one supervisor of
 * this process and the names of a child's states.  The ground under every
 * other file of supervisor/.
 */
#include "supervisor/sup.h"

sup *zx_the_sup; /* set once by main.c, before the loop runs */

const char *zx_state_name(zx_state s)
{
    static const char *const n[] = {"stopped", "starting", "running", "backoff", "failed", "draining"};
    return (unsigned)s < 6 ? n[s] : "unknown";
}
