/* The client side of a mount's control directory (ctl/, a layer of its
 * own), shared by `dliofs stat | set | cache | trace`, dlio-stall and
 * dlio-whatif: where the control
 * files are, reading one, and writing a command as one transaction. The
 * daemon's side is fs/control.h.
 *
 * The protocol: a control file reports size 0 and is read until EOF. A
 * command is written whole through one open file (O_RDWR) and committed by
 * fsync; a command the daemon refuses is applied not at all, its write or
 * fsync fails, and a read of the same open file then gives the reason
 * ("error: ..."). */
#ifndef DLIOFS_CTL_CLIENT_H
#define DLIOFS_CTL_CLIENT_H

#include <stddef.h>

#include "dliofs/dataset.h"	/* DL_CTL_DIRNAME */

enum dl_ctl_file {
	DL_CTL_DIR = 0, /* the directory itself */
	DL_CTL_STATS,	/* stats.json (read; write "reset") */
	DL_CTL_CONFIG,	/* config.yaml (read: the effective config, live changes included) */
	DL_CTL_PACER,	/* pacer (read: settings; write: key=value lines) */
	DL_CTL_CACHE,	/* cache (read: the policy; write: "drop", "warm <path>") */
	DL_CTL_TRACE,	/* trace (write: "start [ops=LIST] <file>", "stop"; read: status) */
	DL_CTL__COUNT
};

/* File names, DL_CTL_DIRNAME for DL_CTL_DIR. */
extern const char *const dl_ctl_names[DL_CTL__COUNT];

/* MNT/.dliofs/NAME (MNT/.dliofs for DL_CTL_DIR) into buf; -ENAMETOOLONG. */
int dl_ctl_path(const char *mnt, enum dl_ctl_file f, char *buf, size_t len);
/* Is mnt a dliofs mount (is MNT/.dliofs a directory)? */
int dl_ctl_is_mount(const char *mnt);
/* The whole content of a control file: *text is malloc'd and NUL-terminated,
 * *len its length. 0 or a negative errno. */
int dl_ctl_read(const char *mnt, enum dl_ctl_file f, char **text, size_t *len);
/* Write text[0..len) to a control file as one transaction and commit it.
 * 0, or a negative errno with why (when not NULL) saying why in one line:
 * "refused, nothing applied: REASON" with the daemon's reason, else the
 * path and the error. */
int dl_ctl_command(const char *mnt, enum dl_ctl_file f, const char *text, size_t len, char *why,
		   size_t whylen);

/* An S3 endpoint's control socket (`dliofs s3 serve --control SOCKET`,
 * ctl/ctl_sock.c): dl_ctl_read and dl_ctl_command take its path in place of
 * a mountpoint and talk to it instead. */
int dl_ctl_sock_is(const char *target);
int dl_ctl_sock_read(const char *sock, enum dl_ctl_file f, char **text, size_t *len, char *why,
		     size_t whylen);
int dl_ctl_sock_command(const char *sock, enum dl_ctl_file f, const char *text, size_t len,
			char *why, size_t whylen);

/* dl_ctl_command, and on failure one line on stderr: the caller's words
 * (fmt, ...), ": " and why ("dlio-stall: cache drop on /mnt failed:
 * refused, nothing applied: ..."). 0 or the negative errno. */
int dl_ctl_send(const char *mnt, enum dl_ctl_file f, const char *text, size_t len,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* The cache commands, said the same way: empty the emulated cache and
 * invalidate the kernel's pages of served files; warm the emulated cache
 * with rel (a path inside the mount, from its root; "" the whole mount). */
int dl_ctl_cache_drop(const char *mnt, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int dl_ctl_cache_warm(const char *mnt, const char *rel, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
