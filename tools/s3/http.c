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
		const char *n = s->buckets[i].ds->name;
		size_t len = strlen(n);

		if (len > bestlen && strncmp(host, n, len) == 0 && host[len] == '.') {
			best = &s->buckets[i];
			bestlen = len;
		}
	}
	return best;
}

static enum MHD_Result route(struct dl_s3 *s, struct MHD_Connection *c, const char *url,
			     const char *method, const struct dl_s3_req *rq)
{
	const struct dl_s3_bucket *b;
	const char *key = NULL, *slash, *bad, *code = NULL;
	int get = strcmp(method, "GET") == 0, head = strcmp(method, "HEAD") == 0;
	int write = !strcmp(method, "PUT") || !strcmp(method, "POST") || !strcmp(method, "DELETE");

	if (!get && !head && !write)
		return dl_s3_reply_error(c, MHD_HTTP_NOT_IMPLEMENTED, "NotImplemented",
					 "This method is not implemented.", method);
	if (*url != '/')
		return dl_s3_reply_error(c, MHD_HTTP_BAD_REQUEST, "InvalidURI",
					 "Couldn't parse the specified URI.", url);
	if (dl_s3_auth(s, c, method, rq && rq->raw_uri ? rq->raw_uri : url, &code))
		return dl_s3_reply_error(c, MHD_HTTP_FORBIDDEN, code,
					 strcmp(code, "SignatureDoesNotMatch") == 0
						 ? "The request signature we calculated does not match the signature you provided."
						 : strcmp(code, "InvalidAccessKeyId") == 0
						 ? "The AWS access key Id you provided does not exist in our records."
						 : strcmp(code, "RequestTimeTooSkewed") == 0
						 ? "The difference between the request time and the current time is too large."
						 : "Access Denied",
					 url);
	url++;
	/* Not a bucket: S3 names start with a letter or digit. */
	if (strcmp(url, DL_CTL_DIRNAME "/stats.json") == 0 && get)
		return dl_s3_stats(s, c);
	b = vhost_bucket(s, c);
	if (b) {
		key = url;
	} else if (*url == 0) {
		/* The service: ListBuckets. */
		if (!get && !head)
			return dl_s3_reply_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "MethodNotAllowed",
						 "The specified method is not allowed against this resource.",
						 "/");
		return dl_s3_list_buckets(s, c);
	} else {
		slash = strchr(url, '/');
		b = dl_s3_bucket_find(s, url, slash ? (size_t)(slash - url) : strlen(url));
		if (!b)
			return dl_s3_reply_error(c, MHD_HTTP_NOT_FOUND, "NoSuchBucket",
						 "The specified bucket does not exist.", url);
		key = slash ? slash + 1 : "";
	}
	if (write)
		return dl_s3_reply_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "MethodNotAllowed",
					 "The dataset is read-only: writes are not allowed.",
					 b->ds->name);
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
		return dl_s3_list_objects(s, b, c);
	}
	bad = unknown_arg(c, object_args);
	if (bad)
		return dl_s3_reply_error(c, MHD_HTTP_NOT_IMPLEMENTED, "NotImplemented",
					 "This object operation is not implemented.", bad);
	return dl_s3_get_object(s, b, key, c, head);
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

	(void)version;
	(void)upload_data;
	if (!rq || !rq->raw_uri)
		return MHD_NO;	/* out of memory: close the connection */
	/* A read is answered once its request is whole, so the connection
	 * stays open for the next (keep-alive). Anything else is refused from
	 * its headers alone: its body is not read, and libmicrohttpd closes
	 * the connection after the reply. */
	if (!rq->headers_seen && read) {
		rq->headers_seen = 1;
		return MHD_YES;
	}
	if (read && *upload_data_size) {
		*upload_data_size = 0;	/* a body on a GET: ignored */
		return MHD_YES;
	}
	return route(cls, c, url, method, rq);
}
