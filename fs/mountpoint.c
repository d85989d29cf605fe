/* What is mounted at the mountpoint already (see mountpoint_i.h). Mounting
 * over a live dliofs mount stacked a second daemon on the first, and after
 * kill -9 the dead mounts (every access ENOTCONN) piled up on one
 * directory: six after a round of durability trials. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mountpoint_i.h"

/* Stacked dead mounts removed at most (each try unmounts the top one). */
#define DL_MAX_DEAD 64
#define DL_FSTYPE "fuse.dliofs"

/* mountinfo writes ' ', '\t', '\n' and '\\' as \ooo: undo it in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = 0;
}

/* The file system type of the topmost mount at mnt ("" when none). */
static int top_fstype(const char *mnt, char *type, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;

	if (!f)
		return -errno;
	type[0] = 0;
	/* Later lines are mounted on top of earlier ones. */
	while (getline(&line, &cap, f) > 0) {
		/* "ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE ..." */
		char *sep = strstr(line, " - "), *save = NULL, *tok;

		if (!sep)
			continue;
		*sep = 0;
		tok = strtok_r(line, " ", &save);
		for (int i = 1; tok && i < 5; i++)
			tok = strtok_r(NULL, " ", &save);
		if (!tok)
			continue;
		unescape(tok);
		if (strcmp(tok, mnt))
			continue;
		tok = strtok_r(sep + 3, " ", &save);
		snprintf(type, len, "%s", tok ? tok : "?");
	}
	free(line);
	fclose(f);
	return 0;
}

/* Unmount a dead mount: lazily, since nothing can be flushed to a daemon
 * that is gone. */
static int detach(const char *mnt)
{
	int status;
	pid_t pid;

	if (geteuid() == 0)
		return umount2(mnt, MNT_DETACH) ? -errno : 0;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", "-u", "-z", "--", mnt, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EPERM;
}

/* The nearest mount above mnt (its parents walked up to /) is a dliofs
 * mount: mnt is a directory it serves. Mounting there would make the daemon
 * below answer for the new mountpoint, and every access to the new mount
 * would pass through it. 0, or -EBUSY (said). */
static int inside_dliofs(const char *mnt)
{
	char up[4096], type[128], *slash;

	if (strlen(mnt) >= sizeof(up))
		return 0;
	memcpy(up, mnt, strlen(mnt) + 1);
	while ((slash = strrchr(up, '/')) && slash != up) {
		*slash = 0;
		if (top_fstype(up, type, sizeof(type)))
			return 0;
		if (!type[0])
			continue; /* not a mount point: its parent's mount holds it */
		if (strcmp(type, DL_FSTYPE))
			return 0;
		fprintf(stderr,
			"dliofs: %s is inside the dliofs mount %s; mount outside it (a dliofs "
			"mount cannot hold another)\n",
			mnt, up);
		return -EBUSY;
	}
	return 0;
}

int dl_fs_mountpoint_check(const char *mnt)
{
	char type[128];
	struct statfs sf;
	int ret, removed = 0;

	ret = inside_dliofs(mnt);
	if (ret)
		return ret;

	for (int i = 0; i < DL_MAX_DEAD; i++) {
		ret = top_fstype(mnt, type, sizeof(type));
		if (ret) {
			/* No mount table: nothing to tell, mount as before. */
			return 0;
		}
		if (strncmp(type, "fuse", 4) || (type[4] && type[4] != '.'))
			break;	/* not FUSE (or nothing): mounting over it is fine */
		/* statfs always reaches the daemon; stat may be answered from the
		 * kernel's attribute cache for a while after the daemon died. */
		if (statfs(mnt, &sf) == 0) {
			if (strcmp(type, DL_FSTYPE))
				break;	/* another live FUSE file system: as before */
			fprintf(stderr,
				"dliofs: %s: already mounted by dliofs; unmount it first "
				"(dliofs umount %s)\n",
				mnt, mnt);
			return -EBUSY;
		}
		if (errno != ENOTCONN)
			break;	/* let the mount itself say what is wrong */
		if (strcmp(type, DL_FSTYPE)) {
			fprintf(stderr,
				"dliofs: %s: a dead %s mount is there (its daemon is gone); remove it "
				"with: fusermount3 -u -z %s\n",
				mnt, type, mnt);
			return -ENOTCONN;
		}
		ret = detach(mnt);
		if (ret) {
			fprintf(stderr,
				"dliofs: %s: cannot remove the dead dliofs mount there: %s; remove it "
				"with: fusermount3 -u -z %s\n",
				mnt, strerror(-ret), mnt);
			return -ENOTCONN;
		}
		removed++;
	}
	if (removed)
		fprintf(stderr, "dliofs: %s: removed %d dead dliofs mount%s (daemon killed)\n", mnt,
			removed, removed == 1 ? "" : "s");
	return 0;
}
