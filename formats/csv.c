/* DLIO's `csv`: what DLIO 2.0's CSVGenerator writes with pandas,
 * DataFrame([record] * samples).to_csv(path):
 *
 *   ,0,1,...,N-1\n                 header: an empty index label, column names
 *   0,v0,v1,...,v(N-1)\n           one row per sample: its index, N values
 *   1,v0,v1,...,v(N-1)\n
 *
 * N = f->sample_bytes uint8 values (DLIO's d x d record), written in decimal
 * without padding. As in DLIO every row of a file repeats the file's one
 * record, so all rows but their index have the same length and any byte is
 * found in O(log samples).
 *
 * Values are uniform on 0..254 (DLIO's randint(255)) in a way that keeps
 * any offset computable without reading what comes before it: the record is
 * cut into blocks of 255 values and each block is a permutation of 0..254
 * drawn from the file's key and the block number, so a full block is always
 * 910 bytes (255 commas, 655 digits). Only the last, partial block needs its
 * permutation to know its length. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dliofs/format.h"
#include "dliofs/prng.h"
#include "formats_i.h"

#define REGION_CSV 0x637376ULL
#define BLOCK_VALUES 255u
/* ",v" for v = 0..254: 255 commas + 10 one-digit + 90 two-digit + 155
 * three-digit values. */
#define BLOCK_BYTES (255u + 10u + 2u * 90u + 3u * 155u)

/* f->aux: [0] header bytes, [1] record text bytes (",v0,v1..."), [2] rows' end. */
enum { AUX_HEADER, AUX_RECORD, AUX_END };

static unsigned ndigits(uint64_t v)
{
	unsigned d = 1;

	while (v >= 10) {
		v /= 10;
		d++;
	}
	return d;
}

/* Digits of 0, 1, ..., n - 1 written one after the other; 0 on overflow
 * (n is far below where that could happen for any file we can size). */
static uint64_t digits_below(uint64_t n)
{
	uint64_t total = 0, lo = 0, hi = 10;

	for (unsigned d = 1; lo < n; d++) {
		uint64_t end = n < hi ? n : hi;

		total += (end - lo) * d;
		lo = hi;
		if (hi > UINT64_MAX / 10)
			hi = UINT64_MAX;
		else
			hi *= 10;
	}
	return total;
}

/* Block b of the record: the permutation of 0..254 (Fisher-Yates). */
static void block_perm(uint64_t key, uint64_t b, uint8_t *v)
{
	uint64_t k = dl_key2(key, b);

	for (unsigned i = 0; i < BLOCK_VALUES; i++)
		v[i] = (uint8_t)i;
	for (unsigned i = BLOCK_VALUES - 1; i > 0; i--) {
		unsigned j = (unsigned)dl_prng_below(k, i, (uint64_t)i + 1);
		uint8_t t = v[i];

		v[i] = v[j];
		v[j] = t;
	}
}

/* ",v" for the first n values of v; returns the bytes written (<= 4n). */
static size_t block_text(const uint8_t *v, unsigned n, char *out)
{
	size_t o = 0;

	for (unsigned i = 0; i < n; i++) {
		unsigned x = v[i];

		out[o++] = ',';
		if (x >= 100)
			out[o++] = (char)('0' + x / 100);
		if (x >= 10)
			out[o++] = (char)('0' + x / 10 % 10);
		out[o++] = (char)('0' + x % 10);
	}
	return o;
}

static int csv_layout(struct dl_file *f)
{
	const uint64_t n = f->sample_bytes, key = dl_file_stream(f, REGION_CSV);
	const uint64_t full = n / BLOCK_VALUES;
	const unsigned rem = (unsigned)(n % BLOCK_VALUES);
	uint64_t head, rec, row, rows;
	uint8_t v[BLOCK_VALUES];
	char text[4 * BLOCK_VALUES];

	if (n == 0)
		return -EINVAL;
	/* ",k" for every column k, then the newline. */
	head = n + digits_below(n) + 1;
	if (__builtin_mul_overflow(full, (uint64_t)BLOCK_BYTES, &rec))
		return -EFBIG;
	if (rem) {
		block_perm(key, full, v);
		rec += block_text(v, rem, text);
	}
	/* Rows: each its index, the record and a newline. */
	if (__builtin_mul_overflow(f->samples, rec + 1, &rows) ||
	    __builtin_add_overflow(rows, digits_below(f->samples), &rows) ||
	    __builtin_add_overflow(rows, head, &row))
		return -EFBIG;
	f->aux[AUX_HEADER] = head;
	f->aux[AUX_RECORD] = rec;
	f->aux[AUX_END] = row;
	f->size = row;
	return 0;
}

/* Start of row r (0 <= r <= samples: samples is the end). */
static uint64_t row_start(const struct dl_file *f, uint64_t r)
{
	return f->aux[AUX_HEADER] + r * (f->aux[AUX_RECORD] + 1) + digits_below(r);
}

/* The last k with start(k) <= off, k in [0, n): starts are increasing. */
static uint64_t find(uint64_t off, uint64_t n, uint64_t (*start)(const struct dl_file *, uint64_t),
		     const struct dl_file *f)
{
	uint64_t lo = 0, hi = n;

	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (start(f, mid) <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Column k's text (",k") starts at k + digits of 0..k-1. */
static uint64_t col_start(const struct dl_file *f, uint64_t k)
{
	(void)f;
	return k + digits_below(k);
}

/* Bytes [pos, pos + len) of the header into out. */
static void header_bytes(const struct dl_file *f, uint64_t pos, uint8_t *out, size_t len)
{
	const uint64_t n = f->sample_bytes;
	uint64_t k = find(pos, n, col_start, f);
	size_t done = 0;
	char t[24];

	while (done < len) {
		uint64_t at;
		size_t tl, skip, m;

		if (k == n) {
			out[done++] = '\n';
			continue;
		}
		t[0] = ',';
		tl = 1 + (size_t)snprintf(t + 1, sizeof(t) - 1, "%llu", (unsigned long long)k);
		at = col_start(f, k++);
		skip = (size_t)(pos + done - at);
		if (skip >= tl)
			continue;
		m = tl - skip < len - done ? tl - skip : len - done;
		memcpy(out + done, t + skip, m);
		done += m;
	}
}

/* Bytes [pos, pos + len) of the record text into out. */
static void record_bytes(const struct dl_file *f, uint64_t pos, uint8_t *out, size_t len)
{
	const uint64_t key = dl_file_stream(f, REGION_CSV), full = f->sample_bytes / BLOCK_VALUES;
	const unsigned rem = (unsigned)(f->sample_bytes % BLOCK_VALUES);
	uint8_t v[BLOCK_VALUES];
	char text[4 * BLOCK_VALUES];
	size_t done = 0;

	while (done < len) {
		uint64_t b = (pos + done) / BLOCK_BYTES, in = (pos + done) % BLOCK_BYTES;
		size_t tl, n;

		block_perm(key, b, v);
		tl = block_text(v, b < full ? BLOCK_VALUES : rem, text);
		n = tl - (size_t)in < len - done ? tl - (size_t)in : len - done;
		memcpy(out + done, text + in, n);
		done += n;
	}
}

static int csv_read(struct dl_fmt_ctx *ctx, const struct dl_file *f, uint8_t *buf, uint64_t off,
		    size_t len)
{
	const uint64_t head = f->aux[AUX_HEADER], rec = f->aux[AUX_RECORD];
	size_t done = 0;

	(void)ctx;
	if (off < head) {
		done = head - off < len ? (size_t)(head - off) : len;
		header_bytes(f, off, buf, done);
	}
	if (done == len)
		return 0;
	for (uint64_t r = find(off + done, f->samples, row_start, f); done < len; r++) {
		const uint64_t at = row_start(f, r), idx = ndigits(r);
		uint64_t in = off + done - at;
		size_t n;
		char t[24];

		if (in < idx) {
			snprintf(t, sizeof(t), "%llu", (unsigned long long)r);
			n = idx - in < len - done ? (size_t)(idx - in) : len - done;
			memcpy(buf + done, t + in, n);
			done += n;
			in += n;
		}
		if (done < len && in < idx + rec) {
			n = idx + rec - in < len - done ? (size_t)(idx + rec - in) : len - done;
			record_bytes(f, in - idx, buf + done, n);
			done += n;
		}
		if (done < len)
			buf[done++] = '\n';
	}
	return 0;
}

static void csv_check(struct dl_dataset *ds, const struct dl_check *chk, int size_ok)
{
	(void)size_ok;
	if (chk->given(chk->arg, "dtype") && ds->dtype != DL_DT_UINT8)
		dl_check_error(chk, "dtype", "dtype",
			       "csv rows are uint8 values, as DLIO writes them (got %s)",
			       dl_dtype_name(ds->dtype));
}

const struct dl_format_ops dl_fmt_csv_ops = {
	.id = DL_FMT_CSV,
	.name = "csv",
	.dlio_name = "csv",
	.ext = "csv",
	.example = "sample_size: {mean: 600, stdev: 200}, samples_per_file: 3",
	.features = DL_FF_SHAPE | DL_FF_UINT8,
	.check = csv_check,
	.nparts = 1,
	.read_hints = {.plan = DL_PLAN_WHOLE, .batch = 1, .read_threads = 1},
	.layout = csv_layout,
	.read = csv_read,
};
