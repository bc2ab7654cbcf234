//! Benchmark suites: named lists of problems, kept as CSV files in `host/suites/` and embedded in
//! the binary, so `convrs bench --suite NAME` works wherever the binary runs.
//!
//! A line is `N,C,H,W,K,R,S`, optionally followed by `pad_h,pad_w`, then `stride_h,stride_w`,
//! then `dilation_h,dilation_w`, then `groups` (7, 9, 11, 13 or 14 fields; what is missing is
//! pad 0, stride 1, dilation 1, groups 1). The groups G must divide C and K (G = C is a depthwise
//! convolution; see [`Conv2d::groups`]). `#` starts a comment; blank lines are skipped. A shape
//! listed twice is timed once.
//!
//! ```
//! let suite = convrs::suite::Suite::load("resnet50")?;
//! assert_eq!(suite.shapes.len(), 23);
//! assert_eq!(suite.shapes[0].stride, (2, 2));
//! let mobilenet = convrs::suite::Suite::load("mobilenet")?;
//! assert!(mobilenet.shapes.iter().any(|p| p.is_depthwise() && p.groups == 96));
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
    ("mobilenet", "mobilenet.csv", include_str!("../suites/mobilenet.csv"), "the distinct depthwise, 1x1 and stem/downsampling convolutions of MobileNetV2 and ConvNeXt-T at batch 1 and 32 (92)"),
    ("resnext", "resnext.csv", include_str!("../suites/resnext.csv"), "the distinct grouped 3x3 convolutions of ResNeXt-50 32x4d (32 groups) at batch 1 and 32 (14)"),
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
            return Err(Error::InvalidArgument(format!("{source}: no shapes (expected lines N,C,H,W,K,R,S[,pad_h,pad_w[,stride_h,stride_w[,dilation_h,dilation_w[,groups]]]])")));
        }
        Ok(suite)
    }
}

/// `name (what it is), ...` for help texts and errors.
pub fn known_list() -> String {
    KNOWN.iter().map(|(n, _, _, what)| format!("{n} ({what})")).collect::<Vec<_>>().join(", ")
}

/// One data line: the seven extents, then up to three (h, w) pairs, then the groups.
fn parse_line(line: &str) -> Result<Conv2d> {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    if !matches!(fields.len(), 7 | 9 | 11 | 13 | 14) {
        return Err(Error::InvalidArgument(format!(
            "`{line}` has {} fields; expected 7 (N,C,H,W,K,R,S), 9 (+pad_h,pad_w), 11 (+stride_h,stride_w), 13 (+dilation_h,dilation_w) or 14 (+groups)",
            fields.len()
        )));
    }
    let mut p = parse_shape(&fields[..7].join(","))?;
    let pairs_end = fields.len().min(13);
    if let Some(&g) = fields.get(13) {
        // The 14th field. Zero parses, so that validation names it (`groups` is zero); anything
        // else malformed is refused here.
        p.groups = crate::problem::parse_groups(&format!("`{line}`: groups"), g)?;
    }
    const PAIRS: [&str; 3] = ["pad", "stride", "dilation"];
    for (j, pair) in fields[7..pairs_end].chunks(2).enumerate() {
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
        let mobilenet = Suite::load("mobilenet").unwrap();
        assert_eq!((mobilenet.shapes.len(), mobilenet.duplicates), (92, 0));
        let resnext = Suite::load("resnext").unwrap();
        assert_eq!((resnext.shapes.len(), resnext.duplicates), (14, 0));
        assert!(resnext.shapes.iter().all(|p| p.groups == 32 && p.group_c() >= 4 && (p.r, p.s) == (3, 3)));
        // 30 MobileNetV2 and 16 ConvNeXt-T layers, each at batch 1 and batch 32.
        assert_eq!(mobilenet.shapes.iter().filter(|p| p.n == 1).count(), 46);
        assert_eq!(mobilenet.shapes.iter().filter(|p| p.n == 32).count(), 46);
        // Depthwise: MobileNetV2's 3x3 on 32, 96, 144 (twice), 192 (twice), 384, 576 (twice), 960;
        // ConvNeXt-T's 7x7 on 96, 192, 384, 768.
        let dw = |n: usize| mobilenet.shapes.iter().filter(|p| p.n == n && p.groups > 1).count();
        assert_eq!((dw(1), dw(32)), (14, 14));
        assert!(mobilenet.shapes.iter().filter(|p| p.groups > 1).all(|p| p.is_depthwise() && p.k == p.c));
        // MobileNetV2's stride-2 depthwise conv on 96 channels, 112 -> 56.
        assert!(mobilenet.shapes.contains(&Conv2d::new(32, 96, 112, 112, 96, 3, 3).with_pad(1).with_stride(2).with_groups(96)));
        // ConvNeXt-T's stage-3 depthwise conv, its stem and its last downsampling conv.
        assert!(mobilenet.shapes.contains(&Conv2d::new(1, 384, 14, 14, 384, 7, 7).with_pad(3).with_groups(384)));
        assert!(mobilenet.shapes.contains(&Conv2d::new(1, 3, 224, 224, 96, 4, 4).with_stride(4)));
        assert!(mobilenet.shapes.contains(&Conv2d::new(32, 384, 14, 14, 768, 2, 2).with_stride(2)));
        assert_eq!(KNOWN.len(), 5);
    }

    #[test]
    fn optional_pairs_and_comments() {
        let s = Suite::parse("t", "t.csv", "# head\n\n1,2,9,9,3,3,3 # trailing\n1,2,9,9,3,3,3,1,2\n1,2,9,9,3,3,3,1,2,2,1\n1,2,9,9,3,3,3,0,0,1,1,2,3\n").unwrap();
        assert_eq!(s.shapes[0], Conv2d::new(1, 2, 9, 9, 3, 3, 3));
        assert_eq!(s.shapes[1].pad, (1, 2));
        assert_eq!((s.shapes[2].pad, s.shapes[2].stride), ((1, 2), (2, 1)));
        assert_eq!(s.shapes[3].dilation, (2, 3));
        assert_eq!(s.duplicates, 0);
        assert!(s.shapes.iter().all(|p| p.groups == 1));
    }

    #[test]
    fn the_fourteenth_field_is_the_groups() {
        let s = Suite::parse("t", "t.csv", "2,8,9,9,8,3,3,1,1,1,1,1,1,4\n2, 16, 9, 9, 16, 3, 3, 1, 1, 2, 2, 1, 1, 16 # depthwise\n").unwrap();
        assert_eq!(s.shapes[0], Conv2d { groups: 4, ..Conv2d::new(2, 8, 9, 9, 8, 3, 3).with_pad(1) });
        assert_eq!(s.shapes[0].filter_shape(), [8, 2, 3, 3]);
        assert_eq!(s.shapes[1], Conv2d::new(2, 16, 9, 9, 16, 3, 3).with_pad(1).with_stride(2).with_groups(16));
        assert!(s.shapes[1].is_depthwise());
        // Groups 1 written out is the same shape as groups left out.
        let s = Suite::parse("t", "t.csv", "1,2,9,9,3,3,3,0,0,1,1,1,1,1\n1,2,9,9,3,3,3\n").unwrap();
        assert_eq!((s.shapes.len(), s.duplicates), (1, 1));
        // The same extents in another number of groups are another shape.
        let s = Suite::parse("t", "t.csv", "1,4,9,9,4,3,3,0,0,1,1,1,1,1\n1,4,9,9,4,3,3,0,0,1,1,1,1,2\n").unwrap();
        assert_eq!((s.shapes.len(), s.duplicates), (2, 0));
    }

    #[test]
    fn bad_groups_name_file_and_line() {
        // 3 groups do not divide C = 8: the problem's own check, with the line number.
        let e = err("# head\n2,8,9,9,8,3,3,1,1,1,1,1,1,4\n2,8,9,9,8,3,3,1,1,1,1,1,1,3\n");
        assert!(e.starts_with("t.csv line 3: "), "{e}");
        assert!(e.contains("3 groups must divide both the input channels C = 8 and the output channels K = 8"), "{e}");
        // Dividing C but not K.
        let e = err("1,8,9,9,6,3,3,0,0,1,1,1,1,4\n");
        assert!(e.starts_with("t.csv line 1: ") && e.contains("K = 6"), "{e}");
        let e = err("1,8,9,9,8,3,3,0,0,1,1,1,1,0\n");
        assert!(e.starts_with("t.csv line 1: ") && e.contains("`groups` is zero"), "{e}");
        let e = err("1,8,9,9,8,3,3,0,0,1,1,1,1,x\n");
        assert!(e.starts_with("t.csv line 1: ") && e.contains("groups = `x`"), "{e}");
        assert!(err("1,8,9,9,8,3,3,0,0,1,1,1,1,-2\n").contains("groups = `-2`"));
        // 15 fields, or groups without the dilation pair, are neither form.
        assert!(err("1,8,9,9,8,3,3,0,0,1,1,1,1,1,1\n").contains("has 15 fields"));
        assert!(err("1,8,9,9,8,3,3,0,0,1,1,4\n").contains("has 12 fields"));
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
