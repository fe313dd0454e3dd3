"""An in-process RQ worker for tests whose `work(burst=True)` returns when its queues are empty, not a minute later.

RQ (3.0) ends a worker by unsubscribing its command channel and then stopping the pubsub thread, which redis-py
(8.2) joins without a bound. When that thread has already read the unsubscribe's confirmation, it waits for a new
subscription for its whole sleep time (RQ passes 60 s) before it looks at the stop flag again: `work()` returned
about 60 s late in 2 of 5 runs of the agent cancel test on a loaded machine (the thread's stack was in
`PubSub.get_message`, the worker's in `unsubscribe`)."""

from __future__ import annotations

from rq import SimpleWorker


class PromptSimpleWorker(SimpleWorker):
    def unsubscribe(self) -> None:
        if self.pubsub_thread:
            # The flag first, without waiting: the unsubscribe's confirmation then wakes the thread into an exit.
            self.pubsub_thread.stop(timeout=0)
        super().unsubscribe()
