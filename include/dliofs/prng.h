/* Counter-based generator: every value is a pure function of (key, position),
 * so any byte of any file can be produced without producing the others. */
#ifndef DLIOFS_PRNG_H
#define DLIOFS_PRNG_H

#include <stddef.h>
#include <stdint.h>

#define DL_GOLDEN64 0x9e3779b97f4a7c15ULL

/* splitmix64 finalizer: a bijection with good avalanche. */
static inline uint64_t dl_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Derive a child key: order matters, so (a, b) and (b, a) give different keys. */
static inline uint64_t dl_key2(uint64_t a, uint64_t b)
{
	return dl_mix64(dl_mix64(a + DL_GOLDEN64) ^ (b + 0x632be59bd9b4e019ULL));
}

static inline uint64_t dl_key3(uint64_t a, uint64_t b, uint64_t c)
{
	return dl_key2(dl_key2(a, b), c);
}

/* Word i of stream `key`: the stream is splitmix64 seeded with key. */
static inline uint64_t dl_prng_word(uint64_t key, uint64_t i)
{
	return dl_mix64(key + (i + 1) * DL_GOLDEN64);
}

/* Uniform double in [0, 1) from word i of stream key. */
static inline double dl_prng_unit(uint64_t key, uint64_t i)
{
	return (double)(dl_prng_word(key, i) >> 11) * 0x1.0p-53;
}

/* Uniform integer in [0, n) (n > 0), multiply-shift: no modulo bias worth
 * speaking of for n far below 2^64. */
static inline uint64_t dl_prng_below(uint64_t key, uint64_t i, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)dl_prng_word(key, i) * n) >> 64);
}

/* Standard normal draw from words 2i and 2i+1 (Box-Muller). */
double dl_prng_normal(uint64_t key, uint64_t i);

/* Bulk bytes: stream `key` is an AES-round counter generator (util/prng.c
 * has the definition). Fill buf with bytes [off, off + len) of it. The best
 * code path for this CPU is picked per call; every path gives the same bytes.
 * This byte stream is not the word stream of dl_prng_word: the two serve
 * different needs (bulk payload vs. scalar draws) and are keyed apart. */
void dl_prng_fill(uint64_t key, uint64_t off, void *buf, size_t len);

/* The code paths of dl_prng_fill, for tests and benchmarks that compare them
 * on one machine (an AVX-512 CPU runs the VAES path too). */
enum dl_prng_path {
	DL_PRNG_GENERIC,	/* portable C (table AES rounds): any CPU */
	DL_PRNG_AESNI,		/* x86 AES-NI, 128-bit vectors (AMD Rome, Intel Haswell..) */
	DL_PRNG_VAES,		/* x86 VAES on 256-bit AVX2 vectors (AMD Milan+, Intel Ice Lake+) */
	DL_PRNG__PATHS
};

/* 1 when this CPU (and build) can run the path. */
int dl_prng_path_available(enum dl_prng_path path);

/* dl_prng_fill through one path; the path must be available. */
void dl_prng_fill_path(enum dl_prng_path path, uint64_t key, uint64_t off, void *buf, size_t len);

const char *dl_prng_path_name(enum dl_prng_path path);

/* The path dl_prng_fill takes on this CPU. */
enum dl_prng_path dl_prng_best_path(void);

/* Name of the path chosen at run time (for benchmark output). */
const char *dl_prng_isa(void);

#endif
