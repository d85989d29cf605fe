/* NPY (np.save): numpy 1.24's exact header, then the array in C order.
 * Everything is fixed bytes or payload (docs/formats.md 3; strategy S1, docs/formats.md 1.4). Also
 * holds the NPY pieces the npz format reuses for its members (npy_i.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dliofs/intmath.h"
#include "dliofs/prng.h"
#include "formats_i.h"
#include "npy_i.h"

/* numpy's format.py constants. */
#define NPY_ARRAY_ALIGN 64
#define NPY_GROWTH_AXIS_MAX_DIGITS 21
#define NPY_PREFIX_V1 10 /* magic (6) + version (2) + u16 header length */

/* Headroom left under 2^64 for headers and ZIP structures around the data. */
#define NPY_SIZE_LIMIT (UINT64_MAX - (1ULL << 20))

/* Floats are converted in slices that stay in L1/L2 between the generator
 * writing them and the conversion reading them back. */
#define NPY_FLOAT_CHUNK (32u * 1024u)

int dl_npy_sample_shape(struct dl_file *f)
{
	const struct dl_dataset *ds = f->ds;
	uint64_t isz = dl_dtype_size(ds->dtype);
	uint64_t n = isz;

	if (ds->ndims > 0) {
		if (ds->ndims > DL_MAX_DIMS)
			return -EINVAL;
		f->ndims = ds->ndims;
		memcpy(f->dims, ds->dims, sizeof(f->dims[0]) * ds->ndims);
	} else {
		uint64_t d = dl_isqrt64(f->sample_bytes / isz);
		f->ndims = 2;
		f->dims[0] = f->dims[1] = d ? d : 1;
	}
	for (unsigned i = 0; i < f->ndims; i++)
		if (__builtin_mul_overflow(n, f->dims[i], &n))
			return -EFBIG;
	f->sample_bytes = n;
	if (__builtin_mul_overflow(n, f->samples, &n) || n > NPY_SIZE_LIMIT)
		return -EFBIG;
	return 0;
}

uint64_t dl_npy_data_bytes(const struct dl_file *f) { return f->sample_bytes * f->samples; }

size_t dl_npy_header(uint8_t *buf, enum dl_dtype dtype, const uint64_t *shape, unsigned ndims)
{
	char *d = (char *)buf + NPY_PREFIX_V1;
	size_t cap = DL_NPY_HDR_MAX - NPY_PREFIX_V1;
	size_t n = 0, hlen, pad;
	int k;

	/* Python's repr of the dict numpy builds: sorted keys, each "'k': v, ". */
	k = snprintf(d, cap, "{'descr': '%s', 'fortran_order': False, 'shape': (",
		     dl_dtype_descr(dtype));
	if (k < 0 || (size_t)k >= cap)
		return 0;
	n = (size_t)k;
	for (unsigned i = 0; i < ndims; i++) {
		k = snprintf(d + n, cap - n, "%s%llu", i ? ", " : "", (unsigned long long)shape[i]);
		if (k < 0 || (size_t)k >= cap - n)
			return 0;
		n += (size_t)k;
	}
	k = snprintf(d + n, cap - n, "%s), }", ndims == 1 ? "," : "");
	if (k < 0 || (size_t)k >= cap - n)
		return 0;
	n += (size_t)k;
	/* Growth room for the first axis, as numpy leaves it. */
	if (ndims > 0) {
		char digits[24];
		int nd = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)shape[0]);
		size_t room =
		    nd < NPY_GROWTH_AXIS_MAX_DIGITS ? (size_t)(NPY_GROWTH_AXIS_MAX_DIGITS - nd) : 0;
		if (n + room >= cap)
			return 0;
		memset(d + n, ' ', room);
		n += room;
	}
	/* 1..64 spaces and '\n' so that the data starts 64-byte aligned. */
	hlen = n + 1;
	pad = NPY_ARRAY_ALIGN - (NPY_PREFIX_V1 + hlen) % NPY_ARRAY_ALIGN;
	if (NPY_PREFIX_V1 + hlen + pad > DL_NPY_HDR_MAX || hlen + pad > 0xffff)
		return 0;
	memset(d + n, ' ', pad);
	d[n + pad] = '\n';
	memcpy(buf, "\x93NUMPY\x01\x00", 8);
	dl_put_le16(buf + 8, (uint16_t)(hlen + pad));
	return NPY_PREFIX_V1 + hlen + pad;
}

size_t dl_npy_file_header(const struct dl_file *f, uint8_t *buf)
{
	uint64_t shape[DL_MAX_DIMS + 1];

	memcpy(shape, f->dims, sizeof(shape[0]) * f->ndims);
	shape[f->ndims] = f->samples;
	return dl_npy_header(buf, f->ds->dtype, shape, f->ndims + 1);
}

/* Uniform [0, 1) floats from the stream bytes already in p (n elements,
 * little-endian words, any alignment): 1.m - 1 with the top bits of the word as
 * mantissa m. Exact, never NaN/Inf, and written with GCC vector types so that
 * the loops are SIMD at any optimization level (same bytes either way). */
typedef uint32_t v8u32 __attribute__((vector_size(32)));
typedef int32_t v8s32 __attribute__((vector_size(32)));
typedef float v8f32 __attribute__((vector_size(32)));
typedef uint64_t v4u64 __attribute__((vector_size(32)));
typedef double v4f64 __attribute__((vector_size(32)));

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy float conversion assumes a little-endian host"
#endif

/* DL_CLONES (formats_i.h): AVX2/AVX-512 clones run the 32-byte vectors natively. */

static inline uint32_t f32_unit_bits(uint32_t w)
{
	float v;
	uint32_t b = 0x3f800000u | (w >> 9);

	memcpy(&v, &b, 4);
	v -= 1.0f;
	memcpy(&b, &v, 4);
	return b;
}

/* k / 1024 (k < 1024) as IEEE half: exact, and normal for every k > 0. */
static inline uint16_t f16_unit_bits(uint16_t h)
{
	uint32_t b = f32_unit_bits((uint32_t)(h >> 6) << 22);

	return b ? (uint16_t)((b >> 13) - 0x1c000u) : 0;
}

static inline uint64_t f64_unit_bits(uint64_t w)
{
	double v;
	uint64_t b = 0x3ff0000000000000ull | (w >> 12);

	memcpy(&v, &b, 8);
	v -= 1.0;
	memcpy(&b, &v, 8);
	return b;
}

DL_CLONES
static void to_unit_f32(uint8_t *p, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		v8u32 w;
		v8f32 v;
		memcpy(&w, p + 4 * i, sizeof(w));
		w = (w >> 9) | 0x3f800000u;
		memcpy(&v, &w, sizeof(v));
		v -= 1.0f;
		memcpy(p + 4 * i, &v, sizeof(v));
	}
	for (; i < n; i++) {
		uint32_t w;
		memcpy(&w, p + 4 * i, 4);
		w = f32_unit_bits(w);
		memcpy(p + 4 * i, &w, 4);
	}
}

DL_CLONES
static void to_unit_f16(uint8_t *p, size_t n)
{
	size_t i = 0;

	/* Two halves per 32-bit lane: no widening or narrowing conversions,
	 * which baseline SSE2 lacks. */
	for (; i + 16 <= n; i += 16) {
		v8u32 w, lo, hi;
		v8f32 v;
		memcpy(&w, p + 2 * i, sizeof(w));
		lo = (((w & 0xffffu) >> 6) << 13) | 0x3f800000u;
		hi = ((w >> 22) << 13) | 0x3f800000u;
		memcpy(&v, &lo, sizeof(v));
		v -= 1.0f;
		memcpy(&lo, &v, sizeof(v));
		memcpy(&v, &hi, sizeof(v));
		v -= 1.0f;
		memcpy(&hi, &v, sizeof(v));
		/* k = 0 (bits 0) goes negative here: clear it with its sign. */
		lo = (lo >> 13) - 0x1c000u;
		hi = (hi >> 13) - 0x1c000u;
		lo &= ~(v8u32)((v8s32)lo >> 31);
		hi &= ~(v8u32)((v8s32)hi >> 31);
		w = lo | (hi << 16);
		memcpy(p + 2 * i, &w, sizeof(w));
	}
	for (; i < n; i++) {
		uint16_t h;
		memcpy(&h, p + 2 * i, 2);
		h = f16_unit_bits(h);
		memcpy(p + 2 * i, &h, 2);
	}
}

DL_CLONES
static void to_unit_f64(uint8_t *p, size_t n)
{
	size_t i = 0;

	for (; i + 4 <= n; i += 4) {
		v4u64 w;
		v4f64 v;
		memcpy(&w, p + 8 * i, sizeof(w));
		w = (w >> 12) | 0x3ff0000000000000ull;
		memcpy(&v, &w, sizeof(v));
		v -= 1.0;
		memcpy(p + 8 * i, &v, sizeof(v));
	}
	for (; i < n; i++) {
		uint64_t w;
		memcpy(&w, p + 8 * i, 8);
		w = f64_unit_bits(w);
		memcpy(p + 8 * i, &w, 8);
	}
}

static void to_unit(enum dl_dtype t, uint8_t *p, size_t n)
{
	switch (t) {
	case DL_DT_FLOAT16:
		to_unit_f16(p, n);
		break;
	case DL_DT_FLOAT32:
		to_unit_f32(p, n);
		break;
	case DL_DT_FLOAT64:
		to_unit_f64(p, n);
		break;
	default:
		break;
	}
}

static int is_float(enum dl_dtype t)
{
	return t == DL_DT_FLOAT16 || t == DL_DT_FLOAT32 || t == DL_DT_FLOAT64;
}

/* One whole element e, for reads that start or end inside an element. */
static void one_element(uint64_t key, enum dl_dtype t, unsigned isz, uint64_t e, uint8_t *out)
{
	dl_prng_fill(key, e * isz, out, isz);
	to_unit(t, out, 1);
}

void dl_npy_fill_data(const struct dl_file *f, uint8_t *buf, uint64_t off, size_t len)
{
	enum dl_dtype t = f->ds->dtype;
	uint64_t key = dl_file_stream(f, DL_NPY_REGION_DATA);
	unsigned isz = dl_dtype_size(t);
	uint64_t e = off / isz;
	unsigned skip = (unsigned)(off % isz);
	uint8_t tmp[8];

	if (!is_float(t)) {
		dl_prng_fill(key, off, buf, len);
		return;
	}
	if (skip) {
		size_t n = isz - skip < len ? isz - skip : len;
		one_element(key, t, isz, e, tmp);
		memcpy(buf, tmp + skip, n);
		buf += n;
		len -= n;
		e++;
	}
	while (len >= isz) {
		size_t n = len / isz;
		if (n > NPY_FLOAT_CHUNK / isz)
			n = NPY_FLOAT_CHUNK / isz;
		/* Element i's bytes sit at stream offset i * isz, as for integers. */
		dl_prng_fill(key, e * isz, buf, n * isz);
		to_unit(t, buf, n);
		buf += n * isz;
		len -= n * isz;
		e += n;
	}
	if (len) {
		one_element(key, t, isz, e, tmp);
		memcpy(buf, tmp, len);
	}
}

/* aux[0]: header length. */
static int npy_layout(struct dl_file *f)
{
	uint8_t hdr[DL_NPY_HDR_MAX];
	size_t hl;
	int ret;

	if (f->part != 0)
		return -ENOENT;
	ret = dl_npy_sample_shape(f);
	if (ret)
		return ret;
	hl = dl_npy_file_header(f, hdr);
	if (!hl)
		return -EFBIG;
	f->aux[0] = hl;
	f->size = hl + dl_npy_data_bytes(f);
	return 0;
}

static int npy_read(struct dl_fmt_ctx *ctx, const struct dl_file *f, uint8_t *buf, uint64_t off,
		    size_t len)
{
	uint64_t hl = f->aux[0];

	(void)ctx;
	if (off < hl) {
		uint8_t hdr[DL_NPY_HDR_MAX];
		dl_npy_file_header(f, hdr);
		dl_copy_overlap(buf, off, len, hdr, 0, hl);
	}
	if (off + len > hl) {
		uint64_t lo = off > hl ? off : hl;
		dl_npy_fill_data(f, buf + (lo - off), lo - hl, (size_t)(off + len - lo));
	}
	return 0;
}

const struct dl_format_ops dl_fmt_npy_ops = {
    .id = DL_FMT_NPY,
    .name = "npy",
    .dlio_name = "npy",
    .ext = "npy",
    .example = "shape: [8, 16], dtype: float32",
    .features = DL_FF_SHAPE,
    .nparts = 1,
    .read_hints = {.plan = DL_PLAN_WHOLE, .batch = 7, .read_threads = 4, .flags = DL_RH_NUMPY},
    .layout = npy_layout,
    .read = npy_read,
};
