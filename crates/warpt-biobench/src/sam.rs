//! SAM output of the mapper: the header (`@HD`, one `@SQ` per contig,
//! `@PG`) and one record per read, as the SAM specification v1.6 lays
//! them out. Hand-written text (a few `write!`s; noodles-sam's record
//! builder would add a heavy dependency for the same lines), checked by
//! `samtools` in the tests.

use std::io::{self, Write};

use crate::dataset::Genome;
use crate::mapper::{Mapped, Placement};
use crate::reads::Read;

const PAIRED: u16 = 0x1;
const PROPER: u16 = 0x2;
const UNMAPPED: u16 = 0x4;
const MATE_UNMAPPED: u16 = 0x8;
const REVERSE: u16 = 0x10;
const MATE_REVERSE: u16 = 0x20;
const FIRST: u16 = 0x40;
const SECOND: u16 = 0x80;

/// Writes the header for `genome`.
pub fn header(out: &mut impl Write, genome: &Genome, command: &str) -> io::Result<()> {
    writeln!(out, "@HD\tVN:1.6\tSO:unsorted")?;
    for (i, (name, _)) in genome.contigs.iter().enumerate() {
        writeln!(out, "@SQ\tSN:{name}\tLN:{}", genome.contig_len(i))?;
    }
    writeln!(
        out,
        "@PG\tID:warpt\tPN:warpt\tVN:{}\tCL:{command}",
        env!("CARGO_PKG_VERSION")
    )
}

/// The read's name as SAM wants it: up to the first blank, without a
/// `/1` or `/2` mate suffix.
fn qname(name: &str) -> &str {
    let name = name.split_whitespace().next().unwrap_or("*");
    name.strip_suffix("/1")
        .or_else(|| name.strip_suffix("/2"))
        .unwrap_or(name)
}

/// Writes the records of one pair (or of one read when `mates[1]` is
/// `None`).
pub fn write_pair(
    out: &mut impl Write,
    genome: &Genome,
    reads: [Option<&Read>; 2],
    mapped: &Mapped,
) -> io::Result<()> {
    let paired = reads[1].is_some();
    for (mate, read) in reads.iter().enumerate() {
        let Some(read) = read else { continue };
        let this = mapped.mates[mate].as_ref();
        let other = if paired {
            mapped.mates[1 - mate].as_ref()
        } else {
            None
        };
        let mut flag = 0u16;
        if paired {
            flag |= PAIRED | if mate == 0 { FIRST } else { SECOND };
            if mapped.proper {
                flag |= PROPER;
            }
            match other {
                None => flag |= MATE_UNMAPPED,
                Some(o) if o.reverse => flag |= MATE_REVERSE,
                Some(_) => {}
            }
        }
        // An unmapped read with a mapped mate sits at its mate's place.
        let at = this.or(other);
        if this.is_none() {
            flag |= UNMAPPED;
        }
        if this.is_some_and(|p| p.reverse) {
            flag |= REVERSE;
        }
        let (rname, pos) = at.map_or(("*", 0), |p| locate(genome, p));
        let (rnext, pnext) = match (paired, other.or(this)) {
            (true, Some(p)) => {
                let (name, pos) = locate(genome, p);
                (if name == rname { "=" } else { name }, pos)
            }
            _ => ("*", 0),
        };
        let tlen = match (this, other) {
            (Some(a), Some(b)) if locate(genome, a).0 == locate(genome, b).0 => {
                let start = a.pos.min(b.pos) as i64;
                let end = end(a).max(end(b)) as i64;
                let span = end - start;
                if a.pos < b.pos || (a.pos == b.pos && mate == 0) {
                    span
                } else {
                    -span
                }
            }
            _ => 0,
        };
        let (seq, qual) = read.oriented(this.is_some_and(|p| p.reverse));
        let (mapq, cigar) = this.map_or((0, "*".to_string()), |p| {
            (p.mapq, p.alignment.cigar_string())
        });
        write!(
            out,
            "{}\t{flag}\t{rname}\t{pos}\t{mapq}\t{cigar}\t{rnext}\t{pnext}\t{tlen}\t",
            qname(&read.name)
        )?;
        out.write_all(&seq)?;
        out.write_all(b"\t")?;
        if qual.is_empty() {
            out.write_all(b"*")?;
        } else {
            out.write_all(&qual)?;
        }
        match this {
            Some(p) => writeln!(
                out,
                "\tNM:i:{}\tAS:i:{}",
                p.alignment.mismatches, p.alignment.score
            )?,
            None => writeln!(out)?,
        }
    }
    Ok(())
}

/// Contig name and 1-based position of a placement.
fn locate<'g>(genome: &'g Genome, p: &Placement) -> (&'g str, u32) {
    let (i, at) = genome.locate(p.pos as usize);
    (&genome.contigs[i].0, at as u32 + 1)
}

fn end(p: &Placement) -> u32 {
    p.pos + p.alignment.ref_len() as u32
}
