/* The running binary's directory (util/exepath.c): how installed binaries
 * find the files installed with them (helpers, storage profiles) without
 * any path of the source tree compiled in. */
#ifndef DLIOFS_EXEPATH_H
#define DLIOFS_EXEPATH_H

#include <stddef.h>

/* The directory of /proc/self/exe into buf: 0 or -errno. */
int dl_exe_dir(char *buf, size_t len);

#endif
