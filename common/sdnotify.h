/*
 * sdnotify.h — tell the service manager how zxd is doing (systemd's
 * sd_notify protocol, without libsystemd): one datagram of "KEY=value"
 * lines to the AF_UNIX socket named by $NOTIFY_SOCKET, a file system path
 * ("/run/systemd/notify") or an abstract name ("@name").
 *
 * Only the supervisor notifies: zx_sd_notify_init() takes the variable out
 * of the environment, so no child (writer, gateway, worker, helper) ever
 * sees it, and a child that inherited the saved name by fork() sends
 * nothing.  Without $NOTIFY_SOCKET (not under systemd, or Type=simple)
 * every call does nothing.  Not for a signal handler.
 */
#ifndef ZX_COMMON_SDNOTIFY_H
#define ZX_COMMON_SDNOTIFY_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>

/* Read $NOTIFY_SOCKET, keep a copy for this process and unset it (children
 * forked or exec'd afterwards do not inherit it).  Call once, early in
 * main, before the first fork.  Returns 1 when notifications will be sent,
 * 0 when the variable is unset or empty, -1 (errno EINVAL or
 * EAFNOSUPPORT) when its value is no address this code sends to (then
 * nothing is sent; the variable is unset all the same). */
int zx_sd_notify_init(void);

/* Send state (e.g. "READY=1\nSTATUS=running"), one datagram.  Returns 0
 * when sent, or when there is nothing to send to (no init, no variable,
 * or called in a process other than the one that called init); -1 with
 * errno from socket(2)/sendto(2) when the send failed.  state is the
 * caller's; nothing is kept. */
int zx_sd_notify(const char *state);

/* zx_sd_notify of a printf format (at most 1023 bytes once formatted;
 * longer is cut). */
int zx_sd_notifyf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "RELOADING=1\nMONOTONIC_USEC=<CLOCK_MONOTONIC in µs>" followed by
 * "\nSTATUS=<status>" when status is not NULL: what systemd (253 and
 * later) wants at the start of a reload; older versions ignore the
 * MONOTONIC_USEC line.  Returns as zx_sd_notify. */
int zx_sd_notify_reloading(const char *status);

/* Fill *sa with the address named by name ("/path" or "@abstract"; the
 * '@' becomes the leading NUL byte of an abstract name) and *len with its
 * length for sendto().  Returns 0, or -1 with errno EINVAL (empty, too
 * long for sun_path) or EAFNOSUPPORT (another form, e.g. "vsock:").
 * Pure: exposed for the unit test. */
int zx_sd_addr(const char *name, struct sockaddr_un *sa, socklen_t *len);

#endif
