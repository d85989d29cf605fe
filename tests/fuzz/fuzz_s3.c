/* libFuzzer: what the S3 endpoint parses itself (libmicrohttpd parses
 * HTTP): the Range header, object keys (lookup, and seeking the key space
 * by a start-after, marker or prefix), SigV4's canonical query of a raw
 * query string, a backing directory's key check, and the bodies of writes:
 * aws-chunked (fed in pieces, as the HTTP library hands them over), the
 * XML of CompleteMultipartUpload and of DeleteObjects, CopyObject's source. The input is the
 * text under test; its first byte picks the dataset, the size the range is
 * parsed against and the size of the body's pieces. Invariants: a served
 * range lies within the object, a key found looks up to a file whose key
 * is the input, a seek lands within the bucket, a usable key has no empty,
 * "." or ".." component, a chunk delivers no more than its size and the
 * body no more bytes than came in, a parsed XML body has 1..10000 parts
 * numbered 1..10000 or 1..1000 keys. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/config.h"
#include "dliofs/naming.h"
#include "s3_i.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct chunks {
	uint64_t declared, got, total, nchunks;
	int in_chunk;
};

static int on_chunk(void *cls, uint64_t n, const char *sig)
{
	struct chunks *c = cls;

	if (c->in_chunk || (sig[0] && strlen(sig) != 64))
		abort();
	c->declared = n;
	c->got = 0;
	c->in_chunk = 1;
	c->nchunks++;
	return 0;
}

static int on_data(void *cls, const char *p, size_t n)
{
	struct chunks *c = cls;

	(void)p;
	if (!c->in_chunk || n == 0)
		abort();
	c->got += n;
	c->total += n;
	if (c->got > c->declared)
		abort();
	return 0;
}

static int on_chunk_end(void *cls)
{
	struct chunks *c = cls;

	if (!c->in_chunk || c->got != c->declared)
		abort();
	c->in_chunk = 0;
	return 0;
}

static int on_trailer(void *cls, const char *name, const char *value)
{
	(void)cls;
	if (!name[0] || strchr(name, ':') || !value)
		abort();
	return 0;
}

static const struct dl_s3_chunked_ops ops = {on_chunk, on_data, on_chunk_end, on_trailer};

static void fuzz_bodies(const uint8_t *data, size_t size, const char *text, size_t len)
{
	struct dl_s3_chunked d = {0};
	struct chunks c = {0};
	struct dl_s3_xmlbody x;
	size_t piece = (size_t)(data[0] % 7) + 1;
	int dir;

	(void)size;
	for (size_t off = 0; off < len; off += piece)
		if (dl_s3_chunked_feed(&d, text + off, len - off < piece ? len - off : piece, &ops,
				       &c))
			break;
	if (c.total > len)
		abort();
	if (dl_s3_xmlbody_parse(text, len, DL_S3_XML_COMPLETE, &x) == 0) {
		if (x.n < 1 || x.n > 10000)
			abort();
		for (size_t i = 0; i < x.n; i++)
			if (x.parts[i].num < 1 || x.parts[i].num > 10000 || !x.parts[i].etag[0])
				abort();
		dl_s3_xmlbody_free(&x);
	}
	if (dl_s3_xmlbody_parse(text, len, DL_S3_XML_DELETE, &x) == 0) {
		if (x.n < 1 || x.n > 1000)
			abort();
		for (size_t i = 0; i < x.n; i++)
			if (!x.keys[i])
				abort();
		dl_s3_xmlbody_free(&x);
	}
	{
		char bucket[256], key[DL_S3_KEY_MAX];

		if (dl_s3_copy_source(text, bucket, sizeof(bucket), key, sizeof(key)) == 0 &&
		    (!bucket[0] || !key[0] || strchr(bucket, '/')))
			abort();
	}
	if (dl_s3_store_key_ok(text, &dir) == 0) {
		char k[DL_S3_KEY_MAX + 2];

		snprintf(k, sizeof(k), "/%s%s", text, dir ? "" : "/");
		if (strstr(k, "//") || strstr(k, "/./") || strstr(k, "/../") ||
		    strstr(k, "/.dliofs") || (dir && text[strlen(text) - 1] != '/'))
			abort();
	}
}

static const char yaml[] =
	"seed: 9\n"
	"datasets:\n"
	"  - {name: flat, format: npy, files: 1000003, eval_files: 7, sample_size: 10}\n"
	"  - {name: sub, format: npy, files: 100, subfolders: 7, sample_size: 10}\n"
	"  - {name: cls, format: jpeg, files: 10000000, classes: 1000, width: 8, height: 8}\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct dl_s3 s;
	static int ready;
	const struct dl_s3_bucket *b;
	struct dl_s3_buf q = {0};
	struct dl_file f;
	uint64_t off = 0, len = 0, objsize, o;
	char *text, key[DL_S3_KEY_MAX];
	int r;

	if (!ready) {
		FILE *null = fopen("/dev/null", "w");

		if (dl_config_load_buf("f.yaml", yaml, sizeof(yaml) - 1, null, &s.cfg) ||
		    dl_fmt_ctx_new(s.cfg->seed, 0, &s.fmt) || dl_s3_buckets_init(&s))
			abort();
		if (null)
			fclose(null);
		ready = 1;
	}
	if (size < 1)
		return 0;
	b = &s.buckets[data[0] % s.nbuckets];
	objsize = data[0] < 16 ? data[0] : (uint64_t)data[0] << (data[0] % 40);
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = 0;

	r = dl_s3_parse_range(text, objsize, &off, &len);
	if (r > 0 && (len == 0 || off >= objsize || len > objsize - off))
		abort();
	if (dl_s3_key_lookup(&s, b, text, &f) == 0) {
		if (dl_name_relpath(f.ds, f.split, f.index, f.part, key, sizeof(key)) < 0 ||
		    strcmp(key, text) != 0)
			abort();
	}
	o = dl_s3_key_seek(&s, b, text, data[0] & 1, (data[0] >> 1) & 1);
	if (o > b->total)
		abort();
	if (o < b->total && dl_s3_key_at(&s, b, o, key, sizeof(key), NULL))
		abort();
	if (dl_s3_canon_query(text, &q) == 0 && q.oom == 0 && q.p && strlen(q.p) != q.len)
		abort();
	dl_s3_buf_free(&q);
	fuzz_bodies(data, size, text, size - 1);
	free(text);
	return 0;
}
