//! Runs a stage's items on the runtime's worker threads, a fixed number at a time.
//!
//! A stage prepares each item on its own task (preparing may borrow the stage's inputs: the
//! documents, the retriever) into a future that borrows nothing, which is spawned on the
//! runtime at once and runs on a worker thread while the stage prepares the next; the stage
//! collects what finishes and prepares another item for each slot that frees up, also while
//! it waits for the response cache ([`Pool::while_preparing`]). The items wait for the LLM
//! client's own concurrency limit with their requests ready, so a reply that frees a slot of
//! the client lets the next request go at once, whatever the stage is doing.
//!
//! Each item is its own task rather than one of a set of workers taking items from a shared
//! queue: handing that queue from one worker to the next took a wake-up each, and made the
//! first round of requests of a stage leave up to milliseconds later than they were ready.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tokio::task::JoinSet;

/// An item prepared to run on a worker: a future that borrows nothing.
pub(crate) type Owned<O> = Pin<Box<dyn Future<Output = O> + Send + 'static>>;

/// Items of one stage pass in progress: prepared on the stage's task, run as tasks of their
/// own. Preparing yields `Ok` with the future to run, or `Err` with the item's outcome when
/// there is nothing to run (it failed already).
pub(crate) struct Pool<I, F, P, O>
where
    I: Iterator,
    F: FnMut(I::Item) -> P,
    P: Future<Output = Result<Owned<O>, O>>,
{
    inputs: I,
    inputs_left: bool,
    prepare: F,
    /// Items being prepared or running at most.
    concurrency: usize,
    /// Items being prepared.
    preparing: FuturesUnordered<Pin<Box<P>>>,
    running: JoinSet<O>,
    /// Outcomes of items that finished (or failed while being prepared), not yet taken.
    finished: VecDeque<O>,
}

impl<I, F, P, O> Pool<I, F, P, O>
where
    I: Iterator,
    F: FnMut(I::Item) -> P,
    P: Future<Output = Result<Owned<O>, O>>,
    O: Send + 'static,
{
    /// A pool keeping `concurrency` items in progress; must run inside a tokio runtime.
    /// `n_inputs` sizes the buffers.
    pub(crate) fn new(inputs: I, n_inputs: usize, concurrency: usize, prepare: F) -> Self {
        let concurrency = concurrency.max(1);
        Pool {
            inputs,
            inputs_left: true,
            prepare,
            concurrency,
            preparing: FuturesUnordered::new(),
            running: JoinSet::new(),
            finished: VecDeque::with_capacity(concurrency.min(n_inputs)),
        }
    }

    /// Waits for at least one item to finish and keeps gathering what finishes until
    /// `not_before` (or until every item is done), then returns every one finished by then;
    /// `None` when all are done. Records are thus written in groups rather than one by one
    /// when items finish a few hundred microseconds apart; the items go on meanwhile. A
    /// panic in an item is raised here.
    pub(crate) async fn next_batch_after(
        &mut self,
        not_before: tokio::time::Instant,
    ) -> Option<Vec<O>> {
        let mut wait = std::pin::pin!(tokio::time::sleep_until(not_before));
        std::future::poll_fn(|cx| {
            let all_done = self.poll_progress(cx);
            if self.finished.is_empty() {
                return if all_done {
                    Poll::Ready(None)
                } else {
                    Poll::Pending
                };
            }
            if all_done || wait.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Some(self.finished.drain(..).collect()));
            }
            Poll::Pending
        })
        .await
    }

    /// Runs `work` while taking in what finishes and preparing items for the slots it frees,
    /// so that the client does not run dry while the stage waits (for the response cache's
    /// writer, say).
    pub(crate) async fn while_preparing<T>(&mut self, work: impl Future<Output = T>) -> T {
        let mut work = std::pin::pin!(work);
        std::future::poll_fn(|cx| {
            self.poll_progress(cx);
            work.as_mut().poll(cx)
        })
        .await
    }

    /// Takes in the outcomes of items that finished and prepares and spawns inputs into the
    /// free slots, until neither can go on without waiting; whether every item is done
    /// (outcomes not yet taken aside).
    fn poll_progress(&mut self, cx: &mut Context<'_>) -> bool {
        loop {
            let mut progressed = false;
            while let Poll::Ready(Some(ended)) = self.running.poll_join_next(cx) {
                match ended {
                    Ok(outcome) => self.finished.push_back(outcome),
                    Err(error) => match error.try_into_panic() {
                        Ok(panic) => std::panic::resume_unwind(panic),
                        Err(error) => panic!("a stage item ended without finishing: {error}"),
                    },
                }
                progressed = true;
            }
            while self.inputs_left && self.in_progress() < self.concurrency {
                let Some(input) = self.inputs.next() else {
                    self.inputs_left = false;
                    break;
                };
                self.preparing.push(Box::pin((self.prepare)(input)));
                progressed = true;
            }
            while let Poll::Ready(Some(prepared)) = self.preparing.poll_next_unpin(cx) {
                match prepared {
                    Ok(item) => {
                        self.running.spawn(item);
                    }
                    Err(outcome) => self.finished.push_back(outcome),
                }
                progressed = true;
            }
            if !progressed {
                return !self.inputs_left && self.preparing.is_empty() && self.running.is_empty();
            }
        }
    }

    /// Takes no further input: the items in progress finish and are returned as usual, then
    /// the pool is done.
    pub(crate) fn stop_taking_inputs(&mut self) {
        self.inputs_left = false;
    }

    /// Items being prepared or running (an outcome waiting to be taken holds no slot).
    fn in_progress(&self) -> usize {
        self.preparing.len() + self.running.len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use tokio::sync::mpsc;

    use super::*;

    /// Counts items running now and the most at once.
    #[derive(Default)]
    struct Gauge {
        now: AtomicUsize,
        max: AtomicUsize,
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_item_finishes_once_with_at_most_the_limit_running() {
        let gauge = Arc::new(Gauge::default());
        let mut pool = Pool::new(0..100u32, 100, 7, |n| {
            let gauge = Arc::clone(&gauge);
            // Every tenth item fails while being prepared, the rest run on a worker.
            std::future::ready(if n % 10 == 3 {
                Err(Err(n))
            } else {
                Ok(Box::pin(async move {
                    let now = gauge.now.fetch_add(1, Ordering::SeqCst) + 1;
                    gauge.max.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(1 + u64::from(n % 3))).await;
                    gauge.now.fetch_sub(1, Ordering::SeqCst);
                    Ok(n)
                }) as Owned<Result<u32, u32>>)
            })
        });
        let mut done = Vec::new();
        while let Some(batch) = pool.next_batch_after(tokio::time::Instant::now()).await {
            assert!(!batch.is_empty());
            done.extend(batch);
        }
        done.sort_by_key(|outcome| match outcome {
            Ok(n) | Err(n) => *n,
        });
        let expected: Vec<Result<u32, u32>> = (0..100)
            .map(|n| if n % 10 == 3 { Err(n) } else { Ok(n) })
            .collect();
        assert_eq!(done, expected);
        let max = gauge.max.load(Ordering::SeqCst);
        assert!((2..=7).contains(&max), "{max} at once");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn after_stop_taking_inputs_the_items_in_progress_finish_and_no_other_starts() {
        let started = Arc::new(AtomicUsize::new(0));
        let mut pool = Pool::new(0..100u32, 100, 4, |n| {
            let started = Arc::clone(&started);
            std::future::ready(Ok(Box::pin(async move {
                started.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
                n
            }) as Owned<u32>))
        });
        let first = pool
            .next_batch_after(tokio::time::Instant::now())
            .await
            .expect("items");
        pool.stop_taking_inputs();
        let mut done = first.len();
        while let Some(batch) = pool.next_batch_after(tokio::time::Instant::now()).await {
            done += batch.len();
        }
        // Every item that was taken finished; at most one round more than the first batch.
        let started = started.load(Ordering::SeqCst);
        assert_eq!(done, started);
        assert!(started <= first.len() + 4, "{started} started");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn workers_are_fed_while_the_stage_waits() {
        let (count, counted) = tokio::sync::watch::channel(0usize);
        let count = Arc::new(count);
        let mut pool = Pool::new(0..20u32, 20, 2, |n| {
            let count = Arc::clone(&count);
            std::future::ready(Ok(Box::pin(async move {
                count.send_modify(|done| *done += 1);
                n
            }) as Owned<u32>))
        });
        let first = pool
            .next_batch_after(tokio::time::Instant::now())
            .await
            .expect("items")
            .len();
        // Twenty items through a queue of two: done only if items are prepared meanwhile.
        let mut counted = counted.clone();
        let all_ran = pool.while_preparing(counted.wait_for(|&done| done == 20));
        tokio::time::timeout(Duration::from_secs(10), all_ran)
            .await
            .expect("the workers ran dry while the stage waited")
            .unwrap();
        let mut rest = 0;
        while let Some(batch) = pool.next_batch_after(tokio::time::Instant::now()).await {
            rest += batch.len();
        }
        assert_eq!(first + rest, 20, "every outcome is delivered once");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_gathers_what_finishes_until_its_time() {
        // Three items finish within 20 ms, three more after half a second.
        let mut pool = Pool::new(0..6u64, 6, 6, |n| {
            std::future::ready(Ok(Box::pin(async move {
                let ms = if n < 3 { 10 * n } else { 500 + 10 * n };
                tokio::time::sleep(Duration::from_millis(ms)).await;
                n
            }) as Owned<u64>))
        });
        let started = tokio::time::Instant::now();
        let first = pool
            .next_batch_after(started + Duration::from_millis(200))
            .await
            .expect("items");
        let waited = started.elapsed();
        assert_eq!(first.len(), 3, "{first:?}");
        assert!(
            waited >= Duration::from_millis(200) && waited < Duration::from_millis(500),
            "{waited:?}"
        );
        // A time already past returns as soon as something finishes; the rest follow.
        let mut rest = Vec::new();
        while let Some(batch) = pool.next_batch_after(tokio::time::Instant::now()).await {
            rest.extend(batch);
        }
        rest.sort_unstable();
        assert_eq!(rest, vec![3, 4, 5]);
    }

    #[tokio::test]
    async fn no_items_is_done_at_once() {
        let mut pool = Pool::new(std::iter::empty::<u32>(), 0, 4, |_| {
            std::future::ready(Err::<Owned<u32>, u32>(0))
        });
        assert!(
            pool.next_batch_after(tokio::time::Instant::now())
                .await
                .is_none()
        );
    }

    #[tokio::test]
    #[should_panic(expected = "item 5 broke")]
    async fn a_panic_in_an_item_is_raised_by_the_stage() {
        let mut pool = Pool::new(0..10u32, 10, 3, |n| {
            std::future::ready(Ok(Box::pin(async move {
                assert!(n != 5, "item {n} broke");
                n
            }) as Owned<u32>))
        });
        while pool
            .next_batch_after(tokio::time::Instant::now())
            .await
            .is_some()
        {}
    }

    #[tokio::test]
    async fn dropping_the_pool_stops_its_items() {
        /// Reports an item dropped before it finished.
        struct Unfinished(Option<mpsc::UnboundedSender<()>>);
        impl Drop for Unfinished {
            fn drop(&mut self) {
                if let Some(stopped) = self.0.take() {
                    let _ = stopped.send(());
                }
            }
        }
        let (stopped, mut stops) = mpsc::unbounded_channel();
        let mut pool = Pool::new(0..4u32, 4, 4, |n| {
            let mut unfinished = Unfinished(Some(stopped.clone()));
            std::future::ready(Ok(Box::pin(async move {
                if n > 0 {
                    std::future::pending::<()>().await;
                }
                drop(unfinished.0.take());
                n
            }) as Owned<u32>))
        });
        assert_eq!(
            pool.next_batch_after(tokio::time::Instant::now()).await,
            Some(vec![0])
        );
        drop(pool);
        drop(stopped);
        // The three items still running are dropped, and nothing else holds a sender.
        for _ in 0..3 {
            stops.recv().await.expect("an item was stopped");
        }
        assert!(stops.recv().await.is_none());
    }
}
