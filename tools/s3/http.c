/* Routing: which bucket and key a request names (path-style /bucket/key or
 * virtual-host Host: bucket.host), which operation it asks for, and S3's
 * error for everything this endpoint does not do. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "s3_i.h"

/* Query arguments that name an operation this endpoint lacks (?acl,
 * ?uploads, ?versioning ...): anything but the listing's and GET's own
 * parameters and a presigned URL's X-Amz-* ones. */
struct argcheck {
	const char *const *ok;
	const char *bad;
};

static const char *const bucket_args[] = {"list-type", "prefix", "delimiter", "max-keys",
	"continuation-token", "start-after", "marker", "encoding-type", "fetch-owner", "x-id",
	NULL};
static const char *const object_args[] = {"x-id", NULL};

static enum MHD_Result check_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				 const char *value)
{
	struct argcheck *ac = cls;

	(void)kind;
	(void)value;
	if (strncasecmp(key, "X-Amz-", 6) == 0 || strncmp(key, "response-", 9) == 0)
		return MHD_YES;
	for (const char *const *k = ac->ok; *k; k++)
		if (strcmp(*k, key) == 0)
			return MHD_YES;
	ac->bad = key;
	return MHD_NO;
}

static const char *unknown_arg(struct MHD_Connection *c, const char *const *ok)
{
	struct argcheck ac = {.ok = ok};

	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, check_arg, &ac);
	return ac.bad;
}

/* Host: bucket.rest[:port] names a bucket when its first labels are one. */
static const struct dl_s3_bucket *vhost_bucket(struct dl_s3 *s, struct MHD_Connection *c)
{
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
	const struct dl_s3_bucket *best = NULL;
	size_t bestlen = 0;

	if (!host)
		return NULL;
	for (unsigned i = 0; i < s->nbuckets; i++) {
		const char *n = s->buckets[i].name;
		size_t len = strlen(n);

		if (len > bestlen && strncmp(host, n, len) == 0 && host[len] == '.') {
			best = &s->buckets[i];
			bestlen = len;
		}
	}
	return best;
}

static const char *const write_args[] = {"uploadId", "partNumber", "uploads", "delete", "x-id",
	NULL};
static const char *const parts_args[] = {"uploadId", "max-parts", "part-number-marker", "x-id",
	NULL};

static enum MHD_Result auth_error(struct MHD_Connection *c, const char *code, const char *url)
{
	return dl_s3_reply_error(c, MHD_HTTP_FORBIDDEN, code,
				 strcmp(code, "SignatureDoesNotMatch") == 0
					 ? "The request signature we calculated does not match the signature you provided."
					 : strcmp(code, "InvalidAccessKeyId") == 0
					 ? "The AWS access key Id you provided does not exist in our records."
					 : strcmp(code, "RequestTimeTooSkewed") == 0
					 ? "The difference between the request time and the current time is too large."
					 : "Access Denied",
				 url);
}

/* The bucket and key a request names: 1 with *b and *key; 0 when it was
 * answered here (the service's ListBuckets, stats, an error). */
static int locate(struct dl_s3 *s, struct MHD_Connection *c, const char *url, int get, int head,
		  const struct dl_s3_bucket **bp, const char **keyp, enum MHD_Result *reply)
{
	const struct dl_s3_bucket *b;
	const char *slash;

	url++;
	/* Not a bucket: S3 names start with a letter or digit. */
	if (strcmp(url, DL_CTL_DIRNAME "/stats.json") == 0 && get) {
		*reply = dl_s3_stats(s, c);
		return 0;
	}
	b = vhost_bucket(s, c);
	if (b) {
		*keyp = url;
	} else if (*url == 0) {
		/* The service: ListBuckets. */
		if (!get && !head)
			*reply = dl_s3_reply_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "MethodNotAllowed",
						   "The specified method is not allowed against this resource.",
						   "/");
		else
			*reply = dl_s3_list_buckets(s, c);
		return 0;
	} else {
		slash = strchr(url, '/');
		b = dl_s3_bucket_find(s, url, slash ? (size_t)(slash - url) : strlen(url));
		if (!b) {
			*reply = dl_s3_reply_error(c, MHD_HTTP_NOT_FOUND, "NoSuchBucket",
						   "The specified bucket does not exist.", url);
			return 0;
		}
		*keyp = slash ? slash + 1 : "";
	}
	*bp = b;
	return 1;
}

/* A write, from its headers: refused now (a reply queued), or accepted
 * (rq->w set; its body follows). */
static enum MHD_Result route_write(struct dl_s3 *s, struct MHD_Connection *c, const char *url,
				   const char *method, struct dl_s3_req *rq)
{
	const struct dl_s3_bucket *b;
	const char *key = NULL, *bad, *code = NULL;
	struct dl_s3_sigv4 sv = {0};
	enum MHD_Result reply = MHD_NO;

	rq->refused = 1;
	if (*url != '/')
		return dl_s3_reply_error(c, MHD_HTTP_BAD_REQUEST, "InvalidURI",
					 "Couldn't parse the specified URI.", url);
	if (dl_s3_auth_sig(s, c, method, rq->raw_uri, &code, &sv))
		return auth_error(c, code, url);
	if (!locate(s, c, url, 0, 0, &b, &key, &reply))
		return reply;
	bad = unknown_arg(c, write_args);
	if (bad)
		return dl_s3_reply_error(c, MHD_HTTP_NOT_IMPLEMENTED, "NotImplemented",
					 "This operation is not implemented.", bad);
	if (!dl_s3_write_begin(s, c, b, key, method, &sv, &rq->w, &reply))
		return reply;
	rq->refused = 0;
	return MHD_YES;
}

static enum MHD_Result route(struct dl_s3 *s, struct MHD_Connection *c, const char *url,
			     const char *method, const struct dl_s3_req *rq)
{
	const struct dl_s3_bucket *b;
	const char *key = NULL, *bad, *code = NULL;
	int get = strcmp(method, "GET") == 0, head = strcmp(method, "HEAD") == 0;
	enum MHD_Result reply = MHD_NO;

	if (*url != '/')
		return dl_s3_reply_error(c, MHD_HTTP_BAD_REQUEST, "InvalidURI",
					 "Couldn't parse the specified URI.", url);
	if (dl_s3_auth(s, c, method, rq && rq->raw_uri ? rq->raw_uri : url, &code))
		return auth_error(c, code, url);
	if (!locate(s, c, url, get, head, &b, &key, &reply))
		return reply;
	if (*key == 0) {
		bad = unknown_arg(c, bucket_args);
		if (bad && strcmp(bad, "location") == 0 && get) {
			struct dl_s3_buf x = {0};

			dl_s3_buf_printf(&x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
					 "<LocationConstraint xmlns=\"http://s3.amazonaws.com/doc/"
					 "2006-03-01/\"></LocationConstraint>");
			return dl_s3_reply_buf(c, MHD_HTTP_OK, &x);
		}
		if (bad)
			return dl_s3_reply_error(c, MHD_HTTP_NOT_IMPLEMENTED, "NotImplemented",
						 "This bucket operation is not implemented.", bad);
		if (head) {
			struct dl_s3_buf x = {0};

			return dl_s3_reply_buf(c, MHD_HTTP_OK, &x);	/* HeadBucket */
		}
		return b->ds ? dl_s3_list_objects(s, b, c) : dl_s3_store_list(s, b, c);
	}
	if (get && b->dirfd >= 0 &&
	    MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "uploadId")) {
		bad = unknown_arg(c, parts_args);
		if (bad)
			return dl_s3_reply_error(c, MHD_HTTP_NOT_IMPLEMENTED, "NotImplemented",
						 "This object operation is not implemented.", bad);
		return dl_s3_mp_list_parts(b, key, MHD_lookup_connection_value(
						c, MHD_GET_ARGUMENT_KIND, "uploadId"), c);
	}
	bad = unknown_arg(c, object_args);
	if (bad)
		return dl_s3_reply_error(c, MHD_HTTP_NOT_IMPLEMENTED, "NotImplemented",
					 "This object operation is not implemented.", bad);
	if (b->ds)
		return dl_s3_get_object(s, b, key, c, head);
	return b->sink ? dl_s3_sink_get(s, b, key, c, head) : dl_s3_store_get(s, b, key, c, head);
}

void *dl_s3_req_start(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct dl_s3_req *rq = calloc(1, sizeof(*rq));

	(void)cls;
	(void)c;
	if (rq)
		rq->raw_uri = strdup(uri);
	return rq;	/* NULL: the request is refused in dl_s3_handle */
}

void dl_s3_req_done(void *cls, struct MHD_Connection *c, void **req_cls,
		    enum MHD_RequestTerminationCode toe)
{
	struct dl_s3_req *rq = *req_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (rq) {
		dl_s3_write_free(rq->w);	/* a cut upload: its temporary file goes */
		free(rq->raw_uri);
		free(rq);
		*req_cls = NULL;
	}
}

enum MHD_Result dl_s3_handle(void *cls, struct MHD_Connection *c, const char *url,
			     const char *method, const char *version, const char *upload_data,
			     size_t *upload_data_size, void **req_cls)
{
	struct dl_s3_req *rq = *req_cls;
	int read = !strcmp(method, "GET") || !strcmp(method, "HEAD");
	int write = !strcmp(method, "PUT") || !strcmp(method, "POST") || !strcmp(method, "DELETE");
	enum MHD_Result ret;

	(void)version;
	if (!rq || !rq->raw_uri)
		return MHD_NO;	/* out of memory: close the connection */
	if (!read && !write)
		return dl_s3_reply_error(c, MHD_HTTP_NOT_IMPLEMENTED, "NotImplemented",
					 "This method is not implemented.", method);
	/* A read is answered once its request is whole, so the connection
	 * stays open for the next (keep-alive). */
	if (read) {
		if (!rq->headers_seen) {
			rq->headers_seen = 1;
			return MHD_YES;
		}
		if (*upload_data_size) {
			*upload_data_size = 0;	/* a body on a GET: ignored */
			return MHD_YES;
		}
		return route(cls, c, url, method, rq);
	}
	/* A write is decided from its headers: refused before its body comes
	 * (no 100 Continue), or accepted and fed its body as it arrives. */
	if (!rq->headers_seen) {
		rq->headers_seen = 1;
		return route_write(cls, c, url, method, rq);
	}
	if (!rq->w) {
		*upload_data_size = 0;	/* refused: the rest is dropped */
		return MHD_YES;
	}
	if (*upload_data_size) {
		dl_s3_write_feed(rq->w, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	ret = dl_s3_write_finish(rq->w, c);
	dl_s3_write_free(rq->w);
	rq->w = NULL;
	return ret;
}
