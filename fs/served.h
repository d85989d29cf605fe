/* The synthetic files whose pages the kernel may hold: `dliofs cache drop`
 * and a change of cache policy invalidate exactly those, so no page the
 * kernel cached before can serve a read the storage model never saw. */
#ifndef DLIOFS_FS_SERVED_H
#define DLIOFS_FS_SERVED_H

#include <stdint.h>

struct dl_node;
struct dl_served;

int dl_served_new(struct dl_served **out);
void dl_served_free(struct dl_served *s);
/* A synthetic file was opened (its pages may enter the page cache). */
int dl_served_mark(struct dl_served *s, const struct dl_node *n);
/* Call fn on every file marked since the last drain, and forget them.
 * Returns how many there were. */
uint64_t dl_served_drain(struct dl_served *s, void (*fn)(void *arg, const struct dl_node *n),
			 void *arg);

#endif
