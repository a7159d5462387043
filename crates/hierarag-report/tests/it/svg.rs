//! The SVG charts: well-formed XML, one mark per drawable value, skipped NaN/None, escaped text,
//! deterministic bytes, nice ticks that cover the data, and readable long category labels.

use hierarag_report::svg::{
    Band, ChartOptions, Group, Point, Series, Threshold, dot_chart, interaction_plot, line_chart,
    line_chart_with_bands, nice_ticks,
};

const SCRIPT: &str = "<script>alert(1)</script>";

fn labels(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

fn point(label: &str, value: Option<f64>, ci: Option<(f64, f64)>) -> Point {
    Point {
        label: label.to_owned(),
        value,
        ci,
    }
}

fn options(title: &str) -> ChartOptions {
    ChartOptions::new(title, "DiscPow")
}

/// Three granularities, three dimensions; one missing value, one NaN, one CI-less point.
fn discpow_series() -> (Vec<String>, Vec<Series>) {
    let x_labels = labels(&["coarse", "medium", "fine"]);
    let series = vec![
        Series {
            name: "question type".to_owned(),
            points: vec![
                point("coarse", Some(0.92), Some((0.88, 0.95))),
                point("medium", Some(0.81), Some((0.75, 0.86))),
                point("fine", Some(0.64), Some((0.55, 0.72))),
            ],
        },
        Series {
            name: "user persona".to_owned(),
            points: vec![
                point("coarse", Some(0.71), Some((0.66, 0.77))),
                point("medium", None, Some((0.5, 0.6))),
                point("fine", Some(0.40), None),
            ],
        },
        Series {
            name: "answer type".to_owned(),
            points: vec![
                point("fine", Some(f64::NAN), Some((0.1, 0.2))),
                point("coarse", Some(0.55), Some((0.47, f64::INFINITY))),
                point("medium", Some(0.33), Some((0.41, 0.25))),
            ],
        },
    ];
    (x_labels, series)
}

fn dot_groups() -> Vec<Group> {
    vec![
        Group {
            label: "coarse".to_owned(),
            points: vec![
                point("factoid", Some(1.4), Some((1.1, 1.7))),
                point("synthesis", Some(2.6), Some((2.2, 3.1))),
            ],
        },
        Group {
            label: "medium".to_owned(),
            points: vec![
                point("single_hop_factoid", Some(0.8), Some((0.5, 1.0))),
                point("multi_hop_factoid", None, None),
                point("comparative_synthesis", Some(f64::NAN), None),
                point("aggregation_synthesis", Some(3.2), Some((2.9, 3.6))),
            ],
        },
        Group {
            label: "empty".to_owned(),
            points: Vec::new(),
        },
    ]
}

fn rho_thresholds() -> Vec<Threshold> {
    vec![
        Threshold {
            value: 1.0,
            label: "ρ = 1".to_owned(),
        },
        Threshold {
            value: 2.0,
            label: "ρ = 2".to_owned(),
        },
        Threshold {
            value: f64::NAN,
            label: "not drawn".to_owned(),
        },
    ]
}

/// Every chart of these tests, named.
fn all_charts() -> Vec<(&'static str, String)> {
    let (x_labels, series) = discpow_series();
    vec![
        ("line", line_chart(&x_labels, &series, &options("DiscPow"))),
        (
            "dot",
            dot_chart(&dot_groups(), &rho_thresholds(), &options("ρ per split")),
        ),
        (
            "interaction",
            interaction_plot(&x_labels, &series, &options("Interaction")),
        ),
    ]
}

fn parse(svg: &str) -> roxmltree::Document<'_> {
    roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("not well-formed XML: {e}\n{svg}"))
}

fn has_class(node: &roxmltree::Node, class: &str) -> bool {
    node.attribute("class")
        .is_some_and(|classes| classes.split(' ').any(|c| c == class))
}

/// Elements with this tag name and class.
fn count(doc: &roxmltree::Document, tag: &str, class: &str) -> usize {
    doc.descendants()
        .filter(|node| node.has_tag_name(tag) && has_class(node, class))
        .count()
}

fn number(node: &roxmltree::Node, attribute: &str) -> f64 {
    node.attribute(attribute)
        .unwrap_or_else(|| panic!("no {attribute} on {node:?}"))
        .parse()
        .unwrap()
}

#[test]
fn every_chart_is_a_well_formed_accessible_svg() {
    for (kind, svg) in all_charts() {
        let doc = parse(&svg);
        let root = doc.root_element();
        assert!(root.has_tag_name("svg"), "{kind}");
        assert_eq!(
            root.attribute("class"),
            Some(format!("chart chart-{kind}").as_str())
        );
        assert_eq!(root.attribute("role"), Some("img"));
        let (width, height) = (number(&root, "width"), number(&root, "height"));
        assert_eq!(
            root.attribute("viewBox"),
            Some(format!("0 0 {width:.1} {height:.1}").as_str())
        );
        let title = root.first_element_child().unwrap();
        assert!(title.has_tag_name("title"), "{kind}: <title> comes first");
        assert!(!title.text().unwrap_or("").is_empty());
        assert!(
            root.attribute("font-family")
                .unwrap()
                .contains("sans-serif")
        );
        assert!(
            !svg.contains("@import") && !svg.contains("url("),
            "no external fonts"
        );
    }
}

#[test]
fn line_chart_draws_one_point_and_whisker_per_finite_value() {
    let (x_labels, series) = discpow_series();
    for svg in [
        line_chart(&x_labels, &series, &options("t")),
        interaction_plot(&x_labels, &series, &options("t")),
    ] {
        let doc = parse(&svg);
        // Drawable: 3 + 2 (medium is None) + 2 (fine is NaN); whiskers: 3 + 1 + 1 (the
        // infinite CI is dropped, the reversed one is drawn).
        assert_eq!(count(&doc, "circle", "point"), 7);
        assert_eq!(count(&doc, "line", "ci"), 5);
        assert_eq!(count(&doc, "g", "legend-item"), 3);
        assert_eq!(count(&doc, "path", "series-line"), 3);
        assert_eq!(count(&doc, "text", "x-label"), 3);
    }
}

#[test]
fn a_missing_value_breaks_the_line_instead_of_bridging_it() {
    let (x_labels, series) = discpow_series();
    let svg = line_chart(&x_labels, &series, &options("t"));
    let doc = parse(&svg);
    let paths: Vec<&str> = doc
        .descendants()
        .filter(|node| has_class(node, "series-line"))
        .map(|node| node.attribute("d").unwrap())
        .collect();
    assert_eq!(paths[0].matches('M').count(), 1, "{}", paths[0]);
    assert_eq!(paths[0].matches('L').count(), 2, "{}", paths[0]);
    // user persona: coarse, gap, fine: two separate moves and no line.
    assert_eq!(paths[1].matches('M').count(), 2, "{}", paths[1]);
    assert_eq!(paths[1].matches('L').count(), 0, "{}", paths[1]);
}

#[test]
fn points_are_matched_to_x_labels_by_label() {
    let x_labels = labels(&["a", "b"]);
    let series = vec![Series {
        name: "s".to_owned(),
        points: vec![
            point("b", Some(2.0), None),
            point("a", Some(1.0), None),
            point("not an x label", Some(5.0), None),
        ],
    }];
    let svg = line_chart(&x_labels, &series, &options("t"));
    let doc = parse(&svg);
    let points: Vec<(String, f64)> = doc
        .descendants()
        .filter(|node| has_class(node, "point"))
        .map(|node| {
            (
                node.attribute("data-label").unwrap().to_owned(),
                number(&node, "cx"),
            )
        })
        .collect();
    assert_eq!(points.len(), 2);
    assert_eq!(points[0].0, "a");
    assert!(points[0].1 < points[1].1, "a is left of b: {points:?}");
}

#[test]
fn dot_chart_draws_points_whiskers_thresholds_and_group_labels() {
    let svg = dot_chart(&dot_groups(), &rho_thresholds(), &options("ρ"));
    let doc = parse(&svg);
    assert_eq!(count(&doc, "circle", "point"), 4);
    assert_eq!(count(&doc, "line", "ci"), 4);
    assert_eq!(
        count(&doc, "line", "threshold"),
        2,
        "the NaN threshold is skipped"
    );
    assert_eq!(count(&doc, "text", "threshold-label"), 2);
    assert!(
        svg.contains("stroke-dasharray=\"6 4\""),
        "thresholds are dashed"
    );
    let groups: Vec<&str> = doc
        .descendants()
        .filter(|node| has_class(node, "group-label"))
        .map(|node| node.text().unwrap())
        .collect();
    assert_eq!(groups, ["coarse", "medium"], "the empty group is left out");
    assert_eq!(count(&doc, "line", "group-divider"), 1);
    // Every category keeps its label, drawn or not.
    assert_eq!(count(&doc, "text", "x-label"), 6);
}

#[test]
fn nan_and_none_never_reach_the_output() {
    let nothing = vec![Series {
        name: "all missing".to_owned(),
        points: vec![
            point("a", None, Some((f64::NAN, 1.0))),
            point("b", Some(f64::NAN), None),
            point("c", Some(f64::NEG_INFINITY), None),
        ],
    }];
    let x_labels = labels(&["a", "b", "c"]);
    let mut charts = vec![
        line_chart(&x_labels, &nothing, &options("nothing")),
        line_chart(&[], &[], &options("")),
        dot_chart(&[], &[], &options("")),
        dot_chart(
            &[Group {
                label: String::new(),
                points: nothing[0].points.clone(),
            }],
            &[],
            &ChartOptions {
                y_min: Some(f64::NAN),
                y_max: Some(f64::INFINITY),
                ..options("non-finite range")
            },
        ),
    ];
    charts.extend(all_charts().into_iter().map(|(_, svg)| svg));
    for svg in &charts {
        let doc = parse(svg);
        let lower = svg.to_lowercase();
        assert!(!lower.contains("nan") && !lower.contains("inf"), "{svg}");
        for node in doc.descendants().filter(|node| node.is_element()) {
            for attribute in ["cx", "cy", "x1", "y1", "x2", "y2", "x", "y"] {
                if let Some(value) = node.attribute(attribute) {
                    assert!(value.parse::<f64>().is_ok_and(f64::is_finite), "{svg}");
                }
            }
        }
    }
    for svg in &charts[..4] {
        let doc = parse(svg);
        assert_eq!(count(&doc, "circle", "point"), 0);
        assert_eq!(count(&doc, "text", "no-data"), 1, "{svg}");
    }
}

#[test]
fn all_text_is_escaped() {
    let x_labels = labels(&[SCRIPT, "a & b"]);
    let series = vec![Series {
        name: SCRIPT.to_owned(),
        points: vec![point(SCRIPT, Some(1.0), Some((0.5, 1.5)))],
    }];
    let chart_options = ChartOptions {
        y_label: "\"quoted\" 'label'".to_owned(),
        ..options(SCRIPT)
    };
    let group = Group {
        label: SCRIPT.to_owned(),
        points: series[0].points.clone(),
    };
    let threshold = Threshold {
        value: 1.0,
        label: SCRIPT.to_owned(),
    };
    for svg in [
        line_chart(&x_labels, &series, &chart_options),
        interaction_plot(&x_labels, &series, &chart_options),
        dot_chart(&[group], &[threshold], &chart_options),
    ] {
        assert!(!svg.contains("<script"), "{svg}");
        assert!(svg.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        let doc = parse(&svg);
        assert_eq!(doc.root_element().attribute("aria-label"), Some(SCRIPT));
        let texts: String = doc
            .descendants()
            .filter_map(|node| node.text())
            .collect::<Vec<_>>()
            .join("\n");
        assert!(texts.contains(SCRIPT), "the text reads as written");
        assert!(texts.contains("\"quoted\" 'label'"));
    }
}

#[test]
fn non_ascii_and_control_characters_are_kept_or_replaced() {
    let x_labels = labels(&["größe", "日本語", "bell\u{7}"]);
    let series = vec![Series {
        name: "ρ ≥ 2".to_owned(),
        points: vec![point("日本語", Some(1.0), None)],
    }];
    let svg = line_chart(&x_labels, &series, &options("Übersicht"));
    let doc = parse(&svg);
    assert!(svg.contains("größe") && svg.contains("ρ ≥ 2") && svg.contains("Übersicht"));
    assert!(svg.contains("bell\u{fffd}"));
    assert_eq!(count(&doc, "circle", "point"), 1);
}

#[test]
fn the_same_input_gives_the_same_bytes() {
    let first = all_charts();
    let second = all_charts();
    assert_eq!(first, second);
}

#[test]
fn nice_ticks_use_nice_steps_and_cover_the_range() {
    let cases = [
        (0.0, 1.0, 6, 0.2, 0.0, 1.0),
        (0.13, 0.87, 6, 0.2, 0.0, 1.0),
        (0.0, 1.0, 5, 0.25, 0.0, 1.0),
        (-3.2, 7.9, 6, 2.5, -5.0, 10.0),
        (1.0, 3.1, 6, 0.5, 1.0, 3.5),
        (0.5, 0.5, 6, 0.02, 0.44, 0.56),
        (0.0, 0.0, 6, 0.5, -1.0, 1.0),
        (120.0, 4_310.0, 6, 1_000.0, 0.0, 5_000.0),
        (f64::NAN, 3.0, 6, 0.2, 0.0, 1.0),
    ];
    for (low, high, target, step, min, max) in cases {
        let ticks = nice_ticks(low, high, target);
        assert_eq!(ticks.step, step, "{low}..{high}: {ticks:?}");
        assert!((ticks.min - min).abs() < 1e-12, "{low}..{high}: {ticks:?}");
        assert!((ticks.max - max).abs() < 1e-12, "{low}..{high}: {ticks:?}");
    }
    // A sweep of ranges from a fixed linear congruential sequence.
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    for _ in 0..2_000 {
        let scale = 10f64.powi((next() * 12.0) as i32 - 6);
        let (a, b) = ((next() - 0.5) * scale, (next() - 0.5) * scale);
        let target = 2 + (next() * 8.0) as usize;
        let ticks = nice_ticks(a, b, target);
        let (low, high) = (a.min(b), a.max(b));
        assert!(ticks.min <= low && ticks.max >= high, "{a} {b}: {ticks:?}");
        let exponent = ticks.step.log10().floor();
        let mantissa = ticks.step / 10f64.powf(exponent);
        assert!(
            [1.0, 2.0, 2.5, 5.0]
                .iter()
                .any(|nice| (mantissa - nice).abs() < 1e-9),
            "step {} is not nice",
            ticks.step
        );
        assert!(
            ticks.values.len() <= target + 2,
            "{a} {b} {target}: {ticks:?}"
        );
        for pair in ticks.values.windows(2) {
            assert!((pair[1] - pair[0] - ticks.step).abs() < ticks.step * 1e-6);
        }
        for &tick in &ticks.values {
            let written = ticks.format(tick);
            assert!(
                (written.parse::<f64>().unwrap() - tick).abs() <= ticks.step * 1e-9,
                "{tick} written as {written}"
            );
        }
    }
}

/// The y positions of the top and bottom grid lines and of every mark.
fn vertical_extent(doc: &roxmltree::Document) -> ((f64, f64), Vec<f64>) {
    let grid: Vec<f64> = doc
        .descendants()
        .filter(|node| has_class(node, "grid"))
        .map(|node| number(&node, "y1"))
        .collect();
    let mut marks: Vec<f64> = doc
        .descendants()
        .filter(|node| has_class(node, "point"))
        .map(|node| number(&node, "cy"))
        .collect();
    for node in doc
        .descendants()
        .filter(|node| has_class(node, "ci") || has_class(node, "threshold"))
    {
        marks.push(number(&node, "y1"));
        marks.push(number(&node, "y2"));
    }
    let top = grid.iter().copied().fold(f64::INFINITY, f64::min);
    let bottom = grid.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    ((top, bottom), marks)
}

#[test]
fn the_y_range_covers_values_intervals_and_thresholds() {
    for (kind, svg) in all_charts() {
        let doc = parse(&svg);
        let ((top, bottom), marks) = vertical_extent(&doc);
        assert!(!marks.is_empty());
        for y in marks {
            assert!(
                y >= top - 0.05 && y <= bottom + 0.05,
                "{kind}: {y} outside {top}..{bottom}"
            );
        }
    }
    // A threshold above all data still widens the axis.
    let groups = vec![Group {
        label: String::new(),
        points: vec![point("a", Some(0.3), Some((0.2, 0.4)))],
    }];
    let thresholds = [Threshold {
        value: 2.0,
        label: "ρ = 2".to_owned(),
    }];
    let svg = dot_chart(&groups, &thresholds, &options("t"));
    let doc = parse(&svg);
    let ticks: Vec<f64> = doc
        .descendants()
        .filter(|node| has_class(node, "tick"))
        .map(|node| node.text().unwrap().parse().unwrap())
        .collect();
    assert!(
        ticks.first() <= Some(&0.2) && ticks.last() >= Some(&2.0),
        "{ticks:?}"
    );
    assert_eq!(count(&doc, "line", "threshold"), 1);
}

#[test]
fn a_fixed_y_range_is_kept_and_outside_thresholds_are_not_drawn() {
    let (x_labels, series) = discpow_series();
    let fixed = ChartOptions {
        y_min: Some(0.0),
        y_max: Some(1.0),
        ..options("t")
    };
    let svg = line_chart(&x_labels, &series, &fixed);
    let doc = parse(&svg);
    let ticks: Vec<&str> = doc
        .descendants()
        .filter(|node| has_class(node, "tick"))
        .map(|node| node.text().unwrap())
        .collect();
    assert_eq!(ticks.first(), Some(&"0.0"));
    assert_eq!(ticks.last(), Some(&"1.0"));

    let narrow = ChartOptions {
        y_min: Some(0.0),
        y_max: Some(1.5),
        ..options("t")
    };
    let svg = dot_chart(&dot_groups(), &rho_thresholds(), &narrow);
    let doc = parse(&svg);
    assert_eq!(count(&doc, "line", "threshold"), 1, "ρ = 2 is above 1.5");
    // Marks outside the range stay in the document, clipped by the plot area.
    assert_eq!(count(&doc, "circle", "point"), 4);
    assert_eq!(count(&doc, "svg", "plot-area"), 1);
}

fn fine_categories(n: usize) -> Vec<String> {
    let names = [
        "comparative_synthesis_concepts",
        "single_hop_factoid_entities",
        "multi_hop_reasoning_temporal",
        "aggregation_over_documents",
        "counterfactual_what_if_events",
        "procedural_step_by_step_howto",
        "definition_of_domain_terms",
        "numerical_comparison_quantities",
    ];
    (0..n).map(|i| names[i % names.len()].to_owned()).collect()
}

/// The labels' estimated horizontal extent, at 0.6 em per character: (leftmost, rightmost).
fn x_label_extent(doc: &roxmltree::Document) -> (f64, f64) {
    let mut extent = (f64::INFINITY, f64::NEG_INFINITY);
    for node in doc.descendants().filter(|node| has_class(node, "x-label")) {
        let x = number(&node, "x");
        // The longest line: a wrapped label's tspans, or a rotated label's text (not its tooltip).
        let longest = node
            .descendants()
            .filter(|child| child.is_text())
            .filter(|child| child.parent().is_some_and(|p| !p.has_tag_name("title")))
            .map(|child| child.text().unwrap().chars().count())
            .max()
            .unwrap_or(0);
        let width = longest as f64 * 11.0 * 0.6;
        let (left, right) = if node.attribute("transform").is_some() {
            (x - width * std::f64::consts::FRAC_1_SQRT_2, x)
        } else {
            (x - width / 2.0, x + width / 2.0)
        };
        extent = (extent.0.min(left), extent.1.max(right));
    }
    extent
}

#[test]
fn long_category_labels_are_wrapped_or_rotated_and_stay_inside() {
    // Eight fine categories across a wide chart: wrapped at underscores.
    let x_labels = fine_categories(8);
    let series = vec![Series {
        name: "CS".to_owned(),
        points: x_labels
            .iter()
            .map(|label| point(label, Some(0.5), None))
            .collect(),
    }];
    let wide = ChartOptions {
        width: 1100,
        ..options("t")
    };
    let svg = line_chart(&x_labels, &series, &wide);
    let doc = parse(&svg);
    assert!(svg.contains(">comparative_</tspan>"), "{svg}");
    assert!(!svg.contains("rotate(-45"));
    let (left, right) = x_label_extent(&doc);
    assert!(left >= 0.0 && right <= number(&doc.root_element(), "width"));

    // Three levels of eight in one dot chart: rotated, and the chart grows to fit them.
    let groups: Vec<Group> = ["coarse", "medium", "fine"]
        .iter()
        .map(|level| Group {
            label: (*level).to_owned(),
            points: fine_categories(8)
                .iter()
                .map(|label| point(label, Some(0.5), Some((0.4, 0.6))))
                .collect(),
        })
        .collect();
    let short = ChartOptions {
        height: 300,
        ..options("t")
    };
    let svg = dot_chart(&groups, &[], &short);
    let doc = parse(&svg);
    assert_eq!(count(&doc, "text", "x-label"), 24);
    assert!(svg.contains("rotate(-45"));
    let root = doc.root_element();
    assert!(
        number(&root, "height") > 300.0,
        "taller than asked for the labels"
    );
    let (left, right) = x_label_extent(&doc);
    assert!(left >= 0.0, "the first rotated label starts at {left}");
    assert!(right <= number(&root, "width"));
    let lowest_label = doc
        .descendants()
        .filter(|node| has_class(node, "x-label"))
        .map(|node| number(&node, "y"))
        .fold(0.0, f64::max);
    let longest = 31.0 * 11.0 * 0.6 * std::f64::consts::FRAC_1_SQRT_2;
    assert!(lowest_label + longest <= number(&root, "height"));
}

#[test]
fn many_series_get_distinct_colours_then_dashes() {
    let x_labels = labels(&["a", "b"]);
    let series: Vec<Series> = (0..9)
        .map(|i| Series {
            name: format!("series {i}"),
            points: vec![
                point("a", Some(i as f64), None),
                point("b", Some(i as f64 + 1.0), None),
            ],
        })
        .collect();
    let svg = line_chart(&x_labels, &series, &options("t"));
    let doc = parse(&svg);
    let strokes: Vec<(&str, Option<&str>)> = doc
        .descendants()
        .filter(|node| has_class(node, "series-line"))
        .map(|node| {
            (
                node.attribute("stroke").unwrap(),
                node.attribute("stroke-dasharray"),
            )
        })
        .collect();
    let mut distinct = strokes.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 9, "{strokes:?}");
    assert_eq!(count(&doc, "g", "legend-item"), 9);
}

#[test]
fn bands_shade_under_their_series_and_stretch_the_axis() {
    let (x_labels, series) = discpow_series();
    let bands = vec![
        // Above every value of the data: the axis must grow to show it.
        Band {
            series: "question type".to_owned(),
            points: vec![
                point("coarse", Some(0.2), None),
                point("medium", Some(1.5), None),
                point("fine", Some(0.3), None),
            ],
        },
        // One value only: a strip.
        Band {
            series: "user persona".to_owned(),
            points: vec![point("fine", Some(0.1), None), point("medium", None, None)],
        },
        // No such series: nothing drawn.
        Band {
            series: "<no such series>".to_owned(),
            points: vec![point("coarse", Some(0.5), None)],
        },
    ];
    let svg = line_chart_with_bands(&x_labels, &series, &bands, &options("bands"));
    let doc = parse(&svg);
    assert_eq!(count(&doc, "path", "band"), 2, "{svg}");
    let band_paths: Vec<roxmltree::Node> = doc
        .descendants()
        .filter(|n| n.has_tag_name("path") && has_class(n, "band"))
        .collect();
    assert_eq!(
        band_paths[0].attribute("data-series"),
        Some("question type")
    );
    // Each band is closed along the bottom: 3 tops and 2 bottom corners, or 2 and 2 for a strip.
    let corners = |n: &roxmltree::Node| n.attribute("d").unwrap().matches(['M', 'L']).count();
    assert_eq!(corners(&band_paths[0]), 5);
    assert_eq!(corners(&band_paths[1]), 4);
    // The band's colour is its series' line colour.
    let line = doc
        .descendants()
        .find(|n| {
            has_class(n, "series-line") && n.attribute("data-series") == Some("question type")
        })
        .unwrap();
    assert_eq!(band_paths[0].attribute("fill"), line.attribute("stroke"));
    // The bands come before the lines, so lines and points are drawn over them.
    assert!(svg.find("class=\"band\"").unwrap() < svg.find("class=\"series-line\"").unwrap());
    // The y axis reaches the band's top of 1.5 (the data alone stop at 0.92).
    let ticks: Vec<f64> = doc
        .descendants()
        .filter(|n| {
            n.has_tag_name("text")
                && has_class(n, "tick")
                && n.attribute("text-anchor") == Some("end")
        })
        .filter_map(|n| n.text()?.parse().ok())
        .collect();
    assert!(ticks.iter().any(|&t| t >= 1.5), "{ticks:?}");
    // Without bands the chart is the plain line chart, byte for byte.
    assert_eq!(
        line_chart_with_bands(&x_labels, &series, &[], &options("bands")),
        line_chart(&x_labels, &series, &options("bands"))
    );
}
