/* The namespace is arithmetic: names and inodes are computed from indices and
 * parsed back in O(1), so a 10-million-file dataset costs no memory. It
 * names what is computed: the root, the datasets, and the control directory
 * and its files (dliofs/ctl_client.h lists their names); below a backing
 * directory, names are the backing tree's. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dliofs/ctl_client.h"
#include "dliofs/naming.h"
#include "fs_i.h"

static int has_subdirs(const struct dl_dataset *ds, uint32_t split)
{
	return ds->classes > 0 || ds->subfolders[split] > 1;
}

int dl_node_from_ino(const struct dl_fs *fs, fuse_ino_t ino, struct dl_node *out)
{
	const struct dl_dataset *ds;

	memset(out, 0, sizeof(*out));
	if (ino == FUSE_ROOT_ID) {
		out->type = DL_NODE_ROOT;
		return 0;
	}
	out->type = dl_ino_type(ino);
	out->ds = dl_ino_ds(ino);
	out->split = dl_ino_split(ino);
	out->part = dl_ino_part(ino);
	out->index = dl_ino_index(ino);
	if (out->type == DL_NODE_CTL)
		return out->ds == 0 && out->split == 0 && out->part == 0 &&
				       out->index < DL_CTL__COUNT
			       ? 0
			       : -ENOENT;
	/* Below a backing directory the index is a handle: backing.c checks it. */
	if (out->type == DL_NODE_BACKING)
		return out->ds < fs->cfg->nbacking && out->split == 0 && out->part == 0 ? 0
											: -ENOENT;
	if (out->type < DL_NODE_DATASET || out->type > DL_NODE_FILE ||
	    out->ds >= fs->cfg->ndatasets || out->split >= DL_SPLIT__COUNT)
		return -ENOENT;
	ds = &fs->cfg->datasets[out->ds];
	switch (out->type) {
	case DL_NODE_SUBDIR:
		if (!has_subdirs(ds, out->split) || out->index >= dl_split_nsub(ds, out->split))
			return -ENOENT;
		break;
	case DL_NODE_FILE:
		if (out->index >= ds->files[out->split] ||
		    out->part >= dl_format_ops(ds->format)->nparts)
			return -ENOENT;
		break;
	default:
		break;
	}
	return 0;
}

int dl_node_file(struct dl_fs *fs, const struct dl_node *n, struct dl_file *f)
{
	if (n->type != DL_NODE_FILE)
		return -EISDIR;
	return dl_file_init(fs->fmt, &fs->cfg->datasets[n->ds], n->split, n->index, n->part, f);
}

static uint64_t dir_nsubdirs(const struct dl_fs *fs, const struct dl_node *n)
{
	const struct dl_dataset *ds;

	switch (n->type) {
	case DL_NODE_ROOT:
		return fs->cfg->ndatasets + fs->cfg->nbacking;
	case DL_NODE_DATASET:
		return DL_SPLIT__COUNT;
	case DL_NODE_SPLIT:
		ds = &fs->cfg->datasets[n->ds];
		return has_subdirs(ds, n->split) ? dl_split_nsub(ds, n->split) : 0;
	default:
		return 0;
	}
}

int dl_node_stat(struct dl_fs *fs, const struct dl_node *n, struct stat *st)
{
	struct dl_file f;
	int ret;

	if (n->type == DL_NODE_CTL || n->type == DL_NODE_BACKING)
		return -ENOENT;
	memset(st, 0, sizeof(*st));
	st->st_ino = dl_node_ino(n);
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_atim = st->st_mtim = st->st_ctim = fs->mount_time;
	st->st_blksize = (blksize_t)dl_fs_blksize(fs);
	if (n->type == DL_NODE_FILE) {
		ret = dl_node_file(fs, n, &f);
		if (ret)
			return ret;
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		/* Also named at the root (root_alias): two links, as a hard link. */
		if (n->split == DL_SPLIT_TRAIN && n->index == 0 && dl_ds_ops(f.ds)->root_alias) {
			char alias[256];

			if (dl_ds_ops(f.ds)->root_alias(f.ds, alias, sizeof(alias)) > 0)
				st->st_nlink = 2;
		}
		st->st_size = (off_t)f.size;
		st->st_blocks = (blkcnt_t)((f.size + 511) / 512);
		return 0;
	}
	/* With an overlay, the mount's owner may make names in it. */
	st->st_mode = S_IFDIR | (fs->cfg->overlay.path[0] ? 0755 : 0555);
	st->st_nlink = 2 + dir_nsubdirs(fs, n);
	st->st_size = 4096;
	return 0;
}

static int lookup_file(const struct dl_dataset *ds, const struct dl_node *parent,
		       const char *name, struct dl_node *out)
{
	uint64_t index;
	uint32_t part;

	if (dl_name_parse_file(ds, parent->split, name, &index, &part))
		return -ENOENT;
	/* With subfolders, a file is only visible in its own subfolder. */
	if (parent->type == DL_NODE_SUBDIR &&
	    dl_file_subdir(ds, parent->split, index) != parent->index)
		return -ENOENT;
	*out = (struct dl_node){.type = DL_NODE_FILE, .ds = parent->ds, .split = parent->split,
				.part = part, .index = index};
	return 0;
}

/* The k-th dataset with a root alias (its one train file under a second
 * name at the root, struct dl_format_ops.root_alias): its index, the name. */
static int root_alias(const struct dl_fs *fs, uint64_t k, unsigned *ds, char *name, size_t len)
{
	for (unsigned i = 0; i < fs->cfg->ndatasets; i++) {
		const struct dl_dataset *d = &fs->cfg->datasets[i];
		const struct dl_format_ops *ops = dl_ds_ops(d);

		if (!ops->root_alias || ops->root_alias(d, name, len) <= 0)
			continue;
		if (k-- == 0) {
			*ds = i;
			return 0;
		}
	}
	return -ENOENT;
}

fuse_ino_t dl_node_parent_ino(const struct dl_node *n)
{
	struct dl_node p = {.type = DL_NODE_ROOT};

	switch (n->type) {
	case DL_NODE_SPLIT:
		p = (struct dl_node){.type = DL_NODE_DATASET, .ds = n->ds};
		break;
	case DL_NODE_SUBDIR:
		p = (struct dl_node){.type = DL_NODE_SPLIT, .ds = n->ds, .split = n->split};
		break;
	default:
		break;	/* the root, a dataset, the control directory: the root */
	}
	return dl_node_ino(&p);
}

int dl_node_lookup(const struct dl_fs *fs, const struct dl_node *parent, const char *name,
		   struct dl_node *out)
{
	char alias[256];
	unsigned ads;
	const struct dl_dataset *ds;
	uint32_t sub;

	switch (parent->type) {
	case DL_NODE_ROOT:
		if (strcmp(name, DL_CTL_DIRNAME) == 0) {
			*out = (struct dl_node){.type = DL_NODE_CTL, .index = DL_CTL_DIR};
			return 0;
		}
		for (unsigned i = 0; i < fs->cfg->ndatasets; i++) {
			if (strcmp(fs->cfg->datasets[i].name, name) == 0) {
				*out = (struct dl_node){.type = DL_NODE_DATASET, .ds = i};
				return 0;
			}
		}
		for (unsigned i = 0; i < fs->cfg->nbacking; i++) {
			if (strcmp(fs->cfg->backing[i].at, name) == 0) {
				*out = (struct dl_node){.type = DL_NODE_BACKING, .ds = i};
				return 0;
			}
		}
		for (uint64_t k = 0; root_alias(fs, k, &ads, alias, sizeof(alias)) == 0; k++) {
			if (strcmp(alias, name) == 0) {
				*out = (struct dl_node){.type = DL_NODE_FILE, .ds = ads,
							.split = DL_SPLIT_TRAIN};
				return 0;
			}
		}
		return -ENOENT;
	case DL_NODE_DATASET:
		for (uint32_t s = 0; s < DL_SPLIT__COUNT; s++) {
			if (strcmp(dl_split_dir[s], name) == 0) {
				*out = (struct dl_node){.type = DL_NODE_SPLIT, .ds = parent->ds,
							.split = s};
				return 0;
			}
		}
		return -ENOENT;
	case DL_NODE_SPLIT:
		ds = &fs->cfg->datasets[parent->ds];
		if (has_subdirs(ds, parent->split)) {
			if (dl_name_parse_subdir(ds, parent->split, name, &sub))
				return -ENOENT;
			*out = (struct dl_node){.type = DL_NODE_SUBDIR, .ds = parent->ds,
						.split = parent->split, .index = sub};
			return 0;
		}
		return lookup_file(ds, parent, name, out);
	case DL_NODE_SUBDIR:
		return lookup_file(&fs->cfg->datasets[parent->ds], parent, name, out);
	case DL_NODE_CTL:
		if (parent->index != DL_CTL_DIR)
			return -ENOTDIR;
		for (unsigned i = 1; i < DL_CTL__COUNT; i++) {
			if (strcmp(name, dl_ctl_names[i]) == 0) {
				*out = (struct dl_node){.type = DL_NODE_CTL, .index = i};
				return 0;
			}
		}
		return -ENOENT;
	default:
		return -ENOTDIR;
	}
}

static int child_file(const struct dl_fs *fs, const struct dl_node *dir, uint64_t k,
		      struct dl_node *child, char *name, size_t namelen)
{
	const struct dl_dataset *ds = &fs->cfg->datasets[dir->ds];
	unsigned nparts = dl_format_ops(ds->format)->nparts;
	uint64_t nfiles, fk = k / nparts, index;
	uint32_t nsub = dl_split_nsub(ds, dir->split);

	if (dir->type == DL_NODE_SUBDIR) {
		nfiles = dl_subdir_nfiles(ds, dir->split, (uint32_t)dir->index);
		index = dir->index + fk * nsub;
	} else {
		nfiles = ds->files[dir->split];
		index = fk;
	}
	if (fk >= nfiles)
		return -ENOENT;
	*child = (struct dl_node){.type = DL_NODE_FILE, .ds = dir->ds, .split = dir->split,
				  .part = (uint32_t)(k % nparts), .index = index};
	return dl_name_file(ds, dir->split, index, child->part, name, namelen) < 0 ? -ENAMETOOLONG
										  : 0;
}

int dl_node_child(const struct dl_fs *fs, const struct dl_node *dir, uint64_t k,
		  struct dl_node *child, char *name, size_t namelen)
{
	const struct dl_dataset *ds;

	switch (dir->type) {
	case DL_NODE_ROOT:
		/* The datasets, the backing directories, then the root aliases. */
		if (k >= fs->cfg->ndatasets) {
			k -= fs->cfg->ndatasets;
			if (k >= fs->cfg->nbacking) {
				unsigned ads;

				if (root_alias(fs, k - fs->cfg->nbacking, &ads, name, namelen))
					return -ENOENT;
				*child = (struct dl_node){.type = DL_NODE_FILE, .ds = ads,
							  .split = DL_SPLIT_TRAIN};
				return 0;
			}
			*child = (struct dl_node){.type = DL_NODE_BACKING, .ds = (unsigned)k};
			snprintf(name, namelen, "%s", fs->cfg->backing[k].at);
			return 0;
		}
		*child = (struct dl_node){.type = DL_NODE_DATASET, .ds = (unsigned)k};
		snprintf(name, namelen, "%s", fs->cfg->datasets[k].name);
		return 0;
	case DL_NODE_DATASET:
		if (k >= DL_SPLIT__COUNT)
			return -ENOENT;
		*child = (struct dl_node){.type = DL_NODE_SPLIT, .ds = dir->ds, .split = (uint32_t)k};
		snprintf(name, namelen, "%s", dl_split_dir[k]);
		return 0;
	case DL_NODE_SPLIT:
		ds = &fs->cfg->datasets[dir->ds];
		if (has_subdirs(ds, dir->split)) {
			if (k >= dl_split_nsub(ds, dir->split))
				return -ENOENT;
			*child = (struct dl_node){.type = DL_NODE_SUBDIR, .ds = dir->ds,
						  .split = dir->split, .index = k};
			dl_name_subdir(ds, dir->split, (uint32_t)k, name, namelen);
			return 0;
		}
		return child_file(fs, dir, k, child, name, namelen);
	case DL_NODE_SUBDIR:
		return child_file(fs, dir, k, child, name, namelen);
	case DL_NODE_CTL:
		/* The control directory lists its files; the root does not list it. */
		if (dir->index != DL_CTL_DIR)
			return -ENOTDIR;
		if (k + 1 >= DL_CTL__COUNT)
			return -ENOENT;
		*child = (struct dl_node){.type = DL_NODE_CTL, .index = k + 1};
		snprintf(name, namelen, "%s", dl_ctl_names[k + 1]);
		return 0;
	default:
		return -ENOTDIR;
	}
}

int dl_node_path(const struct dl_fs *fs, uint64_t ino, char *buf, size_t len)
{
	const struct dl_dataset *ds;
	struct dl_node n;
	char sub[64];
	int ret, k;

	ret = dl_node_from_ino(fs, ino, &n);
	if (ret)
		return ret;
	switch (n.type) {
	case DL_NODE_ROOT:
		k = snprintf(buf, len, ".");
		break;
	case DL_NODE_CTL:
		k = n.index == DL_CTL_DIR ? snprintf(buf, len, "%s", DL_CTL_DIRNAME)
					  : snprintf(buf, len, "%s/%s", DL_CTL_DIRNAME,
						     dl_ctl_names[n.index]);
		break;
	case DL_NODE_DATASET:
		k = snprintf(buf, len, "%s", fs->cfg->datasets[n.ds].name);
		break;
	case DL_NODE_SPLIT:
		k = snprintf(buf, len, "%s/%s", fs->cfg->datasets[n.ds].name, dl_split_dir[n.split]);
		break;
	case DL_NODE_SUBDIR:
		ds = &fs->cfg->datasets[n.ds];
		dl_name_subdir(ds, n.split, (uint32_t)n.index, sub, sizeof(sub));
		k = snprintf(buf, len, "%s/%s/%s", ds->name, dl_split_dir[n.split], sub);
		break;
	case DL_NODE_FILE:
		ds = &fs->cfg->datasets[n.ds];
		k = snprintf(buf, len, "%s/", ds->name);
		if (k < 0 || (size_t)k >= len)
			return -ENAMETOOLONG;
		ret = dl_name_relpath(ds, n.split, n.index, n.part, buf + k, len - (size_t)k);
		return ret < 0 ? ret : k + ret;
	default:
		return -ENOENT;
	}
	return k < 0 || (size_t)k >= len ? -ENAMETOOLONG : k;
}

void dl_node_statvfs(const struct dl_fs *fs, struct statvfs *sv)
{
	uint64_t files = 0;

	for (unsigned i = 0; i < fs->cfg->ndatasets; i++)
		for (unsigned s = 0; s < DL_SPLIT__COUNT; s++)
			files += fs->cfg->datasets[i].files[s];
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = 4096;
	sv->f_frsize = 4096;
	sv->f_files = files;
	sv->f_namemax = 255;
}
