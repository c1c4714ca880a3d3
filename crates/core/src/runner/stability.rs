//! How steady a run itself was: the spread (coefficient of variation) and the trend
//! (least-squares slope) of its per-interval IOPS and bandwidth, from the interval series.
//!
//! The series is the run's `--status-interval` one when asked for; otherwise the workers keep
//! a series on a default grid ([`default_grid`]) for these figures alone (counts only, no
//! latency per interval), and it is not stored. Whole intervals of the grid are joined into
//! judged intervals of up to 1 s, fewer when that would leave fewer than [`MIN_INTERVALS`]
//! of them: short intervals measure scheduling noise more than the storage.

use crate::result::{IntervalReport, StabilityReport};
use std::time::Duration;

/// Fewest judged intervals the figures are given for.
pub(crate) const MIN_INTERVALS: usize = 5;
/// Whole intervals of the grid are joined up to this length.
const JOIN_UP_TO_S: f64 = 1.0;
/// The default grid of a run bounded by count (its length is not known ahead): fine enough
/// that a run of 1 s has five intervals.
const UNTIMED_GRID: Duration = Duration::from_millis(200);
/// The shortest default grid.
const SHORTEST_GRID: Duration = Duration::from_millis(100);

/// The grid of the series kept for these figures when the run keeps none of its own: 1 s,
/// or a fifth of a timed run shorter than 5 s (at least 100 ms); 200 ms for a run bounded
/// by count.
pub(crate) fn default_grid(time_s: Option<f64>) -> Duration {
    match time_s.filter(|t| t.is_finite() && *t > 0.0) {
        Some(t) => Duration::from_secs_f64(t / MIN_INTERVALS as f64)
            .clamp(SHORTEST_GRID, Duration::from_secs_f64(JOIN_UP_TO_S)),
        None => UNTIMED_GRID,
    }
}

/// Coefficient of variation of `values` in %: sample standard deviation (n - 1) over the
/// mean. None: fewer than two values or a mean that is not positive.
pub(crate) fn cv_pct(values: &[f64]) -> Option<f64> {
    let n = values.len();
    let mean = mean(values)?;
    if n < 2 || mean <= 0.0 {
        return None;
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    Some(var.sqrt() / mean * 100.0)
}

/// The least-squares line of `values` against `t_s` (the intervals' middles): its change
/// from the first point's time to the last's, in % of the mean (signed). None: fewer than
/// two points, all at one time, or a mean that is not positive.
pub(crate) fn change_pct(t_s: &[f64], values: &[f64]) -> Option<f64> {
    if t_s.len() != values.len() || t_s.len() < 2 {
        return None;
    }
    let (mt, mv) = (mean(t_s)?, mean(values)?);
    if mv <= 0.0 {
        return None;
    }
    let sxx: f64 = t_s.iter().map(|t| (t - mt).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = t_s
        .iter()
        .zip(values)
        .map(|(t, v)| (t - mt) * (v - mv))
        .sum();
    let span = t_s[t_s.len() - 1] - t_s[0];
    Some(sxy / sxx * span / mv * 100.0)
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The stability figures of a run's `series` kept on a grid of `grid_s` seconds; `series`
/// names where it came from (`status_interval`, `default`). None: fewer than
/// [`MIN_INTERVALS`] whole intervals, or no I/O.
pub(crate) fn judge(
    series: &[IntervalReport],
    grid_s: f64,
    source: &str,
) -> Option<StabilityReport> {
    if grid_s.is_nan() || grid_s <= 0.0 {
        return None;
    }
    // The grid's cells, each with its interval's rates: an interval over several cells (no
    // I/O completed across a boundary) gives each of them its rate; the last, partial
    // interval (under 90 % of the grid) is left out.
    let mut cells: Vec<(f64, f64)> = Vec::with_capacity(series.len());
    for iv in series {
        let n = (iv.interval_s / grid_s + 0.1).floor() as usize;
        cells.extend(std::iter::repeat_n((iv.iops, iv.bytes_per_sec), n));
    }
    let per_join = ((JOIN_UP_TO_S / grid_s + 1e-9).floor() as usize)
        .min(cells.len() / MIN_INTERVALS)
        .max(1);
    let joined: Vec<(f64, f64)> = cells
        .chunks_exact(per_join)
        .map(|c| {
            let n = c.len() as f64;
            (
                c.iter().map(|x| x.0).sum::<f64>() / n,
                c.iter().map(|x| x.1).sum::<f64>() / n,
            )
        })
        .collect();
    if joined.len() < MIN_INTERVALS {
        return None;
    }
    let length_s = grid_s * per_join as f64;
    let t: Vec<f64> = (0..joined.len())
        .map(|i| (i as f64 + 0.5) * length_s)
        .collect();
    let iops: Vec<f64> = joined.iter().map(|x| x.0).collect();
    let bw: Vec<f64> = joined.iter().map(|x| x.1).collect();
    let iops_mean = mean(&iops)?;
    if iops_mean <= 0.0 {
        return None;
    }
    let bytes_per_sec_mean = mean(&bw)?;
    Some(StabilityReport {
        interval_s: length_s,
        intervals: joined.len() as u32,
        series: source.to_string(),
        iops_mean,
        iops_cv_pct: cv_pct(&iops)?,
        iops_change_over_run_pct: change_pct(&t, &iops)?,
        bytes_per_sec_mean,
        bytes_per_sec_cv_pct: cv_pct(&bw).unwrap_or(0.0),
        bytes_per_sec_change_over_run_pct: change_pct(&t, &bw).unwrap_or(0.0),
    })
}

/// The stability figures of a stored `--status-interval` series whose grid is not at hand
/// (a workload's, its runs' series end to end): the grid is the intervals' median length.
pub(crate) fn judge_stored(series: &[IntervalReport]) -> Option<StabilityReport> {
    let mut lengths: Vec<f64> = series
        .iter()
        .map(|i| i.interval_s)
        .filter(|l| *l > 0.0)
        .collect();
    lengths.sort_by(f64::total_cmp);
    let grid_s = *lengths.get(lengths.len() / 2)?;
    judge(series, grid_s, "status_interval")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn cv_is_the_sample_deviation_over_the_mean() {
        // 90, 110: mean 100, deviations ±10, sample variance 200/1: sd 14.142.
        assert!(close(cv_pct(&[90.0, 110.0]).unwrap(), 200f64.sqrt()));
        // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, squares 32, sample variance 32/7.
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert!(close(
            cv_pct(&v).unwrap(),
            (32.0f64 / 7.0).sqrt() / 5.0 * 100.0
        ));
        assert!(close(cv_pct(&[7.0; 6]).unwrap(), 0.0));
        assert_eq!(cv_pct(&[5.0]), None);
        assert_eq!(cv_pct(&[0.0, 0.0]), None);
    }

    #[test]
    fn the_change_is_the_fitted_line_from_first_to_last_over_the_mean() {
        // 110, 105, 100, 95, 90 at 0.5 .. 4.5 s: slope -5/s over 4 s = -20, mean 100.
        let t = [0.5, 1.5, 2.5, 3.5, 4.5];
        let v = [110.0, 105.0, 100.0, 95.0, 90.0];
        assert!(close(change_pct(&t, &v).unwrap(), -20.0));
        // 100 three times then 50 three times at 0.5 .. 5.5 s: Sxx 17.5, Sxy -225, slope
        // -90/7 per s, over 5 s: -450/7, over the mean 75: -85.714 %.
        let t = [0.5, 1.5, 2.5, 3.5, 4.5, 5.5];
        let v = [100.0, 100.0, 100.0, 50.0, 50.0, 50.0];
        assert!(close(
            change_pct(&t, &v).unwrap(),
            -450.0 / 7.0 / 75.0 * 100.0
        ));
        // Flat: no change; a V: no change either (the line is flat).
        assert!(close(change_pct(&t, &[3.0; 6]).unwrap(), 0.0));
        assert!(close(
            change_pct(&[0.0, 1.0, 2.0], &[10.0, 5.0, 10.0]).unwrap(),
            0.0
        ));
        assert_eq!(change_pct(&[1.0, 1.0], &[1.0, 2.0]), None);
    }

    fn iv(interval_s: f64, iops: f64) -> IntervalReport {
        IntervalReport {
            interval_s,
            iops,
            bytes_per_sec: iops * 4096.0,
            ..Default::default()
        }
    }

    #[test]
    fn grid_intervals_are_joined_up_to_a_second_keeping_five() {
        // Twelve 200 ms intervals and a partial one: joined in pairs (0.4 s), six of them.
        let mut s: Vec<IntervalReport> = (0..12).map(|i| iv(0.2, 100.0 + i as f64)).collect();
        s.push(iv(0.05, 1.0));
        let r = judge(&s, 0.2, "default").unwrap();
        assert_eq!(r.intervals, 6);
        assert!(close(r.interval_s, 0.4));
        assert!(close(r.iops_mean, 105.5), "{r:?}");
        // Pairs 100.5, 102.5 .. 110.5: slope 2 per 0.4 s over 5 * 0.4 s = 10, mean 105.5.
        assert!(
            close(r.iops_change_over_run_pct, 10.0 / 105.5 * 100.0),
            "{r:?}"
        );
        assert!(close(r.bytes_per_sec_cv_pct, r.iops_cv_pct));
        // Thirty 1 s intervals stay 1 s; 200 ms ones are joined into 1 s.
        assert_eq!(
            judge(&vec![iv(1.0, 5.0); 30], 1.0, "x").unwrap().intervals,
            30
        );
        let r = judge(&vec![iv(0.2, 5.0); 50], 0.2, "x").unwrap();
        assert_eq!((r.intervals, r.interval_s), (10, 1.0));
        // An interval over three cells (no I/O ended across two boundaries) is three.
        let mut s = vec![iv(1.0, 10.0); 3];
        s.push(iv(3.0, 1.0));
        assert_eq!(judge(&s, 1.0, "x").unwrap().intervals, 6);
        // Too few, or no I/O: nothing.
        assert_eq!(judge(&vec![iv(1.0, 5.0); 4], 1.0, "x"), None);
        assert_eq!(judge(&vec![iv(1.0, 0.0); 9], 1.0, "x"), None);
        assert_eq!(judge(&[], 0.0, "x"), None);
        // A stored series without its grid: the median length is taken for it.
        let mut s = vec![iv(0.5, 10.0); 6];
        s[2] = iv(0.1, 10.0);
        s.push(iv(1.5, 10.0));
        let r = judge_stored(&s).unwrap();
        assert_eq!((r.intervals, r.interval_s), (8, 0.5), "{r:?}");
        assert_eq!(judge_stored(&[]), None);
    }

    #[test]
    fn the_default_grid_gives_a_short_timed_run_five_intervals() {
        assert_eq!(default_grid(Some(60.0)), Duration::from_secs(1));
        assert_eq!(default_grid(Some(2.0)), Duration::from_millis(400));
        assert_eq!(default_grid(Some(0.2)), Duration::from_millis(100));
        assert_eq!(default_grid(None), Duration::from_millis(200));
    }
}
