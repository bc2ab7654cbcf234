//! Benchmark suites: named lists of problems, kept as CSV files in `host/suites/` and embedded in
//! the binary, so `convrs bench --suite NAME` works wherever the binary runs.
//!
//! A line is `N,C,H,W,K,R,S`, optionally followed by `pad_h,pad_w`, then `stride_h,stride_w`,
//! then `dilation_h,dilation_w` (7, 9, 11 or 13 fields; missing pairs are pad 0, stride 1,
//! dilation 1). `#` starts a comment; blank lines are skipped. A shape listed twice is timed once.
//!
//! ```
//! let suite = convrs::suite::Suite::load("resnet50")?;
//! assert_eq!(suite.shapes.len(), 23);
//! assert_eq!(suite.shapes[0].stride, (2, 2));
//! # Ok::<(), convrs::Error>(())
//! ```

use std::collections::HashSet;
use std::path::Path;

use crate::problem::parse_shape;
use crate::{Conv2d, Error, Result};

/// The suites built into convrs: (name, file in `host/suites/`, contents, what it is).
pub const KNOWN: &[(&str, &str, &str, &str)] = &[
    ("seed", "seed.csv", include_str!("../suites/seed.csv"), "the first issues' target and report shapes (4)"),
    ("deepbench", "deepbench.csv", include_str!("../suites/deepbench.csv"), "Baidu DeepBench's training-set convolutions (90 distinct)"),
    ("resnet50", "resnet50.csv", include_str!("../suites/resnet50.csv"), "every distinct convolution of ResNet-50 at batch 32 (23)"),
];

/// A named list of distinct, valid problems.
#[derive(Clone, Debug, PartialEq)]
pub struct Suite {
    pub name: String,
    pub shapes: Vec<Conv2d>,
    /// Lines that repeated an earlier shape (timed once).
    pub duplicates: usize,
}

impl Suite {
    /// A built-in suite by name ([`KNOWN`]), or a suite file by path (anything containing `/` or
    /// ending in `.csv`). An unknown name is an error that lists the known ones.
    pub fn load(name_or_path: &str) -> Result<Suite> {
        if let Some((name, file, text, _)) = KNOWN.iter().find(|(n, ..)| *n == name_or_path) {
            return Suite::parse(name, &format!("host/suites/{file}"), text);
        }
        if name_or_path.contains('/') || name_or_path.ends_with(".csv") {
            let path = Path::new(name_or_path);
            let text = std::fs::read_to_string(path).map_err(|e| Error::InvalidArgument(format!("cannot read suite file {}: {e}", path.display())))?;
            let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| name_or_path.to_string());
            return Suite::parse(&name, name_or_path, &text);
        }
        Err(Error::InvalidArgument(format!("unknown suite `{name_or_path}`; known suites: {} (or a path to a .csv file)", known_list())))
    }

    /// Part `i` of `n` (1-based): every n-th shape from the i-th on, so the parts of a suite
    /// take about equal time and together hold each shape once. Named `NAME (part i/n)`.
    ///
    /// ```
    /// use convrs::suite::Suite;
    /// let parts: Vec<_> = (1..=3).map(|i| Suite::load("deepbench").unwrap().part(i, 3).unwrap()).collect();
    /// assert_eq!(parts.iter().map(|p| p.shapes.len()).sum::<usize>(), 90);
    /// assert_eq!(parts[1].name, "deepbench (part 2/3)");
    /// assert!(Suite::load("seed").unwrap().part(4, 3).is_err());
    /// ```
    pub fn part(self, i: usize, n: usize) -> Result<Suite> {
        if n == 0 || i == 0 || i > n {
            return Err(Error::InvalidArgument(format!("part {i}/{n}: expected I/N with 1 <= I <= N")));
        }
        let shapes: Vec<Conv2d> = self.shapes.into_iter().skip(i - 1).step_by(n).collect();
        if shapes.is_empty() {
            return Err(Error::InvalidArgument(format!("suite {}: part {i}/{n} holds no shapes", self.name)));
        }
        Ok(Suite { name: format!("{} (part {i}/{n})", self.name), shapes, duplicates: 0 })
    }

    /// Parses suite text; `source` names the file in errors (`FILE line N: ...`).
    pub fn parse(name: &str, source: &str, text: &str) -> Result<Suite> {
        let mut seen = HashSet::new();
        let mut suite = Suite { name: name.to_string(), shapes: Vec::new(), duplicates: 0 };
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let at = |msg: String| Error::InvalidArgument(format!("{source} line {}: {msg}", i + 1));
            let p = parse_line(line).map_err(|e| at(e.to_string()))?;
            p.validate().map_err(|e| at(format!("`{line}`: {e}")))?;
            if seen.insert(p) {
                suite.shapes.push(p);
            } else {
                suite.duplicates += 1;
            }
        }
        if suite.shapes.is_empty() {
            return Err(Error::InvalidArgument(format!("{source}: no shapes (expected lines N,C,H,W,K,R,S[,pad_h,pad_w[,stride_h,stride_w[,dilation_h,dilation_w]]])")));
        }
        Ok(suite)
    }
}

/// `name (what it is), ...` for help texts and errors.
pub fn known_list() -> String {
    KNOWN.iter().map(|(n, _, _, what)| format!("{n} ({what})")).collect::<Vec<_>>().join(", ")
}

/// One data line: the seven extents, then up to three (h, w) pairs.
fn parse_line(line: &str) -> Result<Conv2d> {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    if !matches!(fields.len(), 7 | 9 | 11 | 13) {
        return Err(Error::InvalidArgument(format!(
            "`{line}` has {} fields; expected 7 (N,C,H,W,K,R,S), 9 (+pad_h,pad_w), 11 (+stride_h,stride_w) or 13 (+dilation_h,dilation_w)",
            fields.len()
        )));
    }
    let mut p = parse_shape(&fields[..7].join(","))?;
    const PAIRS: [&str; 3] = ["pad", "stride", "dilation"];
    for (j, pair) in fields[7..].chunks(2).enumerate() {
        let v = crate::problem::parse_pair(PAIRS[j], &pair.join(","))?;
        match j {
            0 => p.pad = v,
            1 => p.stride = v,
            _ => p.dilation = v,
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        Suite::parse("t", "t.csv", text).unwrap_err().to_string()
    }

    #[test]
    fn built_in_suites_parse_with_the_documented_counts() {
        let seed = Suite::load("seed").unwrap();
        assert_eq!(seed.shapes.len(), 4);
        assert_eq!(seed.shapes[2], Conv2d::new(256, 256, 14, 14, 512, 3, 3).with_pad(1));
        let deepbench = Suite::load("deepbench").unwrap();
        assert_eq!((deepbench.shapes.len(), deepbench.duplicates), (90, 4));
        // The speech front-end: per-axis stride, no padding.
        assert_eq!(deepbench.shapes[0], Conv2d { stride: (2, 2), ..Conv2d::new(4, 1, 161, 700, 32, 5, 20) });
        let resnet = Suite::load("resnet50").unwrap();
        assert_eq!((resnet.shapes.len(), resnet.duplicates), (23, 0));
        assert!(resnet.shapes.iter().all(|p| p.n == 32));
    }

    #[test]
    fn optional_pairs_and_comments() {
        let s = Suite::parse("t", "t.csv", "# head\n\n1,2,9,9,3,3,3 # trailing\n1,2,9,9,3,3,3,1,2\n1,2,9,9,3,3,3,1,2,2,1\n1,2,9,9,3,3,3,0,0,1,1,2,3\n").unwrap();
        assert_eq!(s.shapes[0], Conv2d::new(1, 2, 9, 9, 3, 3, 3));
        assert_eq!(s.shapes[1].pad, (1, 2));
        assert_eq!((s.shapes[2].pad, s.shapes[2].stride), ((1, 2), (2, 1)));
        assert_eq!(s.shapes[3].dilation, (2, 3));
        assert_eq!(s.duplicates, 0);
    }

    #[test]
    fn duplicates_are_counted_not_repeated() {
        let s = Suite::parse("t", "t.csv", "1,2,9,9,3,3,3\n1,2,9,9,3,3,3,0,0,1,1,1,1\n").unwrap();
        assert_eq!((s.shapes.len(), s.duplicates), (1, 1));
    }

    #[test]
    fn each_kind_of_bad_line_names_file_and_line() {
        assert!(err("1,2,9,9,3,3,3\n1,2,9\n").starts_with("t.csv line 2: "), "{}", err("1,2,9\n"));
        assert!(err("1,2,9,9,3,3,3,1\n").contains("has 8 fields"));
        assert!(err("1,2,x,9,3,3,3\n").contains("t.csv line 1: ") && err("1,2,x,9,3,3,3\n").contains("H = `x`"));
        assert!(err("1,2,9,9,3,3,3,1,-1\n").contains("pad"));
        // Valid syntax, invalid problem: the filter does not fit.
        assert!(err("\n\n1,2,2,2,3,3,3\n").starts_with("t.csv line 3: "));
        assert!(err("1,2,9,9,3,3,3,0,0,0,1\n").contains("stride"));
        assert!(err("# only comments\n").contains("no shapes"));
    }

    #[test]
    fn unknown_suite_lists_the_known_ones() {
        let e = Suite::load("imagenet").unwrap_err().to_string();
        for (name, ..) in KNOWN {
            assert!(e.contains(name), "{e}");
        }
        assert!(Suite::load("/nonexistent/x.csv").unwrap_err().to_string().contains("/nonexistent/x.csv"));
    }
}
