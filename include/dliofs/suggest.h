/* "Did you mean": the candidate a misspelled name most likely meant
 * (util/suggest.c). */
#ifndef DLIOFS_SUGGEST_H
#define DLIOFS_SUGGEST_H

#include <stddef.h>

/* The nearest of cands to s by case-insensitive edit distance (about one
 * edit per three letters), or a candidate s is a prefix of; NULL if none. */
const char *dl_suggest(const char *s, const char *const *cands, size_t ncands);

#endif
