/* Deflate streams made only of stored blocks (RFC 1951 3.2.4), private to
 * formats/. Random payload does not compress, so real compressors emit stored
 * blocks for it anyway; emitting exactly those keeps every byte position
 * arithmetic and every size known before any content (docs/formats.md 1.6).
 *
 * A stream of n raw bytes is ceil(n / 65535) blocks (one empty block when
 * n == 0): block j is the header byte BFINAL | BTYPE 00 << 1 (1 on the last
 * block, else 0; the 5 unused bits pad it to a byte boundary), LEN and
 * NLEN = ~LEN as u16le, then raw bytes [65535 j, 65535 j + LEN). Each block
 * thus costs 5 bytes, and block j starts at 65540 j in the stream. */
#ifndef DLIOFS_DEFLATE_STORED_H
#define DLIOFS_DEFLATE_STORED_H

#include <stddef.h>
#include <stdint.h>

#include "formats_i.h"

#define DL_DS_BLOCK 65535u		     /* raw bytes per full block */
#define DL_DS_HDR 5u			     /* header bytes per block */
#define DL_DS_UNIT (DL_DS_BLOCK + DL_DS_HDR) /* stream bytes per full block */

static inline uint64_t dl_ds_blocks(uint64_t n)
{
	return n ? n / DL_DS_BLOCK + (n % DL_DS_BLOCK != 0) : 1;
}

/* Stream bytes for n raw bytes: n + 5 ceil(n / 65535), 5 for n == 0.
 * Callers keep n below 2^63, which keeps this below 2^64. */
static inline uint64_t dl_ds_size(uint64_t n) { return n + DL_DS_HDR * dl_ds_blocks(n); }

/* Header of block j of the stream of n raw bytes. */
static inline void dl_ds_block_header(uint8_t h[DL_DS_HDR], uint64_t n, uint64_t j)
{
	uint64_t nb = dl_ds_blocks(n);
	uint16_t blen = j + 1 < nb ? DL_DS_BLOCK : (uint16_t)(n - j * DL_DS_BLOCK);

	h[0] = j + 1 == nb ? 1 : 0;
	dl_put_le16(h + 1, blen);
	dl_put_le16(h + 3, (uint16_t)~blen);
}

/* Fills dst with raw bytes [raw_off, raw_off + len) of the stream's input;
 * returns 0 or -errno. Called in increasing raw order, one run per block. */
typedef int (*dl_ds_fill_fn)(void *arg, uint8_t *dst, uint64_t raw_off, size_t len);

/* Fill the overlap of the request [off, off + len) with the stored stream of
 * n raw bytes that starts at file offset `at`: headers here, raw bytes from
 * fill. Returns the first error of fill, else 0. */
static inline int dl_ds_read(uint8_t *buf, uint64_t off, size_t len, uint64_t at, uint64_t n,
			     dl_ds_fill_fn fill, void *arg)
{
	const uint64_t size = dl_ds_size(n), end = off + len;
	uint64_t j, s;

	if (end <= at || off >= at + size)
		return 0;
	j = off > at ? (off - at) / DL_DS_UNIT : 0;
	for (s = at + j * DL_DS_UNIT; s < end && s < at + size; j++, s += DL_DS_UNIT) {
		const uint64_t raw0 = j * DL_DS_BLOCK;
		const uint64_t blen = n - raw0 < DL_DS_BLOCK ? n - raw0 : DL_DS_BLOCK;
		const uint64_t d = s + DL_DS_HDR;
		uint8_t h[DL_DS_HDR];

		if (off < d) {
			dl_ds_block_header(h, n, j);
			dl_copy_overlap(buf, off, len, h, s, DL_DS_HDR);
		}
		if (blen && off < d + blen && d < end) {
			uint64_t lo = off > d ? off : d;
			uint64_t hi = end < d + blen ? end : d + blen;
			int ret = fill(arg, buf + (lo - off), raw0 + (lo - d), (size_t)(hi - lo));
			if (ret)
				return ret;
		}
	}
	return 0;
}

#endif
