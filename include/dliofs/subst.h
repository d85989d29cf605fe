/* A token replaced by a value in a string (util/subst.c): {rank} in a
 * cluster node's mountpoint and paths, {mount} and {workers} in a job's
 * arguments. */
#ifndef DLIOFS_SUBST_H
#define DLIOFS_SUBST_H

#include <stddef.h>

/* s with every tok (not empty) replaced by with, into out (len bytes, NUL included):
 * 0, or -ENAMETOOLONG when it does not fit. */
int dl_subst_into(const char *s, const char *tok, const char *with, char *out, size_t len);

/* The same, malloc'd; NULL when out of memory. */
char *dl_subst(const char *s, const char *tok, const char *with);

#endif
