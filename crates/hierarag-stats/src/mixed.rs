//! A mixed-design ANOVA: one factor between subjects, one within, as pingouin's `mixed_anova`.

use crate::anova::f_survival;

/// One effect of a [`MixedAnova`]: pingouin's row of the table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MixedTerm {
    /// The effect's sum of squares.
    pub ss: f64,
    /// Its degrees of freedom.
    pub df1: f64,
    /// The degrees of freedom of its error term.
    pub df2: f64,
    /// `(ss / df1) / (ss_error / df2)`; NaN when the error term is zero (no variation left).
    pub f: f64,
    /// `P(F(df1, df2) > f)`, uncorrected for sphericity; NaN where `f` is.
    pub p: f64,
    /// Partial η²: `ss / (ss + ss_error)`.
    pub np2: f64,
}

/// The mixed ANOVA table: the between-subjects factor, the within-subjects factor, and their
/// interaction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MixedAnova {
    pub between: MixedTerm,
    pub within: MixedTerm,
    pub interaction: MixedTerm,
}

/// The mixed ANOVA of `y[subject][condition]` (every subject measured under every condition,
/// the within factor) with each subject in one `groups[subject]` (the between factor), as
/// `pingouin.mixed_anova(dv, within, subject, between)` with its defaults: the same sums of
/// squares, degrees of freedom, F, uncorrected p (`p_unc`) and partial η² (`np2`). Groups are
/// the distinct labels used (they need not be `0..k`).
///
/// In HieraRAG's comparison the subjects are questions, the conditions systems and the groups
/// categories: the interaction says whether the systems' difference depends on the category.
///
/// Returns `None` when `y` and `groups` differ in length, a subject's row differs in length
/// from the first, there are fewer than two conditions or two groups, no degrees of freedom
/// are left for the between error (as many subjects as groups), or a value is not finite.
/// Where an error term is no more than rounding noise (below 1e-12 of the total sum of squares,
/// as when every condition has the same values), the terms it divides have NaN F, p and η²,
/// where pingouin reports whatever the noise gives.
pub fn mixed_anova(y: &[Vec<f64>], groups: &[usize]) -> Option<MixedAnova> {
    let n_subjects = y.len();
    if n_subjects != groups.len() || n_subjects == 0 {
        return None;
    }
    let n_conditions = y[0].len();
    if n_conditions < 2
        || y.iter()
            .any(|row| row.len() != n_conditions || row.iter().any(|v| !v.is_finite()))
    {
        return None;
    }
    let mut labels: Vec<usize> = groups.to_vec();
    labels.sort_unstable();
    labels.dedup();
    let n_groups = labels.len();
    if n_groups < 2 || n_subjects <= n_groups {
        return None;
    }
    let group_of: Vec<usize> = groups
        .iter()
        .map(|g| labels.binary_search(g).expect("a label of its own list"))
        .collect();

    let j = n_conditions as f64;
    let total_n = (n_subjects * n_conditions) as f64;
    let grand = y.iter().flatten().sum::<f64>() / total_n;
    let ss_total: f64 = y.iter().flatten().map(|v| (v - grand) * (v - grand)).sum();

    // Group means (over all the group's measurements) and their counts.
    let mut group_n = vec![0usize; n_groups];
    let mut group_sum = vec![0.0; n_groups];
    let mut cell_sum = vec![vec![0.0; n_conditions]; n_groups];
    for (row, &g) in y.iter().zip(&group_of) {
        group_n[g] += 1;
        for (c, v) in row.iter().enumerate() {
            group_sum[g] += v;
            cell_sum[g][c] += v;
        }
    }
    let ss_between: f64 = (0..n_groups)
        .map(|g| {
            let count = group_n[g] as f64 * j;
            let mean = group_sum[g] / count;
            (mean - grand) * (mean - grand) * count
        })
        .sum();
    let ss_within: f64 = (0..n_conditions)
        .map(|c| {
            let mean = y.iter().map(|row| row[c]).sum::<f64>() / n_subjects as f64;
            (mean - grand) * (mean - grand) * n_subjects as f64
        })
        .sum();
    // Residuals around the cell (group × condition) means.
    let ss_cells: f64 = y
        .iter()
        .zip(&group_of)
        .flat_map(|(row, &g)| {
            let cells = &cell_sum[g];
            let n = group_n[g] as f64;
            row.iter()
                .zip(cells)
                .map(move |(v, sum)| (v - sum / n) * (v - sum / n))
        })
        .sum();
    let ss_interaction = ss_total - (ss_cells + ss_within + ss_between);
    let ss_subjects = j * y
        .iter()
        .map(|row| {
            let mean = row.iter().sum::<f64>() / j;
            (mean - grand) * (mean - grand)
        })
        .sum::<f64>();
    let ss_error_between = ss_subjects - ss_between;
    let ss_error_within = ss_total - (ss_within + ss_subjects + ss_interaction);

    let df_between = (n_groups - 1) as f64;
    let df_within = (n_conditions - 1) as f64;
    let df_interaction = df_within * df_between;
    let df_error_between = (n_subjects - n_groups) as f64;
    let df_error_within = df_within * df_error_between;
    // Identical conditions leave only rounding noise within subjects: pingouin divides it by
    // itself (F = −7.3, or +∞ with p = 0). Below 1e-12 of the total it is no variation.
    let no_variation = |ss_error: f64| ss_error.abs() <= 1e-12 * ss_total;
    let term = |ss: f64, df1: f64, ss_error: f64, df2: f64| {
        if no_variation(ss_error) {
            return MixedTerm {
                ss,
                df1,
                df2,
                f: f64::NAN,
                p: f64::NAN,
                np2: f64::NAN,
            };
        }
        let f = (ss / df1) / (ss_error / df2);
        MixedTerm {
            ss,
            df1,
            df2,
            f,
            p: f_survival(f, df1, df2),
            np2: ss / (ss + ss_error),
        }
    };
    Some(MixedAnova {
        between: term(ss_between, df_between, ss_error_between, df_error_between),
        within: term(ss_within, df_within, ss_error_within, df_error_within),
        interaction: term(
            ss_interaction,
            df_interaction,
            ss_error_within,
            df_error_within,
        ),
    })
}
