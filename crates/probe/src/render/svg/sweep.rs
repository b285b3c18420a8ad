//! A rate sweep: latency against offered load, with the single-queue curve of seed 001.

use super::{
    draw_err, draw_legend_rows, linear_ticks, log_axis, log_us, mesh, save_svg, Chart, Mark, Metric, PlotError,
};
use super::{TickedAxis, FONT, GREEN, GREY, PERCENTILE_COLORS, PURPLE};
use crate::render::hgrm::NS_PER_US;
use crate::units::{format_rate, format_us};
use plotters::prelude::*;
use std::path::Path;

/// One rate of a sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepPoint {
    /// Offered load, messages per second (the `--rate` of that run).
    pub rate_target: f64,
    /// Rate the run achieved, messages per second.
    pub rate_achieved: f64,
    /// Median latency from the intended send time, ns.
    pub p50_ns: u64,
    /// 99th percentile latency from the intended send time, ns.
    pub p99_ns: u64,
    /// 99.9th percentile latency from the intended send time, ns.
    pub p999_ns: u64,
    /// Whether the run met its target (the caller decides what the target is).
    pub met_target: bool,
}

/// The utilisation [`sweep_svg`] draws the single-queue curve up to.
pub const QUEUE_CURVE_MAX_RHO: f64 = 0.95;

/// Where [`sweep_svg`] marks the knee of the single-queue curve (seed 001: ≈70%).
pub const QUEUE_KNEE_RHO: f64 = 0.7;

/// Draws a rate sweep: latency from the intended send time (p50, p99, p99.9; µs, log scale)
/// against offered load (the target rate, linear from 0); filled markers for rates that met
/// their target, open ones for rates that did not; a vertical marker at the highest rate that
/// met its target (`target` describes the target in the legend, e.g. "achieved ≥ 99% of
/// offered"); and seed 001's single-queue response time R = S/(1-ρ) as a dashed line up to
/// ρ = [`QUEUE_CURVE_MAX_RHO`], with ρ = rate / capacity, capacity = the highest achieved rate
/// of the sweep, and S scaled so the curve passes through the lowest rate's p50 (the legend
/// says both), so the knee near ρ ≈ 0.7 shows against the measurements.
///
/// # Errors
/// [`PlotError::NoData`] for no points, [`PlotError::BadInput`] for a rate that is not
/// positive and finite, [`PlotError::Draw`] or [`PlotError::Io`] naming `path`.
pub fn sweep_svg(points: &[SweepPoint], target: Option<&str>, title: &str, path: &Path) -> Result<(), PlotError> {
    check_points(points)?;
    let mut sorted: Vec<SweepPoint> = points.to_vec();
    sorted.sort_by(|a, b| a.rate_target.total_cmp(&b.rate_target));
    let max_rate = sorted.iter().map(|p| p.rate_target).fold(0.0, f64::max);
    let best = sorted
        .iter()
        .filter(|p| p.met_target)
        .map(|p| p.rate_target)
        .fold(None, |a: Option<f64>, r| Some(a.map_or(r, |a| a.max(r))));
    let queue = Queue::fit(&sorted);
    let (min_ns, max_ns) = latency_range(&sorted, &queue.curve);
    let x_hi = max_rate.max(QUEUE_CURVE_MAX_RHO * queue.capacity) * 1.06;

    save_svg(PLOT, path, (1000, 680), |root| {
        let (top, legend) = root.split_vertically(590);
        let axis = log_axis(min_ns / NS_PER_US, max_ns / NS_PER_US);
        let x_ticks = linear_ticks(0.0, x_hi, 10);
        let mut chart = ChartBuilder::on(&top)
            .caption(title, (FONT, 22))
            .margin(14)
            .x_label_area_size(52)
            .y_label_area_size(78)
            .build_cartesian_2d(
                TickedAxis::new(0.0, x_hi, x_ticks, Vec::new()),
                TickedAxis::new(axis.lo, axis.hi, axis.bold, axis.light),
            )
            .map_err(draw_err(PLOT))?;
        mesh(&mut chart, 14, 15)
            .x_desc("offered load (target rate, messages/s)")
            .y_desc("latency from the intended send time (µs, log scale)")
            .x_label_formatter(&|x| format_rate(*x))
            .y_label_formatter(&|y| format_us(10f64.powf(*y)))
            .draw()
            .map_err(draw_err(PLOT))?;
        let mut legend_rows = vec![draw_percentiles(&mut chart, &sorted)?];
        if !queue.curve.is_empty() {
            legend_rows.push(vec![draw_queue(&mut chart, &queue)?]);
        }
        if let Some(best) = best {
            legend_rows.push(vec![draw_best(&mut chart, best, (axis.lo, axis.hi), target)?]);
        }
        draw_legend_rows(&legend, &legend_rows, 92).map_err(draw_err(PLOT))
    })
}

/// The plot's name in its errors.
const PLOT: &str = "rate sweep plot";

/// Refuses no points, and a rate that is not positive and finite (achieved: finite, not
/// negative).
fn check_points(points: &[SweepPoint]) -> Result<(), PlotError> {
    if points.is_empty() {
        return Err(PlotError::NoData { plot: PLOT });
    }
    for (i, p) in points.iter().enumerate() {
        let good = |r: f64| r.is_finite() && r > 0.0;
        if !(good(p.rate_target) && p.rate_achieved.is_finite() && p.rate_achieved >= 0.0) {
            return Err(PlotError::BadInput {
                plot: PLOT,
                what: format!(
                    "sweep point {i} has target rate {} and achieved rate {}; the target must be \
                     positive and finite, the achieved rate finite and not negative",
                    p.rate_target, p.rate_achieved
                ),
            });
        }
    }
    Ok(())
}

/// Seed 001's single queue fitted to the sweep: capacity the highest achieved rate, service
/// time such that the curve passes through the lowest rate's p50.
struct Queue {
    /// The lowest offered rate, whose p50 the curve passes through.
    lowest: f64,
    /// The highest achieved rate, msg/s.
    capacity: f64,
    /// S, ns.
    service_ns: f64,
    /// R = S/(1-ρ) as (rate, ns) up to ρ = [`QUEUE_CURVE_MAX_RHO`] (empty when the lowest rate
    /// is already beyond it, or nothing was achieved).
    curve: Vec<(f64, f64)>,
}

impl Queue {
    /// The queue of `sorted` (by offered rate, not empty).
    fn fit(sorted: &[SweepPoint]) -> Queue {
        let lowest = sorted[0];
        let capacity = sorted.iter().map(|p| p.rate_achieved).fold(0.0, f64::max);
        let rho_low = lowest.rate_target / capacity;
        let service_ns = (lowest.p50_ns.max(1) as f64) * (1.0 - rho_low);
        let curve: Vec<(f64, f64)> = if capacity > 0.0 && rho_low < QUEUE_CURVE_MAX_RHO {
            let end = QUEUE_CURVE_MAX_RHO * capacity;
            (0..=200)
                .map(|i| end * f64::from(i) / 200.0)
                .map(|rate| (rate, service_ns / (1.0 - rate / capacity)))
                .collect()
        } else {
            Vec::new()
        };
        Queue {
            lowest: lowest.rate_target,
            capacity,
            service_ns,
            curve,
        }
    }
}

/// The lowest and highest latency to show, ns: every percentile drawn, and the curve.
fn latency_range(sorted: &[SweepPoint], curve: &[(f64, f64)]) -> (f64, f64) {
    let mut min_ns = sorted
        .iter()
        .map(|p| p.p50_ns.min(p.p99_ns).min(p.p999_ns))
        .min()
        .unwrap_or(1) as f64;
    let mut max_ns = sorted
        .iter()
        .map(|p| p.p50_ns.max(p.p99_ns).max(p.p999_ns))
        .max()
        .unwrap_or(1) as f64;
    for (_, ns) in curve {
        min_ns = min_ns.min(*ns);
        max_ns = max_ns.max(*ns);
    }
    (min_ns, max_ns)
}

/// A line and a marker per rate for p50, p99 and p99.9 (open markers: the rate missed its
/// target); their legend row.
fn draw_percentiles(chart: &mut Chart<'_, '_>, sorted: &[SweepPoint]) -> Result<Vec<(Mark, String)>, PlotError> {
    let mut row = Vec::new();
    let metrics: [Metric<SweepPoint>; 3] = [("p50", |p| p.p50_ns), ("p99", |p| p.p99_ns), ("p99.9", |p| p.p999_ns)];
    for ((name, get), color) in metrics.into_iter().zip(PERCENTILE_COLORS) {
        chart
            .draw_series(std::iter::once(PathElement::new(
                sorted
                    .iter()
                    .map(|p| (p.rate_target, log_us(get(p))))
                    .collect::<Vec<_>>(),
                color.stroke_width(2),
            )))
            .map_err(draw_err(PLOT))?;
        chart
            .draw_series(sorted.iter().map(|p| {
                let style = if p.met_target { color.filled() } else { WHITE.filled() };
                EmptyElement::at((p.rate_target, log_us(get(p))))
                    + Circle::new((0, 0), 5, style)
                    + Circle::new((0, 0), 5, color.stroke_width(2))
            }))
            .map_err(draw_err(PLOT))?;
        row.push((Mark::Line(color), name.to_owned()));
    }
    if sorted.iter().any(|p| !p.met_target) {
        row.push((
            Mark::OpenCircle(GREY),
            "open marker: that rate missed its target".to_owned(),
        ));
    }
    Ok(row)
}

/// The single-queue curve, dashed, with its knee marked; its legend entry.
fn draw_queue(chart: &mut Chart<'_, '_>, q: &Queue) -> Result<(Mark, String), PlotError> {
    chart
        .draw_series(DashedLineSeries::new(
            q.curve.iter().map(|(r, ns)| (*r, log_us(ns.round() as u64))),
            9,
            6,
            GREEN.stroke_width(2),
        ))
        .map_err(draw_err(PLOT))?;
    // Mark the knee of the curve.
    let knee_rate = QUEUE_KNEE_RHO * q.capacity;
    if knee_rate > q.lowest {
        let knee = (
            knee_rate,
            log_us((q.service_ns / (1.0 - QUEUE_KNEE_RHO)).round() as u64),
        );
        use plotters::style::text_anchor::{HPos, Pos, VPos};
        let style = TextStyle::from((FONT, 13).into_font())
            .color(&GREEN)
            .pos(Pos::new(HPos::Right, VPos::Bottom));
        chart
            .draw_series([EmptyElement::at(knee)
                + Circle::new((0, 0), 4, GREEN.filled())
                + Text::new(format!("knee, ρ = {QUEUE_KNEE_RHO}"), (-6, -4), style)])
            .map_err(draw_err(PLOT))?;
    }
    Ok((
        Mark::Dashed(GREEN),
        format!(
            "1/(1-ρ) single queue (seed 001), to ρ = {QUEUE_CURVE_MAX_RHO}: ρ = rate / {} msg/s, \
             the highest achieved; scaled to the p50 at {}",
            format_rate(q.capacity),
            format_rate(q.lowest)
        ),
    ))
}

/// A vertical dashed line at `best`, the highest rate that met its target, across the y axis
/// (`y`: low, high); its legend entry.
fn draw_best(
    chart: &mut Chart<'_, '_>,
    best: f64,
    y: (f64, f64),
    target: Option<&str>,
) -> Result<(Mark, String), PlotError> {
    chart
        .draw_series(DashedLineSeries::new(
            [(best, y.0), (best, y.1)],
            4,
            4,
            PURPLE.stroke_width(2),
        ))
        .map_err(draw_err(PLOT))?;
    Ok((
        Mark::VerticalDashes(PURPLE),
        match target {
            Some(t) => format!("highest rate that met its target ({t}): {} msg/s", format_rate(best)),
            None => format!("highest rate that met its target: {} msg/s", format_rate(best)),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::svg::tests::{has_text, hex, parse_svg};
    use crate::render::tests::{scratch_dir, sweep};

    #[test]
    fn sweep_svg_holds_the_percentiles_the_queue_curve_and_the_best_rate() {
        let dir = scratch_dir("sweep");
        let path = dir.join("sweep.svg");
        sweep_svg(&sweep(), Some("achieved ≥ 99% of offered"), "sweep", &path).expect("drawn");
        let svg = parse_svg(&path);
        for (color, name) in PERCENTILE_COLORS.iter().zip(["p50", "p99", "p99.9"]) {
            assert!(has_text(&svg, name), "legend {name}");
            assert!(
                svg.lines.iter().any(|(s, n)| *s == hex(*color) && *n == 6),
                "{name}: a line through 6 rates"
            );
        }
        let curve = svg
            .texts
            .iter()
            .find(|t| t.starts_with("1/(1-ρ) single queue"))
            .expect("curve legend");
        assert!(
            curve.contains("930k msg/s, the highest achieved") && curve.contains("p50 at 100k"),
            "{curve}"
        );
        assert!(
            svg.lines.iter().filter(|(s, _)| *s == hex(GREEN)).count() > 10,
            "the curve is dashed"
        );
        assert!(
            has_text(
                &svg,
                "highest rate that met its target (achieved ≥ 99% of offered): 800k msg/s"
            ),
            "{:?}",
            svg.texts
        );
        assert!(has_text(&svg, "open marker: that rate missed its target"));
        std::fs::remove_dir_all(dir).ok();
    }
}
