/* aws-chunked bodies (Content-Encoding: aws-chunked; x-amz-content-sha256
 * STREAMING-...): inside the HTTP body, chunks "<hex>[;chunk-signature=
 * <64 hex>]\r\n<data>\r\n", a last chunk of size 0, then trailer lines
 * "name:value\r\n" (checksums, the trailer's signature) and an empty line.
 * The decoder takes the body in whatever pieces the HTTP library hands
 * over and reports chunks, data and trailers to its caller. */
#include <errno.h>
#include <string.h>

#include "s3_i.h"

enum { ST_HDR, ST_DATA, ST_DATA_END, ST_TRAILER, ST_DONE, ST_ERR };

/* Chunks larger than this are not what any client sends: refuse. */
#define CHUNK_MAX (1ULL << 36)

static int chunk_header(struct dl_s3_chunked *d, const struct dl_s3_chunked_ops *ops, void *cls)
{
	const char *p = d->line, *sig = "";
	uint64_t size = 0;
	int nd = 0;

	for (; dl_s3_hexval(*p) >= 0; p++, nd++) {
		if (size > CHUNK_MAX)
			return -EINVAL;
		size = size * 16 + (uint64_t)dl_s3_hexval(*p);
	}
	if (nd == 0 || size > CHUNK_MAX)
		return -EINVAL;
	if (*p == ';') {
		if (strncmp(p + 1, "chunk-signature=", 16) != 0)
			return -EINVAL;
		sig = p + 17;
		if (strlen(sig) != 64)
			return -EINVAL;
		for (int i = 0; i < 64; i++)
			if (dl_s3_hexval(sig[i]) < 0)
				return -EINVAL;
	} else if (*p) {
		return -EINVAL;
	}
	d->left = size;
	if (ops->chunk && ops->chunk(cls, size, sig))
		return -EBADMSG;
	if (size == 0) {
		if (ops->chunk_end && ops->chunk_end(cls))
			return -EBADMSG;
		d->state = ST_TRAILER;
	} else {
		d->state = ST_DATA;
	}
	return 0;
}

static int trailer_line(struct dl_s3_chunked *d, const struct dl_s3_chunked_ops *ops, void *cls)
{
	char *colon;

	if (d->ll == 0) {
		d->state = ST_DONE;
		return 0;
	}
	colon = strchr(d->line, ':');
	if (!colon || colon == d->line)
		return -EINVAL;
	*colon = 0;
	if (ops->trailer && ops->trailer(cls, d->line, colon + 1 + strspn(colon + 1, " ")))
		return -EBADMSG;
	return 0;
}

int dl_s3_chunked_feed(struct dl_s3_chunked *d, const char *p, size_t n,
		       const struct dl_s3_chunked_ops *ops, void *cls)
{
	int ret = 0;

	while (n && d->state != ST_ERR) {
		switch (d->state) {
		case ST_HDR:
		case ST_TRAILER:
		case ST_DATA_END:
			/* A line, its CRLF required; ST_DATA_END's is empty. */
			if (*p == '\n') {
				if (d->ll == 0 || d->line[d->ll - 1] != '\r') {
					ret = -EINVAL;
					break;
				}
				d->line[--d->ll] = 0;
				if (d->state == ST_DATA_END) {
					ret = d->ll ? -EINVAL : 0;
					d->state = ST_HDR;
				} else if (d->state == ST_HDR) {
					ret = chunk_header(d, ops, cls);
				} else {
					ret = trailer_line(d, ops, cls);
				}
				d->ll = 0;
			} else if (d->ll + 2 >= sizeof(d->line)) {
				ret = -EINVAL;
			} else {
				d->line[d->ll++] = *p;
				d->line[d->ll] = 0;
			}
			p++;
			n--;
			break;
		case ST_DATA: {
			size_t k = n < d->left ? n : (size_t)d->left;

			if (ops->data && ops->data(cls, p, k)) {
				ret = -EBADMSG;
				break;
			}
			p += k;
			n -= k;
			d->left -= k;
			if (d->left == 0) {
				if (ops->chunk_end && ops->chunk_end(cls)) {
					ret = -EBADMSG;
					break;
				}
				d->state = ST_DATA_END;
			}
			break;
		}
		case ST_DONE:
			ret = -EINVAL;	/* bytes after the end */
			break;
		}
		if (ret)
			d->state = ST_ERR;
	}
	return ret;
}

int dl_s3_chunked_done(const struct dl_s3_chunked *d)
{
	/* Some writers end with the last chunk or its trailers and no empty line. */
	return d->state == ST_DONE || (d->state == ST_TRAILER && d->ll == 0);
}
