/* The S3 endpoint's internals: the server context, the key space of a
 * bucket (keys computed from ordinals, in S3's byte order), XML replies. */
#ifndef DLIOFS_S3_I_H
#define DLIOFS_S3_I_H

#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#include "dliofs/config.h"
#include "dliofs/format.h"
#include "dliofs/pacer.h"

#define DL_S3_KEY_MAX 1024
#define DL_S3_MAX_PARTS 8

/* One bucket: a dataset, and its parts ordered by their names' suffixes. */
struct dl_s3_bucket {
	const struct dl_dataset *ds;
	uint32_t nparts;
	uint32_t part_order[DL_S3_MAX_PARTS];
	uint64_t total;			/* objects in the bucket */
};

struct dl_s3 {
	struct dl_config *cfg;
	struct dl_fmt_ctx *fmt;
	struct dl_pacer *pacer;		/* NULL: requests are not shaped */
	struct dl_s3_bucket *buckets;
	unsigned nbuckets;
	uint64_t start_real_s;		/* Last-Modified of every object */
	struct dl_s3_obs *obs;		/* stats, trace, control (obs.h) */
	char last_modified[64];		/* start_real_s as an HTTP date, made once */
};

/* keys.c: the key space. Ordinal o in [0, total) is the o-th key in byte order. */
int dl_s3_buckets_init(struct dl_s3 *s);
const struct dl_s3_bucket *dl_s3_bucket_find(const struct dl_s3 *s, const char *name, size_t len);
/* The o-th key and its file. 0 or -ENOENT/-ENAMETOOLONG. */
int dl_s3_key_at(const struct dl_s3 *s, const struct dl_s3_bucket *b, uint64_t o, char *key,
		 size_t keylen, struct dl_file *f);
/* The first ordinal whose key, cut to strlen(x) bytes when `cut`, is > x
 * (or >= x when `inclusive`); total when none. */
uint64_t dl_s3_key_seek(const struct dl_s3 *s, const struct dl_s3_bucket *b, const char *x,
			int inclusive, int cut);
/* The object named `key`: 0 and its file, or -ENOENT. */
int dl_s3_key_lookup(const struct dl_s3 *s, const struct dl_s3_bucket *b, const char *key,
		     struct dl_file *f);
/* The j-th (0-based) of the decimal strings of 0..m-1 in byte order. */
uint64_t dl_s3_lex_kth(uint64_t j, uint64_t m);

/* xml.c: a growing text buffer and S3's XML replies. */
struct dl_s3_buf {
	char *p;
	size_t len, cap;
	int oom;
};
void dl_s3_buf_printf(struct dl_s3_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void dl_s3_buf_xml(struct dl_s3_buf *b, const char *s);	/* escaped text */
void dl_s3_buf_url(struct dl_s3_buf *b, const char *s);	/* percent-encoded but '/' */
void dl_s3_buf_free(struct dl_s3_buf *b);
/* Queue the buffer as the reply (text/xml); frees it. */
enum MHD_Result dl_s3_reply_buf(struct MHD_Connection *c, unsigned status, struct dl_s3_buf *b);
/* Queue an S3 error document: <Code>code</Code><Message>msg</Message>. */
enum MHD_Result dl_s3_reply_error(struct MHD_Connection *c, unsigned status, const char *code,
				  const char *msg, const char *resource);
void dl_s3_http_date(uint64_t secs, char *buf, size_t len);
void dl_s3_iso_date(uint64_t secs, char *buf, size_t len);
void dl_s3_etag(const struct dl_file *f, char *buf, size_t len);

/* list.c: ListBuckets, ListObjects (v1 and v2). */
enum MHD_Result dl_s3_list_buckets(struct dl_s3 *s, struct MHD_Connection *c);
enum MHD_Result dl_s3_list_objects(struct dl_s3 *s, const struct dl_s3_bucket *b,
				   struct MHD_Connection *c);

/* range.c: Range: bytes=a-b, a-, -n. 1: serve [*off, *off + *len) of an
 * object of `size` bytes; 0: no usable Range (serve all); -1: unsatisfiable (416). */
int dl_s3_parse_range(const char *h, uint64_t size, uint64_t *off, uint64_t *len);

/* get.c: HeadObject and GetObject (with Range), shaped by the pacer. */
enum MHD_Result dl_s3_get_object(struct dl_s3 *s, const struct dl_s3_bucket *b, const char *key,
				 struct MHD_Connection *c, int head);

/* auth.c: 0 when the request may go on (no keys configured, or a good
 * SigV4 signature); -EACCES and S3's error code otherwise. raw_uri is the
 * URI as it came on the wire (path and query, still encoded). */
int dl_s3_auth(const struct dl_s3 *s, struct MHD_Connection *c, const char *method,
	       const char *raw_uri, const char **code);

/* SigV4's canonical query string of a raw query (still percent-encoded;
 * NULL: none), without X-Amz-Signature, appended to out. 0 or -errno. */
int dl_s3_canon_query(const char *q, struct dl_s3_buf *out);

/* One request in flight: what libmicrohttpd's URI log callback saw. */
struct dl_s3_req {
	char *raw_uri;
	int headers_seen;
};
void *dl_s3_req_start(void *cls, const char *uri, struct MHD_Connection *c);
void dl_s3_req_done(void *cls, struct MHD_Connection *c, void **req_cls,
		    enum MHD_RequestTerminationCode toe);

/* pace.c: the job a request belongs to (its name into name; id > 0);
 * submit a request to the pacer and wait for its decision: 1 when it was
 * submitted (complete it with dl_pacer_complete), 0 when not shaped. */
uint32_t dl_s3_job(struct MHD_Connection *c, char *name, size_t len);
int dl_s3_pace(struct dl_s3 *s, struct MHD_Connection *c, struct dl_pacer_req *req,
	       struct dl_pacer_result *res);
/* GET /.dliofs/stats.json: the pacer's statistics, per class and per job. */
enum MHD_Result dl_s3_stats(struct dl_s3 *s, struct MHD_Connection *c);

/* http.c: the access handler libmicrohttpd calls for each request. */
enum MHD_Result dl_s3_handle(void *cls, struct MHD_Connection *c, const char *url,
			     const char *method, const char *version, const char *upload_data,
			     size_t *upload_data_size, void **req_cls);

#endif
