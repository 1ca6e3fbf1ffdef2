/*
 * log_journal.h — log records to systemd's journal, natively (the
 * journal's datagram protocol, without libsystemd), when zxd runs as a
 * systemd service; log.c calls it and falls back to its stderr line.
 *
 * A record is sent to the journal only when $JOURNAL_STREAM names the
 * very file stderr is (systemd's documented check: "<st_dev>:<st_ino>" of
 * the stream it connected to stderr): a zxd started by hand from a shell
 * inside a service, or with 2>file, keeps its stderr lines.  The socket is
 * /run/systemd/journal/socket, or $ZX_JOURNAL_SOCKET (an absolute path;
 * for tests only: a fake journal).
 *
 * Fields of a record: MESSAGE ("proc=<role> " and the caller's key=value
 * text), PRIORITY (syslog: debug 7, info 6, warn 4, error 3),
 * SYSLOG_IDENTIFIER=zxd, ZX_PROC, and each key=value pair of the text as
 * ZX_<KEY in upper case> (event= → ZX_EVENT, pipeline= → ZX_PIPELINE), its
 * value unquoted.  A pair whose key is not [A-Za-z0-9_]{1,61} stays in
 * MESSAGE only.
 */
#ifndef ZX_COMMON_LOG_JOURNAL_H
#define ZX_COMMON_LOG_JOURNAL_H

#include <stddef.h>

/* Send one record (text: the caller's key=value pairs, NUL-terminated,
 * as formatted; proc: the role).  Returns 0 when the journal took it; -1
 * when this process does not log to the journal or the send failed (then
 * the caller writes its stderr line).  Whether to use the journal is
 * decided at the first call in a process tree and inherited by fork. */
int zx_log_journal_send(int level, const char *proc, const char *text);

/* Build the datagram of one record into out (cap bytes).  Returns its
 * length, or 0 when it does not fit.  A value holding a newline is
 * written in the binary form: NAME '\n', its length as 64-bit little
 * endian, the bytes, '\n'; every other as NAME=value '\n'.  Pure: exposed
 * for the unit test. */
size_t zx_log_journal_record(char *out, size_t cap, int level, const char *proc,
                             const char *text);

#endif
