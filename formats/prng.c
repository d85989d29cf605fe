/* Stream fill for the counter-based generator. The loop is plain integer
 * arithmetic, so every clone (AVX-512, AVX2, baseline) yields identical bytes. */
#include <math.h>
#include <string.h>

#include "dliofs/prng.h"
#include "formats_i.h"

DL_CLONES
static void fill_words(uint64_t key, uint64_t w0, uint64_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = dl_mix64(key + (w0 + i + 1) * DL_GOLDEN64);
}

/* Little-endian byte view of a word, so bytes do not depend on host order. */
static inline void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

void dl_prng_fill(uint64_t key, uint64_t off, void *buf, size_t len)
{
	uint8_t *p = buf;
	uint8_t tmp[8];
	uint64_t w = off >> 3;
	unsigned skip = (unsigned)(off & 7);

	if (len == 0)
		return;
	if (skip) {
		size_t n = 8 - skip < len ? 8 - skip : len;
		put_le64(tmp, dl_prng_word(key, w));
		memcpy(p, tmp + skip, n);
		p += n;
		len -= n;
		w++;
	}
	size_t nw = len >> 3;
	if (nw) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		if (((uintptr_t)p & 7) == 0) {
			fill_words(key, w, (uint64_t *)(void *)p, nw);
		} else
#endif
		{
			/* Unaligned destination: generate in a bounce buffer. */
			uint64_t bounce[512];
			size_t done = 0;
			while (done < nw) {
				size_t k = nw - done < 512 ? nw - done : 512;
				fill_words(key, w + done, bounce, k);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
				memcpy(p + 8 * done, bounce, k * 8);
#else
				for (size_t i = 0; i < k; i++)
					put_le64(p + 8 * (done + i), bounce[i]);
#endif
				done += k;
			}
		}
		p += nw * 8;
		w += nw;
		len -= nw * 8;
	}
	if (len) {
		put_le64(tmp, dl_prng_word(key, w));
		memcpy(p, tmp, len);
	}
}

double dl_prng_normal(uint64_t key, uint64_t i)
{
	/* 1 - u keeps the log argument in (0, 1]. */
	double u1 = 1.0 - dl_prng_unit(key, 2 * i);
	double u2 = dl_prng_unit(key, 2 * i + 1);
	return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

const char *dl_prng_isa(void)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
	!defined(__SANITIZE_ADDRESS__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
		return "x86-64-v4 (AVX-512)";
	if (__builtin_cpu_supports("avx2"))
		return "avx2";
#endif
	return "generic";
}
