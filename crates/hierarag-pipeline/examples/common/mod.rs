//! What the benchmarks' mock servers share: a timer thread that releases replies at their
//! deadlines, and the parsing of a request's head.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use tokio::sync::oneshot;

/// Releases replies at their deadlines. With one fixed delay, deadlines come in the order the
/// requests arrived, so a queue serves and the thread never needs waking for a new one unless
/// it was idle.
#[derive(Default)]
pub struct Timer {
    alarms: Mutex<VecDeque<(Instant, oneshot::Sender<()>)>>,
    idle: Condvar,
}

impl Timer {
    pub fn set(&self, deadline: Instant, waker: oneshot::Sender<()>) {
        let mut alarms = self.alarms.lock().unwrap();
        alarms.push_back((deadline, waker));
        if alarms.len() == 1 {
            self.idle.notify_one();
        }
    }

    /// Sleeps until the first deadline (within the kernel's timer slack, tens of
    /// microseconds), then wakes every alarm that is due.
    pub fn run(&self) {
        let mut alarms = self.alarms.lock().unwrap();
        loop {
            let Some(&(deadline, _)) = alarms.front() else {
                alarms = self.idle.wait(alarms).unwrap();
                continue;
            };
            let now = Instant::now();
            if deadline > now {
                drop(alarms);
                std::thread::sleep(deadline - now);
                alarms = self.alarms.lock().unwrap();
                continue;
            }
            while alarms.front().is_some_and(|(deadline, _)| *deadline <= now) {
                let (_, waker) = alarms.pop_front().expect("looked at");
                let _ = waker.send(());
            }
        }
    }
}

/// Where the headers of a request end, and the length of its body.
pub fn parse_head(buffer: &[u8]) -> Option<(usize, usize)> {
    let end = buffer.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&buffer[..end]).expect("ASCII headers");
    let length = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().expect("a length"))
        })
        .unwrap_or(0);
    Some((end, length))
}
