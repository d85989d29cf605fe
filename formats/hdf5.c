/* HDF5 through libhdf5 itself (docs/formats.md 5, strategy S2). Once per shape the
 * library creates the whole file, with the same calls h5py makes for DLIO,
 * into a sparse in-memory driver that keeps only the metadata it writes; the
 * template is those bytes plus the raw data ranges the library reports
 * (H5Dget_offset, chunk info). A read copies template bytes and generates data
 * ranges on demand; no data is ever written or kept.
 *
 * Gzip datasets hold stored-deflate chunks written with H5Dwrite_chunk
 * (docs/formats.md 5.4): every chunk has the same fixed size, so the metadata stays
 * data-independent and the only derived bytes are each chunk's Adler-32 (S3,
 * kept in the dcache).
 *
 * libhdf5 (Debian's build) is not thread-safe: every call into it runs under
 * the state's lib_lock. Templates are shared read-only and refcounted under
 * cache_lock, so reads of cached shapes never wait for a template build.
 *
 * This file: the template cache, the per-context state and serving a read;
 * templates are built in hdf5_template.c through the sparse driver of
 * hdf5_sink.c, the config side is hdf5_config.c. */
#include <errno.h>
#include <hdf5.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/crc32.h"
#include "dliofs/prng.h"
#include "formats_i.h"
#include "hdf5_tmpl_i.h"
#include "npy_i.h"

/* ---------------------------------------------------------------------------
 * The cache: at most max templates and DL_H5_CACHE_BUDGET bytes, least
 * recently used out first. A template leaves the table when evicted and is
 * freed by whoever drops its last reference. */

static struct h5_tmpl *cache_find(struct h5_state *st, const struct h5_shape *sh, uint64_t hash)
{
	for (unsigned i = 0; i < st->n; i++) {
		struct h5_tmpl *t = st->slot[i];
		if (t->hash == hash && memcmp(&t->sh, sh, sizeof(*sh)) == 0) {
			t->refs++;
			t->used = ++st->tick;
			st->stats.hits++;
			return t;
		}
	}
	return NULL;
}

static void tmpl_unref(struct h5_state *st, struct h5_tmpl *t)
{
	int last;

	pthread_mutex_lock(&st->cache_lock);
	last = --t->refs == 0;
	pthread_mutex_unlock(&st->cache_lock);
	if (last)
		dl_h5_tmpl_free(t);
}

/* Evict least recently used templates (never `keep`) until the table is
 * within its limits; returns how many lost their last reference (to free once
 * the lock is dropped). */
static unsigned cache_trim(struct h5_state *st, const struct h5_tmpl *keep, struct h5_tmpl **dead)
{
	unsigned ndead = 0;

	while (st->n > 0 && (st->n > st->max || st->bytes > DL_H5_CACHE_BUDGET)) {
		unsigned v = st->n;
		for (unsigned i = 0; i < st->n; i++)
			if (st->slot[i] != keep &&
			    (v == st->n || st->slot[i]->used < st->slot[v]->used))
				v = i;
		if (v == st->n)
			break;
		struct h5_tmpl *e = st->slot[v];
		st->slot[v] = st->slot[--st->n];
		st->bytes -= e->bytes;
		if (--e->refs == 0)
			dead[ndead++] = e;
	}
	return ndead;
}

/* Insert t with one reference for the table and one for the caller. */
static unsigned cache_insert(struct h5_state *st, struct h5_tmpl *t, struct h5_tmpl **dead)
{
	t->refs = 2;
	t->used = ++st->tick;
	st->slot[st->n++] = t;
	st->bytes += t->bytes;
	return cache_trim(st, t, dead);
}

/* A referenced template of f's shape, built if needed. */
static int tmpl_get(struct h5_state *st, const struct h5_shape *sh, uint64_t nchunks,
		    struct h5_tmpl **out)
{
	struct h5_tmpl *dead[DL_H5_CACHE_MAX + 1];
	uint64_t hash = dl_h5_shape_hash(sh);
	struct h5_tmpl *t;
	H5E_auto2_t efunc = NULL;
	void *edata = NULL;
	unsigned ndead = 0;
	int ret = 0;

	pthread_mutex_lock(&st->cache_lock);
	t = cache_find(st, sh, hash);
	pthread_mutex_unlock(&st->cache_lock);
	if (t) {
		*out = t;
		return 0;
	}
	pthread_mutex_lock(&st->lib_lock);
	st->stats.lib_calls++;
	/* Another thread may have built it while we waited. */
	pthread_mutex_lock(&st->cache_lock);
	t = cache_find(st, sh, hash);
	pthread_mutex_unlock(&st->cache_lock);
	if (!t) {
		/* Failures are reported as errno values, not on stderr. */
		H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
		H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
		ret = dl_h5_tmpl_build(st, sh, nchunks, &t);
		H5Eclear2(H5E_DEFAULT);
		H5Eset_auto2(H5E_DEFAULT, efunc, edata);
		if (ret == 0) {
			pthread_mutex_lock(&st->cache_lock);
			ndead = cache_insert(st, t, dead);
			pthread_mutex_unlock(&st->cache_lock);
		}
	}
	pthread_mutex_unlock(&st->lib_lock);
	for (unsigned i = 0; i < ndead; i++)
		dl_h5_tmpl_free(dead[i]);
	if (ret)
		return ret;
	*out = t;
	return 0;
}

static int h5_state_new(void **out)
{
	struct h5_state *st = calloc(1, sizeof(*st));

	if (!st)
		return -ENOMEM;
	pthread_mutex_init(&st->lib_lock, NULL);
	pthread_mutex_init(&st->cache_lock, NULL);
	st->drv = -1;
	st->max = DL_H5_CACHE_MAX;
	*out = st;
	return 0;
}

static void h5_state_free(void *p)
{
	struct h5_state *st = p;

	if (!st)
		return;
	for (unsigned i = 0; i < st->n; i++)
		dl_h5_tmpl_free(st->slot[i]);
	if (st->drv >= 0) {
		pthread_mutex_lock(&st->lib_lock);
		H5FDunregister(st->drv);
		pthread_mutex_unlock(&st->lib_lock);
	}
	pthread_mutex_destroy(&st->cache_lock);
	pthread_mutex_destroy(&st->lib_lock);
	free(st);
}

int dl_h5_stats(struct dl_fmt_ctx *ctx, struct dl_h5_stats *out)
{
	struct h5_state *st = dl_fmt_state(ctx, DL_FMT_HDF5);

	if (!st)
		return -ENOENT;
	pthread_mutex_lock(&st->lib_lock);
	pthread_mutex_lock(&st->cache_lock);
	*out = st->stats;
	out->cached = st->n;
	out->cached_bytes = st->bytes;
	pthread_mutex_unlock(&st->cache_lock);
	pthread_mutex_unlock(&st->lib_lock);
	return 0;
}

int dl_h5_set_cache_max(struct dl_fmt_ctx *ctx, unsigned max)
{
	struct h5_state *st = dl_fmt_state(ctx, DL_FMT_HDF5);
	struct h5_tmpl *dead[DL_H5_CACHE_MAX + 1];
	unsigned ndead;

	if (!st)
		return -ENOENT;
	if (max == 0 || max > DL_H5_CACHE_MAX)
		max = DL_H5_CACHE_MAX;
	pthread_mutex_lock(&st->cache_lock);
	st->max = max;
	ndead = cache_trim(st, NULL, dead);
	pthread_mutex_unlock(&st->cache_lock);
	for (unsigned i = 0; i < ndead; i++)
		dl_h5_tmpl_free(dead[i]);
	return 0;
}

/* ---------------------------------------------------------------------------
 * Serving. */

/* f with the key whose npy data stream is data dataset d's content. */
static struct dl_file data_view(const struct dl_file *f, unsigned d)
{
	struct dl_file v = *f;

	v.key = dl_file_stream(f, DL_H5_REGION_DATA + d);
	return v;
}

/* Data stream bytes [soff, soff + n) of v into p. (The generator writes at
 * any alignment of p and soff at full speed, so chunk addresses and
 * stored-block payloads need no bounce buffer.) */
static void fill_data(const struct dl_file *v, uint8_t *p, uint64_t soff, size_t n)
{
	dl_npy_fill_data(v, p, soff, n);
}

static void fill_labels(const struct dl_file *f, const struct h5_tmpl *t, uint8_t *buf,
			uint64_t rel, size_t len)
{
	uint64_t key = dl_file_stream(f, DL_H5_REGION_Y);

	if (t->sh.layout == DL_H5_DLIO) {
		memset(buf, 0, len); /* DLIO's labels: int64 zeros */
		return;
	}
	while (len) {
		uint64_t e = rel / 8;
		size_t in = (size_t)(rel % 8), n = 8 - in < len ? 8 - in : len;
		uint8_t v[8];
		dl_put_le64(v, dl_prng_below(key, e, DL_H5_Y_CLASSES));
		memcpy(buf, v + in, n);
		buf += n;
		rel += n;
		len -= n;
	}
}

/* Adler-32 of chunk c's payload (stream bytes [c * raw, (c + 1) * raw)). */
static uint32_t chunk_adler(struct dl_fmt_ctx *ctx, const struct dl_file *f,
			    const struct h5_tmpl *t, unsigned d, uint64_t c)
{
	uint64_t k2 = dl_key3(DL_H5_DCACHE_TAG ^ t->hash, d, c);
	struct dl_file v = data_view(f, d);
	uint8_t piece[GZ_PIECE];
	uint32_t a = 1; /* Adler-32 of nothing */

	if (dl_dcache_get(ctx, f->key, k2, &a) == 0)
		return a;
	for (uint64_t o = 0; o < t->chunk_raw; o += GZ_PIECE) {
		size_t n = t->chunk_raw - o < GZ_PIECE ? (size_t)(t->chunk_raw - o) : GZ_PIECE;
		dl_npy_fill_data(&v, piece, c * t->chunk_raw + o, n);
		a = dl_adler32(a, piece, n);
	}
	dl_dcache_put(ctx, f->key, k2, a);
	return a;
}

/* Key of the running Adler-32 of chunk c's payload up to stream offset
 * `at` (a sequential reader's previous request ended there). */
static uint64_t part_key(const struct h5_tmpl *t, unsigned d, uint64_t c, uint64_t at)
{
	return dl_key3(dl_key3(DL_H5_PART_TAG ^ t->hash, d, c), at, 0);
}

/* Bytes [in, in + len) of chunk c stored as a zlib stream of stored blocks:
 * 78 01, then per block of up to 65535 payload bytes BFINAL|00, LEN, ~LEN and
 * the payload, then the Adler-32 (big-endian). The Adler-32 is taken from the
 * payload bytes the request holds when it holds them from the start, or
 * continues the running value the previous request of a sequential reader
 * left at its end: chunks larger than a request (2 MiB chunks, 1 MiB reads)
 * then cost no second generation pass when their trailer is read. */
static void serve_gz_chunk(struct dl_fmt_ctx *ctx, const struct dl_file *f, const struct h5_tmpl *t,
			   unsigned d, uint64_t c, uint8_t *buf, uint64_t in, size_t len)
{
	static const uint8_t zhdr[GZ_HDR] = {0x78, 0x01};
	uint64_t n = t->chunk_raw, nb = (n + DL_DS_BLOCK - 1) / DL_DS_BLOCK;
	uint64_t tail = GZ_HDR + n + DL_DS_HDR * nb, end = in + len;
	const uint64_t pk = dl_key2(f->key, DL_H5_PART_TAG);
	struct dl_file v = data_view(f, d);
	/* run: s holds the Adler-32 of the payload before this request's. */
	uint32_t s = 1; /* Adler-32 of nothing */
	int run = in <= GZ_HDR + DL_DS_HDR ||
		  (in < tail && dl_dcache_get(ctx, pk, part_key(t, d, c, in), &s) == 0);

	dl_copy_overlap(buf, in, len, zhdr, 0, GZ_HDR);
	if (end > GZ_HDR && in < tail) {
		uint64_t b = in > GZ_HDR ? (in - GZ_HDR) / (DL_DS_BLOCK + DL_DS_HDR) : 0;
		for (; b < nb; b++) {
			uint64_t at = GZ_HDR + b * (DL_DS_BLOCK + DL_DS_HDR);
			uint64_t blen = n - b * DL_DS_BLOCK < DL_DS_BLOCK ? n - b * DL_DS_BLOCK : DL_DS_BLOCK;
			uint64_t lo = at + DL_DS_HDR, hi = lo + blen;
			uint8_t h[DL_DS_HDR];
			if (at >= end)
				break;
			h[0] = b + 1 == nb;
			dl_put_le16(h + 1, (uint16_t)blen);
			dl_put_le16(h + 3, (uint16_t)~blen);
			dl_copy_overlap(buf, in, len, h, at, DL_DS_HDR);
			if (lo < in)
				lo = in;
			if (hi > end)
				hi = end;
			if (lo < hi) {
				uint8_t *p = buf + (lo - in);
				fill_data(&v, p, c * n + b * DL_DS_BLOCK + (lo - at - DL_DS_HDR),
					  (size_t)(hi - lo));
				if (run)
					s = dl_adler32(s, p, (size_t)(hi - lo));
			}
		}
	}
	const uint64_t k2 = dl_key3(DL_H5_DCACHE_TAG ^ t->hash, d, c);
	if (run && end >= tail)
		dl_dcache_put(ctx, f->key, k2, s); /* the whole payload went by */
	else if (run)
		dl_dcache_put(ctx, pk, part_key(t, d, c, end), s);
	if (end > tail) {
		uint32_t a;
		uint8_t be[GZ_TAIL];
		if (run)
			a = s;
		else
			a = chunk_adler(ctx, f, t, d, c);
		be[0] = (uint8_t)(a >> 24);
		be[1] = (uint8_t)(a >> 16);
		be[2] = (uint8_t)(a >> 8);
		be[3] = (uint8_t)a;
		dl_copy_overlap(buf, in, len, be, tail, GZ_TAIL);
	}
}

static void serve_chunks(struct dl_fmt_ctx *ctx, const struct dl_file *f, const struct h5_tmpl *t,
			 const struct h5_seg *sg, uint8_t *buf, uint64_t rel, size_t len)
{
	uint64_t stored = t->chunk_stored;

	if (t->sh.comp != DL_COMP_GZIP) {
		/* A run of chunks c0, c0 + 1, ... is one stretch of the stream. */
		struct dl_file v = data_view(f, sg->dset);
		fill_data(&v, buf, sg->arg * t->chunk_raw + rel, len);
		return;
	}
	while (len) {
		uint64_t j = rel / stored, in = rel % stored;
		size_t n = stored - in < len ? (size_t)(stored - in) : len;
		serve_gz_chunk(ctx, f, t, sg->dset, sg->arg + j, buf, in, n);
		buf += n;
		rel += n;
		len -= n;
	}
}

static void serve(struct dl_fmt_ctx *ctx, const struct dl_file *f, const struct h5_tmpl *t,
		  uint8_t *buf, uint64_t off, size_t len)
{
	size_t lo = 0, hi = t->nseg;

	/* Last segment starting at or before off. */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->seg[mid].at <= off)
			lo = mid;
		else
			hi = mid;
	}
	for (size_t i = lo; len && i < t->nseg; i++) {
		const struct h5_seg *sg = &t->seg[i];
		uint64_t rel = off - sg->at;
		size_t n = sg->len - rel < len ? (size_t)(sg->len - rel) : len;
		struct dl_file v;

		switch (sg->kind) {
		case SEG_ZERO:
			memset(buf, 0, n);
			break;
		case SEG_META:
			memcpy(buf, t->meta + sg->arg + rel, n);
			break;
		case SEG_DATA:
			v = data_view(f, sg->dset);
			fill_data(&v, buf, rel, n);
			break;
		case SEG_CHUNKS:
			serve_chunks(ctx, f, t, sg, buf, rel, n);
			break;
		case SEG_LABELS:
			fill_labels(f, t, buf, rel, n);
			break;
		}
		buf += n;
		off += n;
		len -= n;
	}
}

/* ---------------------------------------------------------------------------
 * Format ops. */

/* aux[0]: shape hash of the template (informational). */
static int h5_layout(struct dl_file *f)
{
	struct h5_state *st;
	struct h5_shape sh;
	struct h5_tmpl *t;
	uint64_t nchunks;
	int ret;

	if (f->part != 0)
		return -ENOENT;
	st = f->ctx ? dl_fmt_state(f->ctx, DL_FMT_HDF5) : NULL;
	if (!st)
		return -EINVAL;
	ret = dl_npy_sample_shape(f);
	if (ret)
		return ret;
	ret = dl_h5_shape_of(f, &sh, &nchunks);
	if (ret)
		return ret;
	ret = tmpl_get(st, &sh, nchunks, &t);
	if (ret)
		return ret;
	f->size = t->eof;
	f->aux[0] = t->hash;
	tmpl_unref(st, t);
	return 0;
}

static int h5_read(struct dl_fmt_ctx *ctx, const struct dl_file *f, uint8_t *buf, uint64_t off,
		   size_t len)
{
	struct h5_state *st = dl_fmt_state(ctx, DL_FMT_HDF5);
	struct h5_shape sh;
	struct h5_tmpl *t;
	uint64_t nchunks;
	int ret;

	if (!st)
		return -EINVAL;
	ret = dl_h5_shape_of(f, &sh, &nchunks);
	if (ret)
		return ret;
	/* Usually a cache hit; rebuilt (same bytes) if evicted since layout. */
	ret = tmpl_get(st, &sh, nchunks, &t);
	if (ret)
		return ret;
	if (t->eof != f->size)
		ret = -EIO;
	else
		serve(ctx, f, t, buf, off, len);
	tmpl_unref(st, t);
	return ret;
}

int dl_h5_meta_ranges(struct dl_fmt_ctx *ctx, const struct dl_file *f,
		      void (*fn)(void *arg, uint64_t at, uint64_t len), void *arg)
{
	struct h5_state *st = dl_fmt_state(ctx, DL_FMT_HDF5);
	struct h5_shape sh;
	struct h5_tmpl *t;
	uint64_t nchunks;
	int ret;

	if (!st)
		return -EINVAL;
	ret = dl_h5_shape_of(f, &sh, &nchunks);
	if (ret == 0)
		ret = tmpl_get(st, &sh, nchunks, &t);
	if (ret)
		return ret;
	for (size_t i = 0; i < t->nseg; i++)
		if (t->seg[i].kind == SEG_META)
			fn(arg, t->seg[i].at, t->seg[i].len);
	tmpl_unref(st, t);
	return 0;
}

const struct dl_format_ops dl_fmt_hdf5_ops = {
    .id = DL_FMT_HDF5,
    .name = "hdf5",
    .dlio_name = "hdf5",
    .ext = "hdf5",
    .example = "shape: [16, 16], dtype: float32, samples_per_file: 4, "
               "hdf5: {chunks: [1, 16, 16]}, compression: gzip",
    .features = DL_FF_SHAPE,
    .comps = (const struct dl_comp_use[]){{DL_COMP_GZIP, "deflate chunks"}},
    .ncomps = 1,
    .dlio_comps = 1u << DL_COMP_GZIP,
    .params = dl_h5_param_table,
    .nparams = 1,
    .check = dl_h5_check,
    .copies = dl_h5_copies,
    .nparts = 1,
    .read_hints = {.plan = DL_PLAN_HYPERSLAB, .batch = 64, .read_threads = 4},
    .layout = h5_layout,
    .read = h5_read,
    .state_new = h5_state_new,
    .state_free = h5_state_free,
};

