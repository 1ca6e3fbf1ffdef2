/*
 * test_commands.c — the supervisor's command table (supervisor/control.h):
 * every row has a name, a handler and a line of help, no name is there
 * twice, the flags are the known ones, a lookup finds exactly the rows;
 * and the commands the control protocol documents (proto/control.h, its
 * "  cmd ... →" lines) are exactly the table's, so that neither a command
 * nor its documentation is forgotten.  The plug-ins' own commands
 * (conf/plugin.h, zx_plugin_admin: postgres's drop-slot) are rows of it,
 * from the registry.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/plugin.h"
#include "supervisor/control.h"

#include "tests/unit/check.h"

#ifndef ZX_SOURCE_ROOT
#error "ZX_SOURCE_ROOT: the source tree, from meson"
#endif

#define KNOWN_FLAGS (SUP_CMD_NAME | SUP_CMD_READ_ONLY | SUP_CMD_LONG | SUP_CMD_OWNS_CONN)

/* The commands proto/control.h documents: a comment line " *   NAME ..."
 * (NAME in lower case and '-') whose request begins the line; "a | b"
 * lines name two. */
static size_t documented(char names[][32], size_t max)
{
    FILE *f = fopen(ZX_SOURCE_ROOT "/proto/control.h", "r");
    CHECK(f != NULL);
    if (!f)
        return 0;
    char line[512];
    size_t n = 0;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, " *   ", 5) || !islower((unsigned char)line[5]))
            continue;
        for (const char *p = line + 5; p && n < max;) {
            size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyz-");
            if (len == 0 || len >= 32 || (p[len] != ' ' && p[len] != '\n'))
                break;
            /* a request line: its arguments, or its answer, follow */
            const char *rest = p + len + strspn(p + len, " ");
            if (*rest != '{' && *rest != '\n' && strncmp(rest, "\xe2\x86\x92", 3))
                break;
            snprintf(names[n++], 32, "%.*s", (int)len, p);
            const char *bar = strstr(rest, " | ");
            p = bar ? bar + 3 : NULL;
        }
    }
    fclose(f);
    return n;
}

int main(void)
{
    size_t rows = 0;
    for (const sup_command *c = sup_command_table(); c->name; c++, rows++) {
        CHECK(c->name[0] != '\0');
        CHECK(c->fn != NULL);
        CHECK(c->help && c->help[0] != '\0' && strlen(c->help) < 90);
        CHECK((c->flags & ~(unsigned)KNOWN_FLAGS) == 0);
        CHECK(sup_command_find(c->name) == c);
        for (const sup_command *d = sup_command_table(); d != c; d++)
            if (!strcmp(d->name, c->name))
                printf("command %s is in the table twice\n", c->name), failures++;
    }
    CHECK(rows >= 16);
    CHECK(sup_command_find("nope") == NULL);
    CHECK(sup_command_find("stat") == NULL);
    CHECK(sup_command_find("statuses") == NULL);
    CHECK(sup_command_find("") == NULL);
    /* what the dispatcher relies on */
    CHECK(sup_command_find("reload")->flags & SUP_CMD_OWNS_CONN);
    CHECK(sup_command_find("feed")->flags & SUP_CMD_OWNS_CONN);
    CHECK(sup_command_find("verify")->flags & SUP_CMD_LONG);
    CHECK(sup_command_find("checkpoints")->flags & SUP_CMD_NAME);
    /* every plug-in's own command is a row, with a name, from the registry */
    for (size_t i = 0; i < zx_nplugins; i++) {
        const zx_plugin_admin *a = zx_plugins[i]->admin;
        if (!a)
            continue;
        const sup_command *c = sup_command_find(a->command);
        CHECK(c != NULL);
        CHECK(c && (c->flags & SUP_CMD_NAME) && c->help == a->summary);
        CHECK(zx_plugin_admin_find(a->command, NULL) == a);
    }
    CHECK(sup_command_find("drop-slot") != NULL);

    char docs[64][32];
    size_t nd = documented(docs, 64);
    for (size_t i = 0; i < nd; i++)
        if (!sup_command_find(docs[i]))
            printf("proto/control.h documents command %s, the table has no row for it\n",
                   docs[i]), failures++;
    for (const sup_command *c = sup_command_table(); c->name; c++) {
        int found = 0;
        for (size_t i = 0; i < nd; i++)
            found |= !strcmp(docs[i], c->name);
        if (!found)
            printf("command %s is not documented in proto/control.h\n", c->name), failures++;
    }
    return failures != 0;
}
