/* What jpeg and png share as config: the image parameters (width, height,
 * color) and their checks. Each format passes its own limits. */
#include <string.h>

#include "dliofs/intmath.h"
#include "image_i.h"

static const char *const color_names[] = {
	[DL_COLOR_L] = "L",
	[DL_COLOR_RGB] = "RGB",
	[DL_COLOR_RGB420] = "RGB420",
};

static const char *const size_model_names[] = {
	[DL_IMG_SIZE_BLOCKS] = "blocks",
	[DL_IMG_SIZE_PIL_NOISE] = "pil_noise",
};

/* width, height, color for both formats; size_model last, JPEG's only. */
const struct dl_param dl_img_param_table[] = {
	{.key = "width",
	 .kind = DL_PK_PIXELS,
	 .off = offsetof(struct dl_img_params, width),
	 .dlio_key = "record_dims"},
	{.key = "height",
	 .kind = DL_PK_PIXELS,
	 .off = offsetof(struct dl_img_params, height),
	 .dlio_key = "record_dims"},
	{.key = "color",
	 .kind = DL_PK_CHOICE,
	 .off = offsetof(struct dl_img_params, color),
	 .def = DL_COLOR_RGB,
	 .names = color_names,
	 .nnames = 3},
	{.key = "size_model",
	 .kind = DL_PK_CHOICE,
	 .off = offsetof(struct dl_img_params, size_model),
	 .def = DL_IMG_SIZE_BLOCKS,
	 .names = size_model_names,
	 .nnames = 2},
};
const unsigned dl_img_nparams = sizeof(dl_img_param_table) / sizeof(dl_img_param_table[0]);

/* A sample_size (the exact file size) leads to a square whose raw pixels
 * are this many times the file: both encoders then sit in the middle of
 * their range (JPEG about 16 bytes per 8x8 block; PNG shrinks it to fit). */
#define RAW_PER_BYTE 4
/* Sides derived that way stay JPEG-sized for both formats. */
#define DERIVED_MAX_SIDE 65500ULL
/* A file must stay well below 2^64 bytes (offsets plus lengths never wrap). */
#define MAX_FILE_BYTES (1ULL << 62)

static int check_file_size(struct dl_dataset *ds, const struct dl_check *chk,
			   const struct dl_img_limits *lim, const char *fmt)
{
	const struct dl_img_params *p = dl_img_params(ds);
	uint64_t min = lim->min_bytes[p->color];

	if (chk->dist(chk->arg, "sample_size", &ds->sample_size, "byte", "bytes", UINT64_MAX,
		      NULL))
		return 0;
	if (ds->sample_size.min < min) {
		dl_check_error(chk, chk->given(chk->arg, "sample_size.min") ? "sample_size.min"
									      : "sample_size",
			       "sample_size",
			       "%llu bytes is below the smallest %s file of color %s (%llu bytes, "
			       "a 1x1 image)",
			       (unsigned long long)ds->sample_size.min, fmt, color_names[p->color],
			       (unsigned long long)min);
		return 0;
	}
	if (ds->sample_size.max >= MAX_FILE_BYTES) {
		dl_check_error(chk, "sample_size", "sample_size",
			       "a file would be too large: must stay below 2^62 bytes");
		return 0;
	}
	return 1;
}

void dl_img_check(struct dl_dataset *ds, const struct dl_check *chk,
		  const struct dl_img_limits *lim)
{
	struct dl_img_params *p = DL_DS_PARAMS(ds, struct dl_img_params);
	const char *fmt = dl_ds_ops(ds)->name;
	int wg = chk->given(chk->arg, "width"), hg = chk->given(chk->arg, "height");
	int sg = chk->given(chk->arg, "sample_size");
	int size_ok = 1, w_ok = 0, h_ok = 0;
	unsigned ch = dl_img_channels(p->color);

	if (chk->given(chk->arg, "shape"))
		dl_check_error(chk, "shape", "shape",
			       "not used by format %s: give width and height (and color)", fmt);
	if (chk->usable(chk->arg, "samples_per_file") && ds->samples_per_file != 1)
		dl_check_error(chk, "samples_per_file", "samples_per_file",
			       "format %s holds one image per file: must be 1", fmt);
	if (chk->usable(chk->arg, "dtype") && ds->dtype != DL_DT_UINT8)
		dl_check_error(chk, "dtype", "dtype", "images are 8-bit: must be uint8");
	if (sg)
		size_ok = check_file_size(ds, chk, lim, fmt);
	if (wg)
		w_ok = chk->dist(chk->arg, "width", &p->width, "pixel", "pixels", lim->max_side,
				 lim->max_why) == 0;
	if (hg)
		h_ok = chk->dist(chk->arg, "height", &p->height, "pixel", "pixels", lim->max_side,
				 lim->max_why) == 0;
	if (!wg && !hg) {
		uint64_t q, side;

		if (!sg) {
			dl_check_error(chk, NULL, "width",
				       "missing: format %s needs width and height (or a sample_size, "
				       "from which a square is derived)",
				       fmt);
			return;
		}
		if (!size_ok)
			return;
		q = ds->sample_size.mean / ch;
		q = q > UINT64_MAX / RAW_PER_BYTE ? UINT64_MAX : q * RAW_PER_BYTE;
		side = dl_isqrt64(q);
		side = side < 1 ? 1 : side > DERIVED_MAX_SIDE ? DERIVED_MAX_SIDE : side;
		p->width = p->height = (struct dl_dist){side, 0, side, side};
		return;
	}
	/* One side given: the other is the same (a square, or the same spread). */
	if (!hg) {
		p->height = p->width;
		h_ok = w_ok;
	} else if (!wg) {
		p->width = p->height;
		w_ok = h_ok;
	}
	if (!w_ok || !h_ok || !lim->max_raw)
		return;
	{
		uint64_t raw;

		if (__builtin_mul_overflow(p->width.max, (uint64_t)ch, &raw) ||
		    __builtin_add_overflow(raw, 1, &raw) ||
		    __builtin_mul_overflow(raw, p->height.max, &raw) || raw > lim->max_raw)
			dl_check_error(chk, wg ? "width" : "height", wg ? "width" : "height",
				       "an image of up to %llu x %llu pixels is too large (at most "
				       "2^50 raw bytes)",
				       (unsigned long long)p->width.max,
				       (unsigned long long)p->height.max);
	}
}
