/* The S3 endpoint's internals: the server context, the key space of a
 * bucket (keys computed from ordinals, in S3's byte order), XML replies. */
#ifndef DLIOFS_S3_I_H
#define DLIOFS_S3_I_H

#include <microhttpd.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "dliofs/config.h"
#include "dliofs/format.h"
#include "dliofs/pacer.h"

#define DL_S3_KEY_MAX 1024
#define DL_S3_MAX_PARTS 8

/* One bucket: a dataset, and its parts ordered by their names' suffixes;
 * or a backing directory (ds NULL, dirfd its root), where writes go. */
struct dl_s3_bucket {
	const char *name;
	const struct dl_dataset *ds;
	const struct dl_backing_cfg *bk;	/* a backing directory or sink; else NULL */
	int dirfd;			/* the backing directory (O_DIRECTORY); -1 */
	struct dl_s3_sink *sink;	/* a sink's table of objects; NULL */
	uint32_t nparts;
	uint32_t part_order[DL_S3_MAX_PARTS];
	uint64_t total;			/* objects in the bucket */
};

/* checksum.c's tables (CRC32, CRC32C, CRC64/NVME). */
struct dl_s3_crc {
	uint32_t crc32[256], crc32c[256];
	uint64_t crc64[256];
};

struct dl_s3 {
	struct dl_config *cfg;
	struct dl_fmt_ctx *fmt;
	struct dl_pacer *pacer;		/* NULL: requests are not shaped */
	struct dl_s3_bucket *buckets;
	unsigned nbuckets;
	uint64_t start_real_s;		/* Last-Modified of every object */
	struct dl_s3_crc crc;		/* checksum tables */
	pthread_mutex_t log_lock;	/* main.c's log rate limit */
	uint64_t log_second;
	unsigned log_lines, log_dropped;
	struct dl_s3_obs *obs;		/* stats, trace, control (obs.h) */
	char last_modified[64];		/* start_real_s as an HTTP date, made once */
};

/* keys.c: buckets (datasets, then backing entries); the key space. Ordinal o in [0, total) is the o-th key in byte order. */
int dl_s3_buckets_init(struct dl_s3 *s);
void dl_s3_buckets_free(struct dl_s3 *s);
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
void dl_s3_buf_put(struct dl_s3_buf *b, const char *s, size_t n);	/* raw bytes */
void dl_s3_buf_xml(struct dl_s3_buf *b, const char *s);	/* escaped text */
void dl_s3_buf_url(struct dl_s3_buf *b, const char *s);	/* percent-encoded but '/' */
void dl_s3_buf_free(struct dl_s3_buf *b);
/* Queue the buffer as the reply (text/xml); frees it. */
enum MHD_Result dl_s3_reply_buf(struct MHD_Connection *c, unsigned status, struct dl_s3_buf *b);
/* Queue an S3 error document: <Code>code</Code><Message>msg</Message>. */
enum MHD_Result dl_s3_reply_error(struct MHD_Connection *c, unsigned status, const char *code,
				  const char *msg, const char *resource);
/* The same with one more header (416's Content-Range). */
enum MHD_Result dl_s3_reply_error_hdr(struct MHD_Connection *c, unsigned status,
				      const char *code, const char *msg, const char *resource,
				      const char *hname, const char *hvalue);
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

struct dl_s3_sigv4;
struct dl_s3_sink;

/* auth.c: 0 when the request may go on (no keys configured, or a good
 * SigV4 signature); -EACCES and S3's error code otherwise. raw_uri is the
 * URI as it came on the wire (path and query, still encoded). */
int dl_s3_auth(const struct dl_s3 *s, struct MHD_Connection *c, const char *method,
	       const char *raw_uri, const char **code);
/* The same, keeping the signing context for the body's chunks (sv->have). */
int dl_s3_auth_sig(const struct dl_s3 *s, struct MHD_Connection *c, const char *method,
		   const char *raw_uri, const char **code, struct dl_s3_sigv4 *sv);

/* SigV4's canonical query string of a raw query (still percent-encoded;
 * NULL: none), without X-Amz-Signature, appended to out. 0 or -errno. */
int dl_s3_canon_query(const char *q, struct dl_s3_buf *out);

/* checksum.c: x-amz-checksum-* and Content-MD5. */
enum { DL_S3_SUM_NONE, DL_S3_SUM_CRC32, DL_S3_SUM_CRC32C, DL_S3_SUM_CRC64NVME, DL_S3_SUM_SHA1,
       DL_S3_SUM_SHA256, DL_S3_SUM_MD5 };
struct dl_s3_sum {
	int alg;
	const struct dl_s3_crc *t;
	uint64_t crc;
	struct evp_md_ctx_st *md;
};
void dl_s3_crc_init(struct dl_s3_crc *t);
/* "x-amz-checksum-crc32" -> DL_S3_SUM_CRC32 ...; -EINVAL for others. */
int dl_s3_sum_alg(const char *header);
const char *dl_s3_sum_name(int alg);
int dl_s3_sum_begin(struct dl_s3_sum *k, const struct dl_s3_crc *t, int alg);
void dl_s3_sum_update(struct dl_s3_sum *k, const void *p, size_t n);
/* The digest into out (64 bytes at least); its length or -errno. */
int dl_s3_sum_final(struct dl_s3_sum *k, unsigned char *out);
void dl_s3_sum_free(struct dl_s3_sum *k);
void dl_s3_base64(const unsigned char *p, size_t n, char *out, size_t len);

/* chunked.c: the aws-chunked decoder. Callbacks return nonzero to stop. */
struct dl_s3_chunked {
	int state;
	size_t ll;
	uint64_t left;
	char line[512];
};
struct dl_s3_chunked_ops {
	int (*chunk)(void *cls, uint64_t size, const char *sig);	/* sig "" if none */
	int (*data)(void *cls, const char *p, size_t n);
	int (*chunk_end)(void *cls);
	int (*trailer)(void *cls, const char *name, const char *value);
};
/* 0, -EINVAL (malformed) or -EBADMSG (a callback refused); an error sticks. */
int dl_s3_chunked_feed(struct dl_s3_chunked *d, const char *p, size_t n,
		       const struct dl_s3_chunked_ops *ops, void *cls);
int dl_s3_chunked_done(const struct dl_s3_chunked *d);

/* auth.c's signing context, for aws-chunked's chunk and trailer signatures. */
struct dl_s3_sigv4 {
	int have;			/* a header signature was verified */
	unsigned char key[32];		/* kSigning */
	char seed[65];			/* the request's signature */
	char date[32], scope[256];
};
/* The string-to-sign's signature of a chunk (its SHA-256 `hash`) after `prev`. */
void dl_s3_chunk_sig(const struct dl_s3_sigv4 *sv, const char *prev, const char *kind,
		     const char *hash_hex, char out[65]);
void dl_s3_sha256_hex(const void *p, size_t n, char out[65]);

/* body.c: a request body as it arrives: decoded (aws-chunked), checked
 * (payload hash, chunk signatures, checksums, Content-MD5, length), and
 * written to a file or kept in memory. */
struct dl_s3_body {
	struct dl_s3 *s;
	int fd;				/* where the bytes go; -1: into mem */
	int discard;			/* nowhere (a sink) */
	struct dl_s3_buf mem;
	size_t mem_max;
	int chunked, sigs, trailer_sig;
	struct dl_s3_chunked dec;
	struct dl_s3_sigv4 sv;
	char prev_sig[65], chunk_sig[65];
	struct dl_s3_sum chunk_sha, payload_sha, md5, sum;
	char payload_want[65], md5_want[64], sum_want[128];
	struct dl_s3_buf trailers;	/* canonical trailer lines, for their signature */
	char trailer_sig_got[65];
	uint64_t n, want_len;		/* decoded bytes; x-amz-decoded-content-length or ~0 */
	unsigned status;		/* first error: status, S3 code, message */
	const char *code, *msg;
	unsigned char md5_raw[16];	/* the body's MD5, after dl_s3_body_end */
};
/* From the request's headers; 0, or the error set in bd->status/code/msg. */
int dl_s3_body_begin(struct dl_s3_body *bd, struct dl_s3 *s, struct MHD_Connection *c,
		     const struct dl_s3_sigv4 *sv, int fd, size_t mem_max);
void dl_s3_body_feed(struct dl_s3_body *bd, const char *p, size_t n);
/* All checks of a whole body; 0 or the error set. */
int dl_s3_body_end(struct dl_s3_body *bd);
void dl_s3_body_free(struct dl_s3_body *bd);
void dl_s3_body_fail(struct dl_s3_body *bd, unsigned status, const char *code, const char *msg);
enum MHD_Result dl_s3_body_reply_error(struct dl_s3_body *bd, struct MHD_Connection *c,
				       const char *resource);

/* xmlbody.c: CompleteMultipartUpload's and DeleteObjects' bodies. */
#define DL_S3_ETAG_MAX 80
enum { DL_S3_XML_COMPLETE, DL_S3_XML_DELETE };
struct dl_s3_part_ref {
	unsigned num;
	char etag[DL_S3_ETAG_MAX];	/* without quotes */
};
struct dl_s3_xmlbody {
	struct dl_s3_part_ref *parts;	/* COMPLETE: in document order */
	char **keys;			/* DELETE */
	size_t n, cap;
	int quiet;
};
/* 0, or -EINVAL for a malformed or empty document (-ENOMEM). */
int dl_s3_xmlbody_parse(const char *xml, size_t len, int kind, struct dl_s3_xmlbody *out);
void dl_s3_xmlbody_free(struct dl_s3_xmlbody *o);

/* store*.c: a backing directory as a bucket. */
int dl_s3_store_open(struct dl_s3_bucket *b);
/* A key's path component usable in the directory (not "", ".", "..", .dliofs*). */
int dl_s3_store_name_ok(const char *p, size_t n);
/* 0 for a usable key (*dir: it ends in '/', a folder marker); -EINVAL. */
int dl_s3_store_key_ok(const char *key, int *dir);
/* The folder holding the key's last component, made with `create`: its
 * fd and the component in leaf; -EINVAL, -ENOTDIR (an object is in the
 * way), -ENOENT. */
int dl_s3_store_parent(const struct dl_s3_bucket *b, const char *key, int create, char *leaf,
		       size_t leaflen);
/* An object's fd (a regular file, or a folder for "dir/") and stat; -ENOENT. */
int dl_s3_store_open_obj(const struct dl_s3_bucket *b, const char *key, struct stat *st);
void dl_s3_store_etag(int fd, const struct stat *st, char *buf, size_t len);
void dl_s3_store_set_etag(int fd, const char *etag);	/* etag with its quotes */
/* A new temporary file .dliofs.tmp.<random> in dirfd: its fd, its name. */
int dl_s3_store_tmp(int dirfd, char *name, size_t len);
/* Delete an object (a folder marker: its folder if empty); 0 if it was not there. */
int dl_s3_store_delete(const struct dl_s3_bucket *b, const char *key);
/* A folder made as a marker ("dir/"): it stays when its objects go. */
int dl_s3_store_mkdir(int pfd, const char *leaf);
enum MHD_Result dl_s3_store_get(struct dl_s3 *s, const struct dl_s3_bucket *b, const char *key,
				struct MHD_Connection *c, int head);
enum MHD_Result dl_s3_store_list(struct dl_s3 *s, const struct dl_s3_bucket *b,
				 struct MHD_Connection *c);

/* multipart.c: uploads under .dliofs.uploads/<id> of a backing directory. */
int dl_s3_mp_create(const struct dl_s3_bucket *b, const char *key, char id[33]);
/* The upload's folder (fd) when it exists and is for `key`; -ENOENT. */
int dl_s3_mp_open(const struct dl_s3_bucket *b, const char *id, const char *key);
int dl_s3_mp_part_commit(int dfd, const char *tmp, unsigned num, const unsigned char md5[16]);
int dl_s3_mp_abort(const struct dl_s3_bucket *b, const char *id, const char *key);
/* 0 and the object's ETag; -errno, with *code an S3 code for the request's faults. */
int dl_s3_mp_complete(const struct dl_s3_bucket *b, const char *id, const char *key,
		      const struct dl_s3_xmlbody *x, char *etag, size_t etaglen, const char **code);
enum MHD_Result dl_s3_mp_list_parts(const struct dl_s3_bucket *b, const char *key,
				    const char *id, struct MHD_Connection *c);

/* write.c: a write request, from its headers to its reply. */
enum { DL_S3_W_PUT, DL_S3_W_PART, DL_S3_W_CREATE, DL_S3_W_COMPLETE, DL_S3_W_ABORT,
       DL_S3_W_DELETE, DL_S3_W_DELETE_MULTI, DL_S3_W_COPY };
struct dl_s3_write {
	int op;
	struct dl_s3 *s;
	const struct dl_s3_bucket *b;
	char key[DL_S3_KEY_MAX];
	char upload[40];
	unsigned part;
	int dir_marker;
	int dirfd, fd;			/* the temporary file's folder, and it */
	char tmp[48], leaf[256];
	struct dl_s3_body body;
};
/* 1: the write goes on (*out; its body follows); 0: refused, *reply queued. */
int dl_s3_write_begin(struct dl_s3 *s, struct MHD_Connection *c, const struct dl_s3_bucket *b,
		      const char *key, const char *method, const struct dl_s3_sigv4 *sv,
		      struct dl_s3_write **out, enum MHD_Result *reply);
void dl_s3_write_feed(struct dl_s3_write *w, const char *p, size_t n);
enum MHD_Result dl_s3_write_finish(struct dl_s3_write *w, struct MHD_Connection *c);
void dl_s3_write_free(struct dl_s3_write *w);

/* copy.c: CopyObject into the write's place (w->fd, its temporary file). */
enum MHD_Result dl_s3_copy(struct dl_s3 *s, struct MHD_Connection *c, struct dl_s3_write *w);
/* x-amz-copy-source's "[/]bucket/key" decoded; -EINVAL. */
int dl_s3_copy_source(const char *v, char *bucket, size_t blen, char *key, size_t klen);

/* sink.c, sink_get.c: a sink as a bucket (a table of keys, sizes, ETags). */
int dl_s3_sink_new(struct dl_s3_bucket *b, uint64_t seed);
void dl_s3_sink_free(struct dl_s3_sink *k);
/* 0, or -ENOSPC past the sink's max_entries. */
int dl_s3_sink_put(struct dl_s3_sink *k, const char *key, uint64_t size, const char *etag);
int dl_s3_sink_stat(struct dl_s3_sink *k, const char *key, uint64_t *size, uint64_t *mtime_s,
		    char *etag, size_t len);
int dl_s3_sink_delete(struct dl_s3_sink *k, const char *key);
/* The keys starting with prefix, sorted, each malloc'd, in a malloc'd array. */
int dl_s3_sink_keys(struct dl_s3_sink *k, const char *prefix, char ***keys, size_t *n);
/* The generator key of an object's bytes. */
uint64_t dl_s3_sink_bytes_key(const struct dl_s3_sink *k, const char *key);
int dl_s3_sink_mp_create(struct dl_s3_sink *k, const char *key, char id[33]);
int dl_s3_sink_mp_exists(struct dl_s3_sink *k, const char *id, const char *key);
int dl_s3_sink_mp_part(struct dl_s3_sink *k, const char *id, const char *key, unsigned num,
		       uint64_t size, const unsigned char md5[16]);
int dl_s3_sink_mp_abort(struct dl_s3_sink *k, const char *id, const char *key);
int dl_s3_sink_mp_complete(struct dl_s3_sink *k, const char *id, const char *key,
			   const struct dl_s3_xmlbody *x, char *etag, size_t etaglen,
			   uint64_t *size, const char **code);
enum MHD_Result dl_s3_sink_get(struct dl_s3 *s, const struct dl_s3_bucket *b, const char *key,
			       struct MHD_Connection *c, int head);

/* One request in flight: what libmicrohttpd's URI log callback saw, and a
 * write's state while its body comes. */
struct dl_s3_req {
	char *raw_uri;
	int headers_seen;
	struct dl_s3_write *w;
	int refused;			/* a reply was queued from the headers */
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

/* list.c: a ListBucketResult's opening elements, as v1 (Marker) or v2
 * (StartAfter, ContinuationToken) asks; keys and prefixes percent-encoded
 * when url (encoding-type=url), else XML-escaped. Shared by the dataset and
 * backing-directory listings. */
void dl_s3_list_head(struct dl_s3_buf *b, const char *bucket, const char *prefix,
		     const char *delim, uint64_t max_keys, int url, int v2, const char *marker,
		     const char *after, const char *token);
void dl_s3_list_elem(struct dl_s3_buf *b, const char *tag, const char *v, int url);

/* A hex digit's value (either case), or -1: percent-encoding, chunk sizes,
 * signatures. */
static inline int dl_s3_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif
