//! Developer tools used by the interoperability suite.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Subcommand;
use ferrite_chunkenc::{
    AppendOutcome, FloatHistogramChunk, FloatHistogramStChunk, HistogramChunk, HistogramStChunk,
    Xor2Chunk, XorChunk,
};
use ferrite_model::histogram_record;
use ferrite_model::{FloatHistogram, Histogram};

#[derive(Subcommand)]
pub enum DebugCommand {
    /// Encodes samples as XOR chunks and prints each chunk as hex.
    /// FILE: one `<t> <float64 bits as 16 hex digits>` per line, chunks
    /// separated by an empty line.
    XorEncode { file: PathBuf },
    /// Encodes samples as chunks of the given encoding and prints every
    /// chunk as hex, one a line, each sequence's chunks followed by an
    /// empty line. FILE: one sample a line, sequences separated by an
    /// empty line: `<st> <t> <float64 bits as 16 hex digits>` for xor2,
    /// `<st> <t> <H|F record>` for the histogram encodings (records as in
    /// interop/cmd/promhistchunks; st is ignored by histogram and
    /// floathistogram). A sequence starts with a fresh chunk; samples are
    /// appended as Prometheus' head does (appends that cut or recode a
    /// chunk included).
    #[command(hide = true)]
    ChunkEncode {
        /// xor2, histogram, floathistogram, histogram-st or floathistogram-st.
        #[arg(long)]
        encoding: String,
        file: PathBuf,
    },
    /// Block index tools.
    #[command(subcommand)]
    Index(super::debug_index::IndexCommand),
    /// Block chunk segment, meta.json and tombstones tools.
    #[command(subcommand)]
    BlockFiles(super::debug_block::BlockFilesCommand),
    /// Compaction planning and retention (cross-checks with Prometheus).
    #[command(subcommand)]
    Plan(super::debug_plan::PlanCommand),
    /// Block benchmarks (`bench-compact`, `bench-merge`, `bench-open`), see scripts/bench-blocks.
    #[command(flatten)]
    Bench(super::debug_bench::BenchCommand),
}

pub fn run(c: DebugCommand) -> Result<()> {
    match c {
        DebugCommand::XorEncode { file } => xor_encode(&file),
        DebugCommand::ChunkEncode { encoding, file } => chunk_encode(&encoding, &file),
        DebugCommand::Index(c) => super::debug_index::run(c),
        DebugCommand::BlockFiles(c) => super::debug_block::run(c),
        DebugCommand::Plan(c) => super::debug_plan::run(c),
        DebugCommand::Bench(c) => super::debug_bench::run(c),
    }
}

fn xor_encode(file: &std::path::Path) -> Result<()> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let mut out = String::new();
    let mut chunk = XorChunk::new();
    let flush = |chunk: &mut XorChunk, out: &mut String| {
        if chunk.num_samples() > 0 {
            for b in chunk.bytes() {
                let _ = write!(out, "{b:02x}");
            }
            out.push('\n');
        }
        *chunk = XorChunk::new();
    };
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            flush(&mut chunk, &mut out);
            continue;
        }
        let mut parts = line.split_whitespace();
        let (Some(t), Some(v), None) = (parts.next(), parts.next(), parts.next()) else {
            bail!("line {}: want `<t> <hex bits>`", n + 1);
        };
        let t: i64 = t
            .parse()
            .with_context(|| format!("line {}: timestamp", n + 1))?;
        let bits =
            u64::from_str_radix(v, 16).with_context(|| format!("line {}: value bits", n + 1))?;
        chunk.append(t, f64::from_bits(bits));
    }
    flush(&mut chunk, &mut out);
    print!("{out}");
    Ok(())
}

fn chunk_encode(encoding: &str, file: &std::path::Path) -> Result<()> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let mut out = String::new();
    for sequence in text.split("\n\n") {
        let lines: Vec<(usize, &str)> = sequence
            .lines()
            .map(str::trim)
            .enumerate()
            .filter(|(_, l)| !l.is_empty())
            .collect();
        if lines.is_empty() {
            continue;
        }
        let chunks = match encoding {
            "xor2" => encode_xor2(&lines)?,
            "histogram" => encode_histograms::<HistogramChunk>(&lines)?,
            "floathistogram" => encode_histograms::<FloatHistogramChunk>(&lines)?,
            "histogram-st" => encode_histograms::<HistogramStChunk>(&lines)?,
            "floathistogram-st" => encode_histograms::<FloatHistogramStChunk>(&lines)?,
            other => bail!("unknown encoding {other:?}"),
        };
        for c in chunks {
            for b in c {
                let _ = write!(out, "{b:02x}");
            }
            out.push('\n');
        }
        out.push('\n');
    }
    print!("{out}");
    Ok(())
}

/// Splits `<st> <t> <rest>`.
fn st_t_rest(line: &str) -> Result<(i64, i64, &str)> {
    let mut parts = line.splitn(3, ' ');
    let (Some(st), Some(t), Some(rest)) = (parts.next(), parts.next(), parts.next()) else {
        bail!("want `<st> <t> <value>`");
    };
    Ok((st.parse().context("st")?, t.parse().context("t")?, rest))
}

fn encode_xor2(lines: &[(usize, &str)]) -> Result<Vec<Vec<u8>>> {
    let mut chunk = Xor2Chunk::new();
    for &(n, line) in lines {
        let (st, t, v) = st_t_rest(line).with_context(|| format!("sample {}", n + 1))?;
        let bits =
            u64::from_str_radix(v, 16).with_context(|| format!("sample {}: value bits", n + 1))?;
        chunk.append(st, t, f64::from_bits(bits));
    }
    Ok(vec![chunk.into_bytes()])
}

/// The histogram chunk kinds `chunk-encode` drives alike.
trait HistogramKind: Sized {
    type H;
    fn fresh() -> Self;
    fn parse(record: &str) -> Result<Self::H>;
    fn push(&mut self, st: i64, t: i64, h: &Self::H) -> Result<AppendOutcome<Self>>;
    fn chunk_bytes(&self) -> Vec<u8>;
}

macro_rules! histogram_kind {
    ($chunk:ty, $h:ty, $parse:ident, |$c:ident, $st:ident, $t:ident, $hist:ident| $append:expr) => {
        impl HistogramKind for $chunk {
            type H = $h;
            fn fresh() -> Self {
                <$chunk>::new()
            }
            fn parse(record: &str) -> Result<$h> {
                $parse(record)
            }
            fn push(&mut self, $st: i64, $t: i64, $hist: &$h) -> Result<AppendOutcome<Self>> {
                let $c = self;
                Ok($append?)
            }
            fn chunk_bytes(&self) -> Vec<u8> {
                self.bytes().to_vec()
            }
        }
    };
}

histogram_kind!(
    HistogramChunk,
    Histogram,
    parse_int_record,
    |c, _st, t, h| c.append(None, t, h)
);
histogram_kind!(
    FloatHistogramChunk,
    FloatHistogram,
    parse_float_record,
    |c, _st, t, h| c.append(None, t, h)
);
histogram_kind!(
    HistogramStChunk,
    Histogram,
    parse_int_record,
    |c, st, t, h| c.append(None, st, t, h)
);
histogram_kind!(
    FloatHistogramStChunk,
    FloatHistogram,
    parse_float_record,
    |c, st, t, h| c.append(None, st, t, h)
);

/// Appends a sequence as the head does: a returned chunk replaces the
/// current one (recoded) or follows it (new chunk).
fn encode_histograms<C: HistogramKind>(lines: &[(usize, &str)]) -> Result<Vec<Vec<u8>>> {
    let mut done = Vec::new();
    let mut cur = C::fresh();
    for &(n, line) in lines {
        let (st, t, record) = st_t_rest(line).with_context(|| format!("sample {}", n + 1))?;
        let h = C::parse(record).with_context(|| format!("sample {}", n + 1))?;
        match cur
            .push(st, t, &h)
            .with_context(|| format!("sample {}", n + 1))?
        {
            AppendOutcome::Appended | AppendOutcome::Recoded => {}
            AppendOutcome::NewChunk(next) => done.push(std::mem::replace(&mut cur, next)),
        }
    }
    done.push(cur);
    Ok(done.iter().map(C::chunk_bytes).collect())
}

/// An `H` record (ferrite-model's histogram text form).
fn parse_int_record(record: &str) -> Result<Histogram> {
    Ok(histogram_record::parse_int_record(record)?)
}

/// An `F` record.
fn parse_float_record(record: &str) -> Result<FloatHistogram> {
    Ok(histogram_record::parse_float_record(record)?)
}
