/* `dliofs umount`: fusermount3 for the unprivileged case, umount2 as root. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs_i.h"

int dl_fs_umount(const char *mountpoint)
{
	int status;
	pid_t pid;

	if (geteuid() == 0) {
		if (umount2(mountpoint, 0) == 0)
			return 0;
		if (errno != EPERM) {
			fprintf(stderr, "dliofs: umount %s: %s\n", mountpoint, strerror(errno));
			return -errno;
		}
	}
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", "-u", "--", mountpoint, (char *)NULL);
		fprintf(stderr, "dliofs: cannot run fusermount3: %s\n", strerror(errno));
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}
