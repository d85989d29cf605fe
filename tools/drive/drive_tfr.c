/* TFRecord framing as TensorFlow's RecordReader walks it (docs/formats.md 2.1):
 * u64le length, masked CRC-32C of those 8 bytes, data, masked CRC-32C of the
 * data. Read through one buffer of transfer_size bytes, refilled with
 * sequential reads, like tf.data's buffered input stream. */
#include <errno.h>
#include <string.h>

#include "dliofs/bytes.h"
#include "drive_i.h"

/* A record longer than this is a framing error, not data (TF's own bound is
 * the remaining file size; 2^40 keeps garbage from looking plausible). */
#define TFR_MAX_LEN (1ull << 40)

int drv_tfr_header(const uint8_t *h, int check, uint64_t *len)
{
	if (check && dl_crc32c_mask(dl_crc32c(0, h, 8)) != dl_get_le32(h + 8))
		return -EBADMSG;
	*len = dl_get_le64(h);
	if (*len > TFR_MAX_LEN)
		return -EBADMSG;
	return 0;
}

void drv_tfr_init(struct drv_tfr *t, uint8_t *buf, size_t cap, int check,
		  ssize_t (*fill)(void *, uint8_t *, size_t), void *src)
{
	*t = (struct drv_tfr){.fill = fill, .src = src, .buf = buf, .cap = cap, .check = check};
}

/* Make at least `want` (<= cap) bytes available at buf[pos]; fewer only at EOF.
 * Returns the bytes available or -errno. */
static ssize_t need(struct drv_tfr *t, size_t want)
{
	if (t->len - t->pos >= want)
		return (ssize_t)(t->len - t->pos);
	if (t->pos) {
		memmove(t->buf, t->buf + t->pos, t->len - t->pos);
		t->len -= t->pos;
		t->pos = 0;
	}
	while (t->len < want) {
		ssize_t r = t->fill(t->src, t->buf + t->len, t->cap - t->len);
		if (r < 0)
			return r;
		if (r == 0)
			break;
		t->len += (size_t)r;
		t->bytes_in += (uint64_t)r;
	}
	return (ssize_t)t->len;
}

int drv_tfr_next(struct drv_tfr *t, uint64_t *lenp, uint64_t *rec_off)
{
	uint8_t foot[DRV_TFR_FOOT];
	uint64_t len, left;
	uint32_t crc = 0;
	ssize_t have;
	int ret;

	have = need(t, DRV_TFR_HDR);
	if (have < 0)
		return (int)have;
	if (have == 0)
		return 0;
	if (have < DRV_TFR_HDR)
		return -EBADMSG; /* truncated header */
	ret = drv_tfr_header(t->buf + t->pos, t->check, &len);
	if (ret)
		return ret;
	*rec_off = t->off;
	*lenp = len;
	t->pos += DRV_TFR_HDR;
	t->off += DRV_TFR_HDR;

	/* Data: consume through the buffer, CRC as it passes. */
	for (left = len; left;) {
		have = need(t, 1);
		if (have < 0)
			return (int)have;
		if (have == 0)
			return -EBADMSG;
		size_t take = (size_t)have < left ? (size_t)have : (size_t)left;
		if (t->check)
			crc = dl_crc32c(crc, t->buf + t->pos, take);
		t->pos += take;
		t->off += take;
		left -= take;
	}
	have = need(t, DRV_TFR_FOOT);
	if (have < 0)
		return (int)have;
	if (have < DRV_TFR_FOOT)
		return -EBADMSG;
	memcpy(foot, t->buf + t->pos, DRV_TFR_FOOT);
	t->pos += DRV_TFR_FOOT;
	t->off += DRV_TFR_FOOT;
	if (t->check && dl_crc32c_mask(crc) != dl_get_le32(foot))
		return -EBADMSG;
	return 1;
}
