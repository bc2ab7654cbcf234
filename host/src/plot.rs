//! The benchmark's picture: per shape, how fast convrs's best kernel is relative to the best
//! baseline, as an SVG (plotters' SVG backend writes text as `<text>`, so no fonts are needed).

use std::path::Path;

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::{Error, Result};

/// One shape's result for the picture.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotPoint {
    /// The problem, as the benchmark names it (e.g. `16,64,80,350->64,3x3 p1`); labels the x axis.
    pub shape: String,
    /// The kernel family of convrs's best kernel on this shape; picks the mark's colour (8 colours,
    /// in order of first appearance).
    pub family: String,
    /// The element type (`fp32`, `fp16`, ...); picks the mark: disc, ring, triangle,
    /// cross, in order of first appearance.
    pub dtype: String,
    /// convrs's speed over the best baseline's (> 1 is faster); must be finite and positive.
    pub ratio: f64,
}

const WIDTH: u32 = 1200;
const HEIGHT: u32 = 680;
const FONT: &str = "sans-serif";
const MARK_RADIUS: i32 = 5;
/// Rotated x labels need about this many pixels each to not overlap.
const X_LABEL_PITCH: u32 = 18;
/// The first eight Tableau 10 colours, chosen to stay apart side by side; a ninth family
/// reuses the first colour.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0x9c, 0x75, 0x5f),
];
const Y_LABEL_AREA: u32 = 80;
/// Longer shape labels are cut, so the label area cannot eat the plot.
const MAX_LABEL_CHARS: usize = 28;
const LEGEND_GREY: RGBColor = RGBColor(0x55, 0x55, 0x55);

/// Draws the per-shape speed ratio of convrs's best kernel to the best baseline and writes it
/// to `path` as an SVG: x = shapes in the given order (labelled sparsely when there are many),
/// y = ratio on a log scale with a line at 1.0x; colour = family, marker = dtype.
///
/// Fails with [`Error::InvalidArgument`] when there are no points, a ratio is not finite and
/// positive, or `path` cannot be written.
pub fn write_svg(path: &Path, title: &str, points: &[PlotPoint]) -> Result<()> {
    let svg = render_svg(title, points)?;
    std::fs::write(path, svg)
        .map_err(|e| Error::InvalidArgument(format!("cannot write the plot to {}: {e}", path.display())))
}

/// Same as [`write_svg`], into a String (exactly what `write_svg` writes).
pub fn render_svg(title: &str, points: &[PlotPoint]) -> Result<String> {
    if points.is_empty() {
        return Err(Error::InvalidArgument("nothing to plot: no points".into()));
    }
    if let Some(p) = points.iter().find(|p| !(p.ratio.is_finite() && p.ratio > 0.0)) {
        return Err(Error::InvalidArgument(format!(
            "cannot plot shape `{}`: its ratio {} is not a finite positive number",
            p.shape, p.ratio
        )));
    }
    let mut svg = String::new();
    draw(&mut svg, title, points)
        .map_err(|e| Error::InvalidArgument(format!("drawing the plot failed: {e}")))?;
    Ok(svg)
}

/// How a dtype's marks look; dtypes get these in order of first appearance.
#[derive(Clone, Copy)]
enum Marker {
    Disc,
    Ring,
    Triangle,
    /// plotters fills every TriangleMarker, so the fourth shape is a cross, not an open triangle.
    Cross,
}

const MARKERS: [Marker; 4] = [Marker::Disc, Marker::Ring, Marker::Triangle, Marker::Cross];

fn draw_marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    at: (i32, i32),
    marker: Marker,
    color: RGBColor,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (filled, outline) = (color.filled(), color.stroke_width(2));
    match marker {
        Marker::Disc => area.draw(&Circle::new(at, MARK_RADIUS, filled)),
        Marker::Ring => area.draw(&Circle::new(at, MARK_RADIUS, outline)),
        Marker::Triangle => area.draw(&TriangleMarker::new(at, MARK_RADIUS + 1, filled)),
        Marker::Cross => area.draw(&Cross::new(at, MARK_RADIUS, outline)),
    }
}

/// Distinct values in order of first appearance, so legend order follows the caller's order.
fn distinct<'a>(values: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen: Vec<&str> = Vec::new();
    for v in values {
        if !seen.contains(&v) {
            seen.push(v);
        }
    }
    seen
}

fn index_of(list: &[&str], value: &str) -> usize {
    list.iter().position(|v| *v == value).unwrap_or(0)
}

/// Log-axis ticks at 1-2-3-5 (or sparser) times powers of ten: plotters' own log ticks start at
/// the first power of ten, which leaves everything below 1.0x unlabelled. Dividing for
/// negative powers makes 0.3 exactly the f64 nearest 0.3, for the labels.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (k_lo, k_hi) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let in_range = |mantissas: &[f64], step: i32| -> Vec<f64> {
        (k_lo..=k_hi)
            .filter(|k| k.rem_euclid(step) == 0)
            .flat_map(|k| mantissas.iter().map(move |m| if k < 0 { m / 10f64.powi(-k) } else { m * 10f64.powi(k) }))
            .filter(|v| (lo..=hi).contains(v))
            .collect()
    };
    for mantissas in [&[1.0, 2.0, 3.0, 5.0][..], &[1.0, 2.0, 5.0], &[1.0, 3.0], &[1.0]] {
        let ticks = in_range(mantissas, 1);
        if ticks.len() <= 12 {
            return ticks;
        }
    }
    in_range(&[1.0], (k_hi - k_lo) / 10 + 1)
}

/// Every `stride`-th shape is labelled: 1, 2, 5, 10, 20, ... so that at most `max` labels fit.
fn label_stride(n: usize, max: usize) -> usize {
    let mut scale = 1;
    loop {
        for stride in [scale, 2 * scale, 5 * scale] {
            if n.div_ceil(stride) <= max.max(1) {
                return stride;
            }
        }
        scale *= 10;
    }
}

fn ordinal(k: usize) -> String {
    let suffix = match (k % 10, k % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{k}{suffix}")
}

fn shorten(label: &str) -> String {
    match label.char_indices().nth(MAX_LABEL_CHARS) {
        Some((cut, _)) => format!("{}…", &label[..cut]),
        None => label.to_string(),
    }
}

fn ratio_label(v: f64) -> String {
    let k = v.log10().floor() as i32;
    match k {
        ..=-4 | 4.. => format!("{v:.0e}x"),
        ..=-1 => format!("{v:.*}x", (-k) as usize),
        _ => format!("{v:.1}x"),
    }
}

fn draw(svg: &mut String, title: &str, points: &[PlotPoint]) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let families = distinct(points.iter().map(|p| p.family.as_str()));
    let dtypes = distinct(points.iter().map(|p| p.dtype.as_str()));
    let color = |family: &str| PALETTE[index_of(&families, family) % PALETTE.len()];
    let marker = |dtype: &str| MARKERS[index_of(&dtypes, dtype) % MARKERS.len()];

    let root = SVGBackend::with_string(svg, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;

    // Title and legend sit above the plot, so the legend can never cover a point.
    let legend = legend_layout(&families, &dtypes);
    let header_height = 54 + 24 * legend.last().map_or(1, |(_, _, row)| row + 1) as u32;
    let (_, body) = root.split_vertically(header_height);
    let centered = |size| TextStyle::from((FONT, size).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    let left = |size| TextStyle::from((FONT, size).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    root.draw(&Text::new(title.to_string(), (WIDTH as i32 / 2, 12), centered(26)))?;
    for &(item, x, row) in &legend {
        let y = 52 + 24 * row as i32;
        let name = match item {
            LegendItem::Family(name, c) => {
                root.draw(&Rectangle::new([(x, y - 6), (x + 12, y + 6)], c.filled()))?;
                name
            }
            LegendItem::Dtype(name, m) => {
                draw_marker(&root, (x + 6, y), m, LEGEND_GREY)?;
                name
            }
        };
        root.draw(&Text::new(name.to_string(), (x + 18, y), left(17)))?;
    }

    let (lo, hi) = points.iter().fold((1.0f64, 1.0f64), |(lo, hi), p| (lo.min(p.ratio), hi.max(p.ratio)));
    let (lo, hi) = ((lo / 1.25).max(f64::MIN_POSITIVE), (hi * 1.25).min(f64::MAX));
    let n = points.len();
    let right_margin = 100; // room for the baseline's label at the end of its line
    let stride = label_stride(n, ((WIDTH - Y_LABEL_AREA - right_margin) / X_LABEL_PITCH) as usize);
    let labels: Vec<String> = points.iter().map(|p| shorten(&p.shape)).collect();
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0) as u32;

    let mut chart = ChartBuilder::on(&body)
        .margin_left(10)
        .margin_right(right_margin)
        .margin_bottom(10)
        .x_label_area_size(30 + 8 * longest)
        .y_label_area_size(Y_LABEL_AREA)
        .build_cartesian_2d((0..n as i32).into_segmented(), (lo..hi).log_scale().with_key_points(log_ticks(lo, hi)))?;
    // plotters centres rotated labels on the tick, half inside the plot: its x ticks and labels
    // are blanked (x_labels(0) panics in plotters 0.3.7) and ours hang below their ticks.
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(1)
        .x_label_formatter(&|_| String::new())
        .set_tick_mark_size(LabelAreaPosition::Bottom, 0)
        .x_desc(match stride {
            1 => format!("shape ({n}, in benchmark order)"),
            _ => format!("shape ({n} in benchmark order, every {} labelled)", ordinal(stride)),
        })
        .y_label_formatter(&|v| ratio_label(*v))
        .y_label_style((FONT, 16))
        .y_desc("speed vs best baseline (x)")
        .axis_desc_style((FONT, 17))
        .draw()?;
    let hanging = TextStyle::from((FONT, 15).into_font().transform(FontTransform::Rotate90))
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (i, label) in labels.iter().enumerate().step_by(stride) {
        let (x, y) = chart.backend_coord(&(SegmentValue::CenterOf(i as i32), lo));
        root.draw(&PathElement::new([(x, y), (x, y + 5)], BLACK))?;
        root.draw(&Text::new(label.clone(), (x, y + 8), hanging.clone()))?;
    }

    let baseline_style = BLACK.mix(0.7).stroke_width(2);
    chart.draw_series(DashedLineSeries::new(
        [(SegmentValue::Exact(0), 1.0), (SegmentValue::Last, 1.0)],
        8,
        5,
        baseline_style,
    ))?;
    let (line_end_x, line_y) = chart.backend_coord(&(SegmentValue::Last, 1.0));
    root.draw(&Text::new("= baseline", (line_end_x + 6, line_y), left(16)))?;

    // Marks go on the root in pixels: one element type per dtype would not fit one series.
    for (i, p) in points.iter().enumerate() {
        let at = chart.backend_coord(&(SegmentValue::CenterOf(i as i32), p.ratio));
        draw_marker(&root, at, marker(&p.dtype), color(&p.family))?;
    }
    root.present()?;
    Ok(())
}

#[derive(Clone, Copy)]
enum LegendItem<'a> {
    Family(&'a str, RGBColor),
    Dtype(&'a str, Marker),
}

/// Families then dtypes, left to right with wrapping: (item, x, row). Text width is estimated
/// generously, as an SVG carries no font metrics.
fn legend_layout<'a>(families: &[&'a str], dtypes: &[&'a str]) -> Vec<(LegendItem<'a>, i32, usize)> {
    let items = families
        .iter()
        .enumerate()
        .map(|(i, f)| LegendItem::Family(f, PALETTE[i % PALETTE.len()]))
        .chain(dtypes.iter().enumerate().map(|(i, d)| LegendItem::Dtype(d, MARKERS[i % MARKERS.len()])));
    let (mut x, mut row, mut out) = (70, 0, Vec::new());
    for (i, item) in items.enumerate() {
        let name = match item {
            LegendItem::Family(n, _) | LegendItem::Dtype(n, _) => n,
        };
        if i == families.len() {
            x += 30; // a wider gap between the two groups
        }
        let w = 18 + 9 * name.chars().count() as i32 + 24;
        if x + w > WIDTH as i32 - 20 && x > 70 {
            (x, row) = (70, row + 1);
        }
        out.push((item, x, row));
        x += w;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::SplitMix64;

    fn point(shape: &str, family: &str, dtype: &str, ratio: f64) -> PlotPoint {
        PlotPoint { shape: shape.into(), family: family.into(), dtype: dtype.into(), ratio }
    }

    fn three() -> Vec<PlotPoint> {
        vec![
            point("1,3,8,8->4,3x3", "direct", "fp32", 0.5),
            point("2,8,16,16->8,3x3 p1", "tiled", "fp32", 1.7),
            point("1,64,14,14->64,1x1", "tensor-core", "fp16", 2.4),
        ]
    }

    /// Points are discs (fp32) and rings (fp16); the legend shows a disc and a ring for the
    /// two dtypes and squares for families, so circles = points + dtypes.
    #[test]
    fn one_mark_per_point() {
        let svg = render_svg("t", &three()).unwrap();
        assert_eq!(svg.matches("<circle").count(), 3 + 2, "{svg}");
        let mut four = three();
        four.push(point("x", "direct", "fp16", 1.1));
        assert_eq!(render_svg("t", &four).unwrap().matches("<circle").count(), 4 + 2);
    }

    #[test]
    fn baseline_and_legend_are_labelled() {
        let svg = render_svg("conv2d on H100", &three()).unwrap();
        assert!(svg.contains("= baseline") && svg.contains(">\n1.0x\n<"), "{svg}");
        assert!(svg.contains("conv2d on H100") && svg.contains("speed vs best baseline (x)"));
        for name in ["direct", "tiled", "tensor-core", "fp32", "fp16"] {
            assert_eq!(svg.matches(&format!(">\n{name}\n<")).count(), 1, "{name} in the legend once");
        }
    }

    #[test]
    fn bad_input_is_an_error_naming_the_problem() {
        let msg = |r: Result<String>| match r {
            Err(Error::InvalidArgument(m)) => m,
            other => panic!("expected InvalidArgument, got {other:?}"),
        };
        assert!(msg(render_svg("t", &[])).contains("no points"));
        for bad in [f64::NAN, 0.0, -1.0, f64::INFINITY] {
            let mut pts = three();
            pts[1].ratio = bad;
            let m = msg(render_svg("t", &pts));
            assert!(m.contains("2,8,16,16->8,3x3 p1") && m.contains(&bad.to_string()), "{m}");
        }
        let dir = Path::new("/nonexistent-convrs-dir/plot.svg");
        assert!(msg(write_svg(dir, "t", &three()).map(|_| String::new())).contains("/nonexistent-convrs-dir/plot.svg"));
    }

    #[test]
    fn extreme_ratios_draw_without_panicking() {
        for ratio in [f64::MIN_POSITIVE, 1e-300, 1.0, 1e300, f64::MAX] {
            let svg = render_svg("t", &[point("s", "f", "d", ratio)]).unwrap();
            assert_eq!(svg.matches("<circle").count(), 2);
        }
    }

    #[test]
    fn log_ticks_cover_both_sides_of_one() {
        assert_eq!(log_ticks(0.15, 3.5), [0.2, 0.3, 0.5, 1.0, 2.0, 3.0]);
        assert_eq!(ratio_label(0.3), "0.3x");
        assert_eq!(ratio_label(1.0), "1.0x");
        assert!(log_ticks(1e-300, 1e300).len() <= 12);
        assert_eq!([label_stride(3, 59), label_stride(90, 59), label_stride(90, 10), label_stride(1000, 1)], [1, 2, 10, 1000]);
        assert_eq!(shorten(&"a".repeat(40)).chars().count(), MAX_LABEL_CHARS + 1);
    }

    /// About what a full benchmark run gives; set CONVRS_PLOT_SAMPLE=path.svg to look at it.
    #[test]
    fn realistic_run() {
        let mut rng = SplitMix64::new(42);
        let families = ["direct", "tiled", "tensor-core"];
        let mut points = Vec::new();
        for dtype in ["fp32", "fp16"] {
            for i in 0..45u64 {
                let (n, c, h, k) = (1 << (i % 5), 16 << (i % 4), 7 * (2 + i % 11), 32 << (i % 3));
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                let ratio = (0.2f64.ln() + u * (3.0f64.ln() - 0.2f64.ln())).exp();
                let shape = format!("{n},{c},{h},{}->{k},3x3 p1", h * 5 / 2);
                points.push(point(&shape, families[(rng.next_u64() % 3) as usize], dtype, ratio));
            }
        }
        let svg = render_svg("convrs vs cuDNN, H100 (synthetic)", &points).unwrap();
        assert_eq!(svg.matches("<circle").count(), points.len() + 2);
        if let Some(path) = std::env::var_os("CONVRS_PLOT_SAMPLE") {
            write_svg(Path::new(&path), "convrs vs cuDNN, H100 (synthetic)", &points).unwrap();
        }
    }
}
