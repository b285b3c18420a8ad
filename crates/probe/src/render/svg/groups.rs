//! The groups over time: percentile lines per group, and a strip per jitter counter.

use super::{
    draw_err, draw_legend_rows, linear_ticks, log_axis, log_us, mesh, save_svg, Chart, Mark, Metric, PlotError,
};
use super::{TickedAxis, FONT, PERCENTILE_COLORS, PURPLE};
use crate::render::hgrm::NS_PER_US;
use crate::render::points::{counter_names, counter_value, GroupPoint};
use crate::units::{format_tick, format_us};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// Draws the groups over time: x is time since the run's first intended send (one point per
/// group, at its middle; group numbers if the times are missing), y the intended-time latency
/// in µs on a log scale, with p50, p99, p99.9 and max lines. When any group has counters, a
/// panel below shows each counter per group as bars, one strip per counter with its own scale.
/// Empty groups (`count == 0`) leave a gap.
///
/// # Errors
/// [`PlotError::NoData`] when no group has a message, [`PlotError::Draw`] or
/// [`PlotError::Io`] naming `path`.
pub fn groups_svg(rows: &[GroupPoint], title: &str, path: &Path) -> Result<(), PlotError> {
    groups_svg_from(rows, title, PROBE_ORIGIN, path)
}

/// What a groups plot measures from: the probe's intended send time, or a tap's stamps.
#[derive(Debug, Clone, Copy)]
pub struct GroupsOrigin {
    /// The y axis' description.
    pub latency: &'static str,
    /// The x axis' description when the groups have times.
    pub time: &'static str,
}

/// The probe's: latency from the intended send time, time since the first intended send.
pub const PROBE_ORIGIN: GroupsOrigin = GroupsOrigin {
    latency: "latency from the intended send time (µs, log scale)",
    time: "time since the first intended send (s), one point per group",
};

/// A tap's: latency from the sender's stamp, time since the log's first interval.
pub const TAP_ORIGIN: GroupsOrigin = GroupsOrigin {
    latency: "latency from the sender's stamp (µs, log scale)",
    time: "time since the first interval (s), one point per group",
};

/// [`groups_svg`] with the axes described from `origin`.
///
/// # Errors
/// As [`groups_svg`].
pub fn groups_svg_from(rows: &[GroupPoint], title: &str, origin: GroupsOrigin, path: &Path) -> Result<(), PlotError> {
    let measured: Vec<&GroupPoint> = rows.iter().filter(|r| r.count > 0).collect();
    if measured.is_empty() {
        return Err(PlotError::NoData { plot: PLOT });
    }
    let x = XAxis::of(rows);
    let min_ns = measured.iter().map(|r| r.p50_ns).min().unwrap_or(1);
    let max_ns = measured.iter().map(|r| r.max_ns).max().unwrap_or(1);
    let names = counter_names(rows);
    let strip_height = 120_u32;
    let top_height = 560_u32;
    let legend_height = 34_u32;
    let height = top_height + legend_height + strip_height * names.len() as u32;

    save_svg(PLOT, path, (1000, height), |root| {
        let (top, rest) = root.split_vertically(top_height);
        let (legend, bottom) = rest.split_vertically(legend_height);
        let axis = log_axis(min_ns as f64 / NS_PER_US, max_ns as f64 / NS_PER_US);
        let mut chart = ChartBuilder::on(&top)
            .caption(title, (FONT, 22))
            .margin(14)
            .x_label_area_size(48)
            .y_label_area_size(78)
            .build_cartesian_2d(
                TickedAxis::new(x.lo, x.hi, x.ticks.clone(), Vec::new()),
                TickedAxis::new(axis.lo, axis.hi, axis.bold, axis.light),
            )
            .map_err(draw_err(PLOT))?;
        mesh(&mut chart, 14, 15)
            .x_desc(x.desc(origin))
            .y_desc(origin.latency)
            .x_label_formatter(&|x| format_tick(*x))
            .y_label_formatter(&|y| format_us(10f64.powf(*y)))
            .draw()
            .map_err(draw_err(PLOT))?;
        let entries = draw_percentiles(&mut chart, rows, &x)?;
        draw_legend_rows(&legend, &[entries], 92).map_err(draw_err(PLOT))?;

        if names.is_empty() {
            return Ok(());
        }
        let strips = bottom.split_evenly((names.len(), 1));
        for (i, (strip, name)) in strips.iter().zip(&names).enumerate() {
            draw_counter(strip, rows, name, &x, i + 1 == names.len())?;
        }
        Ok(())
    })
}

/// The plot's name in its errors.
const PLOT: &str = "groups plot";

/// The x axis: time when every group has a finite, increasing span; else the group number.
struct XAxis {
    use_time: bool,
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl XAxis {
    /// The axis for `rows`.
    fn of(rows: &[GroupPoint]) -> XAxis {
        let use_time = rows
            .iter()
            .all(|r| r.start_s.is_finite() && r.end_s.is_finite() && r.end_s > r.start_s);
        let x_lo = rows.iter().map(|r| span(r, use_time).0).fold(f64::INFINITY, f64::min);
        let x_hi = rows
            .iter()
            .map(|r| span(r, use_time).1)
            .fold(f64::NEG_INFINITY, f64::max);
        let (lo, hi) = if x_hi > x_lo {
            (x_lo, x_hi)
        } else {
            (x_lo - 0.5, x_lo + 0.5)
        };
        XAxis {
            use_time,
            lo,
            hi,
            ticks: linear_ticks(lo, hi, 10),
        }
    }

    /// Where a group is on the axis: its start and end.
    fn span(&self, r: &GroupPoint) -> (f64, f64) {
        span(r, self.use_time)
    }

    /// The axis' description.
    fn desc(&self, origin: GroupsOrigin) -> &'static str {
        if self.use_time {
            origin.time
        } else {
            "group"
        }
    }
}

/// A group's start and end on the x axis: in seconds with `use_time`, else around its number.
fn span(r: &GroupPoint, use_time: bool) -> (f64, f64) {
    if use_time {
        (r.start_s, r.end_s)
    } else {
        (r.index as f64 - 0.5, r.index as f64 + 0.5)
    }
}

/// The p50, p99, p99.9 and max lines, one point per measured group (an empty group breaks
/// the line); their legend entries.
fn draw_percentiles(
    chart: &mut Chart<'_, '_>,
    rows: &[GroupPoint],
    x: &XAxis,
) -> Result<Vec<(Mark, String)>, PlotError> {
    let metrics: [Metric<GroupPoint>; 4] = [
        ("p50", |r| r.p50_ns),
        ("p99", |r| r.p99_ns),
        ("p99.9", |r| r.p999_ns),
        ("max", |r| r.max_ns),
    ];
    let mut entries = Vec::new();
    for ((name, get), color) in metrics.into_iter().zip(PERCENTILE_COLORS) {
        entries.push((Mark::Line(color), name.to_owned()));
        // One polyline per run of measured groups (an empty group breaks the line).
        let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
        for r in rows {
            if r.count == 0 {
                runs.push(Vec::new());
                continue;
            }
            let (a, b) = x.span(r);
            if let Some(run) = runs.last_mut() {
                run.push(((a + b) / 2.0, log_us(get(r))));
            }
        }
        runs.retain(|r| !r.is_empty());
        let points: Vec<(f64, f64)> = runs.iter().flatten().copied().collect();
        chart
            .draw_series(runs.into_iter().map(|run| PathElement::new(run, color.stroke_width(2))))
            .map_err(draw_err(PLOT))?;
        chart
            .draw_series(points.into_iter().map(|p| Circle::new(p, 3, color.filled())))
            .map_err(draw_err(PLOT))?;
    }
    Ok(entries)
}

/// One counter's strip: a bar per group on its own scale (x labels on the `last` strip only).
fn draw_counter(
    strip: &DrawingArea<SVGBackend<'_>, Shift>,
    rows: &[GroupPoint],
    name: &str,
    x: &XAxis,
    last: bool,
) -> Result<(), PlotError> {
    let values: Vec<u64> = rows.iter().map(|r| counter_value(r, name)).collect();
    let top_value = values.iter().copied().max().unwrap_or(0).max(1) as f64 * 1.15;
    let y_ticks = linear_ticks(0.0, top_value, 3)
        .into_iter()
        .filter(|t| t.fract() == 0.0)
        .collect::<Vec<_>>();
    let mut c = ChartBuilder::on(strip)
        .margin_left(14)
        .margin_right(14)
        .margin_top(4)
        .x_label_area_size(if last { 40 } else { 6 })
        .y_label_area_size(78)
        .caption(format!("{name} per group"), (FONT, 14))
        .build_cartesian_2d(
            TickedAxis::new(x.lo, x.hi, x.ticks.clone(), Vec::new()),
            TickedAxis::new(0.0, top_value, y_ticks, Vec::new()),
        )
        .map_err(draw_err(PLOT))?;
    let x_label = |x: &f64| if last { format_tick(*x) } else { String::new() };
    mesh(&mut c, 12, 13)
        .y_label_formatter(&|y| format_tick(*y))
        .x_label_formatter(&x_label)
        .draw()
        .map_err(draw_err(PLOT))?;
    c.draw_series(rows.iter().zip(&values).map(|(r, v)| {
        let (a, b) = x.span(r);
        let mut bar = Rectangle::new([(a, 0.0), (b, *v as f64)], PURPLE.mix(0.75).filled());
        bar.set_margin(0, 0, 2, 2);
        bar
    }))
    .map_err(draw_err(PLOT))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::svg::tests::{has_text, hex, parse_svg};
    use crate::render::tests::{groups, scratch_dir};

    #[test]
    fn groups_svg_holds_the_percentile_lines_and_one_counter_strip_each() {
        let dir = scratch_dir("groups");
        let path = dir.join("groups.svg");
        let rows = groups();
        groups_svg(&rows, "groups", &path).expect("drawn");
        let svg = parse_svg(&path);
        for (color, name) in PERCENTILE_COLORS.iter().zip(["p50", "p99", "p99.9", "max"]) {
            assert!(has_text(&svg, name), "legend {name}");
            let longest = svg
                .lines
                .iter()
                .filter(|(s, _)| *s == hex(*color))
                .map(|(_, n)| *n)
                .max();
            assert_eq!(longest, Some(20), "{name}: a point per group");
        }
        assert!(has_text(&svg, "futex waits per group") && has_text(&svg, "involuntary switches per group"));
        // Background + legend box + 2 × 20 bars (plotters draws a 0 bar too).
        assert!(svg.rects >= 40, "{} rects", svg.rects);
        assert!(svg.circles >= 80, "markers: {}", svg.circles);

        // No counters: no strips.
        let plain: Vec<GroupPoint> = rows
            .into_iter()
            .map(|r| GroupPoint {
                counters: Vec::new(),
                ..r
            })
            .collect();
        groups_svg(&plain, "groups", &path).expect("drawn");
        let svg = parse_svg(&path);
        assert!(!has_text(&svg, "futex waits per group") && !has_text(&svg, "involuntary switches per group"));
        assert!(
            svg.rects <= 3,
            "backgrounds and the legend box only, got {} rects",
            svg.rects
        );
        std::fs::remove_dir_all(dir).ok();
    }
}
