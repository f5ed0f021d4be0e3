//! Opening and reading files that input names, without trusting them to
//! be files: a FIFO, a device or a socket where a team file, a run file or
//! a task file should be is refused before anything is read (a FIFO would
//! block the reader forever, `/dev/zero` would fill memory), and every
//! read stops at a cap, counted while reading, whatever the source.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

/// Larger than any team file (an agent, a soul, `team.yaml`) a person
/// writes.
pub(crate) const MAX_TEAM_FILE: u64 = 16 * 1024 * 1024;
/// Larger than any `run.json`, `chat.json` or memory file boardroom writes.
pub(crate) const MAX_RECORD_FILE: u64 = 1024 * 1024 * 1024;
/// Larger than any log (`turns.jsonl`, `events.jsonl`, `journal.jsonl`)
/// a run could read back into memory.
pub(crate) const MAX_LOG_FILE: u64 = 4 * 1024 * 1024 * 1024;

/// What kind of thing a non-regular file is, for messages.
fn kind(ft: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if ft.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if ft.is_char_device() {
            return "a character device";
        }
        if ft.is_block_device() {
            return "a block device";
        }
        if ft.is_socket() {
            return "a socket";
        }
    }
    if ft.is_dir() {
        return "a directory";
    }
    "not a regular file"
}

fn not_a_file(ft: std::fs::FileType) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("is {}, not a regular file; refused", kind(ft)),
    )
}

/// Opens `path` with `options`, refusing anything but a regular file
/// (symlinks followed) before it is read or written. On Unix the open
/// itself does not wait (`O_NONBLOCK`), so a FIFO without a writer is
/// refused rather than blocking; the type is checked on the open handle,
/// so a swap after a check cannot slip through.
///
/// # Errors
///
/// The open's own error, or [`io::ErrorKind::InvalidInput`] naming what
/// the file is (`is a named pipe (FIFO), not a regular file; refused`).
pub(crate) fn open_regular(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    open_regular_with_meta(path, options).map(|(file, _)| file)
}

/// As [`open_regular`], with the open handle's metadata (one `fstat` for
/// the check and the caller's size hint: a team of a thousand agents is
/// two thousand files, and each system call shows).
fn open_regular_with_meta(
    path: &Path,
    options: &mut OpenOptions,
) -> io::Result<(File, std::fs::Metadata)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        // A device is opened before it is refused: never as the session's
        // controlling terminal.
        let flags = (rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits();
        options.custom_flags(i32::try_from(flags).unwrap_or(0));
    }
    let file = match options.open(path) {
        Ok(file) => file,
        // A socket cannot be opened at all (ENXIO), nor a FIFO for writing
        // without a reader: say what it is instead.
        Err(e) => {
            return Err(match std::fs::metadata(path) {
                Ok(meta) if !meta.is_file() => not_a_file(meta.file_type()),
                _ => e,
            });
        }
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_a_file(meta.file_type()));
    }
    Ok((file, meta))
}

/// Reads all of `path`, at most `cap` bytes, counted while reading (a file
/// that grows past its stat size is still stopped).
///
/// # Errors
///
/// Those of [`open_regular`], any read error,
/// and [`io::ErrorKind::FileTooLarge`] past `cap` (`is larger than 16 MiB`).
pub(crate) fn read_capped(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    read_capped_from(path, 0, cap)
}

/// As [`read_capped`], from byte `from` on (nothing past the end).
pub(crate) fn read_capped_from(path: &Path, from: u64, cap: u64) -> io::Result<Vec<u8>> {
    use std::io::{Seek as _, SeekFrom};
    let (mut file, meta) = open_regular_with_meta(path, OpenOptions::new().read(true))?;
    if from > 0 {
        file.seek(SeekFrom::Start(from))?;
    }
    let hint = meta.len().saturating_sub(from).min(cap);
    let mut bytes = Vec::with_capacity(usize::try_from(hint).unwrap_or(0));
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(too_large(cap));
    }
    Ok(bytes)
}

/// The error for a file past its cap, in the unit a person reads.
pub(crate) fn too_large(cap: u64) -> io::Error {
    let mib = cap / (1024 * 1024);
    let shown = if mib >= 1024 && mib.is_multiple_of(1024) {
        format!("{} GiB", mib / 1024)
    } else {
        format!("{mib} MiB")
    };
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!("is larger than {shown}; refused"),
    )
}

/// As [`read_capped`] for text, with the read error as is and a UTF-8
/// error made lossy (run files are written by boardroom as UTF-8).
pub(crate) fn read_text_lossy(path: &Path, cap: u64) -> io::Result<String> {
    let bytes = read_capped(path, cap)?;
    Ok(match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_without_blocking_and_a_cap_counts_bytes_read() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("team.yaml");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let err = read_capped(&fifo, MAX_TEAM_FILE).unwrap_err();
        assert_eq!(
            err.to_string(),
            "is a named pipe (FIFO), not a regular file; refused"
        );
        let err = read_capped(Path::new("/dev/zero"), 1024).unwrap_err();
        assert_eq!(
            err.to_string(),
            "is a character device, not a regular file; refused"
        );
        let file = tmp.path().join("a.md");
        std::fs::write(&file, vec![b'x'; 2 * 1024 * 1024]).unwrap();
        assert_eq!(
            read_capped(&file, 1024 * 1024).unwrap_err().to_string(),
            "is larger than 1 MiB; refused"
        );
        assert_eq!(read_capped(&file, 4 << 20).unwrap().len(), 2 << 20);
    }
}
