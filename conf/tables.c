/*
 * tables.c — the workspace tables the pipelines of one configuration
 * write, checked once the whole file is walked: no two pipelines (nor two
 * mirrors of one) write one table, names compared without regard to case
 * (a `table`, a postgres mirror, a mirror's `__changes`); and no two table
 * templates (`table: "{source.table}"`) could make the same name.
 *
 * It must never: set a field, or open anything.
 */
#define ZX_CONF_INTERNAL
#include "conf/config.h"

#include "common/colname.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* One workspace table a pipeline writes, for cf_check_tables. */
typedef struct cf_tab {
    const char *name;        /* the table */
    size_t pipe;             /* index of its pipeline */
    size_t item;             /* index in its mirrors (and mirror_of);
                                SIZE_MAX: the pipeline's `table` */
    int history;             /* 1: the `<mirror>__changes` of item */
} cf_tab;

static int cf_tab_cmp(const void *a, const void *b)
{
    const cf_tab *x = a, *y = b;
    int r = strcasecmp(x->name, y->name);

    if (r)
        return r;
    if (x->pipe != y->pipe)
        return x->pipe < y->pipe ? -1 : 1;
    /* within a pipeline: file order, a mirror before its history */
    if (x->item != y->item)
        return x->item == SIZE_MAX ? -1 : y->item == SIZE_MAX ? 1
               : x->item < y->item ? -1 : 1;
    return x->history - y->history;
}

/* Where t was written: its item of `tables`, else the pipeline's name. */
static void cf_tab_where(zx_cf_ctx *x, const zx_conf *c,
                         const yaml_node_t *const *tables_node, const cf_tab *t,
                         int *line, int *col)
{
    const zx_conf_pipeline *p = &c->pipelines[t->pipe];
    const yaml_node_t *n = tables_node ? tables_node[t->pipe] : NULL;

    *line = p->line;
    *col = p->column;
    if (t->item != SIZE_MAX && n && n->type == YAML_SEQUENCE_NODE &&
        t->item < (size_t)(n->data.sequence.items.top -
                           n->data.sequence.items.start)) {
        const yaml_node_t *in = zx_cf_node(x, n->data.sequence.items.start[t->item]);
        *line = zx_cf_line(in);
        *col = zx_cf_col(in);
    }
}

/* "the mirror of public.orders", "the history of public.orders", or ""
 * for a pipeline's `table`. */
static void cf_tab_role(char *buf, size_t len, const zx_conf *c, const cf_tab *t)
{
    if (t->item == SIZE_MAX)
        buf[0] = '\0';
    else
        snprintf(buf, len, "the %s of %s", t->history ? "history" : "mirror",
                 c->pipelines[t->pipe].mirror_of[t->item]);
}

/* Two tables written by the same pipeline or by two, equal without regard
 * to case (SQLite's names are case-insensitive): `table`s, postgres
 * mirrors and, with history, their `__changes` tables.  Sorted, so that
 * thousands of pipelines stay fast. */
void zx_cf_check_tables(zx_cf_ctx *x, const zx_conf *c,
                        const yaml_node_t *const *tables_node)
{
    size_t i, j, n = 0, cap = c->npipelines + 1;
    char **hist = NULL;
    size_t nhist = 0;
    cf_tab *t;

    for (i = 0; i < c->npipelines; i++)
        cap += c->pipelines[i].mirrors ? 2 * c->pipelines[i].nmirrors : 0;
    t = malloc(cap * sizeof(*t));
    hist = calloc(cap, sizeof(*hist));
    if (!t || !hist) {
        zx_cf_error(x, 0, 0, "out of memory");
        goto out;
    }
    for (i = 0; i < c->npipelines; i++) {
        const zx_conf_pipeline *p = &c->pipelines[i];
        if (p->table)
            t[n++] = (cf_tab){p->table, i, SIZE_MAX, 0};
        for (j = 0; p->mirrors && j < p->nmirrors; j++) {
            t[n++] = (cf_tab){p->mirrors[j], i, j, 0};
            if (!p->history)
                continue;
            if (asprintf(&hist[nhist], "%s__changes", p->mirrors[j]) < 0) {
                hist[nhist] = NULL;
                zx_cf_error(x, 0, 0, "out of memory");
                goto out;
            }
            t[n++] = (cf_tab){hist[nhist++], i, j, 1};
        }
    }
    qsort(t, n, sizeof(*t), cf_tab_cmp);
    for (i = 0; i < n; i = j) {
        for (j = i + 1; j < n && !strcasecmp(t[j].name, t[i].name); j++) {
            const cf_tab *a = &t[i], *b = &t[j];
            const zx_conf_pipeline *pa = &c->pipelines[a->pipe];
            const zx_conf_pipeline *pb = &c->pipelines[b->pipe];
            char ra[200], rb[200], same[200] = "";
            int line, col;

            if (a->pipe == b->pipe &&
                (a->item == SIZE_MAX || b->item == SIZE_MAX))
                continue;   /* a `table` refused on a postgres pipeline */
            if (a->history && b->history)
                continue;   /* their mirrors are one name too: said there */
            cf_tab_where(x, c, tables_node, b, &line, &col);
            cf_tab_role(ra, sizeof(ra), c, a);
            cf_tab_role(rb, sizeof(rb), c, b);
            if (strcmp(a->name, b->name))
                snprintf(same, sizeof(same), "%s'%s' and '%s' are one name, "
                         "case does not count%s", a->pipe != b->pipe ? ": " : " (",
                         a->name, b->name, a->pipe != b->pipe ? "" : ")");
            if (a->pipe != b->pipe)
                zx_cf_error(x, line, col, "pipeline %s: table '%s'%s%s%s is "
                            "already written by pipeline %s (line %d%s%s)%s",
                            pb->name, b->name, *rb ? " (" : "", rb,
                            *rb ? ")" : "", pa->name, pa->line,
                            *ra ? ", as " : "", ra, same);
            else if (!a->history && !b->history)
                zx_cf_error(x, line, col, "pipeline %s: %s and %s would both "
                            "be mirrored to table '%s'%s; a mirror is named "
                            "after its table, without the schema: mirror them "
                            "in two pipelines with different table_prefix",
                            pb->name, pa->mirror_of[a->item], pb->mirror_of[b->item],
                            a->name, same);
            else
                zx_cf_error(x, line, col, "pipeline %s: table '%s' (%s) "
                            "would also be %s%s", pb->name, b->name, rb, ra,
                            same);
        }
    }
out:
    for (i = 0; hist && i < nhist; i++)
        free(hist[i]);
    free(hist);
    free(t);
}

/* The fixed start of the names a table template makes: the text before
 * its first '{', normalised as the names are (into out; "" when the
 * template begins with a placeholder). */
static void cf_template_prefix(const char *tpl, char out[ZX_COLNAME_MAX + 1])
{
    size_t n = strcspn(tpl, "{");

    out[0] = '\0';
    if (n)
        zx_colname_normalise(tpl, n, out);
}

/* Two table templates (`table: "{source.table}"`) whose names could meet:
 * each name a template makes begins with its fixed prefix, so two
 * templates are apart only when neither prefix begins the other.  A fixed
 * name of another pipeline is refused where the name is made (the worker
 * knows them all); other templates' names it cannot know, hence here.
 * Two equal templates were said by cf_check_tables already. */
void zx_cf_check_templates(zx_cf_ctx *x, const zx_conf *c)
{
    for (size_t i = 0; i < c->npipelines; i++) {
        const zx_conf_pipeline *pa = &c->pipelines[i];
        if (!pa->table || !strchr(pa->table, '{'))
            continue;
        char fa[ZX_COLNAME_MAX + 1];
        cf_template_prefix(pa->table, fa);
        for (size_t j = i + 1; j < c->npipelines; j++) {
            const zx_conf_pipeline *pb = &c->pipelines[j];
            if (!pb->table || !strchr(pb->table, '{') || !strcasecmp(pa->table, pb->table))
                continue;
            char fb[ZX_COLNAME_MAX + 1];
            cf_template_prefix(pb->table, fb);
            size_t la = strlen(fa), lb = strlen(fb);
            if (strncasecmp(fa, fb, la < lb ? la : lb))
                continue;
            const char *shorter = la < lb ? fa : fb;
            char why[200];
            if (*shorter)
                snprintf(why, sizeof(why), "every name of one begins with '%s'", shorter);
            else
                snprintf(why, sizeof(why), "a template that begins with a placeholder can "
                         "make any name");
            zx_cf_error(x, pb->line, pb->column, "pipeline %s: the table names of '%s' can "
                        "be those of pipeline %s's '%s' (line %d): %s; give each template a "
                        "fixed start the other's names cannot begin with, such as '%s_%s'",
                        pb->name, pb->table, pa->name, pa->table, pa->line, why, pb->name,
                        pb->table);
        }
    }
}
