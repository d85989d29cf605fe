/* DLIO's naming: formatting, zero padding, subfolders, and parsing back. */
#include <errno.h>
#include <string.h>

#include "dliofs/format.h"
#include "dliofs/naming.h"
#include "tap.h"

static struct dl_dataset mk(enum dl_format f, uint64_t ntrain, uint32_t nsub)
{
	struct dl_dataset ds;
	memset(&ds, 0, sizeof(ds));
	strcpy(ds.name, "d");
	strcpy(ds.file_prefix, "img");
	ds.format = f;
	ds.files[DL_SPLIT_TRAIN] = ntrain;
	ds.files[DL_SPLIT_VALID] = 3;
	ds.subfolders[DL_SPLIT_TRAIN] = nsub;
	ds.samples_per_file = 1;
	ds.sample_size = (struct dl_dist){16, 0, 16, 16};
	return ds;
}

int main(void)
{
	char buf[256];
	uint64_t idx;
	uint32_t part, sub;
	struct dl_dataset ds = mk(DL_FMT_NPZ, 168, 0);

	CHECK(dl_name_file(&ds, 0, 7, 0, buf, sizeof(buf)) > 0 &&
		      !strcmp(buf, "img_007_of_168.npz"), "%s", buf);
	CHECK(dl_name_relpath(&ds, 0, 7, 0, buf, sizeof(buf)) > 0 &&
		      !strcmp(buf, "train/img_007_of_168.npz"), "%s", buf);
	CHECK(dl_name_parse_file(&ds, 0, "img_007_of_168.npz", &idx, &part) == 0 && idx == 7 &&
		      part == 0, "parse");
	CHECK(dl_name_parse_file(&ds, 0, "img_7_of_168.npz", &idx, &part) == -ENOENT, "padding");
	CHECK(dl_name_parse_file(&ds, 0, "img_168_of_168.npz", &idx, &part) == -ENOENT, "range");
	CHECK(dl_name_parse_file(&ds, 0, "img_007_of_169.npz", &idx, &part) == -ENOENT, "total");
	CHECK(dl_name_parse_file(&ds, 0, "img_007_of_168.npy", &idx, &part) == -ENOENT, "ext");
	CHECK(dl_name_parse_file(&ds, 0, "img_007_of_168.npz.x", &idx, &part) == -ENOENT, "tail");
	CHECK(dl_name_parse_file(&ds, 0, "xyz_007_of_168.npz", &idx, &part) == -ENOENT, "prefix");
	CHECK(dl_name_parse_file(&ds, 0, "img_-07_of_168.npz", &idx, &part) == -ENOENT, "sign");
	CHECK(dl_name_parse_file(&ds, 0, "img_007_of_0168.npz", &idx, &part) == -ENOENT, "lead 0");
	CHECK(dl_name_parse_file(&ds, 1, "img_2_of_3.npz", &idx, &part) == 0 && idx == 2, "valid");

	/* Round trip every name of a 1000-file split. */
	struct dl_dataset big = mk(DL_FMT_NPZ, 1000, 0);
	unsigned bad = 0;
	for (uint64_t i = 0; i < 1000; i++) {
		dl_name_file(&big, 0, i, 0, buf, sizeof(buf));
		if (dl_name_parse_file(&big, 0, buf, &idx, &part) || idx != i)
			bad++;
	}
	CHECK(bad == 0, "%u round trips failed", bad);
	CHECK(dl_name_file(&big, 0, 0, 0, buf, sizeof(buf)) > 0 &&
		      !strcmp(buf, "img_0000_of_1000.npz"), "%s", buf);

	/* Subfolders: file i in subfolder i mod n, subfolder names padded. */
	struct dl_dataset s = mk(DL_FMT_NPZ, 25, 12);
	CHECK(dl_file_subdir(&s, 0, 14) == 2, "subdir of 14");
	CHECK(dl_name_relpath(&s, 0, 14, 0, buf, sizeof(buf)) > 0 &&
		      !strcmp(buf, "train/02/img_14_of_25.npz"), "%s", buf);
	CHECK(dl_name_parse_subdir(&s, 0, "02", &sub) == 0 && sub == 2, "parse subdir");
	CHECK(dl_name_parse_subdir(&s, 0, "2", &sub) == -ENOENT, "subdir padding");
	CHECK(dl_name_parse_subdir(&s, 0, "12", &sub) == -ENOENT, "subdir range");
	uint64_t tot = 0;
	for (uint32_t k = 0; k < 12; k++)
		tot += dl_subdir_nfiles(&s, 0, k);
	CHECK(tot == 25 && dl_subdir_nfiles(&s, 0, 0) == 3 && dl_subdir_nfiles(&s, 0, 1) == 2,
	      "subdir counts");
	return tap_done("naming");
}
