/* libFuzzer: what the S3 endpoint parses itself (libmicrohttpd parses
 * HTTP): the Range header, object keys (lookup, and seeking the key space
 * by a start-after, marker or prefix), and SigV4's canonical query of a
 * raw query string. The input is the text under test; its first byte
 * picks the dataset and the size the range is parsed against. Invariants:
 * a served range lies within the object, a key found looks up to a file
 * whose key is the input, a seek lands within the bucket. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/config.h"
#include "dliofs/naming.h"
#include "s3_i.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
	free(text);
	return 0;
}
