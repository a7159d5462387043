//! Runs a stage's items a fixed number at a time, on the runtime's worker threads.
//!
//! An item is a future made on the stage's task, so that it may borrow the stage's inputs (the
//! documents, the retriever); the part of it that borrows nothing (the LLM calls and the
//! record) goes to [`spawned`], which runs it as a task of its own, so that items use every
//! worker thread. [`items`] keeps `concurrency` items in progress and takes no new one once
//! its stop flag is set; those in progress finish.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::stream::{self, Stream, StreamExt};
use tokio::task::JoinSet;

/// The outcomes of `item` over `inputs`, in the order they finish, with at most
/// `concurrency` in progress; no input is taken after `stop` is set.
pub(crate) fn items<'a, I, F, P, O>(
    inputs: I,
    concurrency: usize,
    stop: &'a AtomicBool,
    item: F,
) -> impl Stream<Item = O> + 'a
where
    I: IntoIterator + 'a,
    F: FnMut(I::Item) -> P + 'a,
    P: Future<Output = O> + 'a,
{
    let inputs = inputs
        .into_iter()
        .take_while(move |_| !stop.load(Ordering::SeqCst));
    stream::iter(inputs)
        .map(item)
        .buffer_unordered(concurrency.max(1))
}

/// Runs `future` as a task of its own and waits for it; a panic in it is raised here, and
/// dropping the wait stops the task.
pub(crate) async fn spawned<O: Send + 'static>(
    future: impl Future<Output = O> + Send + 'static,
) -> O {
    let mut task = JoinSet::new();
    task.spawn(future);
    match task.join_next().await.expect("a task was spawned") {
        Ok(output) => output,
        Err(error) => match error.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(error) => panic!("a stage item ended without finishing: {error}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
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
        let stop = AtomicBool::new(false);
        let outcomes = items(0..100u32, 7, &stop, |n| {
            let gauge = Arc::clone(&gauge);
            async move {
                // Every tenth item fails before it is spawned, the rest run on a worker.
                if n % 10 == 3 {
                    return Err(n);
                }
                spawned(async move {
                    let now = gauge.now.fetch_add(1, Ordering::SeqCst) + 1;
                    gauge.max.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(1 + u64::from(n % 3))).await;
                    gauge.now.fetch_sub(1, Ordering::SeqCst);
                    Ok(n)
                })
                .await
            }
        });
        let mut done: Vec<Result<u32, u32>> = outcomes.collect().await;
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
    async fn after_a_stop_the_items_in_progress_finish_and_no_other_starts() {
        let started = Arc::new(AtomicUsize::new(0));
        let stop = AtomicBool::new(false);
        let mut outcomes = std::pin::pin!(items(0..100u32, 4, &stop, |n| {
            let started = Arc::clone(&started);
            spawned(async move {
                started.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
                n
            })
        }));
        outcomes.next().await.expect("items");
        stop.store(true, Ordering::SeqCst);
        let mut done = 1;
        while outcomes.next().await.is_some() {
            done += 1;
        }
        // Every item that was taken finished; at most one round more than the first.
        let started = started.load(Ordering::SeqCst);
        assert_eq!(done, started);
        assert!(started <= 1 + 4, "{started} started");
    }

    #[tokio::test]
    async fn no_items_is_done_at_once() {
        let stop = AtomicBool::new(false);
        let mut outcomes = std::pin::pin!(items(std::iter::empty::<u32>(), 4, &stop, |n| {
            std::future::ready(n)
        }));
        assert!(outcomes.next().await.is_none());
    }

    #[tokio::test]
    #[should_panic(expected = "item 5 broke")]
    async fn a_panic_in_an_item_is_raised_by_the_stage() {
        let stop = AtomicBool::new(false);
        let outcomes = items(0..10u32, 3, &stop, |n| {
            spawned(async move {
                assert!(n != 5, "item {n} broke");
                n
            })
        });
        let _: Vec<u32> = outcomes.collect().await;
    }

    #[tokio::test]
    async fn dropping_the_stream_stops_its_items() {
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
        let stop = AtomicBool::new(false);
        let mut outcomes = Box::pin(items(0..4u32, 4, &stop, |n| {
            let mut unfinished = Unfinished(Some(stopped.clone()));
            spawned(async move {
                if n > 0 {
                    std::future::pending::<()>().await;
                }
                drop(unfinished.0.take());
                n
            })
        }));
        assert_eq!(outcomes.next().await, Some(0));
        drop(outcomes);
        drop(stopped);
        // The three items still running are dropped, and nothing else holds a sender.
        for _ in 0..3 {
            stops.recv().await.expect("an item was stopped");
        }
        assert!(stops.recv().await.is_none());
    }
}
