//! `latency-probe tap PATH...`: reads a tap's interval logs (files, or directories of `.hlog`
//! files), one figure per file name (rotated logs merged), and renders the report, the
//! comparison and the plots.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::analysis::tap::{compare_as, groups, period};
use crate::model::{figure_of, parse_hlog, HlogParseError, TapComparison, TapFigure};
use crate::render::svg::{groups_svg_from, spectrum_svg, PlotError, TAP_ORIGIN};
use crate::render::tap::{comparison_text, group_points, tap_text, TapView};

/// Why a tap's logs could not be read or drawn.
#[derive(Debug)]
pub enum TapReadError {
    /// A path could not be read.
    Read {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A directory holds no `.hlog` file.
    NoLogs {
        /// The directory.
        dir: PathBuf,
    },
    /// A file is not an interval log.
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        source: HlogParseError,
    },
    /// A figure has no interval (of the tag asked for).
    Empty {
        /// The figure.
        figure: String,
        /// The tag asked for.
        tag: Option<String>,
        /// The tags its logs have.
        tags: Vec<String>,
    },
    /// The two sides of a comparison share no figure name, and are not one figure each.
    NoCommonFigure {
        /// A's figures.
        a: Vec<String>,
        /// B's figures.
        b: Vec<String>,
    },
    /// No interval lies in the period asked for.
    EmptyPeriod {
        /// Its start, seconds.
        from_s: f64,
        /// Its end, seconds.
        to_s: f64,
        /// The longest figure's span, seconds.
        span_s: f64,
    },
    /// A plot could not be written.
    Plot(PlotError),
}

impl fmt::Display for TapReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TapReadError::Read { path, source } => {
                write!(
                    f,
                    "could not read {}: {source}; give the tap's .hlog files or its directory",
                    path.display()
                )
            }
            TapReadError::NoLogs { dir } => write!(
                f,
                "{} holds no .hlog file; give the directory the tap wrote (Tap::builder(DIR), order_gateway --tap DIR)",
                dir.display()
            ),
            TapReadError::Parse { path, source } => {
                write!(f, "{} is not an HdrHistogram interval log: {source}", path.display())
            }
            TapReadError::Empty { figure, tag, tags } => match tag {
                Some(t) => write!(
                    f,
                    "figure {figure} has no interval tagged {t}; its tags: {}",
                    if tags.is_empty() {
                        "none".to_owned()
                    } else {
                        tags.join(", ")
                    }
                ),
                None => write!(
                    f,
                    "figure {figure} has no untagged interval; pick one of its tags with --tag ({})",
                    tags.join(", ")
                ),
            },
            TapReadError::NoCommonFigure { a, b } => write!(
                f,
                "A's figures ({}) and B's ({}) share no name; give one figure a side to compare two different ones",
                a.join(", "),
                b.join(", ")
            ),
            TapReadError::EmptyPeriod { from_s, to_s, span_s } => write!(
                f,
                "no interval lies in --period {from_s}:{to_s}; the logs span {span_s:.2} s from their first interval"
            ),
            TapReadError::Plot(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for TapReadError {}

/// The `.hlog` files of `paths`: files as given, directories' `.hlog` files sorted by name.
fn log_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, TapReadError> {
    let mut out = Vec::new();
    for p in paths {
        let read = |source| TapReadError::Read {
            path: p.clone(),
            source,
        };
        if p.is_dir() {
            let mut logs: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(read)?
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|f| f.extension().is_some_and(|x| x == "hlog"))
                .collect();
            if logs.is_empty() {
                return Err(TapReadError::NoLogs { dir: p.clone() });
            }
            logs.sort();
            out.extend(logs);
        } else {
            std::fs::metadata(p).map_err(read)?;
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// The figures in `paths` (files and directories), each from every file of its name, its
/// intervals in time order; the lines of `tag` only (`None`: untagged).
///
/// # Errors
/// A path that cannot be read, a file that is no interval log, a figure without intervals.
pub fn read_figures(paths: &[PathBuf], tag: Option<&str>) -> Result<Vec<TapFigure>, TapReadError> {
    let mut by_name: BTreeMap<String, (TapFigure, Vec<String>)> = BTreeMap::new();
    let mut order = Vec::new();
    for path in log_files(paths)? {
        let text = std::fs::read_to_string(&path).map_err(|source| TapReadError::Read {
            path: path.clone(),
            source,
        })?;
        let log = parse_hlog(&text, tag).map_err(|source| TapReadError::Parse {
            path: path.clone(),
            source,
        })?;
        let file = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let name = figure_of(&file).to_owned();
        let (figure, tags) = by_name.entry(name.clone()).or_insert_with(|| {
            order.push(name.clone());
            (
                TapFigure {
                    name,
                    files: Vec::new(),
                    clock: None,
                    intervals: Vec::new(),
                },
                Vec::new(),
            )
        });
        figure.files.push(match log.unfinished_line {
            None => path.display().to_string(),
            Some(n) => format!("{} (its line {n}, unfinished, left out)", path.display()),
        });
        figure.clock = figure.clock.take().or(log.clock);
        figure.intervals.extend(log.intervals);
        tags.extend(log.tags);
    }
    let mut out = Vec::new();
    for name in order {
        let (mut figure, mut tags) = by_name.remove(&name).expect("registered");
        if figure.intervals.is_empty() {
            tags.sort();
            tags.dedup();
            return Err(TapReadError::Empty {
                figure: name,
                tag: tag.map(str::to_owned),
                tags,
            });
        }
        figure.intervals.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
        out.push(figure);
    }
    Ok(out)
}

/// What to compare the figures with.
#[derive(Debug, Clone)]
pub enum Against {
    /// Nothing.
    None,
    /// The figures of other files (matched by name, or one against one).
    Files(Vec<TapFigure>),
    /// The same figures over another period, seconds from each figure's first interval.
    Period(f64, f64),
}

/// What `tap` was asked for.
#[derive(Debug, Clone)]
pub struct TapRequest {
    /// The period of A, seconds from each figure's first interval.
    pub period: (f64, f64),
    /// What to print per figure.
    pub view: TapView,
    /// Groups per figure.
    pub groups: usize,
    /// The comparison, if any.
    pub against: Against,
    /// Its confidence.
    pub confidence: f64,
    /// The change its no change rules out either way, a fraction.
    pub resolve: f64,
    /// Where to draw the plots, if anywhere.
    pub out: Option<PathBuf>,
}

/// Pairs of figures to compare: same names, or the one of each side.
fn matched<'a>(a: &'a [TapFigure], b: &'a [TapFigure]) -> Result<Vec<(&'a TapFigure, &'a TapFigure)>, TapReadError> {
    let same: Vec<_> = a
        .iter()
        .filter_map(|fa| b.iter().find(|fb| fb.name == fa.name).map(|fb| (fa, fb)))
        .collect();
    match (same.is_empty(), a, b) {
        (false, _, _) => Ok(same),
        (true, [fa], [fb]) => Ok(vec![(fa, fb)]),
        _ => Err(TapReadError::NoCommonFigure {
            a: a.iter().map(|f| f.name.clone()).collect(),
            b: b.iter().map(|f| f.name.clone()).collect(),
        }),
    }
}

/// The report for `figures` as `req` asks: the text (with the comparison), and the plots when
/// `req.out` is set (`spectrum.svg`, `groups-<figure>.svg`).
///
/// # Errors
/// No common figure to compare, or a plot that cannot be written.
pub fn tap_report(figures: &[TapFigure], req: &TapRequest) -> Result<String, TapReadError> {
    let a: Vec<TapFigure> = figures.iter().map(|f| period(f, req.period.0, req.period.1)).collect();
    let a: Vec<TapFigure> = a.into_iter().filter(|f| !f.intervals.is_empty()).collect();
    if a.is_empty() {
        return Err(TapReadError::EmptyPeriod {
            from_s: req.period.0,
            to_s: req.period.1,
            span_s: figures.iter().map(|f| f.span_s().1 - f.span_s().0).fold(0.0, f64::max),
        });
    }
    let grouped: Vec<_> = a.iter().map(|f| groups(f, req.groups)).collect();
    let mut text = tap_text(&a, &grouped, req.view);
    let b: Vec<TapFigure> = match &req.against {
        Against::None => Vec::new(),
        Against::Files(b) => b.clone(),
        Against::Period(from, to) => figures.iter().map(|f| period(f, *from, *to)).collect(),
    };
    let compared: Vec<(&TapFigure, &TapFigure, TapComparison)> = if b.is_empty() {
        Vec::new()
    } else {
        matched(&a, &b)?
            .into_iter()
            .map(|(fa, fb)| {
                let may_pair = !matches!(req.against, Against::Period(..));
                (fa, fb, compare_as(fa, fb, (req.confidence, req.resolve), may_pair))
            })
            .collect()
    };
    if !compared.is_empty() {
        let (la, lb) = match &req.against {
            Against::Period(from, to) => (
                format!("seconds {}..{}", req.period.0, req.period.1),
                format!("seconds {from}..{to}"),
            ),
            _ => ("the files given first".to_owned(), "the files after --vs".to_owned()),
        };
        text.push_str(&comparison_text(&la, &lb, &compared, req.confidence));
    }
    if let Some(dir) = &req.out {
        draw(dir, &a, &grouped, &compared)?;
        text.push_str(&format!("\nplots: {}\n", dir.display()));
    }
    Ok(text)
}

fn draw(
    dir: &Path,
    a: &[TapFigure],
    grouped: &[Vec<crate::model::TapGroup>],
    compared: &[(&TapFigure, &TapFigure, TapComparison)],
) -> Result<(), TapReadError> {
    std::fs::create_dir_all(dir).map_err(|source| TapReadError::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    let totals: Vec<(String, hdrhistogram::Histogram<u64>)> = if compared.is_empty() {
        a.iter().map(|f| (f.name.clone(), f.total())).collect()
    } else {
        compared
            .iter()
            .flat_map(|(fa, fb, _)| {
                [
                    (format!("A {}", fa.name), fa.total()),
                    (format!("B {}", fb.name), fb.total()),
                ]
            })
            .collect()
    };
    let series: Vec<(&str, &hdrhistogram::Histogram<u64>)> = totals.iter().map(|(n, h)| (n.as_str(), h)).collect();
    spectrum_svg(&series, "tap: latency by percentile", &dir.join("spectrum.svg")).map_err(TapReadError::Plot)?;
    for (f, g) in a.iter().zip(grouped) {
        let title = format!("{}: latency over time", f.name);
        groups_svg_from(
            &group_points(g),
            &title,
            TAP_ORIGIN,
            &dir.join(format!("groups-{}.svg", f.name)),
        )
        .map_err(TapReadError::Plot)?;
    }
    Ok(())
}
