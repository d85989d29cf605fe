/* The running binary's directory (dliofs/exepath.h). */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "dliofs/exepath.h"

int dl_exe_dir(char *buf, size_t len)
{
	ssize_t n;
	char *slash;

	if (len < 2)
		return -ENAMETOOLONG;
	n = readlink("/proc/self/exe", buf, len - 1);
	if (n < 0)
		return -errno;
	if ((size_t)n >= len - 1)
		return -ENAMETOOLONG;
	buf[n] = 0;
	slash = strrchr(buf, '/');
	if (!slash)
		return -ENOENT;
	*slash = 0;
	return 0;
}
