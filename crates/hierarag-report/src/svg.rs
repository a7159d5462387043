//! Small, dependency-free SVG charts for the report: line charts, dot charts and interaction plots.
//!
//! Every chart function returns one complete, standalone `<svg>` element that can be written to
//! a `.svg` file or inlined in the HTML report as is:
//!
//! - `width`, `height` and a matching `viewBox`, `role="img"`, an `aria-label` and a `<title>`
//!   (the accessible name) and a `<desc>` summary; text uses the system UI font, no web fonts;
//! - the root carries `class="chart chart-<kind>"` (`chart-line`, `chart-dot`,
//!   `chart-interaction`), and the marks carry classes that tests and page scripts can count:
//!   `circle.point` (one per drawn value), `line.ci` (one per drawn confidence interval),
//!   `line.threshold` (one per drawn threshold), `g.legend-item` (one per series);
//! - values that are `None`, NaN or infinite are skipped: no mark is drawn for them and "NaN"
//!   never appears in the output; a line has a gap where a value is missing;
//! - the same input gives the same bytes (no hashing, coordinates with one decimal);
//! - all text (titles, labels, series names) is escaped with [`SvgText`], as in the taxonomy
//!   figure.
//!
//! The y axis gets "nice" ticks (1, 2, 2.5 or 5 × 10^k, see [`nice_ticks`]) covering every
//! value, confidence interval and threshold unless [`ChartOptions::y_min`] / `y_max` fix an
//! end; marks outside a fixed range are clipped at the plot area. Category labels on the x axis
//! are written on one line when they fit, wrapped after `_`, `-`, `/` or spaces (at most three
//! lines) when that makes them fit, and otherwise rotated by 45°; the chart grows taller (never
//! narrower) than [`ChartOptions::height`] when the labels need the room.
//!
//! ```
//! use hierarag_report::svg::{line_chart, ChartOptions, Point, Series};
//!
//! let levels = ["coarse", "medium", "fine"].map(String::from).to_vec();
//! let series = vec![Series {
//!     name: "question type".to_owned(),
//!     points: vec![
//!         Point::new("coarse", Some(0.91)).with_ci(0.88, 0.94),
//!         Point::new("medium", Some(0.74)).with_ci(0.70, 0.78),
//!         Point::new("fine", None),
//!     ],
//! }];
//! let svg = line_chart(&levels, &series, &ChartOptions::new("DiscPow by granularity", "DiscPow"));
//! assert!(svg.starts_with("<svg") && svg.contains(r#"class="chart chart-line""#));
//! assert_eq!(svg.matches(r#"<circle class="point""#).count(), 2);
//! ```

use std::fmt::Write as _;

use hierarag_taxonomy::SvgText;

/// Writes one line of SVG into a `String` (which cannot fail).
macro_rules! emit {
    ($out:expr, $($arg:tt)*) => {{
        let _ = writeln!($out, $($arg)*);
    }};
}

/// One value of a chart, with an optional confidence interval `(low, high)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The category the value belongs to: an x label of a line chart or interaction plot (the
    /// point is drawn above the x label equal to it), or the category shown under a dot.
    pub label: String,
    /// The value; `None` or a non-finite value draws nothing.
    pub value: Option<f64>,
    /// The confidence interval, drawn as a whisker; one drawn only when both ends are finite.
    pub ci: Option<(f64, f64)>,
}

impl Point {
    /// A point without a confidence interval.
    pub fn new(label: impl Into<String>, value: Option<f64>) -> Point {
        Point {
            label: label.into(),
            value,
            ci: None,
        }
    }

    /// The same point with the confidence interval `(low, high)`.
    pub fn with_ci(mut self, low: f64, high: f64) -> Point {
        self.ci = Some((low, high));
        self
    }
}

/// A named line of points (one per x label) in a line chart or interaction plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The name shown in the legend.
    pub name: String,
    /// The points, matched to the x labels by [`Point::label`]; order does not matter.
    pub points: Vec<Point>,
}

/// A shaded area under a series of a line chart, from the bottom of the plot to each point's
/// value (for example the noise floor under a DiscPow line), in the series' colour.
#[derive(Debug, Clone, PartialEq)]
pub struct Band {
    /// The [`Series::name`] whose colour the band takes; a band without its series is not drawn.
    pub series: String,
    /// The band's top edge, matched to the x labels by [`Point::label`]; intervals are ignored.
    pub points: Vec<Point>,
}

/// A labelled run of points in a dot chart; groups are separated by a gap and a divider, and
/// the group label is written above its points.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// The label above the group (for example a granularity level); may be empty.
    pub label: String,
    /// The points, drawn left to right in this order.
    pub points: Vec<Point>,
}

/// A horizontal reference line, drawn dashed and labelled at its right end.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// Where the line is drawn on the y axis; a non-finite value draws nothing.
    pub value: f64,
    /// The text written above the line's right end (for example "ρ = 2").
    pub label: String,
}

/// Title, axis label and size of a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartOptions {
    /// The visible title and accessible name of the chart.
    pub title: String,
    /// The label of the y axis, written vertically at its left.
    pub y_label: String,
    /// Width in pixels; the chart never comes out narrower than 240.
    pub width: u32,
    /// Height in pixels; the chart grows taller when long x labels need the room.
    pub height: u32,
    /// Fixes the bottom of the y axis instead of fitting it to the data.
    pub y_min: Option<f64>,
    /// Fixes the top of the y axis instead of fitting it to the data.
    pub y_max: Option<f64>,
}

impl ChartOptions {
    /// Options with this title and y label, 720 × 400 pixels and an automatic y range.
    pub fn new(title: impl Into<String>, y_label: impl Into<String>) -> ChartOptions {
        ChartOptions {
            title: title.into(),
            y_label: y_label.into(),
            ..ChartOptions::default()
        }
    }
}

impl Default for ChartOptions {
    fn default() -> ChartOptions {
        ChartOptions {
            title: String::new(),
            y_label: String::new(),
            width: 720,
            height: 400,
            y_min: None,
            y_max: None,
        }
    }
}

/// The ticks of an axis, from [`nice_ticks`].
#[derive(Debug, Clone, PartialEq)]
pub struct Ticks {
    /// The first tick, at or below the lowest value asked for.
    pub min: f64,
    /// The last tick, at or above the highest value asked for.
    pub max: f64,
    /// The distance between ticks: 1, 2, 2.5 or 5 times a power of ten.
    pub step: f64,
    /// The ticks from `min` to `max`, each a whole multiple of `step`.
    pub values: Vec<f64>,
    /// Decimal places that write every tick exactly (2 for a step of 0.25).
    pub decimals: usize,
}

impl Ticks {
    /// Writes a tick value with [`Ticks::decimals`] decimal places (never "-0").
    pub fn format(&self, value: f64) -> String {
        fixed(value, self.decimals)
    }
}

/// The Okabe–Ito colour-blind-safe palette, darkest-first, without its yellow (too light on
/// white); series beyond the seventh reuse the colours with dashed lines.
pub const PALETTE: [&str; 7] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000",
];

/// Draws lines over categorical x labels (for example coarse, medium, fine): one line per
/// series in palette order, a dot per value with its confidence-interval whisker, and a legend.
/// Series are nudged apart horizontally so that their whiskers do not hide each other. Points
/// are placed by matching [`Point::label`] to `x_labels`; a point whose label is not among them
/// is not drawn.
pub fn line_chart(x_labels: &[String], series: &[Series], options: &ChartOptions) -> String {
    lines_svg(Kind::Line, x_labels, series, &[], options)
}

/// [`line_chart`] with shaded [`Band`]s under the lines, drawn first so that lines and points
/// stay on top; the y axis covers the bands too.
pub fn line_chart_with_bands(
    x_labels: &[String],
    series: &[Series],
    bands: &[Band],
    options: &ChartOptions,
) -> String {
    lines_svg(Kind::Line, x_labels, series, bands, options)
}

/// Draws one dot per category with its confidence-interval whisker, the categories grouped
/// (groups separated by a gap and labelled above), and dashed, labelled horizontal threshold
/// lines. Each group has its own palette colour. Groups without points are left out.
pub fn dot_chart(groups: &[Group], thresholds: &[Threshold], options: &ChartOptions) -> String {
    let mut slots = Vec::new();
    let mut spans = Vec::new();
    let mut unit = 0.0;
    for group in groups.iter().filter(|group| !group.points.is_empty()) {
        if !spans.is_empty() {
            unit += GROUP_GAP_UNITS;
        }
        let start = unit;
        for point in &group.points {
            slots.push(Slot {
                label: &point.label,
                unit: unit + 0.5,
            });
            unit += 1.0;
        }
        spans.push(Span {
            label: &group.label,
            start,
            end: unit,
        });
    }
    let drawn: Vec<_> = groups
        .iter()
        .filter(|group| !group.points.is_empty())
        .flat_map(|group| &group.points)
        .filter_map(drawable)
        .collect();
    let thresholds: Vec<&Threshold> = thresholds
        .iter()
        .filter(|threshold| threshold.value.is_finite())
        .collect();
    let extent = extent(
        drawn
            .iter()
            .flat_map(|mark| mark.span())
            .chain(thresholds.iter().map(|threshold| threshold.value)),
    );
    let with_headers = spans.iter().any(|span| !span.label.is_empty());
    let summary = format!(
        "Dot chart of {}: {} values in {} groups, {} threshold lines.",
        if options.y_label.is_empty() {
            "values"
        } else {
            &options.y_label
        },
        drawn.len(),
        spans.len(),
        thresholds.len(),
    );
    let frame = Frame {
        kind: Kind::Dot,
        slots,
        total_units: unit,
        legend: Vec::new(),
        headers: if with_headers { spans } else { Vec::new() },
        thresholds: thresholds.iter().map(|threshold| threshold.value).collect(),
        right_labels: thresholds
            .iter()
            .map(|threshold| threshold.label.as_str())
            .collect(),
        extent,
        summary,
    };
    let layout = Layout::new(&frame, options);
    let mut svg = open_chart(&frame, &layout, options);
    let thresholds: Vec<&Threshold> = thresholds
        .into_iter()
        .filter(|threshold| layout.axis.contains(threshold.value))
        .collect();
    for threshold in &thresholds {
        let y = layout.y(threshold.value);
        emit!(
            svg,
            r##"<line class="threshold" x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="#555555" stroke-width="1.2" stroke-dasharray="6 4" data-value="{}"/>"##,
            px(layout.x0),
            px(layout.x1),
            data(threshold.value),
            y = px(y),
        );
    }
    open_plot_area(&mut svg, &layout);
    let (radius, cap) = mark_sizes(layout.unit_w, 1);
    let mut slot_index = 0;
    for (group_index, group) in groups
        .iter()
        .filter(|group| !group.points.is_empty())
        .enumerate()
    {
        let colour = PALETTE[group_index % PALETTE.len()];
        emit!(
            svg,
            r#"<g class="group" data-group="{}" fill="{colour}" stroke="{colour}">"#,
            SvgText(&group.label)
        );
        for point in &group.points {
            let x = layout.x(frame.slots[slot_index].unit);
            slot_index += 1;
            if let Some(mark) = drawable(point) {
                let series = Some(group.label.as_str()).filter(|label| !label.is_empty());
                draw_mark(&mut svg, &layout, x, &mark, series, radius, cap);
            }
        }
        svg.push_str("</g>\n");
    }
    close_plot_area(&mut svg, &layout, drawn.is_empty());
    for threshold in &thresholds {
        emit!(
            svg,
            r##"<text class="threshold-label" x="{}" y="{}" dy="0.32em" font-size="{TICK_FONT}" fill="#333333">{}</text>"##,
            px(layout.x1 + 6.0),
            px(layout.y(threshold.value)),
            SvgText(&truncate(&threshold.label, MAX_MARGIN_CHARS)),
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// Draws a factorial interaction plot: the x labels are the levels of factor B, and each series
/// is one level of factor A, drawn as a line with a dot and confidence-interval whisker per
/// level of B. Parallel lines mean no interaction. Laid out like [`line_chart`].
pub fn interaction_plot(x_labels: &[String], lines: &[Series], options: &ChartOptions) -> String {
    lines_svg(Kind::Interaction, x_labels, lines, &[], options)
}

/// Ticks for an axis covering `low..=high`: about `target_count` of them (at least 2), spaced
/// by 1, 2, 2.5 or 5 times a power of ten, the first at or below `low` and the last at or above
/// `high`. An empty range is widened (by 10% of the value, or by 1 around zero); non-finite
/// ends give the ticks of `0..=1`.
///
/// ```
/// let ticks = hierarag_report::svg::nice_ticks(0.13, 0.87, 6);
/// assert_eq!((ticks.min, ticks.max, ticks.step), (0.0, 1.0, 0.2));
/// assert_eq!(ticks.format(ticks.values[1]), "0.2");
/// ```
pub fn nice_ticks(low: f64, high: f64, target_count: usize) -> Ticks {
    let (mut low, mut high) = if low.is_finite() && high.is_finite() {
        (low.min(high), low.max(high))
    } else {
        (0.0, 1.0)
    };
    if high - low <= f64::EPSILON * low.abs().max(high.abs()) {
        let pad = if low == 0.0 { 1.0 } else { low.abs() * 0.1 };
        low -= pad;
        high += pad;
    }
    let intervals = target_count.max(2) as f64 - 1.0;
    let raw_step = (high - low) / intervals;
    let exponent = raw_step.log10().floor() as i32;
    let magnitude = 10f64.powi(exponent);
    let factor = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .find(|&factor| factor * magnitude >= raw_step * (1.0 - 1e-9))
        .unwrap_or(10.0);
    let (factor, exponent) = if factor == 10.0 {
        (1.0, exponent + 1)
    } else {
        (factor, exponent)
    };
    let magnitude = 10f64.powi(exponent);
    let step = factor * magnitude;
    let decimals = (-exponent + i32::from(factor == 2.5)).max(0) as usize;
    // Ticks are whole multiples of the step, computed as integers over 10^decimals so that
    // 3 × 0.1 comes out as 0.3 rather than 0.30000000000000004.
    let scale = 10f64.powi(decimals as i32);
    let scaled_step = (step * scale).round();
    let first = (low / step + 1e-9).floor();
    let last = (high / step - 1e-9).ceil();
    let values: Vec<f64> = (0..=(last - first) as i64)
        .map(|i| (first + i as f64) * scaled_step / scale)
        .collect();
    Ticks {
        min: values[0],
        max: values[values.len() - 1],
        step,
        values,
        decimals,
    }
}

const FONT_FAMILY: &str =
    "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif";
/// Average advance of a character in em; errs on the wide side so that text gets room.
const EM_PER_CHAR: f64 = 0.6;
const TITLE_FONT: f64 = 15.0;
const LABEL_FONT: f64 = 12.0;
const TICK_FONT: f64 = 11.0;
const LINE_HEIGHT: f64 = 13.0;
const PADDING: f64 = 12.0;
const MIN_PLOT_WIDTH: f64 = 160.0;
const MIN_PLOT_HEIGHT: f64 = 200.0;
const MIN_WIDTH: u32 = 240;
const LEGEND_ROW: f64 = 18.0;
const HEADER_STRIP: f64 = 22.0;
/// Space between two groups of a dot chart, in category widths.
const GROUP_GAP_UNITS: f64 = 0.6;
const MAX_WRAPPED_LINES: usize = 3;
/// Longer rotated labels are cut (with "…"); the full label stays in a tooltip.
const MAX_ROTATED_CHARS: usize = 40;
const MAX_LEGEND_CHARS: usize = 48;
/// Longer threshold labels are cut (with "…") to keep the right margin narrow.
const MAX_MARGIN_CHARS: usize = 24;
/// sin 45° = cos 45°, for rotated labels.
const DIAGONAL: f64 = std::f64::consts::FRAC_1_SQRT_2;
/// How far marks may reach past the plot area before they are clipped (half a dot and more).
const CLIP_SLACK: f64 = 7.0;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Line,
    Dot,
    Interaction,
}

impl Kind {
    fn class(self) -> &'static str {
        match self {
            Kind::Line => "line",
            Kind::Dot => "dot",
            Kind::Interaction => "interaction",
        }
    }
}

/// A category position on the x axis; `unit` is its centre in category widths from the left.
#[derive(Debug)]
struct Slot<'a> {
    label: &'a str,
    unit: f64,
}

/// A labelled run of categories (a dot-chart group), in category widths.
#[derive(Debug)]
struct Span<'a> {
    label: &'a str,
    start: f64,
    end: f64,
}

/// What the axes, legend and headers of a chart need to know, before any layout.
#[derive(Debug)]
struct Frame<'a> {
    kind: Kind,
    slots: Vec<Slot<'a>>,
    total_units: f64,
    legend: Vec<&'a str>,
    headers: Vec<Span<'a>>,
    /// Threshold values: the axis is widened so that none lies on its end, where it would hide
    /// in the x axis.
    thresholds: Vec<f64>,
    /// Labels written in the right margin (threshold labels), which widen it.
    right_labels: Vec<&'a str>,
    /// Lowest and highest value to show; `None` when nothing is drawn.
    extent: Option<(f64, f64)>,
    summary: String,
}

/// A value that will be drawn: finite, with a finite (low ≤ high) interval if any.
#[derive(Debug, Clone, Copy)]
struct Mark<'a> {
    label: &'a str,
    value: f64,
    ci: Option<(f64, f64)>,
}

impl Mark<'_> {
    fn span(&self) -> impl Iterator<Item = f64> {
        let (low, high) = self.ci.unwrap_or((self.value, self.value));
        [self.value, low, high].into_iter()
    }
}

fn drawable(point: &Point) -> Option<Mark<'_>> {
    let value = point.value.filter(|value| value.is_finite())?;
    let ci = point
        .ci
        .filter(|(low, high)| low.is_finite() && high.is_finite())
        .map(|(low, high)| (low.min(high), low.max(high)));
    Some(Mark {
        label: &point.label,
        value,
        ci,
    })
}

fn extent(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values.fold(None, |extent, value| match extent {
        None => Some((value, value)),
        Some((low, high)) => Some((low.min(value), high.max(value))),
    })
}

/// The y axis as drawn: its ends and the ticks between them.
#[derive(Debug)]
struct Axis {
    min: f64,
    max: f64,
    ticks: Ticks,
}

impl Axis {
    fn new(extent: Option<(f64, f64)>, thresholds: &[f64], options: &ChartOptions) -> Axis {
        let fixed_min = options.y_min.filter(|value| value.is_finite());
        let fixed_max = options.y_max.filter(|value| value.is_finite());
        let (data_low, data_high) = extent.unwrap_or((0.0, 1.0));
        let mut low = fixed_min.unwrap_or(data_low);
        let mut high = fixed_max.unwrap_or(data_high);
        let (mut fixed_min, mut fixed_max) = (fixed_min.is_some(), fixed_max.is_some());
        if low > high {
            // A fixed end on the wrong side of the data: keep the fixed end, fit the other.
            match (fixed_min, fixed_max) {
                (true, false) => high = low + (data_high - data_low).abs().max(1.0),
                (false, true) => low = high - (data_high - data_low).abs().max(1.0),
                _ => {
                    (low, high) = (data_low.min(data_high), data_low.max(data_high));
                    (fixed_min, fixed_max) = (false, false);
                }
            }
        }
        let target = (options.height as f64 / 70.0).round().clamp(4.0, 8.0) as usize;
        let mut ticks = nice_ticks(low, high, target);
        // A threshold on a fitted end of the axis would hide in the x axis or the top grid
        // line: give it half a step of room.
        let on = |end: f64| {
            thresholds
                .iter()
                .any(|&value| (value - end).abs() <= ticks.step * 1e-6)
        };
        let widen_low = !fixed_min && on(ticks.min);
        let widen_high = !fixed_max && on(ticks.max);
        if widen_low || widen_high {
            let half_step = ticks.step / 2.0;
            ticks = nice_ticks(
                if widen_low { low - half_step } else { low },
                if widen_high { high + half_step } else { high },
                target,
            );
        }
        let min = if fixed_min && low < high {
            low
        } else {
            ticks.min
        };
        let max = if fixed_max && low < high {
            high
        } else {
            ticks.max
        };
        let slack = ticks.step * 1e-9;
        ticks
            .values
            .retain(|&tick| tick >= min - slack && tick <= max + slack);
        Axis { min, max, ticks }
    }

    fn contains(&self, value: f64) -> bool {
        let slack = (self.max - self.min) * 1e-9;
        value >= self.min - slack && value <= self.max + slack
    }
}

/// How the x labels are written.
#[derive(Debug)]
enum XLabels {
    /// Horizontal, each label as one or more lines.
    Horizontal(Vec<Vec<String>>),
    /// Rotated by 45°, each label on one (possibly shortened) line.
    Rotated(Vec<String>),
}

/// Where everything goes, in pixels.
#[derive(Debug)]
struct Layout {
    width: f64,
    height: f64,
    /// The plot area: x0..x1 left to right, y0..y1 top to bottom.
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
    unit_w: f64,
    total_units: f64,
    axis: Axis,
    title_baseline: f64,
    /// Each legend entry's left end and baseline.
    legend: Vec<(f64, f64)>,
    x_labels: XLabels,
}

impl Layout {
    fn new(frame: &Frame, options: &ChartOptions) -> Layout {
        let width = f64::from(options.width.max(MIN_WIDTH));
        let axis = Axis::new(frame.extent, &frame.thresholds, options);
        let tick_width = axis
            .ticks
            .values
            .iter()
            .map(|&tick| text_width(&axis.ticks.format(tick), TICK_FONT))
            .fold(0.0, f64::max);
        let y_label_width = if options.y_label.is_empty() {
            0.0
        } else {
            LABEL_FONT + 8.0
        };
        let total_units = frame.total_units.max(1.0);
        let mut x0 = PADDING + y_label_width + tick_width + 8.0;
        let right_margin = PADDING
            + frame
                .right_labels
                .iter()
                .map(|label| text_width(&truncate(label, MAX_MARGIN_CHARS), TICK_FONT) + 10.0)
                .fold(6.0, f64::max);
        let x1 = (width - right_margin).max(x0 + MIN_PLOT_WIDTH);
        let width = width.max(x1 + right_margin);
        let unit_w = (x1 - x0) / total_units;
        let x_labels = x_labels(&frame.slots, unit_w);
        if let XLabels::Rotated(labels) = &x_labels {
            // A rotated label hangs down and to the left of its category: move the plot right
            // until the first labels stay inside the chart.
            for _ in 0..3 {
                let unit_w = (x1 - x0) / total_units;
                let needed = frame
                    .slots
                    .iter()
                    .zip(labels)
                    .map(|(slot, label)| {
                        text_width(label, TICK_FONT) * DIAGONAL + 6.0 + PADDING / 2.0
                            - slot.unit * unit_w
                    })
                    .fold(x0, f64::max);
                x0 = needed.min(x1 - MIN_PLOT_WIDTH);
            }
        }
        let unit_w = (x1 - x0) / total_units;

        let mut top = PADDING;
        let title_baseline = top + TITLE_FONT;
        if !options.title.is_empty() {
            top += TITLE_FONT + 10.0;
        }
        let mut legend = Vec::with_capacity(frame.legend.len());
        if !frame.legend.is_empty() {
            let mut x = x0;
            let mut baseline = top + LABEL_FONT;
            for name in &frame.legend {
                let item_width = legend_item_width(name);
                if x > x0 && x + item_width > x1 {
                    x = x0;
                    baseline += LEGEND_ROW;
                }
                legend.push((x, baseline));
                x += item_width + 18.0;
            }
            top = baseline + 10.0;
        }
        if !frame.headers.is_empty() {
            top += HEADER_STRIP;
        }
        let y0 = top + 8.0;
        let bottom = match &x_labels {
            XLabels::Horizontal(lines) => {
                let n_lines = lines.iter().map(Vec::len).max().unwrap_or(1) as f64;
                8.0 + n_lines * LINE_HEIGHT + 4.0 + PADDING
            }
            XLabels::Rotated(labels) => {
                let longest = labels
                    .iter()
                    .map(|label| text_width(label, TICK_FONT))
                    .fold(0.0, f64::max);
                10.0 + (longest + TICK_FONT) * DIAGONAL + PADDING
            }
        };
        let height = f64::from(options.height).max(y0 + MIN_PLOT_HEIGHT + bottom);
        Layout {
            width: width.ceil(),
            height: height.ceil(),
            x0,
            x1,
            y0,
            y1: height.ceil() - bottom,
            unit_w,
            total_units,
            axis,
            title_baseline,
            legend,
            x_labels,
        }
    }

    fn x(&self, unit: f64) -> f64 {
        self.x0 + unit * (self.x1 - self.x0) / self.total_units
    }

    fn y(&self, value: f64) -> f64 {
        self.y1 - (value - self.axis.min) / (self.axis.max - self.axis.min) * (self.y1 - self.y0)
    }
}

fn legend_item_width(name: &str) -> f64 {
    22.0 + 6.0 + text_width(&truncate(name, MAX_LEGEND_CHARS), LABEL_FONT)
}

/// Chooses how to write the x labels: one line each if all fit their category width, wrapped
/// if all fit in at most three lines, rotated otherwise.
fn x_labels(slots: &[Slot], unit_w: f64) -> XLabels {
    let max_chars = ((unit_w - 6.0) / (TICK_FONT * EM_PER_CHAR))
        .floor()
        .max(0.0) as usize;
    let wrapped: Option<Vec<Vec<String>>> = slots
        .iter()
        .map(|slot| wrap(slot.label, max_chars))
        .collect();
    match wrapped {
        Some(lines) => XLabels::Horizontal(lines),
        None => XLabels::Rotated(
            slots
                .iter()
                .map(|slot| truncate(slot.label, MAX_ROTATED_CHARS))
                .collect(),
        ),
    }
}

/// Breaks `label` after `_`, `-`, `/` and spaces into lines of at most `max_chars` characters;
/// `None` if a piece is longer or more than three lines are needed.
fn wrap(label: &str, max_chars: usize) -> Option<Vec<String>> {
    let mut pieces = Vec::new();
    let mut piece = String::new();
    for c in label.chars() {
        piece.push(c);
        if matches!(c, '_' | '-' | '/' | ' ') {
            pieces.push(std::mem::take(&mut piece));
        }
    }
    if !piece.is_empty() || pieces.is_empty() {
        pieces.push(piece);
    }
    let mut lines = Vec::new();
    let mut line = String::new();
    for piece in pieces {
        let piece_chars = piece.trim_end().chars().count();
        if piece_chars > max_chars {
            return None;
        }
        if !line.is_empty() && line.chars().count() + piece_chars > max_chars {
            lines.push(line.trim_end().to_owned());
            line.clear();
        }
        line.push_str(&piece);
    }
    lines.push(line.trim_end().to_owned());
    (lines.len() <= MAX_WRAPPED_LINES).then_some(lines)
}

fn text_width(text: &str, font_size: f64) -> f64 {
    text.chars().count() as f64 * font_size * EM_PER_CHAR
}

fn truncate(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let mut short: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    short.push('…');
    short
}

/// Draws a line chart or interaction plot.
fn lines_svg(
    kind: Kind,
    x_labels: &[String],
    series: &[Series],
    bands: &[Band],
    options: &ChartOptions,
) -> String {
    let slots: Vec<Slot> = x_labels
        .iter()
        .enumerate()
        .map(|(i, label)| Slot {
            label,
            unit: i as f64 + 0.5,
        })
        .collect();
    // For each series, the drawable mark at each x label.
    let marks: Vec<Vec<Option<Mark>>> = series
        .iter()
        .map(|series| {
            x_labels
                .iter()
                .map(|label| {
                    series
                        .points
                        .iter()
                        .find(|point| &point.label == label)
                        .and_then(drawable)
                })
                .collect()
        })
        .collect();
    let n_drawn = marks.iter().flatten().flatten().count();
    // Each band's top edge at each x label, for the bands whose series is drawn.
    let band_tops: Vec<(usize, Vec<Option<f64>>)> = bands
        .iter()
        .filter_map(|band| {
            let index = series.iter().position(|s| s.name == band.series)?;
            let tops = x_labels
                .iter()
                .map(|label| {
                    band.points
                        .iter()
                        .find(|point| &point.label == label)
                        .and_then(|point| point.value)
                        .filter(|value| value.is_finite())
                })
                .collect();
            Some((index, tops))
        })
        .collect();
    let extent = extent(
        marks.iter().flatten().flatten().flat_map(Mark::span).chain(
            band_tops
                .iter()
                .flat_map(|(_, tops)| tops.iter().flatten().copied()),
        ),
    );
    let what = if options.y_label.is_empty() {
        "values"
    } else {
        &options.y_label
    };
    let summary = match kind {
        Kind::Interaction => format!(
            "Interaction plot of {what}: {} lines over {} levels, {n_drawn} values.",
            series.len(),
            x_labels.len(),
        ),
        _ => format!(
            "Line chart of {what}: {} series over {} categories, {n_drawn} values.",
            series.len(),
            x_labels.len(),
        ),
    };
    let frame = Frame {
        kind,
        slots,
        total_units: x_labels.len() as f64,
        legend: series.iter().map(|series| series.name.as_str()).collect(),
        headers: Vec::new(),
        thresholds: Vec::new(),
        right_labels: Vec::new(),
        extent,
        summary,
    };
    let layout = Layout::new(&frame, options);
    let mut svg = open_chart(&frame, &layout, options);
    open_plot_area(&mut svg, &layout);
    for (index, tops) in &band_tops {
        draw_band(
            &mut svg,
            &layout,
            &frame.slots,
            tops,
            &series[*index].name,
            *index,
        );
    }
    let (radius, cap) = mark_sizes(layout.unit_w, series.len());
    // Series are nudged apart so that whiskers at the same category stay visible.
    let nudge = (layout.unit_w * 0.4 / series.len().max(1) as f64).min(7.0);
    let offset = |index: usize| (index as f64 - (series.len() as f64 - 1.0) / 2.0) * nudge;
    for (index, (series, marks)) in series.iter().zip(&marks).enumerate() {
        let mut path = String::new();
        let mut previous_drawn = false;
        for (slot, mark) in frame.slots.iter().zip(marks) {
            match mark {
                Some(mark) => {
                    let command = if previous_drawn { 'L' } else { 'M' };
                    if !path.is_empty() {
                        path.push(' ');
                    }
                    let _ = write!(
                        path,
                        "{command}{},{}",
                        px(layout.x(slot.unit) + offset(index)),
                        px(layout.y(mark.value))
                    );
                    previous_drawn = true;
                }
                None => previous_drawn = false,
            }
        }
        if !path.is_empty() {
            emit!(
                svg,
                r#"<path class="series-line" data-series="{}" d="{path}" fill="none" stroke="{}" stroke-width="2" stroke-linejoin="round"{}/>"#,
                SvgText(&series.name),
                colour(index),
                dash_attribute(index),
            );
        }
    }
    for (index, (series, marks)) in series.iter().zip(&marks).enumerate() {
        let colour = colour(index);
        emit!(
            svg,
            r#"<g class="series" data-series="{}" fill="{colour}" stroke="{colour}">"#,
            SvgText(&series.name)
        );
        for (slot, mark) in frame.slots.iter().zip(marks) {
            if let Some(mark) = mark {
                let x = layout.x(slot.unit) + offset(index);
                draw_mark(&mut svg, &layout, x, mark, Some(&series.name), radius, cap);
            }
        }
        svg.push_str("</g>\n");
    }
    close_plot_area(&mut svg, &layout, n_drawn == 0);
    svg.push_str("</svg>\n");
    svg
}

/// One band: an area from the plot's bottom to `tops` over each run of consecutive x labels
/// that have a value (a lone value gets a strip half a category wide).
fn draw_band(
    svg: &mut String,
    layout: &Layout,
    slots: &[Slot],
    tops: &[Option<f64>],
    series: &str,
    index: usize,
) {
    let bottom = px(layout.y1);
    let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut run: Vec<(f64, f64)> = Vec::new();
    for (slot, top) in slots.iter().zip(tops) {
        match top {
            Some(top) => run.push((layout.x(slot.unit), layout.y(*top))),
            None if !run.is_empty() => runs.push(std::mem::take(&mut run)),
            None => {}
        }
    }
    if !run.is_empty() {
        runs.push(run);
    }
    for run in runs {
        let mut path = String::new();
        let points: Vec<(f64, f64)> = match run.as_slice() {
            [(x, y)] => {
                let half = layout.unit_w * 0.25;
                vec![(x - half, *y), (x + half, *y)]
            }
            _ => run,
        };
        let _ = write!(path, "M{},{bottom}", px(points[0].0));
        for (x, y) in &points {
            let _ = write!(path, " L{},{}", px(*x), px(*y));
        }
        let _ = write!(path, " L{},{bottom} Z", px(points[points.len() - 1].0));
        emit!(
            svg,
            r#"<path class="band" data-series="{}" d="{path}" fill="{}" fill-opacity="0.15" stroke="none"/>"#,
            SvgText(series),
            colour(index),
        );
    }
}

/// Dot radius and whisker cap half-width for categories `unit_w` pixels wide.
fn mark_sizes(unit_w: f64, n_series: usize) -> (f64, f64) {
    let per_series = unit_w / n_series.max(1) as f64;
    (
        (per_series * 0.3).clamp(2.5, 4.5),
        (per_series * 0.25).clamp(2.0, 5.0),
    )
}

/// Draws one value: its whisker (if any), then its dot with a tooltip.
fn draw_mark(
    svg: &mut String,
    layout: &Layout,
    x: f64,
    mark: &Mark,
    series: Option<&str>,
    radius: f64,
    cap: f64,
) {
    let series_attribute = series
        .map(|series| format!(r#" data-series="{}""#, SvgText(series)))
        .unwrap_or_default();
    let mut tooltip = match series {
        Some(series) => format!("{series} · {}: {}", mark.label, data(mark.value)),
        None => format!("{}: {}", mark.label, data(mark.value)),
    };
    let mut ci_attributes = String::new();
    if let Some((low, high)) = mark.ci {
        let (y_low, y_high) = (px(layout.y(low)), px(layout.y(high)));
        emit!(
            svg,
            r#"<line class="ci"{series_attribute} x1="{x}" y1="{y_low}" x2="{x}" y2="{y_high}" stroke-width="1.5"/>"#,
            x = px(x),
        );
        emit!(
            svg,
            r#"<path class="ci-cap" d="M{},{y_low} h{} M{},{y_high} h{}" fill="none" stroke-width="1.5"/>"#,
            px(x - cap),
            px(2.0 * cap),
            px(x - cap),
            px(2.0 * cap),
        );
        ci_attributes = format!(
            r#" data-ci-low="{}" data-ci-high="{}""#,
            data(low),
            data(high)
        );
        let _ = write!(tooltip, " (CI {} to {})", data(low), data(high));
    }
    emit!(
        svg,
        r##"<circle class="point"{series_attribute} data-label="{}" data-value="{}"{ci_attributes} cx="{}" cy="{}" r="{}" stroke="#ffffff" stroke-width="1"><title>{}</title></circle>"##,
        SvgText(mark.label),
        data(mark.value),
        px(x),
        px(layout.y(mark.value)),
        px(radius),
        SvgText(&tooltip),
    );
}

/// Writes the root element, title, legend, axes, grid and group headers.
fn open_chart(frame: &Frame, layout: &Layout, options: &ChartOptions) -> String {
    let mut svg = String::new();
    let title = SvgText(&options.title);
    emit!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart chart-{kind}" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="{title}" font-family="{FONT_FAMILY}" data-kind="{kind}">"#,
        kind = frame.kind.class(),
        w = px(layout.width),
        h = px(layout.height),
    );
    emit!(svg, "<title>{title}</title>");
    emit!(svg, "<desc>{}</desc>", SvgText(&frame.summary));
    emit!(
        svg,
        r##"<rect class="background" width="{}" height="{}" fill="#ffffff"/>"##,
        px(layout.width),
        px(layout.height),
    );
    if !options.title.is_empty() {
        let max_chars = ((layout.width - 2.0 * PADDING) / (TITLE_FONT * 0.65)) as usize;
        emit!(
            svg,
            r##"<text class="chart-title" x="{}" y="{}" font-size="{TITLE_FONT}" font-weight="600" fill="#1a1a1a">{}</text>"##,
            px(PADDING),
            px(layout.title_baseline),
            SvgText(&truncate(&options.title, max_chars)),
        );
    }
    if !frame.legend.is_empty() {
        emit!(
            svg,
            r##"<g class="legend" font-size="{LABEL_FONT}" fill="#333333">"##
        );
        for (index, (name, &(x, baseline))) in frame.legend.iter().zip(&layout.legend).enumerate() {
            let colour = colour(index);
            let middle = baseline - LABEL_FONT * 0.35;
            emit!(
                svg,
                r#"<g class="legend-item" data-series="{}"><line x1="{}" y1="{m}" x2="{}" y2="{m}" stroke="{colour}" stroke-width="2"{}/><circle class="legend-marker" cx="{}" cy="{m}" r="3.5" fill="{colour}"/><text x="{}" y="{}">{}</text></g>"#,
                SvgText(name),
                px(x),
                px(x + 22.0),
                dash_attribute(index),
                px(x + 11.0),
                px(x + 28.0),
                px(baseline),
                SvgText(&truncate(name, MAX_LEGEND_CHARS)),
                m = px(middle),
            );
        }
        svg.push_str("</g>\n");
    }
    draw_y_axis(&mut svg, layout, options);
    draw_x_axis(&mut svg, frame, layout);
    draw_group_headers(&mut svg, frame, layout);
    svg
}

fn draw_y_axis(svg: &mut String, layout: &Layout, options: &ChartOptions) {
    emit!(
        svg,
        r##"<g class="y-axis" font-size="{TICK_FONT}" fill="#444444">"##
    );
    for &tick in &layout.axis.ticks.values {
        let y = px(layout.y(tick));
        emit!(
            svg,
            r##"<line class="grid" x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="#e3e3e3" stroke-width="1"/>"##,
            px(layout.x0),
            px(layout.x1),
        );
        emit!(
            svg,
            r#"<text class="tick" x="{}" y="{y}" dy="0.32em" text-anchor="end">{}</text>"#,
            px(layout.x0 - 6.0),
            layout.axis.ticks.format(tick),
        );
    }
    emit!(
        svg,
        r##"<line class="axis" x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#888888" stroke-width="1"/>"##,
        px(layout.y0),
        px(layout.y1),
        x = px(layout.x0),
    );
    svg.push_str("</g>\n");
    if !options.y_label.is_empty() {
        let x = PADDING + LABEL_FONT;
        let y = (layout.y0 + layout.y1) / 2.0;
        emit!(
            svg,
            r##"<text class="y-label" x="{x}" y="{y}" transform="rotate(-90 {x} {y})" text-anchor="middle" font-size="{LABEL_FONT}" fill="#333333">{}</text>"##,
            SvgText(&options.y_label),
            x = px(x),
            y = px(y),
        );
    }
}

fn draw_x_axis(svg: &mut String, frame: &Frame, layout: &Layout) {
    emit!(
        svg,
        r##"<g class="x-axis" font-size="{TICK_FONT}" fill="#444444">"##
    );
    emit!(
        svg,
        r##"<line class="axis" x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="#888888" stroke-width="1"/>"##,
        px(layout.x0),
        px(layout.x1),
        y = px(layout.y1),
    );
    for (index, slot) in frame.slots.iter().enumerate() {
        let x = layout.x(slot.unit);
        emit!(
            svg,
            r##"<line class="x-tick" x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#888888" stroke-width="1"/>"##,
            px(layout.y1),
            px(layout.y1 + 4.0),
            x = px(x),
        );
        let full = SvgText(slot.label);
        match &layout.x_labels {
            XLabels::Horizontal(labels) => {
                let mut text = format!(
                    r#"<text class="x-label" x="{}" y="{}" text-anchor="middle">"#,
                    px(x),
                    px(layout.y1 + 8.0 + TICK_FONT),
                );
                for (line_index, line) in labels[index].iter().enumerate() {
                    let dy = if line_index == 0 { 0.0 } else { LINE_HEIGHT };
                    let _ = write!(
                        text,
                        r#"<tspan x="{}" dy="{}">{}</tspan>"#,
                        px(x),
                        px(dy),
                        SvgText(line)
                    );
                }
                emit!(svg, "{text}</text>");
            }
            XLabels::Rotated(labels) => {
                let (x, y) = (px(x + 3.0), px(layout.y1 + 10.0));
                let tooltip = if labels[index] == slot.label {
                    String::new()
                } else {
                    format!("<title>{full}</title>")
                };
                emit!(
                    svg,
                    r#"<text class="x-label" x="{x}" y="{y}" dy="0.32em" text-anchor="end" transform="rotate(-45 {x} {y})">{tooltip}{}</text>"#,
                    SvgText(&labels[index]),
                );
            }
        }
    }
    svg.push_str("</g>\n");
}

fn draw_group_headers(svg: &mut String, frame: &Frame, layout: &Layout) {
    if frame.headers.is_empty() {
        return;
    }
    emit!(
        svg,
        r##"<g class="group-headers" font-size="{LABEL_FONT}" font-weight="600" fill="#333333">"##
    );
    for (index, span) in frame.headers.iter().enumerate() {
        let (start, end) = (layout.x(span.start), layout.x(span.end));
        let max_chars = ((end - start) / (LABEL_FONT * 0.65)).floor().max(1.0) as usize;
        let label = truncate(span.label, max_chars);
        let tooltip = if label == span.label {
            String::new()
        } else {
            format!("<title>{}</title>", SvgText(span.label))
        };
        emit!(
            svg,
            r#"<text class="group-label" x="{}" y="{}" text-anchor="middle">{tooltip}{}</text>"#,
            px((start + end) / 2.0),
            px(layout.y0 - 12.0),
            SvgText(&label),
        );
        emit!(
            svg,
            r##"<line class="group-rule" x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="#b0b0b0" stroke-width="1"/>"##,
            px(start + 4.0),
            px(end - 4.0),
            y = px(layout.y0 - 6.0),
        );
        if index > 0 {
            let x = layout.x(span.start - GROUP_GAP_UNITS / 2.0);
            emit!(
                svg,
                r##"<line class="group-divider" x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#cccccc" stroke-width="1" stroke-dasharray="3 3"/>"##,
                px(layout.y0),
                px(layout.y1),
                x = px(x),
            );
        }
    }
    svg.push_str("</g>\n");
}

/// Opens a nested `<svg>` over the plot area (plus a little slack), which clips the marks to
/// it without needing a document-unique `clipPath` id.
fn open_plot_area(svg: &mut String, layout: &Layout) {
    let (x, y) = (px(layout.x0 - CLIP_SLACK), px(layout.y0 - CLIP_SLACK));
    let (w, h) = (
        px(layout.x1 - layout.x0 + 2.0 * CLIP_SLACK),
        px(layout.y1 - layout.y0 + 2.0 * CLIP_SLACK),
    );
    emit!(
        svg,
        r#"<svg class="plot-area" x="{x}" y="{y}" width="{w}" height="{h}" viewBox="{x} {y} {w} {h}" overflow="hidden">"#
    );
}

fn close_plot_area(svg: &mut String, layout: &Layout, empty: bool) {
    svg.push_str("</svg>\n");
    if empty {
        emit!(
            svg,
            r##"<text class="no-data" x="{}" y="{}" text-anchor="middle" font-size="{LABEL_FONT}" fill="#777777">No data</text>"##,
            px((layout.x0 + layout.x1) / 2.0),
            px((layout.y0 + layout.y1) / 2.0),
        );
    }
}

fn colour(index: usize) -> &'static str {
    PALETTE[index % PALETTE.len()]
}

/// Series past the palette's length reuse its colours with a dash pattern.
fn dash_attribute(index: usize) -> &'static str {
    match index / PALETTE.len() {
        0 => "",
        1 => r#" stroke-dasharray="6 3""#,
        _ => r#" stroke-dasharray="2 3""#,
    }
}

/// A coordinate: one decimal, never "-0.0", never NaN (non-finite input writes "0").
fn px(value: f64) -> String {
    fixed(value, 1)
}

/// A data value for attributes and tooltips: four decimals.
fn data(value: f64) -> String {
    fixed(value, 4)
}

fn fixed(value: f64, decimals: usize) -> String {
    if !value.is_finite() {
        return "0".to_owned();
    }
    let text = format!("{value:.decimals$}");
    if text.starts_with('-') && text[1..].chars().all(|c| c == '0' || c == '.') {
        text[1..].to_owned()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::{fixed, nice_ticks, truncate, wrap};

    #[test]
    fn fixed_never_writes_negative_zero_or_nan() {
        assert_eq!(fixed(-0.0001, 1), "0.0");
        assert_eq!(fixed(-0.0, 0), "0");
        assert_eq!(fixed(f64::NAN, 2), "0");
        assert_eq!(fixed(-1.25, 2), "-1.25");
    }

    #[test]
    fn wrap_breaks_after_underscores_and_keeps_them() {
        assert_eq!(
            wrap("comparative_synthesis_concepts", 12),
            Some(vec![
                "comparative_".to_owned(),
                "synthesis_".to_owned(),
                "concepts".to_owned()
            ])
        );
        assert_eq!(wrap("short", 12), Some(vec!["short".to_owned()]));
        assert_eq!(wrap("a b", 12), Some(vec!["a b".to_owned()]));
        assert_eq!(wrap("", 0), Some(vec![String::new()]));
        assert_eq!(wrap("unbreakablelabel", 8), None);
        assert_eq!(wrap("a_b_c_d", 2), None, "four lines are too many");
    }

    #[test]
    fn truncate_counts_characters_not_bytes() {
        assert_eq!(truncate("ρρρρ", 4), "ρρρρ");
        assert_eq!(truncate("ρρρρρ", 4), "ρρρ…");
    }

    #[test]
    fn ticks_are_exact_decimals() {
        let ticks = nice_ticks(0.0, 0.7, 8);
        assert_eq!(ticks.step, 0.1);
        assert_eq!(ticks.values[3], 0.3);
        let ticks = nice_ticks(0.0, 1.0, 5);
        assert_eq!(ticks.step, 0.25);
        assert_eq!(ticks.decimals, 2);
        assert_eq!(ticks.format(0.75), "0.75");
    }
}
