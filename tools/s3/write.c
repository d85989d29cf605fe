/* Writes into a writable backing directory: PutObject, UploadPart,
 * Create/Complete/AbortMultipartUpload, DeleteObject and DeleteObjects.
 * A write is decided from its headers (the bucket, the key, the operation,
 * the signature), so a refused one is answered before its body is sent
 * (`Expect: 100-continue` gets the error, not 100); an accepted one's body
 * goes into a temporary file beside its place and is renamed there only
 * once every check of the body passed: a failed or cut upload leaves
 * nothing, and a reader never sees half an object. Each write is one
 * request to the pacer's write model, its reply held until it is due. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dliofs/clock.h"
#include "s3_i.h"

/* What a write's body may be, in memory: DeleteObjects' 1,000 keys, a
 * Complete of 10,000 parts. */
#define XML_BODY_MAX (4u << 20)

static const char *arg(struct MHD_Connection *c, const char *k)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
}

/* ?uploads and ?delete come without a value (a NULL one to libmicrohttpd). */
static int has_arg(struct MHD_Connection *c, const char *k)
{
	const char *v = NULL;
	size_t vl = 0;

	return MHD_lookup_connection_value_n(c, MHD_GET_ARGUMENT_KIND, k, strlen(k), &v, &vl) ==
	       MHD_YES;
}

static void pace_write(struct dl_s3 *s, struct MHD_Connection *c, int cls, const char *key,
		       uint64_t len)
{
	struct dl_pacer_req req = {.cls = cls, .len = len, .file_size = len};
	struct dl_pacer_result res;
	uint64_t h = 1469598103934665603ULL;

	for (const char *p = key; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	req.file_id = h;
	if (dl_s3_pace(s, c, &req, &res))
		dl_pacer_complete(s->pacer, &req, &res, dl_mono_ns());
}

static enum MHD_Result reply_errno(struct MHD_Connection *c, int err, const char *key)
{
	switch (err) {
	case -ENOTDIR:
		return dl_s3_reply_error(c, 409, "InvalidRequest",
					 "A folder in the key is an object in the backing directory.",
					 key);
	case -EISDIR:
	case -ENOTEMPTY:
	case -EEXIST:
		return dl_s3_reply_error(c, 409, "InvalidRequest",
					 "The key is a folder with objects in the backing directory.",
					 key);
	case -EINVAL:
		return dl_s3_reply_error(c, 400, "InvalidArgument",
					 "The key is not a usable path here (empty, '.', '..' or "
					 ".dliofs* components, or a leading '/').", key);
	case -ENOSPC:
	case -EDQUOT:
		return dl_s3_reply_error(c, 507, "InsufficientStorage",
					 "The backing directory is full (a sink: it holds its max_entries objects).",
					 key);
	case -EACCES:
	case -EPERM:
	case -EROFS:
		return dl_s3_reply_error(c, 403, "AccessDenied",
					 "The backing directory refused the write.", key);
	default:
		return dl_s3_reply_error(c, 500, "InternalError", strerror(-err), key);
	}
}

void dl_s3_write_free(struct dl_s3_write *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	if (w->tmp[0] && w->dirfd >= 0)
		unlinkat(w->dirfd, w->tmp, 0);	/* cut or refused: nothing stays */
	if (w->dirfd >= 0)
		close(w->dirfd);
	dl_s3_body_free(&w->body);
	free(w);
}

int dl_s3_write_begin(struct dl_s3 *s, struct MHD_Connection *c, const struct dl_s3_bucket *b,
		      const char *key, const char *method, const struct dl_s3_sigv4 *sv,
		      struct dl_s3_write **out, enum MHD_Result *reply)
{
	const char *upload = arg(c, "uploadId"), *partnum = arg(c, "partNumber");
	struct dl_s3_write *w;
	size_t mem_max = 0;
	int put = !strcmp(method, "PUT"), post = !strcmp(method, "POST");
	int copy = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-amz-copy-source") != NULL;
	int ret, dir;

	*out = NULL;
	if (!b->ds && b->dirfd >= 0 && !b->bk->writable) {
		*reply = dl_s3_reply_error(c, 403, "AccessDenied",
					   "The backing directory is read-only (writable: false).",
					   b->name);
		return 0;
	}
	if (b->ds) {
		*reply = dl_s3_reply_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "MethodNotAllowed",
					   "The dataset is read-only: writes are not allowed.",
					   b->name);
		return 0;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		*reply = MHD_NO;
		return 0;
	}
	w->s = s;
	w->b = b;
	w->fd = -1;
	w->dirfd = -1;
	snprintf(w->key, sizeof(w->key), "%s", key);
	if (*key == 0) {
		if (post && has_arg(c, "delete")) {
			w->op = DL_S3_W_DELETE_MULTI;
			mem_max = XML_BODY_MAX;
		} else {
			*reply = dl_s3_reply_error(c, 501, "NotImplemented",
						   "This bucket operation is not implemented.",
						   b->name);
			goto refuse;
		}
	} else if (strlen(key) >= DL_S3_KEY_MAX || dl_s3_store_key_ok(key, &dir)) {
		*reply = reply_errno(c, -EINVAL, key);
		goto refuse;
	} else if (put && copy && (upload || partnum || dir)) {
		*reply = dl_s3_reply_error(c, 501, "NotImplemented",
					   "UploadPartCopy and copies onto a folder marker are not implemented.",
					   key);
		goto refuse;
	} else if (put && (upload || partnum)) {
		char *end;
		unsigned long n = partnum ? strtoul(partnum, &end, 10) : 0;

		if (!upload || !partnum || *partnum < '0' || *partnum > '9' || *end || n < 1 ||
		    n > 10000) {
			*reply = dl_s3_reply_error(c, 400, "InvalidArgument",
						   "Part number must be an integer between 1 and 10000, inclusive, with an uploadId.",
						   partnum ? partnum : "");
			goto refuse;
		}
		w->op = DL_S3_W_PART;
		w->part = (unsigned)n;
		snprintf(w->upload, sizeof(w->upload), "%s", upload);
		if (b->sink)
			ret = dl_s3_sink_mp_exists(b->sink, upload, key);
		else
			ret = w->dirfd = dl_s3_mp_open(b, upload, key);
		if (ret < 0) {
			*reply = dl_s3_reply_error(c, 404, "NoSuchUpload",
						   "The specified upload does not exist.", upload);
			goto refuse;
		}
	} else if (put) {
		w->op = copy ? DL_S3_W_COPY : DL_S3_W_PUT;
		w->dir_marker = dir;
		if (!b->sink)
			w->dirfd = dl_s3_store_parent(b, key, 1, w->leaf, sizeof(w->leaf));
		if (!b->sink && w->dirfd < 0) {
			*reply = reply_errno(c, w->dirfd, key);
			goto refuse;
		}
	} else if (post && has_arg(c, "uploads")) {
		w->op = DL_S3_W_CREATE;
	} else if (post && upload) {
		w->op = DL_S3_W_COMPLETE;
		snprintf(w->upload, sizeof(w->upload), "%s", upload);
		mem_max = XML_BODY_MAX;
	} else if (!strcmp(method, "DELETE")) {
		w->op = upload ? DL_S3_W_ABORT : DL_S3_W_DELETE;
		if (upload)
			snprintf(w->upload, sizeof(w->upload), "%s", upload);
	} else {
		*reply = dl_s3_reply_error(c, 501, "NotImplemented",
					   "This object operation is not implemented.", key);
		goto refuse;
	}
	if (((w->op == DL_S3_W_PUT && !w->dir_marker) || w->op == DL_S3_W_PART ||
	     w->op == DL_S3_W_COPY) && !b->sink) {
		w->fd = dl_s3_store_tmp(w->dirfd, w->tmp, sizeof(w->tmp));
		if (w->fd < 0) {
			ret = w->fd;
			w->tmp[0] = 0;
			*reply = reply_errno(c, ret, key);
			goto refuse;
		}
	}
	if (dl_s3_body_begin(&w->body, s, c, sv, w->fd, mem_max)) {
		*reply = dl_s3_body_reply_error(&w->body, c, key);
		goto refuse;
	}
	w->body.discard = b->sink && (w->op == DL_S3_W_PUT || w->op == DL_S3_W_PART);
	*out = w;
	return 1;
refuse:
	dl_s3_write_free(w);
	return 0;
}

void dl_s3_write_feed(struct dl_s3_write *w, const char *p, size_t n)
{
	dl_s3_body_feed(&w->body, p, n);
}

static void md5_hex(const unsigned char md5[16], char *out, size_t len)
{
	snprintf(out, len, "\"");
	for (int i = 0; i < 16; i++)
		snprintf(out + 1 + 2 * i, 3, "%02x", md5[i]);
	snprintf(out + 33, len - 33, "\"");
}

static enum MHD_Result reply_empty(struct MHD_Connection *c, unsigned status, const char *etag,
				   const struct dl_s3_body *bd)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"",
								 MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	if (etag)
		MHD_add_response_header(r, "ETag", etag);
	if (bd && bd->sum.alg && bd->sum_want[0]) {
		char h[48];

		/* The checksum the client sent, which this body matched. */
		snprintf(h, sizeof(h), "x-amz-checksum-%s", dl_s3_sum_name(bd->sum.alg));
		MHD_add_response_header(r, h, bd->sum_want);
	}
	MHD_add_response_header(r, "Server", "dliofs");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result finish_put(struct dl_s3_write *w, struct MHD_Connection *c)
{
	char etag[DL_S3_ETAG_MAX + 4];
	int ret;

	md5_hex(w->body.md5_raw, etag, sizeof(etag));
	if (w->b->sink && w->dir_marker && w->body.n)
		return dl_s3_reply_error(c, 400, "InvalidRequest",
					 "A folder marker (a key ending in '/') has no data here.",
					 w->key);
	if (w->b->sink) {
		ret = w->op == DL_S3_W_PART
			      ? dl_s3_sink_mp_part(w->b->sink, w->upload, w->key, w->part, w->body.n,
						   w->body.md5_raw)
			      : dl_s3_sink_put(w->b->sink, w->key, w->body.n, etag);
		if (ret == -ENOENT)
			return dl_s3_reply_error(c, 404, "NoSuchUpload",
						 "The specified upload does not exist.", w->upload);
		if (ret)
			return reply_errno(c, ret, w->key);
	} else if (w->dir_marker) {
		if (w->body.n)
			return dl_s3_reply_error(c, 400, "InvalidRequest",
						 "A folder marker (a key ending in '/') has no data here.",
						 w->key);
		ret = dl_s3_store_mkdir(w->dirfd, w->leaf);
		if (ret)
			return reply_errno(c, ret, w->key);
	} else if (w->op == DL_S3_W_PART) {
		ret = dl_s3_mp_part_commit(w->dirfd, w->tmp, w->part, w->body.md5_raw);
		if (ret)
			return reply_errno(c, ret, w->key);
		w->tmp[0] = 0;
	} else {
		dl_s3_store_set_etag(w->fd, etag);
		if (renameat(w->dirfd, w->tmp, w->dirfd, w->leaf))
			return reply_errno(c, -errno, w->key);
		w->tmp[0] = 0;
	}
	pace_write(w->s, c, DL_OP_WRITE, w->key, w->body.n);
	return reply_empty(c, MHD_HTTP_OK, etag, &w->body);
}

static enum MHD_Result finish_create(struct dl_s3_write *w, struct MHD_Connection *c)
{
	struct dl_s3_buf x = {0};
	char id[33];
	int ret = w->b->sink ? dl_s3_sink_mp_create(w->b->sink, w->key, id)
			     : dl_s3_mp_create(w->b, w->key, id);

	if (ret)
		return reply_errno(c, ret, w->key);
	pace_write(w->s, c, DL_OP_META, w->key, 0);
	dl_s3_buf_printf(&x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
			 "<InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/"
			 "2006-03-01/\"><Bucket>");
	dl_s3_buf_xml(&x, w->b->name);
	dl_s3_buf_printf(&x, "</Bucket><Key>");
	dl_s3_buf_xml(&x, w->key);
	dl_s3_buf_printf(&x, "</Key><UploadId>%s</UploadId></InitiateMultipartUploadResult>", id);
	return dl_s3_reply_buf(c, MHD_HTTP_OK, &x);
}

static enum MHD_Result finish_complete(struct dl_s3_write *w, struct MHD_Connection *c)
{
	struct dl_s3_xmlbody xb;
	struct dl_s3_buf x = {0};
	char etag[DL_S3_ETAG_MAX + 8];
	const char *code;
	int ret;

	if (dl_s3_xmlbody_parse(w->body.mem.p ? w->body.mem.p : "", w->body.mem.len,
				DL_S3_XML_COMPLETE, &xb))
		return dl_s3_reply_error(c, 400, "MalformedXML",
					 "The XML you provided was not well-formed or did not validate against our published schema.",
					 w->key);
	if (w->b->sink) {
		uint64_t size = 0;

		ret = dl_s3_sink_mp_complete(w->b->sink, w->upload, w->key, &xb, etag, sizeof(etag),
					     &size, &code);
		if (!ret)
			ret = dl_s3_sink_put(w->b->sink, w->key, size, etag);
	} else {
		ret = dl_s3_mp_complete(w->b, w->upload, w->key, &xb, etag, sizeof(etag), &code);
	}
	dl_s3_xmlbody_free(&xb);
	if (ret && code && !strcmp(code, "NoSuchUpload"))
		return dl_s3_reply_error(c, 404, code, "The specified upload does not exist.",
					 w->upload);
	if (ret && code)
		return dl_s3_reply_error(c, 400, code,
					 !strcmp(code, "InvalidPartOrder")
						 ? "The list of parts was not in ascending order."
						 : "One or more of the specified parts could not be found.",
					 w->key);
	if (ret)
		return reply_errno(c, ret, w->key);
	pace_write(w->s, c, DL_OP_META, w->key, 0);
	dl_s3_buf_printf(&x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
			 "<CompleteMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/"
			 "2006-03-01/\"><Location>/");
	dl_s3_buf_url(&x, w->b->name);
	dl_s3_buf_printf(&x, "/");
	dl_s3_buf_url(&x, w->key);
	dl_s3_buf_printf(&x, "</Location><Bucket>");
	dl_s3_buf_xml(&x, w->b->name);
	dl_s3_buf_printf(&x, "</Bucket><Key>");
	dl_s3_buf_xml(&x, w->key);
	dl_s3_buf_printf(&x, "</Key><ETag>");
	dl_s3_buf_xml(&x, etag);
	dl_s3_buf_printf(&x, "</ETag></CompleteMultipartUploadResult>");
	return dl_s3_reply_buf(c, MHD_HTTP_OK, &x);
}

static enum MHD_Result finish_delete_multi(struct dl_s3_write *w, struct MHD_Connection *c)
{
	struct dl_s3_xmlbody xb;
	struct dl_s3_buf x = {0};

	if (dl_s3_xmlbody_parse(w->body.mem.p ? w->body.mem.p : "", w->body.mem.len,
				DL_S3_XML_DELETE, &xb))
		return dl_s3_reply_error(c, 400, "MalformedXML",
					 "The XML you provided was not well-formed or did not validate against our published schema.",
					 w->b->name);
	dl_s3_buf_printf(&x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<DeleteResult xmlns="
			 "\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	for (size_t i = 0; i < xb.n; i++) {
		int ret = w->b->sink ? dl_s3_sink_delete(w->b->sink, xb.keys[i])
				     : dl_s3_store_delete(w->b, xb.keys[i]);

		pace_write(w->s, c, DL_OP_META, xb.keys[i], 0);
		if (ret) {
			dl_s3_buf_printf(&x, "<Error><Key>");
			dl_s3_buf_xml(&x, xb.keys[i]);
			dl_s3_buf_printf(&x, "</Key><Code>InternalError</Code><Message>");
			dl_s3_buf_xml(&x, strerror(-ret));
			dl_s3_buf_printf(&x, "</Message></Error>");
		} else if (!xb.quiet) {
			dl_s3_buf_printf(&x, "<Deleted><Key>");
			dl_s3_buf_xml(&x, xb.keys[i]);
			dl_s3_buf_printf(&x, "</Key></Deleted>");
		}
	}
	dl_s3_buf_printf(&x, "</DeleteResult>");
	dl_s3_xmlbody_free(&xb);
	return dl_s3_reply_buf(c, MHD_HTTP_OK, &x);
}

enum MHD_Result dl_s3_write_finish(struct dl_s3_write *w, struct MHD_Connection *c)
{
	int ret;

	if (dl_s3_body_end(&w->body))
		return dl_s3_body_reply_error(&w->body, c, w->key);
	switch (w->op) {
	case DL_S3_W_PUT:
	case DL_S3_W_PART:
		return finish_put(w, c);
	case DL_S3_W_CREATE:
		return finish_create(w, c);
	case DL_S3_W_COPY:
		if (w->body.n)
			return dl_s3_reply_error(c, 400, "InvalidRequest",
						 "A copy has no body.", w->key);
		return dl_s3_copy(w->s, c, w);
	case DL_S3_W_COMPLETE:
		return finish_complete(w, c);
	case DL_S3_W_ABORT:
		ret = w->b->sink ? dl_s3_sink_mp_abort(w->b->sink, w->upload, w->key)
				 : dl_s3_mp_abort(w->b, w->upload, w->key);
		if (ret == -ENOENT)
			return dl_s3_reply_error(c, 404, "NoSuchUpload",
						 "The specified upload does not exist.", w->upload);
		pace_write(w->s, c, DL_OP_META, w->key, 0);
		return ret ? reply_errno(c, ret, w->key) : reply_empty(c, 204, NULL, NULL);
	case DL_S3_W_DELETE:
		ret = w->b->sink ? dl_s3_sink_delete(w->b->sink, w->key)
				 : dl_s3_store_delete(w->b, w->key);
		pace_write(w->s, c, DL_OP_META, w->key, 0);
		return ret ? reply_errno(c, ret, w->key) : reply_empty(c, 204, NULL, NULL);
	case DL_S3_W_DELETE_MULTI:
		return finish_delete_multi(w, c);
	}
	return MHD_NO;
}
