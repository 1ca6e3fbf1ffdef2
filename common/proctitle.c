/*
 * proctitle.c — overwrite argv for ps.  See proctitle.h.  Must never be
 * called before zx_proctitle_init.
 */
#include "common/proctitle.h"

#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

extern char **environ;

static char *title_area;
static size_t title_len;
/* The copies live for the whole process: kept here so that they stay
 * reachable (and leak checkers agree). */
char **zx_proctitle_argv;
char **zx_proctitle_environ;

char **zx_proctitle_init(int argc, char **argv)
{
    char **copy = calloc((size_t)argc + 1, sizeof(char *));
    if (!copy)
        return argv;
    for (int i = 0; i < argc; i++)
        copy[i] = strdup(argv[i]);
    zx_proctitle_argv = copy;
    /* The area is contiguous from argv[0] to the end of the last env string. */
    char *end = argv[argc - 1] + strlen(argv[argc - 1]);
    size_t nenv = 0;
    for (char **e = environ; *e; e++) {
        if (*e == end + 1)
            end = *e + strlen(*e);
        nenv++;
    }
    char **newenv = calloc(nenv + 1, sizeof(char *));
    if (newenv) {
        for (size_t i = 0; i < nenv; i++)
            newenv[i] = strdup(environ[i]);
        environ = newenv;
        zx_proctitle_environ = newenv;
    }
    title_area = argv[0];
    title_len = (size_t)(end - argv[0]);
    return copy;
}

void zx_proctitle_set(const char *title)
{
    const char *comm = strncmp(title, "zxd: ", 5) == 0 ? title + 5 : title;
    char name[16];
    strncpy(name, comm, sizeof(name) - 1);
    name[15] = '\0';
    prctl(PR_SET_NAME, name, 0, 0, 0);
    if (!title_area || title_len < 2)
        return;
    size_t n = strlen(title);
    if (n >= title_len)
        n = title_len - 1;
    memcpy(title_area, title, n);
    memset(title_area + n, 0, title_len - n);
}
