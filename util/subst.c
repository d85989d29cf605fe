/* A token replaced by a value in a string (subst.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/subst.h"

/* Bytes of s with every tok replaced by with, NUL excluded. */
static size_t subst_len(const char *s, const char *tok, size_t wl)
{
	size_t tl = strlen(tok), n = strlen(s);

	for (const char *p = s; (p = strstr(p, tok)); p += tl)
		n = n - tl + wl;
	return n;
}

static void subst_copy(const char *s, const char *tok, const char *with, char *out)
{
	size_t tl = strlen(tok), wl = strlen(with);

	for (const char *hit; (hit = strstr(s, tok)); s = hit + tl) {
		memcpy(out, s, (size_t)(hit - s));
		out += hit - s;
		memcpy(out, with, wl);
		out += wl;
	}
	strcpy(out, s);
}

int dl_subst_into(const char *s, const char *tok, const char *with, char *out, size_t len)
{
	if (subst_len(s, tok, strlen(with)) >= len)
		return -ENAMETOOLONG;
	subst_copy(s, tok, with, out);
	return 0;
}

char *dl_subst(const char *s, const char *tok, const char *with)
{
	char *out = malloc(subst_len(s, tok, strlen(with)) + 1);

	if (out)
		subst_copy(s, tok, with, out);
	return out;
}
