/* --decode: the CPU cost a loader pays to turn image files into pixels.
 * JPEG through libjpeg(-turbo), as PIL does; PNG by hand on zlib (inflate of
 * the IDAT stream plus the five row filters), which is where libpng spends
 * its time too. Pixels are thrown away a few rows at a time. */
#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <jpeglib.h>

#include "drive_i.h"

#define JPEG_ROWS 16

struct jerr {
	struct jpeg_error_mgr pub;
	jmp_buf jb;
};

static void jpeg_fail(j_common_ptr ci)
{
	struct jerr *e = (struct jerr *)ci->err;

	longjmp(e->jb, 1);
}

static void jpeg_quiet(j_common_ptr ci)
{
	(void)ci; /* warnings (corrupt-data hints) are not ours to print */
}

int drv_decode_jpeg(const uint8_t *data, size_t len, uint8_t **row, size_t *rowcap,
		    uint64_t *pixels)
{
	struct jpeg_decompress_struct ci;
	struct jerr je;
	JSAMPROW rows[JPEG_ROWS];

	ci.err = jpeg_std_error(&je.pub);
	je.pub.error_exit = jpeg_fail;
	je.pub.output_message = jpeg_quiet;
	if (setjmp(je.jb)) {
		jpeg_destroy_decompress(&ci);
		return -EBADMSG;
	}
	jpeg_create_decompress(&ci);
	jpeg_mem_src(&ci, (unsigned char *)data, (unsigned long)len);
	if (jpeg_read_header(&ci, TRUE) != JPEG_HEADER_OK) {
		jpeg_destroy_decompress(&ci);
		return -EBADMSG;
	}
	jpeg_start_decompress(&ci);
	size_t stride = (size_t)ci.output_width * (size_t)ci.output_components;
	if (drv_grow(row, rowcap, stride * JPEG_ROWS)) {
		jpeg_destroy_decompress(&ci);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < JPEG_ROWS; i++)
		rows[i] = *row + i * stride;
	while (ci.output_scanline < ci.output_height)
		jpeg_read_scanlines(&ci, rows, JPEG_ROWS);
	*pixels = (uint64_t)stride * ci.output_height;
	jpeg_finish_decompress(&ci);
	jpeg_destroy_decompress(&ci);
	return 0;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

uint8_t drv_png_paeth(int a, int b, int c)
{
	int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);

	if (pa <= pb && pa <= pc)
		return (uint8_t)a;
	return (uint8_t)(pb <= pc ? b : c);
}

/* Undo the row filter of cur (filter byte first) against prev (same layout). */
int drv_png_unfilter(uint8_t *cur, const uint8_t *prev, size_t stride, unsigned bpp)
{
	uint8_t *x = cur + 1;
	const uint8_t *b = prev + 1;

	switch (cur[0]) {
	case 0:
		return 0;
	case 1:
		for (size_t i = bpp; i < stride; i++)
			x[i] = (uint8_t)(x[i] + x[i - bpp]);
		return 0;
	case 2:
		for (size_t i = 0; i < stride; i++)
			x[i] = (uint8_t)(x[i] + b[i]);
		return 0;
	case 3:
		for (size_t i = 0; i < stride; i++)
			x[i] = (uint8_t)(x[i] + (((i >= bpp ? x[i - bpp] : 0) + b[i]) >> 1));
		return 0;
	case 4:
		for (size_t i = 0; i < stride; i++)
			x[i] = (uint8_t)(x[i] + drv_png_paeth(i >= bpp ? x[i - bpp] : 0, b[i],
							      i >= bpp ? b[i - bpp] : 0));
		return 0;
	}
	return -EBADMSG;
}

int drv_decode_png(const uint8_t *data, size_t len, uint8_t **scratch, size_t *cap,
		   uint64_t *pixels)
{
	static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
	static const unsigned chans[7] = {1, 0, 3, 1, 2, 0, 4};
	uint32_t width = 0, height = 0, rows = 0;
	unsigned bpp = 0;
	size_t stride = 0, fill = 0, pos = 8;
	uint8_t *cur = NULL, *prev = NULL;
	z_stream z;
	int ret = -EBADMSG, zinit = 0, done = 0;

	if (len < 8 || memcmp(data, sig, 8))
		return -EBADMSG;
	memset(&z, 0, sizeof(z));
	while (pos + 12 <= len && !done) {
		uint32_t n = be32(data + pos);
		const uint8_t *type = data + pos + 4, *body = data + pos + 8;
		if (n > len - pos - 12)
			goto out;
		if (!memcmp(type, "IHDR", 4)) {
			if (n < 13)
				goto out;
			width = be32(body);
			height = be32(body + 4);
			unsigned depth = body[8], color = body[9], interlace = body[12];
			if (color > 6 || !chans[color] || !width || !height)
				goto out;
			if (depth != 8 || interlace) {
				ret = -ENOTSUP;
				goto out;
			}
			bpp = chans[color];
			stride = (size_t)width * bpp;
			if (drv_grow(scratch, cap, 2 * (stride + 1))) {
				ret = -ENOMEM;
				goto out;
			}
			cur = *scratch;
			prev = *scratch + stride + 1;
			memset(prev, 0, stride + 1);
			if (inflateInit(&z) != Z_OK) {
				ret = -ENOMEM;
				goto out;
			}
			zinit = 1;
		} else if (!memcmp(type, "IDAT", 4)) {
			if (!zinit)
				goto out;
			z.next_in = (Bytef *)body;
			z.avail_in = n;
			while (rows < height) {
				z.next_out = cur + fill;
				z.avail_out = (uInt)(stride + 1 - fill);
				int zr = inflate(&z, Z_NO_FLUSH);
				if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
					goto out;
				fill = stride + 1 - z.avail_out;
				if (fill == stride + 1) {
					if (drv_png_unfilter(cur, prev, stride, bpp))
						goto out;
					uint8_t *t = prev;
					prev = cur;
					cur = t;
					fill = 0;
					rows++;
					continue;
				}
				if (zr == Z_STREAM_END || z.avail_in == 0)
					break;
			}
		} else if (!memcmp(type, "IEND", 4)) {
			done = 1;
		}
		pos += 12 + (size_t)n;
	}
	if (!zinit || rows != height)
		goto out;
	*pixels = (uint64_t)stride * height;
	ret = 0;
out:
	if (zinit)
		inflateEnd(&z);
	return ret;
}

static const struct drv_decoder decoders[] = {
    {"jpeg", drv_decode_jpeg, "JPEG variant not decoded"},
    {"png", drv_decode_png, "PNG variant not decoded (only 8-bit, non-interlaced images are)"},
};

const struct drv_decoder *drv_decoder_for(const char *format)
{
	for (size_t i = 0; format && i < sizeof(decoders) / sizeof(decoders[0]); i++)
		if (!strcmp(decoders[i].format, format))
			return &decoders[i];
	return NULL;
}
