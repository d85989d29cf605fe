/* Private to formats/hdf5*.c: the sparse driver that keeps what libhdf5
 * writes (hdf5_sink.c), the shapes and templates built through the library
 * (hdf5_template.c), and the cache and serving (hdf5.c). */
#ifndef DLIOFS_HDF5_TMPL_I_H
#define DLIOFS_HDF5_TMPL_I_H

#include <hdf5.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "deflate_stored.h"
#include "hdf5_i.h"

#define H5_RANK_MAX (DL_MAX_DIMS + 1)
/* Largest raw size we hand the library (its addresses stop at 2^63). */
#define H5_DATA_LIMIT (1ULL << 62)
/* HDF5 chunks are at most 4 GiB - 1 bytes. */
#define H5_CHUNK_LIMIT 0xffffffffULL

/* A gzip chunk is a zlib stream of stored deflate blocks
 * (deflate_stored.h): a 2-byte header, the blocks, a 4-byte Adler-32. */
#define GZ_HDR 2u
#define GZ_TAIL 4u

/* Bytes of a gzip chunk of n raw bytes in the file. */
static inline uint64_t dl_h5_gz_stored(uint64_t n)
{
	return GZ_HDR + dl_ds_size(n) + GZ_TAIL;
}

/* Piece size when regenerating a chunk for its Adler-32. */
#define GZ_PIECE (32u * 1024u)

/* ---- the sparse driver (hdf5_sink.c) ---- */

struct sink_ext {
	uint64_t at, len;
	uint8_t *b;
};

struct h5_sink {
	struct sink_ext *ext; /* sorted, disjoint, not adjacent */
	size_t n, cap;
	uint64_t eof; /* end of file when the library closed it */
	int err;
	/* Raw writes since the last reset: where H5Dwrite_chunk put a chunk. */
	uint64_t raw_at, raw_len, raw_writes;
};

void dl_h5_sink_reset(struct h5_sink *s);
/* Bytes [at, at + len) as written (zeros where nothing was). */
void dl_h5_sink_read(const struct h5_sink *s, uint64_t at, uint8_t *dst, size_t len);
/* Make fapl write into sink through our driver, registered into *drv (-1:
 * not yet) on first use. 0 or -EIO. */
int dl_h5_sink_fapl(hid_t *drv, hid_t fapl, struct h5_sink *sink);

/* ---- shapes and templates (hdf5_template.c) ---- */


/* Everything the metadata depends on; zero-padded so it compares with memcmp. */
struct h5_shape {
	uint32_t layout, dtype, comp, level;
	uint32_t ndsets, rank, chunked, pad;
	uint64_t dims[H5_RANK_MAX]; /* each data dataset: (samples, *sample shape) */
	uint64_t chunk[H5_RANK_MAX];
};

enum seg_kind {
	SEG_ZERO,   /* free space inside the file */
	SEG_META,   /* template bytes: meta[arg ..] */
	SEG_DATA,   /* contiguous data dataset `dset` */
	SEG_CHUNKS, /* chunks arg, arg + 1, ... of dataset `dset`, back to back */
	SEG_LABELS, /* labels (zeros) or y (class ids) */
};

struct h5_seg {
	uint64_t at, len;
	uint64_t arg;
	uint32_t kind, dset;
};

struct h5_tmpl {
	struct h5_shape sh;
	uint64_t hash;
	uint64_t eof;
	uint64_t chunk_raw;    /* uncompressed bytes of one chunk */
	uint64_t chunk_stored; /* bytes of one chunk in the file */
	struct h5_seg *seg;    /* sorted, covering [0, eof) */
	size_t nseg;
	uint8_t *meta;
	size_t bytes; /* memory held, for the cache budget */
	unsigned refs;
	uint64_t used;
};

struct h5_state {
	pthread_mutex_t lib_lock;   /* every libhdf5 call; taken before cache_lock */
	pthread_mutex_t cache_lock; /* slot[], refs, tick, counters below */
	hid_t drv;		    /* our driver, registered on first build */
	unsigned n, max;
	struct h5_tmpl *slot[DL_H5_CACHE_MAX + 1]; /* + 1: insert, then evict */
	uint64_t tick, bytes;
	struct dl_h5_stats stats; /* builds/lib_calls/build_ms under lib_lock */
};

uint64_t dl_h5_shape_hash(const struct h5_shape *sh);
/* f's shape key and its chunk count per data dataset. */
int dl_h5_shape_of(const struct dl_file *f, struct h5_shape *sh, uint64_t *nchunks);
void dl_h5_tmpl_free(struct h5_tmpl *t);
/* Build the template of sh. Caller holds lib_lock. */
int dl_h5_tmpl_build(struct h5_state *st, const struct h5_shape *sh, uint64_t nchunks,
		     struct h5_tmpl **out);

#endif
