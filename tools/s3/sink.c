/* A sink as a bucket: writes are taken, checked, shaped and counted like a
 * backing directory's, but their bytes are dropped; the sink keeps each
 * object's key, size, ETag and time (a table sorted by key, at most the
 * sink's max_entries) and serves reads of it with deterministic bytes (a
 * function of the seed, the bucket and the key, not what was written), as
 * the mount's sink does: a 1 TB checkpoint written and read back costs no
 * disk. The table lives as long as the server. */
#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "dliofs/clock.h"
#include "dliofs/prng.h"
#include "s3_i.h"

struct sink_obj {
	char *key;
	uint64_t size, mtime_s;
	char etag[DL_S3_ETAG_MAX];
};

struct sink_part {
	unsigned num;
	uint64_t size;
	unsigned char md5[16];
};

struct sink_upload {
	char id[33];
	char *key;
	struct sink_part *parts;
	size_t n, cap;
};

struct dl_s3_sink {
	pthread_mutex_t lock;
	uint64_t seed_key, max_entries;
	struct sink_obj *objs;		/* sorted by key (bytes) */
	size_t n, cap;
	struct sink_upload *ups;
	size_t nups, capups;
};

static uint64_t hash_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

int dl_s3_sink_new(struct dl_s3_bucket *b, uint64_t seed)
{
	struct dl_s3_sink *k = calloc(1, sizeof(*k));

	if (!k)
		return -ENOMEM;
	pthread_mutex_init(&k->lock, NULL);
	k->seed_key = dl_key2(seed, hash_str(1469598103934665603ULL, b->name));
	k->max_entries = b->bk->max_entries;
	b->sink = k;
	return 0;
}

void dl_s3_sink_free(struct dl_s3_sink *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->n; i++)
		free(k->objs[i].key);
	for (size_t i = 0; i < k->nups; i++) {
		free(k->ups[i].key);
		free(k->ups[i].parts);
	}
	free(k->objs);
	free(k->ups);
	pthread_mutex_destroy(&k->lock);
	free(k);
}

/* The first index whose key is >= key. */
static size_t lower(const struct dl_s3_sink *k, const char *key)
{
	size_t lo = 0, hi = k->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(k->objs[mid].key, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int dl_s3_sink_put(struct dl_s3_sink *k, const char *key, uint64_t size, const char *etag)
{
	size_t i;
	int ret = 0;

	pthread_mutex_lock(&k->lock);
	i = lower(k, key);
	if (i < k->n && strcmp(k->objs[i].key, key) == 0) {
		free(k->objs[i].key);
		k->objs[i].key = NULL;
	} else if (k->n >= k->max_entries) {
		ret = -ENOSPC;
		goto out;
	} else {
		if (k->n == k->cap) {
			size_t cap = k->cap ? k->cap * 2 : 64;
			struct sink_obj *no = realloc(k->objs, cap * sizeof(*no));

			if (!no) {
				ret = -ENOMEM;
				goto out;
			}
			k->objs = no;
			k->cap = cap;
		}
		memmove(k->objs + i + 1, k->objs + i, (k->n - i) * sizeof(*k->objs));
		k->n++;
	}
	k->objs[i].key = strdup(key);
	if (!k->objs[i].key) {
		memmove(k->objs + i, k->objs + i + 1, (k->n - i - 1) * sizeof(*k->objs));
		k->n--;
		ret = -ENOMEM;
		goto out;
	}
	k->objs[i].size = size;
	k->objs[i].mtime_s = (uint64_t)time(NULL);
	snprintf(k->objs[i].etag, sizeof(k->objs[i].etag), "%s", etag);
out:
	pthread_mutex_unlock(&k->lock);
	return ret;
}

int dl_s3_sink_stat(struct dl_s3_sink *k, const char *key, uint64_t *size, uint64_t *mtime_s,
		    char *etag, size_t len)
{
	size_t i;
	int ret = -ENOENT;

	pthread_mutex_lock(&k->lock);
	i = lower(k, key);
	if (i < k->n && strcmp(k->objs[i].key, key) == 0) {
		*size = k->objs[i].size;
		*mtime_s = k->objs[i].mtime_s;
		snprintf(etag, len, "%s", k->objs[i].etag);
		ret = 0;
	}
	pthread_mutex_unlock(&k->lock);
	return ret;
}

int dl_s3_sink_delete(struct dl_s3_sink *k, const char *key)
{
	size_t i;

	pthread_mutex_lock(&k->lock);
	i = lower(k, key);
	if (i < k->n && strcmp(k->objs[i].key, key) == 0) {
		free(k->objs[i].key);
		memmove(k->objs + i, k->objs + i + 1, (k->n - i - 1) * sizeof(*k->objs));
		k->n--;
	}
	pthread_mutex_unlock(&k->lock);
	return 0;
}

int dl_s3_sink_keys(struct dl_s3_sink *k, const char *prefix, char ***keys, size_t *n)
{
	size_t plen = strlen(prefix), i, cnt = 0;
	char **out = NULL;
	int ret = 0;

	pthread_mutex_lock(&k->lock);
	i = lower(k, prefix);
	for (size_t j = i; j < k->n && strncmp(k->objs[j].key, prefix, plen) == 0; j++)
		cnt++;
	out = calloc(cnt ? cnt : 1, sizeof(*out));
	for (size_t j = 0; out && j < cnt; j++) {
		out[j] = strdup(k->objs[i + j].key);
		if (!out[j]) {
			ret = -ENOMEM;
			break;
		}
	}
	pthread_mutex_unlock(&k->lock);
	if (!out || ret) {
		for (size_t j = 0; out && j < cnt; j++)
			free(out[j]);
		free(out);
		return -ENOMEM;
	}
	*keys = out;
	*n = cnt;
	return 0;
}

uint64_t dl_s3_sink_bytes_key(const struct dl_s3_sink *k, const char *key)
{
	return dl_key2(k->seed_key, hash_str(1469598103934665603ULL, key));
}

static struct sink_upload *find_upload(struct dl_s3_sink *k, const char *id, const char *key)
{
	for (size_t i = 0; id && i < k->nups; i++)
		if (strcmp(k->ups[i].id, id) == 0 && strcmp(k->ups[i].key, key) == 0)
			return &k->ups[i];
	return NULL;
}

int dl_s3_sink_mp_create(struct dl_s3_sink *k, const char *key, char id[33])
{
	unsigned char r[16];
	struct sink_upload *u;
	int ret = 0;

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -EIO;
	for (int i = 0; i < 16; i++)
		snprintf(id + 2 * i, 3, "%02x", r[i]);
	pthread_mutex_lock(&k->lock);
	/* Uploads count against the entries too: they are held until done. */
	if (k->n + k->nups >= k->max_entries) {
		ret = -ENOSPC;
		goto out;
	}
	if (k->nups == k->capups) {
		size_t cap = k->capups ? k->capups * 2 : 8;
		struct sink_upload *nu = realloc(k->ups, cap * sizeof(*nu));

		if (!nu) {
			ret = -ENOMEM;
			goto out;
		}
		k->ups = nu;
		k->capups = cap;
	}
	u = &k->ups[k->nups];
	*u = (struct sink_upload){0};
	memcpy(u->id, id, 33);
	u->key = strdup(key);
	if (!u->key)
		ret = -ENOMEM;
	else
		k->nups++;
out:
	pthread_mutex_unlock(&k->lock);
	return ret;
}

int dl_s3_sink_mp_exists(struct dl_s3_sink *k, const char *id, const char *key)
{
	int ret;

	pthread_mutex_lock(&k->lock);
	ret = find_upload(k, id, key) ? 0 : -ENOENT;
	pthread_mutex_unlock(&k->lock);
	return ret;
}

int dl_s3_sink_mp_part(struct dl_s3_sink *k, const char *id, const char *key, unsigned num,
		       uint64_t size, const unsigned char md5[16])
{
	struct sink_upload *u;
	size_t i;
	int ret = 0;

	pthread_mutex_lock(&k->lock);
	u = find_upload(k, id, key);
	if (!u) {
		ret = -ENOENT;
		goto out;
	}
	for (i = 0; i < u->n && u->parts[i].num != num; i++)
		;
	if (i == u->n) {
		if (u->n == u->cap) {
			size_t cap = u->cap ? u->cap * 2 : 16;
			struct sink_part *np = realloc(u->parts, cap * sizeof(*np));

			if (!np) {
				ret = -ENOMEM;
				goto out;
			}
			u->parts = np;
			u->cap = cap;
		}
		u->n++;
	}
	u->parts[i].num = num;	/* a part sent again replaces the one before */
	u->parts[i].size = size;
	memcpy(u->parts[i].md5, md5, 16);
out:
	pthread_mutex_unlock(&k->lock);
	return ret;
}

static void drop_upload(struct dl_s3_sink *k, struct sink_upload *u)
{
	size_t i = (size_t)(u - k->ups);

	free(u->key);
	free(u->parts);
	memmove(k->ups + i, k->ups + i + 1, (k->nups - i - 1) * sizeof(*k->ups));
	k->nups--;
}

int dl_s3_sink_mp_abort(struct dl_s3_sink *k, const char *id, const char *key)
{
	struct sink_upload *u;

	pthread_mutex_lock(&k->lock);
	u = find_upload(k, id, key);
	if (u)
		drop_upload(k, u);
	pthread_mutex_unlock(&k->lock);
	return u ? 0 : -ENOENT;
}

int dl_s3_sink_mp_complete(struct dl_s3_sink *k, const char *id, const char *key,
			   const struct dl_s3_xmlbody *x, char *etag, size_t etaglen,
			   uint64_t *size, const char **code)
{
	unsigned char digest[EVP_MAX_MD_SIZE];
	unsigned dlen = 0;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	struct sink_upload *u;
	uint64_t total = 0;
	int ret = 0;

	if (!md)
		return -ENOMEM;
	EVP_DigestInit_ex(md, EVP_md5(), NULL);
	pthread_mutex_lock(&k->lock);
	*code = "NoSuchUpload";
	u = find_upload(k, id, key);
	if (!u) {
		ret = -ENOENT;
		goto out;
	}
	for (size_t i = 0; i < x->n; i++) {
		const struct sink_part *p = NULL;
		char hx[33];

		*code = "InvalidPartOrder";
		if (i && x->parts[i].num <= x->parts[i - 1].num) {
			ret = -EINVAL;
			goto out;
		}
		*code = "InvalidPart";
		for (size_t j = 0; j < u->n; j++)
			if (u->parts[j].num == x->parts[i].num)
				p = &u->parts[j];
		if (p)
			for (int b = 0; b < 16; b++)
				snprintf(hx + 2 * b, 3, "%02x", p->md5[b]);
		if (!p || strcasecmp(hx, x->parts[i].etag) != 0) {
			ret = -EINVAL;
			goto out;
		}
		EVP_DigestUpdate(md, p->md5, 16);
		total += p->size;
	}
	*code = NULL;
	EVP_DigestFinal_ex(md, digest, &dlen);
	{
		char hx[33];

		for (int b = 0; b < 16; b++)
			snprintf(hx + 2 * b, 3, "%02x", digest[b]);
		snprintf(etag, etaglen, "\"%s-%zu\"", hx, x->n);
	}
	drop_upload(k, u);
	*size = total;
out:
	pthread_mutex_unlock(&k->lock);
	EVP_MD_CTX_free(md);
	return ret;
}
