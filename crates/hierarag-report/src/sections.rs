//! The report's content as sections of paragraphs, tables and lists, rendered the same way
//! into Markdown and HTML.

use hierarag_analysis::{Analysis, Estimate, Factorial};

use crate::ReportInput;
use crate::format::{delta, num, p_value, seconds, signed, with_interval};

/// One piece of text in a table cell or list item.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Text {
    Plain(String),
    /// An identifier (category, question id), shown as code.
    Code(String),
    /// Bold.
    Strong(String),
    /// Several pieces side by side.
    Join(Vec<Text>),
}

impl From<String> for Text {
    fn from(text: String) -> Text {
        Text::Plain(text)
    }
}

impl From<&str> for Text {
    fn from(text: &str) -> Text {
        Text::Plain(text.to_owned())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Table {
    pub headers: Vec<String>,
    /// Per column: right-aligned (numbers).
    pub numeric: Vec<bool>,
    pub rows: Vec<Vec<Text>>,
}

impl Table {
    pub(crate) fn new(headers: &[(&str, bool)]) -> Table {
        Table {
            headers: headers.iter().map(|(h, _)| (*h).to_owned()).collect(),
            numeric: headers.iter().map(|(_, n)| *n).collect(),
            rows: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Block {
    Paragraph(String),
    Table(Table),
    List(Vec<Text>),
    /// A sub-heading inside a section.
    Heading(String),
    /// Where the HTML report puts a chart (the Markdown report leaves it out).
    Chart(ChartRef),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ChartRef {
    Discpow,
    Rho,
    Categories(String),
    Interaction(String),
    /// The forest and interaction plots of the comparison's level at this index.
    ComparisonForest(usize),
    ComparisonInteraction(usize),
    Taxonomy,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Section {
    /// The HTML anchor.
    pub id: String,
    pub title: String,
    pub blocks: Vec<Block>,
}

/// Every section, in report order.
pub(crate) fn sections(input: &ReportInput<'_>) -> Vec<Section> {
    let analysis = input.analysis;
    let mut out = vec![run(input)];
    out.extend(systems(input));
    out.extend(input.comparison.map(crate::comparison::section));
    out.extend(input.validity.map(crate::validity::section));
    out.extend(
        input
            .items
            .map(|items| crate::items::section(items, analysis)),
    );
    out.extend(recommendations(analysis));
    out.extend(table1(analysis));
    out.extend(table2(analysis));
    out.extend(table3(analysis));
    out.extend(splits(analysis));
    out.extend(analysis.factorials.iter().map(|f| factorial(f, analysis)));
    out.extend(refusals(analysis));
    out.extend(human_validation(analysis));
    out.extend(input.ppi.map(crate::ppi::section));
    out.extend(tags(analysis));
    out.extend(categories(analysis));
    if input.taxonomy.is_some() {
        out.push(Section {
            id: "taxonomy".into(),
            title: "Taxonomy".into(),
            blocks: vec![Block::Chart(ChartRef::Taxonomy)],
        });
    }
    out.extend(notes(analysis));
    out
}

/// The run's systems side by side, then each system after the first with its own
/// recommendations and Table 2 (the sections after these are the first system's).
fn systems(input: &ReportInput<'_>) -> Vec<Section> {
    let Some(first) = input.systems.first() else {
        return Vec::new();
    };
    let mut table = Table::new(&[
        ("system", false),
        ("kind", false),
        ("answered", true),
        ("scored", true),
        ("MAP", true),
        ("nDCG@10", true),
        ("Recall@10", true),
        ("CS", true),
        ("ROUGE-1", true),
        ("BLEU", true),
        ("refusal rate", true),
    ]);
    // The judge's column only when a judge graded some system's answers.
    let judged = input.systems.iter().any(|s| s.means.judge.is_some());
    if judged {
        table.headers.push("judge".into());
        table.numeric.push(true);
    }
    // The count of empty rankings only when some system's ranking was empty.
    let emptied = input.systems.iter().any(|s| s.means.empty_rankings > 0);
    if emptied {
        table.headers.push("empty rankings".into());
        table.numeric.push(true);
    }
    for system in &input.systems {
        let m = &system.means;
        let mut row: Vec<Text> = vec![
            Text::Code(system.name.clone()),
            system.kind.as_str().into(),
            system.answered.to_string().into(),
            system.scored.to_string().into(),
            num(m.map, 3).into(),
            num(m.ndcg_10, 3).into(),
            num(m.recall_10, 3).into(),
            num(m.cs, 3).into(),
            num(m.rouge1, 3).into(),
            num(m.bleu, 1).into(),
            num(m.refusal_rate, 3).into(),
        ];
        if judged {
            row.push(num(m.judge, 3).into());
        }
        if emptied {
            row.push(m.empty_rankings.to_string().into());
        }
        table.rows.push(row);
    }
    let mut out = vec![Section {
        id: "systems".into(),
        title: "Systems".into(),
        blocks: vec![
            Block::Paragraph(format!(
                "The run answered its benchmark with {} system{}. Means over each system's \
scored questions; a retrieval mean (MAP, nDCG@10, Recall@10) counts a question whose ranking was \
empty (the system found nothing) as 0 on every measure, as trec_eval -c does, and is \"–\" when \
the system names no document at all. The sections after the systems' are system {}'s; \
hierarag analyze --system NAME gives another's whole analysis.",
                input.systems.len(),
                if input.systems.len() == 1 { "" } else { "s" },
                first.name
            )),
            Block::Table(table),
        ],
    }];
    for system in &input.systems[1..] {
        let mut blocks = Vec::new();
        match system.analysis {
            None => blocks.push(Block::Paragraph(
                "Not analysed yet (no analysis.json in its folder).".into(),
            )),
            Some(analysis) => {
                for section in recommendations(analysis)
                    .into_iter()
                    .chain(table2(analysis))
                {
                    blocks.push(Block::Heading(section.title));
                    blocks.extend(
                        section
                            .blocks
                            .into_iter()
                            .filter(|b| !matches!(b, Block::Chart(_))),
                    );
                }
            }
        }
        out.push(Section {
            id: format!("system-{}", slug(&system.name)),
            title: format!("System {}", system.name),
            blocks,
        });
    }
    out
}

fn metric_label(analysis: &Analysis) -> &'static str {
    analysis.settings.metric.mean_label()
}

fn run(input: &ReportInput<'_>) -> Section {
    let summary = &input.summary;
    let analysis = input.analysis;
    let mut blocks = Vec::new();
    let mut facts = Table::new(&[("", false), ("", false)]);
    for (label, value) in &summary.facts {
        facts
            .rows
            .push(vec![label.as_str().into(), value.as_str().into()]);
    }
    facts.rows.push(vec![
        "questions analysed".into(),
        format!(
            "{} of {}",
            analysis.counts.analysed, analysis.counts.questions
        )
        .into(),
    ]);
    blocks.push(Block::Table(facts));
    if !summary.stages.is_empty() {
        let mut table = Table::new(&[
            ("stage", false),
            ("items", true),
            ("written in the last pass", true),
            ("failed", true),
            ("time", true),
        ]);
        for s in &summary.stages {
            table.rows.push(vec![
                s.stage.as_str().into(),
                s.items.to_string().into(),
                s.written.to_string().into(),
                s.failed.to_string().into(),
                seconds(s.seconds).into(),
            ]);
        }
        blocks.push(Block::Table(table));
    }
    if !summary.usage.is_empty() {
        let mut table = Table::new(&[
            ("stage", false),
            ("role", false),
            ("model", false),
            ("requests", true),
            ("cache hits", true),
            ("failures", true),
            ("prompt tokens", true),
            ("completion tokens", true),
            ("time in calls", true),
            ("cost", true),
        ]);
        for u in &summary.usage {
            table.rows.push(vec![
                u.stage.as_str().into(),
                u.role.as_str().into(),
                u.model.as_str().into(),
                u.requests.to_string().into(),
                u.cache_hits.to_string().into(),
                u.failures.to_string().into(),
                u.prompt_tokens.to_string().into(),
                u.completion_tokens.to_string().into(),
                seconds(u.seconds).into(),
                num(u.cost, 4).into(),
            ]);
        }
        blocks.push(Block::Table(table));
    }
    if !summary.failures.is_empty() {
        blocks.push(Block::Paragraph(format!(
            "{} item{} failed (rerun the run to retry them):",
            summary.failures.len(),
            if summary.failures.len() == 1 { "" } else { "s" }
        )));
        blocks.push(Block::List(
            summary
                .failures
                .iter()
                .map(|f| {
                    Text::Join(vec![
                        format!("{} ", f.stage).into(),
                        Text::Code(f.item.clone()),
                        format!(": {}", f.reason).into(),
                    ])
                })
                .collect(),
        ));
    }
    Section {
        id: "run".into(),
        title: "Run".into(),
        blocks,
    }
}

fn recommendations(analysis: &Analysis) -> Option<Section> {
    let items: Vec<Text> = analysis
        .dimensions
        .iter()
        .filter_map(|d| {
            d.recommendation.as_ref().map(|r| {
                Text::Join(vec![
                    format!("{} ({}): ", d.name, d.dimension).into(),
                    Text::Strong(r.level.as_str().to_owned()),
                    format!(" — {}", r.reason).into(),
                ])
            })
        })
        .collect();
    (!items.is_empty()).then(|| Section {
        id: "recommendations".into(),
        title: "Recommended granularity".into(),
        blocks: vec![
            Block::Paragraph(format!(
                "Per dimension, the finest level reached by steps whose DiscPow gain over the \
coarser level is supported at the {:.0}% level: the step's bootstrap p-value, Holm-adjusted over \
the steps of every dimension, below {}.",
                analysis.settings.confidence * 100.0,
                ((1.0 - analysis.settings.confidence) * 1e6).round() / 1e6
            )),
            Block::List(items),
        ],
    })
}

fn table1(analysis: &Analysis) -> Option<Section> {
    if analysis.table1.is_empty() {
        return None;
    }
    let metric = metric_label(analysis);
    let mut table = Table::new(&[
        ("dimension", false),
        ("n", true),
        ("MAP", true),
        (metric, true),
        ("range", true),
        ("rank", true),
    ]);
    for row in &analysis.table1 {
        table.rows.push(vec![
            row.dimension.as_str().into(),
            row.n.to_string().into(),
            num(row.map, 3).into(),
            num(Some(row.metric), 3).into(),
            num(row.range, 3).into(),
            row.rank
                .map_or_else(|| "–".into(), |r| r.to_string())
                .into(),
        ]);
    }
    Some(Section {
        id: "table1".into(),
        title: "Which dimension discriminates (Table 1)".into(),
        blocks: vec![
            Block::Paragraph(format!(
                "The coarse level of each dimension. Range = max − min of the category means of \
{metric}; rank 1 is the largest range."
            )),
            Block::Table(table),
        ],
    })
}

fn table2(analysis: &Analysis) -> Option<Section> {
    if analysis.table2.is_empty() {
        return None;
    }
    let metric = metric_label(analysis);
    let settings = &analysis.settings;
    let mut table = Table::new(&[
        ("dimension", false),
        ("level", false),
        ("n", true),
        ("MAP", true),
        (metric, true),
        ("NMI", true),
        ("DiscPow [CI]", true),
        ("Δ [CI]", true),
        ("noise floor", true),
        ("corrected [CI]", true),
        ("Δ corrected [CI]", true),
    ]);
    for row in &analysis.table2 {
        table.rows.push(vec![
            row.dimension.as_str().into(),
            format!("{} ({})", row.level, row.n_categories).into(),
            row.n.to_string().into(),
            num(row.map, 3).into(),
            num(Some(row.metric), 3).into(),
            num(row.nmi, 3).into(),
            with_interval(row.discpow.as_ref(), 3).into(),
            delta(row.delta.as_ref()).into(),
            num(row.discpow_noise_floor, 3).into(),
            with_interval(row.discpow_corrected.as_ref(), 3).into(),
            delta(row.delta_corrected.as_ref()).into(),
        ]);
    }
    Some(Section {
        id: "table2".into(),
        title: "Granularity (Table 2)".into(),
        blocks: vec![
            Block::Paragraph(format!(
                "DiscPow = standard deviation (ddof {}) of the category means of {metric}; Δ = \
DiscPow / DiscPow of the coarser level; NMI between categories and {} equal-frequency bins of \
{metric}. Brackets: {:.0}% bootstrap intervals ({} resamples within categories).",
                settings.ddof,
                settings.nmi_bins,
                settings.confidence * 100.0,
                settings.bootstrap
            )),
            Block::Paragraph(
                "Category means wobble by chance, and finer levels have more and smaller categories, so DiscPow grows with granularity even when the finer categories mean nothing: the noise floor is the DiscPow that chance alone gives at these category sizes. The corrected DiscPow takes that chance part out, so a level beats its coarser one only when its corrected value (and Δ corrected) is larger; DiscPow and Δ are the paper's figures, kept for comparison."
                    .into(),
            ),
            Block::Table(table),
            Block::Chart(ChartRef::Discpow),
        ],
    })
}

fn table3(analysis: &Analysis) -> Option<Section> {
    if analysis.table3.is_empty() {
        return None;
    }
    let metric = metric_label(analysis);
    let mut table = Table::new(&[
        ("dimension", false),
        ("", false),
        ("category", false),
        ("n", true),
        ("MAP", true),
        (metric, true),
    ]);
    for block in &analysis.table3 {
        for (place, rows) in [("best", &block.top), ("worst", &block.bottom)] {
            for row in rows {
                table.rows.push(vec![
                    format!("{} {}", block.dimension, block.level).into(),
                    place.into(),
                    Text::Code(row.category.clone()),
                    row.n.to_string().into(),
                    num(row.map, 3).into(),
                    with_interval(Some(&row.metric), 3).into(),
                ]);
            }
        }
    }
    Some(Section {
        id: "table3".into(),
        title: "Hardest and easiest categories (Table 3)".into(),
        blocks: vec![
            Block::Paragraph(format!(
                "The two best and two worst categories of each dimension's finest level, by \
{metric}."
            )),
            Block::Table(table),
        ],
    })
}

fn splits(analysis: &Analysis) -> Option<Section> {
    if analysis.splits.is_empty() {
        return None;
    }
    let metric = metric_label(analysis);
    let parent = format!("parent {metric}");
    let mut table = Table::new(&[
        ("dimension", false),
        ("split", false),
        (parent.as_str(), true),
        ("children", false),
        ("σ_sib", true),
        ("δ_vert", true),
        ("ρ [CI]", true),
        ("calibration", false),
        ("σ_sib floor", true),
        ("ρ by chance (p)", true),
        ("against chance", false),
    ]);
    for split in &analysis.splits {
        let mut children = Vec::new();
        for (i, (c, m)) in split.children.iter().zip(&split.children_means).enumerate() {
            if i > 0 {
                children.push(", ".into());
            }
            children.push(Text::Code(c.clone()));
            children.push(format!(" {}", num(Some(*m), 3)).into());
        }
        table.rows.push(vec![
            split.dimension.as_str().into(),
            Text::Join(vec![
                Text::Code(split.parent.clone()),
                format!(" ({})", split.parent_level).into(),
            ]),
            num(Some(split.parent_mean), 3).into(),
            Text::Join(children),
            num(Some(split.sigma_sib.value), 3).into(),
            num(Some(split.delta_vert.value), 3).into(),
            with_interval(Some(&split.rho), 2).into(),
            split.calibration.describe().into(),
            num(split.sigma_sib_noise_floor, 3).into(),
            p_value(split.rho_p).into(),
            split
                .calibration_against_chance
                .map_or("–", |c| c.describe())
                .into(),
        ]);
    }
    let means: Vec<Text> = analysis
        .dimensions
        .iter()
        .filter_map(|d| {
            d.mean_rho
                .map(|rho| format!("mean ρ of {}: {}", d.dimension, num(Some(rho), 2)).into())
        })
        .collect();
    Some(Section {
        id: "splits".into(),
        title: "Splits (Coherence Ratio)".into(),
        blocks: vec![
            Block::Paragraph(format!(
                "ρ = σ_sib / (δ_vert + ε) with ε = {}: σ_sib is the standard deviation of the \
children's mean {metric}, δ_vert the distance between the parent's own mean and the mean of \
its children's means. ρ > 2: children discriminate and stay aligned with their parent; ρ < 1: \
the split is poorly calibrated.",
                analysis.settings.epsilon
            )),
            Block::Paragraph(format!(
                "Children's means differ by chance too: the σ_sib floor is the σ_sib that chance alone gives at these sizes, and \"ρ by chance\" is how often shuffling the children's labels among their questions gives a ρ at least this large. The paper's label is repeated under \
\"against chance\" only when σ_sib is clearly above chance (p < {:.2}); otherwise the split is \
indistinguishable from noise at this number of questions.",
                1.0 - analysis.settings.confidence
            )),
            Block::Table(table),
            Block::List(means),
            Block::Chart(ChartRef::Rho),
        ],
    })
}

fn factorial(factorial: &Factorial, analysis: &Analysis) -> Section {
    let metric = metric_label(analysis);
    let mut blocks = Vec::new();
    let mut headers: Vec<(&str, bool)> = factorial
        .factors
        .iter()
        .map(|f| (f.dimension.as_str(), false))
        .collect();
    headers.extend([("n", true), ("MAP", true), (metric, true)]);
    let mut cells = Table::new(&headers);
    for c in &factorial.cells {
        let mut row: Vec<Text> = c.categories.iter().map(|x| x.as_str().into()).collect();
        row.push(c.n.to_string().into());
        row.push(num(c.means.map, 3).into());
        row.push(with_interval(Some(&c.metric), 3).into());
        cells.rows.push(row);
    }
    blocks.push(Block::Table(cells));
    if !factorial.gaps.is_empty() {
        blocks.push(Block::List(
            factorial
                .gaps
                .iter()
                .map(|g| {
                    format!(
                        "gap within {}: {} → {}: {}",
                        g.within,
                        g.from,
                        g.to,
                        signed(g.value, 3)
                    )
                    .into()
                })
                .collect(),
        ));
    }
    if !factorial.marginals.is_empty() {
        let pooled = format!("pooled {metric}");
        let unweighted = format!("unweighted {metric}");
        let mut table = Table::new(&[
            ("marginal", false),
            ("n", true),
            ("pooled MAP", true),
            (pooled.as_str(), true),
            (unweighted.as_str(), true),
        ]);
        for m in &factorial.marginals {
            table.rows.push(vec![
                format!("{} = {}", m.dimension, m.category).into(),
                m.n.to_string().into(),
                num(m.pooled.map, 3).into(),
                num(Some(m.pooled.of(analysis.settings.metric)), 3).into(),
                num(Some(m.unweighted), 3).into(),
            ]);
        }
        blocks.push(Block::Table(table));
    }
    let mut effects: Vec<Text> = factorial
        .main_effects
        .iter()
        .map(|e| {
            format!(
                "main effect {}: {}",
                e.contrast,
                signed_with_interval(&e.value)
            )
            .into()
        })
        .collect();
    if let Some(e) = &factorial.interaction {
        effects.push(
            format!(
                "interaction contrast {}: {}",
                e.contrast,
                signed_with_interval(&e.value)
            )
            .into(),
        );
    }
    if let Some(anova) = &factorial.anova {
        let names: Vec<&str> = factorial
            .factors
            .iter()
            .map(|f| f.dimension.as_str())
            .collect();
        effects.push(
            format!(
                "two-way ANOVA (type III sums of squares, unequal n): {} F({}, {}) = {:.2}, p = \
{}; {} F({}, {}) = {:.2}, p = {}; interaction F({}, {}) = {:.2}, p = {}",
                names[0],
                anova.first.df,
                anova.residual_df,
                anova.first.f,
                p_value(Some(anova.first.p)),
                names[1],
                anova.second.df,
                anova.residual_df,
                anova.second.f,
                p_value(Some(anova.second.p)),
                anova.interaction.df,
                anova.residual_df,
                anova.interaction.f,
                p_value(Some(anova.interaction.p))
            )
            .into(),
        );
    }
    effects.extend(
        factorial
            .notes
            .iter()
            .map(|n| format!("not computed: {n}").into()),
    );
    if !effects.is_empty() {
        blocks.push(Block::List(effects));
    }
    if factorial.factors.len() == 2 {
        blocks.push(Block::Chart(ChartRef::Interaction(factorial.set.clone())));
    }
    Section {
        id: format!("factorial-{}", slug(&factorial.set)),
        title: format!("Factorial {} (Table 4)", factorial.set),
        blocks,
    }
}

fn categories(analysis: &Analysis) -> Option<Section> {
    if analysis.levels.is_empty() {
        return None;
    }
    let metric = metric_label(analysis);
    let mut blocks = Vec::new();
    let mut charted: Vec<&str> = Vec::new();
    for level in &analysis.levels {
        if !charted.contains(&level.dimension.as_str()) {
            charted.push(&level.dimension);
            blocks.push(Block::Chart(ChartRef::Categories(level.dimension.clone())));
        }
        blocks.push(Block::Heading(format!(
            "{} {} (set {}, n {}): DiscPow {}, permutation p {}",
            level.dimension,
            level.level,
            level.set,
            level.n,
            with_interval(level.discpow.as_ref(), 3),
            p_value(level.discpow_p)
        )));
        let last = format!("{metric} [CI]");
        let mut table = Table::new(&[
            ("category", false),
            ("n", true),
            ("MAP", true),
            ("nDCG@10", true),
            ("R@10", true),
            ("MRR", true),
            ("CS", true),
            ("ROUGE-1", true),
            ("BLEU", true),
            ("corpus BLEU", true),
            ("refused", true),
            (last.as_str(), true),
        ]);
        for c in &level.categories {
            table.rows.push(vec![
                Text::Code(c.category.clone()),
                c.n.to_string().into(),
                num(c.means.map, 3).into(),
                num(c.means.ndcg_10, 3).into(),
                num(c.means.recall_10, 3).into(),
                num(c.means.mrr, 3).into(),
                num(Some(c.means.cs), 3).into(),
                num(Some(c.means.rouge1), 3).into(),
                num(Some(c.means.bleu), 1).into(),
                num(c.means.corpus_bleu, 1).into(),
                num(Some(c.means.refusal_rate), 2).into(),
                with_interval(Some(&c.metric), 3).into(),
            ]);
        }
        blocks.push(Block::Table(table));
    }
    Some(Section {
        id: "categories".into(),
        title: "Categories per level".into(),
        blocks,
    })
}

/// Refusal precision and recall, overall and per category, when the benchmark has questions
/// marked unanswerable.
fn refusals(analysis: &Analysis) -> Option<Section> {
    let refusals = analysis.refusals.as_ref()?;
    let overall = &refusals.overall;
    let mut blocks = vec![Block::Paragraph(format!(
        "{} of {} questions are marked unanswerable (their documents do not answer them; the \
reference is the refusal). The system refused {} question(s), {} of them unanswerable: \
refusal precision {} (how many refusals were right), recall {} (how many of the questions to \
refuse were refused). The field refusal_correct of scores.jsonl says it per question.",
        overall.unanswerable,
        overall.n,
        overall.refused,
        overall.refused_unanswerable,
        num(overall.precision, 3),
        num(overall.recall, 3),
    ))];
    let mut table = Table::new(&[
        ("set", false),
        ("level", false),
        ("category", false),
        ("n", true),
        ("unanswerable", true),
        ("refused", true),
        ("refused and unanswerable", true),
        ("precision", true),
        ("recall", true),
    ]);
    for row in &refusals.categories {
        let counts = &row.counts;
        table.rows.push(vec![
            row.set.as_str().into(),
            row.level.to_string().into(),
            Text::Code(row.category.clone()),
            counts.n.to_string().into(),
            counts.unanswerable.to_string().into(),
            counts.refused.to_string().into(),
            counts.refused_unanswerable.to_string().into(),
            num(counts.precision, 3).into(),
            num(counts.recall, 3).into(),
        ]);
    }
    blocks.push(Block::Table(table));
    Some(Section {
        id: "refusals".into(),
        title: "Refusals".into(),
        blocks,
    })
}

fn share(share: Option<&hierarag_analysis::Share>) -> String {
    share.map_or_else(
        || "–".into(),
        |s| format!("{:.1}% ({} of {})", s.share * 100.0, s.count, s.n),
    )
}

fn human_validation(analysis: &Analysis) -> Option<Section> {
    let agreement = analysis.human_validation.as_ref()?;
    let mut blocks = vec![Block::Paragraph(format!(
        "{} items rated by {} annotator{} ({} ratings; {} items with the blind category task), \
from `hierarag annotate`.",
        agreement.n_items,
        agreement.annotators.len(),
        if agreement.annotators.len() == 1 {
            ""
        } else {
            "s"
        },
        agreement.n_ratings,
        agreement.n_category_task
    ))];
    let mut scales = Table::new(&[
        ("scale", false),
        ("range", false),
        ("raters", true),
        ("items", true),
        ("Fleiss' κ", true),
    ]);
    for scale in &agreement.scales {
        scales.rows.push(vec![
            scale.scale.as_str().into(),
            format!("0–{}", scale.max).into(),
            scale.raters.len().to_string().into(),
            scale.n_items.to_string().into(),
            num(scale.kappa, 3).into(),
        ]);
    }
    blocks.push(Block::Table(scales));
    let quality = &agreement.quality;
    blocks.push(Block::List(vec![
        format!(
            "acceptable reference answers (mean correctness ≥ 2): {}",
            share(quality.acceptable.as_ref())
        )
        .into(),
        format!(
            "hallucination-free (every rater 0): {}",
            share(quality.hallucination_free.as_ref())
        )
        .into(),
        format!(
            "answerable (mean answerability ≥ 2): {}; mean answerability {}",
            share(quality.answerable.as_ref()),
            num(quality.answerability_mean, 2)
        )
        .into(),
    ]));
    if let Some(category) = &agreement.category {
        let mut table = Table::new(&[
            ("annotator", false),
            ("picks", true),
            ("exact", true),
            ("chance", true),
            ("p", true),
            ("exact or sibling", true),
            ("chance", true),
            ("p", true),
        ]);
        for pick in category.per_annotator.iter().chain([&category.pooled]) {
            table.rows.push(vec![
                pick.annotator
                    .clone()
                    .unwrap_or_else(|| "all (pooled)".into())
                    .into(),
                pick.n.to_string().into(),
                format!("{:.1}%", pick.exact.rate * 100.0).into(),
                format!("{:.1}%", pick.exact.baseline * 100.0).into(),
                p_value(pick.exact.p).into(),
                format!("{:.1}%", pick.parent.rate * 100.0).into(),
                format!("{:.1}%", pick.parent.baseline * 100.0).into(),
                p_value(pick.parent.p).into(),
            ]);
        }
        blocks.push(Block::Heading(format!(
            "Blind category picks ({} items)",
            category.n_items
        )));
        blocks.push(Block::Table(table));
        let mut items: Vec<Text> = category
            .pairs
            .iter()
            .map(|pair| {
                format!(
                    "{} vs {}: Cohen's κ {} on {} items ({} identical picks)",
                    pair.a,
                    pair.b,
                    num(pair.kappa, 3),
                    pair.n,
                    pair.same
                )
                .into()
            })
            .collect();
        if let Some(link) = &category.coherence {
            items.push(
                format!(
                    "agreement vs the Coherence Ratio of the item's split: point-biserial r = {}, \
p = {} over {} items ({} agreed; {} without a split)",
                    num(link.r, 2),
                    p_value(link.p),
                    link.n,
                    link.agreed,
                    link.without_split
                )
                .into(),
            );
        }
        if !items.is_empty() {
            blocks.push(Block::List(items));
        }
    }
    if let Some(judge) = &agreement.judge {
        blocks.extend(judge_blocks(judge));
    }
    if !agreement.notes.is_empty() {
        blocks.push(Block::List(
            agreement.notes.iter().map(|n| n.as_str().into()).collect(),
        ));
    }
    Some(Section {
        id: "human-validation".into(),
        title: "Human validation".into(),
        blocks,
    })
}

/// The judge against the people per task and scale, each metric against their mean
/// correctness of the answers, and the verdict.
fn judge_blocks(judge: &hierarag_analysis::JudgeAgreement) -> Vec<Block> {
    let mut blocks = vec![Block::Heading(format!(
        "The judge and the metrics against people{}",
        judge
            .judge
            .as_ref()
            .map_or_else(String::new, |m| format!(" (judge: {m})"))
    ))];
    if let Some(verdict) = &judge.verdict {
        blocks.push(Block::Paragraph(verdict.clone()));
    }
    let mut table = Table::new(&[
        ("task", false),
        ("scale", false),
        ("against", false),
        ("n", true),
        ("quadratic κ", true),
        ("Spearman ρ", true),
        ("p", true),
        ("people's κ", true),
    ]);
    for task in &judge.tasks {
        for scale in &task.scales {
            for vs in scale.annotators.iter().chain(scale.mean.iter()) {
                table.rows.push(vec![
                    task.task.as_str().into(),
                    scale.scale.as_str().into(),
                    vs.annotator.as_str().into(),
                    vs.n.to_string().into(),
                    num(vs.kappa, 3).into(),
                    num(vs.spearman, 3).into(),
                    p_value(vs.p).into(),
                    num(scale.human_kappa, 3).into(),
                ]);
            }
        }
    }
    if !table.rows.is_empty() {
        blocks.push(Block::Table(table));
    }
    let mut metrics = Table::new(&[
        ("metric", false),
        ("dimension", false),
        ("answers", true),
        ("Spearman ρ with the people's correctness", true),
        ("p", true),
    ]);
    for metric in &judge.metrics {
        metrics.rows.push(vec![
            Text::Code(metric.metric.clone()),
            metric.dimension.as_str().into(),
            metric.n.to_string().into(),
            num(metric.rho, 3).into(),
            p_value(metric.p).into(),
        ]);
    }
    if !metrics.rows.is_empty() {
        blocks.push(Block::Table(metrics));
    }
    blocks.push(Block::List(
        judge.notes.iter().map(|n| n.as_str().into()).collect(),
    ));
    blocks
}

fn percent(rate: f64) -> String {
    format!("{:.1}%", rate * 100.0)
}

/// What the tagger's labels add: agreement with the intended categories, the tagger beside
/// the people, confounders and the adjusted effects.
fn tags(analysis: &Analysis) -> Option<Section> {
    let tags = analysis.tags.as_ref()?;
    let mut blocks = vec![Block::Paragraph(format!(
        "{} questions tagged on {} by {} (`hierarag tag`){}. The tagger is a model, not a \
person: its agreement is a cheap check on every question of what people checked on a sample, \
and its tags are only as good as its reading of the category descriptions.",
        tags.n_tagged,
        tags.dimensions.join(", "),
        tags.tagger.as_deref().unwrap_or("an LLM"),
        if tags.n_untagged > 0 {
            format!("; {} not tagged", tags.n_untagged)
        } else {
            String::new()
        }
    ))];
    if !tags.agreement.is_empty() {
        let mut table = Table::new(&[
            ("dimension", false),
            ("level", false),
            ("questions", true),
            ("exact", true),
            ("chance", true),
            ("p", true),
            ("exact or sibling", true),
            ("chance", true),
            ("p", true),
        ]);
        for row in &tags.agreement {
            table.rows.push(vec![
                row.dimension.as_str().into(),
                row.level.as_str().into(),
                row.n.to_string().into(),
                percent(row.exact.rate).into(),
                percent(row.exact.baseline).into(),
                p_value(row.exact.p).into(),
                percent(row.parent.rate).into(),
                percent(row.parent.baseline).into(),
                p_value(row.parent.p).into(),
            ]);
        }
        blocks.push(Block::Heading(
            "Agreement with the intended category".into(),
        ));
        blocks.push(Block::Table(table));
    }
    if !tags.splits.is_empty() {
        let mut table = Table::new(&[
            ("dimension", false),
            ("split", false),
            ("questions", true),
            ("exact", true),
            ("exact or sibling", true),
            ("ρ", true),
        ]);
        for split in &tags.splits {
            table.rows.push(vec![
                split.dimension.as_str().into(),
                format!("{} → {}", split.parent, split.children.join(", ")).into(),
                split.exact.n.to_string().into(),
                percent(split.exact.share).into(),
                percent(split.parent_match.share).into(),
                num(split.rho, 3).into(),
            ]);
        }
        blocks.push(Block::Heading("Agreement per split".into()));
        blocks.push(Block::Table(table));
    }
    let mut items: Vec<Text> = Vec::new();
    if let Some(link) = &tags.coherence {
        items.push(
            format!(
                "agreement (exact or sibling) vs the Coherence Ratio of the question's split: \
point-biserial r = {}, p = {} over {} questions ({} agreed; {} without a split)",
                num(link.r, 2),
                p_value(link.p),
                link.n,
                link.agreed,
                link.without_split
            )
            .into(),
        );
    }
    if let Some(annotator) = &tags.annotator {
        items.push(
            format!(
                "the tagger on the {} items of the blind category task: exact {}; Fleiss' κ of \
the people {} and with the tagger {} ({} items every annotator picked for)",
                annotator.n_items,
                percent(annotator.exact.share),
                num(annotator.fleiss_humans, 3),
                num(annotator.fleiss_with_tagger, 3),
                annotator.n_common
            )
            .into(),
        );
        for pair in &annotator.pairs {
            items.push(
                format!(
                    "tagger vs {}: Cohen's κ {} on {} items ({} identical picks)",
                    pair.b,
                    num(pair.kappa, 3),
                    pair.n,
                    pair.same
                )
                .into(),
            );
        }
    }
    if !items.is_empty() {
        blocks.push(Block::List(items));
    }
    if !tags.confounders.is_empty() {
        let mut table = Table::new(&[
            ("set", false),
            ("other dimension", false),
            ("its tags per category", false),
            ("χ²", true),
            ("df", true),
            ("p", true),
            ("", false),
        ]);
        for c in &tags.confounders {
            let spread: Vec<String> = c
                .categories
                .iter()
                .zip(&c.counts)
                .map(|(category, row)| {
                    let cells: Vec<String> = c
                        .other_categories
                        .iter()
                        .zip(row)
                        .map(|(other, count)| format!("{other} {count}"))
                        .collect();
                    format!("{category}: {}", cells.join(", "))
                })
                .collect();
            table.rows.push(vec![
                c.set.as_str().into(),
                c.other.as_str().into(),
                spread.join("; ").into(),
                num(c.chi2, 2).into(),
                c.dof.to_string().into(),
                p_value(c.p).into(),
                match (c.flagged, c.sparse) {
                    (true, true) => "confounded (few questions per cell)",
                    (true, false) => "confounded",
                    (false, true) => "few questions per cell",
                    (false, false) => "",
                }
                .into(),
            ]);
        }
        blocks.push(Block::Heading("Confounders".into()));
        blocks.push(Block::Paragraph(
            "Each set was made for one dimension; the others were left to chance. A small p \
says a set's categories differ in another dimension's tags, so a gap between its categories \
may come from that dimension instead."
                .into(),
        ));
        blocks.push(Block::Table(table));
    }
    if !tags.adjusted.is_empty() {
        let mut table = Table::new(&[
            ("set", false),
            ("factor", false),
            ("categories", true),
            ("DiscPow alone", true),
            ("p alone", true),
            ("F adjusted", true),
            ("p adjusted", true),
            ("", false),
        ]);
        for model in &tags.adjusted {
            for f in &model.factors {
                table.rows.push(vec![
                    format!("{} (n = {})", model.set, model.n).into(),
                    format!(
                        "{} {}{}",
                        f.dimension,
                        f.level,
                        if f.intended {
                            " (the set's)"
                        } else {
                            " (tags)"
                        }
                    )
                    .into(),
                    f.n_categories.to_string().into(),
                    num(f.discpow, 4).into(),
                    p_value(f.one_way_p).into(),
                    num(f.f, 2).into(),
                    p_value(f.adjusted_p).into(),
                    if f.disagrees { "disagree" } else { "" }.into(),
                ]);
            }
        }
        blocks.push(Block::Heading(format!(
            "Effects on {} adjusted for the other dimensions",
            analysis.settings.metric.mean_label()
        )));
        blocks.push(Block::Paragraph(
            "One linear model per set with a factor per dimension (type II sums of squares): \
each factor's effect once the others are accounted for, beside the factor alone. \
\"disagree\" marks a factor significant alone but not adjusted, or the reverse."
                .into(),
        ));
        blocks.push(Block::Table(table));
    }
    if !tags.notes.is_empty() {
        blocks.push(Block::List(
            tags.notes.iter().map(|n| n.as_str().into()).collect(),
        ));
    }
    Some(Section {
        id: "tags".into(),
        title: "Tags".into(),
        blocks,
    })
}

fn notes(analysis: &Analysis) -> Option<Section> {
    let mut items: Vec<Text> = analysis.notes.iter().map(|n| n.as_str().into()).collect();
    items.extend(analysis.counts.left_out.iter().map(|l| {
        Text::Join(vec![
            "question ".into(),
            Text::Code(l.id.clone()),
            format!(" left out: {}", l.reason).into(),
        ])
    }));
    (!items.is_empty()).then(|| Section {
        id: "not-computed".into(),
        title: "Not computed".into(),
        blocks: vec![Block::List(items)],
    })
}

fn signed_with_interval(estimate: &Estimate) -> String {
    let value = signed(estimate.value, 3);
    match estimate.ci {
        Some([lo, hi]) if lo.is_finite() && hi.is_finite() => {
            format!("{value} [{}, {}]", signed(lo, 3), signed(hi, 3))
        }
        _ => value,
    }
}

/// An HTML anchor made of a set name.
pub(crate) fn slug(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

#[cfg(test)]
mod tests {
    use hierarag_analysis::{
        JudgeAgreement, JudgeScale, JudgeVsPerson, MetricAgreement, TaskAgreement,
    };

    use super::*;

    #[test]
    fn the_judge_agreement_is_shown_with_its_ceiling_metrics_and_verdict() {
        let vs = |who: &str, kappa: f64| JudgeVsPerson {
            annotator: who.into(),
            n: 12,
            kappa: Some(kappa),
            spearman: Some(0.8),
            p: Some(0.0004),
        };
        let judge = JudgeAgreement {
            judge: Some("qwen (openai)".into()),
            tasks: vec![TaskAgreement {
                task: "answers".into(),
                scales: vec![JudgeScale {
                    scale: "correctness".into(),
                    max: 3,
                    n_items: 12,
                    annotators: vec![vs("alice", 0.71)],
                    mean: Some(vs("mean", 0.75)),
                    human_kappa: Some(0.83),
                }],
            }],
            metrics: vec![MetricAgreement {
                metric: "bleu".into(),
                dimension: "qc".into(),
                n: 12,
                rho: Some(0.12),
                p: Some(0.7),
            }],
            analysed_metric: "cs".into(),
            verdict: Some("CS does not follow the people".into()),
            notes: vec!["κ is quadratic-weighted".into()],
        };
        let text = format!("{:?}", judge_blocks(&judge));
        for needle in [
            "qwen (openai)",
            "CS does not follow the people",
            "alice",
            "0.710",
            "0.750",
            "0.830",
            "<0.001",
            "bleu",
            "0.120",
            "0.700",
        ] {
            assert!(text.contains(needle), "{needle} missing: {text}");
        }
    }
}
