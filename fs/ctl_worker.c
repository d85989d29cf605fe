/* The control thread: control transactions run here, not in a FUSE worker.
 * A transaction may open files (an empirical latency table, a trace target)
 * that lie on this very mount; done inside the only worker (--threads 1),
 * that open would wait for the worker that waits for it. The worker hands
 * the job over and returns to serve; this thread answers the request when
 * the job is done, as the timer thread answers parked requests. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

#include "control.h"
#include "fs_i.h"
#include "reply.h"

struct job {
	struct job *next;
	fuse_req_t req;
	int (*run)(struct dl_fs *fs, void *arg);
	void (*after)(void *arg);
	void *arg;
};

struct dl_ctl_worker {
	struct dl_fs *fs;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job *head, *tail;
	int quiet;	/* the connection is going: no more answers */
	int stop;
};


static void *worker_main(void *arg)
{
	struct dl_ctl_worker *w = arg;
	struct job *j;
	int ret;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		if (!w->head) {
			if (w->stop)
				break;
			pthread_cond_wait(&w->cond, &w->lock);
			continue;
		}
		j = w->head;
		w->head = j->next;
		if (!w->head)
			w->tail = NULL;
		if (w->quiet) {
			/* Its handle is freed with the others on the way out. */
			fuse_reply_none(j->req);
			free(j);
			continue;
		}
		pthread_mutex_unlock(&w->lock);
		ret = j->run(w->fs, j->arg);
		if (j->after)
			j->after(j->arg);
		pthread_mutex_lock(&w->lock);
		/* Under the lock: once quiet is set, nothing more is written to
		 * the session, which is then torn down. */
		if (w->quiet)
			fuse_reply_none(j->req);
		else
			dl_reply_nodev(j->req, 1, 0, 0, -ret);
		free(j);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int dl_ctl_worker_start(struct dl_fs *fs, struct dl_ctl_worker **out)
{
	struct dl_ctl_worker *w = calloc(1, sizeof(*w));
	sigset_t all, old;
	int ret;

	if (!w)
		return -ENOMEM;
	w->fs = fs;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	/* Signals are the session loop's to handle. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&w->thread, NULL, worker_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		pthread_cond_destroy(&w->cond);
		pthread_mutex_destroy(&w->lock);
		free(w);
		return -ret;
	}
	pthread_setname_np(w->thread, "dl-ctl");
	*out = w;
	return 0;
}

int dl_ctl_worker_submit(struct dl_ctl_worker *w, fuse_req_t req,
			 int (*run)(struct dl_fs *fs, void *arg), void (*after)(void *arg),
			 void *arg)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->req = req;
	j->run = run;
	j->after = after;
	j->arg = arg;
	pthread_mutex_lock(&w->lock);
	if (w->tail)
		w->tail->next = j;
	else
		w->head = j;
	w->tail = j;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	return 0;
}

void dl_ctl_worker_quiesce(struct dl_ctl_worker *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->quiet = 1;
	w->stop = 1;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

void dl_ctl_worker_stop(struct dl_ctl_worker *w)
{
	if (!w)
		return;
	dl_ctl_worker_quiesce(w);
	pthread_join(w->thread, NULL);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
