//! Three SVG plots of a run: the percentile spectrum ([`spectrum_svg`]), the groups over time
//! ([`groups_svg`]) and a rate sweep ([`sweep_svg`]). This module holds what they share: the
//! error type, colours and fonts, the ticked and log axes, the mesh style, the legend rows, and
//! saving the SVG.
//!
//! # Guarantees
//! - The plots are plain SVG with `<text>` elements: no font is needed to write them, and
//!   nothing in them is `NaN` or infinite (bad inputs are refused with a [`PlotError`]).
//! - Nothing here touches a hot thread: these run after the measurement, on plain inputs
//!   ([`GroupPoint`](crate::render::points::GroupPoint), [`SweepPoint`], histograms).

mod groups;
mod spectrum;
mod sweep;

pub use groups::{groups_svg, groups_svg_from, GroupsOrigin, PROBE_ORIGIN, TAP_ORIGIN};
pub use spectrum::spectrum_svg;
pub use sweep::{sweep_svg, SweepPoint, QUEUE_CURVE_MAX_RHO, QUEUE_KNEE_RHO};

use crate::render::files::write_atomically;
use crate::render::hgrm::NS_PER_US;
use plotters::chart::MeshStyle;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::fmt;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Why a plot could not be drawn or saved.
#[derive(Debug)]
pub enum PlotError {
    /// There was nothing to draw (no series, empty histograms, no groups, no sweep points).
    NoData {
        /// Which plot.
        plot: &'static str,
    },
    /// An input value cannot be placed on the plot (NaN, infinite, negative rate...).
    BadInput {
        /// Which plot.
        plot: &'static str,
        /// What is wrong, naming the input.
        what: String,
    },
    /// The plotting library failed while drawing.
    Draw {
        /// Which plot.
        plot: &'static str,
        /// The library's message.
        message: String,
    },
    /// Saving the SVG failed.
    Io {
        /// Where it was being saved.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

impl fmt::Display for PlotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoData { plot } => {
                write!(f, "nothing to plot in the {plot}: every input is empty")
            }
            Self::BadInput { plot, what } => write!(f, "cannot draw the {plot}: {what}"),
            Self::Draw { plot, message } => write!(f, "drawing the {plot} failed: {message}"),
            Self::Io { path, source } => {
                write!(f, "cannot save the plot to {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for PlotError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

const FONT: &str = "sans-serif";

const BLUE: RGBColor = RGBColor(31, 119, 180);

const ORANGE: RGBColor = RGBColor(255, 127, 14);

const GREEN: RGBColor = RGBColor(44, 160, 44);

const RED: RGBColor = RGBColor(214, 39, 40);

const PURPLE: RGBColor = RGBColor(148, 103, 189);

const GREY: RGBColor = RGBColor(70, 70, 70);

const SERIES_COLORS: [RGBColor; 5] = [BLUE, ORANGE, GREEN, PURPLE, RED];

/// p50, p99, p99.9, max.
const PERCENTILE_COLORS: [RGBColor; 4] = [BLUE, ORANGE, RED, GREY];

const GRID_BOLD: RGBColor = RGBColor(205, 205, 205);

const GRID_LIGHT: RGBColor = RGBColor(238, 238, 238);

/// A named percentile of a plotted row: ("p99", |r| r.p99_ns).
type Metric<T> = (&'static str, fn(&T) -> u64);

/// Smallest latency a log axis shows, ns (a 0 ns reading is drawn there).
const FLOOR_NS: f64 = 1.0;

/// A linear f64 axis over `lo..hi` with chosen ticks: `bold` are labelled and drawn as bold
/// grid lines, `light` as light ones. (plotters' `with_key_points` on f64 ranges loses the
/// label formatter.)
#[derive(Debug, Clone)]
struct TickedAxis {
    lo: f64,
    hi: f64,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl TickedAxis {
    fn new(lo: f64, hi: f64, bold: Vec<f64>, light: Vec<f64>) -> Self {
        Self { lo, hi, bold, light }
    }
}

impl Ranged for TickedAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        RangedCoordf64::from(self.lo..self.hi).map(value, limit)
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.bold.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

/// Turns a plotters error into [`PlotError::Draw`] naming `plot`.
fn draw_err<E: std::error::Error + Send + Sync>(plot: &'static str) -> impl Fn(DrawingAreaErrorKind<E>) -> PlotError {
    move |e| PlotError::Draw {
        plot,
        message: e.to_string(),
    }
}

/// Renders into an SVG string, then saves it ([`write_atomically`]).
fn save_svg(
    plot: &'static str,
    path: &Path,
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), PlotError>,
) -> Result<(), PlotError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err(plot))?;
        draw(&root)?;
        root.present().map_err(draw_err(plot))?;
    }
    write_atomically(path, |out| out.write_all(svg.as_bytes())).map_err(|source| PlotError::Io {
        path: path.to_owned(),
        source,
    })
}

/// A latency axis in log10(µs): bold ticks (labelled) and light ticks (grid only).
#[derive(Debug, Clone)]
struct LogAxis {
    lo: f64,
    hi: f64,
    bold: Vec<f64>,
    light: Vec<f64>,
}

/// Log axis over `[min_us, max_us]`, padded a little, with decade ticks (or 1-2-5 ticks when
/// fewer than two decades fall inside).
fn log_axis(min_us: f64, max_us: f64) -> LogAxis {
    let min_us = min_us.max(FLOOR_NS / NS_PER_US);
    let max_us = max_us.max(min_us * 1.5);
    let lo = min_us.log10() - 0.12;
    let hi = max_us.log10() + 0.12;
    let first = lo.floor() as i32;
    let last = hi.ceil() as i32;
    let inside = |v: f64| v >= lo && v <= hi;
    let decades: Vec<f64> = (first..=last).map(f64::from).filter(|&d| inside(d)).collect();
    let multiples = |ms: &[f64]| -> Vec<f64> {
        (first..=last)
            .flat_map(|d| ms.iter().map(move |m| f64::from(d) + m.log10()))
            .filter(|&v| inside(v))
            .collect()
    };
    if decades.len() >= 2 {
        LogAxis {
            lo,
            hi,
            bold: decades,
            light: multiples(&[2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]),
        }
    } else {
        LogAxis {
            lo,
            hi,
            bold: multiples(&[1.0, 2.0, 5.0]),
            light: multiples(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]),
        }
    }
}

/// A chart of the plots: two ticked axes, drawn into an SVG.
type Chart<'a, 's> = ChartContext<'a, SVGBackend<'s>, Cartesian2d<TickedAxis, TickedAxis>>;

/// The mesh of a chart with the grid and text styles every plot shares: bold and light grid
/// lines, `label`-px tick labels, `desc`-px axis descriptions.
fn mesh<'a, 'b, 's>(
    chart: &'b mut Chart<'a, 's>,
    label: u32,
    desc: u32,
) -> MeshStyle<'a, 'b, TickedAxis, TickedAxis, SVGBackend<'s>> {
    let mut mesh = chart.configure_mesh();
    mesh.bold_line_style(GRID_BOLD)
        .light_line_style(GRID_LIGHT)
        .label_style((FONT, label))
        .axis_desc_style((FONT, desc));
    mesh
}

/// About `count` round ticks from `lo` to `hi` (1, 2, 2.5 or 5 × 10^k apart).
fn linear_ticks(lo: f64, hi: f64, count: usize) -> Vec<f64> {
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let raw = span / count.max(1) as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude);
    let mut ticks = Vec::new();
    let mut t = (lo / step).ceil() * step;
    while t <= hi + step * 1e-9 {
        ticks.push(t);
        t += step;
    }
    ticks
}

fn log_us(ns: u64) -> f64 {
    (ns as f64).max(FLOOR_NS).log10() - NS_PER_US.log10()
}

/// How a legend entry is drawn.
#[derive(Debug, Clone, Copy)]
enum Mark {
    Line(RGBColor),
    Dashed(RGBColor),
    OpenCircle(RGBColor),
    VerticalDashes(RGBColor),
}

/// Draws legend entries in rows below (or above) a chart, so a legend never hides data: each
/// row is laid out left to right, `(mark, label)` per entry.
fn draw_legend_rows(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    rows: &[Vec<(Mark, String)>],
    left: i32,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let style = TextStyle::from((FONT, 14).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    for (r, row) in rows.iter().enumerate() {
        let y = 14 + 22 * r as i32;
        let mut x = left;
        for (mark, label) in row {
            match *mark {
                Mark::Line(c) => area.draw(&PathElement::new(vec![(x, y), (x + 24, y)], c.stroke_width(3)))?,
                Mark::Dashed(c) => {
                    area.draw(&PathElement::new(vec![(x, y), (x + 9, y)], c.stroke_width(3)))?;
                    area.draw(&PathElement::new(vec![(x + 15, y), (x + 24, y)], c.stroke_width(3)))?;
                }
                Mark::OpenCircle(c) => {
                    area.draw(&Circle::new((x + 12, y), 5, WHITE.filled()))?;
                    area.draw(&Circle::new((x + 12, y), 5, c.stroke_width(2)))?;
                }
                Mark::VerticalDashes(c) => {
                    area.draw(&PathElement::new(
                        vec![(x + 12, y - 9), (x + 12, y - 3)],
                        c.stroke_width(2),
                    ))?;
                    area.draw(&PathElement::new(
                        vec![(x + 12, y + 2), (x + 12, y + 8)],
                        c.stroke_width(2),
                    ))?;
                }
            }
            area.draw(&Text::new(label.clone(), (x + 32, y), style.clone()))?;
            // The SVG holds text, not glyphs: allow ~8 px a character at 14 px.
            x += 32 + 8 * label.chars().count() as i32 + 28;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::tests::{histogram, scratch_dir, sweep};

    pub(super) struct Svg {
        pub(super) texts: Vec<String>,
        /// (stroke colour, number of points) of every polyline / path.
        pub(super) lines: Vec<(String, usize)>,
        pub(super) rects: usize,
        pub(super) circles: usize,
    }

    /// Parses an SVG, checks that no attribute holds NaN or infinity, and collects what it drew.
    pub(super) fn parse_svg(path: &Path) -> Svg {
        let text = std::fs::read_to_string(path).expect("the SVG was written");
        let doc = roxmltree::Document::parse(&text).expect("the SVG is well-formed XML");
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        let mut svg = Svg {
            texts: Vec::new(),
            lines: Vec::new(),
            rects: 0,
            circles: 0,
        };
        for node in doc.descendants().filter(roxmltree::Node::is_element) {
            for a in node.attributes() {
                let v = a.value().to_ascii_lowercase();
                assert!(
                    !v.contains("nan") && !v.contains("inf"),
                    "{}={:?} in {}",
                    a.name(),
                    a.value(),
                    path.display()
                );
            }
            match node.tag_name().name() {
                "text" => svg.texts.push(node.text().unwrap_or_default().trim().to_owned()),
                "polyline" => svg.lines.push((
                    node.attribute("stroke").unwrap_or_default().to_owned(),
                    node.attribute("points").unwrap_or_default().split_whitespace().count(),
                )),
                "path" => svg.lines.push((
                    node.attribute("stroke").unwrap_or_default().to_owned(),
                    node.attribute("d").unwrap_or_default().matches(['L', 'M']).count(),
                )),
                "rect" => svg.rects += 1,
                "circle" => svg.circles += 1,
                _ => {}
            }
        }
        svg
    }

    pub(super) fn hex(c: RGBColor) -> String {
        format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
    }

    pub(super) fn has_text(svg: &Svg, wanted: &str) -> bool {
        svg.texts.iter().any(|t| t == wanted)
    }

    #[test]
    fn plots_refuse_empty_and_impossible_inputs_with_the_plot_named() {
        let dir = scratch_dir("refuse");
        let path = dir.join("x.svg");
        let empty = histogram();
        let err = spectrum_svg(&[("intended", &empty)], "t", &path).expect_err("empty");
        assert!(
            matches!(err, PlotError::NoData { .. }) && err.to_string().contains("percentile spectrum"),
            "{err}"
        );
        let err = groups_svg(&[], "t", &path).expect_err("no groups");
        assert!(err.to_string().contains("groups plot"), "{err}");
        let err = sweep_svg(&[], None, "t", &path).expect_err("no points");
        assert!(matches!(err, PlotError::NoData { .. }), "{err}");
        let mut bad = sweep();
        bad[2].rate_target = f64::NAN;
        let err = sweep_svg(&bad, None, "t", &path).expect_err("NaN rate");
        assert!(err.to_string().contains("sweep point 2"), "{err}");
        let err = sweep_svg(&sweep(), None, "t", &dir.join("missing/x.svg")).expect_err("no dir");
        assert!(
            matches!(err, PlotError::Io { .. }) && err.to_string().contains("missing/x.svg"),
            "{err}"
        );
        assert!(!path.exists(), "nothing saved on refusal");
        std::fs::remove_dir_all(dir).ok();
    }
}
