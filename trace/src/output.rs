//! The one way every rankscale tool writes an output file.
//!
//! An output must never cost the user a file: not the old output when the
//! new one fails half-way (a full disk, a killed job), not one of the
//! command's own inputs (`extrap -o a.trace ... a.trace`), and not a device
//! or FIFO that a path happens to name (renaming a temporary file onto
//! `/dev/null` would replace the device with a regular file). So every
//! writer goes through [`Output`]:
//!
//! - the target must be a regular file or a new path; a directory, a
//!   device, a FIFO or a socket is refused before anything is written;
//! - the target must not be one of the command's inputs, compared after
//!   resolving links (and by device and inode, so a hard link is caught);
//! - the bytes go to a temporary file beside the target, are synced, and
//!   only then renamed onto it, so the target is either the old file or
//!   the whole new one;
//! - on any failure (or when the [`Output`] is dropped unfinished) the
//!   temporary file is removed and the old output is left untouched.
//!
//! A symbolic link as target is followed: the file it names is replaced
//! and the link stays a link.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Why an output could not be written. Every variant names the path the
/// user gave, so that the message says which file was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// The target exists and is not a regular file.
    #[error(
        "{path} is a {kind}, not a regular file: rankscale writes its outputs only to regular files or new paths"
    )]
    NotRegular {
        /// The output path as given.
        path: PathBuf,
        /// What the path is: "directory", "character device", ...
        kind: &'static str,
    },
    /// The target is one of the command's inputs.
    #[error(
        "{path} is also an input of this command ({input}): writing it would destroy the input; choose another output path"
    )]
    IsInput {
        /// The output path as given.
        path: PathBuf,
        /// The input it resolves to, as given.
        input: PathBuf,
    },
    /// The target is a symbolic link that names nothing.
    #[error("{path} is a symbolic link to a path that does not exist")]
    DanglingLink {
        /// The output path as given.
        path: PathBuf,
    },
    /// Creating, writing, syncing or renaming failed.
    #[error("cannot write {path}: {error}")]
    Io {
        /// The output path as given.
        path: PathBuf,
        /// The system's error.
        error: std::io::Error,
    },
}

/// What a file type is called in a refusal.
fn kind_of(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "directory"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_socket() {
        "socket"
    } else {
        "special file"
    }
}

/// Checks that `path` may be written as an output of a command that reads
/// `inputs`, and returns the file the write will replace or create: `path`
/// with its links resolved. Called by [`Output::create`]; call it alone to
/// refuse a bad output before a long run whose writer is another process
/// (`rankscale trace -o`).
pub fn check_target(path: &Path, inputs: &[&Path]) -> Result<PathBuf, OutputError> {
    let io = |error| OutputError::Io {
        path: path.to_path_buf(),
        error,
    };
    let resolved = match std::fs::symlink_metadata(path) {
        Ok(_) => {
            let meta = std::fs::metadata(path).map_err(|error| {
                if error.kind() == std::io::ErrorKind::NotFound {
                    OutputError::DanglingLink {
                        path: path.to_path_buf(),
                    }
                } else {
                    io(error)
                }
            })?;
            if !meta.file_type().is_file() {
                return Err(OutputError::NotRegular {
                    path: path.to_path_buf(),
                    kind: kind_of(meta.file_type()),
                });
            }
            path.canonicalize().map_err(io)?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let name = path.file_name().ok_or_else(|| OutputError::NotRegular {
                path: path.to_path_buf(),
                kind: "directory",
            })?;
            let parent = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            parent.canonicalize().map_err(io)?.join(name)
        }
        Err(e) => return Err(io(e)),
    };
    let identity = std::fs::metadata(&resolved)
        .ok()
        .map(|m| (m.dev(), m.ino()));
    for input in inputs {
        let same_path = input.canonicalize().is_ok_and(|p| p == resolved);
        let same_inode = identity.is_some()
            && std::fs::metadata(input).ok().map(|m| (m.dev(), m.ino())) == identity;
        if same_path || same_inode {
            return Err(OutputError::IsInput {
                path: path.to_path_buf(),
                input: input.to_path_buf(),
            });
        }
    }
    Ok(resolved)
}

/// Distinguishes the temporary files of one process.
static SERIAL: AtomicU64 = AtomicU64::new(0);

/// An output file being written: a temporary file beside the target that
/// becomes the target only at [`Output::commit`]. Dropped without a
/// commit (an error, a panic unwinding), it removes its temporary file and
/// leaves the target as it was.
pub struct Output {
    /// The path the user gave, for messages.
    path: PathBuf,
    /// The file the commit replaces or creates (links resolved).
    target: PathBuf,
    /// The temporary file, removed unless committed.
    tmp: PathBuf,
    /// The open temporary file; `None` once committed.
    file: Option<BufWriter<File>>,
    /// Bytes written so far.
    written: u64,
}

impl Output {
    /// Starts writing `path`, an output of a command that reads `inputs`:
    /// checks the target ([`check_target`]) and creates the temporary
    /// file. Create it before the command's long work, so that a bad
    /// output path is refused at once.
    pub fn create(path: &Path, inputs: &[&Path]) -> Result<Output, OutputError> {
        let target = check_target(path, inputs)?;
        let io = |error| OutputError::Io {
            path: path.to_path_buf(),
            error,
        };
        let dir = target.parent().unwrap_or(Path::new("/"));
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(
            ".{name}.{}-{}.partial",
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::Relaxed)
        ));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(io)?;
        // A replaced file keeps its permissions (a shared trace stays
        // group-readable).
        if let Ok(old) = std::fs::metadata(&target) {
            let _ = file.set_permissions(old.permissions());
        }
        Ok(Output {
            path: path.to_path_buf(),
            target,
            tmp,
            file: Some(BufWriter::new(file)),
            written: 0,
        })
    }

    /// The output path as the user gave it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes the written bytes the target: flushes, syncs to disk (so that
    /// a crash right after cannot leave an empty file under the target's
    /// name), then renames. Returns the bytes written.
    pub fn commit(mut self) -> Result<u64, OutputError> {
        let path = self.path.clone();
        let io = |error| OutputError::Io {
            path: path.clone(),
            error,
        };
        let Some(w) = self.file.take() else {
            return Ok(self.written);
        };
        let file = w.into_inner().map_err(|e| io(e.into_error()))?;
        file.sync_all().map_err(io)?;
        drop(file);
        std::fs::rename(&self.tmp, &self.target).map_err(io)?;
        // Committed: nothing to remove any more.
        self.tmp = PathBuf::new();
        Ok(self.written)
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let w = self
            .file
            .as_mut()
            .ok_or_else(|| std::io::Error::other("output already committed"))?;
        let n = w.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.file.as_mut() {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            self.file = None;
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Writes `bytes` as the output `path` of a command that reads `inputs`,
/// all or nothing (see [`Output`]).
pub fn write_file(path: &Path, bytes: &[u8], inputs: &[&Path]) -> Result<u64, OutputError> {
    let mut out = Output::create(path, inputs)?;
    out.write_all(bytes).map_err(|error| OutputError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    out.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("rankscale-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".partial"))
            .collect()
    }

    #[test]
    fn a_new_file_appears_whole_and_an_old_one_is_replaced() {
        let d = scratch("new");
        let p = d.join("a.out");
        assert_eq!(write_file(&p, b"first", &[]).unwrap(), 5);
        assert_eq!(std::fs::read(&p).unwrap(), b"first");
        write_file(&p, b"second", &[]).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        assert!(leftovers(&d).is_empty());
    }

    #[test]
    fn an_unfinished_output_leaves_the_old_file_and_no_temporary() {
        let d = scratch("drop");
        let p = d.join("a.out");
        std::fs::write(&p, b"old").unwrap();
        let mut out = Output::create(&p, &[]).unwrap();
        out.write_all(b"half of the new").unwrap();
        out.flush().unwrap();
        assert_eq!(
            leftovers(&d).len(),
            1,
            "the temporary file exists while writing"
        );
        drop(out);
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        assert!(leftovers(&d).is_empty());
    }

    #[test]
    fn an_input_is_refused_through_a_link_and_a_hard_link() {
        let d = scratch("input");
        let input = d.join("in.trace");
        std::fs::write(&input, b"precious").unwrap();
        let soft = d.join("soft.trace");
        std::os::unix::fs::symlink(&input, &soft).unwrap();
        let hard = d.join("hard.trace");
        std::fs::hard_link(&input, &hard).unwrap();
        let dotted = d.join(".").join("in.trace");
        for out in [&input, &soft, &hard, &dotted] {
            let e = write_file(out, b"x", &[&input]).unwrap_err();
            assert!(matches!(e, OutputError::IsInput { .. }), "{out:?}: {e}");
            assert!(e.to_string().contains(&out.display().to_string()), "{e}");
        }
        assert_eq!(std::fs::read(&input).unwrap(), b"precious");
        assert!(leftovers(&d).is_empty());
    }

    #[test]
    fn a_link_to_a_file_stays_a_link() {
        let d = scratch("link");
        let real = d.join("real.out");
        std::fs::write(&real, b"old").unwrap();
        let link = d.join("link.out");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_file(&link, b"new", &[]).unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
    }

    #[test]
    fn a_directory_and_a_fifo_are_refused() {
        let d = scratch("special");
        let e = write_file(&d, b"x", &[]).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        let fifo = d.join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let e = write_file(&fifo, b"x", &[]).unwrap_err();
            assert!(e.to_string().contains("is a FIFO"), "{e}");
            assert!(
                std::fs::symlink_metadata(&fifo)
                    .unwrap()
                    .file_type()
                    .is_fifo()
            );
        }
        let dangling = d.join("dangling");
        std::os::unix::fs::symlink(d.join("nothing"), &dangling).unwrap();
        let e = write_file(&dangling, b"x", &[]).unwrap_err();
        assert!(matches!(e, OutputError::DanglingLink { .. }), "{e}");
    }

    #[test]
    fn a_missing_directory_is_an_error_naming_the_path() {
        let d = scratch("missing");
        let p = d.join("no/such/dir/a.out");
        let e = write_file(&p, b"x", &[]).unwrap_err();
        assert!(e.to_string().contains(&p.display().to_string()), "{e}");
    }
}
