/* Per-file description and the format-independent part of reading. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/format.h"
#include "dliofs/prng.h"
#include "formats_i.h"

/* Region id of the size draw: no format uses it for content. */
#define REGION_SIZE_DRAW 0x73697a65ULL

int dl_fmt_ctx_new(uint64_t seed, size_t cache_entries, struct dl_fmt_ctx **out)
{
	struct dl_fmt_ctx *ctx = calloc(1, sizeof(*ctx));
	int ret;

	if (!ctx)
		return -ENOMEM;
	ctx->seed = seed;
	ret = dl_dcache_init(&ctx->dcache, cache_entries ? cache_entries : (1u << 20));
	if (ret) {
		free(ctx);
		return ret;
	}
	for (int i = 0; i < DL_FMT__COUNT; i++) {
		const struct dl_format_ops *ops = dl_format_ops((enum dl_format)i);
		if (ops && ops->state_new) {
			ret = ops->state_new(&ctx->state[i]);
			if (ret) {
				dl_fmt_ctx_free(ctx);
				return ret;
			}
		}
	}
	*out = ctx;
	return 0;
}

void dl_fmt_ctx_free(struct dl_fmt_ctx *ctx)
{
	if (!ctx)
		return;
	for (int i = 0; i < DL_FMT__COUNT; i++) {
		const struct dl_format_ops *ops = dl_format_ops((enum dl_format)i);
		if (ops && ops->state_free && ctx->state[i])
			ops->state_free(ctx->state[i]);
	}
	dl_dcache_destroy(ctx->dcache);
	free(ctx);
}

void *dl_fmt_state(struct dl_fmt_ctx *ctx, enum dl_format f)
{
	return (unsigned)f < DL_FMT__COUNT ? ctx->state[f] : NULL;
}

int dl_file_init(struct dl_fmt_ctx *ctx, const struct dl_dataset *ds, uint32_t split,
		 uint64_t index, uint32_t part, struct dl_file *out)
{
	const struct dl_format_ops *ops = dl_format_ops(ds->format);

	if (!ops || split >= DL_SPLIT__COUNT || index >= ds->files[split] || part >= ops->nparts)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->ds = ds;
	out->ctx = ctx;
	out->split = split;
	out->part = part;
	out->index = index;
	out->key = dl_key2(dl_key3(ctx->seed, ds->id, split), index);
	out->samples = ds->samples_per_file;
	if (ds->ndims) {
		uint64_t n = dl_dtype_size(ds->dtype);
		for (unsigned i = 0; i < ds->ndims; i++)
			n *= ds->dims[i];
		out->sample_bytes = n;
	} else {
		out->sample_bytes = dl_dist_draw(&ds->sample_size, dl_key2(out->key, REGION_SIZE_DRAW));
	}
	return ops->layout(out);
}

int dl_file_read(struct dl_fmt_ctx *ctx, const struct dl_file *f, void *buf, uint64_t off,
		 size_t len)
{
	const struct dl_format_ops *ops = dl_format_ops(f->ds->format);

	if (off > f->size || len > f->size - off)
		return -EINVAL;
	if (len == 0)
		return 0;
	return ops->read(ctx, f, buf, off, len);
}

void dl_copy_overlap(uint8_t *buf, uint64_t off, size_t len, const void *src, uint64_t at,
		     size_t n)
{
	uint64_t lo = off > at ? off : at;
	uint64_t hi = off + len < at + n ? off + len : at + n;

	if (lo < hi)
		memcpy(buf + (lo - off), (const uint8_t *)src + (lo - at), hi - lo);
}

void dl_fill_overlap(uint8_t *buf, uint64_t off, size_t len, uint64_t key, uint64_t at,
		     uint64_t n)
{
	uint64_t lo = off > at ? off : at;
	uint64_t hi = off + len < at + n ? off + len : at + n;

	if (lo < hi)
		dl_prng_fill(key, lo - at, buf + (lo - off), hi - lo);
}
