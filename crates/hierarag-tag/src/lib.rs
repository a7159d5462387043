//! Post-hoc tagging (docs/design.md, "Tagging"): an LLM labels every question on every
//! dimension of a taxonomy, so that the dimensions a question was not generated for are
//! known too (the confounders of a one-dimension-at-a-time design), and so that a benchmark
//! made elsewhere gets hierarchical categories.
//!
//! For each question and dimension the [`Tagger`] makes one call (or `votes` calls, sampled,
//! keeping the majority): the prompt lists the dimension's finest categories with their
//! descriptions, the categories above each, and a few example questions per category taken
//! from the run's own generated questions; the reply is constrained by a JSON schema whose
//! enum is the category names ([`choice_schema`]; the embedded model and llama.cpp decode
//! under it). A reply naming anything else is asked again with a repair message, then the
//! question fails. A fine label implies its parents, so the levels of a [`DimensionTag`] are
//! always consistent.
//!
//! ```no_run
//! # async fn demo(taxonomy: &hierarag_taxonomy::Taxonomy, client: &hierarag_llm::ChatClient) {
//! use hierarag_tag::{TagSettings, Tagger};
//!
//! let tagger = Tagger::new(taxonomy, client, TagSettings::default(), &[]).unwrap();
//! match tagger.tag("q1", "Why did the Roman Republic fall?").await {
//!     Ok(record) => println!("{:?}", record.tags["qc"].categories),
//!     Err(reason) => eprintln!("q1 failed: {reason}"),
//! }
//! # }
//! ```

pub use hierarag_records::{DimensionTag, TagRecord};
mod prompt;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use hierarag_llm::{ChatClient, ChatRequest, LlmError, complete_parsed, f32_json};
use hierarag_records::ModelInfo;
use hierarag_taxonomy::{Granularity, Taxonomy};
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64_with_seed;

pub use prompt::{choice_schema, parse_choice, repair_message, tag_messages};

/// How questions are tagged (`[tag]` of a run config).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TagSettings {
    /// Calls per question and dimension. One is greedy; more sample at `temperature` and keep
    /// the majority, with the share of votes as the confidence.
    pub votes: u32,
    /// Sampling temperature of the votes (unused with one vote).
    pub temperature: f32,
    pub max_tokens: u32,
    /// Example questions shown per category (from the run's generated questions of that
    /// category; the question being tagged is never one of them).
    pub examples: usize,
    /// Repair messages after a reply that names no category of the dimension (`repairs`, as
    /// in `[generate]` and `[judge]`; `retries`, its old name, is still read).
    #[serde(alias = "retries")]
    pub repairs: u32,
    /// Seed of the examples' choice and of the votes' sampling (default: the run's).
    pub seed: u64,
    /// The dimensions to tag (keys); empty: every dimension of the taxonomy.
    pub dimensions: Vec<String>,
}

impl Default for TagSettings {
    fn default() -> TagSettings {
        TagSettings {
            votes: 1,
            temperature: 0.7,
            max_tokens: 64,
            examples: 2,
            repairs: 2,
            seed: 42,
            dimensions: Vec::new(),
        }
    }
}

/// A question whose category on a dimension is known (generated for it): a candidate
/// example for the prompt of that category.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example {
    pub id: String,
    pub dimension: String,
    pub category: String,
    pub question: String,
}

/// One category a tagger may choose: a category of the dimension's finest level.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub name: String,
    pub description: String,
    /// The category and every category above it, coarsest first (ends with this one).
    pub path: Vec<(Granularity, String)>,
    /// Example questions, at most the setting's number plus one (one may be the question
    /// being tagged, which is left out of its own prompt).
    pub examples: Vec<(String, String)>,
}

/// A dimension as the tagger asks about it.
#[derive(Debug, Clone, PartialEq)]
pub struct DimensionChoices {
    pub key: String,
    pub name: String,
    pub choices: Vec<Choice>,
}

impl DimensionChoices {
    fn names(&self) -> Vec<&str> {
        self.choices.iter().map(|c| c.name.as_str()).collect()
    }
}

/// Labels questions on every dimension of a taxonomy through a chat model. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Tagger {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    client: ChatClient,
    settings: TagSettings,
    dimensions: Vec<DimensionChoices>,
}

impl Tagger {
    /// A tagger of `taxonomy`'s dimensions (or those the settings name) with up to
    /// `settings.examples` of `examples` per category. Errors name a dimension that is not in
    /// the taxonomy.
    pub fn new(
        taxonomy: &Taxonomy,
        client: &ChatClient,
        settings: TagSettings,
        examples: &[Example],
    ) -> Result<Tagger, String> {
        for key in &settings.dimensions {
            if taxonomy.dimension(key).is_none() {
                return Err(format!(
                    "no dimension {key:?} in the taxonomy; its dimensions: {}",
                    taxonomy
                        .dimensions
                        .iter()
                        .map(|d| d.key.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        let mut by_category: HashMap<(&str, &str), Vec<&Example>> = HashMap::new();
        for example in examples {
            by_category
                .entry((example.dimension.as_str(), example.category.as_str()))
                .or_default()
                .push(example);
        }
        let dimensions = taxonomy
            .dimensions
            .iter()
            .filter(|d| settings.dimensions.is_empty() || settings.dimensions.contains(&d.key))
            .filter_map(|dimension| {
                let finest = dimension.levels.last()?;
                let choices = finest
                    .categories
                    .iter()
                    .map(|category| {
                        let mut path = vec![(finest.granularity, category.name.clone())];
                        let mut at = category.name.as_str();
                        while let Some((level, parent)) = dimension.parent_of(at) {
                            path.push((level, parent.name.clone()));
                            at = parent.name.as_str();
                        }
                        path.reverse();
                        let mut candidates = by_category
                            .get(&(dimension.key.as_str(), category.name.as_str()))
                            .cloned()
                            .unwrap_or_default();
                        // A seeded order, so that the examples do not depend on file order.
                        candidates.sort_by_key(|e| {
                            (
                                xxh3_64_with_seed(e.id.as_bytes(), settings.seed),
                                e.id.as_str(),
                            )
                        });
                        Choice {
                            name: category.name.clone(),
                            description: category.description.clone(),
                            path,
                            examples: candidates
                                .iter()
                                .take(settings.examples + 1)
                                .map(|e| (e.id.clone(), e.question.clone()))
                                .collect(),
                        }
                    })
                    .collect();
                Some(DimensionChoices {
                    key: dimension.key.clone(),
                    name: dimension.name.clone(),
                    choices,
                })
            })
            .collect();
        Ok(Tagger {
            inner: Arc::new(Inner {
                client: client.clone(),
                settings,
                dimensions,
            }),
        })
    }

    /// The dimensions tagged, in the taxonomy's order.
    pub fn dimensions(&self) -> &[DimensionChoices] {
        &self.inner.dimensions
    }

    /// Why no later call can succeed (an endpoint refused the client), once that is so.
    pub fn refusal(&self) -> Option<LlmError> {
        self.inner.client.refusal()
    }

    /// Labels one question on every dimension. An error is the reason the question has no
    /// record: a call that failed for good, or replies that named no category.
    pub async fn tag(&self, id: &str, question: &str) -> Result<TagRecord, String> {
        self.inner.tag(id, question).await
    }

    /// [`Tagger::tag`] as a future that borrows nothing, so that a stage can spawn it.
    pub fn tag_owned(
        &self,
        id: String,
        question: String,
    ) -> impl Future<Output = Result<TagRecord, String>> + Send + use<> {
        let inner = Arc::clone(&self.inner);
        async move { inner.tag(&id, &question).await }
    }
}

impl Inner {
    async fn tag(&self, id: &str, question: &str) -> Result<TagRecord, String> {
        let mut tags = BTreeMap::new();
        for dimension in &self.dimensions {
            let mut votes = Vec::new();
            for vote in 0..self.settings.votes.max(1) {
                votes.push(self.vote(dimension, id, question, vote).await?);
            }
            tags.insert(dimension.key.clone(), tally(dimension, votes));
        }
        Ok(TagRecord {
            id: id.to_string(),
            tags,
            tagger: self.info(),
        })
    }

    fn temperature(&self) -> f32 {
        if self.settings.votes > 1 {
            self.settings.temperature
        } else {
            0.0
        }
    }

    fn info(&self) -> ModelInfo {
        ModelInfo {
            backend: self.client.backend().to_string(),
            model: self.client.model().to_string(),
            params: serde_json::json!({
                "votes": self.settings.votes.max(1),
                "temperature": f32_json(self.temperature()),
                "max_tokens": self.settings.max_tokens,
                "examples": self.settings.examples,
                "seed": self.settings.seed,
            }),
        }
    }

    /// One vote: a call, and repair messages while the reply names no category.
    async fn vote(
        &self,
        dimension: &DimensionChoices,
        id: &str,
        question: &str,
        vote: u32,
    ) -> Result<String, String> {
        let names = dimension.names();
        let mut request = ChatRequest::new(tag_messages(
            dimension,
            id,
            question,
            self.settings.examples,
        ));
        request.temperature = self.temperature();
        request.max_tokens = self.settings.max_tokens;
        request.seed = Some(
            xxh3_64_with_seed(
                format!("tag/{id}/{}/{vote}", dimension.key).as_bytes(),
                self.settings.seed,
            ) & 0x7fff_ffff,
        );
        request.json_schema = Some(choice_schema(&names));
        complete_parsed(
            &self.client,
            request,
            self.settings.repairs,
            |text| parse_choice(text, &names),
            |problem| repair_message(problem, &names),
        )
        .await
        .map_err(|e| format!("dimension {}: {e}", dimension.key))?
        .map_err(|unreadable| format!("dimension {}: {}", dimension.key, unreadable.describe()))
    }
}

/// The majority of the votes (ties go to the category listed first), its parents, and
/// with several votes the share agreeing at each level.
fn tally(dimension: &DimensionChoices, votes: Vec<String>) -> DimensionTag {
    let position = |name: &str| dimension.choices.iter().position(|c| c.name == name);
    let mut counts = vec![0usize; dimension.choices.len()];
    for vote in &votes {
        if let Some(at) = position(vote) {
            counts[at] += 1;
        }
    }
    let best = counts
        .iter()
        .enumerate()
        .max_by(|(a, x), (b, y)| x.cmp(y).then(b.cmp(a)))
        .map_or(0, |(at, _)| at);
    let chosen = &dimension.choices[best];
    let categories: BTreeMap<Granularity, String> = chosen.path.iter().cloned().collect();
    if votes.len() < 2 {
        return DimensionTag {
            categories,
            confidence: None,
            votes: None,
        };
    }
    let mut confidence = BTreeMap::new();
    for (level, category) in &chosen.path {
        let agreeing = votes
            .iter()
            .filter_map(|vote| position(vote))
            .filter(|&at| {
                dimension.choices[at]
                    .path
                    .iter()
                    .any(|(l, c)| l == level && c == category)
            })
            .count();
        confidence.insert(*level, agreeing as f64 / votes.len() as f64);
    }
    DimensionTag {
        categories,
        confidence: Some(confidence),
        votes: Some(votes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dimension() -> DimensionChoices {
        let choice = |name: &str, coarse: &str| Choice {
            name: name.into(),
            description: format!("{name} questions"),
            path: vec![
                (Granularity::Coarse, coarse.into()),
                (Granularity::Medium, name.into()),
            ],
            examples: Vec::new(),
        };
        DimensionChoices {
            key: "qc".into(),
            name: "Question Complexity".into(),
            choices: vec![
                choice("a1", "a"),
                choice("a2", "a"),
                choice("b1", "b"),
                choice("b2", "b"),
            ],
        }
    }

    #[test]
    fn the_majority_wins_and_implies_its_parents_with_shares_per_level() {
        let votes = ["b1", "a1", "b1", "b2", "a2"].map(String::from).to_vec();
        let tag = tally(&dimension(), votes.clone());
        assert_eq!(tag.categories[&Granularity::Coarse], "b");
        assert_eq!(tag.categories[&Granularity::Medium], "b1");
        let confidence = tag.confidence.unwrap();
        assert_eq!(confidence[&Granularity::Medium], 0.4);
        // b1 and b2 are both under b.
        assert_eq!(confidence[&Granularity::Coarse], 0.6);
        assert_eq!(tag.votes.unwrap(), votes);
    }

    #[test]
    fn a_tie_goes_to_the_category_listed_first_and_one_vote_has_no_confidence() {
        let tag = tally(&dimension(), ["b2", "a2"].map(String::from).to_vec());
        assert_eq!(tag.categories[&Granularity::Medium], "a2");
        let one = tally(&dimension(), vec!["b2".into()]);
        assert_eq!(one.categories[&Granularity::Coarse], "b");
        assert!(one.confidence.is_none() && one.votes.is_none());
    }
}
