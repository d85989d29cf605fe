/* Private to formats/jpeg.c and formats/png.c (and their unit test): the
 * per-file image dimensions and the content streams of one image file. */
#ifndef DLIOFS_IMAGE_I_H
#define DLIOFS_IMAGE_I_H

#include <math.h>
#include <stdint.h>

#include "dliofs/format.h"
#include "dliofs/prng.h"
#include "formats_i.h"

enum dl_color {
	DL_COLOR_L,		/* 1 channel */
	DL_COLOR_RGB,		/* 3 channels, no chroma subsampling */
	DL_COLOR_RGB420,	/* 3 channels, JPEG 4:2:0 (PNG: same as RGB) */
};

/* An image dataset's own parameters (the keys width, height, color):
 * per-file dimensions; sample_size, when given, is the exact file size. */
/* JPEG file sizes where no sample_size is given (formats/jpeg.c). */
enum dl_img_size_model {
	DL_IMG_SIZE_BLOCKS,	/* 9 bytes per 8x8 block */
	DL_IMG_SIZE_PIL_NOISE,	/* PIL's, quality 75, of uniform noise: DLIO's generator */
};

struct dl_img_params {
	struct dl_dist width, height;
	unsigned color;		/* enum dl_color */
	unsigned size_model;	/* enum dl_img_size_model (JPEG only) */
};
DL_DS_PARAMS_FIT(struct dl_img_params);

static inline const struct dl_img_params *dl_img_params(const struct dl_dataset *ds)
{
	return DL_DS_PARAMS(ds, const struct dl_img_params);
}

/* What differs between the image formats for the shared checks (image.c). */
struct dl_img_limits {
	uint64_t max_side;	/* JPEG's 65500, PNG's 2^31-1 */
	const char *max_why;	/* "JPEG's limit" */
	uint64_t max_raw;	/* largest raw image (bytes), 0: no limit of its own */
	uint64_t min_bytes[3];	/* smallest file (a 1x1 image) per color */
};

extern const struct dl_param dl_img_param_table[];
extern const unsigned dl_img_nparams;
/* The checks of an image dataset (width/height/color/sample_size/classes). */
void dl_img_check(struct dl_dataset *ds, const struct dl_check *chk,
		  const struct dl_img_limits *lim);

/* Region ids (dl_file_stream) of one image file: the width and height draws,
 * the JPEG entropy data (stream byte x = entropy byte x, high nibble used) and
 * the PNG pixels (stream byte q = pixel byte q, row major). */
#define DL_IMG_REGION_W 0x696d672d77ULL
#define DL_IMG_REGION_H 0x696d672d68ULL
#define DL_IMG_REGION_JPEG 0x6a7065672dULL
#define DL_IMG_REGION_PNG 0x706e672d70ULL

static inline void dl_img_dims(const struct dl_file *f, uint64_t *w, uint64_t *h)
{
	*w = dl_dist_draw(&dl_img_params(f->ds)->width, dl_file_stream(f, DL_IMG_REGION_W));
	*h = dl_dist_draw(&dl_img_params(f->ds)->height, dl_file_stream(f, DL_IMG_REGION_H));
}

/* w x h scaled so that its larger side is `big` (1 <= big <= max(w, h)),
 * keeping the aspect ratio (smaller side rounded, at least 1). Used to shrink
 * an image whose exact target size is below what w x h can reach. */
static inline void dl_img_scale(uint64_t w, uint64_t h, uint64_t big, uint64_t *w2, uint64_t *h2)
{
	uint64_t L = w > h ? w : h, s = w > h ? h : w;
	uint64_t s2 = (s * big + L / 2) / L;

	if (s2 < 1)
		s2 = 1;
	*w2 = w > h ? big : s2;
	*h2 = w > h ? s2 : big;
}

static inline unsigned dl_img_channels(unsigned c)
{
	return c == DL_COLOR_L ? 1 : 3;
}

/* f->dims as both formats set them: (height, width) for L, (height, width, 3)
 * otherwise, i.e. the shape of the decoded array. */
static inline void dl_img_set_dims(struct dl_file *f, uint64_t w, uint64_t h)
{
	unsigned c = dl_img_channels(dl_img_params(f->ds)->color);

	f->ndims = c == 1 ? 2 : 3;
	f->dims[0] = h;
	f->dims[1] = w;
	f->dims[2] = c == 1 ? 0 : c;
}

#endif
