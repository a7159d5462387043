//! MaxScore (Turtle and Flood, 1995) over tantivy's postings, for queries with long posting
//! lists.
//!
//! Each term has an upper bound on what it can add to a chunk's score. Sorted by that bound, the
//! terms whose bounds together stay below the current entry bar of the top `want` cannot place
//! a chunk on their own: they are *non-essential*. Chunks are visited document-at-a-time over
//! the essential terms only; the non-essential ones are looked up (`seek`) for a chunk only while
//! its score so far plus their remaining bounds can still reach the bar. As the bar rises, more
//! terms become non-essential, until a query's common words ("what", "how") are never read past
//! the chunks that still matter.
//!
//! Scores are exact and bit-identical to the exhaustive pass: each term's contribution is kept
//! apart and the sum is taken in query order, as the exhaustive accumulator adds them. A chunk is
//! dropped only when its bound is *below* the bar, so every chunk tied with the final bar is kept
//! for the total tie order of the caller.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use tantivy::fastfield::AliveBitSet;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::{Postings, SegmentPostings};
use tantivy::query::Bm25Weight;
use tantivy::{DocId, DocSet, TERMINATED};

/// Bounds are f32 sums taken in another order than a chunk's score; inflating them by this
/// much keeps them above any rounding of the scores they bound.
const BOUND_SLACK: f32 = 1.0 + 1e-4;

/// The `want` best scores seen so far; the bar is the lowest of them once there are `want`.
pub(crate) struct TopScores {
    want: usize,
    // Scores are positive, so their bit patterns order like the scores themselves.
    heap: BinaryHeap<Reverse<u32>>,
}

impl TopScores {
    pub(crate) fn new(want: usize) -> TopScores {
        TopScores {
            want,
            heap: BinaryHeap::with_capacity(want + 1),
        }
    }

    /// The score a chunk needs to enter the top `want` (ties included).
    pub(crate) fn bar(&self) -> f32 {
        if self.heap.len() < self.want {
            f32::NEG_INFINITY
        } else {
            f32::from_bits(self.heap.peek().expect("heap is full").0)
        }
    }

    fn push(&mut self, score: f32) {
        self.heap.push(Reverse(score.to_bits()));
        if self.heap.len() > self.want {
            self.heap.pop();
        }
    }

    /// Whether fewer than `want` chunks matched at all.
    pub(crate) fn is_short(&self) -> bool {
        self.heap.len() < self.want
    }
}

/// One query term's postings in one segment.
pub(crate) struct TermCursor<'w> {
    pub(crate) postings: SegmentPostings,
    pub(crate) weight: &'w Bm25Weight,
    /// The term's place in the query (its contribution is added in this order).
    pub(crate) query_pos: usize,
}

/// Scores one segment. Every chunk that reaches the bar at the moment it is scored is passed to
/// `keep` with its exact score (so the caller's pool holds at least every chunk of the final top
/// `want`, ties included); `top` carries the bar from segment to segment.
pub(crate) fn score_segment(
    mut cursors: Vec<TermCursor<'_>>,
    n_query_terms: usize,
    fieldnorms: &FieldNormReader,
    alive: Option<&AliveBitSet>,
    top: &mut TopScores,
    mut keep: impl FnMut(DocId, f32),
) {
    if cursors.is_empty() {
        return;
    }
    cursors.sort_by(|a, b| {
        a.weight
            .max_score()
            .total_cmp(&b.weight.max_score())
            .then(a.query_pos.cmp(&b.query_pos))
    });
    // upto[i]: the most terms 0..=i can add together.
    let upto: Vec<f32> = cursors
        .iter()
        .scan(0.0f32, |sum, c| {
            *sum += c.weight.max_score();
            Some(*sum * BOUND_SLACK)
        })
        .collect();
    let mut contributions = vec![0.0f32; n_query_terms];
    // cursors[..first_essential] are non-essential.
    let mut first_essential = 0;
    let mut bar = top.bar();
    while first_essential < cursors.len() && upto[first_essential] < bar {
        first_essential += 1;
    }
    while first_essential < cursors.len() {
        let doc = cursors[first_essential..]
            .iter()
            .map(|c| c.postings.doc())
            .min()
            .expect("at least one essential term");
        if doc == TERMINATED {
            break;
        }
        let fieldnorm_id = fieldnorms.fieldnorm_id(doc);
        let mut partial = 0.0f32;
        for c in &mut cursors[first_essential..] {
            if c.postings.doc() == doc {
                let s = c.weight.score(fieldnorm_id, c.postings.term_freq());
                contributions[c.query_pos] = s;
                partial += s;
                c.postings.advance();
            }
        }
        // The non-essential terms, largest bound first, while they can still lift it to the bar.
        let mut reachable = true;
        for i in (0..first_essential).rev() {
            if partial * BOUND_SLACK + upto[i] < bar {
                reachable = false;
                break;
            }
            let c = &mut cursors[i];
            if c.postings.doc() < doc {
                c.postings.seek(doc);
            }
            if c.postings.doc() == doc {
                let s = c.weight.score(fieldnorm_id, c.postings.term_freq());
                contributions[c.query_pos] = s;
                partial += s;
            }
        }
        if reachable && !alive.is_some_and(|a| a.is_deleted(doc)) {
            // In query order, as the exhaustive pass adds them (absent terms add an exact 0).
            let score = contributions.iter().fold(0.0f32, |sum, &s| sum + s);
            if score >= bar {
                keep(doc, score);
                top.push(score);
                let new_bar = top.bar();
                if new_bar > bar {
                    bar = new_bar;
                    while first_essential < cursors.len() && upto[first_essential] < bar {
                        first_essential += 1;
                    }
                }
            }
        }
        contributions.fill(0.0);
    }
}
