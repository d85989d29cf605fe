/* DLIO's file naming (and, with classes, ImageNet's <class>/<class>_<k>.JPEG tree): <prefix>_<i>_of_<N>.<ext>[suffix], i zero-padded to len(str(N)),
 * inside <split>/ and, with subfolders > 1, <split>/<i mod n, zero-padded>/.
 * Names are computed from indices and parsed back in O(1): no tables. */
#ifndef DLIOFS_NAMING_H
#define DLIOFS_NAMING_H

#include <stddef.h>
#include <stdint.h>

#include "dliofs/dataset.h"

extern const char *const dl_split_dir[DL_SPLIT__COUNT]; /* "train", "valid" */

/* Subdirectories of a split: ImageNet classes when ds->classes > 0, else DLIO's
 * subfolders (0 or 1 = none). */
uint32_t dl_split_nsub(const struct dl_dataset *ds, uint32_t split);

/* File name (no directory). Returns its length, or -ENAMETOOLONG. */
int dl_name_file(const struct dl_dataset *ds, uint32_t split, uint64_t index, uint32_t part,
		 char *buf, size_t buflen);
/* Subfolder name for a subfolder number. Returns its length. */
int dl_name_subdir(const struct dl_dataset *ds, uint32_t split, uint32_t sub, char *buf,
		   size_t buflen);
/* Parse a file name; 0 and index/part, or -ENOENT if it is not one of ours. */
int dl_name_parse_file(const struct dl_dataset *ds, uint32_t split, const char *name,
		       uint64_t *index, uint32_t *part);
int dl_name_parse_subdir(const struct dl_dataset *ds, uint32_t split, const char *name,
			 uint32_t *sub);
/* Which subfolder file `index` lives in (0 when the split is flat). */
uint32_t dl_file_subdir(const struct dl_dataset *ds, uint32_t split, uint64_t index);
/* Files in subfolder `sub`: index = sub + k * nsub. Count of them. */
uint64_t dl_subdir_nfiles(const struct dl_dataset *ds, uint32_t split, uint32_t sub);
/* Relative path "<split>[/<sub>]/<file>" into buf. Returns length or -ENAMETOOLONG. */
int dl_name_relpath(const struct dl_dataset *ds, uint32_t split, uint64_t index, uint32_t part,
		    char *buf, size_t buflen);

#endif
