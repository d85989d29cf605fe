/* HeadObject and GetObject: the bytes are generated into libmicrohttpd's
 * send buffer as it asks (a callback response over the requested range,
 * 256 KiB at a time), never a copy of the whole object. A body of at most
 * that block is generated at once into a buffer of its size, which
 * libmicrohttpd sends with the headers in one sendmsg (a callback response
 * sends them apart: two writes and two segments per small GET, 0.6x
 * nginx's requests/s for 4 KiB objects); the memory per response is at
 * most one block either way. The pacer decides when the reply starts, as
 * it decides when the mount's read is answered: one GET, or one range, is
 * one request to the storage. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/clock.h"
#include "dliofs/trace.h"
#include "obs.h"
#include "s3_i.h"

struct body {
	struct dl_s3 *s;
	struct dl_file f;
	uint64_t off, len;
	struct dl_pacer_req req;
	struct dl_pacer_result res;
	int paced;
	char *data;	/* the whole body, when it fits one block */
	int head;
	uint64_t t0;	/* arrival, for the trace */
	char *tkey, *tjob;	/* "bucket/key" and the job's name, when a trace runs (one
				 * allocation: a small struct to clear per request) */
};

#define BLOCK (256 * 1024)

static ssize_t body_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct body *bd = cls;
	size_t n;

	if (pos >= bd->len)
		return MHD_CONTENT_READER_END_OF_STREAM;
	n = bd->len - pos < max ? (size_t)(bd->len - pos) : max;
	if (dl_file_read(bd->s->fmt, &bd->f, buf, bd->off + pos, n))
		return MHD_CONTENT_READER_END_WITH_ERROR;
	return (ssize_t)n;
}

static void body_free(void *cls)
{
	struct body *bd = cls;
	uint64_t now = dl_mono_ns();

	if (bd->paced)
		dl_pacer_complete(bd->s->pacer, &bd->req, &bd->res, now);
	if (bd->tkey)
		dl_s3_obs_record(bd->s->obs, bd->head ? DL_TOP_GETATTR : DL_TOP_READ, bd->req.file_id,
				 bd->tkey, bd->req.job, bd->tjob, bd->t0, now, bd->res.queue_ns,
				 bd->req.off, bd->req.len, bd->head ? 0 : (int64_t)bd->len);
	free(bd->tkey);
	free(bd->data);
	free(bd);
}

/* The reply's body: HEAD's is empty but its Content-Length is the GET's. */
static struct MHD_Response *body_response(struct body *bd, int head)
{
	if (!head && bd->len <= BLOCK) {
		bd->data = malloc(bd->len ? bd->len : 1);
		if (!bd->data || dl_file_read(bd->s->fmt, &bd->f, bd->data, bd->off, bd->len))
			return NULL;
		return MHD_create_response_from_buffer_with_free_callback_cls(bd->len, bd->data,
									     body_free, bd);
	}
	return MHD_create_response_from_callback(bd->len, head ? 4096 : BLOCK, body_read, bd,
						 body_free);
}

enum MHD_Result dl_s3_get_object(struct dl_s3 *s, const struct dl_s3_bucket *b, const char *key,
				 struct MHD_Connection *c, int head)
{
	char etag[40], cr[96];
	struct MHD_Response *r;
	enum MHD_Result ret;
	struct body *bd;
	unsigned status = MHD_HTTP_OK;
	int rr;

	bd = calloc(1, sizeof(*bd));
	if (!bd)
		return MHD_NO;
	bd->s = s;
	if (dl_s3_key_lookup(s, b, key, &bd->f)) {
		free(bd);
		return dl_s3_reply_error(c, MHD_HTTP_NOT_FOUND, "NoSuchKey",
					 "The specified key does not exist.", key);
	}
	bd->off = 0;
	bd->len = bd->f.size;
	rr = dl_s3_parse_range(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Range"), bd->f.size,
			 &bd->off, &bd->len);
	if (rr < 0) {
		struct dl_s3_buf x = {0};
		struct MHD_Response *er;
		enum MHD_Result e;

		/* S3's 416: the error document, and the size in Content-Range. */
		snprintf(cr, sizeof(cr), "bytes */%" PRIu64, bd->f.size);
		free(bd);
		dl_s3_buf_printf(&x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>"
				 "InvalidRange</Code><Message>The requested range is not satisfiable"
				 "</Message><Resource>");
		dl_s3_buf_xml(&x, key);
		dl_s3_buf_printf(&x, "</Resource><RequestId>0</RequestId></Error>");
		if (x.oom) {
			dl_s3_buf_free(&x);
			return MHD_NO;
		}
		er = MHD_create_response_from_buffer(x.len, x.p, MHD_RESPMEM_MUST_FREE);
		if (!er) {
			dl_s3_buf_free(&x);
			return MHD_NO;
		}
		MHD_add_response_header(er, "Content-Type", "application/xml");
		MHD_add_response_header(er, "Content-Range", cr);
		e = MHD_queue_response(c, MHD_HTTP_RANGE_NOT_SATISFIABLE, er);
		MHD_destroy_response(er);
		return e;
	}
	if (rr > 0)
		status = MHD_HTTP_PARTIAL_CONTENT;
	bd->req = (struct dl_pacer_req){.cls = head ? DL_OP_META : DL_OP_READ,
					.file_id = bd->f.key ^ bd->f.part,
					.off = head ? 0 : bd->off, .len = head ? 0 : bd->len,
					.file_size = bd->f.size};
	bd->t0 = dl_mono_ns();
	bd->head = head;
	bd->paced = dl_s3_pace(s, c, &bd->req, &bd->res);
	if (dl_s3_obs_tracing(s->obs)) {
		char job[256];
		uint32_t id = dl_s3_job(c, job, sizeof(job));
		size_t kl = strlen(b->ds->name) + 1 + strlen(key) + 1;

		/* Out of memory: the request goes untraced. */
		bd->tkey = malloc(kl + strlen(job) + 1);
		if (bd->tkey) {
			snprintf(bd->tkey, kl, "%s/%s", b->ds->name, key);
			bd->tjob = bd->tkey + kl;
			memcpy(bd->tjob, job, strlen(job) + 1);
		}
		if (!bd->paced)
			bd->req.job = id;
	}
	dl_s3_etag(&bd->f, etag, sizeof(etag));

	r = body_response(bd, head);
	if (!r) {
		body_free(bd);
		return MHD_NO;
	}
	MHD_add_response_header(r, "ETag", etag);
	MHD_add_response_header(r, "Last-Modified", s->last_modified);
	MHD_add_response_header(r, "Accept-Ranges", "bytes");
	MHD_add_response_header(r, "Content-Type", "application/octet-stream");
	MHD_add_response_header(r, "Server", "dliofs");
	if (rr > 0) {
		snprintf(cr, sizeof(cr), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, bd->off,
			 bd->off + bd->len - 1, bd->f.size);
		MHD_add_response_header(r, "Content-Range", cr);
	}
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}
