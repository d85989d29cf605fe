/* HeadObject and GetObject of a sink's object: the size it was written
 * with, its ETag, and deterministic bytes generated into libmicrohttpd's
 * send buffer over the requested range (what was written was not kept). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "dliofs/clock.h"
#include "dliofs/prng.h"
#include "s3_i.h"

struct sink_body {
	struct dl_s3 *s;
	uint64_t key, off, len;
	struct dl_pacer_req req;
	struct dl_pacer_result res;
	int paced;
};

static ssize_t sink_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct sink_body *sb = cls;
	size_t n;

	if (pos >= sb->len)
		return MHD_CONTENT_READER_END_OF_STREAM;
	n = sb->len - pos < max ? (size_t)(sb->len - pos) : max;
	dl_prng_fill(sb->key, sb->off + pos, buf, n);
	return (ssize_t)n;
}

static void sink_body_free(void *cls)
{
	struct sink_body *sb = cls;

	if (sb->paced)
		dl_pacer_complete(sb->s->pacer, &sb->req, &sb->res, dl_mono_ns());
	free(sb);
}

enum MHD_Result dl_s3_sink_get(struct dl_s3 *s, const struct dl_s3_bucket *b, const char *key,
			       struct MHD_Connection *c, int head)
{
	char etag[DL_S3_ETAG_MAX], date[64], cr[96];
	uint64_t size, mtime;
	struct sink_body *sb;
	struct MHD_Response *r;
	enum MHD_Result ret;
	int rr;

	if (dl_s3_sink_stat(b->sink, key, &size, &mtime, etag, sizeof(etag)))
		return dl_s3_reply_error(c, MHD_HTTP_NOT_FOUND, "NoSuchKey",
					 "The specified key does not exist.", key);
	sb = calloc(1, sizeof(*sb));
	if (!sb)
		return MHD_NO;
	sb->s = s;
	sb->key = dl_s3_sink_bytes_key(b->sink, key);
	sb->len = size;
	rr = dl_s3_parse_range(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Range"), size,
			       &sb->off, &sb->len);
	if (rr < 0) {
		free(sb);
		snprintf(cr, sizeof(cr), "bytes */%" PRIu64, size);
		return dl_s3_reply_error_hdr(c, MHD_HTTP_RANGE_NOT_SATISFIABLE, "InvalidRange",
					     "The requested range is not satisfiable", key,
					     "Content-Range", cr);
	}
	sb->req = (struct dl_pacer_req){.cls = head ? DL_OP_META : DL_OP_READ, .file_id = sb->key,
					.off = head ? 0 : sb->off, .len = head ? 0 : sb->len,
					.file_size = size};
	sb->paced = dl_s3_pace(s, c, &sb->req, &sb->res);
	r = MHD_create_response_from_callback(sb->len, 64 * 1024, sink_read, sb, sink_body_free);
	if (!r) {
		sink_body_free(sb);
		return MHD_NO;
	}
	dl_s3_http_date(mtime, date, sizeof(date));
	MHD_add_response_header(r, "ETag", etag);
	MHD_add_response_header(r, "Last-Modified", date);
	MHD_add_response_header(r, "Accept-Ranges", "bytes");
	MHD_add_response_header(r, "Content-Type", "application/octet-stream");
	MHD_add_response_header(r, "Server", "dliofs");
	if (rr > 0) {
		snprintf(cr, sizeof(cr), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, sb->off,
			 sb->off + sb->len - 1, size);
		MHD_add_response_header(r, "Content-Range", cr);
	}
	ret = MHD_queue_response(c, rr > 0 ? MHD_HTTP_PARTIAL_CONTENT : MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}
