/*
 * dhttp_results.h — the per-item results of an HTTP API's answer to a
 * batch (the destination's `results_path`), read with jansson.
 *
 * The answer is JSON; path names members joined by '.' ("results",
 * "data.items"), leading to an array whose item i is the result of the
 * batch's item i.  An item failed when it is an object with a member
 * "error" that is neither null nor false, or with a number "status" >=
 * 400.  Items of the batch beyond the array's end failed ("no result");
 * results beyond the batch's end are ignored.
 *
 * It must never: trust the answer (any bytes may come), or read more than
 * len bytes.
 */
#ifndef ZX_DEST_DHTTP_RESULTS_H
#define ZX_DEST_DHTTP_RESULTS_H

#include <stddef.h>
#include <stdint.h>

/* Read body[0..len) (a 2xx answer) for the results of a batch of nitems
 * items at path.  For each failed item, in order: fail(arg, i, why), why a
 * line without control characters naming what the API said ("error:
 * email is invalid", "status 422"), valid during the call only.  Returns
 * the number of failed items (0..nitems), or -1 with err (one line) when
 * the body is not JSON or holds no array at path; then fail was not
 * called. */
long zx_dhttp_results(const char *body, size_t len, const char *path, uint32_t nitems,
                      void (*fail)(void *arg, uint32_t i, const char *why), void *arg,
                      char *err, size_t errlen);

/* Copy at most max bytes of s[0..n) into out (outlen bytes, NUL-ended),
 * every byte outside printable ASCII as '?', "..." added when cut.  For
 * an answer's text in a message.  Returns out. */
char *zx_dhttp_sanitize(const char *s, size_t n, size_t max, char *out, size_t outlen);

#endif
