//! The boundary attack, as a picture: 5 requests per minute; a client whose window opened at
//! 0:00 sends 5 at 0:59.5 and 5 at 1:00.0, then one every 5 seconds. Each algorithm decides
//! the same schedule (with the manual clock: no waiting), and `docs/boundary.svg` shows every
//! request, admitted or rejected, with the most admitted in any 60 seconds on each lane.
//!
//! ```sh
//! cargo run --example boundary      # writes docs/boundary.svg
//! ```
//!
//! `tests/boundary.rs` redraws it and fails when the committed picture differs.

use std::time::Duration;

use limiter::{Algorithm, Limit, Limiter, ManualClock, Policy};
use plotters::prelude::*;

/// Requests per window, and the window, in milliseconds.
const MAX: u32 = 5;
const WINDOW_MS: u64 = 60_000;
/// Where the picture ends.
const END_MS: u64 = 150_000;

/// The schedule: the instant of each request, in milliseconds.
pub fn schedule() -> Vec<u64> {
    let mut at = vec![0];
    at.extend([59_500; 5]);
    at.extend([60_000; 5]);
    at.extend((65_000..END_MS).step_by(5_000));
    at
}

/// Each request's instant and whether `algorithm` admitted it.
pub fn replay(algorithm: Algorithm) -> Vec<(u64, bool)> {
    let clock = ManualClock::starting_at(Duration::ZERO);
    let limiter = Limiter::builder().clock(clock.clone()).build();
    let policy = Policy::for_algorithm(algorithm, MAX, Duration::from_millis(WINDOW_MS))
        .expect("a valid policy");
    let limit = Limit::new("boundary", policy);
    let mut now = 0;
    schedule()
        .into_iter()
        .map(|at| {
            clock.advance(Duration::from_millis(at - now));
            now = at;
            let decision = limiter
                .check(&limit, b"the client")
                .now_or_never()
                .expect("the memory store answers at once")
                .expect("the memory store does not fail");
            (at, decision.allowed())
        })
        .collect()
}

/// The most requests admitted in any interval `[t, t + 60 s)`.
pub fn worst_minute(decisions: &[(u64, bool)]) -> usize {
    let admitted: Vec<u64> = decisions.iter().filter(|d| d.1).map(|d| d.0).collect();
    admitted
        .iter()
        .map(|&t| {
            admitted
                .iter()
                .filter(|&&u| u >= t && u - t < WINDOW_MS)
                .count()
        })
        .max()
        .unwrap_or(0)
}

/// The algorithms, top to bottom, and their lane labels.
const LANES: [(Algorithm, &str); 4] = [
    (Algorithm::FixedWindow, "fixed_window"),
    (Algorithm::SlidingWindow, "sliding_window (default)"),
    (Algorithm::SlidingWindowCounter, "sliding_window_counter"),
    (Algorithm::TokenBucket, "token_bucket"),
];

/// Each lane's marks: where (seconds, height) and whether admitted. Requests at one instant
/// are stacked upwards, so each one shows.
fn marks(lane: usize) -> Vec<((f64, f64), bool)> {
    let y = (3 - lane) as f64;
    let mut marks = Vec::new();
    let mut last = (u64::MAX, 0);
    for (at, admitted) in replay(LANES[lane].0) {
        last = if last.0 == at {
            (at, last.1 + 1)
        } else {
            (at, 0)
        };
        marks.push((
            (at as f64 / 1000.0, y - 0.2 + 0.09 * last.1 as f64),
            admitted,
        ));
    }
    marks
}

fn mark(point: (f64, f64), admitted: bool) -> Circle<(f64, f64), u32> {
    if admitted {
        Circle::new(point, 4, GREEN.mix(0.9).filled())
    } else {
        Circle::new(point, 4, RED.stroke_width(2))
    }
}

/// The picture, as SVG text: the whole schedule on the left, the edge of the window
/// magnified on the right.
pub fn svg() -> String {
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (960, 440)).into_drawing_area();
        root.fill(&WHITE).expect("drawn");
        let root = root
            .titled(
                "The boundary attack: 5 per minute; 5 requests at 0:59.5, 5 at 1:00.0, then one every 5 s",
                ("sans-serif", 18),
            )
            .expect("a title");
        let (left, right) = root.split_horizontally(700);
        let mut chart = ChartBuilder::on(&left)
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(180)
            .build_cartesian_2d(-2.0f64..(END_MS as f64 / 1000.0 + 2.0), -0.5f64..3.6)
            .expect("a chart");
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_labels(9)
            .x_label_formatter(&|s| format!("{}:{:02}", *s as u64 / 60, *s as u64 % 60))
            .y_labels(4)
            .y_label_formatter(&|y| {
                let lane = y.round() as usize;
                LANES
                    .get(3usize.saturating_sub(lane))
                    .map_or(String::new(), |l| l.1.to_string())
            })
            .x_desc("time (m:ss)   filled: admitted, ring: rejected with 429")
            .label_style(("sans-serif", 13))
            .draw()
            .expect("a mesh");
        for (lane, (algorithm, _)) in LANES.iter().enumerate() {
            let y = (3 - lane) as f64;
            chart
                .draw_series(
                    marks(lane)
                        .into_iter()
                        .map(|(p, admitted)| mark(p, admitted)),
                )
                .expect("marks");
            let worst = worst_minute(&replay(*algorithm));
            let color = if worst > MAX as usize { RED } else { BLACK };
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("at most {worst} admitted in 60 s"),
                    (88.0, y + 0.34),
                    ("sans-serif", 14).into_font().color(&color),
                )))
                .expect("a note");
        }
        // The edge, magnified: 0:59.5 and 1:00.0 half a second apart.
        let mut zoom = ChartBuilder::on(&right)
            .margin(12)
            .x_label_area_size(36)
            .caption("the edge, magnified", ("sans-serif", 14))
            .build_cartesian_2d(59.2f64..60.3, -0.5f64..3.6)
            .expect("a chart");
        zoom.configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_labels(3)
            .x_label_formatter(&|s| format!("{}:{:04.1}", *s as u64 / 60, s % 60.0))
            .label_style(("sans-serif", 13))
            .draw()
            .expect("a mesh");
        for lane in 0..LANES.len() {
            zoom.draw_series(
                marks(lane)
                    .into_iter()
                    .filter(|((x, _), _)| (59.2..60.3).contains(x))
                    .map(|(p, admitted)| mark(p, admitted)),
            )
            .expect("marks");
        }
        root.present().expect("presented");
    }
    text
}

fn main() -> std::io::Result<()> {
    std::fs::create_dir_all("docs")?;
    std::fs::write("docs/boundary.svg", svg())?;
    for algorithm in Algorithm::ALL {
        let decisions = replay(algorithm);
        println!(
            "{algorithm:<24} worst 60 s: {} admitted",
            worst_minute(&decisions)
        );
    }
    println!("wrote docs/boundary.svg");
    Ok(())
}
