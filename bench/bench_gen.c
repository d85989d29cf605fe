/* Single-core rates: every generator path, every checksum path and each
 * format's read path, against memcpy measured in the same run. Prints
 * figures; asserts nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dliofs/clock.h"
#include "dliofs/config.h"
#include "dliofs/crc32.h"
#include "dliofs/crc32c.h"
#include "dliofs/format.h"
#include "dliofs/prng.h"

#define BUF (1u << 20)

static double now(void)
{
	return (double)dl_mono_ns() * 1e-9;
}

static double rate_fill(enum dl_prng_path path, void *buf, double secs)
{
	uint64_t bytes = 0, k = 0;
	double t0 = now(), t;
	do {
		for (int i = 0; i < 64; i++, k++)
			dl_prng_fill_path(path, k, k * BUF, buf, BUF);
		bytes += 64ull * BUF;
		t = now();
	} while (t - t0 < secs);
	return (double)bytes / (t - t0) / 1e9;
}

static double rate_memcpy(void *dst, const void *src, double secs)
{
	uint64_t bytes = 0;
	double t0 = now(), t;
	do {
		for (int i = 0; i < 64; i++) {
			memcpy(dst, src, BUF);
			__asm__ volatile("" : : "r"(dst) : "memory");
		}
		bytes += 64ull * BUF;
		t = now();
	} while (t - t0 < secs);
	return (double)bytes / (t - t0) / 1e9;
}

typedef uint32_t (*cksum_fn)(uint32_t, const void *, size_t);

static double rate_cksum(cksum_fn fn, const void *buf, double secs)
{
	uint64_t bytes = 0;
	uint32_t c = 0;
	double t0 = now(), t;
	do {
		for (int i = 0; i < 64; i++)
			c = fn(c, buf, BUF);
		bytes += 64ull * BUF;
		t = now();
	} while (t - t0 < secs);
	__asm__ volatile("" : : "r"(c));
	return (double)bytes / (t - t0) / 1e9;
}

/* Every file of the dataset once (a new file each time: cold, its derived
 * values not yet cached), 1 MiB reads in order; files_max bounds the count. */
static double rate_format(struct dl_fmt_ctx *ctx, const struct dl_dataset *ds, void *buf,
			  double secs)
{
	struct dl_file f;
	uint64_t bytes = 0, idx = 0;
	double t0 = now(), t;

	do {
		if (dl_file_init(ctx, ds, 0, idx++ % ds->files[0], 0, &f))
			return -1;
		for (uint64_t off = 0; off < f.size; off += BUF) {
			size_t len = f.size - off < BUF ? (size_t)(f.size - off) : BUF;
			if (dl_file_read(ctx, &f, buf, off, len))
				return -1;
			bytes += len;
		}
		t = now();
	} while (t - t0 < secs);
	return (double)bytes / (t - t0) / 1e9;
}

/* One dataset per case; files: enough that a run never sees one twice. The
 * cache holds no more than a few files' derived values, as a daemon's would
 * after a long run. */
static const char CASES[] =
    "seed: 1\n"
    "datasets:\n"
    "  - {name: raw, format: raw, files: 1M, samples_per_file: 64, sample_size: 1MiB}\n"
    "  - {name: npy, format: npy, files: 1M, sample_size: 146600628}\n"
    "  - {name: npy_f32, format: npy, files: 1M, samples_per_file: 4, shape: [1024, 1024, 4], "
    "dtype: float32}\n"
    "  - {name: npz, format: npz, files: 1M, sample_size: 146600628}\n"
    "  - {name: npz_zip, format: npz, files: 1M, sample_size: 146600628, compression: zip}\n"
    "  - {name: tfrecord, format: tfrecord, files: 1M, samples_per_file: 1251, "
    "sample_size: 114660}\n"
    "  - {name: tfrecord_gz, format: tfrecord, files: 1M, samples_per_file: 1251, "
    "sample_size: 114660, compression: gzip}\n"
    "  - {name: hdf5, format: hdf5, files: 1M, samples_per_file: 64, shape: [512, 512], "
    "dtype: float32}\n"
    "  - {name: hdf5_gz, format: hdf5, files: 1M, samples_per_file: 64, shape: [512, 512], "
    "compression: gzip, hdf5: {chunks: [8, 512, 512]}}\n"
    "  - {name: dlrm, format: dlrm, files: 1M, samples_per_file: 400000}\n"
    "  - {name: jpeg, format: jpeg, files: 1M, width: 4096, height: 4096, color: RGB, "
    "sample_size: 32MB}\n"
    "  - {name: png, format: png, files: 1M, width: 4096, height: 4096, color: RGB}\n";

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	void *a = aligned_alloc(4096, BUF), *b = aligned_alloc(4096, BUF);
	struct dl_fmt_ctx *ctx;
	double g, m;

	memset(a, 1, BUF);
	memset(b, 2, BUF);
	if (dl_fmt_ctx_new(0, 0, &ctx))
		return 1;
	m = rate_memcpy(b, a, secs);
	printf("generator path: %s\n", dl_prng_isa());
	printf("%-34s %8.2f GB/s\n", "memcpy 1 MiB (baseline)", m);
	for (int p = 0; p < DL_PRNG__PATHS; p++) {
		char name[64];
		if (!dl_prng_path_available((enum dl_prng_path)p))
			continue;
		g = rate_fill((enum dl_prng_path)p, a, secs);
		snprintf(name, sizeof(name), "prng fill 1 MiB, path %s", dl_prng_path_name(p));
		printf("%-34s %8.2f GB/s  (%.2fx memcpy)\n", name, g, g / m);
	}
	struct {
		const char *name;
		cksum_fn fn;
		int ok;
	} ck[] = {
		{"CRC-32 (zip, gzip, PNG)", dl_crc32, 1},
		{"  CRC-32 libdeflate", dl_crc32_lib, 1},
		{"  CRC-32 VPCLMULQDQ fold", dl_crc32_fold, dl_crc32_fold_available()},
		{"CRC-32C (TFRecord)", dl_crc32c, 1},
		{"  CRC-32C crc32 instruction x3", dl_crc32c_hw, dl_crc32c_hw_available()},
		{"  CRC-32C VPCLMULQDQ fold", dl_crc32c_fold, dl_crc32c_fold_available()},
		{"  CRC-32C both at once (hybrid)", dl_crc32c_hybrid, dl_crc32c_hybrid_available()},
		{"Adler-32 (zlib streams)", dl_adler32, 1},
	};
	for (unsigned i = 0; i < sizeof(ck) / sizeof(ck[0]); i++) {
		if (!ck[i].ok)
			continue;
		double r = rate_cksum(ck[i].fn, a, secs);
		printf("%-34s %8.2f GB/s  (%.2fx memcpy)\n", ck[i].name, r, r / m);
	}
	struct dl_config *cfg;
	if (dl_config_load_buf("bench_gen cases", CASES, sizeof(CASES) - 1, stderr, &cfg))
		return 1;
	for (unsigned i = 0; i < cfg->ndatasets; i++) {
		const struct dl_dataset *ds = &cfg->datasets[i];
		struct dl_file f;
		char name[200];
		double r;

		if (dl_file_init(ctx, ds, 0, 0, 0, &f))
			return 1;
		snprintf(name, sizeof(name), "%s %.0f MB, cold", ds->name, (double)f.size / 1e6);
		r = rate_format(ctx, ds, a, secs);
		printf("%-34s %8.2f GB/s  (%.2fx memcpy)\n", name, r, r / m);
	}
	dl_config_free(cfg);
	printf("(npz, npz_zip: the member CRC pass runs on up to %ld threads, one per online CPU;\n"
	       " every other figure is one thread)\n",
	       sysconf(_SC_NPROCESSORS_ONLN) < 8 ? sysconf(_SC_NPROCESSORS_ONLN) : 8);
	dl_fmt_ctx_free(ctx);
	free(a);
	free(b);
	return 0;
}
