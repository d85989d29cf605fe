/* The config library: happy paths, defaults, the dump round trip, and every
 * class of error with its file:line:column and key path. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dliofs/config.h"
#include "dliofs/prng.h"
#include "dlrm_i.h"
#include "hdf5_i.h"
#include "image_i.h"

/* A dataset's format parameters, as the formats lay them out. */
#define IMGP(d) dl_img_params(d)
#define H5(d) dl_h5_params(d)

static unsigned passed, failed;

#define CHECK(cond, ...)                                                    \
	do {                                                                \
		if (cond) {                                                 \
			passed++;                                           \
		} else {                                                    \
			failed++;                                           \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                       \
			fputc('\n', stderr);                                \
		}                                                           \
	} while (0)

struct res {
	int ret;
	struct dl_config *cfg;
	char *err;
	size_t errlen;
};

static struct res load_n(const char *yaml, size_t len)
{
	struct res r = { 0 };
	FILE *f = open_memstream(&r.err, &r.errlen);

	if (!f) {
		perror("open_memstream");
		exit(2);
	}
	r.ret = dl_config_load_buf("t.yaml", yaml, len, f, &r.cfg);
	fclose(f);
	return r;
}

static struct res load(const char *yaml)
{
	return load_n(yaml, strlen(yaml));
}

static void res_free(struct res *r)
{
	dl_config_free(r->cfg);
	free(r->err);
	r->cfg = NULL;
	r->err = NULL;
}

static unsigned count_lines(const char *s)
{
	unsigned n = 0;

	for (; s && *s; s++)
		n += *s == '\n';
	return n;
}

/* Loads must fail with -EINVAL and the messages must contain every needle
 * (each a "t.yaml:L:C: key: text" fragment). */
static void expect_err_at(int line, const char *yaml, size_t len, const char *const *needles)
{
	struct res r = load_n(yaml, len);
	int all = 1;

	for (const char *const *n = needles; *n; n++) {
		if (!strstr(r.err, *n)) {
			all = 0;
			fprintf(stderr, "  missing: %s\n", *n);
		}
	}
	CHECK(r.ret == -EINVAL && !r.cfg && all,
	      "line %d: ret %d, cfg %p, messages:\n%s---\n%s", line, r.ret, (void *)r.cfg, r.err,
	      yaml);
	res_free(&r);
}

#define EXPECT_ERR(yaml, ...)                                                          \
	do {                                                                           \
		static const char *const needles_[] = { __VA_ARGS__, NULL };            \
		expect_err_at(__LINE__, yaml, strlen(yaml), needles_);                \
	} while (0)
/* Needles computed at run time (lists from the format registry). */
#define EXPECT_ERR_DYN(yaml, ...)                                                      \
	do {                                                                           \
		const char *needles_[] = { __VA_ARGS__, NULL };                         \
		expect_err_at(__LINE__, yaml, strlen(yaml), needles_);                \
	} while (0)
#define EXPECT_ERR_N(yaml, len, ...)                                                   \
	do {                                                                           \
		static const char *const needles_[] = { __VA_ARGS__, NULL };            \
		expect_err_at(__LINE__, yaml, len, needles_);                         \
	} while (0)

/* The registered formats as messages list them ("npy, npz, ..."): their
 * config names, or (dlio) the DLIO names of those DLIO has. */
static const char *format_list(int dlio)
{
	static char buf[2][512];
	size_t o = 0;

	buf[dlio][0] = 0;
	for (unsigned f = 0; f < DL_FMT__COUNT; f++) {
		const struct dl_format_ops *ops = dl_format_ops((enum dl_format)f);
		const char *n = dlio ? ops->dlio_name : ops->name;

		if (n && o < sizeof(buf[dlio]))
			o += (size_t)snprintf(buf[dlio] + o, sizeof(buf[dlio]) - o, "%s%s",
					      o ? ", " : "", n);
	}
	return buf[dlio];
}

/* A valid head: the dataset mapping starts at 2:5, the next key at line 4.
 * Values of `files:` start at column 12, of `sample_size:` at column 18. */
#define HEAD "datasets:\n  - name: a\n    format: raw\n"

static uint64_t fnv1a64(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static const char full_yaml[] =
	"# a full config\n"
	"seed: 42\n"
	"io: direct\n"
	"datasets:\n"
	"  - name: unet3d\n"
	"    format: npz\n"
	"    files: 168\n"
	"    eval_files: 2\n"
	"    samples_per_file: 1\n"
	"    sample_size: {mean: 140MB, stdev: 68MB, min: 1MB, max: 300MB}\n"
	"    subfolders: 4\n"
	"    eval_subfolders: 2\n"
	"    file_prefix: img_x\n"
	"  - name: bert\n"
	"    format: tfrecord\n"
	"    files: 2k\n"
	"    samples_per_file: 313\n"
	"    sample_size: 2.5KiB\n"
	"    dtype: int64\n"
	"  - name: criteo\n"
	"    format: dlrm\n"
	"    files: 1\n"
	"    samples_per_file: 1Mi\n"
	"    cardinality: 10M\n"
	"  - name: imgs\n"
	"    format: npy\n"
	"    shape: [224, 224, 3]\n"
	"    dtype: float32\n"
	"  - {name: ib.v1, format: indexed_binary, files: 0, eval_files: 3, "
	"sample_size: {mean: 1000, stdev: 10}}\n"
	"  - name: r\n"
	"    format: raw\n"
	"    sample_size: {mean: 4KiB, stdev: 0, min: 1, max: 1MB}\n";

static void test_full(void)
{
	struct res r = load(full_yaml);
	const struct dl_dataset *d;

	CHECK(r.ret == 0 && r.cfg && r.errlen == 0, "full config: %d %s", r.ret, r.err);
	if (!r.cfg) {
		res_free(&r);
		return;
	}
	CHECK(!strcmp(r.cfg->path, "t.yaml"), "path %s", r.cfg->path);
	CHECK(r.cfg->seed == 42 && r.cfg->io_mode == DL_IO_DIRECT && r.cfg->ndatasets == 6,
	      "top: seed %" PRIu64 " io %d n %u", r.cfg->seed, r.cfg->io_mode, r.cfg->ndatasets);

	d = &r.cfg->datasets[0];
	CHECK(!strcmp(d->name, "unet3d") && d->format == DL_FMT_NPZ && d->index == 0 &&
		      d->files[DL_SPLIT_TRAIN] == 168 && d->files[DL_SPLIT_VALID] == 2 &&
		      d->samples_per_file == 1 && d->subfolders[0] == 4 && d->subfolders[1] == 2 &&
		      !strcmp(d->file_prefix, "img_x") && d->dtype == DL_DT_UINT8 && d->ndims == 0,
	      "unet3d fields");
	CHECK(d->sample_size.mean == 140000000ULL && d->sample_size.stdev == 68000000ULL &&
		      d->sample_size.min == 1000000ULL && d->sample_size.max == 300000000ULL,
	      "unet3d dist %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64, d->sample_size.mean,
	      d->sample_size.stdev, d->sample_size.min, d->sample_size.max);
	CHECK(d->loc.line == 5 && d->loc.col == 5, "unet3d loc %u:%u", d->loc.line, d->loc.col);
	CHECK(d->id == dl_mix64(fnv1a64("unet3d")), "unet3d id");

	d = &r.cfg->datasets[1];
	CHECK(!strcmp(d->name, "bert") && d->format == DL_FMT_TFRECORD && d->index == 1 &&
		      d->files[0] == 2000 && d->files[1] == 0 && d->samples_per_file == 313 &&
		      d->dtype == DL_DT_INT64 && !strcmp(d->file_prefix, "img") &&
		      d->subfolders[0] == 0 && d->subfolders[1] == 0,
	      "bert fields");
	CHECK(d->sample_size.mean == 2560 && d->sample_size.stdev == 0 &&
		      d->sample_size.min == 2560 && d->sample_size.max == 2560,
	      "fixed size: min = max = mean");
	CHECK(d->id == dl_mix64(fnv1a64("bert")) && d->id != r.cfg->datasets[0].id, "bert id");
	CHECK(d->loc.line == 14 && d->loc.col == 5, "bert loc %u:%u", d->loc.line, d->loc.col);

	d = &r.cfg->datasets[2];
	CHECK(d->format == DL_FMT_DLRM && d->samples_per_file == 1048576 &&
		      dl_dlrm_params(d)->cardinality == 10000000ULL && d->sample_size.mean == 160 &&
		      d->sample_size.stdev == 0 && d->sample_size.min == 160 &&
		      d->sample_size.max == 160,
	      "dlrm: fixed 160-byte records without sample_size");

	d = &r.cfg->datasets[3];
	CHECK(d->format == DL_FMT_NPY && d->ndims == 3 && d->dims[0] == 224 && d->dims[1] == 224 &&
		      d->dims[2] == 3 && d->dtype == DL_DT_FLOAT32 &&
		      d->sample_size.mean == 224 * 224 * 3 * 4 && d->sample_size.max == 224 * 224 * 3 * 4,
	      "shape sets the sample size");

	d = &r.cfg->datasets[4];
	CHECK(!strcmp(d->name, "ib.v1") && d->format == DL_FMT_INDEXED_BINARY &&
		      d->files[0] == 0 && d->files[1] == 3,
	      "flow-style dataset, eval files only");
	CHECK(d->sample_size.mean == 1000 && d->sample_size.stdev == 10 && d->sample_size.min == 1 &&
		      d->sample_size.max == 1060,
	      "dist defaults: min 1, max mean + 6 stdev: %" PRIu64 " %" PRIu64, d->sample_size.min,
	      d->sample_size.max);
	CHECK(d->loc.line == 29 && d->loc.col == 5, "flow loc %u:%u", d->loc.line, d->loc.col);

	d = &r.cfg->datasets[5];
	CHECK(d->sample_size.mean == 4096 && d->sample_size.stdev == 0 &&
		      d->sample_size.min == 4096 && d->sample_size.max == 4096,
	      "stdev 0 mapping is fixed");
	res_free(&r);
}

static void test_defaults(void)
{
	struct res r = load(HEAD "    sample_size: 1\n");
	const struct dl_dataset *d;

	CHECK(r.ret == 0 && r.cfg, "minimal: %d %s", r.ret, r.err);
	if (!r.cfg)
		return;
	d = &r.cfg->datasets[0];
	CHECK(r.cfg->seed == 1 && r.cfg->io_mode == DL_IO_CACHE, "top defaults");
	CHECK(d->files[0] == 1 && d->files[1] == 0 && d->samples_per_file == 1 &&
		      d->dtype == DL_DT_UINT8 && d->subfolders[0] == 0 && d->subfolders[1] == 0 &&
		      !strcmp(d->file_prefix, "img") && d->ndims == 0 && d->format == DL_FMT_RAW && !strcmp(d->name, "a"),
	      "dataset defaults");
	CHECK(d->loc.line == 2 && d->loc.col == 5, "loc %u:%u", d->loc.line, d->loc.col);
	res_free(&r);

	r = load("{\"seed\": \"0xff\", \"datasets\": [{\"name\": \"a\", \"format\": \"raw\", "
		 "\"sample_size\": \"4KiB\", \"files\": \"17592186044416\"}]}");
	CHECK(r.ret == 0 && r.cfg && r.cfg->seed == 255 &&
		      r.cfg->datasets[0].files[0] == (1ULL << 44),
	      "JSON-style config, hex seed, 2^44 files: %d %s", r.ret, r.err);
	res_free(&r);

	r = load("seed: 18446744073709551615\n" HEAD "    sample_size: 1\n"
		 "    name2: x\n");
	CHECK(r.ret == -EINVAL, "sanity: unknown key fails");
	res_free(&r);
	r = load("seed: 18446744073709551615\n" HEAD "    sample_size: 1\n");
	CHECK(r.ret == 0 && r.cfg && r.cfg->seed == UINT64_MAX, "max seed");
	res_free(&r);

	/* A name of exactly 127 characters is fine; 2^44 files of 1 byte too. */
	{
		char buf[512];

		snprintf(buf, sizeof(buf), "datasets:\n  - name: %0127d\n    format: raw\n"
			 "    sample_size: 1\n", 7);
		r = load(buf);
		CHECK(r.ret == 0 && r.cfg && strlen(r.cfg->datasets[0].name) == 127,
		      "127-char name: %s", r.err);
		res_free(&r);
	}
	r = load(HEAD "    sample_size: 1\n  - name: b\n    format: dlrm\n    sample_size: 160\n");
	CHECK(r.ret == 0 && r.cfg && r.cfg->datasets[1].sample_size.max == 160,
	      "dlrm with sample_size 160: %s", r.err);
	res_free(&r);
}

static int same_model(const struct dl_config *a, const struct dl_config *b)
{
	const size_t at = offsetof(struct dl_dataset, loc), after = at + sizeof(struct dl_loc);

	if (a->seed != b->seed || a->io_mode != b->io_mode || a->ndatasets != b->ndatasets)
		return 0;
	for (unsigned i = 0; i < a->ndatasets; i++) {
		const char *x = (const char *)&a->datasets[i], *y = (const char *)&b->datasets[i];

		/* Where it was written differs; what it says must not. Both arrays
		 * come zeroed from calloc, so padding compares equal too. */
		if (memcmp(x, y, at) != 0 ||
		    memcmp(x + after, y + after, sizeof(struct dl_dataset) - after) != 0) {
			fprintf(stderr, "dataset %u differs after the round trip\n", i);
			return 0;
		}
	}
	return 1;
}

static void roundtrip(int line, const char *yaml)
{
	struct res a = load(yaml), b = { 0 };
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	CHECK(a.ret == 0, "line %d: first load: %s", line, a.err);
	if (a.ret)
		goto out;
	f = open_memstream(&text, &len);
	CHECK(dl_config_dump(a.cfg, f) == 0, "line %d: dump", line);
	fclose(f);
	b = load(text);
	CHECK(b.ret == 0 && same_model(a.cfg, b.cfg),
	      "line %d: dump does not load back to the same model: %s\n%s", line, b.err, text);
	CHECK(strstr(text, "seed: ") &&
		      (strstr(text, "file_prefix: ") || strstr(text, "classes: ")) &&
		      strstr(text, "samples_per_file: "),
	      "line %d: defaults written out", line);
out:
	free(text);
	res_free(&a);
	res_free(&b);
}

static void test_dump(void)
{
	char *text = NULL;
	size_t len = 0;
	struct res r = load(HEAD "    sample_size: 140MB\n");
	FILE *f = open_memstream(&text, &len);

	dl_config_dump(r.cfg, f);
	fclose(f);
	CHECK(strstr(text, "sample_size: 140MB\n") && strstr(text, "eval_files: 0\n") &&
		      strstr(text, "dtype: uint8\n") && strstr(text, "io: cache\n") &&
		      strstr(text, "seed: 1\n"),
	      "dump text:\n%s", text);
	free(text);
	res_free(&r);

	roundtrip(__LINE__, full_yaml);
	/* Every registered format's example, named nowhere here. */
	for (unsigned f = 0; f < DL_FMT__COUNT; f++) {
		const struct dl_format_ops *ops = dl_format_ops((enum dl_format)f);
		char yaml[512];

		snprintf(yaml, sizeof(yaml), "datasets:\n  - {name: x, format: %s, files: 4, %s}\n",
			 ops->name, ops->example);
		roundtrip(__LINE__, yaml);
	}
	roundtrip(__LINE__, HEAD "    sample_size: 1\n");
	roundtrip(__LINE__, "seed: 0\n" HEAD "    sample_size: 1EiB\n");
	roundtrip(__LINE__, HEAD "    sample_size: {mean: 1234567, stdev: 3}\n");
	roundtrip(__LINE__, HEAD "    sample_size: {mean: 1.5KiB, stdev: 1, min: 1000, max: 2KB}\n"
			    "    dtype: float16\n    subfolders: 4294967295\n");
	roundtrip(__LINE__, "datasets:\n  - {name: d, format: dlrm, sample_size: 160, "
			    "cardinality: 7}\n");
	roundtrip(__LINE__, "datasets:\n  - name: \"null\"\n    format: npy\n"
			    "    shape: [1, 2, 3, 4, 5, 6, 7, 8]\n    file_prefix: \"123\"\n");
}

static void test_files(void)
{
	char path[] = "/tmp/dliofs-test-config-XXXXXX";
	int fd = mkstemp(path);
	struct dl_config *cfg = NULL;
	char *err = NULL;
	size_t errlen = 0;
	FILE *f;
	int ret;

	CHECK(fd >= 0, "mkstemp");
	if (fd < 0)
		return;
	CHECK(write(fd, full_yaml, sizeof(full_yaml) - 1) == (ssize_t)(sizeof(full_yaml) - 1),
	      "write");
	close(fd);
	ret = dl_config_load(path, stderr, &cfg);
	CHECK(ret == 0 && cfg && cfg->ndatasets == 6 && !strcmp(cfg->path, path),
	      "load from file: %d", ret);
	dl_config_free(cfg);
	cfg = NULL;

	/* Messages name the file. */
	f = fopen(path, "w");
	fputs("datasets:\n  - name: a\n    format: bogus\n", f);
	fclose(f);
	f = open_memstream(&err, &errlen);
	ret = dl_config_load(path, f, &cfg);
	fclose(f);
	{
		char want[128];

		snprintf(want, sizeof(want), "%s:3:13: datasets[0].format: expected one of", path);
		CHECK(ret == -EINVAL && !cfg && strstr(err, want), "file messages: %s", err);
	}
	free(err);
	unlink(path);

	err = NULL;
	f = open_memstream(&err, &errlen);
	ret = dl_config_load(path, f, &cfg);
	fclose(f);
	{
		char want[128];

		snprintf(want, sizeof(want), "%s: cannot open: No such file or directory", path);
		CHECK(ret == -ENOENT && !cfg && strstr(err, want), "missing file: %d %s", ret, err);
	}
	free(err);

	err = NULL;
	f = open_memstream(&err, &errlen);
	ret = dl_config_load("/", f, &cfg);
	fclose(f);
	CHECK(ret == -EIO && !cfg && strstr(err, "/: cannot open: Is a directory"),
	      "directory: %d %s", ret, err);
	free(err);

	/* No error stream: still an error, no crash. */
	CHECK(dl_config_load_buf("t.yaml", "x: [", 4, NULL, &cfg) == -EINVAL && !cfg,
	      "NULL err stream");
	CHECK(dl_config_load_buf("t.yaml", NULL, 0, NULL, &cfg) == -EINVAL && !cfg, "NULL buffer");
}

static void test_names(void)
{
	enum dl_format fmt;
	enum dl_dtype dt;
	int all = 1;

	for (unsigned i = 0; i < DL_FMT__COUNT; i++)
		all &= dl_format_from_name(dl_format_name((enum dl_format)i), &fmt) == 0 &&
		       fmt == (enum dl_format)i;
	CHECK(all, "format names round trip (every format in the header has a name)");
	all = 1;
	for (unsigned i = 0; i < DL_DT__COUNT; i++)
		all &= dl_dtype_from_name(dl_dtype_name((enum dl_dtype)i), &dt) == 0 &&
		       dt == (enum dl_dtype)i;
	CHECK(all, "dtype names round trip");
	CHECK(!strcmp(dl_format_name(DL_FMT_INDEXED_BINARY), "indexed_binary") &&
		      !strcmp(dl_format_name(DL_FMT_TFRECORD), "tfrecord"),
	      "format names");
	CHECK(!strcmp(dl_dtype_descr(DL_DT_UINT8), "|u1") &&
		      !strcmp(dl_dtype_descr(DL_DT_INT8), "|i1") &&
		      !strcmp(dl_dtype_descr(DL_DT_FLOAT32), "<f4") &&
		      !strcmp(dl_dtype_descr(DL_DT_FLOAT16), "<f2") &&
		      !strcmp(dl_dtype_descr(DL_DT_INT64), "<i8") &&
		      !strcmp(dl_dtype_descr(DL_DT_UINT16), "<u2"),
	      "numpy descr");
	CHECK(dl_dtype_size(DL_DT_UINT8) == 1 && dl_dtype_size(DL_DT_FLOAT16) == 2 &&
		      dl_dtype_size(DL_DT_INT32) == 4 && dl_dtype_size(DL_DT_FLOAT64) == 8 &&
		      dl_dtype_size(DL_DT__COUNT) == 0,
	      "dtype sizes");
	CHECK(dl_format_from_name("NPZ", &fmt) == -EINVAL && dl_dtype_from_name("f4", &dt) == -EINVAL &&
		      dl_format_name(DL_FMT__COUNT) == NULL && dl_dtype_name(DL_DT__COUNT) == NULL,
	      "unknown names");
}

static void test_value_errors(void)
{
	EXPECT_ERR(HEAD "    sample_size: abc\n",
		   "t.yaml:4:18: datasets[0].sample_size: expected a size like 140MB or 4KiB, "
		   "got \"abc\"");
	EXPECT_ERR(HEAD "    sample_size: -5MB\n",
		   "t.yaml:4:18: datasets[0].sample_size: expected a size", "negative");
	EXPECT_ERR(HEAD "    sample_size: 0\n",
		   "t.yaml:4:18: datasets[0].sample_size: must be at least 1 byte");
	EXPECT_ERR(HEAD "    sample_size: 1024EiB\n",
		   "t.yaml:4:18: datasets[0].sample_size: \"1024EiB\" is too large");
	EXPECT_ERR(HEAD "    sample_size: 1180591620717411303424\n",
		   "t.yaml:4:18: datasets[0].sample_size: \"1180591620717411303424\" is too large");
	EXPECT_ERR(HEAD "    sample_size: 1.0000001KB\n",
		   "t.yaml:4:18: datasets[0].sample_size: expected a size", "whole number of bytes");
	EXPECT_ERR(HEAD "    sample_size: 5M\n", "t.yaml:4:18: datasets[0].sample_size:",
		   "ambiguous");
	EXPECT_ERR(HEAD "    sample_size: [1, 2]\n",
		   "t.yaml:4:18: datasets[0].sample_size: expected a size like 140MB or 4KiB, got "
		   "a list");
	EXPECT_ERR(HEAD "    sample_size: 1\n    files: [1, 2]\n",
		   "t.yaml:5:12: datasets[0].files: expected a count like 168, 2k or 1M, got a list");
	EXPECT_ERR(HEAD "    sample_size: 1\n    files: {a: 1}\n",
		   "t.yaml:5:12: datasets[0].files: expected a count", "got a mapping");
	EXPECT_ERR(HEAD "    sample_size: 1\n    files:\n",
		   "datasets[0].files: expected a count", "got nothing");
	EXPECT_ERR(HEAD "    sample_size: 1\n    files: -3\n",
		   "t.yaml:5:12: datasets[0].files:", "negative");
	EXPECT_ERR(HEAD "    sample_size: 1\n    files: 2.5\n", "t.yaml:5:12: datasets[0].files:",
		   "whole number");
	EXPECT_ERR(HEAD "    sample_size: 1\n    samples_per_file: lots\n",
		   "t.yaml:5:23: datasets[0].samples_per_file: expected a count", "\"lots\"");
	EXPECT_ERR(HEAD "    sample_size: 1\n    subfolders: 4294967296\n",
		   "t.yaml:5:17: datasets[0].subfolders: 4294967296 is too large");
	EXPECT_ERR(HEAD "    sample_size: 1\n    dtype: flaot32\n",
		   "t.yaml:5:12: datasets[0].dtype: expected one of uint8", "did you mean \"float32\"");
	{
		char want[700];

		snprintf(want, sizeof(want),
			 "t.yaml:3:13: datasets[0].format: expected one of %s, got \"NPZ\" (did you "
			 "mean \"npz\"?)", format_list(0));
		EXPECT_ERR_DYN("datasets:\n  - name: a\n    format: NPZ\n    sample_size: 1\n", want);
	}
	EXPECT_ERR("seed: -1\n" HEAD "    sample_size: 1\n",
		   "t.yaml:1:7: seed: expected an unsigned 64-bit integer", "negative");
	EXPECT_ERR("seed: 18446744073709551616\n" HEAD "    sample_size: 1\n",
		   "t.yaml:1:7: seed: \"18446744073709551616\" is too large");
	EXPECT_ERR("seed: [1]\n" HEAD "    sample_size: 1\n", "t.yaml:1:7: seed: expected", "a list");
	EXPECT_ERR("io: fast\n" HEAD "    sample_size: 1\n",
		   "t.yaml:1:5: io: expected one of cache, direct, got \"fast\"");
	EXPECT_ERR(HEAD "    sample_size: {mean: 1KB, stdev: x}\n",
		   "t.yaml:4:37: datasets[0].sample_size.stdev: expected a size");
	EXPECT_ERR(HEAD "    sample_size: {stdev: 1}\n",
		   "t.yaml:4:18: datasets[0].sample_size.mean: missing");
	EXPECT_ERR_N(HEAD "    sample_size: \"1\\0\"\n", sizeof(HEAD "    sample_size: \"1\\0\"\n") - 1,
		     "t.yaml:4:18: datasets[0].sample_size:", "NUL");
}

static void test_key_errors(void)
{
	EXPECT_ERR(HEAD "    sampel_size: 1\n",
		   "t.yaml:4:5: datasets[0].sampel_size: unknown key (did you mean \"sample_size\"?)",
		   "t.yaml:2:5: datasets[0].sample_size: missing");
	EXPECT_ERR(HEAD "    sample_size: 1\n    num_files_train: 4\n",
		   "t.yaml:5:5: datasets[0].num_files_train: unknown key", "files");
	EXPECT_ERR(HEAD "    sample_size: 1\n    colour: red\n",
		   "t.yaml:5:5: datasets[0].colour: unknown key (did you mean \"color\"?)");
	EXPECT_ERR(HEAD "    sample_size: 1\n    flavour: red\n",
		   "t.yaml:5:5: datasets[0].flavour: unknown key; expected one of: name, format");
	EXPECT_ERR("dataset:\n  - name: a\n",
		   "t.yaml:1:1: dataset: unknown key (did you mean \"datasets\"?)",
		   "t.yaml:1:1: datasets: missing");
	EXPECT_ERR(HEAD "    files: 1\n    sample_size: 1\n    files: 2\n",
		   "t.yaml:6:5: datasets[0].files: duplicate key (first given at line 4, column 5)");
	EXPECT_ERR("seed: 1\nseed: 2\n" HEAD "    sample_size: 1\n",
		   "t.yaml:2:1: seed: duplicate key (first given at line 1, column 1)");
	EXPECT_ERR(HEAD "    sample_size: 1\n    ? [a, b]\n    : 1\n",
		   "t.yaml:5:7: datasets[0]: expected a key name, got a list");
	EXPECT_ERR(HEAD "    sample_size: {mean: 1, avg: 2}\n",
		   "datasets[0].sample_size.avg: unknown key");
	EXPECT_ERR("pacer: {read: 1}\n" HEAD "    sample_size: 1\n",
		   "t.yaml:1:9: read: unknown pacer key \"read\"");
	EXPECT_ERR("pacer: {read: {bandwidth: fast}}\n" HEAD "    sample_size: 1\n",
		   "t.yaml:1:16: read.bandwidth: expected a rate");
	EXPECT_ERR("cache: 1GB\n" HEAD "    sample_size: 1\n",
		   "t.yaml:1:8: cache: cache.policy: expected kernel, none, lru or minio");
	EXPECT_ERR(HEAD "    sample_size: 1\nbacking: /x\n",
		   "t.yaml:5:10: backing: expected a list of directories");
	EXPECT_ERR(HEAD "    sample_size: 1\nbacking:\n  - {at: a, sink: true}\n",
		   "t.yaml:6:10: backing[0].at: \"a\" is already the name of datasets[0]");
	EXPECT_ERR(HEAD "    sample_size: 1\ntrace: on\n",
		   "t.yaml:5:8: trace: expected a mapping {enabled, file, ops}");
	EXPECT_ERR(HEAD "    sample_size: 1\ntrace: {ops: [read, fly], file: /tmp/x}\n",
		   "t.yaml:5:21: trace.ops: expected an op name");
}

static void test_model_errors(void)
{
	EXPECT_ERR(HEAD "    sample_size: 1\n    files: 0\n",
		   "t.yaml:5:12: datasets[0].files: a dataset needs at least one file "
		   "(files + eval_files >= 1)");
	EXPECT_ERR(HEAD "    sample_size: 1\n    files: 17592186044417\n",
		   "t.yaml:5:12: datasets[0].files: 17592186044417 files is too many");
	EXPECT_ERR(HEAD "    sample_size: 1\n    eval_files: 18T\n",
		   "t.yaml:5:17: datasets[0].eval_files:", "too many");
	EXPECT_ERR(HEAD "    sample_size: 1\n    samples_per_file: 0\n",
		   "t.yaml:5:23: datasets[0].samples_per_file: must be at least 1");
	EXPECT_ERR(HEAD "    sample_size: 1TiB\n    samples_per_file: 1G\n",
		   "t.yaml:4:18: datasets[0].sample_size: a file would be too large", "2^62");
	EXPECT_ERR(HEAD "    sample_size: 4EiB\n",
		   "t.yaml:4:18: datasets[0].sample_size: a file would be too large");
	EXPECT_ERR(HEAD "    sample_size: {mean: 10EiB, stdev: 1EiB}\n",
		   "t.yaml:4:18: datasets[0].sample_size.max:", "give a max");
	EXPECT_ERR(HEAD "    sample_size: {mean: 10MB, stdev: 1MB, min: 20MB, max: 5MB}\n",
		   "t.yaml:4:48: datasets[0].sample_size: min (20000000 bytes) is greater than max "
		   "(5000000 bytes)");
	EXPECT_ERR(HEAD "    sample_size: {mean: 10MB, stdev: 1MB, min: 0}\n",
		   "datasets[0].sample_size.min: must be at least 1 byte");
	EXPECT_ERR(HEAD "    sample_size: {mean: 10MB, stdev: 1MB, max: 5MB}\n",
		   "t.yaml:4:25: datasets[0].sample_size.mean:", "outside [min, max]");
	EXPECT_ERR(HEAD "    shape: []\n", "t.yaml:4:12: datasets[0].shape: expected 1 to 8 dimensions, "
				      "got 0");
	EXPECT_ERR(HEAD "    shape: [1, 2, 3, 4, 5, 6, 7, 8, 9]\n",
		   "t.yaml:4:12: datasets[0].shape: expected 1 to 8 dimensions, got 9");
	EXPECT_ERR(HEAD "    shape: [224, 0, 3]\n",
		   "t.yaml:4:18: datasets[0].shape[1]: a dimension must be at least 1");
	EXPECT_ERR(HEAD "    shape: 224x224\n", "t.yaml:4:12: datasets[0].shape: expected a list");
	EXPECT_ERR(HEAD "    shape: [4294967296, 4294967296]\n    dtype: uint64\n",
		   "t.yaml:4:12: datasets[0].shape: a sample of this shape", "over 2^64-1");
	EXPECT_ERR(HEAD "    shape: [1024, 1024, 1024, 1024]\n    samples_per_file: 1Gi\n",
		   "t.yaml:4:12: datasets[0].shape: a file would be too large");
	EXPECT_ERR(HEAD "    shape: [2, 2]\n    sample_size: 4\n",
		   "t.yaml:5:18: datasets[0].sample_size: cannot be given together with shape");
	EXPECT_ERR(HEAD "    files: 3\n",
		   "t.yaml:2:5: datasets[0].sample_size: missing: expected a size like 140MB");
	EXPECT_ERR("datasets:\n  - format: raw\n    sample_size: 1\n",
		   "t.yaml:2:5: datasets[0].name: missing");
	{
		char want[700];

		snprintf(want, sizeof(want), "t.yaml:2:5: datasets[0].format: missing: expected "
			 "one of %s\n", format_list(0));
		EXPECT_ERR_DYN("datasets:\n  - name: a\n    sample_size: 1\n", want);
	}
	EXPECT_ERR(HEAD "    sample_size: 1\n    cardinality: 5\n",
		   "t.yaml:5:18: datasets[0].cardinality: only used by format dlrm");
	EXPECT_ERR("datasets:\n  - name: a\n    format: dlrm\n    sample_size: 200\n",
		   "t.yaml:4:18: datasets[0].sample_size: format dlrm has fixed 160-byte records");
	EXPECT_ERR("datasets:\n  - name: a\n    format: dlrm\n    shape: [40]\n",
		   "t.yaml:4:12: datasets[0].shape: not used by format dlrm");
	EXPECT_ERR("datasets:\n  - name: a\n    format: dlrm\n    cardinality: 0\n",
		   "t.yaml:4:18: datasets[0].cardinality: must be at least 1");
}

static void test_name_errors(void)
{
	char buf[1024];

	EXPECT_ERR("datasets:\n  - name: a/b\n    format: raw\n    sample_size: 1\n",
		   "t.yaml:2:11: datasets[0].name: \"a/b\" must be a single path component");
	EXPECT_ERR("datasets:\n  - name: ..\n    format: raw\n    sample_size: 1\n",
		   "t.yaml:2:11: datasets[0].name: \"..\" is not a usable name");
	EXPECT_ERR("datasets:\n  - name: .\n    format: raw\n    sample_size: 1\n",
		   "t.yaml:2:11: datasets[0].name: \".\" is not a usable name");
	EXPECT_ERR("datasets:\n  - name: .dliofs\n    format: raw\n    sample_size: 1\n",
		   "t.yaml:2:11: datasets[0].name: \".dliofs\" must not start with '.'");
	EXPECT_ERR("datasets:\n  - name: a b\n    format: raw\n    sample_size: 1\n",
		   "t.yaml:2:11: datasets[0].name: \"a b\" has the character \" \"");
	EXPECT_ERR("datasets:\n  - name: \"\xc3\xa9t\xc3\xa9\"\n    format: raw\n    sample_size: 1\n",
		   "t.yaml:2:11: datasets[0].name: \"\\xc3\\xa9t\\xc3\\xa9\" has the character");
	EXPECT_ERR("datasets:\n  - name: \"\"\n    format: raw\n    sample_size: 1\n",
		   "t.yaml:2:11: datasets[0].name: must not be empty");
	EXPECT_ERR("datasets:\n  - name:\n    format: raw\n    sample_size: 1\n",
		   "datasets[0].name: expected a directory name like unet3d, got nothing");
	snprintf(buf, sizeof(buf), "datasets:\n  - name: %0128d\n    format: raw\n    sample_size: 1\n",
		 7);
	EXPECT_ERR(buf, "t.yaml:2:11: datasets[0].name:", "too long (128 characters, at most 127)");
	snprintf(buf, sizeof(buf), HEAD "    sample_size: 1\n    file_prefix: %064d\n", 1);
	EXPECT_ERR(buf, "t.yaml:5:18: datasets[0].file_prefix:", "too long (64 characters, at most 63)");
	EXPECT_ERR(HEAD "    sample_size: 1\n    file_prefix: \"a:b\"\n",
		   "t.yaml:5:18: datasets[0].file_prefix: \"a:b\" has the character \":\"");
	EXPECT_ERR(HEAD "    sample_size: 1\n"
			"  - name: b\n    format: raw\n    sample_size: 1\n"
			"  - name: a\n    format: npz\n    sample_size: 1\n",
		   "t.yaml:8:11: datasets[2].name: duplicate dataset name \"a\" (also "
		   "datasets[0].name at t.yaml:2:11)");
}

static void test_document_errors(void)
{
	char *big;
	size_t n;

	EXPECT_ERR("", "t.yaml:1:1: empty config");
	EXPECT_ERR("# only a comment\n\n", "t.yaml:1:1: empty config");
	EXPECT_ERR("---\n", "t.yaml:2:1:", "expected a mapping of settings");
	EXPECT_ERR("- a\n- b\n", "t.yaml:1:1: expected a mapping of settings (seed, io, datasets) "
				 "at the top level, got a list");
	EXPECT_ERR("hello\n", "t.yaml:1:1: expected a mapping of settings", "got a single value");
	EXPECT_ERR("seed: 1\n---\nseed: 2\n", "t.yaml:2:1: a second YAML document starts here");
	EXPECT_ERR("seed: 1\n", "t.yaml:1:1: datasets: missing");
	EXPECT_ERR("datasets: []\n", "t.yaml:1:11: datasets: the list is empty");
	/* Backing directories alone are a config (a real dataset directory
	 * shaped by the pacer, nothing synthetic); its dump loads back. */
	for (int empty = 0; empty < 2; empty++) {
		struct res r = load(empty ? "datasets: []\nbacking:\n  - {path: /tmp, at: real}\n"
					  : "backing:\n  - {path: /tmp, at: real}\n");
		char *text = NULL;
		size_t len = 0;
		FILE *f;

		CHECK(r.ret == 0 && r.cfg && r.cfg->ndatasets == 0 && r.cfg->nbacking == 1,
		      "backing-only config (empty list %d): ret %d\n%s", empty, r.ret, r.err);
		if (r.cfg && (f = open_memstream(&text, &len))) {
			struct res back;

			dl_config_dump(r.cfg, f);
			fclose(f);
			back = load(text);
			CHECK(back.ret == 0 && back.cfg && back.cfg->nbacking == 1,
			      "backing-only dump reloads: %d\n%s---\n%s", back.ret, back.err, text);
			res_free(&back);
			free(text);
		}
		res_free(&r);
	}
	EXPECT_ERR("datasets:\n", "t.yaml:1:10: datasets: expected a list of datasets",
		   "got nothing");
	EXPECT_ERR("datasets: {name: a}\n", "t.yaml:1:11: datasets: expected a list", "a mapping");
	EXPECT_ERR("datasets:\n  - 3\n", "t.yaml:2:5: datasets[0]: expected a mapping", "a single value");
	/* libyaml's own errors, also as file:line:column. */
	EXPECT_ERR(HEAD "\tsample_size: 1\n", "t.yaml:4:1: YAML syntax error:", "tab");
	EXPECT_ERR(HEAD "    sample_size: [1, 2\n", "t.yaml:5:1: YAML syntax error: did not find "
						  "expected ',' or ']'");
	EXPECT_ERR(HEAD "    sample_size: \"1\n", "t.yaml:5:1: YAML syntax error:", "end of stream");
	EXPECT_ERR(HEAD "   sample_size: 1\n", "t.yaml:4:4: YAML syntax error:");
	EXPECT_ERR(HEAD "    sample_size: 1\xff\n", "t.yaml:4:19: invalid input:", "UTF-8");
	EXPECT_ERR("datasets: *nope\n", "t.yaml:1:11: YAML syntax error:", "undefined alias");
	/* A cycle through an anchor must not hang the walk. */
	EXPECT_ERR("datasets: &a [*a]\n", "t.yaml:1:11: datasets[0]: expected a mapping");
	EXPECT_ERR("datasets:\n  - &d {name: a, format: raw, sample_size: 1, x: *d}\n",
		   "datasets[0].x: unknown key");

	/* Deep nesting stops early with a location. */
	n = 200000;
	big = malloc(2 * n + 16);
	if (!big)
		abort();
	memcpy(big, "datasets: ", 10);
	memset(big + 10, '[', n);
	memset(big + 10 + n, ']', n);
	big[10 + 2 * n] = '\0';
	EXPECT_ERR(big, "t.yaml:1:74: nested more than 64 levels deep");
	free(big);

	/* Too many datasets. */
	{
		const char item[] = "  - {name: d, format: raw, sample_size: 1}\n";
		size_t il = sizeof(item) - 1;

		big = malloc(16 + 4097 * il);
		if (!big)
			abort();
		strcpy(big, "datasets:\n");
		for (unsigned i = 0; i < 4097; i++)
			memcpy(big + 10 + i * il, item, il + 1);
		EXPECT_ERR(big, "t.yaml:2:3: datasets: 4097 datasets is too many (at most 4096)");
		free(big);
	}
}

/* Every problem is reported, not just the first. */
static void test_all_reported(void)
{
	struct res r = load("seed: x\n"
			    "datasets:\n"
			    "  - name: a/b\n"
			    "    format: npzz\n"
			    "    files: 0\n"
			    "    sample_size: abc\n"
			    "  - name: ok\n"
			    "    format: raw\n"
			    "    sample_size: 1\n"
			    "    bogus: 1\n"
			    "trace: 1\n");
	static const char *const want[] = {
		"t.yaml:1:7: seed:",
		"t.yaml:3:11: datasets[0].name:",
		"t.yaml:4:13: datasets[0].format:",
		"t.yaml:5:12: datasets[0].files:",
		"t.yaml:6:18: datasets[0].sample_size:",
		"t.yaml:10:5: datasets[1].bogus:",
		"t.yaml:11:8: trace:",
	};
	int all = 1;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(r.err, want[i]))
			all = 0;
	CHECK(r.ret == -EINVAL && all && count_lines(r.err) == 7,
	      "all problems, one line each:\n%s", r.err);
	res_free(&r);

	/* Past 1000 problems the rest are cut short. */
	{
		size_t cap = 64 + 3000 * 16, o;
		char *big = malloc(cap);

		if (!big)
			abort();
		o = (size_t)sprintf(big, "datasets:\n  - name: a\n    format: raw\n");
		for (unsigned i = 0; i < 3000; i++)
			o += (size_t)sprintf(big + o, "    k%u: 1\n", i);
		r = load(big);
		CHECK(r.ret == -EINVAL && count_lines(r.err) == 1001 &&
			      strstr(r.err, "t.yaml: too many problems; stopping after 1000"),
		      "error cap: %u lines", count_lines(r.err));
		res_free(&r);
		free(big);
	}
}

/* ---- Formats II: hdf5, jpeg, png, compression ---- */

static const char formats2_yaml[] =
	"datasets:\n"
	"  - name: cosmo\n"
	"    format: hdf5\n"
	"    files: 8\n"
	"    samples_per_file: 16\n"
	"    sample_size: 1MiB\n"
	"    hdf5: {layout: dlio, datasets: 2, chunks: [4, 64, 64]}\n"
	"    compression: gzip\n"
	"    compression_level: 6\n"
	"  - name: plainh5\n"
	"    format: hdf5\n"
	"    shape: [64, 64, 4]\n"
	"    dtype: float32\n"
	"    hdf5: {layout: plain}\n"
	"  - name: imagenet\n"
	"    format: jpeg\n"
	"    files: 1000\n"
	"    eval_files: 50\n"
	"    classes: 10\n"
	"    sample_size: {mean: 110kB, stdev: 30kB, min: 5kB, max: 1MB}\n"
	"  - name: pngs\n"
	"    format: png\n"
	"    width: {mean: 400, stdev: 100, min: 64, max: 1024}\n"
	"    height: 300\n"
	"    color: L\n"
	"  - name: sq\n"
	"    format: jpeg\n"
	"    width: 224\n"
	"    color: RGB420\n"
	"  - name: tfz\n"
	"    format: tfrecord\n"
	"    sample_size: 1KB\n"
	"    compression: gzip\n"
	"  - name: npzz\n"
	"    format: npz\n"
	"    sample_size: 1KB\n"
	"    compression: zip\n"
	"  - name: wide\n"
	"    format: png\n"
	"    width: {mean: 300, stdev: 50}\n"
	"    sample_size: 200kB\n";

static int dist_is(const struct dl_dist *d, uint64_t mean, uint64_t stdev, uint64_t min,
		   uint64_t max)
{
	return d->mean == mean && d->stdev == stdev && d->min == min && d->max == max;
}

static void test_formats2(void)
{
	struct res r = load(formats2_yaml);
	const struct dl_dataset *d;

	CHECK(r.ret == 0 && r.cfg && r.errlen == 0, "formats II config: %d %s", r.ret, r.err);
	if (!r.cfg) {
		res_free(&r);
		return;
	}
	CHECK(r.cfg->ndatasets == 8, "n %u", r.cfg->ndatasets);
	d = &r.cfg->datasets[0];
	CHECK(d->format == DL_FMT_HDF5 && H5(d)->layout == DL_H5_DLIO && H5(d)->dsets == 2 &&
		      H5(d)->chunk_ndims == 3 && H5(d)->chunk[0] == 4 && H5(d)->chunk[1] == 64 &&
		      H5(d)->chunk[2] == 64 && d->compression == DL_COMP_GZIP &&
		      d->compression_level == 6 && d->sample_size.mean == 1048576,
	      "hdf5 fields");
	d = &r.cfg->datasets[1];
	CHECK(d->format == DL_FMT_HDF5 && H5(d)->layout == DL_H5_PLAIN && H5(d)->dsets == 1 &&
		      H5(d)->chunk_ndims == 0 && d->compression == DL_COMP_NONE &&
		      d->compression_level == 4 && d->ndims == 3 && d->dtype == DL_DT_FLOAT32,
	      "hdf5 plain: defaults");
	d = &r.cfg->datasets[2];
	/* Derived square: raw RGB pixels ~4x the mean file size: isqrt(4 * 110000 / 3). */
	CHECK(d->format == DL_FMT_JPEG && d->classes == 10 && d->size_given == 1 &&
		      IMGP(d)->color == DL_COLOR_RGB && d->samples_per_file == 1 &&
		      dist_is(&d->sample_size, 110000, 30000, 5000, 1000000) &&
		      dist_is(&IMGP(d)->width, 382, 0, 382, 382) && dist_is(&IMGP(d)->height, 382, 0, 382, 382),
	      "jpeg with classes and a size: width %" PRIu64 " height %" PRIu64 " color %d",
	      IMGP(d)->width.mean, IMGP(d)->height.mean, IMGP(d)->color);
	d = &r.cfg->datasets[3];
	CHECK(d->format == DL_FMT_PNG && d->size_given == 0 && IMGP(d)->color == DL_COLOR_L &&
		      dist_is(&IMGP(d)->width, 400, 100, 64, 1024) && dist_is(&IMGP(d)->height, 300, 0, 300, 300),
	      "png: width distribution, fixed height");
	d = &r.cfg->datasets[4];
	CHECK(IMGP(d)->color == DL_COLOR_RGB420 && dist_is(&IMGP(d)->width, 224, 0, 224, 224) &&
		      dist_is(&IMGP(d)->height, 224, 0, 224, 224) && d->size_given == 0,
	      "jpeg: height defaults to width");
	CHECK(r.cfg->datasets[5].compression == DL_COMP_GZIP &&
		      r.cfg->datasets[6].compression == DL_COMP_ZIP &&
		      r.cfg->datasets[6].compression_level == 4,
	      "tfrecord gzip, npz zip");
	d = &r.cfg->datasets[7];
	CHECK(dist_is(&IMGP(d)->width, 300, 50, 1, 600) && dist_is(&IMGP(d)->height, 300, 50, 1, 600) &&
		      d->size_given && d->sample_size.mean == 200000,
	      "png: width distribution defaults (min 1, max mean + 6 stdev), height copies it");
	res_free(&r);

	roundtrip(__LINE__, formats2_yaml);
	roundtrip(__LINE__, "datasets:\n  - {name: j, format: jpeg, sample_size: 1MB, color: L}\n");
	roundtrip(__LINE__, "datasets:\n  - {name: p, format: png, width: {mean: 100, stdev: 3}, "
			    "height: {mean: 50, stdev: 1, min: 40, max: 60}, classes: 1}\n");
	roundtrip(__LINE__, "datasets:\n  - {name: h, format: hdf5, sample_size: {mean: 1MB, stdev: "
			    "1kB}, hdf5: {chunks: [1, 100000, 1]}}\n");

	/* Big enough for 65500-pixel sides: the derived square stays within JPEG. */
	r = load("datasets:\n  - {name: j, format: jpeg, sample_size: 100GB}\n");
	CHECK(r.ret == 0 && r.cfg && IMGP(&r.cfg->datasets[0])->width.mean == 65500,
	      "derived side capped at 65500: %s", r.err);
	res_free(&r);
	/* The smallest exact sizes are accepted. */
	r = load("datasets:\n  - {name: a, format: jpeg, sample_size: 160, color: L}\n"
		 "  - {name: b, format: jpeg, sample_size: 175, color: RGB420}\n"
		 "  - {name: c, format: png, sample_size: 96}\n"
		 "  - {name: d, format: png, sample_size: 94, color: L}\n");
	CHECK(r.ret == 0, "smallest image sizes: %s", r.err);
	res_free(&r);
}

#define IMG "datasets:\n  - name: a\n    format: jpeg\n"	/* values at column 9 + key */

static void test_formats2_errors(void)
{
	/* keys for other formats */
	EXPECT_ERR(HEAD "    sample_size: 1\n    hdf5: {layout: dlio}\n",
		   "t.yaml:5:11: datasets[0].hdf5: only used by format hdf5 (this dataset is raw)");
	EXPECT_ERR(HEAD "    sample_size: 1\n    width: 3\n",
		   "t.yaml:5:12: datasets[0].width: only used by formats jpeg and png");
	EXPECT_ERR(HEAD "    sample_size: 1\n    color: L\n",
		   "t.yaml:5:12: datasets[0].color: only used by formats jpeg and png");
	EXPECT_ERR(HEAD "    sample_size: 1\n    classes: 3\n",
		   "t.yaml:5:14: datasets[0].classes: only used by formats jpeg and png");
	/* compression */
	EXPECT_ERR("datasets:\n  - {name: a, format: npz, sample_size: 1, compression: gzip}\n",
		   "t.yaml:2:57: datasets[0].compression: gzip is for formats tfrecord",
		   "this dataset is npz, which takes zip");
	EXPECT_ERR("datasets:\n  - {name: a, format: tfrecord, sample_size: 1, compression: zip}\n",
		   "datasets[0].compression: zip is for format npz", "which takes gzip");
	EXPECT_ERR("datasets:\n  - {name: a, format: raw, sample_size: 1, compression: zip}\n",
		   "datasets[0].compression: zip is for format npz (np.savez_compressed); this "
		   "dataset is raw");
	EXPECT_ERR("datasets:\n  - {name: a, format: hdf5, sample_size: 1, compression: gzip}\n",
		   "datasets[0].compression: hdf5 compresses chunks: gzip needs hdf5.chunks");
	EXPECT_ERR(HEAD "    sample_size: 1\n    compression_level: 3\n",
		   "t.yaml:5:24: datasets[0].compression_level: only used with compression gzip or "
		   "zip");
	EXPECT_ERR(HEAD "    sample_size: 1\n    compression: none\n    compression_level: 3\n",
		   "datasets[0].compression_level: only used with compression");
	EXPECT_ERR("datasets:\n  - {name: a, format: npz, sample_size: 1, compression: zip, "
		   "compression_level: 10}\n",
		   "datasets[0].compression_level: expected 1 to 9, got 10");
	EXPECT_ERR("datasets:\n  - {name: a, format: npz, sample_size: 1, compression: zip, "
		   "compression_level: 0}\n",
		   "datasets[0].compression_level: expected 1 to 9, got 0");
	EXPECT_ERR(HEAD "    sample_size: 1\n    compression: lz4\n",
		   "t.yaml:5:18: datasets[0].compression: expected one of none, gzip, zip, got "
		   "\"lz4\"");
	/* hdf5 */
	EXPECT_ERR("datasets:\n  - name: a\n    format: hdf5\n    sample_size: 1\n    hdf5: dlio\n",
		   "t.yaml:5:11: datasets[0].hdf5: expected a mapping like {layout: dlio");
	EXPECT_ERR("datasets:\n  - name: a\n    format: hdf5\n    sample_size: 1\n"
		   "    hdf5: {layot: dlio}\n",
		   "t.yaml:5:12: datasets[0].hdf5.layot: unknown key (did you mean \"layout\"?)");
	EXPECT_ERR("datasets:\n  - name: a\n    format: hdf5\n    sample_size: 1\n"
		   "    hdf5: {layout: flat}\n",
		   "t.yaml:5:20: datasets[0].hdf5.layout: expected one of dlio, plain, got \"flat\"");
	EXPECT_ERR("datasets:\n  - name: a\n    format: hdf5\n    sample_size: 1\n"
		   "    hdf5: {datasets: 0}\n",
		   "t.yaml:5:22: datasets[0].hdf5.datasets: expected 1 to 4096 data datasets");
	EXPECT_ERR("datasets:\n  - name: a\n    format: hdf5\n    sample_size: 1\n"
		   "    hdf5: {datasets: 5000}\n",
		   "datasets[0].hdf5.datasets: expected 1 to 4096", "got 5000");
	EXPECT_ERR("datasets:\n  - name: a\n    format: hdf5\n    sample_size: 1\n"
		   "    hdf5: {layout: plain, datasets: 2}\n",
		   "datasets[0].hdf5.datasets: layout plain has one data dataset (x)");
	EXPECT_ERR("datasets:\n  - name: a\n    format: hdf5\n    sample_size: 4KiB\n"
		   "    hdf5: {chunks: [4, 64]}\n",
		   "t.yaml:5:20: datasets[0].hdf5.chunks: expected 3 dimensions (samples, then the "
		   "2 of a sample: (d, d) from sample_size), got 2");
	EXPECT_ERR("datasets:\n  - name: a\n    format: hdf5\n    shape: [64, 64, 4]\n"
		   "    hdf5: {chunks: [1, 64, 64]}\n",
		   "datasets[0].hdf5.chunks: expected 4 dimensions (samples, then the 3 of a "
		   "sample), got 3");
	EXPECT_ERR("datasets:\n  - name: a\n    format: hdf5\n    sample_size: 1\n"
		   "    hdf5: {chunks: [1, 0, 1]}\n",
		   "t.yaml:5:24: datasets[0].hdf5.chunks[1]: a dimension must be at least 1");
	EXPECT_ERR("datasets:\n  - name: a\n    format: hdf5\n    sample_size: 1\n"
		   "    hdf5: {chunks: 4}\n",
		   "datasets[0].hdf5.chunks: expected a list of 1 to 8 dimensions");
	EXPECT_ERR("datasets:\n  - name: a\n    format: hdf5\n    sample_size: 1GiB\n"
		   "    hdf5: {chunks: [1, 1, 1]}\n",
		   "datasets[0].hdf5.chunks: too small: a file would have over 1048576 chunks");
	EXPECT_ERR("datasets:\n  - name: a\n    format: hdf5\n    samples_per_file: 2\n"
		   "    shape: [65536, 65536]\n    hdf5: {chunks: [2, 65536, 65536]}\n",
		   "datasets[0].hdf5.chunks: a chunk of 8589934592 bytes is too large");
	/* Raw below 4 GiB, stored (gzip framing) above: refused here, not at stat. */
	EXPECT_ERR("datasets:\n  - name: a\n    format: hdf5\n    shape: [65536, 65535]\n"
		   "    hdf5: {chunks: [1, 65536, 65535]}\n    compression: gzip\n",
		   "datasets[0].hdf5.chunks: a chunk of 4295229446 bytes (with its deflate "
		   "framing) is too large");
	{
		struct res r = load("datasets:\n  - name: a\n    format: hdf5\n"
				    "    shape: [65536, 65535]\n    hdf5: {chunks: [1, 65536, 65535]}\n");

		CHECK(r.ret == 0, "a 4 GiB - 64 KiB raw chunk is accepted: %s", r.err);
		res_free(&r);
	}
	EXPECT_ERR("datasets:\n  - name: a\n    format: hdf5\n    sample_size: 1EiB\n"
		   "    samples_per_file: 2\n    hdf5: {datasets: 4}\n",
		   "datasets[0].sample_size: a file would be too large: hdf5.datasets x "
		   "samples_per_file (2)");
	/* images */
	EXPECT_ERR(IMG "    files: 3\n",
		   "t.yaml:2:5: datasets[0].width: missing: format jpeg needs width and height (or "
		   "a sample_size");
	EXPECT_ERR(IMG "    width: 10\n    samples_per_file: 2\n",
		   "t.yaml:5:23: datasets[0].samples_per_file: format jpeg holds one image per "
		   "file: must be 1");
	EXPECT_ERR(IMG "    width: 10\n    dtype: float32\n",
		   "t.yaml:5:12: datasets[0].dtype: images are 8-bit: must be uint8");
	EXPECT_ERR(IMG "    shape: [10, 10]\n",
		   "t.yaml:4:12: datasets[0].shape: not used by format jpeg: give width and height",
		   "datasets[0].width: missing");
	EXPECT_ERR(IMG "    sample_size: 100\n",
		   "t.yaml:4:18: datasets[0].sample_size: 100 bytes is below the smallest jpeg "
		   "file of color RGB (172 bytes, a 1x1 image)");
	EXPECT_ERR("datasets:\n  - name: a\n    format: png\n"
		   "    sample_size: {mean: 10kB, stdev: 1kB, min: 50}\n",
		   "t.yaml:4:48: datasets[0].sample_size: 50 bytes is below the smallest png file");
	EXPECT_ERR(IMG "    width: 70000\n",
		   "t.yaml:4:12: datasets[0].width: 70000 pixels is too large (at most 65500: "
		   "JPEG's limit)");
	EXPECT_ERR(IMG "    width: 10\n    height: {mean: 1000, stdev: 10, max: 70000}\n",
		   "t.yaml:5:42: datasets[0].height.max: 70000 pixels is too large");
	EXPECT_ERR(IMG "    width: 0\n", "t.yaml:4:12: datasets[0].width: must be at least 1 pixel");
	EXPECT_ERR(IMG "    width: {stdev: 3}\n",
		   "t.yaml:4:12: datasets[0].width.mean: missing: a distribution needs a mean");
	EXPECT_ERR(IMG "    width: {mean: 10, stdev: 3, min: 20, max: 30}\n",
		   "datasets[0].width.mean: 10 pixels is outside [min, max] = [20, 30]");
	EXPECT_ERR(IMG "    width: wide\n",
		   "t.yaml:4:12: datasets[0].width: expected a count like 168, 2k or 1M, got "
		   "\"wide\"");
	EXPECT_ERR(IMG "    width: [1, 2]\n",
		   "t.yaml:4:12: datasets[0].width: expected a number of pixels like 224 or {mean: "
		   "..., stdev: ...}, got a list");
	EXPECT_ERR("datasets:\n  - name: a\n    format: png\n    width: 2147483647\n",
		   "t.yaml:4:12: datasets[0].width: an image of up to 2147483647 x 2147483647 "
		   "pixels is too large");
	EXPECT_ERR(IMG "    width: 10\n    color: CMYK\n",
		   "t.yaml:5:12: datasets[0].color: expected one of L, RGB, RGB420, got \"CMYK\"");
	EXPECT_ERR(IMG "    width: 10\n    files: 20\n    classes: 4\n    subfolders: 2\n"
		   "    eval_subfolders: 0\n",
		   "t.yaml:7:17: datasets[0].subfolders: cannot be combined with classes",
		   "t.yaml:8:22: datasets[0].eval_subfolders: cannot be combined with classes");
	EXPECT_ERR(IMG "    width: 10\n    classes: 2\n    files: 2\n    file_prefix: x\n",
		   "t.yaml:7:18: datasets[0].file_prefix: not used with classes (files are named "
		   "n<class>_<k>.JPEG");
	EXPECT_ERR(IMG "    width: 10\n    classes: 0\n",
		   "t.yaml:5:14: datasets[0].classes: expected 1 to 1000000 classes, got 0");
	EXPECT_ERR(IMG "    width: 10\n    files: 10\n    classes: 100\n",
		   "t.yaml:6:14: datasets[0].classes: 100 classes but only 10 train files");
	EXPECT_ERR(IMG "    width: 10\n    files: 10\n    eval_files: 5\n    classes: 10\n",
		   "datasets[0].classes: 10 classes but only 5 eval files");
}

/* ---- DLIO workload files ---- */

static const char unet3d_dlio[] =
	"model: \n"
	"  name: unet3d\n"
	"\n"
	"framework: pytorch\n"
	"\n"
	"workflow:\n"
	"  generate_data: False\n"
	"  train: True\n"
	"  checkpoint: True\n"
	"\n"
	"dataset: \n"
	"  data_folder: data/unet3d/\n"
	"  format: npz\n"
	"  num_files_train: 168\n"
	"  num_samples_per_file: 1\n"
	"  record_length_bytes: 146600628\n"
	"  record_length_bytes_stdev: 68341808\n"
	"  record_length_bytes_resize: 2097152\n"
	"  \n"
	"reader: \n"
	"  data_loader: pytorch\n"
	"  batch_size: 7\n"
	"  read_threads: 4\n"
	"  file_shuffle: seed\n"
	"  sample_shuffle: seed\n"
	"\n"
	"train:\n"
	"  epochs: 5\n"
	"  computation_time: 0.636\n"
	"\n"
	"checkpoint:\n"
	"  checkpoint_folder: checkpoints/unet3d\n"
	"  checkpoint_after_epoch: 5\n"
	"  epochs_between_checkpoints: 2\n"
	"  model_size: 499153191\n"
	"\n"
	"metric:\n"
	"  au: 0.90\n";

/* A DLIO file that loads, one dataset; the messages (the ignored line) are
 * returned in r.err. */
static struct res load_dlio(int line, const char *yaml)
{
	struct res r = load(yaml);

	CHECK(r.ret == 0 && r.cfg && r.cfg->ndatasets == 1, "line %d: DLIO load: %d\n%s", line,
	      r.ret, r.err);
	return r;
}

static void test_dlio(void)
{
	struct res r = load_dlio(__LINE__, unet3d_dlio);
	const struct dl_dataset *d;

	if (r.cfg) {
		d = &r.cfg->datasets[0];
		/* d = isqrt(146600628) = 12107: DLIO writes 12107 x 12107 bytes per sample. */
		CHECK(!strcmp(d->name, "unet3d") && d->format == DL_FMT_NPZ &&
			      d->files[0] == 168 && d->files[1] == 0 && d->samples_per_file == 1 &&
			      dist_is(&d->sample_size, 12107ULL * 12107, 68341808, 1,
				      12107ULL * 12107 + 6 * 68341808ULL) &&
			      d->dtype == DL_DT_UINT8 && !strcmp(d->file_prefix, "img") &&
			      r.cfg->seed == 123 && d->loc.line == 12 && d->loc.col == 3,
		      "unet3d: %s %" PRIu64 " %" PRIu64 " loc %u:%u", d->name, d->sample_size.mean,
		      d->sample_size.stdev, d->loc.line, d->loc.col);
		CHECK(count_lines(r.err) == 1 &&
			      !strncmp(r.err, "t.yaml: ignored DLIO keys: model.name, framework, "
					      "workflow.generate_data, workflow.train, "
					      "workflow.checkpoint, dataset.record_length_bytes_resize, "
					      "reader.data_loader, reader.batch_size, ", 160) &&
			      strstr(r.err, "train.epochs, train.computation_time, "
					    "checkpoint.checkpoint_folder, ") &&
			      strstr(r.err, "checkpoint.model_size, metric.au\n"),
		      "one line of ignored keys, in file order:\n%s", r.err);
	}
	res_free(&r);

	/* resnet50: a fractional record length is floored, then d = 338. */
	r = load_dlio(__LINE__, "model: \n  name: resnet50\n  type: cnn\nframework: tensorflow\n"
				"dataset:\n num_files_train: 1024\n num_samples_per_file: 1251\n"
				" record_length_bytes: 114660.07\n record_length_bytes_resize: 150528\n"
				" data_folder: data/resnet50\n format: tfrecord\n"
				"train: \n computation_time: 0.435\n epochs: 5\n seed: 7\n");
	if (r.cfg) {
		d = &r.cfg->datasets[0];
		CHECK(!strcmp(d->name, "resnet50") && d->format == DL_FMT_TFRECORD &&
			      d->files[0] == 1024 && d->samples_per_file == 1251 &&
			      dist_is(&d->sample_size, 338 * 338, 0, 338 * 338, 338 * 338) &&
			      r.cfg->seed == 7 && d->compression == DL_COMP_NONE,
		      "resnet50: %" PRIu64 " seed %" PRIu64, d->sample_size.mean, r.cfg->seed);
		CHECK(strstr(r.err, "ignored DLIO keys: model.name, model.type, framework, "
				    "dataset.record_length_bytes_resize, train.computation_time, "
				    "train.epochs\n"),
		      "resnet50 ignored: %s", r.err);
	}
	res_free(&r);

	/* cosmoflow as shipped: the older record_length / record_length_stdev names, model
	 * as a scalar. */
	r = load_dlio(__LINE__, "model: cosmoflow\nframework: tensorflow\nworkflow:\n"
				" generate_data: False\n train: True\ndataset:\n"
				" data_folder: data/cosmoflow\n num_files_train: 524288\n"
				" num_samples_per_file: 1\n record_length: 2828486\n"
				" record_length_stdev: 71311\n format: tfrecord\n");
	if (r.cfg) {
		d = &r.cfg->datasets[0];
		CHECK(!strcmp(d->name, "cosmoflow") && d->files[0] == 524288 &&
			      dist_is(&d->sample_size, 1681 * 1681, 71311, 1, 1681 * 1681 + 6 * 71311),
		      "cosmoflow: %" PRIu64 " %" PRIu64, d->sample_size.mean, d->sample_size.stdev);
		CHECK(strstr(r.err, "ignored DLIO keys: model, framework, workflow.generate_data, "
				    "workflow.train\n"),
		      "cosmoflow ignored: %s", r.err);
	}
	res_free(&r);

	/* bert: prefix, a multi-sample tfrecord, steps-based checkpointing. */
	r = load_dlio(__LINE__, "model: \n  name: bert\n  model_size_bytes: 4034713312\n"
				"framework: tensorflow\ndataset: \n  data_folder: data/bert\n"
				"  format: tfrecord\n  num_files_train: 500\n"
				"  num_samples_per_file: 313532\n  record_length_bytes: 2500\n"
				"  file_prefix: part\ncheckpoint:\n  checkpoint_folder: c\n"
				"  steps_between_checkpoints: 250\n");
	if (r.cfg) {
		d = &r.cfg->datasets[0];
		CHECK(!strcmp(d->name, "bert") && !strcmp(d->file_prefix, "part") &&
			      d->files[0] == 500 && d->samples_per_file == 313532 &&
			      d->sample_size.mean == 2500,
		      "bert");
	}
	res_free(&r);

	/* dlrm: indexed_binary with an eval file; an unknown DLIO key is ignored. */
	r = load_dlio(__LINE__, "model: \n  name: dlrm\nframework: pytorch\ndataset:\n"
				"  data_folder: data/dlrm\n  format: indexed_binary\n"
				"  num_files_train: 1\n  num_files_eval: 1\n"
				"  num_samples_per_file: 1024\n  record_length_bytes: 671088640\n"
				"  keep_files: True\n  eval_num_samples_per_file: 9\n"
				"reader:\n  sample_shuffle: random\n");
	if (r.cfg) {
		d = &r.cfg->datasets[0];
		CHECK(!strcmp(d->name, "dlrm") && d->format == DL_FMT_INDEXED_BINARY &&
			      d->files[0] == 1 && d->files[1] == 1 && d->samples_per_file == 1024 &&
			      d->sample_size.mean == 25905ULL * 25905,
		      "dlrm: %" PRIu64, d->sample_size.mean);
		CHECK(strstr(r.err, "dataset.keep_files, dataset.eval_num_samples_per_file, "
				    "reader.sample_shuffle\n"),
		      "dlrm ignored: %s", r.err);
	}
	res_free(&r);

	/* DLIO's default workload: subfolders and eval files. */
	r = load_dlio(__LINE__, "model: default\nframework: pytorch\ndataset: \n"
				"  data_folder: data/default\n  format: npz\n  num_files_train: 64\n"
				"  num_files_eval: 8\n  num_samples_per_file: 1\n  record_length: 4096\n"
				"  num_subfolders_train: 2\n  num_subfolders_eval: 2\n"
				"evaluation: \n  eval_time: 0.5\nprofiling: \n  profiler: iostat\n");
	if (r.cfg) {
		d = &r.cfg->datasets[0];
		CHECK(!strcmp(d->name, "default") && d->files[0] == 64 && d->files[1] == 8 &&
			      d->subfolders[0] == 2 && d->subfolders[1] == 2 &&
			      d->sample_size.mean == 4096,
		      "default workload");
	}
	res_free(&r);

	/* Every DLIO default: ./data/ -> "data", tfrecord, 8 files of 65536 bytes, seed 123. */
	r = load_dlio(__LINE__, "framework: pytorch\ndataset: {}\n");
	if (r.cfg) {
		d = &r.cfg->datasets[0];
		CHECK(!strcmp(d->name, "data") && d->format == DL_FMT_TFRECORD && d->files[0] == 8 &&
			      d->samples_per_file == 1 && d->sample_size.mean == 65536 &&
			      r.cfg->seed == 123 && d->loc.line == 2 && d->loc.col == 10,
		      "DLIO defaults: %s %d %" PRIu64, d->name, d->format, d->files[0]);
		CHECK(!strcmp(r.err, "t.yaml: ignored DLIO keys: framework\n"), "%s", r.err);
	}
	res_free(&r);

	/* Nothing ignored: nothing printed. */
	r = load_dlio(__LINE__, "dataset:\n  format: npy\n  data_folder: /x/y/z\n");
	CHECK(r.cfg && r.errlen == 0 && !strcmp(r.cfg->datasets[0].name, "z") &&
		      r.cfg->datasets[0].format == DL_FMT_NPY,
	      "quiet when nothing is ignored: %s", r.err);
	res_free(&r);

	/* dtype: numpy names; the size stays d x d elements. */
	r = load_dlio(__LINE__, "dataset:\n  format: npz\n  record_length_bytes: 65536\n"
				"  record_element_type: np.float32\n");
	CHECK(r.cfg && r.cfg->datasets[0].dtype == DL_DT_FLOAT32 &&
		      r.cfg->datasets[0].sample_size.mean == 65536 * 4,
	      "float32: %s", r.err);
	res_free(&r);

	/* record_dims with a dtype. */
	r = load_dlio(__LINE__, "dataset:\n  format: npy\n  record_dims: [3, 224, 224]\n"
				"  record_element_type: float16\n  record_length_bytes: 5\n");
	if (r.cfg) {
		d = &r.cfg->datasets[0];
		CHECK(d->ndims == 3 && d->dims[0] == 3 && d->dims[1] == 224 && d->dims[2] == 224 &&
			      d->dtype == DL_DT_FLOAT16 && d->sample_size.mean == 3 * 224 * 224 * 2 &&
			      strstr(r.err, "dataset.record_length_bytes\n"),
		      "record_dims: %s", r.err);
	}
	res_free(&r);

	/* jpeg: one grayscale image per file, sides from normal(d, S / (2 sqrt(L))). */
	r = load_dlio(__LINE__, "dataset:\n  data_folder: ./imgs\n  format: jpeg\n"
				"  num_files_train: 100\n  num_samples_per_file: 4\n"
				"  record_length_bytes: 150528\n  record_length_bytes_stdev: 30000\n");
	if (r.cfg) {
		d = &r.cfg->datasets[0];
		CHECK(d->format == DL_FMT_JPEG && IMGP(d)->color == DL_COLOR_L && d->samples_per_file == 1 &&
			      !d->size_given && dist_is(&IMGP(d)->width, 387, 39, 1, 387 + 6 * 39) &&
			      dist_is(&IMGP(d)->height, 387, 39, 1, 387 + 6 * 39) &&
			      strstr(r.err, "dataset.num_samples_per_file\n"),
		      "jpeg: %" PRIu64 " %" PRIu64 " %s", IMGP(d)->width.mean, IMGP(d)->width.stdev, r.err);
	}
	res_free(&r);
	r = load_dlio(__LINE__, "dataset:\n  format: png\n  record_dims: [300, 400]\n");
	CHECK(r.cfg && dist_is(&IMGP(&r.cfg->datasets[0])->height, 300, 0, 300, 300) &&
		      dist_is(&IMGP(&r.cfg->datasets[0])->width, 400, 0, 400, 400),
	      "png record_dims are (height, width)");
	res_free(&r);

	/* hdf5: record_dims split over num_dset_per_record, a leading 1 dropped. */
	r = load_dlio(__LINE__, "workload:\n  dataset:\n    data_folder: /data/cosmo\n"
				"    format: hdf5\n    num_samples_per_file: 16\n"
				"    record_dims: [4, 128, 128]\n    record_element_type: float32\n"
				"    hdf5:\n      num_dset_per_record: 4\n      max_shape: [128, 128]\n"
				"    compression: gzip\n    compression_level: 6\n"
				"  train:\n    seed: 99\nhydra: {run: {dir: x}}\n");
	if (r.cfg) {
		d = &r.cfg->datasets[0];
		CHECK(!strcmp(d->name, "cosmo") && d->format == DL_FMT_HDF5 && H5(d)->dsets == 4 &&
			      H5(d)->layout == DL_H5_DLIO && d->ndims == 2 && d->dims[0] == 128 &&
			      d->dims[1] == 128 && d->compression == DL_COMP_GZIP &&
			      d->compression_level == 6 && H5(d)->chunk_ndims == 3 &&
			      H5(d)->chunk[0] == 1 && H5(d)->chunk[1] == 128 && H5(d)->chunk[2] == 128 &&
			      r.cfg->seed == 99,
		      "hdf5 translation");
		CHECK(!strcmp(r.err, "t.yaml: ignored DLIO keys: workload.dataset.hdf5.max_shape, "
				     "hydra.run\n"),
		      "wrapped ignored: %s", r.err);
	}
	res_free(&r);
	r = load_dlio(__LINE__, "dataset:\n  format: hdf5\n  record_dims: [4, 8]\n"
				"  hdf5: {num_dset_per_record: 2, chunk_dims: [1, 2, 8]}\n");
	CHECK(r.cfg && r.cfg->datasets[0].ndims == 2 && r.cfg->datasets[0].dims[0] == 2 &&
		      H5(&r.cfg->datasets[0])->chunk_ndims == 3 && H5(&r.cfg->datasets[0])->chunk[1] == 2,
	      "hdf5 split 4 -> 2 and chunk_dims");
	res_free(&r);
	/* The legacy chunking keys: (1, c, c) with c = ceil(sqrt(chunk_size)). */
	r = load_dlio(__LINE__, "dataset:\n  format: hdf5\n  record_length_bytes: 1048576\n"
				"  enable_chunking: True\n  chunk_size: 1000\n");
	CHECK(r.cfg && H5(&r.cfg->datasets[0])->chunk_ndims == 3 &&
		      H5(&r.cfg->datasets[0])->chunk[0] == 1 && H5(&r.cfg->datasets[0])->chunk[1] == 32 &&
		      H5(&r.cfg->datasets[0])->chunk[2] == 32 && H5(&r.cfg->datasets[0])->dsets == 1,
	      "legacy chunking");
	res_free(&r);
	/* Compression where DLIO's writer uses it, ignored where it does not. */
	r = load_dlio(__LINE__, "dataset:\n  format: npz\n  compression: zip\n");
	CHECK(r.cfg && r.cfg->datasets[0].compression == DL_COMP_ZIP && r.errlen == 0, "npz zip");
	res_free(&r);
	r = load_dlio(__LINE__, "dataset:\n  format: tfrecord\n  compression: gzip\n"
				"  compression_level: 9\n  enable_chunking: True\n");
	CHECK(r.cfg && r.cfg->datasets[0].compression == DL_COMP_NONE &&
		      !strcmp(r.err, "t.yaml: ignored DLIO keys: dataset.compression, "
				     "dataset.compression_level, dataset.enable_chunking\n"),
	      "tfrecord: compression ignored as DLIO does: %s", r.err);
	res_free(&r);

	/* dliofs's own top-level keys in a DLIO workload (DLIO ignores them). */
	r = load_dlio(__LINE__, "framework: pytorch\nseed: 5\nio: direct\n"
				"pacer: {read: {bandwidth: 100MB/s}}\n"
				"dataset:\n  format: npz\ntrain:\n  seed: 9\n  epochs: 3\n");
	CHECK(r.cfg && r.cfg->seed == 5 && r.cfg->io_mode == DL_IO_DIRECT && r.cfg->pacer.enabled &&
		      !strcmp(r.err, "t.yaml: ignored DLIO keys: framework, train.seed, "
				     "train.epochs\n"),
	      "seed/io/pacer honoured, train.seed ignored: %s", r.err);
	res_free(&r);
	r = load_dlio(__LINE__, "workload:\n  dataset: {format: npy}\n  io: direct\n");
	CHECK(r.cfg && r.cfg->io_mode == DL_IO_DIRECT && r.cfg->seed == 123 && r.errlen == 0,
	      "io inside workload: %s", r.err);
	res_free(&r);

	/* The translation is a native config: its dump loads back to the same model. */
	{
		struct res a = load(unet3d_dlio), b = { 0 };
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		if (a.cfg)
			dl_config_dump(a.cfg, f);
		fclose(f);
		b = load(text);
		CHECK(a.cfg && b.ret == 0 && same_model(a.cfg, b.cfg),
		      "DLIO dump loads back: %s\n%s", b.err, text);
		free(text);
		res_free(&a);
		res_free(&b);
	}
}

static void test_dlio_errors(void)
{
	{
		char want[700];

		snprintf(want, sizeof(want),
			 "t.yaml:4:11: dataset.format: DLIO format \"parquet\" is not served by "
			 "dliofs (it serves %s)", format_list(1));
		EXPECT_ERR_DYN("framework: pytorch\ndataset:\n  data_folder: data/x\n  format: parquet\n",
			       want);
	}
	EXPECT_ERR("dataset:\n  format: hdf5_opt\n",
		   "t.yaml:2:11: dataset.format: DLIO format \"hdf5_opt\" is not served");
	EXPECT_ERR("dataset:\n  format: synthetic\n", "t.yaml:2:11: dataset.format:", "synthetic");
	EXPECT_ERR("dataset:\n  format: [npz]\n",
		   "t.yaml:2:11: dataset.format: expected a DLIO format like npz, got a list");
	EXPECT_ERR("workload:\n  dataset:\n    format: parquet\n",
		   "t.yaml:3:13: workload.dataset.format: DLIO format \"parquet\"");
	EXPECT_ERR("dataset:\n  data_folder: ./\n",
		   "t.yaml:2:16: dataset.data_folder: \"./\" has no last path component");
	EXPECT_ERR("dataset:\n  data_folder: /\n", "t.yaml:2:16: dataset.data_folder:");
	EXPECT_ERR("dataset:\n  data_folder: data/..\n", "t.yaml:2:16: dataset.data_folder:");
	EXPECT_ERR("dataset:\n  data_folder: data/a b\n",
		   "t.yaml:2:16: dataset.data_folder: \"a b\" has the character \" \"");
	EXPECT_ERR("dataset:\n  data_folder: data/.hidden\n",
		   "t.yaml:2:16: dataset.data_folder: \".hidden\" must not start with '.'");
	EXPECT_ERR("dataset:\n  files: 3\n  sample_size: 4KiB\n",
		   "t.yaml:2:3: dataset.files: a dliofs key in a DLIO workload", "DLIO calls it "
		   "num_files_train",
		   "t.yaml:3:3: dataset.sample_size: a dliofs key", "record_length_bytes");
	EXPECT_ERR("dataset:\n  classes: 3\n", "t.yaml:2:3: dataset.classes:",
		   "DLIO has no equivalent");
	EXPECT_ERR("framework: pytorch\nworkflow: {train: False, checkpoint: True}\n",
		   "t.yaml:1:1: dataset: missing: this is a DLIO workload",
		   "nothing to serve");
	EXPECT_ERR("framework: pytorch\ndataset: [a]\n",
		   "t.yaml:2:10: dataset: expected a mapping of DLIO dataset settings", "a list");
	/* Values checked by the native rules, named by DLIO's keys. */
	EXPECT_ERR("dataset:\n  num_files_train: -3\n",
		   "t.yaml:2:20: dataset.num_files_train: expected a count", "negative");
	EXPECT_ERR("dataset:\n  num_files_train: 0\n",
		   "t.yaml:2:20: dataset.num_files_train: a dataset needs at least one file");
	EXPECT_ERR("dataset:\n  num_samples_per_file: lots\n",
		   "t.yaml:2:25: dataset.num_samples_per_file: expected a count", "\"lots\"");
	EXPECT_ERR("dataset:\n  num_subfolders_train: 4294967296\n",
		   "t.yaml:2:25: dataset.num_subfolders_train: 4294967296 is too large");
	EXPECT_ERR("dataset:\n  file_prefix: a/b\n",
		   "t.yaml:2:16: dataset.file_prefix: \"a/b\" must be a single path component");
	EXPECT_ERR("dataset:\n  record_length_bytes: abc\n",
		   "t.yaml:2:24: dataset.record_length_bytes: expected a number of bytes like "
		   "146600628, got \"abc\"");
	EXPECT_ERR("dataset:\n  record_length_bytes: -5\n",
		   "t.yaml:2:24: dataset.record_length_bytes:", "negative");
	EXPECT_ERR("dataset:\n  record_length: 0\n",
		   "t.yaml:2:18: dataset.record_length: must be at least 1 byte");
	EXPECT_ERR("dataset:\n  record_length_bytes: 1e30\n",
		   "t.yaml:2:24: dataset.record_length_bytes: \"1e30\" is too large");
	EXPECT_ERR("dataset:\n  record_length_bytes_stdev: x\n",
		   "t.yaml:2:30: dataset.record_length_bytes_stdev: expected a number of bytes");
	EXPECT_ERR("dataset:\n  record_dims: [2, 2]\n  record_length_bytes_stdev: 5\n",
		   "t.yaml:3:30: dataset.record_length_bytes_stdev: cannot be combined with "
		   "record_dims");
	EXPECT_ERR("dataset:\n  record_dims: [2, 0]\n",
		   "t.yaml:2:20: dataset.record_dims[1]: a dimension must be at least 1");
	EXPECT_ERR("dataset:\n  record_dims: 5\n",
		   "t.yaml:2:16: dataset.record_dims: expected a list of dimensions");
	EXPECT_ERR("dataset:\n  record_element_type: complex64\n",
		   "t.yaml:2:24: dataset.record_element_type: \"complex64\" is not a dtype dliofs "
		   "serves");
	EXPECT_ERR("dataset:\n  format: jpeg\n  record_dims: [1, 2, 3]\n",
		   "t.yaml:3:16: dataset.record_dims: a DLIO image has 2 dimensions");
	EXPECT_ERR("dataset:\n  format: hdf5\n  record_dims: [6, 8]\n"
		   "  hdf5: {num_dset_per_record: 4}\n",
		   "t.yaml:3:16: dataset.record_dims: record_dims[0] (6) must be divisible by "
		   "hdf5.num_dset_per_record (4)");
	EXPECT_ERR("dataset:\n  format: hdf5\n  hdf5: {num_dset_per_record: 0}\n",
		   "dataset.hdf5.num_dset_per_record: expected 1 to 4096, got 0");
	EXPECT_ERR("dataset:\n  format: hdf5\n  hdf5: {chunk_dims: [1, 2]}\n",
		   "t.yaml:3:22: dataset.hdf5.chunk_dims: expected 3 dimensions");
	EXPECT_ERR("dataset:\n  format: hdf5\n  compression: lzf\n",
		   "t.yaml:3:16: dataset.compression: hdf5 compression \"lzf\" is not supported by "
		   "dliofs (it serves gzip)");
	EXPECT_ERR("dataset:\n  format: hdf5\n  compression: bz2\n",
		   "dataset.compression: hdf5 compression \"bz2\"", "h5py has no such filter");
	EXPECT_ERR("dataset:\n  format: npz\n  compression: zip\n  compression_level: 12\n",
		   "t.yaml:4:22: dataset.compression_level: expected 1 to 9, got 12");
	EXPECT_ERR("dataset:\n  format: hdf5\n  enable_chunking: maybe\n",
		   "t.yaml:3:20: dataset.enable_chunking: expected true or false, got \"maybe\"");
	EXPECT_ERR("dataset:\n  format: hdf5\n  enable_chunking: true\n",
		   "t.yaml:3:20: dataset.chunk_size: enable_chunking needs a chunk_size");
	EXPECT_ERR("dataset:\n  format: npz\ntrain:\n  seed: -1\n",
		   "t.yaml:4:9: train.seed: expected an unsigned 64-bit integer", "negative");
	EXPECT_ERR("dataset:\n  format: npz\n  format: npy\n",
		   "t.yaml:3:3: dataset.format: duplicate key (first given at line 2, column 3)");
	/* Every problem at once. */
	{
		struct res r = load("dataset:\n  data_folder: ./\n  format: parquet\n  files: 1\n");

		CHECK(r.ret == -EINVAL && count_lines(r.err) == 3 &&
			      strstr(r.err, "t.yaml:2:16: dataset.data_folder:") &&
			      strstr(r.err, "t.yaml:3:11: dataset.format:") &&
			      strstr(r.err, "t.yaml:4:3: dataset.files:"),
		      "all DLIO problems:\n%s", r.err);
		res_free(&r);
	}
	/* dliofs sections in a workload are checked by their own rules, with locations. */
	EXPECT_ERR("dataset: {}\nio: fast\n", "t.yaml:2:5: io: expected one of cache, direct");
	EXPECT_ERR("dataset: {}\nseed: x\ntrain: {seed: 3}\n", "t.yaml:2:7: seed: expected");
	EXPECT_ERR("dataset: {}\nbacking: /x\n", "t.yaml:2:10: backing: expected a list");
	EXPECT_ERR("dataset: {}\ncache: &c [*c]\n",
		   "t.yaml:2:8: cache: nested too deeply (an alias that contains itself?)");
	{
		/* Aliases that expand to billions of nodes stop early. */
		char big[1024];
		size_t o = (size_t)snprintf(big, sizeof(big), "dataset: {}\na0: &a0 [1,1,1,1,1,1,1,1]\n");

		for (int i = 1; i < 10; i++)
			o += (size_t)snprintf(big + o, sizeof(big) - o,
					      "a%d: &a%d [*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d]\n", i, i,
					      i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
		snprintf(big + o, sizeof(big) - o, "trace: *a9\n");
		EXPECT_ERR(big, "trace: too large once its aliases are expanded");
	}
	/* Not DLIO: a `dataset` list is a typo of `datasets`. */
	EXPECT_ERR("dataset:\n  - name: a\n",
		   "t.yaml:1:1: dataset: unknown key (did you mean \"datasets\"?)");
}

/* Issue #16: hostile documents finish quickly with bounded, located output. */
static void test_hostile(void)
{
	char big[4096];
	size_t o;
	struct res r;

	/* 9 levels of &lN [*lN-1 x10] under pacer: 10^9 leaves once expanded. */
	o = (size_t)snprintf(big, sizeof(big), "datasets:\n  - {name: a, format: raw, "
			     "sample_size: 1}\npacer:\n  l0: &l0 [x]\n");
	for (int i = 1; i <= 9; i++) {
		o += (size_t)snprintf(big + o, sizeof(big) - o, "  l%d: &l%d [", i, i);
		for (int k = 0; k < 10; k++)
			o += (size_t)snprintf(big + o, sizeof(big) - o, "%s*l%d", k ? "," : "", i - 1);
		o += (size_t)snprintf(big + o, sizeof(big) - o, "]\n");
	}
	r = load(big);
	CHECK(r.ret == -EINVAL && strstr(r.err, "pacer: too large once its aliases are expanded") &&
		      count_lines(r.err) <= 1001,
	      "alias bomb under pacer: ret %d, %u lines, last: %.300s", r.ret, count_lines(r.err),
	      r.err && strlen(r.err) > 300 ? r.err + strlen(r.err) - 300 : r.err);
	res_free(&r);
	/* The same under cache: (the other section the walker reads). */
	memcpy(strstr(big, "pacer:"), "cache:", 6);
	r = load(big);
	CHECK(r.ret == -EINVAL && strstr(r.err, "too large once its aliases are expanded") &&
		      count_lines(r.err) <= 1001,
	      "alias bomb under cache: ret %d, %u lines", r.ret, count_lines(r.err));
	res_free(&r);

	/* An alias that contains itself. */
	EXPECT_ERR("datasets:\n  - {name: a, format: raw, sample_size: 1}\npacer: &p {read: *p}\n",
		   "t.yaml:3:", "nested too deeply (an alias that contains itself?)");
	EXPECT_ERR("datasets:\n  - {name: a, format: raw, sample_size: 1}\n"
		   "pacer: {read: &r [1, *r]}\n",
		   "nested too deeply (an alias that contains itself?)");

	/* Repeated problems stop at the cap, pacer and trace sections included. */
	o = (size_t)snprintf(big, sizeof(big), "datasets:\n  - {name: a, format: raw, "
			     "sample_size: 1}\npacer: &b {read: {bandwidth: x}, k: *b}\n");
	r = load(big);
	CHECK(r.ret == -EINVAL && count_lines(r.err) <= 1001, "self-nesting pacer: %u lines",
	      count_lines(r.err));
	res_free(&r);
	{
		size_t n = 3000 * 24 + 128;
		char *many = malloc(n);

		if (!many)
			abort();
		o = (size_t)snprintf(many, n, "datasets:\n  - {name: a, format: raw, "
				     "sample_size: 1}\npacer:\n");
		for (int i = 0; i < 3000; i++)
			o += (size_t)snprintf(many + o, n - o, "  bad_%d: 1\n", i);
		r = load(many);
		CHECK(r.ret == -EINVAL && count_lines(r.err) == 1001 &&
			      strstr(r.err, "t.yaml: too many problems; stopping after 1000"),
		      "3000 bad pacer keys: %u lines", count_lines(r.err));
		res_free(&r);
		o = (size_t)snprintf(many, n, "datasets:\n  - {name: a, format: raw, "
				     "sample_size: 1}\ntrace:\n  file: /t\n  ops: [");
		for (int i = 0; i < 3000; i++)
			o += (size_t)snprintf(many + o, n - o, "%sx", i ? ", " : "");
		snprintf(many + o, n - o, "]\n");
		r = load(many);
		CHECK(r.ret == -EINVAL && count_lines(r.err) == 1001, "3000 bad trace ops: %u lines",
		      count_lines(r.err));
		res_free(&r);
		free(many);
	}

	/* hdf5.datasets: 0 is reported, not divided by. */
	EXPECT_ERR("datasets:\n  - {name: h5, format: hdf5, files: 4, shape: [16, 16], "
		   "hdf5: {datasets: 0, chunks: [4, 8, 8]}}\n",
		   "t.yaml:2:74: datasets[0].hdf5.datasets: expected 1 to 4096 data datasets");
	EXPECT_ERR("datasets:\n  - {name: h5, format: hdf5, sample_size: 4KiB, "
		   "hdf5: {datasets: 5000, chunks: [1, 8, 8]}}\n",
		   "datasets[0].hdf5.datasets: expected 1 to 4096");
	/* samples_per_file: 0 with chunks (found by the DLIO fuzzer, where gzip
	 * compression makes the chunks): reported, not divided by. */
	EXPECT_ERR("datasets:\n  - {name: h, format: hdf5, samples_per_file: 0, sample_size: 1KiB, "
		   "hdf5: {chunks: [1, 8, 8]}}\n",
		   "t.yaml:2:47: datasets[0].samples_per_file: must be at least 1");
	EXPECT_ERR("dataset:\n  format: hdf5\n  num_samples_per_file: 0\n  compression: gzip\n",
		   "t.yaml:3:25: dataset.num_samples_per_file: must be at least 1");
}

/* The S3 secret is never written back (check's output, .dliofs/config.yaml
 * are readable by anyone on the machine). */
static void test_dump_hides_the_s3_secret(void)
{
	struct res a = load("datasets:\n  - {name: d, format: raw, files: 2, sample_size: 4KiB}\n"
			    "s3: {access_key: AKIDTEST, secret_key: 'sEcReT/+k'}\n");
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	CHECK(a.ret == 0, "s3 config loads: %s", a.err);
	if (a.ret)
		goto out;
	f = open_memstream(&text, &len);
	dl_config_dump(a.cfg, f);
	fclose(f);
	CHECK(text && strstr(text, "AKIDTEST") && !strstr(text, "sEcReT"),
	      "dump keeps the access key and hides the secret:\n%s", text ? text : "");
out:
	free(text);
	res_free(&a);
}

/* s3.listen: HOST:PORT, checked where it is written; kept by the dump. */
static void test_s3_listen(void)
{
	struct res a = load("datasets:\n  - {name: d, format: raw, files: 2, sample_size: 4KiB}\n"
			    "s3: {listen: '127.0.0.1:9010'}\n");
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	CHECK(a.ret == 0 && !strcmp(a.cfg->s3.listen, "127.0.0.1:9010"), "s3.listen loads: %s",
	      a.err);
	if (!a.ret) {
		f = open_memstream(&text, &len);
		dl_config_dump(a.cfg, f);
		fclose(f);
		CHECK(text && strstr(text, "listen: \"127.0.0.1:9010\""), "dump keeps s3.listen:\n%s",
		      text ? text : "");
		free(text);
	}
	res_free(&a);
	EXPECT_ERR("s3: {listen: localhost}\n", "t.yaml:1:14: s3.listen: expected HOST:PORT");
	EXPECT_ERR("s3: {listen: 'h:70000'}\n", "s3.listen: expected HOST:PORT");
	EXPECT_ERR("s3: {listen: ':9000'}\n", "s3.listen: expected HOST:PORT");
}

/* `cluster:`: periods and windows in range, and a build without MPI says
 * so at the key (this test runs in either build). */
static void test_cluster(void)
{
	static const char ds[] = "datasets:\n  - {name: d, format: raw, files: 2, sample_size: 4KiB}\n";
	char y[512];
	struct res r;

	snprintf(y, sizeof(y), "%scluster: {period: 5ms, window: 50ms}\n", ds);
	r = load(y);
	if (r.ret) {
		CHECK(strstr(r.err, "cluster: this dliofs was built without MPI") != NULL,
		      "without MPI: said at the key: %s", r.err);
	} else {
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		CHECK(r.cfg->cluster.enabled && r.cfg->cluster.period_ns == 5000000 &&
			      r.cfg->cluster.window_ns == 50000000,
		      "period and window");
		dl_config_dump(r.cfg, f);
		fclose(f);
		CHECK(text && strstr(text, "cluster:\n  period: 5000us\n  window: 50000us\n"),
		      "dumped: %s", text ? text : "");
		free(text);
	}
	res_free(&r);
	snprintf(y, sizeof(y), "%scluster: {}\n", ds);
	r = load(y);
	CHECK(r.ret || (r.cfg->cluster.period_ns == DL_CLUSTER_DEFAULT_PERIOD &&
			r.cfg->cluster.window_ns == DL_CLUSTER_DEFAULT_WINDOW),
	      "cluster: {} takes the defaults");
	res_free(&r);
	snprintf(y, sizeof(y), "%scluster: {period: 2s}\n", ds);
	r = load(y);
	CHECK(r.ret && strstr(r.err, "cluster.period: expected a time from 1ms to 1000ms"),
	      "period out of range: %s", r.err);
	res_free(&r);
	snprintf(y, sizeof(y), "%scluster: {period: 20ms, window: 30ms}\n", ds);
	r = load(y);
	CHECK(r.ret && strstr(r.err, "cluster.window: expected at least two periods"),
	      "window under two periods: %s", r.err);
	res_free(&r);
	snprintf(y, sizeof(y), "%scluster: {perod: 20ms}\n", ds);
	r = load(y);
	CHECK(r.ret && strstr(r.err, "cluster: unknown key"), "unknown key: %s", r.err);
	res_free(&r);
	snprintf(y, sizeof(y), "%scluster: [1]\n", ds);
	r = load(y);
	CHECK(r.ret && strstr(r.err, "cluster: expected a mapping"), "not a mapping: %s", r.err);
	res_free(&r);
}

int main(void)
{
	test_cluster();
	test_full();
	test_s3_listen();
	test_defaults();
	test_dump();
	test_dump_hides_the_s3_secret();
	test_files();
	test_names();
	test_value_errors();
	test_key_errors();
	test_model_errors();
	test_name_errors();
	test_document_errors();
	test_all_reported();
	test_formats2();
	test_formats2_errors();
	test_dlio();
	test_dlio_errors();
	test_hostile();
	printf("config: %u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
