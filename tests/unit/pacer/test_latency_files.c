/* empirical(FILE) latency tables: the file is named by whoever writes a
 * config or a live `set` (a client of the mount, through .dliofs/pacer), so
 * what is not a small regular file is refused at once: /dev/zero used to
 * be read until memory ran out, a FIFO blocked the caller for ever. Found
 * by tests/fuzz/fuzz_pacer_set. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dliofs/pacer.h"
#include "tap.h"

static int set(const char *value, char *err, size_t len)
{
	struct dl_pacer_cfg cfg;
	int ret;

	dl_pacer_cfg_init(&cfg);
	ret = dl_pacer_cfg_set(&cfg, "read.latency", value, err, len);
	dl_pacer_cfg_free(&cfg);
	return ret;
}

int main(void)
{
	char dir[] = "/tmp/dliofs-lat-XXXXXX", path[512], spec[600], err[512];
	FILE *f;

	/* A hang is a failure, not a stuck test run; and a table that grows
	 * without end fails here rather than taking the machine's memory
	 * (ASan's shadow needs an unlimited address space). */
	alarm(60);
#ifndef __SANITIZE_ADDRESS__
	{
		struct rlimit rl = { 2ULL << 30, 2ULL << 30 };

		setrlimit(RLIMIT_AS, &rl);
	}
#endif
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	CHECK(set("empirical(/dev/zero)", err, sizeof(err)) == -EINVAL &&
		      strstr(err, "/dev/zero") && strstr(err, "not a regular file"),
	      "/dev/zero: %s", err);
	CHECK(set("empirical(/tmp)", err, sizeof(err)) == -EINVAL &&
		      strstr(err, "not a regular file"),
	      "a directory: %s", err);

	snprintf(path, sizeof(path), "%s/fifo", dir);
	CHECK(mkfifo(path, 0600) == 0, "mkfifo");
	snprintf(spec, sizeof(spec), "empirical(%s)", path);
	CHECK(set(spec, err, sizeof(err)) == -EINVAL && strstr(err, "not a regular file"),
	      "a FIFO (no writer): %s", err);
	unlink(path);

	/* A regular file past the size limit (sparse: costs no disk). */
	snprintf(path, sizeof(path), "%s/huge", dir);
	f = fopen(path, "w");
	CHECK(f && ftruncate(fileno(f), 1LL << 30) == 0, "sparse file");
	if (f)
		fclose(f);
	snprintf(spec, sizeof(spec), "empirical(%s)", path);
	CHECK(set(spec, err, sizeof(err)) == -EINVAL && strstr(err, "larger than"),
	      "1 GiB file: %s", err);
	unlink(path);

	/* A small one still loads. */
	snprintf(path, sizeof(path), "%s/ok", dir);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "unit us\n100\n200 3\n");
		fclose(f);
	}
	snprintf(spec, sizeof(spec), "empirical(%s)", path);
	CHECK(set(spec, err, sizeof(err)) == 0, "small table: %s", err);
	unlink(path);
	rmdir(dir);
	return tap_done("latency_files");
}
