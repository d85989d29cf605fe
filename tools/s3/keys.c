/* A bucket's keys without a table: the o-th key in S3's byte order is
 * computed from o, so listing a 10-million-file dataset costs no memory.
 * The mount's names sort by index (zero-padded numbers, fixed-width
 * subfolders) except ImageNet's n<class>_<k>.JPEG, whose k is not padded:
 * there the rank within a class maps to k by the decimal strings' order. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dliofs/naming.h"
#include "s3_i.h"

static int has_subdirs(const struct dl_dataset *ds, uint32_t split)
{
	return ds->classes > 0 || ds->subfolders[split] > 1;
}

static const char *part_suffix(const struct dl_dataset *ds, uint32_t part)
{
	return part ? dl_format_ops(ds->format)->part_suffix[part] : "";
}

int dl_s3_buckets_init(struct dl_s3 *s)
{
	unsigned nds = s->cfg->ndatasets;
	int ret;

	s->nbuckets = 0;
	s->buckets = calloc(nds + s->cfg->nbacking + 1, sizeof(*s->buckets));
	if (!s->buckets)
		return -ENOMEM;
	for (unsigned i = 0; i < nds + s->cfg->nbacking; i++)
		s->buckets[i].dirfd = -1;
	/* A backing entry is a bucket named by its `at`: a real directory's
	 * objects are its files; writes go there when it is writable. */
	for (unsigned i = 0; i < s->cfg->nbacking; i++) {
		struct dl_s3_bucket *b = &s->buckets[nds + i];

		b->bk = &s->cfg->backing[i];
		b->name = b->bk->at;
		ret = b->bk->sink ? dl_s3_sink_new(b, s->cfg->seed) : dl_s3_store_open(b);
		if (ret)
			return ret;
	}
	s->nbuckets = nds + s->cfg->nbacking;
	for (unsigned i = 0; i < nds; i++) {
		struct dl_s3_bucket *b = &s->buckets[i];
		const struct dl_dataset *ds = &s->cfg->datasets[i];

		b->ds = ds;
		b->name = ds->name;
		b->nparts = dl_format_ops(ds->format)->nparts;
		if (b->nparts == 0 || b->nparts > DL_S3_MAX_PARTS)
			return -EINVAL;
		/* A file's parts share its name and differ by suffix: order them
		 * as their suffixes sort (insertion sort of a handful). */
		for (uint32_t p = 0; p < b->nparts; p++) {
			uint32_t j = p;

			while (j > 0 && strcmp(part_suffix(ds, b->part_order[j - 1]),
					       part_suffix(ds, p)) > 0) {
				b->part_order[j] = b->part_order[j - 1];
				j--;
			}
			b->part_order[j] = p;
		}
		b->total = (ds->files[DL_SPLIT_TRAIN] + ds->files[DL_SPLIT_VALID]) * b->nparts;
	}
	return 0;
}

void dl_s3_buckets_free(struct dl_s3 *s)
{
	for (unsigned i = 0; s->buckets && i < s->cfg->ndatasets + s->cfg->nbacking; i++) {
		if (s->buckets[i].dirfd >= 0)
			close(s->buckets[i].dirfd);
		dl_s3_sink_free(s->buckets[i].sink);
	}
	free(s->buckets);
	s->buckets = NULL;
	s->nbuckets = 0;
}

const struct dl_s3_bucket *dl_s3_bucket_find(const struct dl_s3 *s, const char *name, size_t len)
{
	for (unsigned i = 0; i < s->nbuckets; i++) {
		const struct dl_s3_bucket *b = &s->buckets[i];

		if (strlen(b->name) == len && memcmp(b->name, name, len) == 0)
			return b;
	}
	return NULL;
}

/* The count of
 * 1..n whose decimal string starts with the string of a, or of a+1..b-1. */
static uint64_t lex_count(uint64_t n, uint64_t a, uint64_t b)
{
	uint64_t steps = 0;

	while (a <= n) {
		steps += (b > n + 1 ? n + 1 : b) - a;
		if (a > UINT64_MAX / 10 || b > UINT64_MAX / 10)
			break;
		a *= 10;
		b *= 10;
	}
	return steps;
}

uint64_t dl_s3_lex_kth(uint64_t j, uint64_t m)
{
	uint64_t n = m - 1, cur = 1, k;

	/* "0" sorts first: no other number starts with 0. */
	if (j == 0)
		return 0;
	k = j - 1;	/* 0-based among 1..n */
	while (k > 0) {
		uint64_t steps = lex_count(n, cur, cur + 1);

		if (steps <= k) {
			cur++;
			k -= steps;
		} else {
			cur *= 10;
			k--;
		}
	}
	return cur;
}

int dl_s3_key_at(const struct dl_s3 *s, const struct dl_s3_bucket *b, uint64_t o, char *key,
		 size_t keylen, struct dl_file *f)
{
	const struct dl_dataset *ds = b->ds;
	uint32_t split = 0, part;
	uint64_t fr, index;
	int ret;

	if (o >= b->total)
		return -ENOENT;
	/* "train" < "valid": the splits in their order. */
	while (split < DL_SPLIT__COUNT && o >= ds->files[split] * b->nparts) {
		o -= ds->files[split] * b->nparts;
		split++;
	}
	if (split >= DL_SPLIT__COUNT)
		return -ENOENT;
	fr = o / b->nparts;
	part = b->part_order[o % b->nparts];
	if (has_subdirs(ds, split)) {
		uint64_t nsub = dl_split_nsub(ds, split), n = ds->files[split];
		uint64_t q = n / nsub, rem = n % nsub, sub, j, m;

		/* The first n mod nsub subfolders hold one file more. */
		if (fr < rem * (q + 1)) {
			sub = fr / (q + 1);
			j = fr % (q + 1);
		} else {
			sub = rem + (fr - rem * (q + 1)) / q;
			j = (fr - rem * (q + 1)) % q;
		}
		m = dl_subdir_nfiles(ds, split, (uint32_t)sub);
		index = sub + (ds->classes ? dl_s3_lex_kth(j, m) : j) * nsub;
	} else {
		index = fr;
	}
	ret = dl_name_relpath(ds, split, index, part, key, keylen);
	if (ret < 0)
		return ret;
	return f ? dl_file_init(s->fmt, ds, split, index, part, f) : 0;
}

uint64_t dl_s3_key_seek(const struct dl_s3 *s, const struct dl_s3_bucket *b, const char *x,
			int inclusive, int cut)
{
	uint64_t lo = 0, hi = b->total;
	size_t xlen = strlen(x);
	char key[DL_S3_KEY_MAX];

	/* Keys are sorted by ordinal: bisect for the first that passes. */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		int c;

		if (dl_s3_key_at(s, b, mid, key, sizeof(key), NULL))
			return b->total;
		c = cut ? strncmp(key, x, xlen) : strcmp(key, x);
		if (c > 0 || (inclusive && c == 0))
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

int dl_s3_key_lookup(const struct dl_s3 *s, const struct dl_s3_bucket *b, const char *key,
		     struct dl_file *f)
{
	const struct dl_dataset *ds = b->ds;
	char dir[DL_NAME_MAX];
	const char *slash, *name;
	uint32_t split, sub, part;
	uint64_t index;

	slash = strchr(key, '/');
	if (!slash)
		return -ENOENT;
	for (split = 0; split < DL_SPLIT__COUNT; split++)
		if (strlen(dl_split_dir[split]) == (size_t)(slash - key) &&
		    memcmp(dl_split_dir[split], key, (size_t)(slash - key)) == 0)
			break;
	if (split >= DL_SPLIT__COUNT)
		return -ENOENT;
	name = slash + 1;
	/* As the mount's lookup: a file only in its own subfolder. */
	if (has_subdirs(ds, split)) {
		slash = strchr(name, '/');
		if (!slash || (size_t)(slash - name) >= sizeof(dir))
			return -ENOENT;
		memcpy(dir, name, (size_t)(slash - name));
		dir[slash - name] = 0;
		if (dl_name_parse_subdir(ds, split, dir, &sub))
			return -ENOENT;
		name = slash + 1;
		if (dl_name_parse_file(ds, split, name, &index, &part) ||
		    dl_file_subdir(ds, split, index) != sub)
			return -ENOENT;
	} else if (dl_name_parse_file(ds, split, name, &index, &part)) {
		return -ENOENT;
	}
	return dl_file_init(s->fmt, ds, split, index, part, f);
}
