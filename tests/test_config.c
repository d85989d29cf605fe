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
#define EXPECT_ERR_N(yaml, len, ...)                                                   \
	do {                                                                           \
		static const char *const needles_[] = { __VA_ARGS__, NULL };            \
		expect_err_at(__LINE__, yaml, len, needles_);                         \
	} while (0)

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
		      d->dlrm_cardinality == 10000000ULL && d->sample_size.mean == 160 &&
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
		      !strcmp(d->file_prefix, "img") && d->dlrm_cardinality == 10000000ULL &&
		      d->ndims == 0 && d->format == DL_FMT_RAW && !strcmp(d->name, "a"),
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
	CHECK(strstr(text, "seed: ") && strstr(text, "file_prefix: ") &&
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
	EXPECT_ERR("datasets:\n  - name: a\n    format: hdf5\n    sample_size: 1\n",
		   "t.yaml:3:13: datasets[0].format: format hdf5 is not supported yet");
	EXPECT_ERR(HEAD "    sample_size: 1\n    dtype: flaot32\n",
		   "t.yaml:5:12: datasets[0].dtype: expected one of uint8", "did you mean \"float32\"");
	EXPECT_ERR("datasets:\n  - name: a\n    format: NPZ\n    sample_size: 1\n",
		   "t.yaml:3:13: datasets[0].format: expected one of npy, npz, tfrecord, dlrm, raw, "
		   "indexed_binary, got \"NPZ\" (did you mean \"npz\"?)");
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
		   "t.yaml:5:5: datasets[0].colour: unknown key; expected one of: name, format");
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
		   "t.yaml:1:1: pacer: not supported yet by this version (reserved for the storage "
		   "model)");
	EXPECT_ERR("cache: 1GB\n" HEAD "    sample_size: 1\n",
		   "t.yaml:1:1: cache: not supported yet by this version (reserved for the cache)");
	EXPECT_ERR(HEAD "    sample_size: 1\nbacking: /x\n",
		   "t.yaml:5:1: backing: not supported yet by this version (reserved for the "
		   "backing store)");
	EXPECT_ERR(HEAD "    sample_size: 1\ntrace: on\n",
		   "t.yaml:5:1: trace: not supported yet by this version (reserved for tracing)");
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
	EXPECT_ERR("datasets:\n  - name: a\n    sample_size: 1\n",
		   "t.yaml:2:5: datasets[0].format: missing: expected one of npy, npz");
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
		"t.yaml:11:1: trace:",
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

int main(void)
{
	test_full();
	test_defaults();
	test_dump();
	test_files();
	test_names();
	test_value_errors();
	test_key_errors();
	test_model_errors();
	test_name_errors();
	test_document_errors();
	test_all_reported();
	printf("config: %u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
