//! From a design to a plan: item ids, balanced category counts, personas, documents and seeds.

use std::collections::BTreeMap;
use std::io::{self, Write};

use hierarag_taxonomy::{Taxonomy, UserCategorization};
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use crate::design::{Allocation, CategoryRef, Design, DesignKind};
use crate::error::PlanError;
use crate::sample::DocumentSample;
use crate::seeds::{item_seed, rng};

/// One line of `plan.jsonl`: one question to generate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanItem {
    /// `rq2-qc-medium-0001`: design, set and number within the set.
    pub item_id: String,
    pub design: DesignKind,
    /// The independent set of questions this item belongs to (`qc`, `qc/medium`, `lv×qc`).
    pub set: String,
    /// One document, or two for a multi-document category.
    pub doc_ids: Vec<String>,
    /// The categories the question must have (one, or one per factor of a factorial cell).
    pub categories: Vec<CategoryRef>,
    /// User categorization → persona.
    pub persona: BTreeMap<String, String>,
    /// The seed for everything random about generating this item.
    pub seed: u64,
}

/// An item before documents are assigned.
#[derive(Debug, Clone, PartialEq)]
struct Slot {
    item_id: String,
    set: String,
    cell: usize,
    categories: Vec<CategoryRef>,
    persona: BTreeMap<String, String>,
    multi_doc: bool,
}

/// The items of a design with categories and personas assigned, waiting for documents.
///
/// Within a set, items go round-robin over the cells, so any prefix of the plan is balanced too.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    design: DesignKind,
    seed: u64,
    slots: Vec<Slot>,
    cell_labels: Vec<Vec<String>>,
}

/// A finished plan: the items plus what the document sample looked like.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub items: Vec<PlanItem>,
    /// Words of each item's documents, parallel to `items` (for estimates; not written);
    /// `None` when the pass did not read the lengths (a Parquet corpus sampled without length
    /// bounds reads only ids).
    pub doc_words: Option<Vec<Vec<usize>>>,
    /// Documents read from the corpus, and those within the length bounds.
    pub documents_read: u64,
    pub documents_eligible: u64,
    /// Different documents used; fewer than the document slots when the corpus is too small.
    pub distinct_documents: usize,
    /// Whether some document is used by more than one item (only when the corpus is smaller
    /// than the plan).
    pub reused_documents: bool,
    cell_labels: Vec<Vec<String>>,
    sets: Vec<String>,
    /// Each item's cell, as an index into its set's cells.
    item_cells: Vec<usize>,
}

impl Layout {
    /// Lays out a design: counts per cell (balanced within one, the extra items going to cells
    /// chosen with the seed), personas by their probabilities within each cell, item ids and
    /// item seeds.
    pub fn new(design: &Design, taxonomy: &Taxonomy, seed: u64) -> Layout {
        let mut slots = Vec::with_capacity(design.n_items());
        let mut cell_labels = Vec::with_capacity(design.sets.len());
        for set in &design.sets {
            let counts = match &set.allocation {
                Allocation::PerCell(counts) => counts.clone(),
                Allocation::Balanced(total) => {
                    balanced_counts(*total, set.cells.len(), seed, &set.name)
                }
            };
            let mut personas: Vec<std::vec::IntoIter<BTreeMap<String, String>>> = set
                .cells
                .iter()
                .zip(&counts)
                .enumerate()
                .map(|(index, (cell, &count))| {
                    let label = format!("personas/{}/{index}", set.name);
                    draw_personas(taxonomy, &cell.personas, count, seed, &label).into_iter()
                })
                .collect();
            let total: usize = counts.iter().sum();
            let width = total.to_string().len().max(4);
            let slug = set.id_slug(design.kind);
            let prefix = if slug.is_empty() {
                design.kind.as_str().to_string()
            } else {
                format!("{}-{slug}", design.kind)
            };
            let rounds = counts.iter().copied().max().unwrap_or(0);
            let mut number = 0;
            for _ in 0..rounds {
                for (index, cell) in set.cells.iter().enumerate() {
                    let Some(persona) = personas[index].next() else {
                        continue;
                    };
                    number += 1;
                    slots.push(Slot {
                        item_id: format!("{prefix}-{number:0width$}"),
                        set: set.name.clone(),
                        cell: index,
                        categories: cell.categories.clone(),
                        persona,
                        multi_doc: cell.multi_doc,
                    });
                }
            }
            cell_labels.push(set.cells.iter().map(|c| c.label()).collect());
        }
        Layout {
            design: design.kind,
            seed,
            slots,
            cell_labels,
        }
    }

    /// Documents the plan needs: one per item, two per multi-document item.
    pub fn doc_slots(&self) -> usize {
        self.slots
            .iter()
            .map(|slot| if slot.multi_doc { 2 } else { 1 })
            .sum()
    }

    pub fn n_items(&self) -> usize {
        self.slots.len()
    }

    /// Assigns the sampled documents to the items in order. A document is used twice only when
    /// the corpus has fewer eligible documents than the plan needs; then every document is used
    /// as evenly as possible, and the two documents of a multi-document item always differ.
    pub fn assign(self, sample: DocumentSample) -> Result<Plan, PlanError> {
        let needed = self.doc_slots();
        if needed > 0 && sample.docs.is_empty() {
            return Err(sample.no_documents());
        }
        let mut sequence: Vec<usize> = (0..sample.docs.len().min(needed)).collect();
        let mut rng = rng(self.seed, "documents/reuse");
        while sequence.len() < needed {
            let mut round: Vec<usize> = (0..sample.docs.len()).collect();
            round.shuffle(&mut rng);
            round.truncate(needed - sequence.len());
            sequence.extend(round);
        }
        let reused = sample.docs.len() < needed;
        // Item index → (first position, number of positions) in `sequence`.
        let mut spans = Vec::with_capacity(self.slots.len());
        let mut position = 0;
        for slot in &self.slots {
            let n = if slot.multi_doc { 2 } else { 1 };
            spans.push((position, n));
            position += n;
        }
        if reused {
            separate_pairs(&mut sequence, &spans, &self.slots)?;
        }
        let item_cells = self.slots.iter().map(|slot| slot.cell).collect();
        let mut items = Vec::with_capacity(self.slots.len());
        let mut doc_words = Vec::with_capacity(self.slots.len());
        for (slot, &(start, n)) in self.slots.into_iter().zip(&spans) {
            let docs = &sequence[start..start + n];
            doc_words.push(docs.iter().map(|&d| sample.docs[d].words).collect());
            items.push(PlanItem {
                seed: item_seed(self.seed, &slot.item_id),
                item_id: slot.item_id,
                design: self.design,
                set: slot.set,
                doc_ids: docs.iter().map(|&d| sample.docs[d].id.clone()).collect(),
                categories: slot.categories,
                persona: slot.persona,
            });
        }
        let mut sets: Vec<String> = Vec::new();
        for item in &items {
            if sets.last() != Some(&item.set) {
                sets.push(item.set.clone());
            }
        }
        Ok(Plan {
            items,
            doc_words: sample.lengths_known.then_some(doc_words),
            documents_read: sample.read,
            documents_eligible: sample.eligible,
            distinct_documents: sample.docs.len().min(needed),
            reused_documents: reused,
            cell_labels: self.cell_labels,
            sets,
            item_cells,
        })
    }
}

/// Makes the two documents of every multi-document item different by swapping positions.
fn separate_pairs(
    sequence: &mut [usize],
    spans: &[(usize, usize)],
    slots: &[Slot],
) -> Result<(), PlanError> {
    // Position → the other position of its item, for multi-document items.
    let mut partner = vec![None; sequence.len()];
    for &(start, n) in spans {
        if n == 2 {
            partner[start] = Some(start + 1);
            partner[start + 1] = Some(start);
        }
    }
    for &(start, n) in spans {
        if n != 2 || sequence[start] != sequence[start + 1] {
            continue;
        }
        let (a, b) = (start, start + 1);
        let doc = sequence[a];
        // Swap b with a position q holding another document, if q's own item stays valid.
        let ok = |q: usize, sequence: &[usize]| {
            q != a
                && q != b
                && sequence[q] != doc
                && partner[q].is_none_or(|p| p == a || p == b || sequence[p] != doc)
        };
        let found = (b + 1..sequence.len())
            .chain(0..a)
            .find(|&q| ok(q, sequence));
        match found {
            Some(q) => sequence.swap(b, q),
            None => {
                let cells: Vec<String> = slots
                    .iter()
                    .filter(|s| s.multi_doc)
                    .flat_map(|s| s.categories.iter().map(|c| c.category.clone()))
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect();
                return Err(PlanError::OneDocumentForMultiDoc {
                    cells: cells.join(", "),
                });
            }
        }
    }
    Ok(())
}

/// `total` items over `cells` cells, each within one of the others; the cells that get one more
/// are chosen with the seed, not always the first ones.
fn balanced_counts(total: usize, cells: usize, seed: u64, set: &str) -> Vec<usize> {
    if cells == 0 {
        return Vec::new();
    }
    let mut counts = vec![total / cells; cells];
    let mut order: Vec<usize> = (0..cells).collect();
    order.shuffle(&mut rng(seed, &format!("balance/{set}")));
    for &cell in order.iter().take(total % cells) {
        counts[cell] += 1;
    }
    counts
}

/// Personas for the `count` items of one cell: for each user categorization, each persona gets
/// its probability's share of the items (largest remainder, ties broken with the seed), in
/// random order; a persona fixed by the cell is given to every item.
fn draw_personas(
    taxonomy: &Taxonomy,
    fixed: &[(String, String)],
    count: usize,
    seed: u64,
    label: &str,
) -> Vec<BTreeMap<String, String>> {
    let mut personas = vec![BTreeMap::new(); count];
    for categorization in &taxonomy.user_categorizations {
        let names: Vec<&str> = match fixed.iter().find(|(c, _)| *c == categorization.name) {
            Some((_, persona)) => vec![persona.as_str(); count],
            None => {
                let mut rng = rng(seed, &format!("{label}/{}", categorization.name));
                quota_names(categorization, count, &mut rng)
            }
        };
        for (map, name) in personas.iter_mut().zip(names) {
            map.insert(categorization.name.clone(), name.to_string());
        }
    }
    personas
}

fn quota_names<'a>(
    categorization: &'a UserCategorization,
    count: usize,
    rng: &mut impl rand::Rng,
) -> Vec<&'a str> {
    let total: f64 = categorization.personas.iter().map(|p| p.probability).sum();
    let exact: Vec<f64> = categorization
        .personas
        .iter()
        .map(|p| count as f64 * p.probability / total.max(f64::MIN_POSITIVE))
        .collect();
    let mut quotas: Vec<usize> = exact.iter().map(|x| x.floor() as usize).collect();
    let mut order: Vec<usize> = (0..quotas.len()).collect();
    order.shuffle(rng);
    // Largest fractional part first; the shuffle above breaks ties at random.
    order.sort_by(|&i, &j| {
        let fi = exact[i] - exact[i].floor();
        let fj = exact[j] - exact[j].floor();
        fj.total_cmp(&fi)
    });
    let assigned: usize = quotas.iter().sum();
    for &i in order.iter().cycle().take(count.saturating_sub(assigned)) {
        quotas[i] += 1;
    }
    let mut names: Vec<&str> = categorization
        .personas
        .iter()
        .zip(&quotas)
        .flat_map(|(persona, &quota)| std::iter::repeat_n(persona.name.as_str(), quota))
        .collect();
    names.shuffle(rng);
    names
}

impl Plan {
    /// Writes one JSON object per line.
    pub fn write_jsonl(&self, mut out: impl Write) -> io::Result<()> {
        for item in &self.items {
            serde_json::to_writer(&mut out, item)?;
            out.write_all(b"\n")?;
        }
        out.flush()
    }

    /// Counts per set and cell, in design order: `(set, [(cell label, items)])`.
    pub fn cell_counts(&self) -> Vec<(String, Vec<(String, usize)>)> {
        self.sets
            .iter()
            .zip(&self.cell_labels)
            .map(|(set, labels)| {
                let mut counts: Vec<(String, usize)> =
                    labels.iter().map(|label| (label.clone(), 0)).collect();
                for (item, &cell) in self.items.iter().zip(&self.item_cells) {
                    if item.set == *set {
                        counts[cell].1 += 1;
                    }
                }
                (set.clone(), counts)
            })
            .collect()
    }

    /// Items per (user categorization, persona).
    pub fn persona_counts(&self) -> BTreeMap<(String, String), usize> {
        let mut counts = BTreeMap::new();
        for item in &self.items {
            for (categorization, persona) in &item.persona {
                *counts
                    .entry((categorization.clone(), persona.clone()))
                    .or_insert(0) += 1;
            }
        }
        counts
    }
}
