//! Targets that the sibling runs of one group use at the same time (fio's jobs of one group
//! naming one file, started together by [`super::together`]). The group holds such a target
//! once: the first sibling to prepare it opens (or creates) and locks it as any run does, and
//! the others take the group's descriptor (a duplicate: the same open file, so the same lock)
//! instead of being refused by that lock. Another fsbench process is still refused.
//!
//! The siblings that share a target prepare one at a time ([`GroupTargets::turn`]), each
//! checking and laying out the file through the group's descriptor, so no sibling finds it half
//! laid out, and all of them have laid out what they need before any start gate opens (the
//! gates open only when every run is prepared). Every sibling works on the inode the group's
//! hold checked: its workers open the path without following a link and compare the inode.
//!
//! The file is removed when the last sibling that took it releases it (a countdown of its
//! users), unless one of them keeps it (`--keep`, fio's `unlink=0`): each run says whether it
//! would remove it, and any "keep" keeps it.

use super::mark::FileId;
use anyhow::Result;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The targets several runs of one group name, held once for the group.
pub(crate) struct GroupTargets {
    shared: Vec<Arc<SharedTarget>>,
    /// Held by a run while it prepares (and, on failure, releases) its targets, when it names
    /// a shared one: the siblings lay out a shared file one after the other.
    preparing: Mutex<()>,
    /// Set when a run of the group could not start: the runs still waiting for their turn
    /// are called off without touching the files.
    called_off: AtomicBool,
}

impl GroupTargets {
    /// The targets that more than one of `jobs` names (None: no run shares a target).
    pub(crate) fn of<'a>(jobs: impl Iterator<Item = &'a crate::job::Job>) -> Option<GroupTargets> {
        let mut seen: Vec<(&Path, usize)> = Vec::new();
        for job in jobs {
            let mut own: Vec<&Path> = job.targets.iter().map(PathBuf::as_path).collect();
            own.sort();
            own.dedup();
            for p in own {
                match seen.iter_mut().find(|(q, _)| *q == p) {
                    Some(e) => e.1 += 1,
                    None => seen.push((p, 1)),
                }
            }
        }
        let shared: Vec<Arc<SharedTarget>> = seen
            .into_iter()
            .filter(|(_, n)| *n > 1)
            .map(|(p, _)| {
                Arc::new(SharedTarget {
                    path: p.to_path_buf(),
                    state: Mutex::new(State::default()),
                })
            })
            .collect();
        (!shared.is_empty()).then(|| GroupTargets {
            shared,
            preparing: Mutex::new(()),
            called_off: AtomicBool::new(false),
        })
    }

    /// The group's hold on `path`, when several runs name it.
    pub(crate) fn find(&self, path: &Path) -> Option<&Arc<SharedTarget>> {
        self.shared.iter().find(|s| s.path == path)
    }

    /// Another run of the group could not start: the runs not yet prepared stop waiting.
    pub(crate) fn call_off(&self) {
        self.called_off.store(true, Ordering::Relaxed);
    }

    /// The turn of a run that names a shared target to prepare its targets (None: it names
    /// none and prepares at once). Refused when the group has been called off meanwhile.
    pub(crate) fn turn(&self, job: &crate::job::Job) -> Result<Option<MutexGuard<'_, ()>>> {
        if !job.targets.iter().any(|t| self.find(t).is_some()) {
            return Ok(None);
        }
        let guard = self.preparing.lock().unwrap_or_else(|e| e.into_inner());
        if self.called_off.load(Ordering::Relaxed) {
            return Err(called_off());
        }
        Ok(Some(guard))
    }
}

/// The refusal of a run whose group was called off before it prepared (the words the group's
/// start decision recognises).
fn called_off() -> anyhow::Error {
    crate::usage!(
        "the run was called off before it started: another job of its group could not start"
    )
    .into()
}

/// One target several runs of a group use.
pub(crate) struct SharedTarget {
    pub path: PathBuf,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The group's descriptor, opened and locked by the first run that prepared the target.
    hold: Option<Hold>,
    /// Runs that took the target and have not released it.
    users: usize,
    /// A run that released it wants it kept.
    keep: bool,
    /// The last user released it: the group is done with it.
    closed: bool,
}

struct Hold {
    file: File,
    id: FileId,
    created: bool,
}

impl SharedTarget {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Take the group's hold, when a sibling already opened the target: a duplicate of its
    /// descriptor, its identity, and whether the group created it. None: this run is the
    /// first, opens the target itself and hands it over with [`SharedTarget::adopt`].
    pub(crate) fn take(&self) -> Result<Option<(File, FileId, bool)>> {
        let mut s = self.state();
        if s.closed {
            // Only after a sibling failed: the group never started.
            return Err(called_off());
        }
        let Some(h) = &s.hold else {
            return Ok(None);
        };
        let file = h.file.try_clone()?;
        let taken = (file, h.id, h.created);
        s.users += 1;
        Ok(Some(taken))
    }

    /// Make the descriptor this run opened and locked the group's hold.
    pub(crate) fn adopt(&self, file: &File, id: FileId, created: bool) -> Result<()> {
        let file = file.try_clone()?;
        let mut s = self.state();
        s.hold = Some(Hold { file, id, created });
        s.users += 1;
        Ok(())
    }

    /// A run is done with the target; `remove` is whether it would remove it. The last user
    /// removes what the group created, unless a run wanted it kept; the lock goes when the
    /// last duplicate of the descriptor is closed (the caller's, after this).
    pub(crate) fn release(&self, remove: bool, notes: &mut Vec<String>) {
        let mut s = self.state();
        s.users = s.users.saturating_sub(1);
        s.keep |= !remove;
        if s.users > 0 {
            return;
        }
        s.closed = true;
        let Some(h) = s.hold.take() else {
            return;
        };
        if s.keep {
            if h.created {
                // Kept on request: no later run is to remove it as a killed run's.
                crate::leftover::clear_run(&h.file);
            }
            return;
        }
        super::target::remove_if_same(&self.path, h.id, notes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{Access, Job};

    fn job(path: &Path, access: Access, size: u64) -> Job {
        Job {
            targets: vec![path.to_path_buf()],
            access,
            file_size: Some(size),
            block_size: 4096,
            ..Default::default()
        }
    }

    #[test]
    fn siblings_hold_one_file_which_the_last_of_them_removes() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t");
        let writer = job(&t, Access::Write, 64 << 10);
        let reader = job(&t, Access::Read, 128 << 10);
        let group = GroupTargets::of([&writer, &reader].into_iter()).expect("one shared file");
        let prep =
            |j: &Job| crate::runner::target::prepare_watched(j, None, None, Some(&group)).unwrap();
        let (_, mut w) = prep(&writer);
        let (plan, mut r) = prep(&reader);
        // One inode, laid out as far as the reader needs, created by the group.
        assert_eq!(w.ids(), r.ids());
        assert!(plan.targets[0].created);
        assert_eq!(std::fs::metadata(&t).unwrap().len(), 128 << 10);
        // Another run (as another process would) is refused while the group holds it.
        let e = crate::runner::target::prepare(&reader).err().expect("held");
        assert!(
            e.to_string().contains("in use by another fsbench run"),
            "{e}"
        );
        w.finish();
        assert!(t.exists(), "the reader still uses it");
        r.finish();
        assert!(!t.exists(), "removed after the last");
    }

    #[test]
    fn one_sibling_that_keeps_the_file_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t");
        let mut writer = job(&t, Access::Write, 64 << 10);
        writer.keep = true;
        let reader = job(&t, Access::Read, 64 << 10);
        let group = GroupTargets::of([&writer, &reader].into_iter()).unwrap();
        let prep =
            |j: &Job| crate::runner::target::prepare_watched(j, None, None, Some(&group)).unwrap();
        let (_, mut r) = prep(&reader);
        let (_, mut w) = prep(&writer);
        r.finish();
        w.finish();
        assert!(t.exists());
        // Kept, and no longer recorded as a run's: a later run does not take it over.
        assert!(crate::leftover::left_by_dead_run(&t).is_none());
    }
}
