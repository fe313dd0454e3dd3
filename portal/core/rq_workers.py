"""RQ worker classes that stop when asked, not a minute later.

RQ (3.0) ends a worker by unsubscribing its command channel and then stopping the pubsub thread, which redis-py
(8.2) joins without a bound. When that thread has already read the unsubscribe's confirmation, it waits for a new
subscription for its whole sleep time (RQ passes 60 s) before it looks at the stop flag again: a burst worker's
`work()` returned about 60 s late in 2 of 5 runs of the agent cancel test on a loaded machine (the thread's stack
was in `PubSub.get_message`, the worker's in `unsubscribe`), and a stopping `rqworker` or `gpu_worker` waited the
same minute. Setting the flag first, without waiting, lets the confirmation wake the thread into its exit."""

from __future__ import annotations

from rq import SimpleWorker, Worker


class PromptUnsubscribe:
    def unsubscribe(self):
        if self.pubsub_thread:
            self.pubsub_thread.stop(timeout=0)
        super().unsubscribe()


class PromptWorker(PromptUnsubscribe, Worker):
    """`manage.py rqworker`'s class (settings.RQ["WORKER_CLASS"])."""


class PromptSimpleWorker(PromptUnsubscribe, SimpleWorker):
    """The in-process worker tests drain queues with."""
