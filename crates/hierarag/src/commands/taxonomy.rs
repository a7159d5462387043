//! `hierarag taxonomy show|validate|init|export`.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, bail};
use hierarag_taxonomy::{DEFAULT_TAXONOMY_TOML, Dimension, Granularity, SvgOptions};

use hierarag_run::taxonomy::load;

use crate::cli::{GranularityArg, TaxonomyCommand, TaxonomyFormat};

pub fn run(command: &TaxonomyCommand) -> anyhow::Result<ExitCode> {
    let mut out = crate::printer::stdout();
    match command {
        TaxonomyCommand::Init => out.write_all(DEFAULT_TAXONOMY_TOML.as_bytes())?,
        TaxonomyCommand::Validate(args) => {
            let taxonomy = load(Some(&args.file))?;
            writeln!(
                out,
                "{}: valid ({} dimensions, {} categories, {} personas)",
                args.file.display(),
                taxonomy.dimensions.len(),
                taxonomy.n_categories(),
                taxonomy.personas().count()
            )?;
        }
        TaxonomyCommand::Show(args) => {
            let taxonomy = load(args.file.as_deref())?;
            let dimensions: Vec<&Dimension> = match &args.dimension {
                Some(key) => match taxonomy.dimension(key) {
                    Some(d) => vec![d],
                    None => bail!(
                        "no dimension `{key}`; the taxonomy has: {}",
                        taxonomy
                            .dimensions
                            .iter()
                            .map(|d| format!("`{}`", d.key))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                },
                None => taxonomy.dimensions.iter().collect(),
            };
            for dimension in dimensions {
                show_dimension(&mut out, dimension, args.descriptions)?;
            }
            if args.dimension.is_none() {
                for categorization in &taxonomy.user_categorizations {
                    writeln!(out, "users: {}", categorization.name)?;
                    for persona in &categorization.personas {
                        writeln!(out, "  {} ({:.2})", persona.name, persona.probability)?;
                        if args.descriptions {
                            writeln!(out, "      {}", persona.description)?;
                        }
                    }
                }
            }
        }
        TaxonomyCommand::Svg(args) => {
            let taxonomy = load(args.file.as_deref())?;
            let svg = taxonomy.to_svg(&SvgOptions {
                dimensions: args.dimensions.clone(),
                tooltips: args.descriptions,
            })?;
            match &args.out {
                Some(path) => std::fs::write(path, svg)
                    .with_context(|| format!("writing {}", path.display()))?,
                None => out.write_all(svg.as_bytes())?,
            }
        }
        TaxonomyCommand::Export(args) => {
            let taxonomy = load(args.file.as_deref())?;
            match args.format {
                TaxonomyFormat::Toml => out.write_all(taxonomy.to_toml_string().as_bytes())?,
                TaxonomyFormat::Datamorgana => {
                    let granularity = match args.granularity {
                        GranularityArg::Coarse => Granularity::Coarse,
                        GranularityArg::Medium => Granularity::Medium,
                        GranularityArg::Fine => Granularity::Fine,
                    };
                    writeln!(out, "{}", taxonomy.to_datamorgana_json(granularity))?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints one dimension as a tree, each category under its parent.
fn show_dimension(
    out: &mut impl Write,
    dimension: &Dimension,
    descriptions: bool,
) -> std::io::Result<()> {
    let sizes: Vec<String> = dimension
        .levels
        .iter()
        .map(|l| format!("{} {}", l.granularity, l.categories.len()))
        .collect();
    writeln!(
        out,
        "{} — {} ({})",
        dimension.key,
        dimension.name,
        sizes.join(", ")
    )?;
    let Some(coarse) = dimension.level(Granularity::Coarse) else {
        return Ok(());
    };
    for category in &coarse.categories {
        show_category(
            out,
            dimension,
            Granularity::Coarse,
            &category.name,
            1,
            descriptions,
        )?;
    }
    Ok(())
}

fn show_category(
    out: &mut impl Write,
    dimension: &Dimension,
    granularity: Granularity,
    name: &str,
    depth: usize,
    descriptions: bool,
) -> std::io::Result<()> {
    let indent = "  ".repeat(depth);
    writeln!(out, "{indent}{name} [{granularity}]")?;
    if descriptions && let Some((_, category)) = dimension.category(name) {
        writeln!(out, "{indent}    {}", category.description)?;
    }
    if let Some(below) = granularity.below() {
        for child in dimension.children(name) {
            show_category(out, dimension, below, &child.name, depth + 1, descriptions)?;
        }
    }
    Ok(())
}
