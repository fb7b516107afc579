//! Reading and writing [`Record`]s: CSV without a header, one record per
//! line, a kind of its own in each line's first field.

use std::fs::File;
use std::io;
use std::path::Path;

use csv::{DeserializeError, StringRecord};
use serde::de::{DeserializeOwned, IgnoredAny};

use super::{Record, FORMAT};

/// What went wrong reading or writing records.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file that cannot be opened.
    #[error("{path}: {source}")]
    Open {
        /// The file.
        path: String,
        /// Why.
        source: io::Error,
    },
    /// Input that is not CSV (not UTF-8, or unreadable), or output that
    /// cannot be written.
    #[error("{origin}: {source}")]
    Csv {
        /// The file read, or what was written.
        origin: String,
        /// The CSV reader's or writer's error.
        source: csv::Error,
    },
    /// A line that is not a record of this format.
    #[error("{origin}, line {line}: {what}: {text}")]
    Malformed {
        /// The file read.
        origin: String,
        /// The line's number, from 1.
        line: u64,
        /// What is wrong with it.
        what: String,
        /// Its fields, as read.
        text: String,
    },
    /// [`Record::parse`] of text holding no record or more than one.
    #[error("{records} records where one was expected")]
    NotOneRecord {
        /// How many records the text held.
        records: usize,
    },
}

/// Every record of `input`, in order; `origin` names it in errors.
pub fn read(input: impl io::Read, origin: &str) -> Result<Vec<Record>, Error> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .comment(Some(b'#'))
        .trim(csv::Trim::All)
        .from_reader(input);
    let mut records = Vec::new();
    let mut rec = StringRecord::new();
    loop {
        match reader.read_record(&mut rec) {
            Ok(true) => {}
            Ok(false) => return Ok(records),
            Err(source) => {
                return Err(Error::Csv {
                    origin: origin.to_string(),
                    source,
                })
            }
        }
        let r = from_fields(&rec).map_err(|what| Error::Malformed {
            origin: origin.to_string(),
            line: rec.position().map_or(0, csv::Position::line),
            what,
            text: rec.iter().collect::<Vec<_>>().join(","),
        })?;
        records.push(r);
    }
}

/// Every record of the file at `path`.
pub fn read_file(path: &Path) -> Result<Vec<Record>, Error> {
    let origin = path.display().to_string();
    let file = File::open(path).map_err(|source| Error::Open {
        path: origin.clone(),
        source,
    })?;
    read(file, &origin)
}

/// The record of one line's fields.
fn from_fields(rec: &StringRecord) -> Result<Record, String> {
    let kind = rec.get(0).unwrap_or_default();
    let Some(i) = Record::KINDS.iter().position(|k| k.0 == kind) else {
        let known: Vec<&str> = Record::KINDS.iter().map(|k| k.0).collect();
        return Err(format!(
            "unknown record kind {kind:?} (format {FORMAT} has {})",
            known.join(", ")
        ));
    };
    let (_, counts) = Record::KINDS[i];
    let n = rec.len() - 1;
    if !counts.contains(&n) {
        let want = match counts {
            [.., before, last] => {
                let head: Vec<String> = counts[..counts.len() - 2]
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                let mut w = head.join(", ");
                if !w.is_empty() {
                    w.push_str(", ");
                }
                format!("{w}{before} or {last}")
            }
            _ => counts.iter().map(ToString::to_string).collect(),
        };
        return Err(format!("{n} fields after {kind}, not {want}"));
    }
    // The order of Record::KINDS.
    match i {
        0 => fields(rec).map(Record::Mempool),
        1 => fields(rec).map(Record::Skipped),
        2 => fields(rec).map(Record::E2e),
        3 => fields(rec).map(Record::Autotest),
        _ => fields(rec).map(Record::Line),
    }
}

/// The fields after the kind, as a `T`.
fn fields<T: DeserializeOwned>(rec: &StringRecord) -> Result<T, String> {
    match rec.deserialize::<(IgnoredAny, T)>(None) {
        Ok((_, t)) => Ok(t),
        Err(e) => Err(match e.kind() {
            csv::ErrorKind::Deserialize { err, .. } => describe(rec, err),
            _ => e.to_string(),
        }),
    }
}

/// A field that does not read as its type, by its number (the kind is
/// field 1) and text.
fn describe(rec: &StringRecord, err: &DeserializeError) -> String {
    match err.field().and_then(|f| Some((f, rec.get(f as usize)?))) {
        Some((f, text)) => format!("field {} ({text:?}): {}", f + 1, err.kind()),
        None => err.kind().to_string(),
    }
}

/// Writes records in this format, and comment lines.
pub struct Writer<W: io::Write> {
    csv: csv::Writer<W>,
}

impl<W: io::Write> Writer<W> {
    /// A writer whose output starts with the `# format=` line and then
    /// `comments`, each line of them a comment line (`# ` before it).
    pub fn new(mut out: W, comments: &[&str]) -> Result<Writer<W>, Error> {
        let format = format!("format={FORMAT}");
        for line in std::iter::once(format.as_str()).chain(comments.iter().flat_map(|c| c.lines()))
        {
            writeln!(out, "# {line}").map_err(|e| write_error(e.into()))?;
        }
        Ok(Writer {
            csv: csv::WriterBuilder::new()
                .has_headers(false)
                .flexible(true)
                .from_writer(out),
        })
    }

    /// Writes one record.
    pub fn write(&mut self, r: &Record) -> Result<(), Error> {
        self.csv.serialize(r).map_err(write_error)
    }

    /// Writes what is buffered through to the output.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.csv.flush().map_err(|e| write_error(e.into()))
    }

    /// The output, everything written.
    pub fn into_inner(self) -> Result<W, Error> {
        self.csv
            .into_inner()
            .map_err(|e| write_error(e.into_error().into()))
    }
}

fn write_error(source: csv::Error) -> Error {
    Error::Csv {
        origin: "writing records".into(),
        source,
    }
}
