//! A fileset's layout: where every entry lives (its leaf directory, found by binary search
//! over contiguous leaf ranges, and its number) and how big it is, drawn once from the spec
//! (`dirwidth`, `dirgamma`, `dirdepthrv`, the size variable) in compact form.

use super::*;

#[derive(Debug, Clone, Copy)]
struct DirNode {
    parent: u32,
    num: u32,
}

/// Where every entry of a fileset lives and how big it is, in compact form.
#[derive(Debug, Clone)]
pub struct SetLayout {
    root: Vec<u8>,
    /// A `define file`: the single entry is `root/NAME`.
    file_name: Option<Vec<u8>>,
    /// Appended to every entry's name: a rank's tag (`.r00003`) when the directories are
    /// shared by the ranks of a run ([`FilesetSpec::shared_rank`]), else empty.
    tag: Vec<u8>,
    pub(super) shared_rank: Option<u32>,
    /// Tree directories, parents first; index 0 is the root.
    dirs: Vec<DirNode>,
    /// First entry index of each leaf range (ascending) and the directory holding the range.
    leaf_start: Vec<u64>,
    leaf_dir: Vec<u32>,
    sizes: Vec<u64>,
    /// FNV state after hashing "NAME#": the prealloc choice continues it with the index.
    prealloc_seed: u64,
    prealloc_cut: f64,
}

pub(super) fn fnv(h: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(h, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

pub(super) fn name_seed(name: &str) -> u64 {
    fnv(0xcbf2_9ce4_8422_2325, name.as_bytes())
}

fn try_vec<T>(n: u64, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    usize::try_from(n)
        .ok()
        .and_then(|n| v.try_reserve_exact(n).ok())
        .ok_or_else(|| crate::usage!("cannot allocate memory for {n} {what}: use fewer entries"))?;
    Ok(v)
}

fn try_push<T>(v: &mut Vec<T>, x: T) -> Result<()> {
    if v.len() == v.capacity() {
        v.try_reserve(v.len().max(16))
            .map_err(|_| crate::usage!("out of memory laying out a fileset: use fewer entries"))?;
    }
    v.push(x);
    Ok(())
}

/// Bytes of memory a fileset's layout, arena state and cleanup record need, estimated before
/// anything is allocated (an upper bound for fixed widths; gamma widths are similar).
pub fn estimate_bytes(spec: &FilesetSpec) -> u64 {
    let n = spec.count() as f64;
    let width = if spec.dirwidth.is_finite() {
        spec.dirwidth.max(1.0)
    } else {
        1e9
    };
    let leaves = n.min(2.0 * n / width + 1.0);
    // size 8 + arena state 4 + cleanup identity 8 per entry; leaf range 12, directory 8 and a
    // work frame 24 per leaf (two directories per leaf at most).
    (n * 20.0 + leaves * (12.0 + 16.0 + 24.0) + 4096.0) as u64
}

/// Memory of one layout as held by every worker process.
pub fn estimate_layout_bytes(spec: &FilesetSpec) -> u64 {
    let n = spec.count() as f64;
    estimate_bytes(spec).saturating_sub((n * 12.0) as u64)
}

impl SetLayout {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.sizes.len()
    }
    pub fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }
    /// Number of tree directories (the root included).
    pub fn dir_count(&self) -> usize {
        self.dirs.len()
    }
    pub fn size(&self, i: usize) -> u64 {
        self.sizes[i]
    }
    /// Is entry `i` created when the run is prepared (`prealloc` percent, spread evenly)?
    pub fn preallocated(&self, i: usize) -> bool {
        let mut d = [0u8; 20];
        let mut k = 20;
        let mut v = i as u64;
        loop {
            k -= 1;
            d[k] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        let h = fnv(self.prealloc_seed, &d[k..]) % 10_000;
        (h as f64) < self.prealloc_cut
    }
    fn write_dir(&self, d: u32, out: &mut CPath) {
        let node = self.dirs[d as usize];
        if node.parent == NO_PARENT {
            out.push(&self.root);
        } else {
            self.write_dir(node.parent, out);
            out.push(b"/");
            out.push_num(node.num as u64);
        }
    }
    /// Path of tree directory `d` (0 is the root).
    pub fn dir_path(&self, d: usize) -> CPath {
        let mut p = CPath::new();
        self.write_dir(d as u32, &mut p);
        p
    }
    /// Path of entry `i`.
    pub fn path(&self, i: usize) -> CPath {
        let mut p = CPath::new();
        if let Some(name) = &self.file_name {
            p.push(&self.root);
            p.push(b"/");
            p.push(name);
            p.push(&self.tag);
            return p;
        }
        let r = self.leaf_start.partition_point(|&s| s <= i as u64) - 1;
        self.write_dir(self.leaf_dir[r], &mut p);
        p.push(b"/");
        p.push_num(i as u64 + 1);
        p.push(&self.tag);
        p
    }
    /// Whether the directories are shared by the ranks of a run (entries tagged per rank).
    pub fn shared(&self) -> bool {
        self.shared_rank.is_some()
    }
    /// Heap bytes this layout holds.
    pub fn heap_bytes(&self) -> usize {
        self.root.capacity()
            + self.dirs.capacity() * std::mem::size_of::<DirNode>()
            + self.leaf_start.capacity() * 8
            + self.leaf_dir.capacity() * 4
            + self.sizes.capacity() * 8
    }
}

/// Compute where every entry lives and how big it is. Deterministic (seeded by the fileset's
/// name), so a child process computes exactly what the parent created. Checks Ctrl-C, so a
/// huge layout can be interrupted.
pub fn layout(spec: &FilesetSpec) -> Result<SetLayout> {
    let n = spec.count();
    if n > MAX_ENTRIES {
        crate::bail_usage!(
            "fileset '{}': {n} entries is more than the {MAX_ENTRIES} a fileset can hold",
            spec.name
        );
    }
    let root = spec.root.as_os_str().as_bytes().to_vec();
    if root.contains(&0) || spec.name.as_bytes().contains(&0) {
        crate::bail_usage!("fileset '{}': its path contains a NUL byte", spec.name);
    }
    let mut rng = Rng::new(name_seed(&spec.name));
    let mut lay = SetLayout {
        root,
        file_name: None,
        tag: spec
            .shared_rank
            .map(|r| format!(".r{r:05}").into_bytes())
            .unwrap_or_default(),
        shared_rank: spec.shared_rank,
        dirs: vec![DirNode {
            parent: NO_PARENT,
            num: 0,
        }],
        leaf_start: Vec::new(),
        leaf_dir: Vec::new(),
        sizes: try_vec(n, "fileset entries")?,
        prealloc_seed: fnv(name_seed(&spec.name), b"#"),
        prealloc_cut: spec.prealloc_pct * 100.0,
    };
    // Each path component is '/' plus at least 8 digits.
    let comp = 1 + 8usize.max(n.to_string().len());
    let room = (PATH_MAX - 1).saturating_sub(lay.root.len() + comp + lay.tag.len());
    let max_levels = room / comp;
    if spec.is_file {
        if lay.root.len() + 1 + spec.name.len() + lay.tag.len() >= PATH_MAX {
            crate::bail_usage!("file '{}': its path is too long", spec.name);
        }
        lay.file_name = Some(spec.name.as_bytes().to_vec());
        lay.leaf_start.push(0);
        lay.leaf_dir.push(0);
    } else if n > 0 {
        if lay.root.len() + comp + lay.tag.len() >= PATH_MAX {
            crate::bail_usage!(
                "fileset '{}': the path {} is too long",
                spec.name,
                spec.root.display()
            );
        }
        let shape = TreeShape::new(spec, &mut rng, max_levels as u64)?;
        shape.build(spec, &mut lay, &mut rng, n)?;
    }
    draw_sizes(spec, &mut lay, &mut rng, n)?;
    Ok(lay)
}

/// Draw each entry's size (0 for a set of directories), in index order.
fn draw_sizes(spec: &FilesetSpec, lay: &mut SetLayout, rng: &mut Rng, n: u64) -> Result<()> {
    for i in 0..n {
        if i % 65_536 == 0 && signal::interrupted() {
            return Err(Interrupted.into());
        }
        let size = if spec.is_dirs() {
            0
        } else {
            // NaN and negatives become 0; huge values saturate (the free-space check refuses).
            spec.size.sample(rng).max(0.0) as u64
        };
        lay.sizes.push(size);
    }
    Ok(())
}

/// A directory of the tree still to be split: it holds entries `lo..hi` at depth `level`.
struct Frame {
    dir: u32,
    lo: u64,
    hi: u64,
    level: u64,
}

/// How a fileset's directory tree is shaped: what a leaf holds, how inner directories split,
/// an optional fixed depth and the deepest the path length allows.
struct TreeShape {
    /// What a leaf directory holds.
    width: f64,
    /// Inner directories split at least in two, since a mean width below 2 cannot build a
    /// tree (width 1 would be a chain of directories as deep as the fileset is large:
    /// Filebench divides by log(1) there).
    split: f64,
    depth_limit: Option<u64>,
    max_levels: u64,
}

impl TreeShape {
    /// The shape of `spec`'s tree; a `dirdepthrv` depth is drawn here (before any other draw).
    fn new(spec: &FilesetSpec, rng: &mut Rng, max_levels: u64) -> Result<TreeShape> {
        let width = if spec.dirwidth.is_finite() {
            spec.dirwidth.max(1.0)
        } else {
            1e9
        };
        let depth_limit = match &spec.dirdepth {
            Some(d) => {
                let v = d.sample(rng).round();
                if !v.is_finite() || v > max_levels as f64 {
                    crate::bail_usage!(
                        "fileset '{}': dirdepthrv gives a depth of {v}, but paths below {} allow at most {max_levels} levels",
                        spec.name,
                        spec.root.display()
                    );
                }
                Some(v.max(1.0) as u64)
            }
            None => None,
        };
        Ok(TreeShape {
            width,
            split: width.max(2.0),
            depth_limit,
            max_levels,
        })
    }

    /// Split the root into directories, depth first, until every directory is a leaf; record
    /// the directories and the leaf ranges (in ascending order) in `lay`.
    fn build(&self, spec: &FilesetSpec, lay: &mut SetLayout, rng: &mut Rng, n: u64) -> Result<()> {
        let mut stack = vec![Frame {
            dir: 0,
            lo: 0,
            hi: n,
            level: 0,
        }];
        let mut steps = 0u64;
        while let Some(f) = stack.pop() {
            steps += 1;
            if steps.is_multiple_of(4096) && signal::interrupted() {
                return Err(Interrupted.into());
            }
            let count = f.hi - f.lo;
            let at_depth = self.depth_limit.is_some_and(|d| f.level >= d);
            let fits = match self.depth_limit {
                Some(_) => at_depth,
                None => count as f64 <= self.width,
            };
            if fits || count <= 1 && f.level > 0 {
                try_push(&mut lay.leaf_start, f.lo)?;
                try_push(&mut lay.leaf_dir, f.dir)?;
                continue;
            }
            if f.level >= self.max_levels {
                crate::bail_usage!(
                    "fileset '{}': the tree would be deeper than paths below {} allow ({} levels): use a larger dirwidth or a shorter path",
                    spec.name,
                    spec.root.display(),
                    self.max_levels
                );
            }
            let children = self.children(spec, rng, count, f.level);
            Self::split_dir(spec, lay, &mut stack, &f, children)?;
        }
        Ok(())
    }

    /// How many subdirectories a directory of `count` entries at `level` gets.
    fn children(&self, spec: &FilesetSpec, rng: &mut Rng, count: u64, level: u64) -> u64 {
        let children = if let Some(d) = self.depth_limit {
            // Fixed depth: the width that spreads `count` items over the remaining levels.
            (count as f64)
                .powf(1.0 / (d - level) as f64)
                .ceil()
                .max(1.0) as u64
        } else if spec.dirgamma > 0.0 {
            let shape = spec.dirgamma / 1000.0;
            (rng.gamma(shape) * self.width / shape).round().max(2.0) as u64
        } else {
            // A full tree: leaves hold `width` items; each subtree below this level holds
            // at most width * split^(levels below) items. cap < count on exit, so there
            // are at least two children and the recursion ends.
            let mut cap = self.width;
            while cap * self.split < count as f64 {
                cap *= self.split;
            }
            (count as f64 / cap).ceil() as u64
        };
        children.clamp(1, count.max(1))
    }

    /// Give directory `f` its subdirectories, its entries shared among them in equal runs,
    /// and queue them for splitting.
    fn split_dir(
        spec: &FilesetSpec,
        lay: &mut SetLayout,
        stack: &mut Vec<Frame>,
        f: &Frame,
        children: u64,
    ) -> Result<()> {
        let count = f.hi - f.lo;
        let per = count.div_ceil(children);
        let first = lay.dirs.len();
        let made = count.div_ceil(per);
        if first as u64 + made >= NO_PARENT as u64 {
            crate::bail_usage!("fileset '{}': too many directories", spec.name);
        }
        for k in 0..made {
            try_push(
                &mut lay.dirs,
                DirNode {
                    parent: f.dir,
                    num: (k + 1) as u32,
                },
            )?;
        }
        // Pushed in reverse so they pop in ascending order: leaf ranges come out sorted.
        for k in (0..made).rev() {
            let lo = f.lo + k * per;
            try_push(
                stack,
                Frame {
                    dir: (first as u64 + k) as u32,
                    lo,
                    hi: (lo + per).min(f.hi),
                    level: f.level + 1,
                },
            )?;
        }
        Ok(())
    }
}
