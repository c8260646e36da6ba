//! The overload comparison as a picture: the consumer's mailbox depth and
//! the queueing delay of the messages it took, per policy, over the run.
//!
//! Each policy runs again with a trace, and turno-trace's index (the one
//! the inspector's queue plots use) folds the consumer's series into one
//! point per horizontal pixel; this module only draws the lines.

use std::fmt::Write as _;
use std::io::Write;
use std::sync::{Arc, Mutex};

use turno::Policy;
use turno_trace::Index;

use crate::demo::{self, Scenario};

/// Points per line.
const POINTS: usize = 400;
/// The picture's size, and one panel's.
const WIDTH: f64 = 900.0;
const PANEL_H: f64 = 220.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
/// A colour per policy, in the order `demo::policies` lists them.
const COLOURS: [&str; 5] = ["#c62828", "#1565c0", "#2e7d32", "#6a1b9a", "#ef6c00"];

/// One policy's lines.
struct Series {
    policy: Policy,
    /// The deepest the mailbox got in each pixel.
    depth: Vec<u32>,
    /// The mean delay of the messages taken in each pixel, in seconds
    /// (`None` where none was taken).
    delay: Vec<Option<f64>>,
}

/// A trace sink's output kept in memory.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("trace buffer poisoned"))?
            .extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn series(s: &Scenario, policy: Policy) -> Result<Series, String> {
    let buf = Buffer::default();
    let sink = turno::trace::JsonLinesSink::new(buf.clone());
    demo::run_on(s, policy, turno::DetSystem::builder().trace(sink));
    let bytes = std::mem::take(&mut *buf.0.lock().map_err(|_| "trace buffer poisoned")?);
    let index = Index::build(std::io::Cursor::new(bytes)).map_err(|e| e.to_string())?;
    let qs = index.queues();
    // The consumer is the actor whose mailbox the scenario fills: the
    // deepest one.
    let (consumer, _) = qs
        .actors()
        .into_iter()
        .next()
        .ok_or("the run recorded no mailbox traffic")?;
    let end = s.duration.as_nanos() as u64;
    let plot = qs
        .plot(consumer, 0, end, POINTS)
        .ok_or("the consumer has no series")?;
    Ok(Series {
        policy,
        depth: plot.buckets.iter().map(|b| b.depth).collect(),
        delay: plot
            .buckets
            .iter()
            .map(|b| (b.taken > 0).then(|| b.sojourn_mean_ns as f64 / 1e9))
            .collect(),
    })
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A panel: axes, a title, the y range's labels, one line per series.
fn panel(
    out: &mut String,
    top: f64,
    title: &str,
    max: f64,
    unit: &str,
    seconds: u64,
    lines: &[(usize, Vec<Option<f64>>)],
) {
    let w = WIDTH - LEFT - RIGHT;
    let h = PANEL_H - 40.0;
    let y0 = top + 24.0;
    let _ = write!(
        out,
        r##"<text x="{LEFT}" y="{:.1}" font-weight="bold">{}</text><rect x="{LEFT}" y="{y0:.1}" width="{w:.1}" height="{h:.1}" fill="#f6f8fb" stroke="#999"/>"##,
        top + 16.0,
        esc(title)
    );
    for k in 0..=4 {
        let v = max * k as f64 / 4.0;
        let y = y0 + h - h * k as f64 / 4.0;
        let _ = write!(
            out,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#555">{}{unit}</text><line x1="{LEFT}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#e3e6ea"/>"##,
            LEFT - 6.0,
            y + 4.0,
            if max >= 10.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.2}")
            },
            LEFT + w
        );
    }
    for k in 0..=6 {
        let x = LEFT + w * k as f64 / 6.0;
        let _ = write!(
            out,
            r##"<text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="#555">{} s</text>"##,
            y0 + h + 14.0,
            seconds * k / 6
        );
    }
    for (colour, line) in lines {
        let n = line.len().max(1) as f64;
        let mut d = String::new();
        let mut pen_up = true;
        for (i, v) in line.iter().enumerate() {
            match v {
                Some(v) => {
                    let x = LEFT + w * (i as f64 + 0.5) / n;
                    let y = y0 + h - h * (v / max.max(f64::MIN_POSITIVE)).min(1.0);
                    let _ = write!(d, "{}{x:.1},{y:.1} ", if pen_up { "M" } else { "L" });
                    pen_up = false;
                }
                None => pen_up = true,
            }
        }
        let _ = write!(
            out,
            r#"<path d="{}" fill="none" stroke="{}" stroke-width="1.8"/>"#,
            d.trim_end(),
            COLOURS[*colour % COLOURS.len()]
        );
    }
}

/// The comparison of every policy under `s`, as one SVG document.
pub fn picture(s: &Scenario) -> Result<String, String> {
    let all: Vec<Series> = demo::policies(s.capacity)
        .into_iter()
        .map(|p| series(s, p))
        .collect::<Result<_, _>>()?;
    let seconds = s.duration.as_secs();
    let height = 60.0 + 2.0 * PANEL_H;
    let mut out = String::new();
    let _ = write!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="overload" role="img" aria-label="turno demo overload: mailbox depth and queueing delay per policy" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="#fff"/>"##
    );
    let _ = write!(
        out,
        r#"<text x="{LEFT}" y="20" font-size="14" font-weight="bold">turno demo overload: producer {} msg/s, consumer {} msg/s, capacity {}</text>"#,
        s.produce_hz, s.consume_hz, s.capacity
    );
    let mut x = LEFT;
    for (i, ser) in all.iter().enumerate() {
        let name = ser.policy.to_string();
        let _ = write!(
            out,
            r#"<g class="legend" data-policy="{0}"><rect x="{x:.1}" y="32" width="14" height="4" fill="{1}"/><text x="{2:.1}" y="38">{0}</text></g>"#,
            esc(&name),
            COLOURS[i % COLOURS.len()],
            x + 18.0
        );
        x += 24.0 + name.len() as f64 * 7.0;
    }
    let max_depth = all
        .iter()
        .flat_map(|s| s.depth.iter())
        .copied()
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let depth: Vec<(usize, Vec<Option<f64>>)> = all
        .iter()
        .enumerate()
        .map(|(i, s)| (i, s.depth.iter().map(|&d| Some(d as f64)).collect()))
        .collect();
    panel(
        &mut out,
        44.0,
        "mailbox depth (the deepest in each point)",
        max_depth,
        "",
        seconds,
        &depth,
    );
    let max_delay = all
        .iter()
        .flat_map(|s| s.delay.iter().flatten())
        .copied()
        .fold(0.0f64, f64::max)
        .max(1e-3);
    let delay: Vec<(usize, Vec<Option<f64>>)> = all
        .iter()
        .enumerate()
        .map(|(i, s)| (i, s.delay.clone()))
        .collect();
    panel(
        &mut out,
        44.0 + PANEL_H,
        "queueing delay of the messages taken (mean in each point)",
        max_delay,
        " s",
        seconds,
        &delay,
    );
    out.push_str("</svg>\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_picture_has_a_line_per_policy_and_the_depths_of_the_table() {
        let s = Scenario {
            duration: Duration::from_secs(10),
            capacity: 20,
            ..Scenario::default()
        };
        let all: Vec<Series> = demo::policies(s.capacity)
            .into_iter()
            .map(|p| series(&s, p).unwrap())
            .collect();
        for ser in &all {
            // The deepest point drawn is the deepest the mailbox got.
            let o = demo::run(&s, ser.policy);
            assert_eq!(
                ser.depth.iter().copied().max().unwrap() as usize,
                o.max_depth,
                "{}",
                ser.policy
            );
            // The longest mean delay drawn is at most the longest delay.
            let longest = ser.delay.iter().flatten().copied().fold(0.0, f64::max);
            assert!(longest <= o.max.as_secs_f64() + 1e-9, "{}", ser.policy);
            assert!(longest > 0.0);
        }
        // Unbounded: the queue (and its delay) grows to the end.
        let u = &all[0];
        assert!(u.depth[POINTS - 1] > u.depth[POINTS / 2]);
        let p = picture(&s).unwrap();
        assert!(p.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        // Two panels, five lines each, and a legend entry per policy.
        assert_eq!(p.matches("<path d=\"M").count(), 10);
        for policy in demo::policies(20) {
            assert!(p.contains(&format!("data-policy=\"{policy}\"")));
        }
    }
}
