//! The threads MiniLM computes on: batches side by side, one per thread, or one batch on all.

use rayon::{ThreadPool, ThreadPoolBuilder};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::MiniLmError;

/// A fixed set of threads, used two ways.
///
/// candle runs each matrix product on the rayon pool it is called from, split in pieces, and
/// each element-wise op on a global pool of spinning threads behind one lock. Splitting every
/// operation of a small batch costs a synchronisation each time, batches side by side queue
/// for that lock, and on a busy machine a descheduled helper stalls everyone. So the encoder
/// does its element-wise work itself, and when there are several batches each runs whole on a
/// single-thread pool of its own (`narrow`): its matrix products run there too, and no thread
/// ever waits for another. A lone batch has nothing to run beside it and splits its matrix
/// products over all threads (`wide`) instead.
pub(super) struct Threads {
    narrow: Vec<ThreadPool>,
    wide: ThreadPool,
}

impl Threads {
    /// `count` threads (at least 1).
    pub(super) fn new(count: usize) -> Result<Threads, MiniLmError> {
        let count = count.max(1);
        let pool = |n_threads: usize, name: String| {
            ThreadPoolBuilder::new()
                .num_threads(n_threads)
                .thread_name(move |index| format!("{name}-{index}"))
                .build()
                .map_err(|e| MiniLmError::Threads {
                    threads: count,
                    reason: e.to_string(),
                })
        };
        let narrow = (0..count)
            .map(|index| pool(1, format!("minilm-{index}")))
            .collect::<Result<Vec<_>, _>>()?;
        let wide = pool(count, "minilm-wide".to_owned())?;
        Ok(Threads { narrow, wide })
    }

    pub(super) fn count(&self) -> usize {
        self.narrow.len()
    }

    /// Runs `work` on all the threads together (for work that splits itself with rayon).
    pub(super) fn install<R: Send>(&self, work: impl FnOnce() -> R + Send) -> R {
        self.wide.install(work)
    }

    /// Applies `work` to every item and returns the results in the items' order, or the error
    /// of the first item (in that order) that failed; after a failure no new item is started.
    pub(super) fn run<T, R, E>(
        &self,
        items: &[T],
        work: impl Fn(&T) -> Result<R, E> + Sync,
    ) -> Result<Vec<R>, E>
    where
        T: Sync,
        R: Send,
        E: Send,
    {
        if items.len() <= 1 || self.narrow.len() == 1 {
            return self.wide.install(|| items.iter().map(&work).collect());
        }
        let next = AtomicUsize::new(0);
        let work = &work;
        let next = &next;
        let done: Vec<Vec<(usize, Result<R, E>)>> = std::thread::scope(|scope| {
            let workers: Vec<_> = self
                .narrow
                .iter()
                .map(|pool| {
                    scope.spawn(move || {
                        pool.install(|| {
                            let mut done = Vec::new();
                            loop {
                                let index = next.fetch_add(1, Ordering::Relaxed);
                                let Some(item) = items.get(index) else { break };
                                let result = work(item);
                                let failed = result.is_err();
                                done.push((index, result));
                                if failed {
                                    next.store(items.len(), Ordering::Relaxed);
                                    break;
                                }
                            }
                            done
                        })
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|worker| {
                    worker
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect()
        });

        let mut slots: Vec<Option<Result<R, E>>> = (0..items.len()).map(|_| None).collect();
        for (index, result) in done.into_iter().flatten() {
            slots[index] = Some(result);
        }
        let mut results = Vec::with_capacity(items.len());
        for slot in slots {
            match slot {
                Some(Ok(result)) => results.push(result),
                Some(Err(error)) => return Err(error),
                // Skipped after an earlier failure, which the loop returns first or next.
                None => {}
            }
        }
        Ok(results)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_item_order() {
        let threads = Threads::new(3).unwrap();
        let items: Vec<usize> = (0..50).collect();
        let squares = threads.run(&items, |&i| Ok::<_, ()>(i * i)).unwrap();
        assert_eq!(squares, items.iter().map(|i| i * i).collect::<Vec<_>>());
    }

    #[test]
    fn the_first_failure_in_item_order_is_returned() {
        let threads = Threads::new(2).unwrap();
        let items: Vec<usize> = (0..20).collect();
        let err = threads
            .run(&items, |&i| if i >= 5 { Err(i) } else { Ok(i) })
            .unwrap_err();
        assert_eq!(err, 5);
    }

    #[test]
    fn one_thread_and_one_item_work() {
        let one = Threads::new(0).unwrap();
        assert_eq!(one.count(), 1);
        assert_eq!(one.run(&[1, 2], |&i| Ok::<_, ()>(i + 1)).unwrap(), [2, 3]);
        let two = Threads::new(2).unwrap();
        assert_eq!(two.run(&[7], |&i| Ok::<_, ()>(i)).unwrap(), [7]);
    }
}
