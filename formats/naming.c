/* DLIO's naming, computed and parsed without tables. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dliofs/format.h"
#include "dliofs/naming.h"

const char *const dl_split_dir[DL_SPLIT__COUNT] = {"train", "valid"};

static unsigned ndigits(uint64_t n)
{
	unsigned d = 1;
	while (n >= 10) {
		n /= 10;
		d++;
	}
	return d;
}

uint32_t dl_split_nsub(const struct dl_dataset *ds, uint32_t split)
{
	return ds->classes ? ds->classes : ds->subfolders[split];
}

/* ImageNet's tree: <split>/n%08u/n%08u_<k>.JPEG, file i in class i mod C as the
 k-th (k = i / C), so torchvision's ImageFolder and Keras find their classes. */
static const char *class_ext(const struct dl_dataset *ds)
{
	const struct dl_format_ops *ops = dl_ds_ops(ds);

	return ops->class_ext ? ops->class_ext : ops->ext;
}

int dl_name_file(const struct dl_dataset *ds, uint32_t split, uint64_t index, uint32_t part,
		 char *buf, size_t buflen)
{
	const struct dl_format_ops *ops = dl_format_ops(ds->format);
	uint64_t n = ds->files[split];
	int len;

	if (ds->classes) {
		len = snprintf(buf, buflen, "n%08u_%llu.%s", (unsigned)(index % ds->classes),
			       (unsigned long long)(index / ds->classes), class_ext(ds));
		if (len < 0 || (size_t)len >= buflen)
			return -ENAMETOOLONG;
		return len;
	}
	len = snprintf(buf, buflen, "%s_%0*llu_of_%llu.%s%s", ds->file_prefix, (int)ndigits(n),
			   (unsigned long long)index, (unsigned long long)n, ops->ext,
			   part ? ops->part_suffix[part] : "");
	if (len < 0 || (size_t)len >= buflen)
		return -ENAMETOOLONG;
	return len;
}

int dl_name_subdir(const struct dl_dataset *ds, uint32_t split, uint32_t sub, char *buf,
		   size_t buflen)
{
	int len = ds->classes ? snprintf(buf, buflen, "n%08u", sub)
			      : snprintf(buf, buflen, "%0*u", (int)ndigits(ds->subfolders[split]), sub);
	if (len < 0 || (size_t)len >= buflen)
		return -ENAMETOOLONG;
	return len;
}

/* Parse exactly `width` decimal digits (width 0: any count, no leading zero
 * unless the value is 0). */
static int parse_digits(const char **p, unsigned width, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	unsigned n = 0;

	while (*s >= '0' && *s <= '9') {
		if (v > (UINT64_MAX - 9) / 10)
			return -ENOENT;
		v = v * 10 + (uint64_t)(*s - '0');
		s++;
		n++;
	}
	if (n == 0 || (width && n != width) || (!width && n > 1 && **p == '0'))
		return -ENOENT;
	*p = s;
	*out = v;
	return 0;
}

int dl_name_parse_file(const struct dl_dataset *ds, uint32_t split, const char *name,
		       uint64_t *index, uint32_t *part)
{
	const struct dl_format_ops *ops = dl_format_ops(ds->format);
	size_t plen = strlen(ds->file_prefix), elen = strlen(ops->ext);
	uint64_t n = ds->files[split], idx, total, cls, k;
	const char *p = name;

	if (ds->classes) {
		if (*p++ != 'n' || parse_digits(&p, 8, &cls) || *p++ != '_' ||
		    parse_digits(&p, 0, &k) || *p++ != '.' || strcmp(p, class_ext(ds)) != 0 ||
		    cls >= ds->classes || k > (UINT64_MAX - cls) / ds->classes)
			return -ENOENT;
		idx = k * ds->classes + cls;
		if (idx >= n)
			return -ENOENT;
		*index = idx;
		*part = 0;
		return 0;
	}
	if (strncmp(p, ds->file_prefix, plen) != 0 || p[plen] != '_')
		return -ENOENT;
	p += plen + 1;
	if (parse_digits(&p, ndigits(n), &idx) || strncmp(p, "_of_", 4) != 0)
		return -ENOENT;
	p += 4;
	if (parse_digits(&p, 0, &total) || total != n || idx >= n || *p != '.')
		return -ENOENT;
	p++;
	if (strncmp(p, ops->ext, elen) != 0)
		return -ENOENT;
	p += elen;
	for (uint32_t k = 0; k < ops->nparts; k++) {
		const char *suf = k ? ops->part_suffix[k] : "";
		if (strcmp(p, suf) == 0) {
			*index = idx;
			*part = k;
			return 0;
		}
	}
	return -ENOENT;
}

int dl_name_parse_subdir(const struct dl_dataset *ds, uint32_t split, const char *name,
			 uint32_t *sub)
{
	uint32_t nsub = dl_split_nsub(ds, split);
	const char *p = name;
	uint64_t v;

	if (ds->classes) {
		if (*p++ != 'n' || parse_digits(&p, 8, &v) || *p || v >= nsub)
			return -ENOENT;
	} else if (nsub <= 1 || parse_digits(&p, ndigits(nsub), &v) || *p || v >= nsub) {
		return -ENOENT;
	}
	*sub = (uint32_t)v;
	return 0;
}

uint32_t dl_file_subdir(const struct dl_dataset *ds, uint32_t split, uint64_t index)
{
	uint32_t nsub = dl_split_nsub(ds, split);
	return nsub > 1 ? (uint32_t)(index % nsub) : 0;
}

uint64_t dl_subdir_nfiles(const struct dl_dataset *ds, uint32_t split, uint32_t sub)
{
	uint32_t nsub = dl_split_nsub(ds, split);
	uint64_t n = ds->files[split];

	if (nsub <= 1)
		return n;
	if (sub >= nsub)
		return 0;
	return n / nsub + (sub < n % nsub ? 1 : 0);
}

int dl_name_relpath(const struct dl_dataset *ds, uint32_t split, uint64_t index, uint32_t part,
		    char *buf, size_t buflen)
{
	int len = snprintf(buf, buflen, "%s/", dl_split_dir[split]), n;

	if (len < 0 || (size_t)len >= buflen)
		return -ENAMETOOLONG;
	if (dl_split_nsub(ds, split) > 1 || ds->classes) {
		n = dl_name_subdir(ds, split, dl_file_subdir(ds, split, index), buf + len,
				   buflen - len);
		if (n < 0 || (size_t)(len + n + 1) >= buflen)
			return -ENAMETOOLONG;
		len += n;
		buf[len++] = '/';
		buf[len] = 0;
	}
	n = dl_name_file(ds, split, index, part, buf + len, buflen - len);
	if (n < 0)
		return n;
	return len + n;
}
