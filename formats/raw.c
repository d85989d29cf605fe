/* Formats with no structure in the data: `raw` (samples back to back) and
 * DLIO's `indexed_binary` (the same data file plus two u64le index files,
 * docs/formats.md 9). The data bytes of a file are one stream, so sample i is
 * bytes [i * S, (i + 1) * S) of it, S = f->sample_bytes. */
#include <errno.h>
#include <string.h>

#include "dliofs/format.h"
#include "dliofs/prng.h"
#include "formats_i.h"

/* Region id of the data stream. */
#define REGION_RAW 0x726177ULL

enum ib_part { PART_DATA, PART_OFF, PART_SZ };

static int data_size(struct dl_file *f)
{
	if (__builtin_mul_overflow(f->samples, f->sample_bytes, &f->size))
		return -EFBIG;
	return 0;
}

static int data_read(const struct dl_file *f, uint8_t *buf, uint64_t off, size_t len)
{
	dl_prng_fill(dl_file_stream(f, REGION_RAW), off, buf, len);
	return 0;
}

static int raw_layout(struct dl_file *f)
{
	return data_size(f);
}

static int raw_read(struct dl_fmt_ctx *ctx, const struct dl_file *f, uint8_t *buf, uint64_t off,
		    size_t len)
{
	(void)ctx;
	return data_read(f, buf, off, len);
}

static int ib_layout(struct dl_file *f)
{
	if (f->part == PART_DATA)
		return data_size(f);
	/* The data file's size must be representable too: the offsets are. */
	if (__builtin_mul_overflow(f->samples, f->sample_bytes, &f->aux[0]) ||
	    __builtin_mul_overflow(f->samples, (uint64_t)8, &f->size))
		return -EFBIG;
	return 0;
}

static inline uint64_t ib_entry(const struct dl_file *f, uint64_t i)
{
	return f->part == PART_OFF ? i * f->sample_bytes : f->sample_bytes;
}

static int ib_read(struct dl_fmt_ctx *ctx, const struct dl_file *f, uint8_t *buf, uint64_t off,
		   size_t len)
{
	uint64_t i = off / 8;
	uint8_t tmp[8];
	size_t done = 0;

	(void)ctx;
	if (f->part == PART_DATA)
		return data_read(f, buf, off, len);
	if (off % 8) {
		size_t skip = off % 8, n = 8 - skip < len ? 8 - skip : len;

		dl_put_le64(tmp, ib_entry(f, i));
		memcpy(buf, tmp + skip, n);
		done = n;
		i++;
	}
	for (; len - done >= 8; done += 8, i++)
		dl_put_le64(buf + done, ib_entry(f, i));
	if (done < len) {
		dl_put_le64(tmp, ib_entry(f, i));
		memcpy(buf + done, tmp, len - done);
	}
	return 0;
}

const struct dl_format_ops dl_fmt_raw_ops = {
	.id = DL_FMT_RAW,
	.name = "raw",
	.ext = "raw",
	.example = "sample_size: {mean: 2KiB, stdev: 300}, samples_per_file: 3",
	.features = DL_FF_SHAPE,
	.nparts = 1,
	.read_hints = {.plan = DL_PLAN_REGION, .batch = 64, .read_threads = 4},
	.layout = raw_layout,
	.read = raw_read,
};

const struct dl_format_ops dl_fmt_indexed_binary_ops = {
	.id = DL_FMT_INDEXED_BINARY,
	.name = "indexed_binary",
	.dlio_name = "indexed_binary",
	.ext = "indexed_binary",
	.example = "sample_size: 1KiB, samples_per_file: 4",
	.features = DL_FF_SHAPE,
	.nparts = 3,
	.read_hints = {.plan = DL_PLAN_REGION, .batch = 64, .read_threads = 4, .flags = DL_RH_INDEXED},
	.part_suffix = {"", ".off.idx", ".sz.idx"},
	.layout = ib_layout,
	.read = ib_read,
};
