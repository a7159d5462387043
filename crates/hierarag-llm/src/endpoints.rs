//! Several endpoints of one model, balanced by the fewest requests in flight.

use std::sync::{Arc, Mutex};

/// Backends that serve the same model; [`EndpointPool::lease`] picks the one with the fewest
/// requests in flight, the lowest index on ties.
#[derive(Debug)]
pub(crate) struct EndpointPool<B: ?Sized> {
    backends: Vec<Arc<B>>,
    in_flight: Mutex<Vec<usize>>,
}

/// One request's hold on an endpoint; dropping it ends the request.
#[derive(Debug)]
pub(crate) struct Lease<'a, B: ?Sized> {
    pool: &'a EndpointPool<B>,
    index: usize,
}

impl<B: ?Sized> EndpointPool<B> {
    /// A pool of at least one backend.
    pub(crate) fn new(backends: Vec<Arc<B>>) -> EndpointPool<B> {
        assert!(!backends.is_empty(), "an endpoint pool needs a backend");
        let in_flight = Mutex::new(vec![0; backends.len()]);
        EndpointPool {
            backends,
            in_flight,
        }
    }

    pub(crate) fn first(&self) -> &Arc<B> {
        &self.backends[0]
    }

    pub(crate) fn backends(&self) -> &[Arc<B>] {
        &self.backends
    }

    /// Takes the least busy endpoint; choosing and counting happen under one lock, so that
    /// concurrent requests see each other's choices.
    pub(crate) fn lease(&self) -> Lease<'_, B> {
        let mut in_flight = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        let index = (0..in_flight.len())
            .min_by_key(|&i| (in_flight[i], i))
            .expect("the pool is not empty");
        in_flight[index] += 1;
        Lease { pool: self, index }
    }
}

impl<B: ?Sized> EndpointPool<B> {
    /// Takes endpoint `index` whatever its load (to check one endpoint).
    pub(crate) fn lease_at(&self, index: usize) -> Lease<'_, B> {
        let mut in_flight = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        in_flight[index] += 1;
        Lease { pool: self, index }
    }
}

impl<B: ?Sized> Lease<'_, B> {
    pub(crate) fn backend(&self) -> &Arc<B> {
        &self.pool.backends[self.index]
    }
}

impl<B: ?Sized> Drop for Lease<'_, B> {
    fn drop(&mut self) {
        let mut in_flight = self
            .pool
            .in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        in_flight[self.index] -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(n: usize) -> EndpointPool<str> {
        let backends: Vec<Arc<str>> = (0..n).map(|i| Arc::from(format!("e{i}"))).collect();
        EndpointPool::new(backends)
    }

    #[test]
    fn leases_go_to_the_least_busy_endpoint_lowest_index_first() {
        let pool = pool(3);
        let a = pool.lease();
        let b = pool.lease();
        let c = pool.lease();
        let d = pool.lease();
        let picked: Vec<&str> = [&a, &b, &c, &d].iter().map(|l| &**l.backend()).collect();
        assert_eq!(picked, ["e0", "e1", "e2", "e0"]);
        drop(b);
        assert_eq!(&**pool.lease().backend(), "e1");
    }

    #[test]
    fn a_dropped_lease_frees_its_endpoint() {
        let pool = pool(2);
        let first = pool.lease();
        drop(first);
        let again = pool.lease();
        assert_eq!(&**again.backend(), "e0");
        assert_eq!(*pool.in_flight.lock().unwrap(), vec![1, 0]);
    }
}
