/* The Range header of a GET: one range, as S3 takes it (several ranges,
 * or an invalid one, are ignored and the whole object is served). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "s3_i.h"

int dl_s3_parse_range(const char *h, uint64_t size, uint64_t *off, uint64_t *len)
{
	uint64_t a = 0, b = 0;
	char *end;
	int has_a, has_b;

	if (!h || strncmp(h, "bytes=", 6) != 0)
		return 0;
	h += 6;
	if (strchr(h, ','))
		return 0;	/* several ranges: S3 serves the whole object */
	has_a = *h >= '0' && *h <= '9';
	if (has_a) {
		errno = 0;
		a = strtoull(h, &end, 10);
		if (errno)
			return 0;
		h = end;
	}
	if (*h++ != '-')
		return 0;
	has_b = *h >= '0' && *h <= '9';
	if (has_b) {
		errno = 0;
		b = strtoull(h, &end, 10);
		if (errno || *end)
			return 0;
	} else if (*h) {
		return 0;
	}
	if (!has_a && !has_b)
		return 0;
	if (!has_a) {
		/* The last b bytes. */
		if (b == 0)
			return -1;
		*off = b >= size ? 0 : size - b;
		*len = size - *off;
		return size ? 1 : -1;
	}
	if (has_b && b < a)
		return 0;	/* invalid: ignored, as HTTP says */
	if (a >= size)
		return -1;
	*off = a;
	*len = (has_b && b < size ? b + 1 : size) - a;
	return 1;
}
