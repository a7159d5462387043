//! Tests of the SVG figure: parsed back with an XML parser and checked for structure and geometry.

use hierarag_taxonomy::{Category, Dimension, Granularity, Level, SvgOptions, Taxonomy};
use roxmltree::{Document, Node};

/// Tolerance for coordinates, which are written with two decimals.
const EPSILON: f64 = 0.01;

fn options(dimensions: &[&str], tooltips: bool) -> SvgOptions {
    SvgOptions {
        dimensions: dimensions.iter().map(ToString::to_string).collect(),
        tooltips,
    }
}

fn svg(taxonomy: &Taxonomy, dimensions: &[&str], tooltips: bool) -> String {
    taxonomy
        .to_svg(&options(dimensions, tooltips))
        .expect("known dimensions")
}

fn parse(svg: &str) -> Document<'_> {
    Document::parse(svg)
        .unwrap_or_else(|error| panic!("SVG is not well-formed XML: {error}\n{svg}"))
}

fn has_class(node: Node<'_, '_>, class: &str) -> bool {
    node.attribute("class")
        .is_some_and(|classes| classes.split_whitespace().any(|c| c == class))
}

fn elements<'a, 'input>(
    document: &'a Document<'input>,
    tag: &'a str,
) -> impl Iterator<Item = Node<'a, 'input>> + 'a {
    document
        .descendants()
        .filter(move |node| node.is_element() && node.tag_name().name() == tag)
}

fn number(node: Node<'_, '_>, attribute: &str) -> f64 {
    node.attribute(attribute)
        .unwrap_or_else(|| panic!("<{}> lacks {attribute}", node.tag_name().name()))
        .parse()
        .unwrap_or_else(|error| panic!("{attribute} is not a number: {error}"))
}

/// The concatenated text inside an element.
fn text_of(node: Node<'_, '_>) -> String {
    node.descendants()
        .filter(|n| n.is_text())
        .filter_map(|n| n.text())
        .collect()
}

fn child<'a, 'input>(node: Node<'a, 'input>, tag: &str) -> Option<Node<'a, 'input>> {
    node.children()
        .find(|n| n.is_element() && n.tag_name().name() == tag)
}

/// A category box as drawn: its rect and the name written in it.
#[derive(Debug, Clone)]
struct DrawnBox {
    name: String,
    x: f64,
    y: f64,
    width: f64,
    height: f64,
}

impl DrawnBox {
    fn right(&self) -> f64 {
        self.x + self.width
    }
    fn bottom(&self) -> f64 {
        self.y + self.height
    }
    fn centre_y(&self) -> f64 {
        self.y + self.height / 2.0
    }
}

/// One dimension panel as drawn.
#[derive(Debug)]
struct DrawnPanel {
    title: String,
    title_y: f64,
    headers: Vec<(String, f64)>,
    boxes: Vec<DrawnBox>,
    /// Start and end point of each connector path.
    links: Vec<((f64, f64), (f64, f64))>,
}

impl DrawnPanel {
    fn find(&self, name: &str) -> &DrawnBox {
        self.boxes
            .iter()
            .find(|b| b.name == name)
            .unwrap_or_else(|| panic!("no box named `{name}` in panel `{}`", self.title))
    }
}

fn panels(document: &Document<'_>) -> Vec<DrawnPanel> {
    elements(document, "g")
        .filter(|g| has_class(*g, "dimension"))
        .map(|panel| {
            let title = panel
                .descendants()
                .find(|n| n.tag_name().name() == "text" && has_class(*n, "dimension-title"))
                .expect("panel title");
            let headers = panel
                .descendants()
                .filter(|n| n.tag_name().name() == "text" && has_class(*n, "level-header"))
                .map(|n| (text_of(n), number(n, "y")))
                .collect();
            let boxes = panel
                .descendants()
                .filter(|n| n.tag_name().name() == "g" && has_class(*n, "category"))
                .map(|g| {
                    let rect = child(g, "rect").expect("category rect");
                    DrawnBox {
                        name: text_of(child(g, "text").expect("category text")),
                        x: number(rect, "x"),
                        y: number(rect, "y"),
                        width: number(rect, "width"),
                        height: number(rect, "height"),
                    }
                })
                .collect();
            let links = panel
                .descendants()
                .filter(|n| n.tag_name().name() == "path")
                .map(|path| endpoints(path.attribute("d").expect("path data")))
                .collect();
            DrawnPanel {
                title: text_of(title),
                title_y: number(title, "y"),
                headers,
                boxes,
                links,
            }
        })
        .collect()
}

/// First and last point of path data such as `M x y C x y, x y, x y` or `M x y L x y`.
fn endpoints(d: &str) -> ((f64, f64), (f64, f64)) {
    let numbers: Vec<f64> = d
        .replace(',', " ")
        .split_whitespace()
        .filter_map(|token| token.parse().ok())
        .collect();
    assert!(numbers.len() >= 4, "path data `{d}` has too few numbers");
    let n = numbers.len();
    ((numbers[0], numbers[1]), (numbers[n - 2], numbers[n - 1]))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= EPSILON
}

/// Every (parent, child) link of a dimension, by name.
fn parent_links(dimension: &Dimension) -> Vec<(String, String)> {
    dimension
        .levels
        .iter()
        .flat_map(|level| &level.categories)
        .filter_map(|category| {
            category
                .parent
                .clone()
                .map(|parent| (parent, category.name.clone()))
        })
        .collect()
}

fn all_category_names(dimension: &Dimension) -> Vec<String> {
    dimension
        .levels
        .iter()
        .flat_map(|level| &level.categories)
        .map(|category| category.name.clone())
        .collect()
}

#[test]
fn default_taxonomy_draws_one_box_per_category_and_one_link_per_parent() {
    let svg = svg(&Taxonomy::default_taxonomy(), &[], false);
    let document = parse(&svg);
    let root = document.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    assert_eq!(root.attribute("font-family"), Some("sans-serif"));

    assert_eq!(elements(&document, "rect").count(), 46);
    // qc, at and lv have 4 + 8 parent links each; coarse-only ph has none.
    assert_eq!(elements(&document, "path").count(), 36);
    let panels = panels(&document);
    let titles: Vec<&str> = panels.iter().map(|p| p.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "Question Complexity (qc)",
            "Answer Type (at)",
            "Linguistic Variation (lv)",
            "Phrasing (ph)"
        ]
    );
    let counts: Vec<(usize, usize)> = panels
        .iter()
        .map(|p| (p.boxes.len(), p.links.len()))
        .collect();
    assert_eq!(counts, [(14, 12), (14, 12), (14, 12), (4, 0)]);
}

#[test]
fn one_dimension_draws_only_its_categories_with_level_headers() {
    let svg = svg(&Taxonomy::default_taxonomy(), &["qc"], false);
    let document = parse(&svg);
    assert_eq!(elements(&document, "rect").count(), 14);
    assert_eq!(elements(&document, "path").count(), 12);
    let panels = panels(&document);
    assert_eq!(panels.len(), 1);
    assert_eq!(panels[0].title, "Question Complexity (qc)");
    let headers: Vec<&str> = panels[0].headers.iter().map(|(h, _)| h.as_str()).collect();
    assert_eq!(headers, ["coarse (2)", "medium (4)", "fine (8)"]);
}

#[test]
fn dimensions_are_drawn_in_the_order_asked() {
    let svg = svg(&Taxonomy::default_taxonomy(), &["lv", "qc"], false);
    let titles: Vec<String> = panels(&parse(&svg)).into_iter().map(|p| p.title).collect();
    assert_eq!(
        titles,
        ["Linguistic Variation (lv)", "Question Complexity (qc)"]
    );
}

#[test]
fn every_category_name_is_drawn_as_text() {
    let taxonomy = Taxonomy::default_taxonomy();
    let svg = svg(&taxonomy, &[], false);
    let document = parse(&svg);
    let texts: Vec<String> = elements(&document, "text").map(text_of).collect();
    for dimension in &taxonomy.dimensions {
        for name in all_category_names(dimension) {
            assert!(
                texts.contains(&name),
                "`{name}` of `{}` is not drawn",
                dimension.key
            );
        }
    }
}

#[test]
fn children_sit_right_of_their_parents_and_each_link_joins_parent_to_child() {
    let taxonomy = Taxonomy::default_taxonomy();
    let svg = svg(&taxonomy, &[], false);
    let panels = panels(&parse(&svg));
    for (dimension, panel) in taxonomy.dimensions.iter().zip(&panels) {
        let mut expected = parent_links(dimension);
        for (parent, child) in &expected {
            let (parent, child) = (panel.find(parent), panel.find(child));
            assert!(
                child.x > parent.right(),
                "{child:?} is not right of its parent {parent:?}"
            );
        }
        // Each connector runs from the middle of a parent's right edge to the middle of a
        // child's left edge; together they are exactly the taxonomy's parent links.
        let mut drawn: Vec<(String, String)> = panel
            .links
            .iter()
            .map(|&((x1, y1), (x2, y2))| {
                let from = panel
                    .boxes
                    .iter()
                    .find(|b| close(b.right(), x1) && close(b.centre_y(), y1))
                    .unwrap_or_else(|| panic!("link starts at ({x1}, {y1}), on no right edge"));
                let to = panel
                    .boxes
                    .iter()
                    .find(|b| close(b.x, x2) && close(b.centre_y(), y2))
                    .unwrap_or_else(|| panic!("link ends at ({x2}, {y2}), on no left edge"));
                (from.name.clone(), to.name.clone())
            })
            .collect();
        expected.sort();
        drawn.sort();
        assert_eq!(drawn, expected, "links of `{}`", dimension.key);
    }
}

#[test]
fn leaves_are_evenly_spaced_and_parents_centred_on_their_children() {
    let taxonomy = Taxonomy::default_taxonomy();
    let svg = svg(&taxonomy, &[], false);
    let panels = panels(&parse(&svg));
    for (dimension, panel) in taxonomy.dimensions.iter().zip(&panels) {
        let leaves: Vec<f64> = all_category_names(dimension)
            .iter()
            .filter(|name| dimension.children(name).is_empty())
            .map(|name| panel.find(name).centre_y())
            .collect();
        let steps: Vec<f64> = leaves.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(
            steps
                .iter()
                .all(|&step| step > 0.0 && close(step, steps[0])),
            "leaves of `{}` are not evenly spaced top to bottom: {leaves:?}",
            dimension.key
        );
        for split in dimension.splits() {
            let first = panel.find(&split.children[0].name).centre_y();
            let last = panel.find(&split.children.last().unwrap().name).centre_y();
            let parent = panel.find(&split.parent.name).centre_y();
            assert!(
                close(parent, (first + last) / 2.0),
                "`{}` at {parent} is not centred between {first} and {last}",
                split.parent.name
            );
        }
    }
}

#[test]
fn no_two_boxes_overlap_and_all_lie_inside_the_view_box() {
    let svg = svg(&Taxonomy::default_taxonomy(), &[], false);
    let document = parse(&svg);
    let root = document.root_element();
    let (width, height) = (number(root, "width"), number(root, "height"));
    let view_box: Vec<f64> = root
        .attribute("viewBox")
        .expect("viewBox")
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(view_box, [0.0, 0.0, width, height]);

    let boxes: Vec<DrawnBox> = panels(&document)
        .into_iter()
        .flat_map(|p| p.boxes)
        .collect();
    assert_eq!(boxes.len(), 46);
    for b in &boxes {
        assert!(b.width > 0.0 && b.height > 0.0, "{b:?} is empty");
        assert!(
            b.x >= 0.0 && b.y >= 0.0 && b.right() <= width && b.bottom() <= height,
            "{b:?} lies outside {width}x{height}"
        );
        // Names are estimated at 0.6 em of a 14 px font; the box must hold the estimate.
        assert!(
            b.width >= b.name.chars().count() as f64 * 0.6 * 14.0,
            "{b:?} is too narrow for its name"
        );
    }
    for (i, a) in boxes.iter().enumerate() {
        for b in &boxes[i + 1..] {
            let apart =
                a.right() <= b.x || b.right() <= a.x || a.bottom() <= b.y || b.bottom() <= a.y;
            assert!(apart, "{a:?} overlaps {b:?}");
        }
    }
}

#[test]
fn titles_and_headers_sit_above_their_boxes_and_panels_do_not_overlap() {
    let svg = svg(&Taxonomy::default_taxonomy(), &[], false);
    let panels = panels(&parse(&svg));
    let mut previous_bottom = 0.0;
    for panel in &panels {
        let top = panel
            .boxes
            .iter()
            .map(|b| b.y)
            .fold(f64::INFINITY, f64::min);
        let bottom = panel.boxes.iter().map(DrawnBox::bottom).fold(0.0, f64::max);
        assert!(
            panel.title_y > previous_bottom,
            "`{}` overlaps the panel above",
            panel.title
        );
        for (header, y) in &panel.headers {
            assert!(
                panel.title_y < *y && *y < top,
                "header `{header}` is not between the title and the boxes"
            );
        }
        previous_bottom = bottom;
    }
}

#[test]
fn coarse_only_dimension_is_one_column_without_links() {
    let svg = svg(&Taxonomy::default_taxonomy(), &["ph"], false);
    let document = parse(&svg);
    assert_eq!(elements(&document, "path").count(), 0);
    let panels = panels(&document);
    let panel = &panels[0];
    assert_eq!(panel.boxes.len(), 4);
    assert!(panel.boxes.iter().all(|b| close(b.x, panel.boxes[0].x)));
    let headers: Vec<&str> = panel.headers.iter().map(|(h, _)| h.as_str()).collect();
    assert_eq!(headers, ["coarse (4)"]);
}

#[test]
fn tooltips_carry_each_description_only_when_asked() {
    let taxonomy = Taxonomy::default_taxonomy();
    let plain = svg(&taxonomy, &["qc"], false);
    assert_eq!(elements(&parse(&plain), "title").count(), 0);

    let with_tooltips = svg(&taxonomy, &["qc"], true);
    let document = parse(&with_tooltips);
    let qc = taxonomy.dimension("qc").unwrap();
    let categories = elements(&document, "g").filter(|g| has_class(*g, "category"));
    let mut n_categories = 0;
    for g in categories {
        let name = text_of(child(g, "text").unwrap());
        let (_, category) = qc.category(&name).unwrap();
        let title = child(g, "title").expect("tooltip");
        assert_eq!(text_of(title), category.description);
        n_categories += 1;
    }
    assert_eq!(n_categories, 14);
}

#[test]
fn markup_in_dimension_names_and_descriptions_is_escaped_and_round_trips() {
    let name = r#"Q&A <"fast"> & 'loose' mode"#;
    let description = r#"Uses <b>bold</b> & "quotes" & 'apostrophes' & ]]> too."#;
    let text = format!(
        r#"
[[dimension]]
key = "qa"
name = '''{name}'''
[[dimension.coarse]]
name = "tricky"
description = '''{description}'''
[[dimension.medium]]
name = "trickier"
parent = "tricky"
description = "Plain."
"#
    );
    let taxonomy = Taxonomy::from_toml_str(&text, "markup.toml").expect("valid taxonomy");
    let svg = svg(&taxonomy, &[], true);
    assert!(!svg.contains("<b>"), "markup leaked into the SVG:\n{svg}");
    let document = parse(&svg);
    let panels = panels(&document);
    assert_eq!(panels[0].title, format!("{name} (qa)"));
    let titles: Vec<String> = elements(&document, "title").map(text_of).collect();
    assert_eq!(titles, [description, "Plain."]);
    assert_eq!(panels[0].links.len(), 1);
}

#[test]
fn markup_and_control_characters_in_keys_and_category_names_still_parse() {
    // DataMorgana names are kept verbatim, and a hand-built taxonomy is not validated at all.
    let names = ["open-ended & <wide>", "it's \"quoted\"", "a\rb"];
    let taxonomy = Taxonomy {
        dimensions: vec![Dimension {
            key: "k<&>".to_string(),
            name: "Name".to_string(),
            levels: vec![Level {
                granularity: Granularity::Coarse,
                categories: names
                    .iter()
                    .map(|name| Category::new(*name, "bell \u{7} and nul \u{0}"))
                    .collect(),
            }],
        }],
        user_categorizations: Vec::new(),
    };
    let svg = svg(&taxonomy, &["k<&>"], true);
    let document = parse(&svg);
    let panels = panels(&document);
    assert_eq!(panels[0].title, "Name (k<&>)");
    let drawn: Vec<&str> = panels[0].boxes.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(drawn, names);
    for title in elements(&document, "title") {
        assert_eq!(text_of(title), "bell \u{fffd} and nul \u{fffd}");
    }
}

#[test]
fn categories_with_missing_parents_are_still_drawn_once() {
    // Not valid, but constructible: an orphan fine category and a childless medium one.
    let taxonomy = Taxonomy {
        dimensions: vec![Dimension {
            key: "x".to_string(),
            name: "X".to_string(),
            levels: vec![
                Level {
                    granularity: Granularity::Fine,
                    categories: vec![
                        Category::new("leaf", "L.").with_parent("mid"),
                        Category::new("orphan", "O.").with_parent("nowhere"),
                    ],
                },
                Level {
                    granularity: Granularity::Coarse,
                    categories: vec![Category::new("top", "T.")],
                },
                Level {
                    granularity: Granularity::Medium,
                    categories: vec![
                        Category::new("mid", "M.").with_parent("top"),
                        Category::new("lonely", "L.").with_parent("top"),
                    ],
                },
            ],
        }],
        user_categorizations: Vec::new(),
    };
    let svg = svg(&taxonomy, &[], false);
    let panels = panels(&parse(&svg));
    let mut names: Vec<&str> = panels[0].boxes.iter().map(|b| b.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["leaf", "lonely", "mid", "orphan", "top"]);
    assert_eq!(panels[0].links.len(), 3);
    assert!(panels[0].find("top").right() < panels[0].find("mid").x);
    assert!(panels[0].find("mid").right() < panels[0].find("orphan").x);
}

#[test]
fn unknown_dimension_is_an_error_that_lists_the_keys() {
    let error = Taxonomy::default_taxonomy()
        .to_svg(&options(&["qc", "xx"], false))
        .unwrap_err();
    assert_eq!(error.key, "xx");
    assert_eq!(
        error.to_string(),
        "no dimension `xx`; the taxonomy has: `qc`, `at`, `lv`, `ph`"
    );
    let error = Taxonomy::default()
        .to_svg(&options(&["qc"], false))
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "no dimension `qc`; the taxonomy has no dimensions"
    );
}

#[test]
fn empty_taxonomy_is_an_empty_but_valid_figure() {
    let svg = svg(&Taxonomy::default(), &[], false);
    let document = parse(&svg);
    assert_eq!(document.root_element().tag_name().name(), "svg");
    assert_eq!(elements(&document, "rect").count(), 0);
}

#[test]
fn same_taxonomy_gives_the_same_bytes() {
    let taxonomy = Taxonomy::default_taxonomy();
    let first = svg(&taxonomy, &[], true);
    let second = svg(&taxonomy.clone(), &[], true);
    assert_eq!(first, second);
    let reread = Taxonomy::from_toml_str(&taxonomy.to_toml_string(), "again.toml").unwrap();
    assert_eq!(first, svg(&reread, &[], true));
}
