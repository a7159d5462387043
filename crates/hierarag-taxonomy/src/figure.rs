//! Drawing a taxonomy's hierarchy as an SVG figure: one panel per dimension, one column per level.

use std::fmt::Write as _;

use crate::error::UnknownDimension;
use crate::model::{Category, Dimension, Granularity, Taxonomy};
use crate::svg_text::SvgText;

/// Options for [`Taxonomy::to_svg`].
#[derive(Debug, Clone, Default)]
pub struct SvgOptions {
    /// Dimension keys to draw, in this order; empty means all dimensions in taxonomy order.
    pub dimensions: Vec<String>,
    /// Add each category's description as a `<title>` tooltip.
    pub tooltips: bool,
}

/// Font size of category names and the unit of the text-width estimate.
const FONT_SIZE: f64 = 14.0;
const TITLE_FONT_SIZE: f64 = 16.0;
const HEADER_FONT_SIZE: f64 = 12.0;
/// Average advance of a sans-serif character, in em; names are mostly lowercase and `_`, so this
/// errs on the wide side and boxes get a little slack rather than clipped text.
const EM_PER_CHAR: f64 = 0.6;
/// Bold titles run wider than regular text.
const BOLD_EM_PER_CHAR: f64 = 0.65;

const MARGIN: f64 = 20.0;
const BOX_HEIGHT: f64 = 28.0;
const BOX_PADDING_X: f64 = 10.0;
const BOX_RADIUS: f64 = 6.0;
/// Vertical space between two leaf boxes.
const ROW_GAP: f64 = 10.0;
/// Horizontal space between two columns, where the connectors run.
const COLUMN_GAP: f64 = 48.0;
/// Height of the panel title line, above the column headers.
const TITLE_HEIGHT: f64 = 28.0;
/// Height of the column header line, above the first box.
const HEADER_HEIGHT: f64 = 24.0;
const PANEL_GAP: f64 = 32.0;

/// Light fill and darker stroke per coarse subtree, cycled.
const PALETTE: [(&str, &str); 6] = [
    ("#dbeafe", "#3b82f6"),
    ("#dcfce7", "#22c55e"),
    ("#fef3c7", "#f59e0b"),
    ("#fce7f3", "#ec4899"),
    ("#ede9fe", "#8b5cf6"),
    ("#ccfbf1", "#14b8a6"),
];
const TEXT_COLOUR: &str = "#111827";
const HEADER_COLOUR: &str = "#6b7280";
const LINK_COLOUR: &str = "#9ca3af";

impl Taxonomy {
    /// Draws the hierarchy of the chosen dimensions as a standalone SVG document (as in Figure 1
    /// of the paper): one panel per dimension, stacked vertically, with a column per level
    /// (coarse, medium, fine), a rounded box per category, each parent centred on its children
    /// and a curve from each parent to each child. The same taxonomy gives the same bytes.
    ///
    /// Box widths come from an estimate of the text width (0.6 em per character of a sans-serif
    /// font), not from font metrics, so very wide glyphs (e.g. CJK) may overflow their box.
    /// Characters that XML 1.0 cannot carry (most control characters) are drawn as U+FFFD.
    ///
    /// ```
    /// use hierarag_taxonomy::{SvgOptions, Taxonomy};
    ///
    /// let options = SvgOptions { dimensions: vec!["qc".to_string()], tooltips: true };
    /// let svg = Taxonomy::default_taxonomy().to_svg(&options).unwrap();
    /// assert!(svg.starts_with("<svg"));
    /// assert!(svg.contains(">Question Complexity (qc)</text>"));
    ///
    /// let options = SvgOptions { dimensions: vec!["xx".to_string()], tooltips: false };
    /// let error = Taxonomy::default_taxonomy().to_svg(&options).unwrap_err();
    /// assert_eq!(
    ///     error.to_string(),
    ///     "no dimension `xx`; the taxonomy has: `qc`, `at`, `lv`, `ph`"
    /// );
    /// ```
    pub fn to_svg(&self, options: &SvgOptions) -> Result<String, UnknownDimension> {
        let dimensions: Vec<&Dimension> = if options.dimensions.is_empty() {
            self.dimensions.iter().collect()
        } else {
            options
                .dimensions
                .iter()
                .map(|key| {
                    self.dimension(key).ok_or_else(|| UnknownDimension {
                        key: key.clone(),
                        available: self.dimensions.iter().map(|d| d.key.clone()).collect(),
                    })
                })
                .collect::<Result<_, _>>()?
        };

        let mut panels = Vec::with_capacity(dimensions.len());
        let mut top = MARGIN;
        for dimension in dimensions {
            let panel = Panel::layout(dimension, MARGIN, top);
            top += panel.height + PANEL_GAP;
            panels.push(panel);
        }
        let width = panels.iter().map(|panel| panel.width).fold(0.0, f64::max) + 2.0 * MARGIN;
        let height = if panels.is_empty() {
            2.0 * MARGIN
        } else {
            top - PANEL_GAP + MARGIN
        };

        let mut svg = String::new();
        let (width, height) = (num(width), num(height));
        // Writing to a String cannot fail; `let _ =` keeps the builder free of unwraps.
        let _ = writeln!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="{}">"#,
            num(FONT_SIZE)
        );
        for panel in &panels {
            panel.render(options, &mut svg);
        }
        svg.push_str("</svg>\n");
        Ok(svg)
    }
}

/// One category placed in a panel.
#[derive(Debug)]
struct Node<'a> {
    category: &'a Category,
    granularity: Granularity,
    column: usize,
    children: Vec<usize>,
    /// Index into [`PALETTE`] (modulo its length), shared by a root and its descendants.
    colour: usize,
    /// Vertical centre of the box, absolute.
    centre_y: f64,
}

/// One column of a panel: a level of the dimension.
#[derive(Debug)]
struct Column {
    header: String,
    x: f64,
    width: f64,
}

/// The layout of one dimension: where each box and header goes.
#[derive(Debug)]
struct Panel<'a> {
    dimension: &'a Dimension,
    left: f64,
    top: f64,
    width: f64,
    height: f64,
    columns: Vec<Column>,
    nodes: Vec<Node<'a>>,
}

impl<'a> Panel<'a> {
    fn layout(dimension: &'a Dimension, left: f64, top: f64) -> Panel<'a> {
        // Levels coarsest first, whatever order a hand-built dimension lists them in.
        let mut levels: Vec<_> = dimension.levels.iter().collect();
        levels.sort_by_key(|level| level.granularity);

        let mut nodes: Vec<Node<'a>> = Vec::new();
        for (column, level) in levels.iter().enumerate() {
            for category in &level.categories {
                nodes.push(Node {
                    category,
                    granularity: level.granularity,
                    column,
                    children: Vec::new(),
                    colour: 0,
                    centre_y: 0.0,
                });
            }
        }

        // Each node hangs under the first category of its parent's name on the level directly
        // above; one without such a parent (only in unvalidated taxonomies) is drawn as a root,
        // so every category gets exactly one box.
        let mut roots = Vec::new();
        for idx in 0..nodes.len() {
            let parent = nodes[idx].category.parent.as_deref().and_then(|parent| {
                let above = nodes[idx].granularity.above()?;
                nodes
                    .iter()
                    .position(|node| node.granularity == above && node.category.name == parent)
            });
            match parent {
                Some(parent) => nodes[parent].children.push(idx),
                None => roots.push(idx),
            }
        }

        let boxes_top = top + TITLE_HEIGHT + HEADER_HEIGHT;
        let mut n_rows = 0;
        for (colour, &root) in roots.iter().enumerate() {
            place(&mut nodes, root, colour, boxes_top, &mut n_rows);
        }

        let mut columns = Vec::with_capacity(levels.len());
        let mut x = left;
        for (column, level) in levels.iter().enumerate() {
            let header = format!("{} ({})", level.granularity, level.categories.len());
            let widest_name = nodes
                .iter()
                .filter(|node| node.column == column)
                .map(|node| text_width(&node.category.name, FONT_SIZE, EM_PER_CHAR))
                .fold(0.0, f64::max);
            let width = (widest_name + 2.0 * BOX_PADDING_X).max(text_width(
                &header,
                HEADER_FONT_SIZE,
                EM_PER_CHAR,
            ));
            columns.push(Column { header, x, width });
            x += width + COLUMN_GAP;
        }

        let columns_width = if columns.is_empty() {
            0.0
        } else {
            x - COLUMN_GAP - left
        };
        let title_width = text_width(&panel_title(dimension), TITLE_FONT_SIZE, BOLD_EM_PER_CHAR);
        let height = if columns.is_empty() {
            TITLE_HEIGHT
        } else if n_rows == 0 {
            TITLE_HEIGHT + HEADER_HEIGHT
        } else {
            TITLE_HEIGHT + HEADER_HEIGHT + n_rows as f64 * (BOX_HEIGHT + ROW_GAP) - ROW_GAP
        };
        Panel {
            dimension,
            left,
            top,
            width: columns_width.max(title_width),
            height,
            columns,
            nodes,
        }
    }

    fn render(&self, options: &SvgOptions, svg: &mut String) {
        svg.push_str("<g class=\"dimension\">\n");
        let _ = writeln!(
            svg,
            r#"<text class="dimension-title" x="{}" y="{}" font-size="{}" font-weight="bold" fill="{TEXT_COLOUR}">{}</text>"#,
            num(self.left),
            num(self.top + TITLE_FONT_SIZE),
            num(TITLE_FONT_SIZE),
            SvgText(&panel_title(self.dimension)),
        );
        for column in &self.columns {
            let _ = writeln!(
                svg,
                r#"<text class="level-header" x="{}" y="{}" font-size="{}" text-anchor="middle" fill="{HEADER_COLOUR}">{}</text>"#,
                num(column.x + column.width / 2.0),
                num(self.top + TITLE_HEIGHT + HEADER_FONT_SIZE),
                num(HEADER_FONT_SIZE),
                SvgText(&column.header),
            );
        }
        // Connectors first so that boxes are drawn over their ends.
        for parent in &self.nodes {
            let parent_column = &self.columns[parent.column];
            let x1 = parent_column.x + parent_column.width;
            let y1 = parent.centre_y;
            for &child_idx in &parent.children {
                let child = &self.nodes[child_idx];
                let x2 = self.columns[child.column].x;
                let y2 = child.centre_y;
                let mid = (x1 + x2) / 2.0;
                let _ = writeln!(
                    svg,
                    r#"<path class="link" d="M {} {} C {} {}, {} {}, {} {}" fill="none" stroke="{LINK_COLOUR}" stroke-width="1.5"/>"#,
                    num(x1),
                    num(y1),
                    num(mid),
                    num(y1),
                    num(mid),
                    num(y2),
                    num(x2),
                    num(y2),
                );
            }
        }
        for node in &self.nodes {
            let column = &self.columns[node.column];
            let (fill, stroke) = PALETTE[node.colour % PALETTE.len()];
            let _ = writeln!(svg, r#"<g class="category {}">"#, node.granularity);
            if options.tooltips {
                let _ = writeln!(
                    svg,
                    "<title>{}</title>",
                    SvgText(&node.category.description)
                );
            }
            let _ = writeln!(
                svg,
                r#"<rect x="{}" y="{}" width="{}" height="{}" rx="{}" fill="{fill}" stroke="{stroke}"/>"#,
                num(column.x),
                num(node.centre_y - BOX_HEIGHT / 2.0),
                num(column.width),
                num(BOX_HEIGHT),
                num(BOX_RADIUS),
            );
            let _ = writeln!(
                svg,
                r#"<text x="{}" y="{}" dy="0.35em" text-anchor="middle" fill="{TEXT_COLOUR}">{}</text>"#,
                num(column.x + column.width / 2.0),
                num(node.centre_y),
                SvgText(&node.category.name),
            );
            svg.push_str("</g>\n");
        }
        svg.push_str("</g>\n");
    }
}

/// Places `idx` and its subtree: leaves take the next row, a parent sits midway between its
/// first and last child. Subtrees occupy disjoint runs of rows, so boxes in a column never meet.
fn place(nodes: &mut [Node<'_>], idx: usize, colour: usize, boxes_top: f64, n_rows: &mut usize) {
    nodes[idx].colour = colour;
    let children = nodes[idx].children.clone();
    nodes[idx].centre_y = match (children.first(), children.last()) {
        (Some(&first), Some(&last)) => {
            for &child in &children {
                place(nodes, child, colour, boxes_top, n_rows);
            }
            (nodes[first].centre_y + nodes[last].centre_y) / 2.0
        }
        _ => {
            let centre = boxes_top + *n_rows as f64 * (BOX_HEIGHT + ROW_GAP) + BOX_HEIGHT / 2.0;
            *n_rows += 1;
            centre
        }
    };
}

fn panel_title(dimension: &Dimension) -> String {
    format!("{} ({})", dimension.name, dimension.key)
}

/// Estimated rendered width of `text` at `font_size`.
fn text_width(text: &str, font_size: f64, em_per_char: f64) -> f64 {
    text.chars().count() as f64 * em_per_char * font_size
}

/// A coordinate with at most two decimals and no trailing zeros, so output is stable and short.
fn num(value: f64) -> String {
    let text = format!("{value:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".to_string()
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::num;

    #[test]
    fn num_trims_trailing_zeros() {
        assert_eq!(num(20.0), "20");
        assert_eq!(num(8.4), "8.4");
        assert_eq!(num(1.0 / 3.0), "0.33");
        assert_eq!(num(-0.001), "0");
    }
}
