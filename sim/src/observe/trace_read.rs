//! Reading traces written by [`crate::observe::trace`], plain or gzip-compressed (told apart by
//! the file's first bytes): events are handed to a callback one at a time as the file is parsed,
//! so a large trace is never held in memory; `otherData` (the run's summary) comes back whole.

use crate::observe::trace::cycles_of;
use flate2::read::MultiGzDecoder;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// One trace event, as `sim stalls` and `sim report` need it; `ts` and `dur` in cycles.
#[derive(Debug, Deserialize)]
pub struct TraceEvent {
    pub name: String,
    #[serde(default)]
    pub cat: String,
    pub ph: String,
    #[serde(default, deserialize_with = "cycles")]
    pub ts: u64,
    #[serde(default, deserialize_with = "some_cycles")]
    pub dur: Option<u64>,
    #[serde(default)]
    pub pid: u32,
    #[serde(default)]
    pub tid: u32,
    /// Pairs an async slice's `b` and `e`.
    #[serde(default)]
    pub id: Option<u64>,
    #[serde(default)]
    pub args: Value,
}

/// A time written in microseconds, one cycle a nanosecond, as cycles.
fn cycles<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    f64::deserialize(d).map(cycles_of)
}

fn some_cycles<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    cycles(d).map(Some)
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    #[error("{0}: not a trace written by sim: {1}")]
    Format(String, serde_json::Error),
    #[error("{0}: the trace has no otherData (was it written by sim, and completely?)")]
    NoSummary(String),
}

struct Events<'f, F>(&'f mut F);

impl<'de, F: FnMut(TraceEvent)> DeserializeSeed<'de> for Events<'_, F> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, F: FnMut(TraceEvent)> Visitor<'de> for Events<'_, F> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of trace events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(e) = seq.next_element::<TraceEvent>()? {
            (self.0)(e);
        }
        Ok(())
    }
}

struct Trace<'f, F>(&'f mut F);

impl<'de, F: FnMut(TraceEvent)> Visitor<'de> for Trace<'_, F> {
    type Value = Option<Value>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Chrome trace object with traceEvents and otherData")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Value>, A::Error> {
        let mut other = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "traceEvents" => map.next_value_seed(Events(&mut *self.0))?,
                "otherData" => other = Some(map.next_value::<Value>()?),
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        Ok(other)
    }
}

/// Streams the events of the trace at `path` into `on_event` and returns its `otherData`.
pub fn read(path: &Path, mut on_event: impl FnMut(TraceEvent)) -> Result<Value, ReadError> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| ReadError::Io(name.clone(), e))?;
    let mut file = BufReader::new(file);
    let head = file
        .fill_buf()
        .map_err(|e| ReadError::Io(name.clone(), e))?;
    // gzip's magic number; JSON text never starts with it.
    let reader: Box<dyn Read> = if head.starts_with(&[0x1f, 0x8b]) {
        Box::new(BufReader::new(MultiGzDecoder::new(file)))
    } else {
        Box::new(file)
    };
    let mut de = serde_json::Deserializer::from_reader(reader);
    let other = de
        .deserialize_map(Trace(&mut on_event))
        .map_err(|e| ReadError::Format(name.clone(), e))?;
    other.ok_or(ReadError::NoSummary(name))
}
