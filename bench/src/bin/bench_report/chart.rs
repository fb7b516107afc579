//! `ratios.svg`: `ptr_ring / ring_mp_mc` per row with a target or a control,
//! bars from 1x on a log scale, whiskers for the 95% interval, black ticks
//! for the targets.

use plotters::coord::ranged1d::{IntoSegmentedCoord, SegmentValue};
use plotters::prelude::*;

use bench::targets::Verdict;

use crate::data::{self, Data};

const ROW_H: u32 = 24;

/// Writes the chart to `path`.
pub fn write(d: &Data, path: &std::path::Path) -> Result<(), String> {
    let rows: Vec<(String, data::Comparison)> = data::all_rows(d)
        .into_iter()
        .filter(|(_, c)| c.paired.is_some() && (c.target.is_some() || c.control))
        .collect();
    if rows.is_empty() {
        return Err("no rows to chart".into());
    }
    let n = rows.len() as u32;
    let hi = rows
        .iter()
        .flat_map(|(_, c)| [c.paired.map(|p| p.hi), c.target.map(|t| t.min_ratio)])
        .flatten()
        .fold(2.0f64, f64::max)
        * 1.3;
    let lo = rows
        .iter()
        .filter_map(|(_, c)| c.paired.map(|p| p.lo))
        .fold(0.5f64, f64::min)
        * 0.8;
    let root = SVGBackend::new(path, (1100, 90 + n * ROW_H)).into_drawing_area();
    let err = |e: &dyn std::fmt::Display| e.to_string();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    // plotters counts rows from the bottom: reversed, the first row is on top.
    let labels: Vec<String> = rows
        .iter()
        .rev()
        .map(|(p, c)| {
            // A row that swings between runs: its bar is one run's, the
            // label gives the spread.
            let spread = c.key.and_then(|k| crate::swing::spread(d, &k));
            let runs = spread.map_or(String::new(), |s| {
                format!(
                    " (run 1 of {}; runs {:.2}-{:.2}x)",
                    s.runs.len(),
                    s.summary.min,
                    s.summary.max
                )
            });
            format!("{p}{}{runs}", c.label)
        })
        .collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(
            if d.meta("quick") == "1" {
                "SMOKE RUN, not a result: ptr_ring / ring_mp_mc (median of paired per-round ratios, log scale)"
            } else {
                "ptr_ring / ring_mp_mc (median of paired per-round ratios, log scale)"
            },
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(560)
        .build_cartesian_2d((lo..hi).log_scale(), (0..n).into_segmented())
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n as usize)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => labels.get(*i as usize).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .x_label_formatter(&|x| format!("{x:.1}x"))
        .x_desc("green: met; amber: equal within noise (not met); red: missed or not shown; grey: control (DPDK's cache served everything) or no target")
        .draw()
        .map_err(|e| err(&e))?;
    let y = |i: u32, f: f64| -> SegmentValue<u32> {
        // Bars span the middle of row i; plotters places segment i between
        // Exact(i) and Exact(i + 1).
        if f <= 0.0 {
            SegmentValue::Exact(i)
        } else if f >= 1.0 {
            SegmentValue::Exact(i + 1)
        } else {
            SegmentValue::CenterOf(i)
        }
    };
    for (i, (_, c)) in rows.iter().enumerate() {
        let i = n - 1 - i as u32;
        let p = c.paired.expect("filtered");
        let color = match (c.control, c.verdict) {
            (true, _) | (_, None) => RGBColor(150, 150, 150),
            (_, Some(Verdict::Met)) => RGBColor(58, 154, 74),
            (_, Some(Verdict::WithinNoise | Verdict::NotSteady)) => RGBColor(224, 165, 38),
            (_, Some(Verdict::Missed | Verdict::NotShown)) => RGBColor(208, 67, 58),
        };
        let bar = Rectangle::new(
            [(1.0, y(i, 0.0)), (p.median, y(i, 1.0))],
            color.mix(0.8).filled(),
        );
        chart
            .draw_series(std::iter::once(bar))
            .map_err(|e| err(&e))?;
        let whisker = PathElement::new(
            vec![(p.lo, y(i, 0.5)), (p.hi, y(i, 0.5))],
            BLACK.stroke_width(2),
        );
        chart
            .draw_series(std::iter::once(whisker))
            .map_err(|e| err(&e))?;
        if let Some(t) = c.target {
            let tick = PathElement::new(
                vec![(t.min_ratio, y(i, 0.0)), (t.min_ratio, y(i, 1.0))],
                BLACK.stroke_width(3),
            );
            chart
                .draw_series(std::iter::once(tick))
                .map_err(|e| err(&e))?;
        }
    }
    let one = PathElement::new(
        vec![(1.0, SegmentValue::Exact(0)), (1.0, SegmentValue::Exact(n))],
        BLACK.stroke_width(1),
    );
    chart
        .draw_series(std::iter::once(one))
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))
}
