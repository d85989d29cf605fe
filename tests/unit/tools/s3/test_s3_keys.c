/* The S3 endpoint's key space (tools/s3/keys.c): for datasets of every
 * naming shape (flat, DLIO subfolders, ImageNet classes with unpadded k,
 * both splits), every ordinal's key sorts strictly after the one before
 * (S3's byte order), looks up to the same file, and seeks back to itself;
 * and lex_kth is the order of decimal strings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/config.h"
#include "s3_i.h"
#include "tap.h"

static const char yaml[] =
	"seed: 9\n"
	"datasets:\n"
	"  - {name: flat, format: npy, files: 101, eval_files: 7, sample_size: 10}\n"
	"  - {name: one, format: npy, files: 1, sample_size: 10}\n"
	"  - {name: sub3, format: npy, files: 10, eval_files: 5, subfolders: 3, sample_size: 10}\n"
	"  - {name: sub7, format: npy, files: 100, subfolders: 7, sample_size: 10}\n"
	"  - {name: cls3, format: jpeg, files: 40, eval_files: 11, classes: 3, width: 8, height: 8}\n"
	"  - {name: cls7, format: jpeg, files: 1234, classes: 7, width: 8, height: 8}\n"
	"  - {name: cls1, format: jpeg, files: 105, classes: 1, width: 8, height: 8}\n"
	"  - {name: few, format: jpeg, files: 6, classes: 5, width: 8, height: 8}\n";

static int cmp_dec(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void check_lex(void)
{
	char *s[1200];
	char buf[1200][24];

	for (uint64_t m = 1; m <= 1200; m += (m < 120 ? 1 : 37)) {
		for (uint64_t i = 0; i < m; i++) {
			snprintf(buf[i], sizeof(buf[i]), "%llu", (unsigned long long)i);
			s[i] = buf[i];
		}
		qsort(s, m, sizeof(s[0]), cmp_dec);
		for (uint64_t j = 0; j < m; j++) {
			char got[24];

			snprintf(got, sizeof(got), "%llu", (unsigned long long)dl_s3_lex_kth(j, m));
			CHECK(strcmp(got, s[j]) == 0, "m %llu j %llu: %s, want %s",
			      (unsigned long long)m, (unsigned long long)j, got, s[j]);
		}
	}
}

static void check_bucket(struct dl_s3 *s, const struct dl_s3_bucket *b)
{
	char prev[DL_S3_KEY_MAX] = "", key[DL_S3_KEY_MAX];
	uint64_t bad = 0;

	for (uint64_t o = 0; o < b->total; o++) {
		struct dl_file f, g;

		if (dl_s3_key_at(s, b, o, key, sizeof(key), &f)) {
			CHECK(0, "%s: ordinal %llu has no key", b->ds->name, (unsigned long long)o);
			return;
		}
		if (o && strcmp(prev, key) >= 0) {
			bad++;
			CHECK(0, "%s: '%s' then '%s'", b->ds->name, prev, key);
		}
		if (dl_s3_key_lookup(s, b, key, &g) || g.split != f.split || g.index != f.index ||
		    g.part != f.part || g.size != f.size) {
			bad++;
			CHECK(0, "%s: '%s' looks up elsewhere", b->ds->name, key);
		}
		if (dl_s3_key_seek(s, b, key, 1, 0) != o || dl_s3_key_seek(s, b, key, 0, 0) != o + 1) {
			bad++;
			CHECK(0, "%s: '%s' seeks elsewhere", b->ds->name, key);
		}
		snprintf(prev, sizeof(prev), "%s", key);
		if (bad > 5)
			return;
	}
	CHECK(bad == 0, "%s", b->ds->name);
	CHECK(dl_s3_key_at(s, b, b->total, key, sizeof(key), NULL) != 0, "%s: past the end",
	      b->ds->name);
	CHECK(dl_s3_key_seek(s, b, "zzz", 0, 0) == b->total, "%s", b->ds->name);
	CHECK(dl_s3_key_seek(s, b, "", 1, 0) == 0, "%s", b->ds->name);
}

int main(void)
{
	struct dl_s3 s = {0};
	struct dl_file f;
	uint64_t files = 0;

	CHECK(dl_config_load_buf("t.yaml", yaml, sizeof(yaml) - 1, stderr, &s.cfg) == 0, "config");
	if (!s.cfg)
		return tap_done("s3_keys");
	CHECK(dl_fmt_ctx_new(s.cfg->seed, 0, &s.fmt) == 0, "fmt");
	CHECK(dl_s3_buckets_init(&s) == 0, "buckets");
	check_lex();
	for (unsigned i = 0; i < s.nbuckets; i++) {
		check_bucket(&s, &s.buckets[i]);
		files += s.buckets[i].total;
	}
	CHECK(files == 108 + 1 + 15 + 100 + 51 + 1234 + 105 + 6, "%llu objects",
	      (unsigned long long)files);
	/* A subfolder's prefix: the first key past it is the next subfolder's first. */
	{
		const struct dl_s3_bucket *b = dl_s3_bucket_find(&s, "sub7", 4);
		char key[DL_S3_KEY_MAX];
		uint64_t o = dl_s3_key_seek(&s, b, "train/3/", 0, 1);

		CHECK(b && dl_s3_key_at(&s, b, o, key, sizeof(key), NULL) == 0 &&
			      strncmp(key, "train/4/", 8) == 0, "after train/3/: %s", key);
	}
	/* Not keys: another split's name, the wrong subfolder, a directory. */
	CHECK(dl_s3_key_lookup(&s, dl_s3_bucket_find(&s, "flat", 4), "valid/img_000_of_101.npy",
			       &f) != 0, "valid with a train name");
	CHECK(dl_s3_key_lookup(&s, dl_s3_bucket_find(&s, "sub3", 4), "train/1/img_00_of_10.npy",
			       &f) != 0, "wrong subfolder");
	CHECK(dl_s3_key_lookup(&s, dl_s3_bucket_find(&s, "sub3", 4), "train/0/", &f) != 0, "dir");
	CHECK(dl_s3_key_lookup(&s, dl_s3_bucket_find(&s, "cls3", 4),
			       "train/n00000001/n00000001_01.JPEG", &f) != 0, "padded k");
	CHECK(dl_s3_bucket_find(&s, "fla", 3) == NULL, "prefix of a name");
	dl_fmt_ctx_free(s.fmt);
	free(s.buckets);
	dl_config_free(s.cfg);
	return tap_done("s3_keys");
}
