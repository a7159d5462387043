//! Runs a stage's items on the runtime's worker threads, a fixed number at a time.
//!
//! A stage prepares each item on its own task (preparing may borrow the stage's inputs: the
//! documents, the retriever) into a future that borrows nothing; `concurrency` worker tasks
//! take prepared items from a queue and run them one after another, and the stage collects
//! what they finish. The stage's own task is thus off the path from one item to the next: a
//! worker that finishes an item starts the next prepared one at once, while the stage writes
//! records and keeps up to `concurrency` items prepared ahead, also while it waits for the
//! response cache ([`Pool::while_preparing`]).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tokio::sync::Mutex;
use tokio::sync::mpsc::error::{SendError, TrySendError};
use tokio::sync::mpsc::{self, OwnedPermit};
use tokio::task::JoinSet;

/// An item prepared to run on a worker: a future that borrows nothing.
pub(crate) type Owned<O> = Pin<Box<dyn Future<Output = O> + Send + 'static>>;

/// A slot in the workers' queue, reserved before an item is prepared.
type Slot<O> = OwnedPermit<Owned<O>>;

/// Waiting for a slot to free up (a worker to take an item).
type Reserving<O> = Pin<Box<dyn Future<Output = Result<Slot<O>, SendError<()>>> + Send>>;

/// Items of one stage pass in progress: prepared on the stage's task, run on worker tasks.
/// Preparing yields `Ok` with the future to run, or `Err` with the item's outcome when there is
/// nothing to run (it failed already).
pub(crate) struct Pool<I, F, P, O>
where
    I: Iterator,
    F: FnMut(I::Item) -> P,
    P: Future<Output = Result<Owned<O>, O>>,
{
    inputs: I,
    inputs_left: bool,
    prepare: F,
    /// Items being prepared, each holding its slot in the queue.
    preparing: FuturesUnordered<Preparing<P, O>>,
    /// The workers' queue; `None` once every input has a slot.
    queue: Option<mpsc::Sender<Owned<O>>>,
    reserving: Option<Reserving<O>>,
    /// Outcomes of items that failed while being prepared.
    failed: VecDeque<O>,
    finished: mpsc::UnboundedReceiver<O>,
    workers: JoinSet<()>,
}

/// An item being prepared and its slot.
struct Preparing<P, O> {
    prepare: Pin<Box<P>>,
    slot: Option<Slot<O>>,
}

impl<P, O> Future for Preparing<P, O>
where
    P: Future<Output = Result<Owned<O>, O>>,
{
    type Output = (Result<Owned<O>, O>, Slot<O>);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let prepared = std::task::ready!(self.prepare.as_mut().poll(cx));
        let slot = self.slot.take().expect("polled after it was ready");
        Poll::Ready((prepared, slot))
    }
}

impl<I, F, P, O> Pool<I, F, P, O>
where
    I: Iterator,
    F: FnMut(I::Item) -> P,
    P: Future<Output = Result<Owned<O>, O>>,
    O: Send + 'static,
{
    /// Starts `concurrency` workers (fewer for fewer items); must run inside a tokio runtime.
    pub(crate) fn new(inputs: I, n_inputs: usize, concurrency: usize, prepare: F) -> Self {
        let concurrency = concurrency.max(1);
        let (queue, prepared) = mpsc::channel::<Owned<O>>(concurrency);
        let prepared = Arc::new(Mutex::new(prepared));
        let (finish, finished) = mpsc::unbounded_channel();
        let mut workers = JoinSet::new();
        for _ in 0..concurrency.min(n_inputs) {
            let prepared = Arc::clone(&prepared);
            let finish = finish.clone();
            workers.spawn(async move {
                loop {
                    // The lock is held only while the queue is empty; the item runs after.
                    let next = prepared.lock().await.recv().await;
                    let Some(item) = next else { break };
                    if finish.send(item.await).is_err() {
                        break;
                    }
                }
            });
        }
        Pool {
            inputs,
            inputs_left: true,
            prepare,
            preparing: FuturesUnordered::new(),
            queue: Some(queue),
            reserving: None,
            failed: VecDeque::new(),
            finished,
            workers,
        }
    }

    /// Waits for at least one item to finish and keeps gathering what finishes until
    /// `not_before` (or until every item is done), then returns every one finished by then;
    /// `None` when all are done. Records are thus written in groups rather than one by one
    /// when items finish a few hundred microseconds apart; the workers go on meanwhile. A
    /// panic in an item is raised here.
    pub(crate) async fn next_batch_after(
        &mut self,
        not_before: tokio::time::Instant,
    ) -> Option<Vec<O>> {
        let mut gathered = Vec::new();
        let mut wait = std::pin::pin!(tokio::time::sleep_until(not_before));
        std::future::poll_fn(|cx| {
            match self.poll_batch(cx) {
                Poll::Ready(Some(mut batch)) => gathered.append(&mut batch),
                Poll::Ready(None) => {
                    let rest = std::mem::take(&mut gathered);
                    return Poll::Ready((!rest.is_empty()).then_some(rest));
                }
                Poll::Pending => {}
            }
            if !gathered.is_empty() && wait.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Some(std::mem::take(&mut gathered)));
            }
            Poll::Pending
        })
        .await
    }

    /// Runs `work` while preparing items for the workers as slots free up, so that they do
    /// not run dry while the stage waits (for the response cache's writer, say).
    pub(crate) async fn while_preparing<T>(&mut self, work: impl Future<Output = T>) -> T {
        let mut work = std::pin::pin!(work);
        std::future::poll_fn(|cx| {
            self.poll_preparation(cx);
            work.as_mut().poll(cx)
        })
        .await
    }

    fn poll_batch(&mut self, cx: &mut Context<'_>) -> Poll<Option<Vec<O>>> {
        // A worker ends early only by panicking (or the runtime shutting down).
        while let Poll::Ready(Some(ended)) = self.workers.poll_join_next(cx) {
            if let Err(error) = ended {
                match error.try_into_panic() {
                    Ok(panic) => std::panic::resume_unwind(panic),
                    Err(error) => panic!("a stage worker ended without finishing: {error}"),
                }
            }
        }
        self.poll_preparation(cx);
        let mut batch: Vec<O> = self.failed.drain(..).collect();
        let all_done = loop {
            match self.finished.poll_recv(cx) {
                Poll::Ready(Some(outcome)) => batch.push(outcome),
                Poll::Ready(None) => break true,
                Poll::Pending => break false,
            }
        };
        if !batch.is_empty() {
            Poll::Ready(Some(batch))
        } else if all_done {
            Poll::Ready(None)
        } else {
            Poll::Pending
        }
    }

    /// Prepares inputs into free slots and queues what is prepared, until neither can go on
    /// without waiting; closes the queue once every input has gone in, so that the workers
    /// end when it is empty.
    fn poll_preparation(&mut self, cx: &mut Context<'_>) {
        loop {
            let mut progressed = false;
            while self.inputs_left
                && let Some(slot) = self.poll_slot(cx)
            {
                match self.inputs.next() {
                    Some(input) => self.preparing.push(Preparing {
                        prepare: Box::pin((self.prepare)(input)),
                        slot: Some(slot),
                    }),
                    None => self.inputs_left = false,
                }
                progressed = true;
            }
            while let Poll::Ready(Some((prepared, slot))) = self.preparing.poll_next_unpin(cx) {
                match prepared {
                    Ok(item) => {
                        slot.send(item);
                    }
                    Err(outcome) => self.failed.push_back(outcome),
                }
                progressed = true;
            }
            if !progressed {
                break;
            }
        }
        if !self.inputs_left {
            // The slots still held keep the queue open until their items are in it.
            self.queue = None;
            self.reserving = None;
        }
    }

    /// A free slot in the queue, or `None` (with a wake-up registered) when there is none.
    fn poll_slot(&mut self, cx: &mut Context<'_>) -> Option<Slot<O>> {
        if self.reserving.is_none() {
            let queue = self.queue.clone()?;
            match queue.try_reserve_owned() {
                Ok(slot) => return Some(slot),
                Err(TrySendError::Full(queue)) => {
                    self.reserving = Some(Box::pin(queue.reserve_owned()));
                }
                Err(TrySendError::Closed(_)) => return None,
            }
        }
        let reserving = self.reserving.as_mut()?;
        match reserving.as_mut().poll(cx) {
            Poll::Ready(slot) => {
                self.reserving = None;
                slot.ok()
            }
            Poll::Pending => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

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
