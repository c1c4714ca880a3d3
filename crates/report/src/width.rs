//! How wide human text may be: the width tables and long result lines are fitted to.
//!
//! Only when stdout is a terminal: then `COLUMNS` when it is set to a number, else the
//! terminal's width (ioctl TIOCGWINSZ), at least [`MIN_WIDTH`]. When stdout is not a terminal
//! (a pipe, a file) there is no limit, whatever `COLUMNS` says: scripts and files get every
//! table whole, one line per row, the same on every machine.

/// Narrower terminals are treated as this wide (a table cannot be cut finer usefully).
pub(crate) const MIN_WIDTH: usize = 40;

/// The width to fit human text to; None: no limit.
pub(crate) fn terminal_width() -> Option<usize> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    if let Some(c) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
    {
        return Some(c.max(MIN_WIDTH));
    }
    let mut ws = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one winsize into the struct we own; on a descriptor that is
    // not a terminal it fails with ENOTTY and writes nothing.
    let rc = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) };
    (rc == 0 && ws.ws_col > 0).then(|| (ws.ws_col as usize).max(MIN_WIDTH))
}

/// Split the value columns of a table into blocks that each fit `width` with the row-label
/// columns (the first `keep`) repeated in every block: the indices of each block's value
/// columns. Column widths are `widths` and columns are joined by `gap` characters. A column
/// wider than the width on its own still gets a block (it cannot be cut).
pub(crate) fn column_blocks(
    widths: &[usize],
    keep: usize,
    gap: usize,
    width: Option<usize>,
) -> Vec<Vec<usize>> {
    let keep = keep.min(widths.len());
    let values: Vec<usize> = (keep..widths.len()).collect();
    let Some(limit) = width else {
        return vec![values];
    };
    let base: usize = widths[..keep].iter().map(|w| w + gap).sum();
    let mut blocks: Vec<Vec<usize>> = Vec::new();
    let mut used = base;
    for i in values {
        let need = widths[i] + gap;
        match blocks.last_mut() {
            Some(b) if used + widths[i] <= limit => {
                b.push(i);
                used += need;
            }
            _ => {
                blocks.push(vec![i]);
                used = base + need;
            }
        }
    }
    if blocks.is_empty() {
        blocks.push(Vec::new());
    }
    blocks
}

/// A line made of `first` and then `items`, each after a space; where it is longer than
/// `width`, it goes on over more lines, indented to stand under the first item, never
/// breaking an item (`min 1.2 us`, `p99.9 4.0 ms`). Without a width: one line, as joined.
pub(crate) fn wrap_items(first: &str, items: &[String], width: Option<usize>) -> String {
    wrap_indented(first, items, width, first.chars().count() + 1)
}

/// Prose cut at spaces to fit `width`, continued on lines indented by one space.
pub(crate) fn wrap_words(text: &str, width: Option<usize>) -> String {
    let mut words = text.split(' ');
    let first = words.next().unwrap_or("");
    let rest: Vec<String> = words.map(str::to_string).collect();
    wrap_indented(first, &rest, width, 1)
}

/// [`wrap_items`] with continuation lines indented by `indent` spaces.
fn wrap_indented(first: &str, items: &[String], width: Option<usize>, indent: usize) -> String {
    let mut out = first.to_string();
    let Some(limit) = width else {
        for i in items {
            out.push(' ');
            out.push_str(i);
        }
        return out;
    };
    let mut used = first.chars().count();
    for (k, i) in items.iter().enumerate() {
        let n = i.chars().count();
        if k > 0 && used + 1 + n > limit {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            used = indent + n;
        } else {
            out.push(' ');
            used += 1 + n;
        }
        out.push_str(i);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn blocks_fit_and_keep_order() {
        // Row label 10 wide, five 12-wide value columns, gap 2: 10+2 + 5*14 = 82.
        let w = [10, 12, 12, 12, 12, 12];
        assert_eq!(column_blocks(&w, 1, 2, None), vec![vec![1, 2, 3, 4, 5]]);
        assert_eq!(
            column_blocks(&w, 1, 2, Some(100)),
            vec![vec![1, 2, 3, 4, 5]]
        );
        assert_eq!(
            column_blocks(&w, 1, 2, Some(40)),
            vec![vec![1, 2], vec![3, 4], vec![5]]
        );
        // A column wider than the terminal still gets a block of its own.
        assert_eq!(
            column_blocks(&[5, 80, 3], 1, 2, Some(40)),
            vec![vec![1], vec![2]]
        );
    }

    #[test]
    fn items_wrap_under_the_first_and_stay_whole() {
        let items: Vec<String> = ["min 1.2 us", "mean 3.4 us", "p50 3.1 us", "max 9.9 ms"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let one = "latency: min 1.2 us mean 3.4 us p50 3.1 us max 9.9 ms";
        assert_eq!(wrap_items("latency:", &items, None), one);
        assert_eq!(wrap_items("latency:", &items, Some(80)), one);
        assert_eq!(
            wrap_items("latency:", &items, Some(40)),
            "latency: min 1.2 us mean 3.4 us\n         p50 3.1 us max 9.9 ms"
        );
        assert_eq!(wrap_words("a bb ccc", None), "a bb ccc");
        assert_eq!(wrap_words("a bb ccc", Some(5)), "a bb\n ccc");
    }

    proptest! {
        /// Wrapped lines hold every item whole, in order, and fit when the items do.
        #[test]
        fn wrapped_items_fit_and_keep_order(
            items in proptest::collection::vec("[a-z0-9.]{1,6} [a-z0-9.]{1,6}", 0..15),
            width in 40usize..120,
        ) {
            let out = wrap_items("read latency:", &items, Some(width));
            for l in out.lines() {
                prop_assert!(l.chars().count() <= width, "{}", out);
            }
            let joined = wrap_items("read latency:", &items, None);
            let words = |t: &str| t.split_whitespace().map(String::from).collect::<Vec<_>>();
            prop_assert_eq!(words(&out), words(&joined));
        }

        /// Every value column appears once, in order, and every block that holds more than
        /// one column fits the width.
        #[test]
        fn every_column_once_and_blocks_fit(
            widths in proptest::collection::vec(1usize..60, 1..20),
            keep in 0usize..3,
            width in 40usize..200,
        ) {
            let blocks = column_blocks(&widths, keep, 2, Some(width));
            let flat: Vec<usize> = blocks.iter().flatten().copied().collect();
            let keep = keep.min(widths.len());
            prop_assert_eq!(flat, (keep..widths.len()).collect::<Vec<_>>());
            let base: usize = widths[..keep].iter().map(|w| w + 2).sum();
            for b in &blocks {
                if b.len() > 1 {
                    let line = base + b.iter().map(|i| widths[*i] + 2).sum::<usize>() - 2;
                    prop_assert!(line <= width, "{:?} {:?} {}", widths, b, width);
                }
            }
        }
    }
}
