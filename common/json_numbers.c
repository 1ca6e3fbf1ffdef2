/*
 * json_numbers.c — marking of JSON numbers beyond int64 / double for
 * jansson, and unmarking of the text jansson writes back (json_numbers.h).
 *
 * Must never trust the text: every scan is bounded by n, an unterminated
 * string or a malformed number is copied as it is (jansson then reports
 * the error at its position), and no length comes from the input.
 */
#include "common/json_numbers.h"

#include "common/buf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int grow(char **buf, size_t *cap, size_t need)
{
    return zx_grow_to(buf, need, cap, 1, 4096);
}

static int add_patch(zx_jnum *c, size_t at, size_t added)
{
    if (zx_grow_to(&c->patches, c->npatches + 1, &c->patches_cap, sizeof(*c->patches), 16) < 0)
        return -1;
    c->patches[c->npatches].at = at;
    c->patches[c->npatches].added = added;
    c->npatches++;
    return 0;
}

static int is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

size_t zx_jnum_end(const char *s, size_t n, size_t i, int *is_int)
{
    size_t j = i;
    *is_int = 1;
    if (j < n && s[j] == '-')
        j++;
    if (j < n && s[j] == '0')
        j++;
    else if (j < n && is_digit(s[j]))
        while (j < n && is_digit(s[j]))
            j++;
    else
        return 0;
    if (j < n && s[j] == '.') {
        *is_int = 0;
        if (++j >= n || !is_digit(s[j]))
            return 0;
        while (j < n && is_digit(s[j]))
            j++;
    }
    if (j < n && (s[j] == 'e' || s[j] == 'E')) {
        *is_int = 0;
        j++;
        if (j < n && (s[j] == '+' || s[j] == '-'))
            j++;
        if (j >= n || !is_digit(s[j]))
            return 0;
        while (j < n && is_digit(s[j]))
            j++;
    }
    return j;
}

static int int_fits(const char *s, size_t n)
{
    int neg = s[0] == '-';
    const char *d = s + neg;
    size_t nd = n - (size_t)neg;
    if (nd < 19)
        return 1;
    if (nd > 19)
        return 0;
    return memcmp(d, neg ? "9223372036854775808" : "9223372036854775807", 19) <= 0;
}

/* 1 when the number s[0..n) (valid grammar) is beyond what jansson holds:
 * an integer beyond int64, or any number beyond double range (an underflow
 * to zero or a subnormal still parses, as jansson does).  -1 if out of
 * memory. */
static int out_of_range(const char *s, size_t n, int is_int)
{
    if (is_int)
        return !int_fits(s, n);
    char small[64];
    char *tmp = n < sizeof(small) ? small : malloc(n + 1);
    if (!tmp)
        return -1;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    double d = strtod(tmp, NULL);
    if (tmp != small)
        free(tmp);
    return isinf(d) ? 1 : 0;
}

/* 1 when the text holds a "\u0000" escape in a string (key or value). */
static int has_nul_escape(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        if (s[i] != '"') {
            i++;
            continue;
        }
        size_t j = i + 1;
        while (j < n && s[j] != '"') {
            if (s[j] == '\\' && n - j >= 6 && memcmp(s + j + 1, "u0000", 5) == 0)
                return 1;
            j += s[j] == '\\' ? 2 : 1;
        }
        i = j + 1;
    }
    return 0;
}

#define MARK "\"\\u0000"   /* the 7 bytes "\u0000 opening a marked number */
#define MARK_LEN 7

int zx_jnum_rewrite(zx_jnum *c, const char *s, size_t n, size_t *outn, int *marked)
{
    size_t o = 0;
    int mark = !has_nul_escape(s, n);
    c->npatches = 0;
#define PUT(src, k)                                                          \
    do {                                                                     \
        if (grow(&c->patched, &c->patched_cap, o + (k) + MARK_LEN + 1) < 0)  \
            return -1;                                                       \
        memcpy(c->patched + o, (src), (k));                                  \
        o += (k);                                                            \
    } while (0)
    for (size_t i = 0; i < n;) {
        char ch = s[i];
        if (ch == '"') {
            size_t j = i + 1;
            while (j < n && s[j] != '"')
                j += s[j] == '\\' ? 2 : 1;
            j = j < n ? j + 1 : n;
            PUT(s + i, j - i);
            i = j;
        } else if (ch == '-' || is_digit(ch)) {
            int is_int;
            size_t j = zx_jnum_end(s, n, i, &is_int);
            if (j == 0) {
                PUT(s + i, 1);
                i++;
                continue;
            }
            int fix = out_of_range(s + i, j - i, is_int);
            if (fix < 0)
                return -1;
            if (fix) {
                size_t open = mark ? MARK_LEN : 1;
                if (add_patch(c, i, open) < 0 || add_patch(c, j, 1) < 0)
                    return -1;
                PUT(mark ? MARK : "\"", open);
            }
            PUT(s + i, j - i);
            if (fix)
                PUT("\"", 1);
            i = j;
        } else {
            size_t j = i + 1;
            while (j < n && s[j] != '"' && s[j] != '-' && !is_digit(s[j]))
                j++;
            PUT(s + i, j - i);
            i = j;
        }
    }
#undef PUT
    *outn = o;
    *marked = mark;
    return 0;
}

int zx_jnum_is_marked(const char *s, size_t n)
{
    return n >= 2 && s[0] == '\0';
}

size_t zx_jnum_unmark_text(char *t, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (t[i] != '"') {
            t[o++] = t[i++];
            continue;
        }
        size_t j = i + 1;       /* end of the string, after its closing quote */
        while (j < n && t[j] != '"')
            j += t[j] == '\\' ? 2 : 1;
        j = j < n ? j + 1 : n;
        if (j - i > MARK_LEN + 1 && memcmp(t + i, MARK, MARK_LEN) == 0) {
            /* a marked number: its literal holds no quote nor backslash */
            memmove(t + o, t + i + MARK_LEN, j - 1 - (i + MARK_LEN));
            o += j - 1 - (i + MARK_LEN);
        } else {
            memmove(t + o, t + i, j - i);
            o += j - i;
        }
        i = j;
    }
    return o;
}

/* Offset in the original text of byte `p` of the patched text. */
size_t zx_jnum_unpatch_pos(const zx_jnum *c, size_t p)
{
    size_t shift = 0;
    for (size_t k = 0; k < c->npatches; k++) {
        size_t start = c->patches[k].at + shift;   /* patched offset */
        if (p < start)
            break;
        if (p < start + c->patches[k].added)
            return c->patches[k].at;
        shift += c->patches[k].added;
    }
    return p - shift;
}

void zx_jnum_free(zx_jnum *p)
{
    free(p->patched);
    free(p->patches);
    memset(p, 0, sizeof(*p));
}
