//! [`Value`]s to and from PostgreSQL's wire formats.
//!
//! Parameters go as text, which the server parses into whatever type it
//! inferred for the placeholder (bigint, double precision, text), so one
//! Rust value binds to any column of the schema. Results arrive in binary;
//! [`Cell`] decodes the types a query over the store can produce (booleans
//! become 0 and 1, as SQLite stores them) and names any other type.

use std::error::Error;

use bytes::BytesMut;
use postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};
use postgres_types::Format;

use super::Value;

type BoxError = Box<dyn Error + Sync + Send>;

/// A float as text that PostgreSQL's `float8in` reads back bit for bit.
fn real_text(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        // Shortest representation that round-trips, in exponent form.
        format!("{f:e}")
    }
}

impl ToSql for Value {
    fn to_sql(&self, _ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        match self {
            Value::Null => return Ok(IsNull::Yes),
            Value::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
            Value::Real(f) => out.extend_from_slice(real_text(*f).as_bytes()),
            Value::Text(s) => out.extend_from_slice(s.as_bytes()),
        }
        Ok(IsNull::No)
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    fn encode_format(&self, _ty: &Type) -> Format {
        Format::Text
    }

    to_sql_checked!();
}

/// One column of a result row, decoded from PostgreSQL's binary format.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell(pub Value);

fn array<const N: usize>(raw: &[u8]) -> Result<[u8; N], BoxError> {
    raw.get(..N)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| format!("{} bytes where {N} were expected", raw.len()).into())
}

/// Microseconds between the Unix epoch and PostgreSQL's (2000-01-01).
const PG_EPOCH_US: i64 = 946_684_800_000_000;

/// A `numeric` in binary form: digit count, weight, sign, display scale,
/// then base-10000 digits. An integer that fits is an [`Value::Int`].
fn numeric(raw: &[u8]) -> Result<Value, BoxError> {
    let word = |i: usize| -> Result<i16, BoxError> {
        Ok(i16::from_be_bytes(array(raw.get(i..).unwrap_or_default())?))
    };
    if raw.len() < 8 {
        return Err("numeric shorter than its header".into());
    }
    let ndigits = word(0)?.max(0) as usize;
    let weight = word(2)? as i64;
    let sign = word(4)? as u16;
    let dscale = word(6)?.max(0) as usize;
    match sign {
        0xC000 => return Ok(Value::Real(f64::NAN)),
        0xD000 => return Ok(Value::Real(f64::INFINITY)),
        0xF000 => return Ok(Value::Real(f64::NEG_INFINITY)),
        _ => {}
    }
    let digits: Vec<i16> = (0..ndigits)
        .map(|k| word(8 + 2 * k))
        .collect::<Result<_, _>>()?;
    let digit = |pos: i64| -> i16 {
        usize::try_from(pos)
            .ok()
            .and_then(|p| digits.get(p).copied())
            .unwrap_or(0)
    };
    let mut text = String::new();
    if sign == 0x4000 {
        text.push('-');
    }
    if weight < 0 {
        text.push('0');
    } else {
        for pos in 0..=weight {
            if pos == 0 {
                text.push_str(&digit(pos).to_string());
            } else {
                text.push_str(&format!("{:04}", digit(pos)));
            }
        }
    }
    if dscale > 0 {
        let mut frac = String::new();
        let mut pos = weight + 1;
        while frac.len() < dscale {
            frac.push_str(&format!("{:04}", digit(pos)));
            pos += 1;
        }
        frac.truncate(dscale);
        text.push('.');
        text.push_str(&frac);
    } else if let Ok(i) = text.parse::<i64>() {
        return Ok(Value::Int(i));
    }
    Ok(Value::Real(text.parse()?))
}

impl<'a> FromSql<'a> for Cell {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, BoxError> {
        let text = |b: &[u8]| Value::Text(String::from_utf8_lossy(b).into_owned());
        let v = match *ty {
            Type::BOOL => Value::Int(i64::from(raw.first().is_some_and(|b| *b != 0))),
            Type::INT2 => Value::Int(i64::from(i16::from_be_bytes(array(raw)?))),
            Type::INT4 => Value::Int(i64::from(i32::from_be_bytes(array(raw)?))),
            Type::OID => Value::Int(i64::from(u32::from_be_bytes(array(raw)?))),
            Type::INT8 => Value::Int(i64::from_be_bytes(array(raw)?)),
            Type::FLOAT4 => Value::Real(f64::from(f32::from_be_bytes(array(raw)?))),
            Type::FLOAT8 => Value::Real(f64::from_be_bytes(array(raw)?)),
            Type::NUMERIC => numeric(raw)?,
            Type::TEXT
            | Type::VARCHAR
            | Type::BPCHAR
            | Type::NAME
            | Type::UNKNOWN
            | Type::JSON
            | Type::CHAR
            | Type::XML => text(raw),
            // jsonb: a version byte (1), then the text.
            Type::JSONB => text(raw.get(1..).unwrap_or_default()),
            Type::TIMESTAMPTZ => {
                let us = i64::from_be_bytes(array(raw)?);
                Value::Text(jiff::Timestamp::from_microsecond(us + PG_EPOCH_US)?.to_string())
            }
            Type::TIMESTAMP => {
                let us = i64::from_be_bytes(array(raw)?);
                let t = jiff::Timestamp::from_microsecond(us + PG_EPOCH_US)?;
                Value::Text(t.to_zoned(jiff::tz::TimeZone::UTC).datetime().to_string())
            }
            Type::DATE => {
                let days = i32::from_be_bytes(array(raw)?);
                let t = jiff::Timestamp::from_second(
                    i64::from(days) * 86_400 + PG_EPOCH_US / 1_000_000,
                )?;
                Value::Text(t.to_zoned(jiff::tz::TimeZone::UTC).date().to_string())
            }
            Type::UUID => {
                let b: [u8; 16] = array(raw)?;
                let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
                Value::Text(format!(
                    "{}-{}-{}-{}-{}",
                    &hex[..8],
                    &hex[8..12],
                    &hex[12..16],
                    &hex[16..20],
                    &hex[20..]
                ))
            }
            _ => Value::Text(format!("<{} {} bytes>", ty.name(), raw.len())),
        };
        Ok(Cell(v))
    }

    fn from_sql_null(_ty: &Type) -> Result<Self, BoxError> {
        Ok(Cell(Value::Null))
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn num(ndigits: i16, weight: i16, sign: u16, dscale: i16, digits: &[i16]) -> Value {
        let mut raw = Vec::new();
        for w in [ndigits, weight, sign as i16, dscale] {
            raw.extend_from_slice(&w.to_be_bytes());
        }
        for d in digits {
            raw.extend_from_slice(&d.to_be_bytes());
        }
        numeric(&raw).unwrap()
    }

    #[test]
    fn numerics_decode_as_integers_or_floats() {
        // 12345678 = 1234|5678, weight 1.
        assert_eq!(num(2, 1, 0, 0, &[1234, 5678]), Value::Int(12_345_678));
        // 10000 = 1|0000 with trailing zero digits dropped.
        assert_eq!(num(1, 1, 0, 0, &[1]), Value::Int(10_000));
        // -1.5 = 1 . 5000, weight 0, scale 1.
        assert_eq!(num(2, 0, 0x4000, 1, &[1, 5000]), Value::Real(-1.5));
        // 0.000123 = 0 . 0001 2300: weight -1 means the first digit is the
        // first four decimals.
        assert_eq!(num(2, -1, 0, 6, &[1, 2300]), Value::Real(0.000123));
        assert_eq!(num(0, 0, 0, 0, &[]), Value::Int(0));
        assert!(matches!(num(0, 0, 0xC000, 0, &[]), Value::Real(f) if f.is_nan()));
    }

    #[test]
    fn floats_go_as_text_that_reads_back_exactly() {
        for f in [0.1, 1.0 / 3.0, 1e-300, 6.02e23, -0.0, f64::MAX] {
            assert_eq!(real_text(f).parse::<f64>().unwrap().to_bits(), f.to_bits());
        }
        assert_eq!(real_text(f64::INFINITY), "Infinity");
    }
}
