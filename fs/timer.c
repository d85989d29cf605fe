/* The timer thread: parked replies in a min-heap by due time. It sleeps on a
 * condition variable until shortly before the earliest due time and spins the
 * last stretch, because timed waits alone overshoot by tens of microseconds. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

#include "dliofs/clock.h"
#include "fs_i.h"
#include "reply.h"

/* Sleep until this long before the due time, then spin. */
#define SPIN_NS 60000ULL

struct dl_timer {
	struct dl_fs *fs;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct dl_reply **heap;
	size_t n, cap;
	atomic_size_t parked; /* n, for dl_timer_idle without the lock */
	int stop;
};

uint64_t dl_now_ns(void) { return dl_mono_ns(); }

static int earlier(const struct dl_reply *a, const struct dl_reply *b)
{
	return a->send_ns < b->send_ns;
}

static void heap_up(struct dl_timer *t, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!earlier(t->heap[i], t->heap[p]))
			break;
		struct dl_reply *x = t->heap[i];
		t->heap[i] = t->heap[p];
		t->heap[p] = x;
		i = p;
	}
}

static void heap_down(struct dl_timer *t, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < t->n && earlier(t->heap[l], t->heap[m]))
			m = l;
		if (r < t->n && earlier(t->heap[r], t->heap[m]))
			m = r;
		if (m == i)
			break;
		struct dl_reply *x = t->heap[i];
		t->heap[i] = t->heap[m];
		t->heap[m] = x;
		i = m;
	}
}

/* Take entry i out of the heap. */
static struct dl_reply *heap_take(struct dl_timer *t, size_t i)
{
	struct dl_reply *r = t->heap[i];

	t->heap[i] = t->heap[--t->n];
	atomic_store_explicit(&t->parked, t->n, memory_order_relaxed);
	if (i < t->n) {
		heap_down(t, i);
		heap_up(t, i);
	}
	return r;
}

static struct dl_reply *heap_pop(struct dl_timer *t)
{
	return heap_take(t, 0);
}

static void *timer_main(void *arg)
{
	struct dl_timer *t = arg;

	/* The default 50 us timer slack would blur every due time. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	pthread_mutex_lock(&t->lock);
	for (;;) {
		if (t->n == 0) {
			if (t->stop)
				break;
			pthread_cond_wait(&t->cond, &t->lock);
			continue;
		}
		uint64_t due = t->heap[0]->send_ns, now = dl_now_ns();
		if (!t->stop && due > now + SPIN_NS) {
			uint64_t wake = due - SPIN_NS;
			struct timespec ts = {.tv_sec = (time_t)(wake / 1000000000ULL),
					      .tv_nsec = (long)(wake % 1000000000ULL)};
			pthread_cond_timedwait(&t->cond, &t->lock, &ts);
			continue;
		}
		if (!t->stop && due > now) {
			/* Spin without the lock so submitters are not held up. */
			pthread_mutex_unlock(&t->lock);
			while (dl_now_ns() < due)
				;
			pthread_mutex_lock(&t->lock);
			continue; /* an earlier reply may have arrived meanwhile */
		}
		struct dl_reply *r = heap_pop(t);
		pthread_mutex_unlock(&t->lock);
		dl_reply_send(t->fs, r);
		pthread_mutex_lock(&t->lock);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

int dl_timer_start(struct dl_fs *fs, struct dl_timer **out)
{
	struct dl_timer *t = calloc(1, sizeof(*t));
	pthread_condattr_t ca;
	int ret;

	if (!t)
		return -ENOMEM;
	t->fs = fs;
	t->cap = 1024;
	t->heap = calloc(t->cap, sizeof(*t->heap));
	if (!t->heap) {
		free(t);
		return -ENOMEM;
	}
	pthread_mutex_init(&t->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->cond, &ca);
	pthread_condattr_destroy(&ca);
	ret = pthread_create(&t->thread, NULL, timer_main, t);
	if (ret) {
		pthread_cond_destroy(&t->cond);
		pthread_mutex_destroy(&t->lock);
		free(t->heap);
		free(t);
		return -ret;
	}
	*out = t;
	return 0;
}

void dl_timer_stop(struct dl_timer *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	t->stop = 1;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
	pthread_join(t->thread, NULL);
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
	free(t->heap);
	free(t);
}

/* The client of a parked request was interrupted (a signal: kill -9, ^C):
 * answer EINTR now instead of at its due time, which may be far away. Called
 * by libfuse with the request's own lock held and the request alive, on a
 * FUSE worker. The timer thread may be sending the same request: whichever
 * takes it out of the heap under t->lock answers it, so the heap is searched
 * by the request itself (alive here) and r is never touched unless found. */
static void on_interrupt(fuse_req_t req, void *data)
{
	struct dl_timer *t = data;
	struct dl_reply *r = NULL;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n; i++) {
		if (t->heap[i]->req == req) {
			r = heap_take(t, i);
			break;
		}
	}
	pthread_mutex_unlock(&t->lock);
	if (r)
		dl_reply_interrupted(t->fs, r);
}

void dl_timer_park(struct dl_timer *t, struct dl_reply *r)
{
	/* Registered before r is in the heap (the timer could send and free
	 * it at once after); an interrupt that came earlier is seen below. */
	fuse_req_interrupt_func(r->req, on_interrupt, t);
	pthread_mutex_lock(&t->lock);
	/* Under t->lock: an interrupt after this finds r in the heap. */
	if (fuse_req_interrupted(r->req)) {
		pthread_mutex_unlock(&t->lock);
		dl_reply_interrupted(t->fs, r);
		return;
	}
	if (t->n == t->cap) {
		struct dl_reply **h = realloc(t->heap, 2 * t->cap * sizeof(*h));
		if (!h) {
			/* Out of memory: the reply goes now, before its due time (less
			 * shaping for this one request rather than a lost reply). */
			pthread_mutex_unlock(&t->lock);
			dl_reply_send(t->fs, r);
			return;
		}
		t->heap = h;
		t->cap *= 2;
	}
	t->heap[t->n++] = r;
	atomic_store_explicit(&t->parked, t->n, memory_order_relaxed);
	heap_up(t, t->n - 1);
	if (t->heap[0] == r)
		pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

int dl_timer_idle(struct dl_timer *t)
{
	return atomic_load_explicit(&t->parked, memory_order_relaxed) == 0;
}

void dl_timer_retime(struct dl_timer *t)
{
	struct dl_reply **v;
	size_t n;

	if (!t || !t->fs->pacer)
		return;
	pthread_mutex_lock(&t->lock);
	n = t->n;
	v = malloc((n ? n : 1) * sizeof(*v));
	if (!v) {
		/* They stay as they were: due no later than before. */
		pthread_mutex_unlock(&t->lock);
		return;
	}
	/* In order of due time, so they queue again in the order they had. */
	for (size_t i = 0; i < n; i++)
		v[i] = heap_pop(t);
	for (size_t i = 0; i < n; i++) {
		dl_reply_retime(t->fs, v[i]);
		t->heap[t->n++] = v[i];
		heap_up(t, t->n - 1);
	}
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
	free(v);
}
