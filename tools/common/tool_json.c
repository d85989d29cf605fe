/* --json FILE|- (tool_json_i.h). */
#include <errno.h>
#include <string.h>

#include "tool_json_i.h"

static int is_stdout(const char *path) { return !strcmp(path, "-"); }

FILE *tool_json_open(const char *path) { return is_stdout(path) ? stdout : fopen(path, "w"); }

int tool_json_close(FILE *f)
{
	if (f == stdout)
		return fflush(f) ? -errno : 0;
	return fclose(f) ? -errno : 0;
}

FILE *tool_table_stream(const char *json) { return json && is_stdout(json) ? stderr : stdout; }
