/* Trace op names: one table for the trace: section, the control file, the
 * effective config and dlio-trace. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dliofs/trace.h"

static const char *const op_names[DL_TOP__COUNT] = {
	[DL_TOP_LOOKUP] = "lookup",	  [DL_TOP_GETATTR] = "getattr",
	[DL_TOP_OPEN] = "open",		  [DL_TOP_READ] = "read",
	[DL_TOP_WRITE] = "write",	  [DL_TOP_READDIR] = "readdir",
	[DL_TOP_OPENDIR] = "opendir",	  [DL_TOP_RELEASE] = "release",
	[DL_TOP_STATFS] = "statfs",	  [DL_TOP_CREATE] = "create",
	[DL_TOP_FSYNC] = "fsync",	  [DL_TOP_OTHER] = "other",
	[DL_TOP_FLUSH] = "flush",	  [DL_TOP_RELEASEDIR] = "releasedir",
	[DL_TOP_SETATTR] = "setattr",	  [DL_TOP_READLINK] = "readlink",
	[DL_TOP_MKNOD] = "mknod",	  [DL_TOP_UNLINK] = "unlink",
	[DL_TOP_RENAME] = "rename",	  [DL_TOP_FSYNCDIR] = "fsyncdir",
};

_Static_assert(DL_TOP__COUNT <= 32, "trace op masks are 32 bits");

const char *dl_trace_op_name(unsigned op)
{
	return op < DL_TOP__COUNT && op_names[op] ? op_names[op] : "other";
}

int dl_trace_op_bit(const char *name, uint32_t *bit)
{
	if (!strcmp(name, "all")) {
		*bit = ~0u;
		return 0;
	}
	for (unsigned i = 1; i < DL_TOP__COUNT; i++) {
		if (!strcmp(name, op_names[i])) {
			*bit = 1u << i;
			return 0;
		}
	}
	return -EINVAL;
}

int dl_trace_ops_parse(const char *s, uint32_t *mask, char *err, size_t errlen)
{
	char buf[512], *save = NULL;
	uint32_t m = 0, bit;

	if (!s || !*s) {
		*mask = ~0u;
		return 0;
	}
	snprintf(buf, sizeof(buf), "%s", s);
	for (char *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
		if (dl_trace_op_bit(t, &bit)) {
			size_t j = (size_t)snprintf(err, errlen, "unknown op '%s' (expected", t);

			for (unsigned i = 1; i < DL_TOP__COUNT && j < errlen; i++)
				j += (size_t)snprintf(err + j, errlen - j, " %s,", op_names[i]);
			if (j < errlen)
				snprintf(err + j, errlen - j, " or all)");
			return -EINVAL;
		}
		m |= bit;
	}
	*mask = m;
	return 0;
}
