/* Helper files found relative to the running binary (tool_path_i.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dliofs/exepath.h"
#include "tool_path_i.h"

#ifndef DL_HELPER_BUILD_REL
#error "meson.build defines DL_HELPER_BUILD_REL"
#endif
#ifndef DL_HELPER_INSTALL_REL
#error "meson.build defines DL_HELPER_INSTALL_REL"
#endif
#ifndef DL_LIB_INSTALL_REL
#error "meson.build defines DL_LIB_INSTALL_REL"
#endif

/* dir/rel/name ("rel" absolute: rel/name) when readable. */
static int candidate(const char *dir, const char *rel, const char *name, char *path, size_t len)
{
	int n = rel[0] == '/' ? snprintf(path, len, "%s/%s", rel, name)
			      : snprintf(path, len, "%s/%s/%s", dir, rel, name);

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return access(path, R_OK) ? -errno : 0;
}

static int find(const char *const rels[], size_t nrels, const char *name, char *path,
		size_t len)
{
	char dir[PATH_MAX], tried[2 * PATH_MAX + 8] = "";
	size_t used = 0;
	int ret = dl_exe_dir(dir, sizeof(dir));

	if (ret) {
		snprintf(path, len, "/proc/self/exe: %s", strerror(-ret));
		return -ENOENT;
	}
	for (size_t i = 0; i < nrels; i++) {
		int n;

		if (!candidate(dir, rels[i], name, path, len))
			return 0;
		n = snprintf(tried + used, sizeof(tried) - used, "%s%s", used ? ", " : "", path);
		if (n > 0 && (size_t)n < sizeof(tried) - used)
			used += (size_t)n;
	}
	snprintf(path, len, "%s", tried);
	return -ENOENT;
}

int tool_helper(const char *env, const char *rel, char *path, size_t len)
{
	static const char *const rels[] = {DL_HELPER_BUILD_REL, DL_HELPER_INSTALL_REL};
	const char *e = env ? getenv(env) : NULL;

	if (e && *e) {
		int n = snprintf(path, len, "%s", e);

		return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
	}
	return find(rels, sizeof(rels) / sizeof(rels[0]), rel, path, len);
}

int tool_library(const char *name, char *path, size_t len)
{
	static const char *const rels[] = {".", DL_LIB_INSTALL_REL};

	return find(rels, sizeof(rels) / sizeof(rels[0]), name, path, len);
}
