/* Private to fs/: text that comes from clients (names, link targets, paths
 * under the mount) made safe for the daemon's log. */
#ifndef DLIOFS_FS_LOG_I_H
#define DLIOFS_FS_LOG_I_H

#include <stddef.h>

/* Room for a name or path of PATH_MAX bytes once escaped (each byte at
 * most 4 characters); shorter buffers get a cut with "...". */
#define DL_LOG_ESC_MAX (4 * 4096 + 8)

/* s as one line of printable text: control characters, DEL, C1 controls,
 * U+2028/U+2029, bytes that are not UTF-8, '\\' and '\'' are written as C
 * escapes (\n, \t, \x1b, \u2028, ...), so a client cannot start a log line
 * of its own or send a terminal control sequence. Valid UTF-8 is kept.
 * Always NUL-terminates buf (len >= 4); returns buf. */
const char *dl_log_esc(const char *s, char *buf, size_t len);

#endif
