/* DLRM Criteo binary (facebookresearch/dlrm --mlperf-bin-loader): records of
 * 40 little-endian int32, no header: label, 13 dense, 26 categorical
 * (formats.md 8). Record r's field j comes from 32 bits of word r * 20 + j / 2
 * of the file's stream (low half for even j, high half for odd j), so each
 * field is a pure function of (file key, record, field) and a large read is
 * one vectorized stream fill followed by an in-place mapping pass.
 *
 * Value mapping, from the field's 32 random bits u:
 *   label        u & 1
 *   dense        (u >> 16) >> (u & 15): a log-uniform-like skew over
 *                [0, 65535] with most values small, like Criteo's counts
 *                (the loader takes log(x + 1) of them; never negative)
 *   categorical  (u * cardinality) >> 32: uniform in [0, cardinality)
 * cardinality 0 means 10M; ids are int32, so it is capped at 2^31. */
#include <errno.h>
#include <string.h>

#include "dliofs/format.h"
#include "dliofs/prng.h"
#include "formats_i.h"

#define FIELDS 40
#define DENSE 13
#define REC_BYTES (4 * FIELDS)
#define DEFAULT_CARD 10000000ull
#define MAX_CARD (1ull << 31)
/* Region id of the record stream. */
#define REGION_DLRM 0x646c726dULL
/* Records mapped per chunk of a large read (40 KiB, stays in L1/L2). */
#define CHUNK_RECS 256

static uint64_t cardinality(const struct dl_file *f)
{
	uint64_t c = f->ds->dlrm_cardinality;

	if (c == 0)
		return DEFAULT_CARD;
	return c > MAX_CARD ? MAX_CARD : c;
}

/* Turn nrec records of raw stream bytes into field values, in place. Plain
 * integer arithmetic on a word copy of each record (vectorizes per clone),
 * so every clone gives the same bytes. */
DL_CLONES
static void map_records(uint8_t *p, size_t nrec, uint64_t card)
{
	for (size_t i = 0; i < nrec; i++, p += REC_BYTES) {
		uint32_t w[FIELDS];

		memcpy(w, p, REC_BYTES);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		for (int j = 0; j < FIELDS; j++)
			w[j] = __builtin_bswap32(w[j]);
#endif
		w[0] &= 1;
		for (int j = 1; j <= DENSE; j++)
			w[j] = (w[j] >> 16) >> (w[j] & 15);
		for (int j = DENSE + 1; j < FIELDS; j++)
			w[j] = (uint32_t)(((uint64_t)w[j] * card) >> 32);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		for (int j = 0; j < FIELDS; j++)
			w[j] = __builtin_bswap32(w[j]);
#endif
		memcpy(p, w, REC_BYTES);
	}
}

static int dlrm_layout(struct dl_file *f)
{
	f->sample_bytes = REC_BYTES;
	if (__builtin_mul_overflow(f->samples, (uint64_t)REC_BYTES, &f->size))
		return -EFBIG;
	return 0;
}

static int dlrm_read(struct dl_fmt_ctx *ctx, const struct dl_file *f, uint8_t *buf, uint64_t off,
		     size_t len)
{
	const uint64_t key = dl_file_stream(f, REGION_DLRM), card = cardinality(f);
	uint64_t r = off / REC_BYTES;
	uint8_t tmp[REC_BYTES];
	size_t done = 0;

	(void)ctx;
	/* Partial first record (and a read inside one record). */
	if (off % REC_BYTES) {
		size_t skip = off % REC_BYTES;
		size_t n = REC_BYTES - skip < len ? REC_BYTES - skip : len;

		dl_prng_fill(key, r * REC_BYTES, tmp, REC_BYTES);
		map_records(tmp, 1, card);
		memcpy(buf, tmp + skip, n);
		done = n;
		r++;
	}
	/* Whole records: the loader's 160 * B reads land here. */
	while (len - done >= REC_BYTES) {
		size_t nrec = (len - done) / REC_BYTES;

		if (nrec > CHUNK_RECS)
			nrec = CHUNK_RECS;
		dl_prng_fill(key, r * REC_BYTES, buf + done, nrec * REC_BYTES);
		map_records(buf + done, nrec, card);
		done += nrec * REC_BYTES;
		r += nrec;
	}
	if (done < len) {
		dl_prng_fill(key, r * REC_BYTES, tmp, REC_BYTES);
		map_records(tmp, 1, card);
		memcpy(buf + done, tmp, len - done);
	}
	return 0;
}

const struct dl_format_ops dl_fmt_dlrm_ops = {
	.id = DL_FMT_DLRM,
	.name = "dlrm",
	.ext = "bin",
	.nparts = 1,
	.layout = dlrm_layout,
	.read = dlrm_read,
};
