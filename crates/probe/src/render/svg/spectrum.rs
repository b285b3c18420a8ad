//! The percentile spectrum: latency by percentile, one line per histogram.

use super::{draw_err, linear_ticks, log_axis, log_us, mesh, save_svg, PlotError, TickedAxis};
use super::{FONT, GRID_BOLD, SERIES_COLORS};
use crate::render::hgrm::{percentile_rows, HGRM_TICKS_PER_HALF_DISTANCE, NS_PER_US};
use crate::units::{format_latency, format_nines, format_us};
use hdrhistogram::Histogram;
use plotters::prelude::*;
use std::path::Path;

/// Draws the percentile spectrum of each histogram, as HdrHistogram's plotter does: x is the
/// percentile on a log scale of 1/(1-p) (ticks at 0%, 90%, 99%, 99.9%...), y the latency in µs
/// (log scale when the series span more than two decades, linear from 0 otherwise; the axis
/// says which), one line per series through the rows of its `.hgrm` (the 100% row has no
/// 1/(1-p); the max is in the legend). Series are named by their `&str` (e.g. "intended",
/// "actual"); histograms hold ns.
///
/// # Errors
/// [`PlotError::NoData`] when every histogram is empty, [`PlotError::Draw`] or
/// [`PlotError::Io`] naming `path`.
pub fn spectrum_svg(series: &[(&str, &Histogram<u64>)], title: &str, path: &Path) -> Result<(), PlotError> {
    const PLOT: &str = "percentile spectrum";
    let lines = spectrum_lines(series);
    if lines.is_empty() {
        return Err(PlotError::NoData { plot: PLOT });
    }
    let x_last = lines
        .iter()
        .flat_map(|(_, p, _)| p.iter().map(|(x, _)| *x))
        .fold(0.0_f64, f64::max);
    // End just past the last row (HdrHistogram's plotter ends at the data too).
    let x_hi = (x_last + 0.12).max(2.0);
    let min_ns = lines
        .iter()
        .flat_map(|(_, p, _)| p.iter().map(|(_, v)| *v))
        .min()
        .unwrap_or(1);
    let max_ns = lines.iter().map(|(_, _, m)| *m).max().unwrap_or(1);
    let log_y = max_ns as f64 > 100.0 * (min_ns.max(1) as f64);

    save_svg(PLOT, path, (1000, 620), |root| {
        let (y_range, y_desc, to_y) = latency_axis(log_y, min_ns, max_ns);
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 22))
            .margin(14)
            .x_label_area_size(52)
            .y_label_area_size(78)
            .build_cartesian_2d(percentile_axis(x_hi), y_range)
            .map_err(draw_err(PLOT))?;
        mesh(&mut chart, 14, 15)
            .x_desc("percentile (log scale of 1/(1-p))")
            .y_desc(y_desc)
            .x_label_formatter(&|x| format_nines(*x))
            .y_label_formatter(&|y| {
                if log_y {
                    format_us(10f64.powf(*y))
                } else {
                    format_us(*y)
                }
            })
            .draw()
            .map_err(draw_err(PLOT))?;
        for (i, (name, points, max)) in lines.iter().enumerate() {
            let color = SERIES_COLORS[i % SERIES_COLORS.len()];
            chart
                .draw_series(LineSeries::new(
                    points.iter().map(|(x, v)| (*x, to_y(*v))),
                    color.stroke_width(2),
                ))
                .map_err(draw_err(PLOT))?
                .label(format!("{name} (max {})", format_latency(*max)))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], color.stroke_width(3)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font((FONT, 15))
            .background_style(WHITE.mix(0.9))
            .border_style(GRID_BOLD)
            .draw()
            .map_err(draw_err(PLOT))
    })
}

/// A series' line: its name, `(log10(1/(1-p)), value ns)` per `.hgrm` row below 100%, and
/// its max ns.
type Line<'a> = (&'a str, Vec<(f64, u64)>, u64);

/// The lines of the series that hold anything.
fn spectrum_lines<'a>(series: &[(&'a str, &Histogram<u64>)]) -> Vec<Line<'a>> {
    series
        .iter()
        .filter(|(_, h)| !h.is_empty())
        .map(|(name, h)| {
            let points = percentile_rows(h, HGRM_TICKS_PER_HALF_DISTANCE)
                .into_iter()
                .filter(|r| r.percent < 100.0)
                .map(|r| ((1.0 / (1.0 - r.percent / 100.0)).log10(), r.value))
                .filter(|(x, _)| x.is_finite())
                .collect();
            (*name, points, h.max())
        })
        .collect()
}

/// The percentile axis up to `x_hi` (log10 of 1/(1-p)): bold ticks at each nine, light ones
/// at 2 and 5 between them.
fn percentile_axis(x_hi: f64) -> TickedAxis {
    let x_bold: Vec<f64> = (0..=x_hi.floor() as i32).map(f64::from).collect();
    let x_light: Vec<f64> = (0..=x_hi.floor() as i32)
        .flat_map(|d| [2.0_f64, 5.0].map(|m| f64::from(d) + m.log10()))
        .filter(|x| *x < x_hi)
        .collect();
    TickedAxis::new(0.0, x_hi, x_bold, x_light)
}

/// The latency axis in µs (log scale when `log_y`, else linear from 0), its description, and
/// how a value in ns maps onto it.
fn latency_axis(log_y: bool, min_ns: u64, max_ns: u64) -> (TickedAxis, &'static str, Box<dyn Fn(u64) -> f64>) {
    if log_y {
        let axis = log_axis(min_ns as f64 / NS_PER_US, max_ns as f64 / NS_PER_US);
        (
            TickedAxis::new(axis.lo, axis.hi, axis.bold, axis.light),
            "latency (µs, log scale)",
            Box::new(log_us),
        )
    } else {
        let hi = max_ns as f64 / NS_PER_US * 1.08;
        let ticks = linear_ticks(0.0, hi, 8);
        (
            TickedAxis::new(0.0, hi, ticks.clone(), ticks),
            "latency (µs)",
            Box::new(|ns| ns as f64 / NS_PER_US),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::svg::tests::{has_text, hex, parse_svg};
    use crate::render::svg::{BLUE, ORANGE};
    use crate::render::tests::{histogram, realistic, scratch_dir};

    #[test]
    fn spectrum_svg_holds_one_line_per_series_and_percentile_ticks() {
        let dir = scratch_dir("spectrum");
        let path = dir.join("spectrum.svg");
        let intended = realistic(200_000, 3, 1.0);
        let actual = realistic(200_000, 3, 0.2);
        spectrum_svg(&[("intended", &intended), ("actual", &actual)], "spectrum", &path).expect("drawn");
        let svg = parse_svg(&path);
        for (color, name) in [(BLUE, "intended"), (ORANGE, "actual")] {
            let longest = svg
                .lines
                .iter()
                .filter(|(s, _)| *s == hex(color))
                .map(|(_, n)| *n)
                .max();
            assert!(
                longest.unwrap_or(0) > 50,
                "{name}: a line through its .hgrm rows, got {longest:?}"
            );
            assert!(
                svg.texts.iter().any(|t| t.starts_with(&format!("{name} (max "))),
                "legend {name}"
            );
        }
        for tick in ["0%", "90%", "99%", "99.9%", "99.99%"] {
            assert!(has_text(&svg, tick), "x tick {tick}: {:?}", svg.texts);
        }
        assert!(has_text(&svg, "latency (µs, log scale)"), "{:?}", svg.texts);
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn spectrum_svg_uses_a_linear_axis_for_a_narrow_range() {
        let dir = scratch_dir("spectrum-linear");
        let path = dir.join("spectrum.svg");
        let mut h = histogram();
        for v in 1_000..3_000 {
            h.record(v).expect("in range");
        }
        spectrum_svg(&[("intended", &h)], "narrow", &path).expect("drawn");
        let svg = parse_svg(&path);
        assert!(has_text(&svg, "latency (µs)"), "{:?}", svg.texts);
        std::fs::remove_dir_all(dir).ok();
    }
}
