/* config/'s reader of a DLIO workload's own keys (dliofs/dlio_keys.h): the
 * lookups dlio-drive relies on, and the places its errors name. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dliofs/dlio_keys.h"
#include "tap.h"

/* Write text to a fresh file; its path in path (a mkstemp template). */
static int write_tmp(char *path, const char *text)
{
	int fd = mkstemp(path);

	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -EIO;
}

static struct dl_dlio_keys *load(const char *text, char *path, int *ret, char *why, size_t n)
{
	struct dl_dlio_keys *k = NULL;

	strcpy(path, "/tmp/dliofs-test-dlio-keys-XXXXXX");
	*ret = write_tmp(path, text);
	if (!*ret)
		*ret = dl_dlio_keys_load(path, &k, why, n);
	unlink(path);
	return k;
}

static void test_walk(void)
{
	char path[64], why[256];
	int ret;
	struct dl_dlio_keys *k = load("workload:\n"
				      "  model: {name: unet3d}\n"
				      "  data_reader:\n"
				      "    batch_size: 7\n"
				      "    batch_size: 9\n"
				      "  train:\n"
				      "    computation_time: {mean: 0.5, stdev: 0.1}\n"
				      "  checkpoint:\n"
				      "    optimization_groups: [1, 2, {x: 3}]\n"
				      "    type: all_ranks\n",
				      path, &ret, why, sizeof(why));
	CHECK(!ret && k, "load: %d", ret);
	if (!k)
		return;
	CHECK(dl_dlio_keys_is_workload(k), "inside workload: it is a DLIO workload");
	const struct dl_dlio_val *v = dl_dlio_key(k, "reader.batch_size");
	CHECK(v && v->kind == DL_DLIO_SCALAR && !strcmp(v->text, "7"),
	      "reader falls back to data_reader, the first of two keys wins: %s",
	      v ? v->text : "-");
	CHECK(v && v->line == 4 && v->column == 17, "place %u:%u", v ? v->line : 0,
	      v ? v->column : 0);
	v = dl_dlio_key(k, "train.computation_time");
	CHECK(v && v->kind == DL_DLIO_MAP, "a mapping");
	const struct dl_dlio_val *m = dl_dlio_child(k, v, "stdev");
	CHECK(m && !strcmp(m->text, "0.1"), "a mapping's child");
	CHECK(!dl_dlio_child(k, m, "x"), "a scalar has no children");
	CHECK(dl_dlio_key(k, "model")->kind == DL_DLIO_MAP, "model is a section here");
	v = dl_dlio_key(k, "checkpoint.optimization_groups");
	CHECK(v && v->kind == DL_DLIO_LIST && dl_dlio_nitems(k, v) == 3, "a list of three");
	CHECK(!strcmp(dl_dlio_item(k, v, 1)->text, "2"), "its second item");
	CHECK(dl_dlio_item(k, v, 2)->kind == DL_DLIO_MAP, "a mapping item stays one");
	CHECK(!dl_dlio_item(k, v, 3), "nothing past the end");
	CHECK(!dl_dlio_key(k, "checkpoint.missing") && !dl_dlio_key(k, "train.epochs.x"),
	      "absent keys");
	CHECK(!dl_dlio_key(k, "workload"), "lookups start inside workload:");

	char *buf = NULL;
	size_t len = 0;
	FILE *err = open_memstream(&buf, &len);
	dl_dlio_say(k, err, "tool: ", dl_dlio_key(k, "checkpoint.type"), "checkpoint.type",
		    "expected rank_zero");
	fclose(err);
	char want[128];
	snprintf(want, sizeof(want), "tool: %s:10:11: checkpoint.type: expected rank_zero\n", path);
	CHECK(buf && !strcmp(buf, want), "said %s", buf ? buf : "-");
	free(buf);
	dl_dlio_keys_free(k);
}

static void test_kinds_of_file(void)
{
	char path[64], why[256];
	int ret;
	struct dl_dlio_keys *k;

	k = load("datasets:\n  - name: x\nreader: {batch_size: 1}\n", path, &ret, why, sizeof(why));
	CHECK(!ret && k && !dl_dlio_keys_is_workload(k), "a dliofs config is not a workload");
	dl_dlio_keys_free(k);
	k = load("", path, &ret, why, sizeof(why));
	CHECK(!ret && k && !dl_dlio_keys_is_workload(k) && !dl_dlio_key(k, "reader"),
	      "an empty file has no keys");
	dl_dlio_keys_free(k);
	k = load("reader: [1, 2\n", path, &ret, why, sizeof(why));
	CHECK(ret == -EINVAL && !k && strstr(why, path) && strstr(why, ": YAML: "),
	      "bad YAML names the file: %s", why);
	k = load("a: &x [*x, *x]\nreader: {batch_size: 2}\n", path, &ret, why, sizeof(why));
	CHECK(!ret && k && !strcmp(dl_dlio_key(k, "reader.batch_size")->text, "2"),
	      "an alias that refers to itself ends: %d %s", ret, why);
	dl_dlio_keys_free(k);
	ret = dl_dlio_keys_load("/nonexistent/dliofs/w.yaml", &k, why, sizeof(why));
	CHECK(ret == -ENOENT && !k && !*why, "a missing file: %d", ret);
}

/* What dl_dlio_checkpoint said on err for a file. */
static int checkpoint_of(const char *text, struct dl_dlio_checkpoint *ck, char *said, size_t n,
			 char *path)
{
	char why[256];
	char *buf = NULL;
	size_t len = 0;
	int ret;
	struct dl_dlio_keys *k = load(text, path, &ret, why, sizeof(why));

	if (!k)
		return ret;
	FILE *err = open_memstream(&buf, &len);
	ret = dl_dlio_checkpoint(k, "t: ", err, ck);
	fclose(err);
	snprintf(said, n, "%s", buf ? buf : "");
	free(buf);
	dl_dlio_keys_free(k);
	return ret;
}

static void test_checkpoint(void)
{
	struct dl_dlio_checkpoint ck;
	char said[512], path[64], want[256];
	int ret;

	ret = checkpoint_of("train: {epochs: 1}\n", &ck, said, sizeof(said), path);
	CHECK(!ret && ck.model_size == 10240 && ck.num_layers == 1 && ck.nlayers == 2 &&
		  ck.layers[1] == 24740228 && ck.tp == 1 && ck.pp == 1 && !ck.all_ranks &&
		  !ck.ngroups && !*said,
	      "DLIO 2.0.0's defaults without a section: %d %s", ret, said);
	ret = checkpoint_of("checkpoint:\n  model_size: 4096\n  optimization_groups: [10, 20]\n"
			    "  num_layers: 4\n  layer_parameters: [7]\n  tensor_parallelism: 2\n"
			    "  pipeline_parallelism: 2\n  type: all_ranks\n",
			    &ck, said, sizeof(said), path);
	CHECK(!ret && ck.model_size == 4096 && ck.ngroups == 2 && ck.groups[1] == 20 &&
		  ck.num_layers == 4 && ck.nlayers == 1 && ck.layers[0] == 7 && ck.tp == 2 &&
		  ck.pp == 2 && ck.all_ranks,
	      "the section's keys: %d %s", ret, said);
	ret = checkpoint_of("checkpoint:\n  model_size: 1\n  type: every_rank\n", &ck, said,
			    sizeof(said), path);
	snprintf(want, sizeof(want),
		 "t: %s:3:9: checkpoint.type: expected rank_zero or all_ranks\n", path);
	CHECK(ret == -EINVAL && !strcmp(said, want), "a bad type, placed: %s", said);
	ret = checkpoint_of("checkpoint:\n  optimization_groups: [1, -2]\n", &ck, said,
			    sizeof(said), path);
	snprintf(want, sizeof(want),
		 "t: %s:2:28: checkpoint.optimization_groups: expected a whole number >= 0\n",
		 path);
	CHECK(ret == -EINVAL && !strcmp(said, want), "a negative size, placed: %s", said);
	ret = checkpoint_of("checkpoint: {num_layers: 3, pipeline_parallelism: 2}\n", &ck, said,
			    sizeof(said), path);
	CHECK(ret == -EINVAL && strstr(said, "must be a multiple") && strstr(said, path),
	      "DLIO's own refusal: %s", said);
}

int main(void)
{
	test_walk();
	test_kinds_of_file();
	test_checkpoint();
	return tap_done("dlio_keys");
}
